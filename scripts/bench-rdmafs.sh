#!/usr/bin/env bash
# bench-rdmafs.sh: rdmafs over loopback TCP against nginx (sendfile) read
# by parallel ranged curls, and against iperf3 raw TCP, on the same file,
# in the same run.
#
# N is gdsload's default number of connections (read from `gdsload load
# --help`). Each round runs, in alternating order:
#   gdsload-cold   gdsload load --to host rdmafs://…  (its defaults: N
#                  connections, CRC32C of every read checked end to end)
#                  right after the file was touched (untimed), so the
#                  server's digest cache holds none of its CRCs and sums
#                  every byte: what the first read of a file costs, and the
#                  headline row
#   gdsload        the same with the digest cache warm from earlier runs
#                  (the server sends cached sums): a re-read, the warm row
#                  reported beside it
#   gdsload-nocrc  the same with --crc=false (no integrity; for reference)
#   nginx-N        N curls, each fetching one 1/N byte range, in parallel
#   nginx-N-cc     the same with the kernel's default congestion control
#                  switched to CC for the run (as root; nginx has no
#                  setting of its own): nginx on the same footing as
#                  gdsload serve
#   iperf3-N       iperf3 -c -P N -n SIZE (raw TCP, N streams)
#   iperf3-N-cc    the same with -C CC, CC the congestion control gdsload
#                  serve puts its connections on (read from its --help):
#                  raw TCP on the same footing as gdsload
#   gdsload-syscc  gdsload against a second server started with
#                  --tcp-congestion system: the kernel's default congestion
#                  control, as nginx and iperf3-N use it
#   gdsload-1      gdsload with --connections 1
#   nginx-1        one curl of the whole file (on CC where nginx-N-cc runs)
# The ratios the targets hold are against the stronger nginx (and the
# stronger iperf3) of each round, whichever congestion control it ran on;
# each round prints every run's time and which nginx was the stronger.
# Every transfer is timed from outside its process (GNU time: wall, and the
# client's CPU); the servers' CPU is read from /proc around each transfer.
# Every run checks its byte count (gdsload's JSON, curl's size_download,
# iperf3's received bytes); before the rounds, each gdsload configuration
# and each nginx configuration is checked once against sha256sum of the
# file (iperf3 sends its own random buffer: bytes counted only).
#
# With PROFILE=1 it then profiles one gdsload run with a warm and one with
# a cold digest cache (perf record of the server and of the client; apt-get
# install linux-perf) and prints where each side's CPU went.
#
# Usage: scripts/bench-rdmafs.sh [ROUNDS]
# Environment: ROUNDS (default 5), SIZE_MIB (2048), GDSLOAD
# (./bin/gdsload), WORK (a temporary directory, removed afterwards).
# Needs nginx, curl, iperf3, python3 and GNU time: the script installs
# missing ones with apt-get when run as root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib-bench.sh
. "$here/lib-bench.sh"

ROUNDS=${1:-${ROUNDS:-5}}
SIZE_MIB=${SIZE_MIB:-2048}
GDSLOAD=${GDSLOAD:-./bin/gdsload}
need nginx nginx
need curl curl
need iperf3 iperf3
need python3 python3
[ -x /usr/bin/time ] || need /usr/bin/time time
[ -x "$GDSLOAD" ] || { echo "$GDSLOAD not built: run make build" >&2; exit 1; }
GDSLOAD=$(cd "$(dirname "$GDSLOAD")" && pwd)/$(basename "$GDSLOAD")
N=$("$GDSLOAD" load --help | sed -n 's/.*--connections int.*(default \([0-9]*\)).*/\1/p')
[ -n "$N" ] || { echo "cannot read the default of --connections from gdsload load --help" >&2; exit 1; }
CC=$("$GDSLOAD" serve --help | sed -n 's/.*--tcp-congestion string.*(default "\([a-z0-9_]*\)").*/\1/p')
[ -n "$CC" ] || { echo "cannot read the default of --tcp-congestion from gdsload serve --help" >&2; exit 1; }
SYSCC=$(cat /proc/sys/net/ipv4/tcp_congestion_control)

