#!/usr/bin/env bash
# bench-vs-fio.sh: local loads against fio at its strongest, and many
# small files against find | xargs cat, cold cache.
#
# 1. Sequential read of one file (SIZE bytes, O_DIRECT). Each round runs,
#    in alternating order:
#      gdsload        gdsload load --to host --direct on --json FILE
#                     (its defaults: 8 workers, 4 MiB chunks)
#      fio-io_uring   fio --rw=read --bs=4M --direct=1 --iodepth=32 --ioengine=io_uring
#      fio-libaio     the same with --ioengine=libaio
#      fio-psync      fio --ioengine=psync --numjobs=8 --offset_increment=SIZE/8
#                     (8 synchronous readers, gdsload's parallelism)
#    The peer of each round is the fastest fio run of that round.
# 2. Random 4 KiB reads (RANDOM_READS of them, O_DIRECT, 32 at once):
#      gdsload bench --modes random --workers 32   against
#      fio --rw=randread --bs=4k --iodepth=32 --ioengine=io_uring
#    compared on IOPS and p99 latency (each tool's own report) and CPU
#    per read (user+sys from outside, over RANDOM_READS); each round
#    prints both and the ratios (targets: IOPS >= 0.9x, CPU per read
#    <= 1.1x).
# 3. SMALL_FILES files of 4 to 7 KiB in one directory:
#      gdsload load DIR (--direct auto, on) against
#      cat       find DIR -type f -print0 | xargs -0 cat
#      pcat      find DIR -type f -print0 | xargs -0 -P 8 -n 64 cat
#      fio       fio, 8 jobs, each --opendir of an eighth of the files
#                (hard links in DIR-split/jK: the same inodes),
#                --rw=read --bsrange=1-8k --ioengine=psync (fio reads a
#                file's tail only with a block size that fits it), timed
#                by its own report (its start, about half a second, is
#                left out)
#    cold cache, and warm for --direct auto, cat and pcat; the strongest
#    peer of a round is its fastest cold (warm) peer run. The cats' bytes
#    are counted by wc -c on every run, fio's by its io_bytes.
#
# The page cache is dropped before every cold run (needs root). Every run
# is timed from outside its process by GNU time (wall, user+sys CPU, peak
# RSS) and checks its byte count (gdsload's JSON, fio's io_bytes, wc -c
# of what cat wrote); one gdsload run per configuration is checked against
# sha256sum. fio cannot hand over the bytes it read: its runs are checked
# by count only.
#
# With PROFILE=1 each part ends with where one gdsload run's CPU went
# (perf; apt-get install linux-perf).
#
# Usage: scripts/bench-vs-fio.sh [FILE]   (default /var/tmp/gdsload-bench/2g.bin)
# Environment: GDSLOAD (./bin/gdsload), PAIRS (5), SIZE (bytes, 2 GiB),
# RANDOM_READS (262144: about 2 s a run, long enough for a steady figure), SMALL_FILES (10000), PARTS ("seq random small":
# the parts to run). Needs fio and GNU time: installed with apt-get when
# missing and run as root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib-bench.sh
. "$here/lib-bench.sh"

GDSLOAD=${GDSLOAD:-./bin/gdsload}
PAIRS=${PAIRS:-5}
SIZE=${SIZE:-$((2 << 30))}
RANDOM_READS=${RANDOM_READS:-262144}
SMALL_FILES=${SMALL_FILES:-10000}
PARTS=${PARTS:-seq random small}
FILE=${1:-/var/tmp/gdsload-bench/2g.bin}
SMALL_DIR=$(dirname "$FILE")/small-$SMALL_FILES

need fio fio
need python3 python3
if [ "${PROFILE:-}" = 1 ]; then need perf linux-perf; fi
[ -x /usr/bin/time ] || need /usr/bin/time time
[ -x "$GDSLOAD" ] || { echo "$GDSLOAD not built: run make build" >&2; exit 1; }
make_file "$FILE" "$SIZE"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

# fio_bytes JSON: bytes read, over all jobs.
fio_bytes() { python3 -c 'import json,sys; print(sum(j["read"]["io_bytes"] for j in json.load(open(sys.argv[1]))["jobs"]))' "$1"; }
# fio_lat JSON: IOPS and p99 completion latency (ms) of a single-job run.
fio_lat() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["jobs"][0]["read"]; print("%.0f %.3f" % (r["iops"], r["clat_ns"]["percentile"]["99.000000"]/1e6))' "$1"; }

