#!/usr/bin/env bash
# bench-iterate.sh: WebDataset iteration throughput against the zstd CLI.
#
# Makes N .tar.zst shards (about TOTAL_MIB MiB of compressible, random-ish
# text samples in all), then times, from outside the processes and in
# alternating order (zstd, 1 worker, 2 workers, then the reverse, PAIRS
# times):
#   A  zstd -d -T1 -c SHARDS > /dev/null          (the peer)
#   B1 gdsload iterate DIR --workers 1 --shuffle=false --direct off
#   B2 gdsload iterate DIR --workers 2 --shuffle=false --direct off
# and prints the medians and median ratios. Targets: B1 >= 0.6x A;
# B2 >= 1.7x B1 (needs 2 free cores).
#
# Environment: GDSLOAD (default ./bin/gdsload), N (64), TOTAL_MIB (1536),
# PAIRS (3), WORK (a temporary directory, removed afterwards unless given).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib-bench.sh
. "$here/lib-bench.sh"

GDSLOAD=${GDSLOAD:-./bin/gdsload}
N=${N:-64}
TOTAL_MIB=${TOTAL_MIB:-1536}
PAIRS=${PAIRS:-3}
need zstd zstd
need python3 python3
[ -x "$GDSLOAD" ] || { echo "gdsload binary not found at $GDSLOAD (set GDSLOAD or run: go build -o bin/gdsload ./cmd/gdsload)" >&2; exit 1; }

if [ -z "${WORK:-}" ]; then
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
fi
data=$WORK/shards
mkdir -p "$data"

# Shards: samples of one .txt (2-30 KiB of words drawn from a small
# vocabulary: compresses about 3-4x, like text corpora) and one .json.
if [ ! -f "$data/index.json" ]; then
  echo "writing $N shards, ~$TOTAL_MIB MiB uncompressed, to $data" >&2
  for s in $(seq 0 $((N - 1))); do
    name=$(printf 'shard-%06d.tar.zst' "$s")
    python3 - "$s" "$((TOTAL_MIB * 1048576 / N))" <<'PY' | zstd -q -3 -T1 -o "$data/$name"
import io, json, random, sys, tarfile
shard, budget = int(sys.argv[1]), int(sys.argv[2])
rnd = random.Random(shard)
words = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 9))) for _ in range(4000)]
out = sys.stdout.buffer
with tarfile.open(fileobj=out, mode="w|", format=tarfile.USTAR_FORMAT) as tf:
    used, i = 0, 0
    while used < budget:
        key = "s%06d-%06d" % (shard, i)
        text = " ".join(rnd.choices(words, k=rnd.randint(300, 4500))).encode()
        meta = json.dumps({"key": key, "len": len(text)}).encode()
        for ext, data in (("txt", text), ("json", meta)):
            ti = tarfile.TarInfo(key + "." + ext)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
        used += len(text) + len(meta)
        i += 1
PY
  done
  "$GDSLOAD" manifest "$data" >&2
fi

shards=("$data"/*.tar.zst)
compressed=$(cat "${shards[@]}" | wc -c)
uncompressed=$(zstd -d -T1 -c "${shards[@]}" | wc -c)
echo "data: ${#shards[@]} shards, $compressed bytes compressed, $uncompressed uncompressed" >&2

# ns_run FILE CMD...: runs CMD with output discarded, appends its wall
# seconds (nanosecond clock, measured from outside) to FILE.
ns_run() {
  local out=$1; shift
  local t0 t1
  t0=$(date +%s%N)
  if ! "$@" >/dev/null 2>"$WORK/err"; then
    echo "command failed: $*" >&2; cat "$WORK/err" >&2; exit 1
  fi
  t1=$(date +%s%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f\n", (b-a)/1e9}' >>"$out"
}

run_zstd() { ns_run "$WORK/t.zstd" zstd -d -T1 -c "${shards[@]}"; }
# --direct off: zstd reads the shards through the page cache, and so does
# gdsload here, so both sides decode the same warm data.
run_w1() { ns_run "$WORK/t.w1" "$GDSLOAD" iterate "$data" --workers 1 --shuffle=false --direct off; }
run_w2() { ns_run "$WORK/t.w2" "$GDSLOAD" iterate "$data" --workers 2 --shuffle=false --direct off; }

rm -f "$WORK"/t.*
# Warm the page cache and both programs once, untimed.
zstd -d -T1 -c "${shards[@]}" >/dev/null
"$GDSLOAD" iterate "$data" --workers 2 --shuffle=false >/dev/null 2>&1
for _ in $(seq 1 "$PAIRS"); do
  run_zstd; run_w1; run_w2
  run_w2; run_w1; run_zstd
done

ratios "$WORK/t.zstd" "$WORK/t.w1" >"$WORK/r.w1"   # B1 throughput / A throughput
ratios "$WORK/t.w1" "$WORK/t.w2" >"$WORK/r.w2"     # B2 throughput / B1 throughput
mz=$(median <"$WORK/t.zstd"); m1=$(median <"$WORK/t.w1"); m2=$(median <"$WORK/t.w2")
r1=$(median <"$WORK/r.w1"); r2=$(median <"$WORK/r.w2")
mbps() { awk -v b="$uncompressed" -v t="$1" 'BEGIN {printf "%.0f", b/1e6/t}'; }
echo "runs per program: $((2 * PAIRS)), alternating; uncompressed MB/s from the medians"
printf 'zstd -d -T1            median %.3fs  %s MB/s\n' "$mz" "$(mbps "$mz")"
printf 'gdsload iterate -w 1   median %.3fs  %s MB/s\n' "$m1" "$(mbps "$m1")"
printf 'gdsload iterate -w 2   median %.3fs  %s MB/s\n' "$m2" "$(mbps "$m2")"
verdict() { awk -v r="$1" -v t="$2" 'BEGIN {print (r >= t) ? "meets" : "BELOW"}'; }
printf '1 worker / zstd -T1:   median ratio %.2f (spread %s), target >= 0.6: %s\n' "$r1" "$(spread <"$WORK/r.w1")" "$(verdict "$r1" 0.6)"
printf '2 workers / 1 worker:  median ratio %.2f (spread %s), target >= 1.7: %s\n' "$r2" "$(spread <"$WORK/r.w2")" "$(verdict "$r2" 1.7)"
