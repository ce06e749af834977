#!/usr/bin/env bash
# gdsload stage against cp -r (--reflink=never, then sync) and dd with
# O_DIRECT on both sides (bs=4M, one file after another, then sync): copying
# a directory of N files between two folders on the same disk, cold cache.
# Every run starts from an empty destination and a dropped page cache, and
# is timed from outside the process by GNU time; runs alternate
# stage cp dd dd cp stage so drift hits all alike. Prints median GiB/s,
# CPU s/GiB and median ratios with their spread. Needs root (drop_caches).
# Usage:
#   scripts/bench-stage.sh [DIR]     (default /var/tmp/gdsload-bench-stage)
# Environment: GDSLOAD (binary, default ./bin/gdsload), PAIRS (default 3),
# FILES (default 16), FILE_SIZE (bytes, default 64 MiB), STAGE_ARGS (extra
# flags for gdsload stage, e.g. "--checksum crc32c").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib-bench.sh"

GDSLOAD=${GDSLOAD:-./bin/gdsload}
PAIRS=${PAIRS:-3}
FILES=${FILES:-16}
FILE_SIZE=${FILE_SIZE:-$((64 << 20))}
STAGE_ARGS=${STAGE_ARGS:-}
DIR=${1:-/var/tmp/gdsload-bench-stage}
SRC=$DIR/src
DST=$DIR/dst
TOTAL=$((FILES * FILE_SIZE))

[ -x /usr/bin/time ] || need /usr/bin/time time
[ -x "$GDSLOAD" ] || { echo "$GDSLOAD not built: run make build" >&2; exit 1; }
"$GDSLOAD" stage --help >/dev/null 2>&1 || { echo "$GDSLOAD has no stage command: wire newStageCmd into cmd/gdsload/root.go" >&2; exit 1; }
for i in $(seq -f '%03g' 0 $((FILES - 1))); do make_file "$SRC/shard-$i.bin" "$FILE_SIZE"; done

work=$(mktemp -d); trap 'rm -rf "$work" "$DST"' EXIT

# dd_all copies every file of SRC with O_DIRECT reads and writes.
dd_all() {
  mkdir -p "$DST"
  for f in "$SRC"/*; do
    dd if="$f" of="$DST/$(basename "$f")" iflag=direct oflag=direct bs=4M status=none
  done
  sync
}
export -f dd_all; export SRC DST

run() {
  rm -rf "$DST"
  drop_caches
  case $1 in
    stage) timed "$work/stage" "$GDSLOAD" stage $STAGE_ARGS --json "$SRC" "$DST" ;;
    cp) timed "$work/cp" sh -c 'cp -r --reflink=never "$SRC" "$DST" && sync' ;;
    dd) timed "$work/dd" bash -c dd_all ;;
  esac
}

# Once, untimed: the staged copy is byte-identical.
rm -rf "$DST"
"$GDSLOAD" stage $STAGE_ARGS "$SRC" "$DST" >/dev/null
for f in "$SRC"/*; do cmp -s "$f" "$DST/$(basename "$f")" || { echo "staged $f differs" >&2; exit 1; }; done

echo "$FILES files of $FILE_SIZE bytes in $SRC on $(df --output=fstype "$SRC" | tail -1) ($(df --output=source "$SRC" | tail -1)), $PAIRS pairs, cold cache, $(nproc) cores, stage args '${STAGE_ARGS}'" >&2
for i in $(seq 1 "$PAIRS"); do
  for m in stage cp dd dd cp stage; do run "$m"; done
  echo "pair $i/$PAIRS done" >&2
done

for m in stage cp dd; do
  gibps "$TOTAL" "$work/$m" >"$work/$m.bw"
  cpugib "$TOTAL" "$work/$m" >"$work/$m.cpu"
done
printf '\n%-8s %10s %14s %12s\n' tool "GiB/s" "spread" "CPU s/GiB"
for m in stage cp dd; do
  printf '%-8s %10.3f %14s %12.3f\n' "$m" "$(median <"$work/$m.bw")" "$(spread <"$work/$m.bw")" "$(median <"$work/$m.cpu")"
done
ratios "$work/stage.bw" "$work/cp.bw" >"$work/r.cp"
ratios "$work/stage.bw" "$work/dd.bw" >"$work/r.dd"
echo
printf 'stage / cp -r + sync bandwidth: median %.3fx (spread %s)   target >= 0.9x\n' "$(median <"$work/r.cp")" "$(spread <"$work/r.cp")"
printf 'stage / dd direct    bandwidth: median %.3fx (spread %s)   no target\n' "$(median <"$work/r.dd")" "$(spread <"$work/r.dd")"
