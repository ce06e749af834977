#!/usr/bin/env bash
# bench-stage.sh: gdsload stage against the strongest of the copiers its
# users would otherwise run, copying a directory of FILES files between
# two folders on the same disk, cold cache, every side made durable and
# syncing only what its users would sync:
#
#   stage   gdsload stage --json SRC DST: each file written under a
#           temporary name (O_DIRECT where the file system takes it),
#           fsynced, recorded in the journal (fdatasync), renamed, and the
#           directory fsynced; sha256 of the bytes read, CRC32C of the
#           bytes written, compared.
#   cp      cp -r --reflink=never SRC DST
#   xcp     find SRC -type f -print0 | xargs -0 -P 8 cp --reflink=never
#           (8 cp processes at once, into the same tree)
#   rclone  rclone copy --transfers 8 --checkers 8 --multi-thread-streams 4
#           --multi-thread-cutoff 32Mi (v1.76.0, go install'ed into
#           ~/.cache/gdsload-tools when missing; it checks each copy's MD5)
#   rsync   rsync -a SRC/ DST/
#   dd      per file dd iflag=direct oflag=direct bs=4M conv=fsync, then
#           sync DST (the directory)
#
# cp, xcp, rclone and rsync each run twice a round, made durable the two
# ways their users do: "+fsync" is GNU sync DST/* DST (an fsync per file
# and the directory), "+syncfs" is sync -f DST (one syncfs of the file
# system, which also writes back whatever else is dirty there). The
# faster of the two counts for that copier, and the strongest peer of a
# round is the fastest of all of them. Beside them, fio writes the same
# bytes sequentially with O_DIRECT (one file, 4 MiB blocks, 8 in flight,
# fsync at the end), timed by its own report rather than from outside
# (its start takes about half a second): the disk's own write bandwidth.
# A copy also reads every byte from the same disk: fio-rw is fio reading
# the sources and writing the same number of bytes at once (two jobs,
# O_DIRECT, 4 MiB, 8 in flight each, the longer job's own time), the
# disk's speed for the whole of a copy, which bounds what any copier here
# can reach against fio-write.
#
# Every run starts from an empty destination and a dropped page cache
# (needs root) and is timed from outside the process by GNU time; rounds
# alternate the order of the runs (forward, then reversed). Every timed
# run checks the bytes it wrote (stage's JSON, the destination's size for
# the copiers, fio's io_bytes); one run of each copier is checked against
# sha256sum of the sources.
#
# With PROFILE=1 it then prints where one stage run's CPU went (perf;
# apt-get install linux-perf).
#
# Usage: scripts/bench-stage.sh [DIR]     (default /var/tmp/gdsload-bench-stage)
# Environment: GDSLOAD (./bin/gdsload), PAIRS (3 rounds), FILES (16),
# FILE_SIZE (bytes, 64 MiB), STAGE_ARGS (extra flags for gdsload stage,
# e.g. "--checksum crc32c"), RCLONE (rclone binary; default: on PATH, else
# ~/.cache/gdsload-tools/rclone, installed with go install when missing),
# PEERS ("cp xcp rclone rsync dd": the copiers to run). Needs GNU time,
# fio and rsync (installed with apt-get when missing and run as root).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib-bench.sh
. "$here/lib-bench.sh"

GDSLOAD=${GDSLOAD:-./bin/gdsload}
PAIRS=${PAIRS:-3}
PEERS=${PEERS:-cp xcp rclone rsync dd}
FILES=${FILES:-16}
FILE_SIZE=${FILE_SIZE:-$((64 << 20))}
STAGE_ARGS=${STAGE_ARGS:-}
DIR=${1:-/var/tmp/gdsload-bench-stage}
SRC=$DIR/src
DST=$DIR/dst
TOTAL=$((FILES * FILE_SIZE))