# sha_check WHAT JSON FILE: the sha256 a gdsload --json result gives for
# its one file is FILE's.
sha_check() {
  local got want; got=$(json_field "$2" sha256); want=$(sha256sum "$3" | cut -d' ' -f1)
  [ "$got" = "$want" ] || { echo "$1: landed bytes with sha256 $got, $3 has $want" >&2; exit 1; }
}

# table TOOLS...: GiB/s (median, spread), CPU s/GiB and peak RSS of each
# tool's timed file $work/TOOL, for BYTES bytes a run.
table() {
  local t
  echo "| tool | GiB/s (median) | spread | CPU s/GiB | peak RSS MiB |"
  echo "| --- | --- | --- | --- | --- |"
  for t in "$@"; do
    gibps "$BYTES" "$work/$t" >"$work/$t.bw"
    cpugib "$BYTES" "$work/$t" >"$work/$t.cpu"
    printf '| %s | %.3f | %s | %.3f | %.0f |\n' "$t" "$(median <"$work/$t.bw")" "$(spread <"$work/$t.bw")" \
      "$(median <"$work/$t.cpu")" "$(col "$work/$t" 4 | median | awk '{print $1/1024}')"
  done
}

order() { if [ $(($1 % 2)) = 1 ]; then echo "$2"; else echo "$2" | tr ' ' '\n' | tac | tr '\n' ' '; fi; }

fs="$(df --output=fstype "$FILE" | tail -1) on $(df --output=source "$FILE" | tail -1)"

if [[ " $PARTS " == *" seq "* ]]; then
  BYTES=$SIZE
  fio_seq=(--name=seq --filename="$FILE" --rw=read --bs=4M --direct=1 --size="$SIZE" --output-format=json)
  seq_run() {
    local so=$work/$1.out
    drop_caches
    case $1 in
      gdsload) timed_out "$work/$1" "$so" "$GDSLOAD" load --to host --direct on --json "$FILE" ;;
      fio-io_uring) timed_out "$work/$1" "$so" fio "${fio_seq[@]}" --ioengine=io_uring --iodepth=32 ;;
      fio-libaio) timed_out "$work/$1" "$so" fio "${fio_seq[@]}" --ioengine=libaio --iodepth=32 ;;
      fio-psync) timed_out "$work/$1" "$so" fio --name=seq --filename="$FILE" --rw=read --bs=4M --direct=1 \
        --ioengine=psync --numjobs=8 --size=$((SIZE / 8)) --offset_increment=$((SIZE / 8)) --group_reporting --output-format=json ;;
    esac
    case $1 in
      gdsload) check_bytes "$1" "$(json_bytes "$so")" "$SIZE" ;;
      *) check_bytes "$1" "$(fio_bytes "$so")" "$SIZE" ;;
    esac
  }
  drop_caches
  "$GDSLOAD" load --to host --direct on --json --checksum sha256 "$FILE" >"$work/sha.json"
  sha_check "gdsload load --direct on" "$work/sha.json" "$FILE"
  tools="gdsload fio-io_uring fio-libaio fio-psync"
  for i in $(seq 1 "$PAIRS"); do
    for t in $(order "$i" "$tools"); do seq_run "$t"; done
    echo "seq pair $i/$PAIRS done" >&2
  done
  # The peer of each round: its fastest fio run, and that run's CPU.
  for t in fio-io_uring fio-libaio fio-psync; do col "$work/$t" 1 >"$work/$t.wall"; done
  paste "$work/fio-io_uring" "$work/fio-libaio" "$work/fio-psync" |
    awk '{best=1; for (k=2;k<=3;k++) if ($(4*k-3) < $(4*best-3)) best=k; print $(4*best-3), $(4*best-2), $(4*best-1), $(4*best)}' >"$work/best-fio"
  echo "### \`scripts/bench-vs-fio.sh\`: sequential read, $PAIRS rounds, $(stamp)"
  echo
  echo "$SIZE bytes in $FILE ($fs), O_DIRECT, cold cache, byte counts checked on every run, gdsload's bytes checked against sha256sum once."
  echo
  table gdsload fio-io_uring fio-libaio fio-psync best-fio
  col "$work/gdsload" 1 >"$work/g.wall"; col "$work/best-fio" 1 >"$work/b.wall"
  peer_ratios "$work/g.wall" "$work/b.wall" >"$work/r.bw"
  ratios "$work/gdsload.cpu" "$work/best-fio.cpu" >"$work/r.cpu"
  echo
  echo "| ratio (per round, then median) | median | spread | target |"
  echo "| --- | --- | --- | --- |"
  ratio_line 'gdsload / best fio, bandwidth' "$work/r.bw" '>= 1.0x'
  ratio_line 'gdsload / best fio, CPU s/GiB' "$work/r.cpu" '<= 1.0x'
  if [ "${PROFILE:-}" = 1 ]; then
    drop_caches
    perf_top "Where a sequential gdsload load's CPU went" "$GDSLOAD" load --to host --direct on "$FILE"
  fi
  echo
