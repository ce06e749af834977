#!/usr/bin/env bash
# Many ranks loading one checkpoint: RANKS gloo ranks on the CPU (one
# process each) load a sharded checkpoint of SIZE bytes with a
# tensor-parallel plan (every 2-D weight's rows along dimension 0, the
# other tensors whole), cold cache, three ways (scripts/bench-ranks.py):
#   gdsload          safe_open(index, process_group=WORLD) + one prefetch
#   safetensors      what vLLM does with the real library: safe_open per
#                    file, get_slice(name)[rows] per weight
#   fastsafetensors  its loader over the group, nogds (CPU) path,
#                    get_sharded(name, 0) per weight (if it runs here; if
#                    not, its error is printed)
# The peers are installed into a venv of the script's own,
# build/bench-ranks-venv (over Debian's python3-torch). Runs alternate
# gdsload safetensors fastsafetensors fastsafetensors safetensors gdsload,
# PAIRS times, each after a dropped page cache. Every run's bytes are
# checked: each rank's tensors must hold what the same rank got from the
# reference library, byte for byte (checksums per tensor). Prints, per
# way: the median wall time (the ranks' common start to the last one's
# end, imports and group setup excluded), the storage bytes read by all
# ranks together (/proc/PID/io read_bytes, summed) against the
# checkpoint's data, and each rank's peak RSS (VmHWM; and what it was
# before the load). Needs root (drop_caches) and the library (make
# python).
# Usage:
#   scripts/bench-ranks.sh [DIR]     (default /var/tmp/gdsload-bench-ranks)
# Environment: RANKS (default 4), PAIRS (default 2), SIZE (bytes, default
# 2 GiB).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib-bench.sh"

RANKS=${RANKS:-4}
PAIRS=${PAIRS:-2}
SIZE=${SIZE:-$((2 << 30))}
DIR=${1:-/var/tmp/gdsload-bench-ranks}
VENV=$root/build/bench-ranks-venv
PY=$VENV/bin/python
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"

[ -f "$root/python/gdsload/libgdsload.so" ] || { echo "python/gdsload/libgdsload.so missing: run make python" >&2; exit 1; }
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || { echo "/usr/bin/python3 has no torch: apt-get install python3-torch" >&2; exit 1; }
if ! [ -x "$PY" ] || ! "$PY" -c 'import safetensors' 2>/dev/null; then
  echo "installing the peers into $VENV" >&2
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
  "$PY" -m pip install -q safetensors==0.8.0
  # --no-deps: its dependencies would pull a second torch from PyPI; it
  # imports over Debian's torch, and its error is printed if it does not run.
  "$PY" -m pip install -q --no-deps fastsafetensors==0.5.0 || echo "fastsafetensors did not install" >&2
fi

if [ ! -f "$DIR/model.safetensors.index.json" ] || [ "$(du -sb "$DIR" | cut -f1)" -lt "$SIZE" ]; then
  echo "writing a sharded checkpoint of $SIZE bytes to $DIR" >&2
  rm -rf "$DIR"
  "$PY" "$here/bench-ranks.py" write "$DIR" "$SIZE"
fi

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
echo "$DIR: $(du -sb "$DIR" | cut -f1) bytes on $(df --output=fstype "$DIR" | tail -1) ($(df --output=source "$DIR" | tail -1)), $RANKS ranks, $PAIRS pairs, cold cache, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for i in $(seq 1 "$PAIRS"); do
  for m in gdsload safetensors fastsafetensors fastsafetensors safetensors gdsload; do
    if [ "$m" = fastsafetensors ] && grep -q '"error"' "$work/$m" 2>/dev/null; then continue; fi
    drop_caches
    "$PY" "$here/bench-ranks.py" run "$m" "$DIR" "$RANKS" >>"$work/$m"
  done
  echo "pair $i/$PAIRS done" >&2
done

"$PY" - "$work" "$DIR" "$RANKS" "$(stamp)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" <<'EOF'
import json, os, statistics, struct, sys

work, d, ranks, stamp, cpu = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
data = 0
for f in os.listdir(d):
    if f.endswith(".safetensors"):
        p = os.path.join(d, f)
        with open(p, "rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
        data += os.path.getsize(p) - 8 - n
runs = {}
for m in ("gdsload", "safetensors", "fastsafetensors"):
    p = os.path.join(work, m)
    runs[m] = [json.loads(l) for l in open(p)] if os.path.exists(p) else []
ref = next((r for r in runs["safetensors"] if "error" not in r), None)
if ref is None:
    sys.exit("the safetensors runs failed: " + "; ".join(r["error"] for r in runs["safetensors"]))
bad = []
for m, rs in runs.items():
    for i, r in enumerate(rs):
        if "error" in r:
            continue
        for a, b in zip(r["ranks"], ref["ranks"]):
            if a["sum"] != b["sum"] or a["bytes"] != b["bytes"]:
                diff = sorted(n for n in set(a["sum"]) | set(b["sum"]) if a["sum"].get(n) != b["sum"].get(n))
                bad.append(f"{m} run {i + 1} rank {a['rank']}: {a['bytes']} bytes held, want {b['bytes']}; "
                           f"tensors differing: {diff[:5]}")
if bad:
    sys.exit("bytes check failed:\n" + "\n".join(bad))
print(f"\nscripts/bench-ranks.sh, {stamp}, {cpu}")
print(f"{ranks} gloo ranks, tensor-parallel plan (rows along dim 0), {data} bytes of data "
      f"({data / 2**30:.2f} GiB), cold cache; every run's bytes checked against safetensors")
print(f"\n{'way':16} {'wall s':>8} {'spread':>12} {'storage read':>14} {'x data':>7}  peak RSS per rank, MiB (before the load)")
walls = {}
for m, rs in runs.items():
    ok = [r for r in rs if "error" not in r]
    if not ok:
        err = rs[0]["error"] if rs else "not run"
        print(f"{m:16} did not run: {err}")
        continue
    walls[m] = [r["wall"] for r in ok]
    read = statistics.median(sum(x["read_bytes"] for x in r["ranks"]) for r in ok)
    hwm = [max(r["ranks"][k]["hwm_kib"] for r in ok) // 1024 for k in range(ranks)]
    base = [max(r["ranks"][k]["base_kib"] for r in ok) // 1024 for k in range(ranks)]
    print(f"{m:16} {statistics.median(walls[m]):8.2f} {min(walls[m]):5.2f}..{max(walls[m]):<5.2f} "
          f"{read:14.0f} {read / data:6.2f}x  " + " ".join(f"{h} ({b})" for h, b in zip(hwm, base)))
print()
for m in ("safetensors", "fastsafetensors"):
    if m in walls and "gdsload" in walls:
        rs = [p / g for p, g in zip(walls[m], walls["gdsload"])]
        print(f"gdsload vs {m}: {statistics.median(rs):.2f}x faster (per run {min(rs):.2f}..{max(rs):.2f})"
              + ("   target >= 2x" if m == "safetensors" else ""))
print("storage read: target 1.0x the data for gdsload (each byte once among the ranks)")
EOF