[ -x /usr/bin/time ] || need /usr/bin/time time
need fio fio
need python3 python3
case " $PEERS " in *" rsync "*) need rsync rsync ;; esac
case " $PEERS " in *" rclone "*)
  tools=${GDSLOAD_TOOLS:-$HOME/.cache/gdsload-tools}
  RCLONE=${RCLONE:-$(command -v rclone || echo "$tools/rclone")}
  if [ ! -x "$RCLONE" ]; then
    echo "installing rclone v1.76.0 into $tools (go install)" >&2
    GOBIN=$tools go install github.com/rclone/rclone@v1.76.0 || { echo "go install of rclone failed: install it, or set PEERS without rclone" >&2; exit 1; }
    RCLONE=$tools/rclone
  fi ;;
esac
[ -x "$GDSLOAD" ] || { echo "$GDSLOAD not built: run make build" >&2; exit 1; }
for i in $(seq -f '%03g' 0 $((FILES - 1))); do make_file "$SRC/shard-$i.bin" "$FILE_SIZE"; done
work=$(mktemp -d); trap 'rm -rf "$work" "$DST" "$DIR/fio-write.bin"' EXIT

# The copiers, without their sync; NAME+fsync and NAME+syncfs add it.
copy_cp() { cp -r --reflink=never "$SRC" "$DST"; }
copy_xcp() {
  mkdir -p "$DST"
  (cd "$SRC" && find . -type f -print0 | xargs -0 -P 8 -n "$XCP_N" cp --parents --reflink=never -t "$DST")
}
copy_rclone() {
  "$RCLONE" copy --config /dev/null --transfers 8 --checkers 8 --multi-thread-streams 4 --multi-thread-cutoff 32Mi "$SRC" "$DST"
}
copy_rsync() { rsync -a "$SRC/" "$DST/"; }
durable() {
  local tool=${1%+*} how=${1#*+}
  "copy_$tool" || return 1
  case $how in
    fsync) sync "$DST"/* "$DST" ;;
    syncfs) sync -f "$DST" ;;
  esac
}
dd_sync() {
  mkdir -p "$DST"
  for f in "$SRC"/*; do
    dd if="$f" of="$DST/$(basename "$f")" iflag=direct oflag=direct bs=4M conv=fsync status=none
  done
  sync "$DST"
}
XCP_N=$(((FILES + 7) / 8))
export -f copy_cp copy_xcp copy_rclone copy_rsync durable dd_sync; export SRC DST RCLONE XCP_N

# The timed runs: stage, then each copier with each way of syncing.
runs=stage
for m in $PEERS; do
  case $m in
    dd) runs="$runs dd" ;;
    cp | xcp | rclone | rsync) runs="$runs $m+fsync $m+syncfs" ;;
    *) echo "unknown peer $m in PEERS (cp xcp rclone rsync dd)" >&2; exit 1 ;;
  esac
done
runs="$runs fio-write fio-rw"

# fio_bytes JSON read|write: bytes fio read or wrote, over all jobs.
fio_bytes() { python3 -c 'import json,sys; print(sum(j[sys.argv[2]]["io_bytes"] for j in json.load(open(sys.argv[1]))["jobs"]))' "$1" "$2"; }
# fio_own JSON: seconds by fio's own figures (bytes over bandwidth), of its
# slowest job and direction: its start, about half a second, is no part of
# the disk's speed.
fio_own() {
  python3 -c 'import json,sys
print("%.4f" % max(j[d]["io_bytes"] / j[d]["bw_bytes"] for j in json.load(open(sys.argv[1]))["jobs"] for d in ("read", "write") if j[d]["io_bytes"]))' "$1"
}
SRC_LIST=$(find "$SRC" -type f | sort | tr '\n' ':' | sed 's/:$//')

# dest_bytes: the bytes of the regular files under DST outside stage's
# sidecar folder.
dest_bytes() { find "$DST" -path "$DST/.gdsload-stage" -prune -o -type f -printf '%s\n' | awk '{s+=$1} END{printf "%.0f\n", s}'; }

run() {
  rm -rf "$DST" "$DIR/fio-write.bin"
  drop_caches
  case $1 in
    # shellcheck disable=SC2086
    stage) timed_out "$work/stage" "$work/stage.out" "$GDSLOAD" stage $STAGE_ARGS --json "$SRC" "$DST"
      check_bytes "stage run (JSON)" "$(json_field "$work/stage.out" copied_bytes)" "$TOTAL" ;;
    dd) timed_out "$work/dd" /dev/null bash -c dd_sync ;;
    fio-write) timed_out "$work/$1" "$work/$1.out" fio --name=write --filename="$DIR/fio-write.bin" --rw=write --bs=4M \
        --direct=1 --ioengine=io_uring --iodepth=8 --size="$TOTAL" --end_fsync=1 --output-format=json
      check_bytes "fio-write run (io_bytes)" "$(fio_bytes "$work/$1.out" write)" "$TOTAL"
      sed -i "\$s/^[^ ]*/$(fio_own "$work/$1.out")/" "$work/$1"
      rm -f "$DIR/fio-write.bin"
      return ;;
    fio-rw) timed_out "$work/$1" "$work/$1.out" fio --output-format=json --direct=1 --ioengine=io_uring --bs=4M --iodepth=8 \
        --name=read --filename="$SRC_LIST" --rw=read --size="$TOTAL" \
        --name=write --filename="$DIR/fio-write.bin" --rw=write --size="$TOTAL" --end_fsync=1
      check_bytes "fio-rw run (read io_bytes)" "$(fio_bytes "$work/$1.out" read)" "$TOTAL"
      check_bytes "fio-rw run (write io_bytes)" "$(fio_bytes "$work/$1.out" write)" "$TOTAL"
      sed -i "\$s/^[^ ]*/$(fio_own "$work/$1.out")/" "$work/$1"
      rm -f "$DIR/fio-write.bin"
      return ;;
    *) timed_out "$work/$1" /dev/null bash -c 'durable "$0"' "$1" ;;
  esac
  check_bytes "$1 run (destination)" "$(dest_bytes)" "$TOTAL"
}

