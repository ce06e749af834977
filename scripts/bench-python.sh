#!/usr/bin/env bash
# gdsload.load_file(path, device="cpu") against a Python reader doing what
# safetensors.torch.load_file does on the CPU (header, mmap, torch.frombuffer
# per tensor, a copy of each), and against the least such a reader can do
# (one readinto, views): one safetensors file of SIZE bytes, cold cache.
# Each run is a fresh Python process after a dropped page cache, timed
# inside the process around the load alone (imports and the library's start
# excluded for all); runs alternate gdsload st-mmap read-views read-views
# st-mmap gdsload. Prints median GiB/s and the median ratios with their
# spread. Needs root (drop_caches), Debian's python3-torch, and the library
# (make python).
# Usage:
#   scripts/bench-python.sh [DIR]     (default /var/tmp/gdsload-bench-python)
# Environment: PYTHON (default /usr/bin/python3), PAIRS (default 3), SIZE
# (bytes, default 2 GiB).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib-bench.sh"

PYTHON=${PYTHON:-/usr/bin/python3}
PAIRS=${PAIRS:-3}
SIZE=${SIZE:-$((2 << 30))}
DIR=${1:-/var/tmp/gdsload-bench-python}
FILE=$DIR/model.safetensors
export PYTHONPATH="$here/../python${PYTHONPATH:+:$PYTHONPATH}"

[ -f "$here/../python/gdsload/libgdsload.so" ] || { echo "python/gdsload/libgdsload.so missing: run make python" >&2; exit 1; }
"$PYTHON" -c 'import torch' 2>/dev/null || { echo "$PYTHON has no torch: apt-get install python3-torch" >&2; exit 1; }
mkdir -p "$DIR"
if [ ! -f "$FILE" ] || [ "$(( $(stat -c %s "$FILE") / (1 << 20) ))" -lt "$(( SIZE / (1 << 20) ))" ]; then
  echo "writing $FILE ($SIZE bytes of bf16/f32/f16 tensors of 32 MiB)" >&2
  "$PYTHON" "$here/bench-python.py" write "$FILE" "$SIZE"
fi
"$PYTHON" "$here/bench-python.py" check "$FILE" >&2

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
run() {
  drop_caches
  "$PYTHON" "$here/bench-python.py" "$1" "$FILE" | "$PYTHON" -c 'import json,sys; d=json.load(sys.stdin); print(d["bytes"]/d["seconds"]/2**30)' >>"$work/$1"
}
echo "$FILE: $(stat -c %s "$FILE") bytes on $(df --output=fstype "$DIR" | tail -1) ($(df --output=source "$DIR" | tail -1)), $PAIRS pairs, cold cache, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for i in $(seq 1 "$PAIRS"); do
  for m in gdsload st-mmap read-views read-views st-mmap gdsload; do run "$m"; done
  echo "pair $i/$PAIRS done" >&2
done
printf '\nscripts/bench-python.sh, %s\n' "$(stamp)"
printf '\n%-12s %10s %14s\n' reader "GiB/s" "spread"
for m in gdsload st-mmap read-views; do
  printf '%-12s %10.3f %14s\n' "$m" "$(median <"$work/$m")" "$(spread <"$work/$m")"
done
ratios "$work/gdsload" "$work/st-mmap" >"$work/r.st"
ratios "$work/gdsload" "$work/read-views" >"$work/r.rv"
echo
printf 'gdsload / safetensors-style mmap+copy: median %.3fx (spread %s)   target >= 1.5x\n' "$(median <"$work/r.st")" "$(spread <"$work/r.st")"
printf 'gdsload / one read + views:            median %.3fx (spread %s)   no target\n' "$(median <"$work/r.rv")" "$(spread <"$work/r.rv")"