fi

if [[ " $PARTS " == *" random "* ]]; then
  BYTES=$((RANDOM_READS * 4096))
  rand_run() {
    local so=$work/$1.out
    drop_caches
    case $1 in
      gdsload-random) timed_out "$work/$1" "$so" "$GDSLOAD" bench --modes random --workers 32 --block-size 4KiB \
        --random-reads "$RANDOM_READS" --runs 1 --json "$FILE"
        check_bytes "$1" "$(json_field "$so" bytes)" "$BYTES"
        python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print("%.0f %.3f" % (r["iops"], r["p99_ms"]))' "$so" >>"$work/$1.lat" ;;
      fio-randread) timed_out "$work/$1" "$so" fio --name=rand --filename="$FILE" --rw=randread --bs=4k --direct=1 \
        --ioengine=io_uring --iodepth=32 --size="$SIZE" --number_ios="$RANDOM_READS" --output-format=json
        check_bytes "$1" "$(fio_bytes "$so")" "$BYTES"
        fio_lat "$so" >>"$work/$1.lat" ;;
    esac
  }
  for i in $(seq 1 "$PAIRS"); do
    for t in $(order "$i" "gdsload-random fio-randread"); do rand_run "$t"; done
    # This round: each tool's IOPS and CPU per read, and the stronger.
    gi=$(tail -n 1 "$work/gdsload-random.lat" | cut -d' ' -f1); fi=$(tail -n 1 "$work/fio-randread.lat" | cut -d' ' -f1)
    gc=$(tail -n 1 "$work/gdsload-random" | awk -v n="$RANDOM_READS" '{printf "%.2f", ($2+$3)/n*1e6}')
    fc=$(tail -n 1 "$work/fio-randread" | awk -v n="$RANDOM_READS" '{printf "%.2f", ($2+$3)/n*1e6}')
    echo "$gc" >>"$work/gdsload-random.cpuio"; echo "$fc" >>"$work/fio-randread.cpuio"
    echo "random round $i/$PAIRS: gdsload $gi IOPS, $gc us CPU/read; fio-randread $fi IOPS, $fc us CPU/read;" \
      "stronger: $(awk -v a="$gi" -v b="$fi" 'BEGIN{print (a >= b ? "gdsload" : "fio-randread")}');" \
      "IOPS $(awk -v a="$gi" -v b="$fi" 'BEGIN{printf "%.2f", a/b}')x, CPU/read $(awk -v a="$gc" -v b="$fc" 'BEGIN{printf "%.2f", a/b}')x" >&2
  done
  echo "### \`scripts/bench-vs-fio.sh\`: random 4 KiB reads, $PAIRS rounds, $(stamp)"
  echo
  echo "$RANDOM_READS reads of 4 KiB at random aligned offsets of $FILE ($fs), O_DIRECT, 32 in flight, cold cache; IOPS and p99 as each tool reports them, CPU from outside."
  echo
  echo "| tool | IOPS (median) | spread | p99 ms (median) | CPU us/read | CPU s/GiB |"
  echo "| --- | --- | --- | --- | --- | --- |"
  for t in gdsload-random fio-randread; do
    cpugib "$BYTES" "$work/$t" >"$work/$t.cpu"
    printf '| %s | %.0f | %s | %.3f | %.2f | %.2f |\n' "$t" "$(col "$work/$t.lat" 1 | median)" "$(col "$work/$t.lat" 1 | spread)" \
      "$(col "$work/$t.lat" 2 | median)" "$(median <"$work/$t.cpuio")" "$(median <"$work/$t.cpu")"
  done
  col "$work/gdsload-random.lat" 1 >"$work/a"; col "$work/fio-randread.lat" 1 >"$work/b"
  ratios "$work/a" "$work/b" >"$work/r.iops"
  ratios "$work/gdsload-random.cpuio" "$work/fio-randread.cpuio" >"$work/r.cpuio"
  echo
  echo "| ratio (per round, then median) | median | spread | target |"
  echo "| --- | --- | --- | --- |"
  ratio_line 'gdsload / fio io_uring randread, IOPS' "$work/r.iops" '>= 0.9x'
  ratio_line 'gdsload / fio io_uring randread, CPU per read' "$work/r.cpuio" '<= 1.1x'
  if [ "${PROFILE:-}" = 1 ]; then
    drop_caches
    perf_top "Where gdsload's random reads' CPU went" "$GDSLOAD" bench --modes random --workers 32 --block-size 4KiB --random-reads "$RANDOM_READS" --runs 1 "$FILE"
  fi
  echo