# Once per copier, untimed: the copies are the sources, byte for byte.
(cd "$SRC" && sha256sum -- *) >"$work/want.sha"
for m in $runs; do
  case $m in *+syncfs) continue ;; esac
  run "$m"
  case $m in fio-*) continue ;; esac
  (cd "$DST" && sha256sum -c --quiet "$work/want.sha") || { echo "$m: the copy differs from the sources" >&2; exit 1; }
done
for m in $runs; do : >"$work/$m"; done # the checked runs are not timed

fs="$(df --output=fstype "$SRC" | tail -1) ($(df --output=source "$SRC" | tail -1))"
echo "$FILES files of $FILE_SIZE bytes in $SRC on $fs, $PAIRS rounds, stage args '${STAGE_ARGS}', runs: $runs" >&2
rev=$(echo "$runs" | tr ' ' '\n' | tac | tr '\n' ' ')
for i in $(seq 1 "$PAIRS"); do
  if [ $((i % 2)) = 1 ]; then order=$runs; else order=$rev; fi
  for m in $order; do run "$m"; done
  # This round's figures: every run, each copier's faster sync, the
  # strongest peer.
  line="round $i/$PAIRS (s):"
  for m in $runs; do line="$line $m $(tail -n 1 "$work/$m" | cut -d' ' -f1)"; done
  best=""; bestt=""
  for m in $PEERS; do
    if [ "$m" = dd ]; then t=$(tail -n 1 "$work/dd" | cut -d' ' -f1); name=dd
    else
      a=$(tail -n 1 "$work/$m+fsync" | cut -d' ' -f1); b=$(tail -n 1 "$work/$m+syncfs" | cut -d' ' -f1)
      if awk -v a="$a" -v b="$b" 'BEGIN{exit !(a <= b)}'; then t=$a; name=$m+fsync; else t=$b; name=$m+syncfs; fi
    fi
    echo "$t $name" >>"$work/best.$m"
    if [ -z "$bestt" ] || awk -v a="$t" -v b="$bestt" 'BEGIN{exit !(a < b)}'; then best=$name; bestt=$t; fi
  done
  echo "$bestt $best" >>"$work/strongest"
  st=$(tail -n 1 "$work/stage" | cut -d' ' -f1); fw=$(tail -n 1 "$work/fio-write" | cut -d' ' -f1); frw=$(tail -n 1 "$work/fio-rw" | cut -d' ' -f1)
  echo "$line; strongest peer: $best ($bestt s); stage / strongest $(awk -v a="$st" -v b="$bestt" 'BEGIN{printf "%.2f", b/a}')x, stage / fio-write $(awk -v a="$st" -v b="$fw" 'BEGIN{printf "%.2f", b/a}')x, stage / fio-rw $(awk -v a="$st" -v b="$frw" 'BEGIN{printf "%.2f", b/a}')x" >&2
