#!/usr/bin/env bash
# bench-s3-cache.sh: epochs of a shard set in a loopback MinIO, read by
# RANKS processes of one node: gdsload iterate with a shared --cache folder,
# without one, and MosaicML Streaming (its StreamingDataset with a local
# cache folder, the same samples in its MDS format).
#
# SHARDS shards of SIZE_MIB MiB in all (samples of 1 MiB of random bytes):
# .tar shards with their manifest, and the same samples, in the same order,
# written by Streaming's MDSWriter into MDS shards of about the same size,
# are uploaded to a single-node MinIO started here. Each round runs every
# mode, in alternating order, as RANKS processes at once for EPOCHS epochs:
#   cache      gdsload iterate --rank r --world-size RANKS --cache DIR, DIR
#              empty at the start of the round
#   nocache    the same without a cache
#   streaming  StreamingDataset(remote=s3://..., local=DIR, shuffle=False)
#              iterated EPOCHS times by each rank (RANK, WORLD_SIZE,
#              LOCAL_RANK, LOCAL_WORLD_SIZE set as a launcher would; DIR
#              empty at the start of the round; S3_ENDPOINT_URL at MinIO)
# For each it prints the wall time from the start of the first rank to the
# end of the last (taken from outside, to the nanosecond); for Streaming
# also the wall time from the moment the last rank had its imports done
# (Python, torch, Streaming: seconds on a loaded machine, which a training
# script pays anyway) to the end: Streaming at its strongest, the figure
# the target is held against. Then the bytes
# MinIO sent, read from its own metrics (v3, api/requests), as a multiple
# of the dataset; then which mode was fastest in the round.
#
# Checked bytes, in every timed run: every gdsload rank hashes its samples
# (--checksum sha256), and each rank's digest must be the same with and
# without the cache, in every round; every Streaming rank hashes each
# sample (SHA-256), and in every epoch the ranks together must yield each
# sample of the source exactly once with the source's bytes.
#
# Targets: the cache's MinIO bytes 1.0x the dataset (without a cache each
# rank reads its own shards, so EPOCHS x), and its wall time <= Streaming's
# after imports.
#
# Usage: scripts/bench-s3-cache.sh [ROUNDS]  (default 3)
# Environment: SIZE_MIB (2048), SHARDS (32), RANKS (2), EPOCHS (3),
# WORK (default a new folder in /var/tmp), GDSLOAD (bin/gdsload),
# TOOLS_DIR (where make minio installs MinIO), VENV (the venv for
# mosaicml-streaming, default build/bench-s3-cache-venv, made here).
# FAST=1: a quick check of the script (64 MiB, 8 shards, 1 round).
# Needs Debian's python3-torch and python3-torchvision (Streaming imports
# torchvision; PyPI's needs a newer torch).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/lib-bench.sh"

ROUNDS=${1:-3}
if [ "${FAST:-0}" = 1 ]; then SIZE_MIB=${SIZE_MIB:-64} SHARDS=${SHARDS:-8} ROUNDS=${1:-1}; fi
SIZE_MIB=${SIZE_MIB:-2048}
SHARDS=${SHARDS:-32}
RANKS=${RANKS:-2}
EPOCHS=${EPOCHS:-3}
GDSLOAD=${GDSLOAD:-$repo/bin/gdsload}
TOOLS_DIR=${TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gdsload-tools}
WORK=${WORK:-$(mktemp -d /var/tmp/bench-s3-cache.XXXXXX)}
VENV=${VENV:-$repo/build/bench-s3-cache-venv}

[ -x /usr/bin/time ] || need /usr/bin/time time
need curl curl
need python3 python3
[ -x "$GDSLOAD" ] || { echo "$GDSLOAD not built: run make build" >&2; exit 1; }
/usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null ||
	{ echo "/usr/bin/python3 lacks torch or torchvision: apt-get install python3-torch python3-torchvision" >&2; exit 1; }
# mosaicml-streaming declares torch and torchvision of PyPI, and every
# cloud's SDK: it is installed without them, with the modules it imports.
peer_venv "$VENV" "--no-deps mosaicml-streaming==0.13.0" \
	"boto3<2 xxhash<4,>=3.0.0 zstd<2 python-snappy<1 Brotli tqdm<5 catalogue<3 pillow transformers<5,>=4.21.3 numpy<2.2"
