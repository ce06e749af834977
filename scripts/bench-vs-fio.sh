#!/usr/bin/env bash
# gdsload load --to host --direct on against fio (psync and libaio, bs=4M,
# iodepth=8, --direct=1) and dd (buffered) on one file with a cold cache.
# Runs alternate A B B A so drift hits both sides alike; every run is timed
# from outside the process by GNU time. Prints median ratios with their
# spread. Needs root (drop_caches). Usage:
#   scripts/bench-vs-fio.sh [FILE]     (default /var/tmp/gdsload-bench/2g.bin)
# Environment: GDSLOAD (binary, default ./bin/gdsload), PAIRS (default 6),
# SIZE (bytes, default 2 GiB).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib-bench.sh"

GDSLOAD=${GDSLOAD:-./bin/gdsload}
PAIRS=${PAIRS:-6}
SIZE=${SIZE:-$((2 << 30))}
FILE=${1:-/var/tmp/gdsload-bench/2g.bin}

need fio fio
[ -x /usr/bin/time ] || need /usr/bin/time time
[ -x "$GDSLOAD" ] || { echo "$GDSLOAD not built: run make build" >&2; exit 1; }
make_file "$FILE" "$SIZE"

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fio_args=(--name=read --filename="$FILE" --rw=read --bs=4M --iodepth=8 --direct=1
          --size="$SIZE" --numjobs=1 --output=/dev/null)
run() {
  case $1 in
    libaio) drop_caches; timed "$work/libaio" fio "${fio_args[@]}" --ioengine=libaio ;;
    psync) drop_caches; timed "$work/psync" fio "${fio_args[@]}" --ioengine=psync ;;
    gdsload) drop_caches; timed "$work/gdsload" "$GDSLOAD" load --to host --direct on --json "$FILE" ;;
    dd) drop_caches; timed "$work/dd" dd if="$FILE" of=/dev/null bs=1M ;;
  esac
}

echo "file $FILE ($SIZE bytes) on $(df --output=fstype "$FILE" | tail -1), $PAIRS pairs, cold cache, $(nproc) cores" >&2
for i in $(seq 1 "$PAIRS"); do
  if [ $((i % 2)) = 1 ]; then order="libaio psync gdsload dd"; else order="dd gdsload psync libaio"; fi
  for m in $order; do run "$m"; done
  echo "pair $i/$PAIRS done" >&2
done

for m in libaio psync gdsload dd; do
  gibps "$SIZE" "$work/$m" >"$work/$m.bw"
  cpugib "$SIZE" "$work/$m" >"$work/$m.cpu"
done
best=libaio
if [ "$(awk 'BEGIN{print ('"$(median <"$work/psync.bw")"' > '"$(median <"$work/libaio.bw")"')}')" = 1 ]; then best=psync; fi

printf '\n%-10s %10s %14s %12s\n' tool "GiB/s" "spread" "CPU s/GiB"
for m in libaio psync gdsload dd; do
  printf '%-10s %10.3f %14s %12.3f\n' "$m" "$(median <"$work/$m.bw")" "$(spread <"$work/$m.bw")" "$(median <"$work/$m.cpu")"
done
ratios "$work/gdsload.bw" "$work/$best.bw" >"$work/r.bw"
ratios "$work/gdsload.cpu" "$work/$best.cpu" >"$work/r.cpu"
ratios "$work/gdsload.bw" "$work/dd.bw" >"$work/r.dd"
echo
printf 'gdsload / fio-%s bandwidth: median %.3fx (spread %s)   target >= 0.9x\n' "$best" "$(median <"$work/r.bw")" "$(spread <"$work/r.bw")"
printf 'gdsload / fio-%s CPU s/GiB: median %.3fx (spread %s)   target <= 1.2x\n' "$best" "$(median <"$work/r.cpu")" "$(spread <"$work/r.cpu")"
printf 'gdsload / dd (buffered) bandwidth: median %.3fx (spread %s)   no target\n' "$(median <"$work/r.dd")" "$(spread <"$work/r.dd")"
