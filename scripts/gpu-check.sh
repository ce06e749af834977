#!/usr/bin/env bash
# gpu-check.sh: the real-GPU checks gdsload's tests cannot make (they run
# against a C test double). Run from the repository root on a GPU machine
# with CUDA 13, PyTorch, safetensors and the nvidia-cufile wheel, with a
# prebuilt binary at ./.gpu/gdsload (no Go needed there):
#
#   make gpu-binaries                                     # on the dev machine: .gpu/gdsload, .gpu/checkpoint.test
#   bash scripts/gpu-check.sh                             # on the GPU machine
#
# It prints:
#   1. the machine: the binaries' git revision, sizes and newest glibc symbol
#      needed against the machine's glibc; the NVIDIA driver, nvidia-fs
#      (/proc/driver/nvidia-fs/stats), /run/udev and the cufile.json in use;
#   2. gdsload doctor (libraries, GDS mode, memlock, O_DIRECT, GPU path);
#   3. pinned cudaMemcpy host-to-device bandwidth measured by PyTorch (the peer);
#   4. gdsload bench --modes gds,bounce,cached-bounce,posix on a multi-GiB file
#      (written and fsynced before any timed read), each mode's ratio to that
#      peer and, for gds, the mode cuFile ran in (nvfs, p2pdma or compat); gds
#      is left out, with doctor's reason, where cuFile cannot run, and the
#      bench runs again without it if it fails; then cached-bounce again with
#      a worker per core and 16 MiB chunks;
#   5. on a multi-GiB safetensors file written by the safetensors library:
#      safetensors.torch.load_file(device="cuda") against gdsload load --to
#      gpu:0, each in a process of its own, end to end (CUDA context set-up,
#      driver open and allocations included: the headline figure) and the
#      load phase alone, CHECK_PAIRS pairs with the order alternating, page
#      cache cold (dropped before each run; gdsload's defaults) and warm
#      (--direct off), each pair's figures and the stronger printed, then
#      the median ratio and its spread; every run's byte count checked, and
#      once with --checksum sha256: whether the sha256 of what landed on
#      the GPU matches the file's data region for both;
#   6. checkpoints saved from GPU memory (bounce, and gds where cuFile's
#      driver opens; else that case skips with its reason), read back by the
#      safetensors library.
#
# Settings (environment): GDSLOAD_BIN (default ./.gpu/gdsload), CHECK_DIR
# (where the test files go; default ./.gpu/check, ideally on NVMe), CHECK_GIB
# (file size, default 4), PYTHON (default python3), CHECK_RUNS (bench runs,
# default 2), CHECK_PAIRS (alternated pairs per comparison, default 3),
# CHECK_BUDGET (seconds for the whole script, default 480; it typically
# needs about 4 minutes; each part's time is printed after it). Each step has its own time limit, cut to
# what is left of the budget; a failing step is reported and the script goes
# on. Where $OUT is set (the device machine), the whole log goes to
# $OUT/gpu-check.log, the JSON results and libcufile's own log
# (CUFILE_LOGFILE_PATH, cufile.log) beside it.
set -u -o pipefail

BIN=${GDSLOAD_BIN:-./.gpu/gdsload}
TESTBIN=${CHECKPOINT_TEST:-./.gpu/checkpoint.test}
CHECK_DIR=${CHECK_DIR:-./.gpu/check}
CHECK_GIB=${CHECK_GIB:-4}
CHECK_RUNS=${CHECK_RUNS:-2}
PAIRS=${CHECK_PAIRS:-3}
PY=${PYTHON:-python3}
BUDGET=${CHECK_BUDGET:-480}
START=$(date +%s)

