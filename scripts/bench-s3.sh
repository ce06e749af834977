#!/usr/bin/env bash
# bench-s3.sh: reading an object from a loopback MinIO, gdsload against
# rclone and MinIO's mc, on the same object, in the same run, warm.
#
# A SIZE_MIB object (default 2 GiB) of random bytes is uploaded to a
# single-node MinIO started here, and read once by every tool to warm the
# server's page cache. Each round then runs, in alternating order:
#   load:  gdsload load --to host s3://...  (ranged GETs into the loader's
#          ring of reused buffers), rclone cat and mc cat, both into
#          /dev/null (rclone cat reads one stream: rclone's multi-thread
#          streams only apply to copies to local disk, below);
#   stage: gdsload stage s3://... DIR against rclone copy with
#          --multi-thread-streams, each followed by a sync (stage syncs
#          before its rename), into an emptied folder on local disk.
# Every run is timed from outside its process by GNU time. Bytes are
# checked once, untimed: gdsload's sha256 and every copy against the
# source file. Prints per-tool medians and the median ratios.
#
# Usage: scripts/bench-s3.sh [ROUNDS]  (default 5)
# Environment: SIZE_MIB (2048), WORK (default a new folder in /var/tmp),
# GDSLOAD (bin/gdsload), STREAMS (rclone --multi-thread-streams, 16),
# TOOLS_DIR (where make minio installs MinIO; rclone and mc are
# go-installed there too when missing).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/lib-bench.sh"

ROUNDS=${1:-5}
SIZE_MIB=${SIZE_MIB:-2048}
STREAMS=${STREAMS:-16}
GDSLOAD=${GDSLOAD:-$repo/bin/gdsload}
TOOLS_DIR=${TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gdsload-tools}
RCLONE_VERSION=v1.76.0
MC_VERSION=v0.0.0-20250313080218-cf909e1063a9
WORK=${WORK:-$(mktemp -d /var/tmp/bench-s3.XXXXXX)}
bytes=$((SIZE_MIB << 20))

[ -x /usr/bin/time ] || need /usr/bin/time time
need curl curl
need python3 python3
[ -x "$GDSLOAD" ] || { echo "$GDSLOAD not built: run make build" >&2; exit 1; }

# go_tool NAME MODULE VERSION: $TOOLS_DIR/NAME, go-installed at VERSION
# unless already there.
go_tool() {
	local bin=$TOOLS_DIR/$1
	if ! go version -m "$bin" 2>/dev/null | grep -q "mod[[:space:]]*$2[[:space:]]*$3"; then
		echo "installing $2@$3 into $TOOLS_DIR (a few minutes)" >&2
		mkdir -p "$TOOLS_DIR"
		GOBIN=$TOOLS_DIR GOFLAGS= go install "$2@$3" >&2
	fi
	echo "$bin"
}
make -s -C "$repo" minio TOOLS_DIR="$TOOLS_DIR" >&2
MINIO=${GDSLOAD_MINIO:-$TOOLS_DIR/minio}
RCLONE=$(go_tool rclone github.com/rclone/rclone "$RCLONE_VERSION")
MC=$(go_tool mc github.com/minio/mc "$MC_VERSION")

pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
endpoint=http://127.0.0.1:$port
user=benchadmin
pass=benchadmin-secret
mkdir -p "$WORK/drive"
MINIO_ROOT_USER=$user MINIO_ROOT_PASSWORD=$pass MINIO_BROWSER=off MINIO_UPDATE=off \
	"$MINIO" server --quiet --address "127.0.0.1:$port" "$WORK/drive" >"$WORK/minio.log" 2>&1 &
pid=$!
for _ in $(seq 200); do curl -sf "$endpoint/minio/health/ready" >/dev/null && break; sleep 0.1; done
curl -sf "$endpoint/minio/health/ready" >/dev/null || { echo "MinIO did not start:" >&2; cat "$WORK/minio.log" >&2; exit 1; }

# Every tool reads with the same keys from the same endpoint.
export AWS_ACCESS_KEY_ID=$user AWS_SECRET_ACCESS_KEY=$pass AWS_REGION=us-east-1 AWS_ENDPOINT_URL_S3=$endpoint
export RCLONE_CONFIG=$WORK/rclone.conf RCLONE_CONFIG_B_TYPE=s3 RCLONE_CONFIG_B_PROVIDER=Minio \
	RCLONE_CONFIG_B_ENDPOINT=$endpoint RCLONE_CONFIG_B_ACCESS_KEY_ID=$user RCLONE_CONFIG_B_SECRET_ACCESS_KEY=$pass