if [ -z "${WORK:-}" ]; then WORK=$(mktemp -d /tmp/bench-rdmafs.XXXXXX); own_work=1; else own_work=; fi
spid= spid2= ipid=
cleanup() {
  [ -w /proc/sys/net/ipv4/tcp_congestion_control ] && echo "$SYSCC" >/proc/sys/net/ipv4/tcp_congestion_control 2>/dev/null || true
  [ -n "$spid" ] && kill "$spid" 2>/dev/null || true
  [ -n "$spid2" ] && kill "$spid2" 2>/dev/null || true
  [ -n "$ipid" ] && kill "$ipid" 2>/dev/null || true
  [ -f "$WORK/nginx.pid" ] && kill "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
  wait 2>/dev/null || true
  if [ -n "$own_work" ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

mkdir -p "$WORK/export" "$WORK/t"
chmod 755 "$WORK" "$WORK/export" # nginx workers run unprivileged
data=$WORK/export/data.bin
bytes=$((SIZE_MIB << 20))
make_file "$data" "$bytes"
chmod 644 "$data"
cat "$data" >/dev/null # the server's page cache is warm for every tool
want_sha=$(sha256sum "$data" | cut -d' ' -f1)

# gdsload serve with its defaults.
(umask 077; head -c 32 /dev/urandom | base64 >"$WORK/token")
"$GDSLOAD" serve --root "$WORK/export" --listen 127.0.0.1:0 --token-file "$WORK/token" >"$WORK/serve.out" 2>"$WORK/serve.log" &
spid=$!
for _ in $(seq 100); do grep -q '^listening on ' "$WORK/serve.out" 2>/dev/null && break; sleep 0.1; done
raddr=$(sed -n 's/^listening on //p' "$WORK/serve.out")
[ -n "$raddr" ] || { echo "gdsload serve did not start:" >&2; cat "$WORK/serve.log" >&2; exit 1; }
url=rdmafs://$raddr/data.bin

# A second gdsload serve on the kernel's default congestion control.
"$GDSLOAD" serve --root "$WORK/export" --listen 127.0.0.1:0 --token-file "$WORK/token" --tcp-congestion system >"$WORK/serve2.out" 2>"$WORK/serve2.log" &
spid2=$!
for _ in $(seq 100); do grep -q '^listening on ' "$WORK/serve2.out" 2>/dev/null && break; sleep 0.1; done
raddr2=$(sed -n 's/^listening on //p' "$WORK/serve2.out")
[ -n "$raddr2" ] || { echo "gdsload serve --tcp-congestion system did not start:" >&2; cat "$WORK/serve2.log" >&2; exit 1; }
url2=rdmafs://$raddr2/data.bin

# nginx with sendfile, as it is deployed for static files.
nport=$(free_port)
mkdir -p "$WORK/nginx-tmp"
cat >"$WORK/nginx.conf" <<NGINX
worker_processes auto;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log;
events { worker_connections 256; }
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
for _ in $(seq 50); do [ -s "$WORK/nginx.pid" ] && break; sleep 0.1; done
nurl=http://127.0.0.1:$nport/data.bin

# iperf3 server; it serves one test at a time, which is all the script runs.
iport=$(free_port)
iperf3 -s -p "$iport" >/dev/null 2>&1 &
ipid=$!
sleep 0.3

nginx_pids() { echo "$(cat "$WORK/nginx.pid") $(pgrep -P "$(cat "$WORK/nginx.pid")" | tr '\n' ' ')"; }

# curls K OUTDIR: K curls in parallel, each one of K byte ranges of the
# file; prints the bytes each received. With OUTDIR the parts are kept.
curls() {
  local k=$1 dir=${2:-} i lo hi out step=$((bytes / $1)) pids=() rc=0
  for i in $(seq 0 $((k - 1))); do
    lo=$((i * step)); hi=$((i == k - 1 ? bytes - 1 : lo + step - 1))
    out=/dev/null
    if [ -n "$dir" ]; then out=$dir/part.$(printf %04d "$i"); fi
    curl -sf -r "$lo-$hi" -o "$out" -w '%{size_download}\n' "$nurl" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || rc=1; done
  return $rc
}
export -f curls; export bytes nurl

# on_cc CMD...: runs CMD with the kernel's default congestion control
# switched to CC, the one gdsload serve uses (nginx has no setting of its
# own; connections take the default when they are accepted).
on_cc() {
  local rc=0
  echo "$CC" >/proc/sys/net/ipv4/tcp_congestion_control
  "$@" || rc=$?
  echo "$SYSCC" >/proc/sys/net/ipv4/tcp_congestion_control
  return $rc
}
# One run of TOOL: appends "wall user sys maxrss server_cpu" to $WORK/t/TOOL and
# checks the bytes it moved.
run() {
  local tool=$1 so=$WORK/t/$1.stdout s0 s1 got
  local srv
  case $tool in
    gdsload-syscc) srv=$spid2 ;;
    gdsload*) srv=$spid ;;
    nginx*) srv=$(nginx_pids) ;;
    iperf3*) srv=$ipid ;;
  esac
  # shellcheck disable=SC2086
  s0=$(proc_cpu $srv)
  # Touching the file changes its ctime: the server drops its cached CRCs.
  if [ "$tool" = gdsload-cold ]; then touch "$data"; fi
  case $tool in
    gdsload|gdsload-cold) timed_out "$WORK/t/$tool" "$so" "$GDSLOAD" load --to host --json --token-file "$WORK/token" "$url" ;;
    gdsload-nocrc) timed_out "$WORK/t/$tool" "$so" "$GDSLOAD" load --to host --json --crc=false --token-file "$WORK/token" "$url" ;;
    gdsload-1) timed_out "$WORK/t/$tool" "$so" "$GDSLOAD" load --to host --json --connections 1 --token-file "$WORK/token" "$url" ;;
    gdsload-syscc) timed_out "$WORK/t/$tool" "$so" "$GDSLOAD" load --to host --json --token-file "$WORK/token" "$url2" ;;
    nginx-N) timed_out "$WORK/t/$tool" "$so" bash -c "curls $N" ;;
    nginx-N-cc) on_cc timed_out "$WORK/t/$tool" "$so" bash -c "curls $N" ;;
    nginx-1) $nginx1_cc timed_out "$WORK/t/$tool" "$so" bash -c "curls 1" ;;
    iperf3-N) timed_out "$WORK/t/$tool" "$so" iperf3 -c 127.0.0.1 -p "$iport" -P "$N" -n "$bytes" -J ;;
    iperf3-N-cc) timed_out "$WORK/t/$tool" "$so" iperf3 -c 127.0.0.1 -p "$iport" -P "$N" -n "$bytes" -C "$CC" -J ;;
  esac
  # shellcheck disable=SC2086
  s1=$(proc_cpu $srv)
  sed -i '$ s/$/ '"$(awk -v a="$s0" -v b="$s1" 'BEGIN{printf "%.3f", b-a}')"'/' "$WORK/t/$tool"
  case $tool in
    gdsload*) got=$(json_bytes "$so") ;;
    nginx*) got=$(awk '{s+=$1} END{printf "%.0f\n", s}' "$so") ;;
    # iperf3 stops once SIZE bytes are written to its sockets (the last
    # socket buffers' worth may still be in flight: that favours iperf3);
    # its receiver counts only what arrived before the end of the test.
    iperf3*) got=$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["end"]["sum_sent"]["bytes"]))' "$so") ;;
  esac
  # iperf3 sends whole blocks: its last ones may take it past SIZE.
  case $tool in iperf3*) if [ "$got" -ge "$bytes" ]; then got=$bytes; fi ;; esac
  check_bytes "$tool run" "$got" "$bytes"
}

