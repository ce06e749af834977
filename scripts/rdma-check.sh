#!/usr/bin/env bash
# rdma-check.sh: run gdsload's verbs transport on real RDMA: a NIC, or soft
# RoCE (rdma_rxe) / soft iWARP (siw) over an ordinary network interface.
# No machine this project's CI runs on has either; this is the check to run
# where one does, before trusting the verbs transport (docs/PROTOCOL.md).
#
# Usage: scripts/rdma-check.sh [--rxe IFACE | --siw IFACE] [--addr IP]
#   --rxe IFACE, --siw IFACE  first create an RDMA link over IFACE (root:
#                             modprobe rdma_rxe|siw; rdma link add gdsload_rdma0
#                             type rxe|siw netdev IFACE), deleted at exit
#   --addr IP                 an address of the RDMA interface (default: the
#                             first IPv4 address of IFACE)
# env: GDSLOAD (bin/gdsload), SIZE_MIB (1024: data for the CLI steps),
#      RDMAFS_TEST (a test binary from `go test -c -race -o rdmafs.test
#      ./rdmafs`, for machines without Go), WORK (a temp dir).
#
# Steps, each printed PASS or FAIL (the exit status is the number failed):
#  1. gdsload doctor: rdma-core loads, the device is there, a port is up
#  2. the verbs tests on the hardware, with the race detector: end to end
#     with CRC on and off, 64 connections, a flood of unauthenticated queue
#     pairs, the server shut down mid-read, a client process killed mid-read
#  3. the CLI end to end: gdsload serve --transport verbs, gdsload stage
#     --transport verbs --crc of a tree, compared byte for byte
#  4. a gdsload stage killed (SIGKILL) mid-read; the server lives on and
#     the next stage is exact
#  5. a stage over 64 connections
#  6. the server stopped (SIGTERM) mid-stage: it exits 0 within its drain
#     timeout and the stage ends (completed or failed, never hung)
set -euo pipefail
shopt -s inherit_errexit

repo=$(cd "$(dirname "$0")/.." && pwd)
GDSLOAD=${GDSLOAD:-$repo/bin/gdsload}
SIZE_MIB=${SIZE_MIB:-1024}
iface="" kind="" addr=""
while (($#)); do
	case $1 in
	--rxe | --siw) kind=${1#--} iface=${2:?$1 needs an interface}; shift 2 ;;
	--addr) addr=${2:?--addr needs an address}; shift 2 ;;
	*) echo "usage: $0 [--rxe IFACE | --siw IFACE] [--addr IP]" >&2; exit 2 ;;
	esac
done
[[ -x $GDSLOAD ]] || { echo "rdma-check: $GDSLOAD not built: run make build" >&2; exit 2; }
WORK=${WORK:-$(mktemp -d /tmp/rdma-check.XXXXXX)}

