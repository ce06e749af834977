#!/usr/bin/env bash
# gpu-check-dryrun.sh: runs scripts/gpu-check.sh here, without a GPU,
# against the C test double of libcudart, libcuda and libcufile
# (cufile/fakecuda/csrc/fakecuda.c), so changes to the GPU check can be
# tried before the one run a lent GPU machine allows.
#
#   make gpu-binaries && scripts/gpu-check-dryrun.sh
#
# It passes when the steps that need no PyTorch succeed: doctor finds the
# three libraries, the bench of gds, bounce, cached-bounce and posix runs,
# and the checkpoint test binary saves from "GPU" memory. The PyTorch steps
# fail here as they must (no PyTorch, no GPU); the figures printed are the
# test double's, not a GPU's, and are not to be recorded.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cc=${CC:-gcc}
"$cc" -shared -fPIC -O1 -fvisibility=hidden -o "$work/libfakecuda.so" "$root/cufile/fakecuda/csrc/fakecuda.c" -lpthread
for name in libcudart.so.13 libcufile.so.0 libcuda.so.1; do
	ln -s libfakecuda.so "$work/$name"
done

log=$work/gpu-check.log
(
	cd "$root"
	GDSLOAD_LIBCUDART=$work/libcudart.so.13 GDSLOAD_LIBCUFILE=$work/libcufile.so.0 GDSLOAD_LIBCUDA=$work/libcuda.so.1 \
		FAKECUDA_MEM=$((3 << 30)) CHECK_GIB=1 CHECK_RUNS=1 CHECK_DIR=$work/check CHECK_BUDGET=300 \
		bash scripts/gpu-check.sh
) >"$log" 2>&1 || true
cat "$log"

ok=1
expect() {
	if grep -q -- "$1" "$log"; then
		echo "dry run: ok: $2"
	else
		echo "dry run: MISSING: $2 (no line matching '$1')"
		ok=0
	fi
}
expect '^  libcufile.so.0  *[0-9]' "doctor found libcufile"
expect '^  libcudart.so  *[0-9]' "doctor found libcudart"
expect '^  gpu:0 ' "doctor chose a GPU path"
expect '^gds  ' "bench ran gds"
expect '^bounce  ' "bench ran bounce"
expect '^cached-bounce  ' "bench ran cached-bounce"
expect '^--- PASS: TestSaveFromGPU' "the checkpoint test binary saved from GPU memory"
if grep -q 'skipped, .* budget spent' "$log"; then
	echo "dry run: a step ran out of the time budget"
	ok=0
fi
[ "$ok" -eq 1 ] && echo "dry run: passed" || { echo "dry run: FAILED"; exit 1; }
