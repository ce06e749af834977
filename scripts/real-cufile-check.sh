#!/usr/bin/env bash
# real-cufile-check.sh: run gdsload's gds route against NVIDIA's real
# libcufile on a machine without a GPU, over the CUDA test double's driver
# (make fakecuda), as the TestReal tests do (internal/realcufile).
#
# Usage (as root): scripts/real-cufile-check.sh
# env: GDSLOAD (bin/gdsload), LIBS (the libcufile.so.0 files to try;
#      default: Debian's libcufile0 and build/venv's nvidia-cufile-cu12),
#      SIZE (bytes of the test file, 67108867: 64 MiB + 3), WORK (a temp dir).
#
# It sets up what libcufile needs and undoes it on every exit path:
# udevd (started only if none runs, and then stopped again), an ext4 file
# system on a loop device that udev has recorded, CUFILE_ENV_PATH_JSON at
# internal/realcufile/cufile.json (compat mode allowed) and
# CUFILE_LOGFILE_PATH. Then, for each library, each step prints PASS or
# FAIL (the exit status is the number failed):
#  1. load --to gpu:0 --path gds --checksum sha256 --json: path gds,
#     gds_mode compat, and the file's sha256 (the bytes that landed)
#  2. libcufile's log appeared at CUFILE_LOGFILE_PATH
#  3. doctor --json names the library's path and compat mode
# This proves NVIDIA's API contract, registration and compat-mode reads;
# not nvidia-fs or P2PDMA DMA, real device memory, or speed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
GDSLOAD=${GDSLOAD:-$repo/bin/gdsload}
SIZE=${SIZE:-67108867}
if [ "$(id -u)" != 0 ]; then
	echo "real-cufile-check: run as root (a loop device and a mount are needed)" >&2
	exit 2
fi
for tool in losetup mkfs.ext4 mount umount udevadm truncate python3; do
	command -v "$tool" >/dev/null || { echo "real-cufile-check: $tool not found" >&2; exit 2; }
done
[ -x /lib/systemd/systemd-udevd ] || { echo "real-cufile-check: no udevd (apt-get install udev)" >&2; exit 2; }
[ -x "$GDSLOAD" ] || { echo "real-cufile-check: no gdsload at $GDSLOAD (make build)" >&2; exit 2; }
if [ -z "${LIBS:-}" ]; then
	LIBS=$(ls /usr/lib/x86_64-linux-gnu/libcufile.so.0 "$repo"/build/venv/lib/python3*/site-packages/nvidia/cufile/lib/libcufile.so.0 2>/dev/null || true)
fi
[ -n "$LIBS" ] || { echo "real-cufile-check: no real libcufile (apt-get install libcufile0; make venv)" >&2; exit 2; }

WORK=${WORK:-$(mktemp -d)}
started_udevd= loop= mnt=$WORK/ext4
cleanup() {
	mountpoint -q "$mnt" && umount "$mnt"
	[ -n "$loop" ] && losetup -d "$loop"
	[ -n "$started_udevd" ] && udevadm control --exit
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

(cd "$repo" && go run ./internal/fakecuda/mkfakecuda "$WORK/fakecuda" >/dev/null)
preload=
if [ ! -e /proc/modules ]; then
	# cuFile 1.14 spins forever where /proc/modules is missing.
	cc -shared -fPIC -O1 -o "$WORK/libprocmodules.so" "$repo/internal/realcufile/csrc/procmodules.c" -ldl
	preload=$WORK/libprocmodules.so
fi
udevd_running() { # a live systemd-udevd (a zombie one does not count)
	local p
	for p in $(pgrep -x systemd-udevd); do
		[ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ] && return 0
	done
	return 1
}
if ! udevd_running; then
	/lib/systemd/systemd-udevd --daemon
	started_udevd=1
	udevadm trigger --subsystem-match=block
fi
truncate -s "$((SIZE / 1048576 + 96))M" "$WORK/ext4.img"
mkfs.ext4 -q -F "$WORK/ext4.img"
loop=$(losetup --find --show "$WORK/ext4.img")
udevadm trigger --action=change --sysname-match="$(basename "$loop")"
udevadm settle --timeout=30
mkdir -p "$mnt"
mount "$loop" "$mnt"
head -c "$SIZE" /dev/urandom >"$mnt/data.bin"
want=$(sha256sum "$mnt/data.bin" | cut -d' ' -f1)

fails=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
for lib in $LIBS; do
	echo "== $lib"
	log=$WORK/cufile-$(basename "$(dirname "$lib")").log
	run() {
		env GDSLOAD_LIBCUFILE="$lib" GDSLOAD_LIBCUDART="$WORK/fakecuda/libcudart.so.13" \
			GDSLOAD_LIBCUDA="$WORK/fakecuda/libcuda.so.1" LD_LIBRARY_PATH="$WORK/fakecuda" \
			CUFILE_ENV_PATH_JSON="$repo/internal/realcufile/cufile.json" CUFILE_LOGFILE_PATH="$log" \
			${preload:+LD_PRELOAD=$preload} "$GDSLOAD" "$@"
	}
	if out=$(run load --to gpu:0 --path gds --direct on --checksum sha256 --json "$mnt/data.bin") &&
		python3 -c 'import json, sys; r = json.loads(sys.argv[1]); f = r["files"][0]
sys.exit(0 if (r["path"], r["gds_mode"], f["path"], f["sha256"]) == ("gds", "compat", "gds", sys.argv[2]) else 1)' "$out" "$want"; then
		pass "load: path gds, gds_mode compat, sha256 $want"
	else
		fail "load: $out"
	fi
	if [ -s "$log" ]; then pass "libcufile logged to $log"; else fail "no log at $log"; fi
	if out=$(run doctor --json "$mnt") &&
		python3 -c 'import json, sys; r = json.loads(sys.argv[1])
sys.exit(0 if r["libraries"][0]["path"] == sys.argv[2] and r["gds_mode"] == "compat" else 1)' "$out" "$lib"; then
		pass "doctor names $lib, compat mode"
	else
		fail "doctor: $out"
	fi
done
exit "$fails"
