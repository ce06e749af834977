#!/usr/bin/env bash
# gpu-check-dryrun.sh: runs scripts/gpu-check.sh here, without a GPU,
# against the C test double of libcudart, libcuda and libcufile
# (internal/fakecuda/csrc/fakecuda.c), so changes to the GPU check can be
# tried before the one run a lent GPU machine allows.
#
#   make gpu-check-dryrun          # builds .gpu/ first (make gpu-binaries)
#
# It runs the check twice:
#   1. "gds": cuFile in nvfs mode. Doctor finds the three libraries and
#      chooses gds; the bench of gds (labelled with cuFile's mode), bounce,
#      cached-bounce and posix runs; the checkpoint test binary saves from
#      "GPU" memory.
#   2. "no gds": the double's libcufile behaves as Debian's libcufile 1.4
#      does without an NVIDIA driver (libcuda.so.1 missing): it prints on
#      standard output, writes cufile.log into the current folder and will
#      not open. doctor --json must stay JSON and name libcuda.so.1, no
#      cufile.log may appear in the repository, libcufile's log must land
#      where CUFILE_LOGFILE_PATH says, the bench must skip gds with the
#      reason and still print the other modes' figures, and the save test's
#      gds case must skip with its reason.
# The PyTorch steps fail here as they must (no PyTorch, no GPU); the figures
# printed are the test double's, not a GPU's, and are not to be recorded.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cc=${CC:-gcc}
"$cc" -shared -fPIC -O1 -fvisibility=hidden -o "$work/libfakecuda.so" "$root/internal/fakecuda/csrc/fakecuda.c" -lpthread
for name in libcudart.so.13 libcufile.so.0 libcuda.so.1; do
	ln -s libfakecuda.so "$work/$name"
done

ok=1
# expect LOG PATTERN WHAT: the log has a line matching PATTERN.
expect() {
	if grep -q -- "$2" "$1"; then
		echo "dry run: ok: $3"
	else
		echo "dry run: MISSING: $3 (no line matching '$2')"
		ok=0
	fi
}
# refuse LOG PATTERN WHAT: the log has no line matching PATTERN.
refuse() {
	if grep -q -- "$2" "$1"; then
		echo "dry run: WRONG: $3 (a line matches '$2')"
		ok=0
	else
		echo "dry run: ok: $3"
	fi
}

# pass NAME FAKECUDA_FAIL: runs the check with the double, its log in
# $work/NAME.log and $OUT in $work/NAME.out.
pass() {
	local name=$1 fault=$2
	mkdir -p "$work/$name.out"
	(
		cd "$root"
		env -u CUFILE_LOGFILE_PATH \
			GDSLOAD_LIBCUDART="$work/libcudart.so.13" GDSLOAD_LIBCUFILE="$work/libcufile.so.0" GDSLOAD_LIBCUDA="$work/libcuda.so.1" \
			FAKECUDA_FAIL="$fault" FAKECUDA_MEM=$((3 << 30)) OUT="$work/$name.out" \
			CHECK_GIB=1 CHECK_RUNS=1 CHECK_DIR="$work/$name.check" CHECK_BUDGET=300 \
			bash scripts/gpu-check.sh
	) >"$work/$name.log" 2>&1 || true
	echo "======== dry run pass: $name"
	cat "$work/$name.log"
	if grep -q 'skipped, .* budget spent' "$work/$name.log"; then
		echo "dry run: a step of pass $name ran out of the time budget"
		ok=0
	fi
}

if [ -e "$root/cufile.log" ]; then
	echo "dry run: $root/cufile.log exists before the run; remove it" >&2
	exit 1
fi

pass gds ""
log=$work/gds.log
expect "$log" '^  libcufile.so.0  *[0-9]' "doctor found libcufile"
expect "$log" '^  libcudart.so  *[0-9]' "doctor found libcudart"
expect "$log" '^  gpu:0  *gds ' "doctor chose gds"
expect "$log" '^gds (nvfs)  ' "bench ran gds and named cuFile's mode"
expect "$log" '^bounce  ' "bench ran bounce"
expect "$log" '^cached-bounce  ' "bench ran cached-bounce"
expect "$log" '^    --- PASS: TestSaveFromGPU/gds' "the checkpoint test binary saved from GPU memory through cuFile"
expect "$log" '^    --- PASS: TestSaveFromGPU/bounce' "the checkpoint test binary saved from GPU memory through pinned buffers"

pass nogds nocuda
log=$work/nogds.log
expect "$log" '^  gpu:0  *bounce .*gds refused: cuFileDriverOpen failed: CU_FILE_NVFS_SETUP_ERROR (5033): libcufile could not load libcuda.so.1' "doctor names libcuda.so.1 as the cause"
refuse "$log" 'doctor --json printed something that is not JSON' "doctor --json stays JSON"
refuse "$log" '^dlopen error libcuda.so.1' "libcufile's lines reach no output"
expect "$log" '^gds skipped: .*libcuda.so.1' "bench skips gds with the reason"
expect "$log" '^bounce  ' "bench ran bounce without gds"
expect "$log" '^cached-bounce  ' "bench ran cached-bounce without gds"
expect "$log" '^    --- SKIP: TestSaveFromGPU/gds' "the save test's gds case skips"
expect "$log" 'no gds path: cuFileDriverOpen failed' "... with its reason"
expect "$log" '^    --- PASS: TestSaveFromGPU/bounce' "the save test passes through pinned buffers"
if grep -q 'libcuda.so.1' "$work/nogds.out/cufile.log" 2>/dev/null; then
	echo "dry run: ok: libcufile's log came back in \$OUT/cufile.log"
else
	echo "dry run: MISSING: libcufile's log in \$OUT/cufile.log"
	ok=0
fi
if [ -e "$root/cufile.log" ]; then
	echo "dry run: WRONG: a cufile.log was left in $root"
	rm -f "$root/cufile.log"
	ok=0
else
	echo "dry run: ok: no cufile.log left in the repository"
fi

if [ "$ok" -eq 1 ]; then
	echo "dry run: passed"
else
	echo "dry run: FAILED"
	exit 1
fi