# Checksummed runs, once per configuration, untimed. sha_gdsload URL ARGS...
sha_gdsload() {
  local got u=$1; shift
  "$GDSLOAD" load --to host --json --checksum sha256 --token-file "$WORK/token" "$@" "$u" >"$WORK/sha.json"
  got=$(json_field "$WORK/sha.json" sha256)
  [ "$got" = "$want_sha" ] || { echo "gdsload $* landed bytes with sha256 $got, the file has $want_sha" >&2; exit 1; }
}
sha_nginx() {
  local k=$1 got
  rm -rf "$WORK/parts"; mkdir -p "$WORK/parts"
  curls "$k" "$WORK/parts" >/dev/null
  got=$(cat "$WORK/parts"/part.* | sha256sum | cut -d' ' -f1)
  rm -rf "$WORK/parts"
  [ "$got" = "$want_sha" ] || { echo "$k ranged curls received bytes with sha256 $got, the file has $want_sha" >&2; exit 1; }
}
sha_gdsload "$url"
sha_gdsload "$url" --crc=false
sha_gdsload "$url" --connections 1
sha_gdsload "$url2"
sha_nginx "$N"
sha_nginx 1
echo "sha256 checked: gdsload (defaults, --crc=false, --connections 1, server on $SYSCC), nginx with $N ranged curls and with 1 curl" >&2

tools="gdsload-cold gdsload gdsload-nocrc nginx-N iperf3-N gdsload-1 nginx-1 gdsload-syscc iperf3-N-cc"
# nginx on gdsload serve's congestion control needs the kernel's default
# switched for its runs: root only, and only where the two differ.
nginx1_cc= nginx1_on=$SYSCC
if [ "$CC" != "$SYSCC" ]; then
  if [ -w /proc/sys/net/ipv4/tcp_congestion_control ] && grep -qw "$CC" /proc/sys/net/ipv4/tcp_available_congestion_control; then
    tools="$tools nginx-N-cc"
    nginx1_cc=on_cc nginx1_on=$CC
  else
    echo "not root, or the kernel lacks $CC: nginx runs on $SYSCC only; the ratios against it are not on the same footing" >&2
  fi
