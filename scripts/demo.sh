#!/usr/bin/env bash
# make demo: writes a small data set of its own (a few files of random bytes,
# one unaligned), loads it with a checksum, and benchmarks the read modes.
set -euo pipefail
BIN=${1:-bin/gdsload}
DIR=${2:-demo-data}
mkdir -p "$DIR/shards"
for i in 0 1 2 3 4 5 6 7; do
  f="$DIR/shards/shard-00000$i.bin"
  [ -f "$f" ] || head -c $((16 << 20)) /dev/urandom >"$f"
done
[ -f "$DIR/shards/odd-size.bin" ] || head -c $(((5 << 20) + 4097)) /dev/urandom >"$DIR/shards/odd-size.bin"
[ -f "$DIR/big.bin" ] || head -c $((256 << 20)) /dev/urandom >"$DIR/big.bin"

echo "== gdsload load $DIR/shards --checksum sha256"
"$BIN" load --to auto --checksum sha256 "$DIR/shards"
echo
echo "== sha256sum, for comparison"
(cd "$DIR/shards" && sha256sum ./* | sed 's#\./#'"$DIR"'/shards/#')
echo
echo "== gdsload bench $DIR/big.bin"
cold=""  # warm runs: --cold would drop the whole page cache of this machine

"$BIN" bench --runs 3 $cold "$DIR/big.bin"