fi

if [[ " $PARTS " == *" small "* ]]; then
  if [ ! -f "$SMALL_DIR/.complete" ]; then
    echo "writing $SMALL_FILES files of 4 to 7 KiB to $SMALL_DIR" >&2
    rm -rf "$SMALL_DIR"; mkdir -p "$SMALL_DIR"
    python3 - "$SMALL_DIR" "$SMALL_FILES" <<'PY'
import os, random, sys
d, n = sys.argv[1], int(sys.argv[2])
r = random.Random(n)
for i in range(n):
    with open(os.path.join(d, "f%06d.bin" % i), "wb") as f:
        f.write(os.urandom(r.randint(4096, 7168)))
PY
    touch "$SMALL_DIR/.complete"
  fi
  BYTES=$(find "$SMALL_DIR" -type f -name '*.bin' -printf '%s\n' | awk '{s+=$1} END{printf "%.0f\n", s}')
  # fio's 8 jobs each open a directory: an eighth of the files, hard
  # linked (the same inodes, so the same page cache).
  SPLIT=$SMALL_DIR-split
  if [ ! -f "$SPLIT/.complete" ]; then
    rm -rf "$SPLIT"
    for k in 0 1 2 3 4 5 6 7; do mkdir -p "$SPLIT/j$k"; done
    (cd "$SMALL_DIR" && find . -maxdepth 1 -type f -name '*.bin' -printf '%f\n' | sort |
      awk -v d="$SPLIT" '{print $0 " " d "/j" (NR-1)%8 "/" $0}' | while read -r a b; do ln "$a" "$b"; done)
    touch "$SPLIT/.complete"
  fi
  fio_small=(--rw=read --bsrange=1-8k --ioengine=psync --group_reporting --output-format=json)
  for k in 0 1 2 3 4 5 6 7; do fio_small+=(--name=j$k --opendir="$SPLIT/j$k"); done
  small_run() {
    local so=$work/$1.out
    case $1 in *-warm) cat "$SMALL_DIR"/*.bin >/dev/null ;; *) drop_caches ;; esac
    case $1 in
      gdsload-auto*) timed_out "$work/$1" "$so" "$GDSLOAD" load --to host --json "$SMALL_DIR" ;;
      gdsload-direct-on) timed_out "$work/$1" "$so" "$GDSLOAD" load --to host --direct on --json "$SMALL_DIR" ;;
      cat*) timed_out "$work/$1" "$so" sh -c 'find "$0" -type f -name "*.bin" -print0 | xargs -0 cat | wc -c' "$SMALL_DIR" ;;
      pcat*) timed_out "$work/$1" "$so" sh -c 'find "$0" -type f -name "*.bin" -print0 | xargs -0 -P 8 -n 64 cat | wc -c' "$SMALL_DIR" ;;
      fio-opendir) timed_out "$work/$1" "$so" fio "${fio_small[@]}"
        sed -i -n '/^{/,$p' "$so" # fio says "opendir added N files" before its JSON
        # fio's own time: the longest of its jobs (the run's runtime).
        local own; own=$(python3 -c 'import json,sys; print("%.4f" % (max(j["job_runtime"] for j in json.load(open(sys.argv[1]))["jobs"])/1000))' "$so")
        sed -i "\$s/^[^ ]*/$own/" "$work/$1" ;;
    esac
    case $1 in
      gdsload*) check_bytes "$1" "$(json_bytes "$so")" "$BYTES" ;;
      cat* | pcat*) check_bytes "$1" "$(tr -d ' ' <"$so")" "$BYTES" ;;
      fio-opendir) check_bytes "$1" "$(fio_bytes "$so")" "$BYTES" ;;
    esac
  }
  # Once: every file's digest as gdsload landed it is sha256sum's.
  drop_caches
  "$GDSLOAD" load --to host --json --checksum sha256 "$SMALL_DIR" >"$work/sha.json"
  python3 - "$work/sha.json" "$SMALL_DIR" <<'PY'