link="" server="" fails=0
cleanup() {
	[[ -n $server ]] && kill "$server" 2>/dev/null || true
	wait 2>/dev/null || true
	[[ -n $link ]] && rdma link delete "$link" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

if [[ -n $kind ]]; then
	module=rdma_rxe
	[[ $kind == siw ]] && module=siw
	modprobe "$module" || { echo "rdma-check: modprobe $module failed (needs kmod, root and a kernel built with $kind)" >&2; exit 2; }
	link=gdsload_rdma0
	rdma link add "$link" type "$kind" netdev "$iface"
	echo "created $kind link $link over $iface"
fi
if [[ -z $addr ]]; then
	[[ -n $iface ]] || { echo "rdma-check: give --addr IP (an address of the RDMA interface) or --rxe/--siw IFACE" >&2; exit 2; }
	addr=$(ip -4 -o addr show dev "$iface" | awk '{sub(/\/.*/, "", $4); print $4; exit}')
	[[ -n $addr ]] || { echo "rdma-check: $iface has no IPv4 address" >&2; exit 2; }
fi
# Registered memory counts against RLIMIT_MEMLOCK.
ulimit -l unlimited 2>/dev/null || echo "note: ulimit -l stays $(ulimit -l) KiB: large registrations may fail"
echo "RDMA address $addr, memlock $(ulimit -l), work dir $WORK"

# 1. doctor
if "$GDSLOAD" doctor --json 2>/dev/null | sed -n '/^{/,$p' |
	python3 -c 'import json,sys; r=json.load(sys.stdin)["rdma"]; print(r["reason"]); sys.exit(0 if r["usable"] and "active port" in r["reason"] and not r["reason"].endswith("fail") else 1)'; then
	pass "doctor: rdma-core and an active port"
else
	fail "doctor: the verbs transport would not work here:"
	"$GDSLOAD" doctor 2>/dev/null | sed -n '/^RDMA (rdma-core/,/^Limits/p'
	exit "$fails"
fi

# 2. the verbs tests on the hardware
tests='^TestVerbsHW'
if [[ -n ${RDMAFS_TEST:-} ]]; then
	(cd "$repo/rdmafs" && GDSLOAD_RDMA_ADDR=$addr "$RDMAFS_TEST" -test.run "$tests" -test.v -test.count=1 -test.timeout=20m) >"$WORK/go-test.log" 2>&1 && r=0 || r=$?
else
	(cd "$repo" && GDSLOAD_RDMA_ADDR=$addr go test -race -count=1 -timeout 20m -run "$tests" -v ./rdmafs/) >"$WORK/go-test.log" 2>&1 && r=0 || r=$?
fi
grep -E '^(--- |ok|FAIL)' "$WORK/go-test.log" || true
if ((r == 0)) && ! grep -q -- '--- SKIP' "$WORK/go-test.log"; then
	pass "verbs tests on $addr"
else
	fail "verbs tests on $addr (log: $WORK/go-test.log)"
	cp "$WORK/go-test.log" /tmp/rdma-check-go-test.log && echo "kept /tmp/rdma-check-go-test.log"
fi

# 3-6: the CLI over verbs.
src=$WORK/src
mkdir -p "$src/d"
for i in $(seq 1 8); do head -c $((SIZE_MIB * 1024 * 1024 / 8 + i * 4097)) /dev/urandom >"$src/d/f$i.bin"; done
head -c 0 /dev/null >"$src/empty"
(umask 077 && head -c 32 /dev/urandom | base64 >"$WORK/token")
"$GDSLOAD" serve --root "$src" --listen "$addr:0" --transport verbs --token-file "$WORK/token" >"$WORK/serve.out" 2>"$WORK/serve.log" &
server=$!
for _ in $(seq 100); do grep -q '^listening on' "$WORK/serve.out" 2>/dev/null && break; sleep 0.1; done
listen=$(sed -n 's/^listening on //p' "$WORK/serve.out")
[[ -n $listen ]] || { fail "gdsload serve --transport verbs did not start:"; cat "$WORK/serve.log"; exit "$fails"; }
url="rdmafs://$listen/"
stage() { "$GDSLOAD" stage --transport verbs --crc --token-file "$WORK/token" "$@"; }
same() { diff -r -x .gdsload-stage "$src" "$1" >/dev/null; }

if stage "$url" "$WORK/dst1" >"$WORK/stage1.log" 2>&1 && same "$WORK/dst1"; then
	pass "CLI end to end: stage over verbs with CRC, byte for byte"
else
	fail "CLI end to end (log: $WORK/stage1.log)"; tail -5 "$WORK/stage1.log"
fi

stage "$url" "$WORK/dst2" >"$WORK/stage2.log" 2>&1 &
victim=$!
sleep 1
kill -9 "$victim" 2>/dev/null || true
wait "$victim" 2>/dev/null || true
if kill -0 "$server" 2>/dev/null && stage "$url" "$WORK/dst3" >"$WORK/stage3.log" 2>&1 && same "$WORK/dst3"; then
	pass "client killed mid-read: the server lives on, the next stage is exact"
else
	fail "client killed mid-read (server log: $WORK/serve.log)"; tail -5 "$WORK/serve.log"
fi

if stage --connections 64 "$url" "$WORK/dst4" >"$WORK/stage4.log" 2>&1 && same "$WORK/dst4"; then
	pass "64 connections"
else
	fail "64 connections (log: $WORK/stage4.log)"; tail -5 "$WORK/stage4.log"
fi

stage "$url" "$WORK/dst5" >"$WORK/stage5.log" 2>&1 &
reader=$!
sleep 1
kill -TERM "$server"
status=0
timeout 60 tail --pid="$server" -f /dev/null || status=$?
wait "$server" && code=0 || code=$?
server=""
timeout 60 tail --pid="$reader" -f /dev/null || status=$?
wait "$reader" 2>/dev/null || true
if ((status == 0 && code == 0)); then
	pass "server stopped mid-stage: exited 0, the stage ended"
else
	fail "server stopped mid-stage: server exit $code, waits $status (log: $WORK/serve.log)"; tail -5 "$WORK/serve.log"
fi
grep -iE 'panic|data race|use after' "$WORK/serve.log" && fail "the server log shows a crash" || true

echo "rdma-check: $fails step(s) failed"
exit "$fails"