fi
rev=$(echo "$tools" | tr ' ' '\n' | tac | tr '\n' ' ')
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then order=$tools; else order=$rev; fi
  for t in $order; do run "$t"; done
  printf 'round %d/%d:' "$r" "$ROUNDS" >&2
  for t in $tools; do printf ' %s %.3fs' "$t" "$(tail -n 1 "$WORK/t/$t" | cut -d' ' -f1)" >&2; done
  strongest=$(for t in nginx-N nginx-N-cc; do [ -f "$WORK/t/$t" ] && echo "$(tail -n 1 "$WORK/t/$t" | cut -d' ' -f1) $t"; done | sort -g | head -n 1)
  printf '; strongest peer: %s (%ss); gdsload-cold / it %.2fx, gdsload (digest cache warm) / it %.2fx\n' "${strongest#* }" "${strongest%% *}" \
    "$(awk -v a="$(tail -n 1 "$WORK/t/gdsload-cold" | cut -d' ' -f1)" -v b="${strongest%% *}" 'BEGIN{print b/a}')" \
    "$(awk -v a="$(tail -n 1 "$WORK/t/gdsload" | cut -d' ' -f1)" -v b="${strongest%% *}" 'BEGIN{print b/a}')" >&2
done

t=$WORK/t
for x in $tools; do
  col "$t/$x" 1 >"$t/$x.wall"
  gibps "$bytes" "$t/$x" >"$t/$x.bw"
  cpugib "$bytes" "$t/$x" >"$t/$x.ccpu"
  col "$t/$x" 5 | per_gib "$bytes" >"$t/$x.scpu"
done

echo "### \`scripts/bench-rdmafs.sh\` ($ROUNDS rounds, ${SIZE_MIB} MiB, N = $N), $(stamp)"
echo
echo "Loopback TCP, server page cache warm; every run's byte count checked, one sha256-checked run per gdsload and nginx configuration. TCP congestion control: the kernel's default is $SYSCC (the plain nginx $N-curl row, iperf3 -P $N and gdsload --tcp-congestion system run on it); gdsload serve puts its connections on $CC by default, and the rows marked $CC ran on it too. The target ratios are against the stronger nginx and the stronger iperf3 of each round."
echo
echo "| transfer | GiB/s (median) | spread | client CPU s/GiB | server CPU s/GiB |"
echo "| --- | --- | --- | --- | --- |"
label() {
  case $1 in
    gdsload) echo "gdsload, defaults ($N connections, CRC32C on), re-read: server digest cache warm" ;;
    gdsload-cold) echo "gdsload, defaults ($N connections, CRC32C on), first read: server digest cache cold" ;;
    gdsload-nocrc) echo "gdsload --crc=false ($N connections, no integrity)" ;;
    gdsload-1) echo "gdsload --connections 1 (CRC32C on)" ;;
    nginx-N) echo "nginx sendfile, $N ranged curls" ;;
    nginx-1) echo "nginx sendfile, 1 curl, on $nginx1_on" ;;
    nginx-N-cc) echo "nginx sendfile, $N ranged curls, on $CC" ;;
    nginx-best) echo "the stronger nginx of the round ($N ranged curls)" ;;
    iperf3-best) echo "the stronger iperf3 -P $N of the round" ;;
    iperf3-N) echo "iperf3 -P $N (raw TCP)" ;;
    iperf3-N-cc) echo "iperf3 -P $N -C $CC (raw TCP, gdsload serve's congestion control)" ;;
    gdsload-syscc) echo "gdsload, defaults, server --tcp-congestion system ($SYSCC)" ;;
  esac
}
for x in $tools; do
  printf '| %s | %.3f | %s | %.3f | %.3f |\n' "$(label "$x")" "$(median <"$t/$x.bw")" "$(spread <"$t/$x.bw")" "$(median <"$t/$x.ccpu")" "$(median <"$t/$x.scpu")"