# On the device machine $OUT comes back: keep the whole log, the JSON
# results and libcufile's log there (the command's own output is cut to its
# tail).
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
	exec > >(tee "$OUT/gpu-check.log") 2>&1
	save_results() { cp "$CHECK_DIR"/*.json "$OUT"/ 2>/dev/null || true; }
	export CUFILE_LOGFILE_PATH=${CUFILE_LOGFILE_PATH:-$OUT/cufile.log}
else
	save_results() { :; }
	export CUFILE_LOGFILE_PATH=${CUFILE_LOGFILE_PATH:-$CHECK_DIR/cufile.log}
fi
FAILS=0

# section TITLE: a new part's header, after the time the part before took.
SECTION_START=
section() {
	local t
	t=$(date +%s)
	if [ -n "$SECTION_START" ]; then printf -- '---- that part took %ss\n' "$((t - SECTION_START))"; fi
	SECTION_START=$t
	printf '\n==== %s (t+%ss)\n' "$1" "$((t - START))"
}
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
now() { date +%s.%N; }

# run_step SECONDS CMD...: runs CMD with a time limit (cut to what is left
# of CHECK_BUDGET) and says when it fails or is skipped for want of time.
run_step() {
	local limit=$1
	shift
	local left=$((BUDGET - ($(date +%s) - START)))
	if [ "$left" -le 10 ]; then
		fail "skipped, ${BUDGET}s budget spent: $*"
		return 124
	fi
	[ "$limit" -gt "$left" ] && limit=$left
	timeout --kill-after=10 "$limit" "$@"
	local rc=$?
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		fail "timed out after ${limit}s: $*"
	elif [ "$rc" -ne 0 ]; then
		fail "exit $rc: $*"
	fi
	return "$rc"
}

if [ ! -x "$BIN" ]; then
	echo "gpu-check: no gdsload binary at $BIN (build it with: make gpu-binaries)" >&2
	exit 1
fi
if ! command -v "$PY" >/dev/null 2>&1; then
	echo "gpu-check: $PY not found" >&2
	exit 1
fi
mkdir -p "$CHECK_DIR" || exit 1
RAW=$CHECK_DIR/raw-${CHECK_GIB}g.bin
ST=$CHECK_DIR/model-${CHECK_GIB}g.safetensors
cleanup() { save_results; rm -f "$RAW" "$ST" "$CHECK_DIR"/*.json; }
trap cleanup EXIT

need_kib=$(((CHECK_GIB * 2 + 1) * 1024 * 1024))
avail_kib=$(df -Pk "$CHECK_DIR" | awk 'NR==2 {print $4}')
if [ -n "$avail_kib" ] && [ "$avail_kib" -lt "$need_kib" ]; then
	echo "gpu-check: $CHECK_DIR has $((avail_kib / 1024)) MiB free, need $((need_kib / 1024)) MiB; set CHECK_DIR or CHECK_GIB" >&2
	exit 1
fi

section "machine"
uname -a
"$BIN" version
echo "glibc here: $(getconf GNU_LIBC_VERSION 2>/dev/null || echo unknown)"
for b in "$BIN" "$TESTBIN"; do
	[ -f "$b" ] || continue
	need=$( (objdump -T "$b" 2>/dev/null || strings "$b" 2>/dev/null) | grep -o 'GLIBC_[0-9][0-9.]*' | sort -uV | tail -1)
	echo "$b: $(du -k "$b" | cut -f1) KiB, needs ${need:-an unknown glibc}"
done
echo "NVIDIA driver: $(head -1 /proc/driver/nvidia/version 2>/dev/null || echo 'none (/proc/driver/nvidia/version absent)')"
if [ -d /proc/driver/nvidia-fs ]; then
	echo "nvidia-fs: $(head -1 /proc/driver/nvidia-fs/version 2>/dev/null)"
	head -20 /proc/driver/nvidia-fs/stats 2>/dev/null | sed 's/^/  stats: /'
else
	echo "nvidia-fs: not loaded (/proc/driver/nvidia-fs absent)"
fi
if [ -d /run/udev ]; then
	echo "/run/udev: present"
else
	echo "/run/udev: absent (cuFile cannot look NVMe devices up)"
fi
CUFILE_JSON=${CUFILE_ENV_PATH_JSON:-/etc/cufile.json}
if [ -f "$CUFILE_JSON" ]; then
	echo "cufile.json in use: $CUFILE_JSON"
	grep -E '"(allow_compat_mode|force_compat_mode|use_pci_p2pdma|use_poll_mode|dir|level)"' "$CUFILE_JSON" |
		grep -v '^[[:space:]]*//' | sed 's/^/  /' | head -12
else
	echo "cufile.json in use: none at $CUFILE_JSON (libcufile's built-in defaults)"
fi
echo "libcufile logs to: $CUFILE_LOGFILE_PATH"
nvidia-smi --query-gpu=index,name,memory.total,memory.used,pcie.link.gen.current,pcie.link.width.current,driver_version \
	--format=csv 2>&1 | head -20 || true
"$PY" - <<'EOF' 2>&1 || true
import importlib, sys
print("python", sys.version.split()[0])
for m in ("torch", "safetensors", "numpy"):
    try:
        mod = importlib.import_module(m)
        print(m, getattr(mod, "__version__", "?"))
    except Exception as e:
        print(m, "MISSING:", e)
try:
    import torch
    print("torch cuda", torch.version.cuda, "devices", torch.cuda.device_count())
except Exception as e:
    print("torch cuda: ", e)
EOF

# Where pip put libcufile and libcudart, to tell whether gdsload's own
# search finds them (it does not run Python, so a venv outside the usual
# prefixes can hide them).
pip_lib() {
	"$PY" - "$1" <<'EOF' 2>/dev/null
import glob, os, site, sys
dirs = list(site.getsitepackages()) + [site.getusersitepackages()] + sys.path
for d in dirs:
    for p in sorted(glob.glob(os.path.join(d, "nvidia", "*", "lib", sys.argv[1]))):
        print(os.path.realpath(p)); raise SystemExit
EOF
}
PIP_CUFILE=$(pip_lib 'libcufile.so.0')
PIP_CUDART=$(pip_lib 'libcudart.so.1[1-3]*')
echo "pip's libcufile.so.0: ${PIP_CUFILE:-not found}"
echo "pip's libcudart:      ${PIP_CUDART:-not found}"

section "gdsload doctor (gdsload's own library search)"
run_step 60 "$BIN" doctor "$CHECK_DIR"
run_step 60 "$BIN" doctor --json "$CHECK_DIR" >"$CHECK_DIR/doctor.json"
if ! "$PY" -c 'import json, sys; json.load(open(sys.argv[1]))' "$CHECK_DIR/doctor.json" 2>/dev/null; then
	fail "doctor --json printed something that is not JSON:"
	head -c 2000 "$CHECK_DIR/doctor.json"
fi
# lib_found PREFIX: "True" when doctor found the library whose name starts so.
lib_found() {
	"$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(next((l.get("found") for l in r["libraries"] if l["name"].startswith(sys.argv[2])), False))' \
		"$CHECK_DIR/doctor.json" "$1" 2>/dev/null
}
retry=0
if [ "$(lib_found libcufile)" != "True" ] && [ -n "$PIP_CUFILE" ]; then
	fail "gdsload's search missed $PIP_CUFILE; retrying with GDSLOAD_LIBCUFILE set"
	export GDSLOAD_LIBCUFILE=$PIP_CUFILE
	retry=1
fi
if [ "$(lib_found libcudart)" != "True" ] && [ -n "$PIP_CUDART" ]; then
	fail "gdsload's search missed $PIP_CUDART; retrying with GDSLOAD_LIBCUDART set"
	export GDSLOAD_LIBCUDART=$PIP_CUDART
	retry=1
fi
if [ "$retry" -eq 1 ]; then
	run_step 60 "$BIN" doctor "$CHECK_DIR"
	run_step 60 "$BIN" doctor --json "$CHECK_DIR" >"$CHECK_DIR/doctor.json"
fi

section "test files (${CHECK_GIB} GiB raw, ${CHECK_GIB} GiB safetensors)"
# Written and fsynced before the first timed read: pages still being
# written back would slow whichever mode is measured first.
run_step 120 dd if=/dev/urandom of="$RAW" bs=16M count=$((CHECK_GIB * 64)) iflag=fullblock conv=fsync status=none
run_step 150 "$PY" - "$ST" "$CHECK_GIB" <<'EOF'
import os, sys, time, torch
from safetensors.torch import save_file
path, gib = sys.argv[1], int(sys.argv[2])
t0 = time.time()
n = 16 * gib                        # 64 MiB tensors
tensors = {}
g = torch.Generator(device="cuda").manual_seed(1234)
for i in range(n):
    # Random bytes made on the GPU (fast), stored as several dtypes.
    dt = (torch.float16, torch.bfloat16, torch.float32, torch.int8)[i % 4]
    raw = torch.randint(0, 256, (64 << 20,), dtype=torch.uint8, device="cuda", generator=g)
    tensors[f"layer.{i:03d}.weight"] = raw.view(dt).reshape(1024, -1).cpu()
save_file(tensors, path)
with open(path, "rb+") as f:
    os.fsync(f.fileno())
print(f"wrote {path}: {n} tensors in {time.time() - t0:.1f} s")
EOF

section "PyTorch pinned cudaMemcpy host-to-device (the peer)"
# The peer first, so the bench below can print its ratio against it. Also
# with 4 MiB copies: the bounce path copies chunk by chunk.
run_step 60 "$PY" - "$CHECK_DIR/peer.json" <<'EOF'
import json, sys, torch
def h2d(size, total=8 << 30):
    host = torch.empty(size, dtype=torch.uint8).pin_memory()
    dev = torch.empty(size, dtype=torch.uint8, device="cuda")
    for _ in range(2):
        dev.copy_(host, non_blocking=True)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    reps = total // size
    start.record()
    for _ in range(reps):
        dev.copy_(host, non_blocking=True)
    end.record()
    torch.cuda.synchronize()
    s = start.elapsed_time(end) / 1000
    gibs = reps * size / 2**30 / s
    print(f"pinned H2D: {reps} x {size >> 20} MiB in {s:.3f} s = {gibs:.2f} GiB/s")
    return gibs
out = {"gib_per_s_1g": h2d(1 << 30), "gib_per_s_4m": h2d(4 << 20)}
json.dump(out, open(sys.argv[1], "w"))
EOF

# bench_table FILE: the bench JSON as a table, with each mode's ratio to the
# pinned H2D bandwidth above, and cuFile's mode beside gds.
bench_table() {
	"$PY" - "$1" "$CHECK_DIR/peer.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
try:
    peer = json.load(open(sys.argv[2]))["gib_per_s_1g"]
except Exception:
    peer = 0
print(f"file {r.get('file')} {r.get('bytes', 0) / 2**30:.2f} GiB, cache {r.get('cache')}, runs {r.get('runs')}")
print(f"{'mode':15} {'GiB/s':>8} {'min':>8} {'max':>8} {'cpu s/GiB':>10} {'p50 ms':>8} {'p99 ms':>8} {'x H2D':>7}")
for m in r.get("results", []):
    ratio = f"{m.get('gib_per_s', 0) / peer:7.2f}" if peer else "      -"
    # gds in compat mode is cuFile's POSIX fallback, not GPUDirect Storage.
    name = m["mode"] + (f" ({m['gds_mode']})" if m.get("gds_mode") else "")
    print(f"{name:15} {m.get('gib_per_s', 0):8.2f} {m.get('min_gib_per_s', 0):8.2f} {m.get('max_gib_per_s', 0):8.2f} "
          f"{m.get('cpu_seconds_per_gib', 0):10.3f} {m.get('p50_ms', 0):8.2f} {m.get('p99_ms', 0):8.2f} {ratio}")
for mode, why in (r.get("skipped") or {}).items():
    print(f"{mode:15} skipped: {why}")
EOF
}

# gds_state prints "ok" when doctor found cuFile usable (nvfs, p2pdma, or
# compat, which the bench labels), else why it is not.
gds_state() {
	"$PY" - "$CHECK_DIR/doctor.json" <<'EOF' 2>/dev/null || echo "no doctor report"
import json, sys
r = json.load(open(sys.argv[1]))
print("ok" if r.get("gds_mode") in ("nvfs", "p2pdma", "compat") else (r.get("gds_reason") or "cuFile unavailable"))
EOF
}

section "gdsload bench --modes gds,bounce,cached-bounce,posix (${CHECK_RUNS} runs, defaults)"
# A mode that cannot run must not cost the others their figures: gds is
# left out where doctor found cuFile unusable, and the bench runs again
# without it if it fails.
OTHERS=bounce,cached-bounce,posix
GDS=$(gds_state)
if [ "$GDS" != ok ]; then
	echo "gds skipped: $GDS"
	if run_step 200 "$BIN" bench --modes "$OTHERS" --runs "$CHECK_RUNS" --json "$RAW" >"$CHECK_DIR/bench.json"; then
		bench_table "$CHECK_DIR/bench.json"
	fi
elif run_step 200 "$BIN" bench --modes "gds,$OTHERS" --runs "$CHECK_RUNS" --json "$RAW" >"$CHECK_DIR/bench.json"; then
	bench_table "$CHECK_DIR/bench.json"
else
	head -40 "$CHECK_DIR/bench.json" 2>/dev/null
	echo "the bench with gds failed (above); the other modes alone:"
	if run_step 150 "$BIN" bench --modes "$OTHERS" --runs "$CHECK_RUNS" --json "$RAW" >"$CHECK_DIR/bench.json"; then
		bench_table "$CHECK_DIR/bench.json"
	fi
fi

# The page-cache copies into pinned buffers are CPU-bound: with more cores
# than the default 8 workers, more workers and larger chunks may help.
cores=$(nproc)
section "gdsload bench --modes cached-bounce --workers $cores --chunk-size 16MiB"
if run_step 90 "$BIN" bench --modes cached-bounce --workers "$cores" --chunk-size 16MiB --runs "$CHECK_RUNS" --json "$RAW" >"$CHECK_DIR/bench-tuned.json"; then
	bench_table "$CHECK_DIR/bench-tuned.json"
else
	head -40 "$CHECK_DIR/bench-tuned.json" 2>/dev/null
fi

section "safetensors.torch.load_file(device='cuda') vs gdsload load --to gpu:0, $PAIRS alternated pairs, cold and warm page cache"
if [ ! -s "$ST" ]; then
	fail "no safetensors file: comparison skipped"
else
# ST_PY FILE MODE: one safetensors process. End to end starts before the
# CUDA context is set up (after Python and torch are imported, which a
# training job has done anyway) and ends when the tensors are on the GPU;
# the load phase is load_file alone. Every run reports the bytes of the
# tensors it made; with MODE "hash" it also hashes the file's data region,
# the whole file and what landed on the GPU (untimed, after the load).
ST_PY=$CHECK_DIR/st-load.py
cat >"$ST_PY" <<'EOF'
import time
t_start = time.perf_counter()
import hashlib, json, struct, sys
import torch, safetensors
from safetensors.torch import load_file
path, mode = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
torch.cuda.init()
torch.empty(1, device="cuda")
torch.cuda.synchronize()
t1 = time.perf_counter()
ts = load_file(path, device="cuda")
torch.cuda.synchronize()
t2 = time.perf_counter()
with open(path, "rb") as f:
    hlen = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(hlen))
