#!/usr/bin/env bash
# bench-s3.sh: reading from a loopback MinIO, gdsload against its peers at
# their strongest, on the same objects, in the same run, warm.
#
# A SIZE_MIB object (default 2 GiB) of random bytes and a safetensors
# checkpoint of about the same size (safetensors.torch.save_file) are
# uploaded to a single-node MinIO started here. Untimed, every tool reads
# each once (this warms the server's page cache) and the SHA-256 of what it
# read is checked against the source's. Each round then runs, in
# alternating order:
#   load:  gdsload load --to host s3://...  (ranged GETs into the loader's
#          ring of reused buffers), against
#            rclone copy --multi-thread-streams STREAMS
#              --multi-thread-cutoff 8M   into /dev/shm,
#            mc cp (parallel parts)         into /dev/shm,
#            boto3 download_file, TransferConfig(max_concurrency=STREAMS)
#                                           into /dev/shm;
#   ckpt:  gdsload.load_file("s3://...", device="cpu") against Run:ai's
#          Model Streamer (SafetensorsStreamer, RUNAI_STREAMER_CONCURRENCY=
#          STREAMS, path-style addressing), both into CPU tensors;
#   stage: gdsload stage s3://... DIR against rclone copy with the same
#          flags into DIR, each followed by a sync (stage syncs before its
#          rename), into an emptied folder on local disk.
# The CLI tools are timed from outside their process, to the nanosecond;
# the Python tools (boto3, gdsload.load_file, Run:ai's streamer) inside
# their process around the transfer alone, their interpreter's start and
# imports excluded (the outside figure is printed beside it). The size of
# every timed run's result is checked (the bytes gdsload reports, the size
# of each copy, the bytes of the tensors). Each round prints every tool's
# GiB/s and the strongest peer of the round, whose figure the ratio of the
# round is taken against; the summary gives the median and spread of those
# ratios.
#
# Usage: scripts/bench-s3.sh [ROUNDS]  (default 5)
# Environment: SIZE_MIB (2048), WORK (default a new folder in /var/tmp),
# GDSLOAD (bin/gdsload), STREAMS (16), TOOLS_DIR (where make minio installs
# MinIO; rclone and mc are go-installed there too when missing), VENV (the
# Python peers' venv, default build/bench-s3-venv, made here).
# FAST=1: a quick check of the script (64 MiB, 1 round). Needs Debian's
# python3-torch and the library (make python).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/lib-bench.sh"

ROUNDS=${1:-5}
if [ "${FAST:-0}" = 1 ]; then SIZE_MIB=${SIZE_MIB:-64} ROUNDS=${1:-1}; fi
SIZE_MIB=${SIZE_MIB:-2048}
STREAMS=${STREAMS:-16}
GDSLOAD=${GDSLOAD:-$repo/bin/gdsload}
TOOLS_DIR=${TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gdsload-tools}
RCLONE_VERSION=v1.76.0
MC_VERSION=v0.0.0-20250313080218-cf909e1063a9
WORK=${WORK:-$(mktemp -d /var/tmp/bench-s3.XXXXXX)}
VENV=${VENV:-$repo/build/bench-s3-venv}
SHM=${SHM:-/dev/shm}
bytes=$((SIZE_MIB << 20))

[ -x /usr/bin/time ] || need /usr/bin/time time
need curl curl
need python3 python3
[ -x "$GDSLOAD" ] || { echo "$GDSLOAD not built: run make build" >&2; exit 1; }
[ -f "$repo/python/gdsload/libgdsload.so" ] || { echo "python/gdsload/libgdsload.so missing: run make python" >&2; exit 1; }
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "/usr/bin/python3 has no torch: apt-get install python3-torch" >&2; exit 1; }
# runai-model-streamer declares torch>=2 of PyPI; it runs on Debian's.
peer_venv "$VENV" "--no-deps runai-model-streamer==0.17.1 runai-model-streamer-s3==0.17.1" \
	"boto3==1.44.18 humanize==4.17.0 safetensors==0.8.0"
PY=$VENV/bin/python
export PYTHONPATH="$repo/python${PYTHONPATH:+:$PYTHONPATH}"

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
	rm -rf "$WORK" "$SHM/bench-s3.$$"
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
export AWS_ENDPOINT_URL=$endpoint AWS_EC2_METADATA_DISABLED=true
export RUNAI_STREAMER_CONCURRENCY=$STREAMS RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING=0 CONCURRENCY=$STREAMS
export RCLONE_CONFIG=$WORK/rclone.conf RCLONE_CONFIG_B_TYPE=s3 RCLONE_CONFIG_B_PROVIDER=Minio \
	RCLONE_CONFIG_B_ENDPOINT=$endpoint RCLONE_CONFIG_B_ACCESS_KEY_ID=$user RCLONE_CONFIG_B_SECRET_ACCESS_KEY=$pass
touch "$RCLONE_CONFIG"
mcc() { "$MC" --config-dir "$WORK/mc" --quiet "$@"; }
mcc alias set b "$endpoint" "$user" "$pass" >/dev/null

