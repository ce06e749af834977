#!/usr/bin/env bash
# bench-iterate.sh: WebDataset .tar.zst iteration against the zstd CLI, in
# CPU seconds per GiB (one core each) and wall time.
#
# Two data sets, made once: "text" (N_TEXT shards of words drawn from a
# small vocabulary: compresses about 3x, like text corpora) and "rand"
# (N_RAND shards of 20-57 KiB random payloads, like JPEG/WebP/encoded audio:
# zstd stores them, so it runs at memory speed). Each has an index.json
# (gdsload manifest) and a twin directory of hard links without one.
#
# Timed from outside (GNU time: wall, user, sys), alternating A B C ... then
# the reverse, PAIRS times, page cache warm:
#   zstd      taskset -c 0 zstd -d -T1 -v -c SHARDS > /dev/null   (the peer)
#   zstd2     the same twice at once, on cores 0 and 1, every other shard
#             each: how far the peer's decode scales on two cores here
#   noverify  taskset -c 0 GOMAXPROCS=1 gdsload iterate --verify=false
#   verify    taskset -c 0 GOMAXPROCS=1 gdsload iterate   (manifest CRC-32C)
#   noindex   taskset -c 0 GOMAXPROCS=1 gdsload iterate DIR-WITHOUT-INDEX,
#             its shard counts in the scan cache (GDSLOAD_SCAN_CACHE, a
#             folder in WORK, filled by the untimed checksummed run): what
#             opening without a manifest costs from the second time on
#   noscan    the same with GDSLOAD_SCAN_CACHE=off: every shard scanned
#             (read and decoded once more) before iterating
#   w1, w2    taskset -c 0,1 GOMAXPROCS=2 gdsload iterate --workers 1 / 2
#   w1e, w2e  the same with --epochs EPOCHS (3): each process pays once for
#             the memory it faults in (its shard buffers), which on this
#             VM costs from 15 to 450 ms depending on whether the host still
#             backs the guest's free pages; a training job pays it once, so
#             the steady-state ratio is taken over several epochs
#   gtar, ggz taskset -c 0 GOMAXPROCS=1 gdsload iterate over the same
#             shards as .tar and as .tar.gz (gzip -6), each with its own
#             index.json
#   wtar, wgz the webdataset library (PyPI 1.0.2, in a venv of the
#             script's own, VENV, default build/bench-iterate-venv):
#             WebDataset(SHARDS, shardshuffle=False) yielding each sample's
#             raw bytes, no decoder, in one process on core 0, over the
#             .tar and the .tar.gz shards: what WebDataset users would
#             otherwise run
#   wtar2, wgz2  the same through a torch DataLoader with 2 workers
#             (batch_size=None), on cores 0 and 1
#   g2tar     taskset -c 0,1 GOMAXPROCS=2 gdsload iterate --workers 2 over
#             the .tar shards, beside wtar2
# webdataset's CPU and wall time are taken inside its process around the
# iteration (getrusage of the process and its DataLoader workers): the
# interpreter's start and its imports (torch's among them, about a CPU
# second) are left out, which is the library at its strongest.
# All gdsload runs: --shuffle=false --direct off --json (zstd reads through
# the page cache too). CPU s/GiB is (user+sys) per GiB of the uncompressed
# tar stream, the same bytes for both sides.
#
# Checked bytes: every timed run's own report (webdataset's: the samples
# and field bytes it counted) is compared with a reference
# taken once, untimed, with Python's tarfile over `zstd -dc` (samples,
# field bytes, and the tar bytes per shard): gdsload's --json summary
# (samples, bytes) and zstd -v's per-file byte counts. One checksummed run
# per configuration (w1e and w2e: samples and bytes only, EPOCHS times the
# reference): gdsload --checksum sha256 against the SHA-256 Python
# computes over the same fields, zstd -dc | sha256sum against the SHA-256
# of each tar stream recorded when the shard was written.
#
# The .tar, .tar.gz and webdataset runs are checksummed once too (webdataset
# with 2 workers, whose order interleaves the workers': samples and bytes).
#
# Each round (a pass over the configurations, forward or reversed) prints
# every peer's CPU s/GiB beside gdsload's on the same shards, and which
# webdataset run was the strongest.
#
# Targets: noverify >= 0.9x zstd, verify >= 0.6x, w2 >= 1.8x w1; gdsload
# >= 2x the webdataset library per core (CPU s/GiB, the same shards)
# (needs two free cores; held over EPOCHS epochs, w2e against w1e). Also
# printed, with no target: the epochs after the first alone (each round's
# w1e less w1 against its w2e less w2).
#
# On a machine shared with other work, QUIET=1 first measures the CPU the
# machine spends when nothing of ours runs (its background: kernel threads
# such as a host's DAMON pageout in a VM, agents), then waits before each
# timed run until the CPUs were no busier than that background for 0.3 s
# (up to a minute, then it says so and runs anyway) and runs it again (up
# to 8 times) when other processes took more than the background's share
# plus 30 ms of CPU during it (from /proc/stat, less the run's own CPU
# time); the tables give the background and say how many runs were
# repeated, and how many stayed disturbed. Two workers need both cores to
# themselves, so the ratio is meaningless under load without it.
#
# Environment: GDSLOAD (default ./bin/gdsload), N_TEXT (32), N_RAND (32),
# FAST=1 (a quick check of the script: 4 shards of 8 MiB a set, 1 pair),
# SHARD_MIB (32, uncompressed payload per shard), PAIRS (5), EPOCHS (3), SETS ("text
# rand"), QUIET (0), WORK (a temporary directory, removed afterwards unless
# given).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib-bench.sh
. "$here/lib-bench.sh"