out = {
    "safetensors_version": safetensors.__version__, "torch_version": torch.__version__,
    "load_seconds": t2 - t1, "end_to_end_seconds": t2 - t0, "context_seconds": t1 - t0,
    "import_seconds": t0 - t_start, "data_offset": 8 + hlen,
    "tensor_bytes": sum(t.numel() * t.element_size() for t in ts.values()),
}
if mode == "hash":
    with open(path, "rb") as f:
        f.seek(8 + hlen)
        fh = hashlib.sha256()  # the file's data region, from disk
        while chunk := f.read(64 << 20):
            fh.update(chunk)
        f.seek(0)
        whole = hashlib.sha256()
        while chunk := f.read(64 << 20):
            whole.update(chunk)
    # What landed on the GPU, copied back in file order.
    order = sorted((v["data_offsets"][0], k) for k, v in header.items() if k != "__metadata__")
    gh = hashlib.sha256()
    for _, k in order:
        gh.update(ts[k].contiguous().reshape(-1).view(torch.uint8).cpu().numpy().tobytes())
    out.update(data_sha256=fh.hexdigest(), file_sha256=whole.hexdigest(), gpu_sha256=gh.hexdigest())
print(json.dumps(out))
EOF
# drop_or_warm CACHE: the page cache dropped (cold; needs root) or the file
# read just before (warm).
drop_or_warm() {
	if [ "$1" = warm ]; then
		cat "$ST" >/dev/null
	elif ! { sync && echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null; then
		echo "cannot drop the page cache (not root?): this 'cold' run is warm"
	fi
}
# Each comparison is PAIRS pairs, the order alternating (safetensors first
# in odd pairs, gdsload first in even ones), cold and then warm. gdsload
# runs without --checksum (the digest copies everything back and hashes it
# after the load; load_file does neither): cold with its defaults (O_DIRECT
# where it can), warm with --direct off (the file is in the page cache, as
# it is for safetensors, which maps it; O_DIRECT would read the disk
# instead). The process's wall time is gdsload's end to end: library
# loading, CUDA context, cuFile driver, allocations.
: >"$CHECK_DIR/e2e-runs.txt"
for cache in cold warm; do
	tc=$(date +%s)
	for pair in $(seq 1 "$PAIRS"); do
		if [ $((pair % 2)) = 1 ]; then order="safetensors gdsload"; else order="gdsload safetensors"; fi
		for who in $order; do
			drop_or_warm "$cache"
			if [ "$who" = safetensors ]; then
				mode=time
				if [ "$cache" = warm ] && [ "$pair" = 1 ]; then mode=hash; fi
				run_step 150 "$PY" "$ST_PY" "$ST" "$mode" >"$CHECK_DIR/torch-$cache-$pair.json"
			else
				direct=(--direct auto)
				if [ "$cache" = warm ]; then direct=(--direct off); fi
				t0=$(now)
				run_step 150 "$BIN" load --to gpu:0 "${direct[@]}" --json "$ST" >"$CHECK_DIR/gdsload-$cache-$pair.json"
				t1=$(now)
				echo "$cache $pair $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')" >>"$CHECK_DIR/e2e-runs.txt"
			fi
		done
	done
	echo "$cache: $PAIRS pairs took $(($(date +%s) - tc)) s"
done
head -c 2000 "$CHECK_DIR/gdsload-warm-1.json"
echo
# Then once more with the digest of what landed, for the byte comparison.
cat "$ST" >/dev/null
run_step 150 "$BIN" load --to gpu:0 --direct off --checksum sha256 --json "$ST" >"$CHECK_DIR/gdsload-sha.json"

"$PY" - "$CHECK_DIR" "$ST" "$PAIRS" <<'EOF' || fail "comparison"
import json, os, statistics, sys
d, path, pairs = sys.argv[1], sys.argv[2], int(sys.argv[3])
size = os.path.getsize(path)
gib = size / 2**30
e2e = {}
for line in open(os.path.join(d, "e2e-runs.txt")):
    cache, pair, secs = line.split()
    e2e[(cache, int(pair))] = float(secs)
ok = True
hashed = None
for cache in ("cold", "warm"):
    full, phase = [], []
    for pair in range(1, pairs + 1):
        try:
            t = json.load(open(os.path.join(d, f"torch-{cache}-{pair}.json")))
            g = json.load(open(os.path.join(d, f"gdsload-{cache}-{pair}.json")))
        except Exception as e:
            print(f"{cache} pair {pair}: no result ({e})")
            ok = False
            continue
        data = size - t["data_offset"]
        # Every timed run's bytes: safetensors' tensors hold the data
        # region; gdsload moved the data region or the whole file.
        if t["tensor_bytes"] != data:
            print(f"MISMATCH {cache} pair {pair}: safetensors' tensors hold {t['tensor_bytes']} bytes, the data region {data}")
            ok = False
        if g.get("bytes") not in (data, size):
            print(f"MISMATCH {cache} pair {pair}: gdsload moved {g.get('bytes')} bytes, want {data} or {size}")
            ok = False
        if "gpu_sha256" in t:
            hashed = t
        ge, te = e2e[(cache, pair)], t["end_to_end_seconds"]
        full.append(te / ge)
        phase.append(t["load_seconds"] / g["seconds"])
        label = g.get("path", "?") + (f" ({g['gds_mode']})" if g.get("gds_mode") else "")
        print(f"{cache} pair {pair} ({'safetensors' if pair % 2 else 'gdsload'} first): "
              f"safetensors {t['safetensors_version']} end to end {te:.3f} s = {gib / te:.2f} GiB/s "
              f"(context {t['context_seconds']:.3f} s, load_file {t['load_seconds']:.3f} s); "
              f"gdsload {label} ({g.get('reason')}) end to end {ge:.3f} s = {gib / ge:.2f} GiB/s "
              f"(load phase {g['seconds']:.3f} s); stronger: {'gdsload' if ge < te else 'safetensors'}; "
              f"ratio {full[-1]:.2f}x, load phase {phase[-1]:.2f}x")
    if full:
        print(f"HEADLINE {cache} page cache, end to end: gdsload is {statistics.median(full):.2f}x "
              f"safetensors.torch.load_file (median of {len(full)} alternated pairs, spread "
              f"{min(full):.2f}..{max(full):.2f}); load phase alone {statistics.median(phase):.2f}x "
              f"({min(phase):.2f}..{max(phase):.2f})")
if hashed is None:
    sys.exit("no hashed safetensors run")
t = hashed
if t["gpu_sha256"] != t["data_sha256"]:
    print("MISMATCH: torch's GPU bytes differ from the file's data region")
    ok = False
else:
    print("torch GPU bytes == file data region (sha256 %s)" % t["data_sha256"][:16])
try:
    files = json.load(open(os.path.join(d, "gdsload-sha.json"))).get("files") or [{}]
except Exception as e:
    sys.exit(f"no gdsload --checksum result: {e}")
dg = files[0].get("sha256", "")
if dg == t["data_sha256"]:
    print("gdsload GPU bytes == file data region (sha256 %s)" % dg[:16])
elif dg == t["file_sha256"]:
    print("gdsload GPU bytes == whole file (sha256 %s): it loaded the file, header included" % dg[:16])
else:
    print(f"MISMATCH: gdsload digest {dg!r} is neither the data region nor the whole file")
    ok = False
sys.exit(0 if ok else 1)
EOF
rm -f "$ST_PY"
fi


section "save from GPU memory, read back by the safetensors library"
# The checkpoint package's test binary (make gpu-binaries) loads a sharded
# checkpoint into GPU memory through bounce and gds, saves it from there
# (pinned copies, cuFileWrite) and checks it with gdsload's own parser; the
# gds case skips with its reason where cuFile's driver will not open, which
# fails this step. Then the safetensors library must read both saved files
# as equal to a reference.
if [ -x "$TESTBIN" ]; then
	SAVE_OUT=$CHECK_DIR/save
	mkdir -p "$SAVE_OUT"
	if GDSLOAD_REAL_GPU=1 GDSLOAD_SAVE_OUT=$SAVE_OUT run_step 120 "$TESTBIN" -test.run '^TestSaveFromGPU$' -test.v; then
		run_step 120 "$PY" - "$SAVE_OUT" <<'EOF'
import glob, os, sys
import safetensors, torch
from safetensors.torch import load_file
out = sys.argv[1]
ref = load_file(os.path.join(out, "reference.safetensors"))
saved = sorted(glob.glob(os.path.join(out, "saved-*.safetensors")))
# Both routes must have saved: a gds case that skipped (no cuFile) leaves
# only the bounce file, and that is a failed check, not a pass.
missing = [r for r in ("bounce", "gds") if not os.path.exists(os.path.join(out, f"saved-{r}.safetensors"))]
if missing:
    sys.exit(f"no file saved through {', '.join(missing)} (the test's skip reason is above)")
ok = True
for path in saved:
    got = load_file(path)
    # reshape(-1) first: a 0-dim tensor cannot be viewed as bytes.
    same = set(got) == set(ref) and all(
        got[k].dtype == ref[k].dtype and got[k].shape == ref[k].shape
        and torch.equal(got[k].reshape(-1).view(torch.uint8), ref[k].reshape(-1).view(torch.uint8)) for k in ref)
    print(f"safetensors {safetensors.__version__} reads {os.path.basename(path)}: {len(got)} tensors, equal to the reference: {same}")
    ok = ok and same
sys.exit(0 if ok else 1)
EOF
	fi
	rm -rf "$SAVE_OUT"
else
	fail "no checkpoint test binary at $TESTBIN (make gpu-binaries)"
fi

section "python: gdsload.load_file(device=cuda:0) vs safetensors.torch.load_file, cold and warm; save_file from CUDA tensors (scripts/gpu-check-python.py)"; if [ -s "$ST" ]; then run_step 240 env CHECK_PAIRS="$PAIRS" PYTHONPATH=".gpu/python${PYTHONPATH:+:$PYTHONPATH}" "$PY" scripts/gpu-check-python.py "$ST" "$CHECK_DIR"; else fail "no safetensors file: python check skipped"; fi

section "RDMA: scripts/rdma-check.sh where ibv_devices lists a device"
# Only where the machine already has an RDMA device: no kernel module is
# loaded here (rdma-check.sh's --rxe and --siw are not used).
if command -v ibv_devices >/dev/null && [ "$(ibv_devices 2>/dev/null | awk 'NR > 2 && NF' | wc -l)" -gt 0 ]; then
	ibv_devices
	run_step 1200 env GDSLOAD="$BIN" RDMAFS_TEST="${RDMAFS_TEST:-./.gpu/rdmafs.test}" scripts/rdma-check.sh ||
		fail "scripts/rdma-check.sh"
else
	echo "no RDMA device (ibv_devices lists none, or rdma-core is not installed): rdma-check.sh not run"
fi

section "done in $(($(date +%s) - START)) s, $FAILS failure(s)"
[ "$FAILS" -eq 0 ]