done

echo "### \`scripts/bench-stage.sh\` ($PAIRS rounds, $FILES x $FILE_SIZE bytes), $(stamp)"
echo
echo "Between two folders on $fs, cold cache, empty destination; each copier made durable with an fsync per file (+fsync) and with one syncfs (+syncfs), the faster counting; bytes checked on every run, sha256 once per copier. Stage args: '${STAGE_ARGS}'. fio-write: the same bytes written by fio, sequential, O_DIRECT, 4 MiB, 8 in flight, fsync at the end, timed by fio's own bandwidth figure. fio-rw: fio reading the sources and writing as many bytes at once (two jobs, each as fio-write), the slower job's own time: the disk's speed for a whole copy."
echo
echo "| run | GiB/s (median) | spread | CPU s/GiB | peak RSS MiB |"
echo "| --- | --- | --- | --- | --- |"
for m in $runs; do
  gibps "$TOTAL" "$work/$m" >"$work/$m.bw"
  cpugib "$TOTAL" "$work/$m" >"$work/$m.cpu"
  col "$work/$m" 1 >"$work/$m.wall"
  printf '| %s | %.3f | %s | %.3f | %.0f |\n' "$m" "$(median <"$work/$m.bw")" "$(spread <"$work/$m.bw")" "$(median <"$work/$m.cpu")" \
    "$(col "$work/$m" 4 | median | awk '{print $1/1024}')"
done
echo
echo "Strongest peer per round: $(awk '{printf "%s%s (%.2f s)", (NR>1?", ":""), $2, $1}' "$work/strongest")."
echo
echo "| ratio (per round, then median) | median | spread | target |"
echo "| --- | --- | --- | --- |"
col "$work/strongest" 1 >"$work/strongest.wall"
peer_ratios "$work/stage.wall" "$work/strongest.wall" >"$work/r.best"
ratio_line 'stage / strongest copier (each with its faster sync)' "$work/r.best" '>= 1.0x'
for m in $PEERS; do
  col "$work/best.$m" 1 >"$work/best.$m.wall"
  peer_ratios "$work/stage.wall" "$work/best.$m.wall" >"$work/r.$m"
  ratio_line "stage / $m (its faster sync)" "$work/r.$m" 'none'
done
peer_ratios "$work/stage.wall" "$work/fio-write.wall" >"$work/r.fio"
ratio_line 'stage / fio sequential direct write (the disk)' "$work/r.fio" '>= 0.8x'
peer_ratios "$work/stage.wall" "$work/fio-rw.wall" >"$work/r.fiorw"
ratio_line 'stage / fio reading and writing the same bytes at once (the disk, for a copy)' "$work/r.fiorw" 'none'
peer_ratios "$work/fio-rw.wall" "$work/fio-write.wall" >"$work/r.ceiling"
ratio_line 'fio-rw / fio-write: what a copy at the speed of fio-rw reaches against fio-write' "$work/r.ceiling" 'none'
if [ "${PROFILE:-}" = 1 ]; then
  need perf linux-perf
  rm -rf "$DST"; drop_caches
  # shellcheck disable=SC2086
  perf_top "Where one stage run's CPU went" "$GDSLOAD" stage $STAGE_ARGS "$SRC" "$DST"
fi