src=$WORK/data.bin
make_file "$src" "$bytes"
want=$(sha256sum "$src" | cut -d' ' -f1)
ckpt=$WORK/model.safetensors
"$PY" "$here/bench-s3.py" write "$ckpt" "$bytes"
ckbytes=$(stat -c %s "$ckpt")
mcc mb b/bench >/dev/null
mcc cp "$src" b/bench/data.bin >/dev/null
mcc cp "$ckpt" b/bench/model.safetensors >/dev/null
url=s3://bench/data.bin
ckurl=s3://bench/model.safetensors
out=$SHM/bench-s3.$$
mkdir -p "$out"

# py_field JSON KEY: a field of the one-line JSON document JSON.
py_field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

# Untimed: every tool reads the same bytes (this also warms the cache).
check_sha() { [ "$2" = "$3" ] || { echo "$1 read sha256 $2, want $3" >&2; exit 1; }; }
check_sha "gdsload load" "$("$GDSLOAD" load --to host --checksum sha256 --json "$url" | python3 -c 'import json,sys; print(json.load(sys.stdin)["files"][0]["sha256"])')" "$want"
rm -rf "$out"/*
"$RCLONE" copy --multi-thread-streams "$STREAMS" --multi-thread-cutoff 8M b:bench/data.bin "$out/r"
check_sha "rclone copy" "$(sha256sum <"$out/r/data.bin" | cut -d' ' -f1)" "$want"
mcc cp b/bench/data.bin "$out/m.bin" >/dev/null
check_sha "mc cp" "$(sha256sum <"$out/m.bin" | cut -d' ' -f1)" "$want"
check_sha boto3 "$(py_field "$("$PY" "$here/bench-s3.py" boto3 bench data.bin "$out/b.bin" --sha256)" sha256)" "$want"
rm -rf "$out"/*
ckwant=$(py_field "$("$PY" "$here/bench-s3.py" local "$ckpt" --sha256)" sha256)
ckdata=$(py_field "$("$PY" "$here/bench-s3.py" local "$ckpt")" bytes)
check_sha "gdsload.load_file" "$(py_field "$("$PY" "$here/bench-s3.py" gdsload "$ckurl" --sha256)" sha256)" "$ckwant"
check_sha "Run:ai streamer" "$(py_field "$("$PY" "$here/bench-s3.py" runai "$ckurl" --sha256)" sha256)" "$ckwant"
rm -rf "$WORK/dst"
"$GDSLOAD" stage "$url" "$WORK/dst/g" >/dev/null
cmp "$src" "$WORK/dst/g/data.bin" || { echo "gdsload stage copy differs" >&2; exit 1; }
"$RCLONE" copy --multi-thread-streams "$STREAMS" --multi-thread-cutoff 8M b:bench/data.bin "$WORK/dst/r"
cmp "$src" "$WORK/dst/r/data.bin" || { echo "rclone copy differs" >&2; exit 1; }

t=$WORK/times
mkdir -p "$t"
# size WHAT GOT WANT: checks a timed run's size.
size() { check_bytes "$1" "$2" "$3"; }
# pyrun NAME ARGS...: a timed Python tool; appends its inside seconds to
# $t/NAME and its outside seconds to $t/NAME.outer; checks its bytes.
pyrun() {
	local name=$1 want_b=$2; shift 2
	local a b j
	a=$(now_ns)
	j=$("$PY" "$here/bench-s3.py" "$@") || { echo "$name failed" >&2; exit 1; }
	b=$(now_ns)
	size "$name" "$(py_field "$j" bytes)" "$want_b"
	py_field "$j" seconds >>"$t/$name"
	awk -v ns=$((b - a)) 'BEGIN {printf "%.4f\n", ns/1e9}' >>"$t/$name.outer"
}
run() {
	rm -rf "${out:?}"/*
	case $1 in
	load)
		timed_out "$t/load.tm" "$t/so" "$GDSLOAD" load --to host --json "$url"
		size "gdsload load" "$(json_bytes "$t/so")" "$bytes" ;;
	rclone)
		timed_out "$t/rclone.tm" "$t/so" "$RCLONE" copy --multi-thread-streams "$STREAMS" --multi-thread-cutoff 8M b:bench/data.bin "$out/r"
		size "rclone copy" "$(stat -c %s "$out/r/data.bin")" "$bytes" ;;
	mc)
		timed_out "$t/mc.tm" "$t/so" "$MC" --config-dir "$WORK/mc" --quiet cp b/bench/data.bin "$out/m.bin"
		size "mc cp" "$(stat -c %s "$out/m.bin")" "$bytes" ;;
	boto3) pyrun boto3 "$bytes" boto3 bench data.bin "$out/b.bin" ;;
	pyload) pyrun pyload "$ckdata" gdsload "$ckurl" ;;
	runai) pyrun runai "$ckdata" runai "$ckurl" ;;
	stage)
		rm -rf "$WORK/dst"
		timed_out "$t/stage.tm" "$t/so" sh -c '"$0" stage "$1" "$2" >/dev/null && sync' "$GDSLOAD" "$url" "$WORK/dst/g"
		size "gdsload stage" "$(stat -c %s "$WORK/dst/g/data.bin")" "$bytes" ;;
	copy)
		rm -rf "$WORK/dst"
		timed_out "$t/copy.tm" "$t/so" sh -c '"$0" copy --multi-thread-streams "$1" --multi-thread-cutoff 8M b:bench/data.bin "$2" && sync' "$RCLONE" "$STREAMS" "$WORK/dst/r"
		size "rclone copy + sync" "$(stat -c %s "$WORK/dst/r/data.bin")" "$bytes" ;;
	esac
	case $1 in load | rclone | mc | stage | copy) tail -n 1 "$t/$1.tm" | cut -d' ' -f1 >>"$t/$1" ;; esac
}
# last NAME BYTES: the GiB/s of NAME's last run.
last() { tail -n 1 "$t/$1" | awk -v b="$2" '{printf "%.3f", b/1073741824/$1}'; }

echo "scripts/bench-s3.sh, $(stamp), load average $(cut -d' ' -f1-3 /proc/loadavg) (this run's own setup counts in it)"
echo "object of $SIZE_MIB MiB and a checkpoint of $((ckbytes >> 20)) MiB on loopback MinIO, $ROUNDS rounds, warm, STREAMS=$STREAMS"
echo
echo "| round | gdsload load | rclone copy | mc cp | boto3 | strongest | ratio | load_file | Run:ai | ratio | stage+sync | rclone copy+sync | ratio |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for r in $(seq "$ROUNDS"); do
	if ((r % 2)); then order="load rclone mc boto3 pyload runai stage copy"; else order="copy stage runai pyload boto3 mc rclone load"; fi
	for m in $order; do run "$m"; done
	best=$(winner "rclone=$(tail -n 1 "$t/rclone")" "mc=$(tail -n 1 "$t/mc")" "boto3=$(tail -n 1 "$t/boto3")")
	echo "$best" >>"$t/best"
	tail -n 1 "$t/$best" >>"$t/peer"
	rl=$(awk -v p="$(tail -n 1 "$t/$best")" -v m="$(tail -n 1 "$t/load")" 'BEGIN {printf "%.3f", p/m}')
	rc=$(awk -v p="$(tail -n 1 "$t/runai")" -v m="$(tail -n 1 "$t/pyload")" 'BEGIN {printf "%.3f", p/m}')
	rs=$(awk -v p="$(tail -n 1 "$t/copy")" -v m="$(tail -n 1 "$t/stage")" 'BEGIN {printf "%.3f", p/m}')
	echo "$rl" >>"$t/r.load"; echo "$rc" >>"$t/r.ckpt"; echo "$rs" >>"$t/r.stage"
	echo "| $r | $(last load "$bytes") | $(last rclone "$bytes") | $(last mc "$bytes") | $(last boto3 "$bytes") | $best | ${rl}x | $(last pyload "$ckdata") | $(last runai "$ckdata") | ${rc}x | $(last stage "$bytes") | $(last copy "$bytes") | ${rs}x |"
done

echo
echo "GiB/s, median (spread) over $ROUNDS rounds; CLI tools timed from outside, Python tools inside (outside in brackets):"
for m in load rclone mc boto3 pyload runai stage copy; do
	case $m in
	load) name="gdsload load --to host" ;; rclone) name="rclone copy ($STREAMS streams) to $SHM" ;;
	mc) name="mc cp to $SHM" ;; boto3) name="boto3 download_file ($STREAMS) to $SHM" ;;
	pyload) name="gdsload.load_file(s3://)" ;; runai) name="Run:ai SafetensorsStreamer ($STREAMS)" ;;
	stage) name="gdsload stage + sync" ;; copy) name="rclone copy ($STREAMS streams) + sync" ;;
	esac
	b=$bytes; case $m in pyload | runai) b=$ckdata ;; esac
	gibps "$b" "$t/$m" >"$t/$m.bw"
	extra=
	[ -f "$t/$m.outer" ] && { gibps "$b" "$t/$m.outer" >"$t/$m.obw"; extra=$(printf '  [%.3f]' "$(median <"$t/$m.obw")"); }
	printf '%-42s %8.3f (%s)%s\n' "$name" "$(median <"$t/$m.bw")" "$(spread <"$t/$m.bw")" "$extra"
done
echo
printf 'load / strongest peer of each round (%s): median %.3fx (spread %s)   target >= 1.0x\n' "$(sort "$t/best" | uniq -c | awk '{printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1}')" "$(median <"$t/r.load")" "$(spread <"$t/r.load")"
printf 'load_file(s3://) / Run:ai streamer:         median %.3fx (spread %s)   target >= 1.0x\n' "$(median <"$t/r.ckpt")" "$(spread <"$t/r.ckpt")"
printf 'stage / rclone copy:                        median %.3fx (spread %s)   no target\n' "$(median <"$t/r.stage")" "$(spread <"$t/r.stage")"