done
echo
echo "| ratio (per round, then median) | median | spread | target |"
echo "| --- | --- | --- | --- |"
ratio_row() {
  peer_ratios "$t/$1.wall" "$t/$2.wall" >"$t/r"
  ratio_line "$(label "$1") / $(label "$2")" "$t/r" "$3"
}
nginxes=$t/nginx-N.wall
if [ -f "$t/nginx-N-cc.wall" ]; then nginxes="$nginxes $t/nginx-N-cc.wall"; fi
# shellcheck disable=SC2086
best_of $nginxes >"$t/nginx-best.wall"
best_of "$t/iperf3-N.wall" "$t/iperf3-N-cc.wall" >"$t/iperf3-best.wall"
# The headline: a first read (digest cache cold); the re-read beside it.
ratio_row gdsload-cold nginx-best ">= 0.85x"
ratio_row gdsload nginx-best "none (warm digest cache)"
ratio_row gdsload-cold iperf3-best ">= 0.8x"
ratio_row gdsload iperf3-best "none (warm digest cache)"
ratio_row gdsload nginx-N "none"
if [ -f "$t/nginx-N-cc.wall" ]; then ratio_row gdsload nginx-N-cc "none"; fi
ratio_row gdsload-1 nginx-1 "none"
ratio_row gdsload-nocrc nginx-best "none"
ratio_row gdsload iperf3-N-cc "none"
ratio_row gdsload-syscc nginx-N "none"

# The bound on the cold row: a first read must also bring every byte to the
# CPU once and sum it, on the cores that carry both ends. BenchmarkFirstSum
# measures that pass alone (page cache to CPU and CRC32C, the cheaper of
# pread and mmap); against the stronger nginx's own CPU per GiB, a cold
# read no dearer than nginx's transfer plus that pass reaches at most
# nginx CPU / (nginx CPU + the pass) where the run is bound by the CPU.
if command -v go >/dev/null; then
  sum=$( (cd "$here/.." && go test -run '^$' -bench 'BenchmarkFirstSum' -benchtime 20x ./rdmafs) | awk '/MB\/s/ {for (i=1;i<=NF;i++) if ($(i+1)=="MB/s") print $1, $i}' | sort -k2 -g -r | head -n 1)
  nb=nginx-N
  if [ -f "$t/nginx-N-cc.bw" ] && awk -v a="$(median <"$t/nginx-N-cc.bw")" -v b="$(median <"$t/nginx-N.bw")" 'BEGIN{exit !(a > b)}'; then nb=nginx-N-cc; fi
  ncpu=$(paste "$t/$nb.ccpu" "$t/$nb.scpu" | awk '{print $1+$2}' | median)
  ncores=$(awk -v c="$ncpu" -v g="$(median <"$t/$nb.bw")" 'BEGIN{printf "%.2f", c*g}')
  pass=$(echo "$sum" | awk '{printf "%.3f", 1073741824/($2*1e6)}')
  echo
  echo "Bound on the cold row: one pass of CRC32C over page-cache bytes costs $pass s/GiB here (${sum%% *}, go test -bench BenchmarkFirstSum ./rdmafs, the cheaper of pread and mmap); $(label "$nb") used $ncpu s/GiB of CPU, client and server, $ncores of the $(nproc) cores. A cold read costing nginx's CPU plus that pass reaches at most $(awk -v c="$ncpu" -v p="$pass" 'BEGIN{printf "%.2f", c/(c+p)}')x of it on this machine."
else
  echo
  echo "Bound on the cold row: not computed (no go on PATH for BenchmarkFirstSum)."
fi
echo
echo "gdsload serve (defaults: 64 pool buffers of 1 MiB): peak RSS $(awk '/^VmHWM/ {printf "%.1f MiB", $2/1024}' "/proc/$spid/status") after every run above."

# profile NAME: one gdsload run under perf, server and client apart; prints
# the symbols with the most CPU on each side.
profile() {
  if [ "$1" = cold ]; then touch "$data"; fi
  perf record -q -F 999 -o "$WORK/server.perf" -p "$spid" 2>/dev/null &
  local ppid=$!
  sleep 0.5
  perf record -q -F 999 -o "$WORK/client.perf" -- "$GDSLOAD" load --to host --token-file "$WORK/token" "$url" >/dev/null 2>&1
  kill -INT "$ppid"; wait "$ppid" 2>/dev/null || true
  local side
  for side in server client; do
    echo
    echo "Where the $side's CPU went, digest cache $1 (perf, self time, top 8):"
    echo
    # awk reads to the end: perf must not die of a closed pipe.
    perf report -q -i "$WORK/$side.perf" --no-children --sort symbol 2>/dev/null |
      awk 'NF >= 3 && $1 ~ /%$/ && n < 8 {printf "- %s %s\n", $1, $3; n++}'
  done
}
if [ "${PROFILE:-}" = 1 ]; then
  need perf linux-perf
  echo
  echo "#### CPU profiles, $(stamp)"
  profile warm
  profile cold
fi