import hashlib, json, os, sys
res, d = json.load(open(sys.argv[1])), sys.argv[2]
bad = [f["name"] for f in res["files"] if hashlib.sha256(open(f["name"] if os.path.isabs(f["name"]) else os.path.join(d, os.path.basename(f["name"])), "rb").read()).hexdigest() != f["sha256"]]
if bad or len(res["files"]) == 0:
    sys.exit("sha256 of %d of %d small files differ, e.g. %s" % (len(bad), len(res["files"]), bad[:3]))
PY
  tools="gdsload-auto gdsload-direct-on cat pcat fio-opendir gdsload-auto-warm cat-warm pcat-warm"
  for i in $(seq 1 "$PAIRS"); do
    for t in $(order "$i" "$tools"); do small_run "$t"; done
    line="small-files round $i/$PAIRS (s):"
    for t in $tools; do line="$line $t $(tail -n 1 "$work/$t" | cut -d' ' -f1)"; done
    # The strongest peer of the round, cold and warm.
    for w in cold warm; do
      if [ $w = cold ]; then peers="cat pcat fio-opendir"; else peers="cat-warm pcat-warm"; fi
      for t in $peers; do echo "$(tail -n 1 "$work/$t" | cut -d' ' -f1) $t"; done | sort -g | head -n 1 >>"$work/best-$w.name"
    done
    echo "$line; strongest cold: $(tail -n 1 "$work/best-cold.name" | cut -d' ' -f2), warm: $(tail -n 1 "$work/best-warm.name" | cut -d' ' -f2)" >&2
  done
  col "$work/best-cold.name" 1 >"$work/best-cold.wall"; col "$work/best-warm.name" 1 >"$work/best-warm.wall"
  echo "### \`scripts/bench-vs-fio.sh\`: $SMALL_FILES small files, $PAIRS rounds, $(stamp)"
  echo
  echo "$SMALL_FILES files of 4 to 7 KiB ($BYTES bytes) in $SMALL_DIR ($fs); cold: page cache dropped before each run; warm: read once before. pcat: xargs -0 -P 8 -n 64 cat; fio-opendir: 8 psync jobs, one directory of hard links each, --bsrange=1-8k, timed by its own runtime. Byte counts checked on every run (gdsload's JSON, wc -c of the cats' output, fio's io_bytes) and every file's sha256 once."
  echo
  echo "| run | seconds (median) | spread | CPU s |"
  echo "| --- | --- | --- | --- |"
  for t in $tools; do
    col "$work/$t" 1 >"$work/$t.wall"
    awk '{print $2+$3}' "$work/$t" >"$work/$t.cpus"
    printf '| %s | %.3f | %s | %.3f |\n' "$t" "$(median <"$work/$t.wall")" "$(spread <"$work/$t.wall")" "$(median <"$work/$t.cpus")"
  done
  echo
  echo "Strongest cold peer per round: $(cut -d' ' -f2 "$work/best-cold.name" | paste -sd, -); warm: $(cut -d' ' -f2 "$work/best-warm.name" | paste -sd, -)."
  echo
  echo "| ratio (per round, then median) | median | spread | target |"
  echo "| --- | --- | --- | --- |"
  for pair in "gdsload-auto best-cold >=_1.0x" "gdsload-direct-on best-cold none" "gdsload-auto-warm best-warm none" \
    "gdsload-auto cat none" "gdsload-auto pcat none" "gdsload-auto fio-opendir none"; do
    set -- $pair
    peer_ratios "$work/$1.wall" "$work/$2.wall" >"$work/r"
    ratio_line "$1 / ${2/best-/strongest }" "$work/r" "${3/_/ }"
  done
fi