GDSLOAD=${GDSLOAD:-./bin/gdsload}
if [ "${FAST:-0}" = 1 ]; then N_TEXT=${N_TEXT:-4} N_RAND=${N_RAND:-4} SHARD_MIB=${SHARD_MIB:-8} PAIRS=${PAIRS:-1}; fi
VENV=${VENV:-$(cd "$here/.." && pwd)/build/bench-iterate-venv}
N_TEXT=${N_TEXT:-32}
N_RAND=${N_RAND:-32}
SHARD_MIB=${SHARD_MIB:-32}
PAIRS=${PAIRS:-5}
EPOCHS=${EPOCHS:-3}
QUIET=${QUIET:-0}
SETS=${SETS:-"text rand"}
need zstd zstd
need python3 python3
need taskset util-linux
need gzip gzip
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "/usr/bin/python3 has no torch: apt-get install python3-torch" >&2; exit 1; }
peer_venv "$VENV" "webdataset==1.0.2"
WPY=$VENV/bin/python
[ -x /usr/bin/time ] || need time time
[ -x "$GDSLOAD" ] || { echo "gdsload binary not found at $GDSLOAD (set GDSLOAD or run: go build -o bin/gdsload ./cmd/gdsload)" >&2; exit 1; }
GDSLOAD=$(cd "$(dirname "$GDSLOAD")" && pwd)/$(basename "$GDSLOAD")
ncpu=$(nproc)

if [ -z "${WORK:-}" ]; then
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
fi
export GDSLOAD_SCAN_CACHE=$WORK/scan-cache

# make_set NAME COUNT KIND: COUNT shards of KIND (text or rand) in
# $WORK/NAME, with index.json, $WORK/NAME-noindex (hard links) and
# per-shard tar SHA-256s in $WORK/NAME.tarsums.
make_set() {
  local name=$1 count=$2 kind=$3 dir=$WORK/$1
  [ -f "$dir/index.json" ] && return 0
  mkdir -p "$dir"
  echo "writing $count $kind shards of ~$SHARD_MIB MiB to $dir" >&2
  : >"$WORK/$name.tarsums"
  for s in $(seq 0 $((count - 1))); do
    local shard; shard=$(printf 'shard-%06d.tar.zst' "$s")
    python3 - "$s" "$((SHARD_MIB * 1048576))" "$kind" <<'PY' >"$WORK/tmp.tar"
import io, json, random, sys, tarfile
shard, budget, kind = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rnd = random.Random(shard)
words = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 9))) for _ in range(4000)]
out = sys.stdout.buffer
with tarfile.open(fileobj=out, mode="w|", format=tarfile.USTAR_FORMAT) as tf:
    used, i = 0, 0
    while used < budget:
        key = "s%06d-%06d" % (shard, i)
        if kind == "text":
            fields = [("txt", " ".join(rnd.choices(words, k=rnd.randint(300, 4500))).encode())]
        else:
            fields = [("jpg", rnd.randbytes(rnd.randint(20000, 58000))), ("cls", str(i % 1000).encode())]
        fields.append(("json", json.dumps({"key": key, "n": i}).encode()))
        for ext, data in fields:
            ti = tarfile.TarInfo(key + "." + ext)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
            used += len(data)
        i += 1
