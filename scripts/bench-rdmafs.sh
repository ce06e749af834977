#!/usr/bin/env bash
# bench-rdmafs.sh: rdmafs over loopback TCP against nginx (sendfile) + curl
# and against iperf3 raw TCP, on the same machine, in the same run.
#
# A SIZE file (default 2 GiB) is created and read once to warm the page
# cache. Each round runs the three transfers in turn (order alternated),
# each timed from outside its process; the script prints per-tool medians
# and the median ratios rdmafs/nginx and rdmafs/iperf3 (higher is better
# for rdmafs; targets ≥ 1.0 and ≥ 0.7).
#
# Usage: scripts/bench-rdmafs.sh [ROUNDS]   env: SIZE_MIB (2048), WORK (temp dir)
# Needs: a built gdsload ($GDSLOAD, default bin/gdsload: the server and the
# client), nginx, curl, iperf3, python3 (apt-get install nginx curl iperf3).
set -euo pipefail
shopt -s inherit_errexit

ROUNDS=${1:-5}
SIZE_MIB=${SIZE_MIB:-2048}
repo=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$(mktemp -d /tmp/bench-rdmafs.XXXXXX)}
for tool in nginx curl iperf3 python3 go; do
	command -v "$tool" >/dev/null || { echo "bench-rdmafs: $tool not found (apt-get install -y nginx curl iperf3)" >&2; exit 1; }
done

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	[[ -n ${ipid:-} ]] && kill "$ipid" 2>/dev/null || true
	[[ -f $WORK/nginx.pid ]] && kill "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }

GDSLOAD=${GDSLOAD:-$repo/bin/gdsload}
[[ -x $GDSLOAD ]] || { echo "$GDSLOAD not built: run make build" >&2; exit 1; }

mkdir -p "$WORK/export"
chmod 755 "$WORK" "$WORK/export" # nginx workers run unprivileged
data=$WORK/export/data.bin
echo "writing ${SIZE_MIB} MiB test file" >&2
head -c $((SIZE_MIB << 20)) /dev/urandom >"$data"
chmod 644 "$data"
cat "$data" >/dev/null # warm the page cache
bytes=$(stat -c %s "$data")

# rdmafs server
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$WORK/token"
chmod 600 "$WORK/token"
"$GDSLOAD" serve --root "$WORK/export" --listen 127.0.0.1:0 --token-file "$WORK/token" \
	>"$WORK/rdmafs.out" 2>"$WORK/rdmafs.log" &
pids+=($!)
for _ in $(seq 100); do grep -q '^listening on ' "$WORK/rdmafs.out" 2>/dev/null && break; sleep 0.1; done
raddr=$(sed -n 's/^listening on //p' "$WORK/rdmafs.out")
[[ -n $raddr ]] || { echo "rdmafs server did not start:" >&2; cat "$WORK/rdmafs.log" >&2; exit 1; }

# nginx, sendfile on, as users deploy it for static files
nport=$(free_port)
mkdir -p "$WORK/nginx-tmp"
cat >"$WORK/nginx.conf" <<NGINX
worker_processes 2;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log;
events { worker_connections 64; }
http {
	access_log off;
	sendfile on;
	tcp_nopush on;
	client_body_temp_path $WORK/nginx-tmp;
	proxy_temp_path $WORK/nginx-tmp;
	fastcgi_temp_path $WORK/nginx-tmp;
	uwsgi_temp_path $WORK/nginx-tmp;
	scgi_temp_path $WORK/nginx-tmp;
	server { listen 127.0.0.1:$nport; root $WORK/export; }
}
NGINX
nginx -c "$WORK/nginx.conf" -p "$WORK"

# iperf3 server
iport=$(free_port)
iperf3 -s -p "$iport" -1 >/dev/null 2>&1 &
ipid=$!
sleep 0.3

# The client is `gdsload load --to host`: the loader streams the file from the
# server into its ring of reused host buffers.
run_rdmafs() { "$GDSLOAD" load --to host --token-file "$WORK/token" "rdmafs://$raddr/data.bin" >/dev/null 2>>"$WORK/bench.log"; }
# Without CRC32C the server sends with sendfile(2), like nginx.
run_rdmafsnocrc() { "$GDSLOAD" load --to host --crc=false --token-file "$WORK/token" "rdmafs://$raddr/data.bin" >/dev/null 2>>"$WORK/bench.log"; }
run_nginx() { curl -sf -o /dev/null "http://127.0.0.1:$nport/data.bin"; }
run_iperf() { iperf3 -c 127.0.0.1 -p "$iport" -n "$bytes" >/dev/null; }
# -1: the iperf3 server handles one client then exits; restart it (outside
# the timed region) before each iperf3 run.
ensure_iperf_server() {
	if ! kill -0 "$ipid" 2>/dev/null; then
		iperf3 -s -p "$iport" -1 >/dev/null 2>&1 &
		ipid=$!
		sleep 0.3
	fi
}
timeit() { local t0 t1; t0=$(now); "$@"; t1=$(now); python3 -c "print($t1-$t0)"; }

declare -a tr tc tn ti
for r in $(seq "$ROUNDS"); do
	if ((r % 2)); then order="rdmafs rdmafsnocrc nginx iperf"; else order="iperf nginx rdmafsnocrc rdmafs"; fi
	for tool in $order; do
		[[ $tool == iperf ]] && ensure_iperf_server
		t=$(timeit "run_$tool")
		case $tool in rdmafs) tr+=("$t") ;; rdmafsnocrc) tc+=("$t") ;; nginx) tn+=("$t") ;; iperf) ti+=("$t") ;; esac
	done
	printf 'round %d: rdmafs %.3fs rdmafs-nocrc %.3fs nginx %.3fs iperf3 %.3fs\n' "$r" "${tr[-1]}" "${tc[-1]}" "${tn[-1]}" "${ti[-1]}" >&2
done

echo "machine: $(nproc) CPUs, $(uname -r), $(date -u +%FT%TZ), file ${SIZE_MIB} MiB, ${ROUNDS} rounds"
python3 - "$bytes" "${tr[*]}" "${tc[*]}" "${tn[*]}" "${ti[*]}" <<'PY'
import statistics, sys
size = int(sys.argv[1])
r, c, n, i = ([float(x) for x in a.split()] for a in sys.argv[2:6])
gib = size / 2**30
for name, ts in (("rdmafs, CRC32C on (default)", r), ("rdmafs, CRC32C off", c),
                 ("nginx sendfile + curl", n), ("iperf3 raw TCP", i)):
    m = statistics.median(ts)
    print(f"{name:28s} median {m:6.3f} s  {gib/m:6.2f} GiB/s  (runs: {', '.join(f'{t:.3f}' for t in ts)})")
# Ratios of throughput (peer time / rdmafs time), per round, then the median.
for label, mine in (("CRC on ", r), ("CRC off", c)):
    rn = statistics.median([b / a for a, b in zip(mine, n)])
    ri = statistics.median([b / a for a, b in zip(mine, i)])
    print(f"rdmafs {label}: {rn:.2f}x nginx (target >= 1.0), {ri:.2f}x iperf3 (target >= 0.7)")
PY