SPY=$VENV/bin/python
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
"$SPY" "$here/bench-s3-cache.py" reference "$data" "$WORK/reference"
"$SPY" "$here/bench-s3-cache.py" mds "$data" "$WORK/mds"
for f in "$WORK/mds"/*; do put "$f" "mds/$(basename "$f")"; done
samples=$(wc -l <"$WORK/reference")
mds_bytes=$(du -cb "$WORK/mds"/* | tail -n 1 | cut -f1)

# sent: bytes MinIO has sent in S3 responses so far.
sent() {
	curl -sf "$endpoint/minio/metrics/v3/api/requests" |
		awk '/^minio_api_requests_traffic_sent_bytes\{.*type="s3"/ {s += $2} END {printf "%.0f\n", s}'
}

# bench ROUND MODE: RANKS ranks at once; prints the table row and appends
# "MODE seconds bytes-sent" to $WORK/results.
bench() {
	local round=$1 mode=$2
	local before; before=$(sent)
	local pids=() r start end
	rm -rf "$WORK/cache" "$WORK/sc"
	start=$(now_ns)
	for r in $(seq 0 $((RANKS - 1))); do
		case $mode in
		cache | nocache)
			local flags=(); [ "$mode" = cache ] && flags=(--cache "$WORK/cache")
			"$GDSLOAD" -q iterate --epochs "$EPOCHS" --rank "$r" --world-size "$RANKS" --checksum sha256 --json "${flags[@]}" s3://bench/wds/ \
				| tail -n 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["sha256"])' >"$WORK/$mode.$round.$r" &
			;;
		streaming)
			RANK=$r WORLD_SIZE=$RANKS LOCAL_RANK=$r LOCAL_WORLD_SIZE=$RANKS MASTER_ADDR=127.0.0.1 MASTER_PORT=$mport \
				S3_ENDPOINT_URL=$endpoint "$SPY" "$here/bench-s3-cache.py" read s3://bench/mds "$WORK/sc" "$EPOCHS" "$WORK/streaming.$round.$r" \
				>"$WORK/streaming.$round.$r.log" 2>&1 &
			;;
		esac
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || { echo "$mode: a rank failed" >&2; cat "$WORK"/streaming.*.log >&2 2>/dev/null; exit 1; }
	done
	end=$(now_ns)
	local after; after=$(sent)
	local want=$dataset; [ "$mode" = streaming ] && want=$mds_bytes
	local ns=$((end - start)) note=
	if [ "$mode" = streaming ]; then
		# From the last rank's end of imports to the end.
		local ready; ready=$(cat "$WORK"/streaming."$round".?.ready | sort -n | tail -n 1)
		echo "streaming-full $(awk -v ns=$ns 'BEGIN {printf "%.4f", ns/1e9}') $((${after%.*} - ${before%.*}))" >>"$WORK/results.$round"
		note=" ($(awk -v ns=$ns 'BEGIN {printf "%.3f", ns/1e9}') s with its imports)"
		ns=$((end - ready))
	fi
	awk -v m="$mode" -v ns=$ns -v b="$before" -v a="$after" -v d="$want" -v r="$round" -v note="$note" \
		'BEGIN {printf "| %s | %s | %.3f s%s | %.0f MiB | %.2fx |\n", r, m, ns/1e9, note, (a-b)/1048576, (a-b)/d}'
	echo "$mode $(awk -v ns=$ns 'BEGIN {printf "%.4f", ns/1e9}') $((${after%.*} - ${before%.*}))" >>"$WORK/results.$round"
}

mport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
echo "scripts/bench-s3-cache.sh, $(stamp), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$RANKS ranks on one node, $EPOCHS epochs, $ROUNDS rounds; $SHARDS tar shards, $samples samples, $((dataset >> 20)) MiB (MDS: $(ls "$WORK/mds" | grep -c '\.mds$') shards, $((mds_bytes >> 20)) MiB)"
echo "| round | mode | wall | MinIO sent | x dataset |"
echo "| --- | --- | --- | --- | --- |"
for round in $(seq "$ROUNDS"); do
	if ((round % 2)); then order="cache nocache streaming"; else order="streaming nocache cache"; fi
	for m in $order; do bench "$round" "$m"; done
	for r in $(seq 0 $((RANKS - 1))); do
		cmp -s "$WORK/nocache.$round.$r" "$WORK/cache.$round.$r" || { echo "round $round, rank $r: samples differ with the cache" >&2; exit 1; }
		[ "$round" = 1 ] || cmp -s "$WORK/cache.1.$r" "$WORK/cache.$round.$r" || { echo "round $round, rank $r: samples differ from round 1" >&2; exit 1; }
	done
	"$SPY" "$here/bench-s3-cache.py" check "$WORK/reference" "$EPOCHS" "$WORK"/streaming."$round".? || exit 1
	best=$(winner $(awk '$1 != "streaming-full" {print $1 "=" $2}' "$WORK/results.$round"))
	echo "| $round | fastest: $best | | | |"
done
echo
cat "$WORK"/results.* >"$WORK/all"
for m in cache nocache streaming streaming-full; do
	awk -v m="$m" '$1 == m {print $2}' "$WORK/all" >"$WORK/t.$m"
	awk -v m="$m" -v d="$dataset" -v md="$mds_bytes" '$1 == m {printf "%.4f\n", $3 / (m ~ /^streaming/ ? md : d)}' "$WORK/all" >"$WORK/x.$m"
	printf '%-10s wall median %.3f s (spread %s)   MinIO sent median %.2fx the dataset (spread %s)\n' \
		"$m" "$(median <"$WORK/t.$m")" "$(spread <"$WORK/t.$m")" "$(median <"$WORK/x.$m")" "$(spread <"$WORK/x.$m")"
done
ratios "$WORK/t.streaming" "$WORK/t.cache" >"$WORK/r.s"
ratios "$WORK/t.streaming-full" "$WORK/t.cache" >"$WORK/r.sf"
printf 'Streaming wall after imports / cache wall: median %.3fx (spread %s)   target >= 1.0x\n' "$(median <"$WORK/r.s")" "$(spread <"$WORK/r.s")"
printf 'Streaming wall with imports / cache wall:  median %.3fx (spread %s)   no target\n' "$(median <"$WORK/r.sf")" "$(spread <"$WORK/r.sf")"
printf 'cache MinIO bytes: median %.2fx the dataset   target 1.0x (without the cache: %sx, each rank reading its own shards every epoch)\n' "$(median <"$WORK/x.cache")" "$EPOCHS"