PY
    echo "$shard $(sha256sum <"$WORK/tmp.tar" | cut -d' ' -f1)" >>"$WORK/$name.tarsums"
    zstd -q -3 -T1 -f -o "$dir/$shard" "$WORK/tmp.tar"
  done
  rm -f "$WORK/tmp.tar"
  mkdir -p "$dir-noindex" "$dir-tar" "$dir-gz"
  ln -f "$dir"/*.tar.zst "$dir-noindex/"
  local f b
  for f in "$dir"/*.tar.zst; do
    b=$(basename "$f" .zst)
    zstd -q -dc "$f" >"$dir-tar/$b"
    gzip -6 -c "$dir-tar/$b" >"$dir-gz/$b.gz"
  done
  "$GDSLOAD" manifest "$dir" >&2
  "$GDSLOAD" manifest "$dir-tar" >&2
  "$GDSLOAD" manifest "$dir-gz" >&2
}

# reference NAME: samples, field bytes, tar bytes and the SHA-256 of the
# fields in order, by Python's tarfile over zstd -dc (WebDataset grouping:
# a sample is a run of members with the same key).
reference() {
  local dir=$WORK/$1
  for f in "$dir"/*.tar.zst; do zstd -q -dc "$f"; done | python3 -c '
import hashlib, sys, tarfile
class Count:
    def __init__(self, f): self.f, self.n = f, 0
    def read(self, k=-1):
        b = self.f.read(k); self.n += len(b); return b
src = Count(sys.stdin.buffer)
h, samples, fbytes, last = hashlib.sha256(), 0, 0, None
with tarfile.open(fileobj=src, mode="r|*", ignore_zeros=True) as tf:
    for m in tf:
        base = m.name.rsplit("/", 1)[-1]
        if not m.isreg() or "." not in base:
            continue
        key = m.name[: len(m.name) - len(base)] + base.split(".", 1)[0]
        data = tf.extractfile(m).read()
        h.update(data)
        fbytes += len(data)
        if key != last:
            samples, last = samples + 1, key
rest = src.read()
print(samples, fbytes, src.n, h.hexdigest())'
}

# check_json FILE SAMPLES BYTES: the --json summary in FILE matches.
check_json() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
s = json.loads(open(sys.argv[1], "rb").read().splitlines()[-1])
if (s["samples"], s["bytes"]) != (int(sys.argv[2]), int(sys.argv[3])):
    sys.exit("gdsload reported %d samples, %d bytes; the reference has %s, %s" % (s["samples"], s["bytes"], sys.argv[2], sys.argv[3]))
PY
}

# check_wds FILE SAMPLES BYTES: webdataset's report in FILE matches.
check_wds() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
s = json.loads(open(sys.argv[1], "rb").read().splitlines()[-1])
if (s["samples"], s["bytes"]) != (int(sys.argv[2]), int(sys.argv[3])):
    sys.exit("webdataset yielded %d samples, %d bytes; the reference has %s, %s" % (s["samples"], s["bytes"], sys.argv[2], sys.argv[3]))
PY
}

# wds_timed OUT WORKERS CORES SHARDS...: one webdataset run, its own wall
# and CPU figures appended to OUT as "wall cpu 0" (the layout of the
# other timed files: wall, user, sys), its samples and bytes checked.
wds_timed() {
  local out=$1 workers=$2 cores=$3; shift 3
  taskset -c "$cores" "$WPY" "$here/bench-iterate.py" "$workers" "$@" >"$WORK/wout" 2>"$WORK/err" ||
    { echo "webdataset failed:" >&2; cat "$WORK/err" >&2; exit 1; }
  check_wds "$WORK/wout" "$samples" "$fbytes"
  python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).read().splitlines()[-1]); print("%.4f %.4f 0" % (d["wall"], d["cpu"]))' "$WORK/wout" >>"$out"
}

# check_zstd FILE TARBYTES: zstd -v's per-file byte counts add up.
check_zstd() {
  local got
  got=$(grep -v 'bytes total' "$1" | grep -o ': [0-9]* bytes' | awk '{n += $2} END {print n + 0}')
  [ "$got" = "$2" ] || { echo "zstd decoded $got bytes, the tar streams hold $2" >&2; cat "$1" >&2; exit 1; }
}

# run_timed OUT STDOUT CHECK... -- CMD...: one timed run, stdout to the
# file STDOUT and stderr to $WORK/err, then the check; appends "wall user
# sys" to OUT: CPU seconds from GNU time, the wall time to the nanosecond
# around it (GNU time gives it to 10 ms only, a few percent of a run here).
# With QUIET=1 (see the top) it waits for an idle machine first and runs
# again when other processes used the CPU meanwhile, counting repeats in
# $WORK/repeated and runs left disturbed in $WORK/disturbed.
run_timed() {
  local out=$1 so=$2; shift 2
  local check=()
  while [ "$1" != "--" ]; do check+=("$1"); shift; done
  shift
  local t0 t1 b0 b1 foreign tries=0
  while :; do
    [ "$QUIET" = 1 ] && wait_idle
    b0=$(busy_ticks)
    t0=$(date +%s%N)
    if ! /usr/bin/time -f '%e %U %S' -o "$WORK/t" "$@" >"$so" 2>"$WORK/err"; then
      echo "command failed: $*" >&2; cat "$WORK/err" >&2; exit 1
    fi
    t1=$(date +%s%N)
    b1=$(busy_ticks)
    [ "$QUIET" = 1 ] || break
    # Clock ticks of 10 ms: others' CPU is the machine's less this run's,
    # less the background's share of the run's wall time.
    foreign=$(tail -n 1 "$WORK/t" | awk -v b=$((b1 - b0)) -v bg="$BG_TPS" -v s=$(((t1 - t0) / 1000000)) \
      '{printf "%d", b - ($2 + $3) * 100 - bg * s / 1000}')
    [ "$foreign" -le 3 ] && break
    tries=$((tries + 1))
    if [ "$tries" -ge 8 ]; then echo x >>"$WORK/disturbed"; break; fi
    echo x >>"$WORK/repeated"
  done
  tail -n 1 "$WORK/t" | awk -v ns=$((t1 - t0)) '{printf "%.4f %s %s\n", ns/1e9, $2, $3}' >>"$out"
  "${check[@]}"
}

# lines FILE: its line count, 0 when it does not exist.
lines() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }

# busy_ticks: clock ticks all CPUs spent busy since boot (/proc/stat).
busy_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8; exit}' /proc/stat; }

# background_tps: clock ticks per second the CPUs spend busy while nothing
# of ours runs, the median of five 1-second samples.
background_tps() {
  local a b
  for _ in 1 2 3 4 5; do
    a=$(busy_ticks); sleep 1; b=$(busy_ticks)
    echo $((b - a))
  done | sort -n | sed -n 3p
}

# wait_idle: returns once the CPUs were no busier than the background
# (BG_TPS) for 0.3 s, or after a minute, saying so and counting the run in
# $WORK/unquiet.
wait_idle() {
  local a b
  for _ in $(seq 1 200); do
    a=$(busy_ticks); sleep 0.3; b=$(busy_ticks)
    [ $((b - a)) -le $((BG_TPS * 3 / 10 + 2)) ] && return 0
  done
  echo "QUIET=1: the CPUs stayed busier than the background ($BG_TPS ticks/s) for a minute; running anyway" >&2
  echo x >>"$WORK/unquiet"
}
BG_TPS=0
if [ "$QUIET" = 1 ]; then
  BG_TPS=$(background_tps)
  echo "QUIET=1: background CPU $BG_TPS ticks/s (the median of five 1-second samples)" >&2
fi


for set in $SETS; do
  case $set in
    text) make_set text "$N_TEXT" text ;;
    rand) make_set rand "$N_RAND" rand ;;
    *) echo "unknown set $set" >&2; exit 2 ;;
  esac
  dir=$WORK/$set
  shards=("$dir"/*.tar.zst)
  read -r samples fbytes tarbytes fsum < <(reference "$set")
  compressed=$(cat "${shards[@]}" | wc -c)
  echo "$set: ${#shards[@]} shards, $tarbytes bytes of tar, $samples samples" >&2

  # One checksummed run per configuration, untimed.
  zsums=$(for f in "${shards[@]}"; do echo "$(basename "$f") $(zstd -q -dc "$f" | sha256sum | cut -d' ' -f1)"; done)
  [ "$zsums" = "$(cat "$WORK/$set.tarsums")" ] || { echo "zstd -dc | sha256sum differs from the tar streams written" >&2; exit 1; }
  for cfg in "--verify=false" "--verify=true" "--workers 2"; do
    # shellcheck disable=SC2086
    got=$("$GDSLOAD" iterate "$dir" --shuffle=false --direct off $cfg --checksum sha256 --json 2>/dev/null | tail -n 1 |
      python3 -c 'import json, sys; print(json.loads(sys.stdin.read())["sha256"])')
    [ "$got" = "$fsum" ] || { echo "gdsload iterate $cfg: sha256 $got, the reference $fsum" >&2; exit 1; }
  done
  got=$("$GDSLOAD" iterate "$dir-noindex" --shuffle=false --direct off --checksum sha256 --json 2>/dev/null | tail -n 1 |
    python3 -c 'import json, sys; print(json.loads(sys.stdin.read())["sha256"])')
  [ "$got" = "$fsum" ] || { echo "gdsload iterate (no index): sha256 $got, the reference $fsum" >&2; exit 1; }
  for twin in tar gz; do
    got=$("$GDSLOAD" iterate "$dir-$twin" --shuffle=false --direct off --checksum sha256 --json 2>/dev/null | tail -n 1 |
      python3 -c 'import json, sys; print(json.loads(sys.stdin.read())["sha256"])')
    [ "$got" = "$fsum" ] || { echo "gdsload iterate (.$twin): sha256 $got, the reference $fsum" >&2; exit 1; }
    got=$("$WPY" "$here/bench-iterate.py" 0 "$dir-$twin"/*.tar* --sha256 | python3 -c 'import json, sys; print(json.loads(sys.stdin.read())["sha256"])')
    [ "$got" = "$fsum" ] || { echo "webdataset (.$twin): sha256 $got, the reference $fsum" >&2; exit 1; }
    "$WPY" "$here/bench-iterate.py" 2 "$dir-$twin"/*.tar* >"$WORK/wout"
    check_wds "$WORK/wout" "$samples" "$fbytes"
  done
  echo "checksummed runs: zstd per shard, gdsload (noverify, verify, 2 workers, no index, .tar, .tar.gz) and webdataset (.tar, .tar.gz; 2 workers: samples and bytes) match the reference" >&2

  rm -f "$WORK"/t."$set".* "$WORK/repeated" "$WORK/disturbed" "$WORK/unquiet"
  one=(taskset -c 0 env GOMAXPROCS=1 "$GDSLOAD" iterate --shuffle=false --direct off --json)
  two=(taskset -c 0,1 env GOMAXPROCS=2 "$GDSLOAD" iterate --shuffle=false --direct off --json)
  jcheck=(check_json "$WORK/out" "$samples" "$fbytes")
  # zstd writes what it decodes to /dev/null, as gdsload hands samples to
  # nobody: into a file it spent about as long again writing the page cache.
  r_zstd() { run_timed "$WORK/t.$set.zstd" /dev/null check_zstd "$WORK/err" "$tarbytes" -- taskset -c 0 zstd -d -T1 -v -c "${shards[@]}"; }
  # The same decode split in two: zstd on each core, every other shard
  # each, timed as one run: how far the peer's own work scales on this
  # machine's two cores, beside gdsload's 2 workers against 1.
  printf '%s\n' "${shards[@]}" | awk 'NR % 2 == 1' >"$WORK/$set.half0"
  printf '%s\n' "${shards[@]}" | awk 'NR % 2 == 0' >"$WORK/$set.half1"
  r_zstd2() { run_timed "$WORK/t.$set.zstd2" /dev/null check_zstd "$WORK/err" "$tarbytes" -- bash -c '
    xargs -d "\n" taskset -c 0 zstd -d -T1 -v -c <"$1" >/dev/null & p=$!
    xargs -d "\n" taskset -c 1 zstd -d -T1 -v -c <"$2" >/dev/null; r=$?
    wait "$p" && exit "$r"' - "$WORK/$set.half0" "$WORK/$set.half1"; }
  r_noverify() { run_timed "$WORK/t.$set.noverify" "$WORK/out" "${jcheck[@]}" -- "${one[@]}" --verify=false "$dir"; }
  r_verify() { run_timed "$WORK/t.$set.verify" "$WORK/out" "${jcheck[@]}" -- "${one[@]}" "$dir"; }
  r_noindex() { run_timed "$WORK/t.$set.noindex" "$WORK/out" "${jcheck[@]}" -- "${one[@]}" "$dir-noindex"; }
  r_noscan() { run_timed "$WORK/t.$set.noscan" "$WORK/out" "${jcheck[@]}" -- env GDSLOAD_SCAN_CACHE=off "${one[@]}" "$dir-noindex"; }
  r_w1() { run_timed "$WORK/t.$set.w1" "$WORK/out" "${jcheck[@]}" -- "${two[@]}" --workers 1 "$dir"; }
  r_w2() { run_timed "$WORK/t.$set.w2" "$WORK/out" "${jcheck[@]}" -- "${two[@]}" --workers 2 "$dir"; }
  echeck=(check_json "$WORK/out" "$((samples * EPOCHS))" "$((fbytes * EPOCHS))")
  r_gtar() { run_timed "$WORK/t.$set.gtar" "$WORK/out" "${jcheck[@]}" -- "${one[@]}" "$dir-tar"; }
  r_ggz() { run_timed "$WORK/t.$set.ggz" "$WORK/out" "${jcheck[@]}" -- "${one[@]}" "$dir-gz"; }
  r_g2tar() { run_timed "$WORK/t.$set.g2tar" "$WORK/out" "${jcheck[@]}" -- "${two[@]}" --workers 2 "$dir-tar"; }
  r_wtar() { wds_timed "$WORK/t.$set.wtar" 0 0 "$dir-tar"/*.tar; }
  r_wgz() { wds_timed "$WORK/t.$set.wgz" 0 0 "$dir-gz"/*.tar.gz; }
  r_wtar2() { wds_timed "$WORK/t.$set.wtar2" 2 0,1 "$dir-tar"/*.tar; }
  r_wgz2() { wds_timed "$WORK/t.$set.wgz2" 2 0,1 "$dir-gz"/*.tar.gz; }
  r_w1e() { run_timed "$WORK/t.$set.w1e" "$WORK/out" "${echeck[@]}" -- "${two[@]}" --workers 1 --epochs "$EPOCHS" "$dir"; }
  r_w2e() { run_timed "$WORK/t.$set.w2e" "$WORK/out" "${echeck[@]}" -- "${two[@]}" --workers 2 --epochs "$EPOCHS" "$dir"; }
  # Warm the page cache and both programs, untimed.
  zstd -q -d -T1 -c "${shards[@]}" >/dev/null
  "$GDSLOAD" iterate "$dir" --direct off >/dev/null 2>&1
  cat "$dir-tar"/* "$dir-gz"/* >/dev/null
  for _ in $(seq 1 "$PAIRS"); do
    r_zstd; r_noverify; r_verify; r_noindex; r_noscan; r_w1; r_w2; r_zstd2; r_w1e; r_w2e
    r_gtar; r_wtar; r_ggz; r_wgz; r_g2tar; r_wtar2; r_wgz2
    r_wgz2; r_wtar2; r_g2tar; r_wgz; r_ggz; r_wtar; r_gtar
    r_w2e; r_w1e; r_zstd2; r_w2; r_w1; r_noscan; r_noindex; r_verify; r_noverify; r_zstd
  done

  gib() { awk -v b="$tarbytes" 'BEGIN {printf "%.6f", b/1073741824}'; }
  # cpu FILE [PASSES]: CPU seconds per GiB of the tar bytes the runs went
  # through (PASSES times the set; 1 unless given).
  cpu() { awk -v g="$(gib)" -v n="${2:-1}" '{printf "%.4f\n", ($2+$3)/(g*n)}' "$1"; }
  for c in zstd zstd2 noverify verify noindex noscan w1 w2 w1e w2e gtar ggz g2tar wtar wgz wtar2 wgz2; do
    passes=1
    case $c in w1e | w2e) passes=$EPOCHS ;; esac
    cpu "$WORK/t.$set.$c" "$passes" >"$WORK/c.$set.$c"
    awk '{print $1}' "$WORK/t.$set.$c" >"$WORK/w.$set.$c"
  done
  for c in noverify verify noindex noscan; do ratios "$WORK/c.$set.zstd" "$WORK/c.$set.$c" >"$WORK/r.$set.$c"; done
  ratios "$WORK/c.$set.wtar" "$WORK/c.$set.gtar" >"$WORK/r.$set.wtar"
  ratios "$WORK/c.$set.wgz" "$WORK/c.$set.ggz" >"$WORK/r.$set.wgz"
  ratios "$WORK/w.$set.wtar2" "$WORK/w.$set.g2tar" >"$WORK/r.$set.wtar2"
  # The strongest webdataset run of each round, per core: the lower CPU
  # s/GiB of .tar and .tar.gz, against gdsload on the same shards.
  paste "$WORK/c.$set.wtar" "$WORK/c.$set.wgz" "$WORK/c.$set.gtar" "$WORK/c.$set.ggz" |
    awk '{printf "%.4f\n", ($1 <= $2) ? $1 / $3 : $2 / $4}' >"$WORK/r.$set.wbest"
  ratios "$WORK/w.$set.w1" "$WORK/w.$set.w2" >"$WORK/r.$set.w2"
  ratios "$WORK/w.$set.w1e" "$WORK/w.$set.w2e" >"$WORK/r.$set.w2e"
  ratios "$WORK/w.$set.zstd" "$WORK/w.$set.zstd2" >"$WORK/r.$set.zstd2"
  # The epochs after the first alone: each round's EPOCHS-epoch wall less
  # its 1-epoch wall, 1 worker against 2 (the first epoch also pays for
  # the process's start, its fresh buffers and mapping every shard).
  paste "$WORK/w.$set.w1e" "$WORK/w.$set.w1" "$WORK/w.$set.w2e" "$WORK/w.$set.w2" |
    awk '{d = $3 - $4; printf "%.4f\n", (d > 0 ? ($1 - $2) / d : 0)}' >"$WORK/r.$set.later"
  echo
  echo "#### \`scripts/bench-iterate.sh\`: $set shards, $((2 * PAIRS)) runs each, $(stamp)"
  echo
  quiet=""
  if [ "$QUIET" = 1 ]; then
    quiet=" QUIET=1: each run waited for a machine no busier than its background ($BG_TPS clock ticks of 10 ms per second, $BG_TPS% of one CPU), $(lines "$WORK/unquiet") of them in vain for a minute; $(lines "$WORK/repeated") runs repeated because other processes took CPU during them, $(lines "$WORK/disturbed") left disturbed after 8 tries."
  fi
  echo "${#shards[@]} shards, $compressed bytes compressed, $tarbytes bytes of tar, $samples samples ($fbytes field bytes), page cache warm; every run's samples and bytes checked, each configuration's SHA-256 checked once. Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg).$quiet"
  echo
  echo "Per round, CPU s/GiB of tar bytes (webdataset: inside its process); the strongest webdataset run of the round, and gdsload's ratio to it on the same shards:"
  echo
  echo "| round | zstd -d -T1 | gdsload .tar.zst | gdsload .tar | gdsload .tar.gz | webdataset .tar | webdataset .tar.gz | strongest webdataset | webdataset / gdsload |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  paste "$WORK/c.$set.zstd" "$WORK/c.$set.verify" "$WORK/c.$set.gtar" "$WORK/c.$set.ggz" "$WORK/c.$set.wtar" "$WORK/c.$set.wgz" |
    awk '{b = ($5 <= $6) ? ".tar" : ".tar.gz"; r = ($5 <= $6) ? $5 / $3 : $6 / $4
      printf "| %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %s | %.2fx |\n", NR, $1, $2, $3, $4, $5, $6, b, r}'
  echo
  echo "| configuration | wall s (median) | CPU s/GiB (median) | spread |"
  echo "| --- | --- | --- | --- |"
  for c in zstd zstd2 noverify verify noindex noscan w1 w2 w1e w2e gtar ggz g2tar wtar wgz wtar2 wgz2; do
    case $c in
      zstd) label="\`zstd -d -T1\`, 1 core" ;;
      zstd2) label="\`zstd -d -T1\` twice, every other shard each, 2 cores" ;;
      noverify) label="\`gdsload iterate --verify=false\`, 1 core" ;;
      verify) label="\`gdsload iterate\` (CRC-32C checked), 1 core" ;;
      noindex) label="\`gdsload iterate\`, no \`index.json\` (counts from the scan cache), 1 core" ;;
      noscan) label="\`gdsload iterate\`, no \`index.json\`, scan cache off, 1 core" ;;
      w1) label="\`gdsload iterate --workers 1\`, 2 cores" ;;
      w2) label="\`gdsload iterate --workers 2\`, 2 cores" ;;
      w1e) label="\`gdsload iterate --workers 1 --epochs $EPOCHS\`, 2 cores" ;;
      w2e) label="\`gdsload iterate --workers 2 --epochs $EPOCHS\`, 2 cores" ;;
      gtar) label="\`gdsload iterate\` over .tar, 1 core" ;;
      ggz) label="\`gdsload iterate\` over .tar.gz, 1 core" ;;
      g2tar) label="\`gdsload iterate --workers 2\` over .tar, 2 cores" ;;
      wtar) label="webdataset 1.0.2 over .tar, raw bytes, 1 process, 1 core" ;;
      wgz) label="webdataset 1.0.2 over .tar.gz, raw bytes, 1 process, 1 core" ;;
      wtar2) label="webdataset 1.0.2 over .tar, DataLoader 2 workers, 2 cores" ;;
      wgz2) label="webdataset 1.0.2 over .tar.gz, DataLoader 2 workers, 2 cores" ;;
    esac
    printf '| %s | %.3f | %.3f | %s |\n' "$label" "$(median <"$WORK/w.$set.$c")" "$(median <"$WORK/c.$set.$c")" "$(spread <"$WORK/c.$set.$c")"
  done
  echo
  note=""
  [ "$ncpu" -lt 2 ] && note=" (only $ncpu CPU)"
  echo "| ratio (per round, then median) | median | spread | target |"
  echo "| --- | --- | --- | --- |"
  ratio_line 'zstd CPU / gdsload CPU, --verify=false' "$WORK/r.$set.noverify" '>= 0.9x'
  ratio_line 'zstd CPU / gdsload CPU, CRC-32C checked' "$WORK/r.$set.verify" '>= 0.6x'
  ratio_line 'zstd CPU / gdsload CPU, no index.json (scan cache)' "$WORK/r.$set.noindex" 'none'
  ratio_line 'zstd CPU / gdsload CPU, no index.json, scan cache off' "$WORK/r.$set.noscan" 'none'
  ratio_line 'webdataset CPU / gdsload CPU, the strongest webdataset run of each round, same shards' "$WORK/r.$set.wbest" '>= 2x'
  ratio_line 'webdataset CPU / gdsload CPU, .tar' "$WORK/r.$set.wtar" '>= 2x'
  ratio_line 'webdataset CPU / gdsload CPU, .tar.gz' "$WORK/r.$set.wgz" '>= 2x'
  ratio_line 'webdataset 2 DataLoader workers wall / gdsload --workers 2 wall, .tar, 2 cores' "$WORK/r.$set.wtar2" 'none'
  ratio_line "2 workers / 1 worker, wall, $EPOCHS epochs$note" "$WORK/r.$set.w2e" '>= 1.8x'
  ratio_line '2 workers / 1 worker, wall, 1 epoch (each process'"'"'s fresh memory weighs more)' "$WORK/r.$set.w2" 'none'
  if [ "$EPOCHS" -gt 1 ]; then
    ratio_line "2 workers / 1 worker, wall, the $((EPOCHS - 1)) epochs after the first ($EPOCHS-epoch run less 1-epoch run)" "$WORK/r.$set.later" 'none'
  fi
  ratio_line 'zstd on 2 cores / zstd on 1, wall (the peer'"'"'s own scaling here)' "$WORK/r.$set.zstd2" 'none'
  # One worker already keeps more than one core busy (the consumer, the
  # garbage collector and page faults run beside its decoder): 2 workers on
  # 2 cores can be at most 2 / that as fast, even with no other cost.
  awk '{printf "%.4f\n", ($2 + $3) / $1}' "$WORK/t.$set.w1" >"$WORK/cores.$set.w1"
  printf '| cores busy during a 1-worker run (CPU / wall); 2 / that | %.2f; %.2fx | %s | none |\n' "$(median <"$WORK/cores.$set.w1")" "$(median <"$WORK/cores.$set.w1" | awk '{printf "%.4f", 2 / $1}')" "$(spread <"$WORK/cores.$set.w1")"
done
