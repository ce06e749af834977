#!/usr/bin/env bash
# bench-s3-cache.sh: epochs of a WebDataset in a loopback MinIO, read by
# RANKS gdsload iterate processes of one node, with and without a shared
# --cache folder.
#
# SHARDS shards of SIZE_MIB MiB in all (samples of 1 MiB of random bytes),
# with their manifest, are uploaded to a single-node MinIO started here.
# Each mode runs RANKS processes (--rank r --world-size RANKS) at once for
# EPOCHS epochs; the cached mode starts from an empty cache folder. For
# each it prints the wall time of the slowest rank (GNU time, from outside)
# and the bytes MinIO sent, read from its own metrics (v3, api/requests),
# as a multiple of the dataset. Every rank's samples are checked to be the
# same, with and without the cache (--checksum sha256 of its samples).
#
# The comparison with MosaicML Streaming that docs/S3.md's cache section
# asks for is not part of this script.
#
# Usage: scripts/bench-s3-cache.sh
# Environment: SIZE_MIB (2048), SHARDS (32), RANKS (2), EPOCHS (3),
# WORK (default a new folder in /var/tmp), GDSLOAD (bin/gdsload),
# TOOLS_DIR (where make minio installs MinIO).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/lib-bench.sh"

SIZE_MIB=${SIZE_MIB:-2048}
SHARDS=${SHARDS:-32}
RANKS=${RANKS:-2}
EPOCHS=${EPOCHS:-3}
GDSLOAD=${GDSLOAD:-$repo/bin/gdsload}
TOOLS_DIR=${TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gdsload-tools}
WORK=${WORK:-$(mktemp -d /var/tmp/bench-s3-cache.XXXXXX)}

[ -x /usr/bin/time ] || need /usr/bin/time time
need curl curl
need python3 python3
[ -x "$GDSLOAD" ] || { echo "$GDSLOAD not built: run make build" >&2; exit 1; }
make -s -C "$repo" minio TOOLS_DIR="$TOOLS_DIR" >&2
MINIO=${GDSLOAD_MINIO:-$TOOLS_DIR/minio}

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
	MINIO_PROMETHEUS_AUTH_TYPE=public \
	"$MINIO" server --quiet --address "127.0.0.1:$port" "$WORK/drive" >"$WORK/minio.log" 2>&1 &
pid=$!
for _ in $(seq 200); do curl -sf "$endpoint/minio/health/ready" >/dev/null && break; sleep 0.1; done
curl -sf "$endpoint/minio/health/ready" >/dev/null || { echo "MinIO did not start:" >&2; cat "$WORK/minio.log" >&2; exit 1; }
export AWS_ACCESS_KEY_ID=$user AWS_SECRET_ACCESS_KEY=$pass AWS_REGION=us-east-1 AWS_ENDPOINT_URL_S3=$endpoint
export GDSLOAD_CACHE=

# put FILE KEY: uploads FILE to s3://bench/KEY (curl signs with SigV4).
put() { curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user "$user:$pass" -T "$1" "$endpoint/bench/$2" >/dev/null; }
curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user "$user:$pass" -X PUT "$endpoint/bench" >/dev/null

data=$WORK/wds
mkdir -p "$data"
python3 - "$data" "$SHARDS" "$SIZE_MIB" <<'PY'
import io, os, sys, tarfile
root, shards, size_mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
per = max(1, size_mib // shards)
for s in range(shards):
    with tarfile.open(os.path.join(root, f"shard-{s:06d}.tar"), "w") as tf:
        for i in range(per):
            b = os.urandom(1 << 20)
            ti = tarfile.TarInfo(f"s{s:06d}-{i:04d}.bin")
            ti.size = len(b)
            tf.addfile(ti, io.BytesIO(b))
PY
"$GDSLOAD" manifest "$data" >/dev/null
dataset=0
for f in "$data"/*; do
	put "$f" "wds/$(basename "$f")"
	dataset=$((dataset + $(stat -c %s "$f")))
done

# sent: bytes MinIO has sent in S3 responses so far.
sent() {
	curl -sf "$endpoint/minio/metrics/v3/api/requests" |
		awk '/^minio_api_requests_traffic_sent_bytes\{.*type="s3"/ {s += $2} END {printf "%.0f\n", s}'
}

# bench MODE ARGS...: RANKS ranks at once; prints "MODE wall sent".
bench() {
	local mode=$1; shift
	local before; before=$(sent)
	local start; start=$(date +%s.%N)
	local pids=()
	for r in $(seq 0 $((RANKS - 1))); do
		"$GDSLOAD" -q iterate --epochs "$EPOCHS" --rank "$r" --world-size "$RANKS" --checksum sha256 --json "$@" s3://bench/wds/ \
			| tail -n 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["sha256"])' >"$WORK/$mode.$r" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || { echo "$mode: a rank failed" >&2; exit 1; }; done
	local end; end=$(date +%s.%N)
	local after; after=$(sent)
	awk -v m="$mode" -v s="$start" -v e="$end" -v b="$before" -v a="$after" -v d="$dataset" \
		'BEGIN {printf "| %s | %.2f s | %.0f MiB | %.2fx |\n", m, e-s, (a-b)/1048576, (a-b)/d}'
}

echo "$(stamp); $RANKS ranks, $EPOCHS epochs, $SHARDS shards, $((dataset >> 20)) MiB"
echo "| mode | wall | MinIO sent | x dataset |"
echo "| --- | --- | --- | --- |"
bench nocache
bench cache --cache "$WORK/cache"
for r in $(seq 0 $((RANKS - 1))); do
	cmp -s "$WORK/nocache.$r" "$WORK/cache.$r" || { echo "rank $r: samples differ with the cache" >&2; exit 1; }
done