touch "$RCLONE_CONFIG"
mcc() { "$MC" --config-dir "$WORK/mc" --quiet "$@"; }
mcc alias set b "$endpoint" "$user" "$pass" >/dev/null

src=$WORK/data.bin
make_file "$src" "$bytes"
want=$(sha256sum "$src" | cut -d' ' -f1)
mcc mb b/bench >/dev/null
mcc cp "$src" b/bench/data.bin >/dev/null
url=s3://bench/data.bin

# Untimed: every tool reads the same bytes (this also warms the cache).
got=$("$GDSLOAD" load --to host --checksum sha256 --json "$url" | python3 -c 'import json,sys; print(json.load(sys.stdin)["files"][0]["sha256"])')
[ "$got" = "$want" ] || { echo "gdsload load read sha256 $got, want $want" >&2; exit 1; }
[ "$("$RCLONE" cat b:bench/data.bin | sha256sum | cut -d' ' -f1)" = "$want" ] || { echo "rclone cat differs" >&2; exit 1; }
[ "$(mcc cat b/bench/data.bin | sha256sum | cut -d' ' -f1)" = "$want" ] || { echo "mc cat differs" >&2; exit 1; }
rm -rf "$WORK/dst"
"$GDSLOAD" stage "$url" "$WORK/dst/g" >/dev/null
cmp "$src" "$WORK/dst/g/data.bin" || { echo "gdsload stage copy differs" >&2; exit 1; }
"$RCLONE" copy --multi-thread-streams "$STREAMS" b:bench/data.bin "$WORK/dst/r"
cmp "$src" "$WORK/dst/r/data.bin" || { echo "rclone copy differs" >&2; exit 1; }

t=$WORK/times
mkdir -p "$t"
run() {
	case $1 in
	load) timed "$t/load" "$GDSLOAD" load --to host "$url" ;;
	rclone) timed "$t/rclone" "$RCLONE" cat b:bench/data.bin ;;
	mc) timed "$t/mc" "$MC" --config-dir "$WORK/mc" --quiet cat b/bench/data.bin ;;
	stage) rm -rf "$WORK/dst"; timed "$t/stage" sh -c '"$0" stage "$1" "$2" >/dev/null && sync' "$GDSLOAD" "$url" "$WORK/dst/g" ;;
	copy) rm -rf "$WORK/dst"; timed "$t/copy" sh -c '"$0" copy --multi-thread-streams "$1" b:bench/data.bin "$2" && sync' "$RCLONE" "$STREAMS" "$WORK/dst/r" ;;
	esac
}
echo "object of $SIZE_MIB MiB on loopback MinIO, $ROUNDS rounds, warm, $(nproc) cores, $(uname -r), $(date -u +%FT%TZ)" >&2
for r in $(seq "$ROUNDS"); do
	if ((r % 2)); then order="load rclone mc stage copy"; else order="copy stage mc rclone load"; fi
	for m in $order; do run "$m"; done
	echo "round $r/$ROUNDS done" >&2
done

for m in load rclone mc stage copy; do
	gibps "$bytes" "$t/$m" >"$t/$m.bw"
	cpugib "$bytes" "$t/$m" >"$t/$m.cpu"
done
printf '\nscripts/bench-s3.sh, %s\n' "$(stamp)"
printf '\n%-26s %8s %14s %10s\n' tool "GiB/s" "spread" "CPU s/GiB"
for m in load rclone mc stage copy; do
	case $m in
	load) name="gdsload load --to host" ;; rclone) name="rclone cat > /dev/null" ;; mc) name="mc cat > /dev/null" ;;
	stage) name="gdsload stage + sync" ;; copy) name="rclone copy ($STREAMS streams) + sync" ;;
	esac
	printf '%-26s %8.3f %14s %10.3f\n' "$name" "$(median <"$t/$m.bw")" "$(spread <"$t/$m.bw")" "$(median <"$t/$m.cpu")"
done
# The best peer of the load: the one with the higher median.
best=$(awk -v r="$(median <"$t/rclone.bw")" -v m="$(median <"$t/mc.bw")" 'BEGIN { print (m > r) ? "mc" : "rclone" }')
ratios "$t/load.bw" "$t/$best.bw" >"$t/r.load"
ratios "$t/stage.bw" "$t/copy.bw" >"$t/r.stage"
echo
printf 'load / best of rclone cat, mc cat (%s): median %.3fx (spread %s)   target >= 1.0x\n' "$best" "$(median <"$t/r.load")" "$(spread <"$t/r.load")"
printf 'stage / rclone copy:                      median %.3fx (spread %s)   no target\n' "$(median <"$t/r.stage")" "$(spread <"$t/r.stage")"
