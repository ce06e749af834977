#!/usr/bin/env bash
# gdsload.load_file(path, device="cpu") against the Python libraries that
# load safetensors checkpoints, at their defaults or their strongest
# settings, on one safetensors file of SIZE bytes, cold cache:
#   st-load-file     safetensors 0.8 safetensors.torch.load_file
#   st-pread         the same with backend="pread"
#   st-safe-open     safetensors 0.8 safe_open + get_tensor of each name
#   runai            Run:ai Model Streamer 0.17.1 SafetensorsStreamer, local
#                    file, RUNAI_STREAMER_CONCURRENCY=16
#   fastsafetensors  fastsafetensors 0.5.0 fastsafe_open(nogds=True,
#                    device="cpu"), its CPU path (16 threads by default);
#                    when it cannot run here its error is printed and it is
#                    left out
# The peers are installed into a venv of the script's own (VENV, default
# build/bench-python-venv; made with Debian's /usr/bin/python3, which has
# python3-torch 1.13: runai-model-streamer and fastsafetensors are installed
# with --no-deps, so that they run on it rather than bring PyPI's torch).
# Untimed, every tool loads the file once and the SHA-256 of its tensors'
# bytes is checked against safetensors.torch.load_file's. Each run is then a
# fresh Python process after a dropped page cache, timed inside the process
# around the load alone (imports and the library's start excluded for all)
# and a touch of every page of the tensors (safetensors' default backend
# maps the file and reads it on first touch: every tool is timed until its
# bytes are in memory);
# the byte count of every timed run is checked. Each round runs every tool,
# in an order reversed every other round; the round prints every tool's
# GiB/s and the strongest peer. Prints the median GiB/s and the median
# ratios with their spread. Needs root (drop_caches), Debian's python3-torch,
# and the library (make python).
# Usage:
#   scripts/bench-python.sh [DIR]     (default /var/tmp/gdsload-bench-python)
# Environment: ROUNDS (default 6), SIZE (bytes, default 2 GiB), VENV,
# FAST=1 (a quick check of the script: 256 MiB, 2 rounds).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/lib-bench.sh"

if [ "${FAST:-0}" = 1 ]; then ROUNDS=${ROUNDS:-2} SIZE=${SIZE:-$((256 << 20))}; fi
ROUNDS=${ROUNDS:-6}
SIZE=${SIZE:-$((2 << 30))}
VENV=${VENV:-$repo/build/bench-python-venv}
DIR=${1:-/var/tmp/gdsload-bench-python}
FILE=$DIR/model-$SIZE.safetensors
export PYTHONPATH="$repo/python${PYTHONPATH:+:$PYTHONPATH}"
export RUNAI_STREAMER_CONCURRENCY=16

[ -f "$repo/python/gdsload/libgdsload.so" ] || { echo "python/gdsload/libgdsload.so missing: run make python" >&2; exit 1; }
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "/usr/bin/python3 has no torch: apt-get install python3-torch" >&2; exit 1; }
peer_venv "$VENV" "safetensors==0.8.0 humanize==4.17.0 typer" \
  "--no-deps runai-model-streamer==0.17.1 fastsafetensors==0.5.0"
PY=$VENV/bin/python
mkdir -p "$DIR"
if [ ! -f "$FILE" ]; then
  echo "writing $FILE ($SIZE bytes of bf16/f32/f16 tensors of 32 MiB)" >&2
  "$PY" "$here/bench-python.py" write "$FILE.tmp" "$SIZE" && mv "$FILE.tmp" "$FILE"
fi

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

# Untimed: every tool's tensors against safetensors.torch.load_file's.
ref=$("$PY" "$here/bench-python.py" st-load-file "$FILE" --sha256)
want_sha=$(field "$ref" sha256) want_bytes=$(field "$ref" bytes)
tools="gdsload st-load-file st-pread st-safe-open runai fastsafetensors"
ok_tools=
for m in $tools; do
  if ! j=$("$PY" "$here/bench-python.py" "$m" "$FILE" --sha256 2>"$work/err"); then
    [ "$m" = fastsafetensors ] || { cat "$work/err" >&2; echo "$m cannot load $FILE" >&2; exit 1; }
    echo "fastsafetensors (nogds) cannot run here, left out: $(tail -n 3 "$work/err" | tr '\n' ' ')"
    continue
  fi
  [ "$(field "$j" sha256)" = "$want_sha" ] || { echo "$m: tensors' sha256 $(field "$j" sha256), safetensors.torch.load_file's $want_sha" >&2; exit 1; }
  ok_tools="$ok_tools $m"
done
ok_tools=${ok_tools# }

run() {
  drop_caches
  local j; j=$("$PY" "$here/bench-python.py" "$1" "$FILE") || { echo "$1 failed" >&2; exit 1; }
  check_bytes "$1" "$(field "$j" bytes)" "$want_bytes"
  awk -v s="$(field "$j" seconds)" -v b="$want_bytes" 'BEGIN {printf "%.4f\n", b/s/2^30}' >>"$work/$1"
}
peers=${ok_tools#gdsload }
echo "scripts/bench-python.sh, $(stamp), load average $(cut -d' ' -f1-3 /proc/loadavg) (this run's own setup counts in it)"
echo "$FILE: $(stat -c %s "$FILE") bytes ($want_bytes of tensors) on $(df --output=fstype "$DIR" | tail -1), $ROUNDS rounds, cold cache, GiB/s"
echo
printf '| round |'; for m in $ok_tools; do printf ' %s |' "$m"; done; printf ' strongest peer | ratio |\n'
printf '| --- |'; for m in $ok_tools; do printf ' --- |'; done; printf ' --- | --- |\n'
rev=$(echo "$ok_tools" | tr ' ' '\n' | tac | tr '\n' ' ')
for i in $(seq 1 "$ROUNDS"); do
  if ((i % 2)); then order=$ok_tools; else order=$rev; fi
  for m in $order; do run "$m"; done
  # The strongest peer: the highest GiB/s (winner takes the smallest figure).
  best=$(winner $(for m in $peers; do echo "$m=$(tail -n 1 "$work/$m" | awk '{printf "%.6f", 1/$1}')"; done))
  echo "$best" >>"$work/best"
  tail -n 1 "$work/$best" >>"$work/peer"
  printf '| %s |' "$i"; for m in $ok_tools; do printf ' %.3f |' "$(tail -n 1 "$work/$m")"; done
  printf ' %s | %.3fx |\n' "$best" "$(awk -v a="$(tail -n 1 "$work/gdsload")" -v b="$(tail -n 1 "$work/$best")" 'BEGIN {print a/b}')"
done
echo
printf '%-16s %10s %14s\n' reader "GiB/s" "spread"
for m in $ok_tools; do
  printf '%-16s %10.3f %14s\n' "$m" "$(median <"$work/$m")" "$(spread <"$work/$m")"
done
echo
ratios "$work/gdsload" "$work/peer" >"$work/r.best"
printf 'gdsload / strongest peer of each round (%s): median %.3fx (spread %s)\n' "$(sort "$work/best" | uniq -c | awk '{printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1}')" "$(median <"$work/r.best")" "$(spread <"$work/r.best")"
for m in $peers; do
  case $m in st-load-file | st-pread) target="target >= 1.5x" ;; runai) target="target >= 1.0x" ;; *) target="no target" ;; esac
  ratios "$work/gdsload" "$work/$m" >"$work/r.$m"
  printf 'gdsload / %-16s median %.3fx (spread %s)   %s\n' "$m:" "$(median <"$work/r.$m")" "$(spread <"$work/r.$m")" "$target"
done
