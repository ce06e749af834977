#!/usr/bin/env bash
# bench-stage.sh: gdsload stage against cp -r and dd, copying a directory
# of FILES files between two folders on the same disk, cold cache, every
# side made durable the same way and syncing only its own files:
#
#   stage  gdsload stage --json SRC DST: each file written under a
#          temporary name (O_DIRECT where the file system takes it),
#          fsynced, recorded in the journal (fdatasync), renamed, and the
#          directory fsynced; sha256 of the bytes read, CRC32C of the bytes
#          written, compared.
#   cp     cp -r --reflink=never SRC DST, then sync DST/* DST: GNU sync
#          with arguments fsyncs each file and the directory (no global
#          sync: other work on the machine is not counted).
#   dd     per file dd iflag=direct oflag=direct bs=4M conv=fsync, then
#          sync DST (the directory).
#
# After each side, every copied byte and the names pointing at them are on
# stable storage; neither side checks what cp and dd do not (stage also
# compares digests). Every run starts from an empty destination and a
# dropped page cache (needs root) and is timed from outside the process by
# GNU time; runs alternate stage cp dd, then dd cp stage. Every run checks
# the bytes it wrote (stage's JSON, the destination's size for cp and dd);
# one run of each is checked against sha256sum of the sources.
#
# With PROFILE=1 it then prints where one stage run's CPU went (perf;
# apt-get install linux-perf).
#
# Usage: scripts/bench-stage.sh [DIR]     (default /var/tmp/gdsload-bench-stage)
# Environment: GDSLOAD (./bin/gdsload), PAIRS (5), FILES (16), FILE_SIZE
# (bytes, 64 MiB), STAGE_ARGS (extra flags for gdsload stage, e.g.
# "--checksum crc32c"). Needs GNU time (installed with apt-get when
# missing and run as root).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib-bench.sh
. "$here/lib-bench.sh"

GDSLOAD=${GDSLOAD:-./bin/gdsload}
PAIRS=${PAIRS:-5}
FILES=${FILES:-16}
FILE_SIZE=${FILE_SIZE:-$((64 << 20))}
STAGE_ARGS=${STAGE_ARGS:-}
DIR=${1:-/var/tmp/gdsload-bench-stage}
SRC=$DIR/src
DST=$DIR/dst
TOTAL=$((FILES * FILE_SIZE))

[ -x /usr/bin/time ] || need /usr/bin/time time
[ -x "$GDSLOAD" ] || { echo "$GDSLOAD not built: run make build" >&2; exit 1; }
for i in $(seq -f '%03g' 0 $((FILES - 1))); do make_file "$SRC/shard-$i.bin" "$FILE_SIZE"; done
work=$(mktemp -d); trap 'rm -rf "$work" "$DST"' EXIT

cp_sync() { cp -r --reflink=never "$SRC" "$DST" && sync "$DST"/* "$DST"; }
dd_sync() {
  mkdir -p "$DST"
  for f in "$SRC"/*; do
    dd if="$f" of="$DST/$(basename "$f")" iflag=direct oflag=direct bs=4M conv=fsync status=none
  done
  sync "$DST"
}
export -f cp_sync dd_sync; export SRC DST

# dest_bytes: the bytes of the regular files under DST outside stage's
# sidecar folder.
dest_bytes() { find "$DST" -path "$DST/.gdsload-stage" -prune -o -type f -printf '%s\n' | awk '{s+=$1} END{printf "%.0f\n", s}'; }

run() {
  rm -rf "$DST"
  drop_caches
  case $1 in
    # shellcheck disable=SC2086
    stage) timed_out "$work/stage" "$work/stage.out" "$GDSLOAD" stage $STAGE_ARGS --json "$SRC" "$DST"
      check_bytes "stage run (JSON)" "$(json_field "$work/stage.out" copied_bytes)" "$TOTAL" ;;
    cp) timed_out "$work/cp" /dev/null bash -c cp_sync ;;
    dd) timed_out "$work/dd" /dev/null bash -c dd_sync ;;
  esac
  check_bytes "$1 run (destination)" "$(dest_bytes)" "$TOTAL"
}

# Once per side, untimed: the copies are the sources, byte for byte.
(cd "$SRC" && sha256sum -- *) >"$work/want.sha"
for m in stage cp dd; do
  run "$m"
  (cd "$DST" && sha256sum -c --quiet "$work/want.sha") || { echo "$m: the copy differs from the sources" >&2; exit 1; }
  : >"$work/$m" # the checked run is not timed
done

echo "$FILES files of $FILE_SIZE bytes in $SRC on $(df --output=fstype "$SRC" | tail -1) ($(df --output=source "$SRC" | tail -1)), $PAIRS pairs, stage args '${STAGE_ARGS}'" >&2
for i in $(seq 1 "$PAIRS"); do
  for m in stage cp dd dd cp stage; do run "$m"; done
  echo "pair $i/$PAIRS done" >&2
done

echo "### \`scripts/bench-stage.sh\` ($PAIRS pairs, $FILES x $FILE_SIZE bytes), $(stamp)"
echo
echo "Between two folders on $(df --output=fstype "$SRC" | tail -1) ($(df --output=source "$SRC" | tail -1)), cold cache, empty destination; each side fsyncs its own files and the directory; bytes checked on every run, sha256 once per side. Stage args: '${STAGE_ARGS}'."
echo
echo "| tool | GiB/s (median) | spread | CPU s/GiB | peak RSS MiB |"
echo "| --- | --- | --- | --- | --- |"
for m in stage cp dd; do
  gibps "$TOTAL" "$work/$m" >"$work/$m.bw"
  cpugib "$TOTAL" "$work/$m" >"$work/$m.cpu"
  col "$work/$m" 1 >"$work/$m.wall"
  printf '| %s | %.3f | %s | %.3f | %.0f |\n' "$m" "$(median <"$work/$m.bw")" "$(spread <"$work/$m.bw")" "$(median <"$work/$m.cpu")" \
    "$(col "$work/$m" 4 | median | awk '{print $1/1024}')"
done
peer_ratios "$work/stage.wall" "$work/cp.wall" >"$work/r.cp"
peer_ratios "$work/stage.wall" "$work/dd.wall" >"$work/r.dd"
echo
echo "| ratio (per run pair, then median) | median | spread | target |"
echo "| --- | --- | --- | --- |"
ratio_line 'stage / cp -r + its own sync' "$work/r.cp" '>= 1.3x'
ratio_line 'stage / dd direct + its own sync' "$work/r.dd" 'none'
if [ "${PROFILE:-}" = 1 ]; then
  need perf linux-perf
  rm -rf "$DST"; drop_caches
  # shellcheck disable=SC2086
  perf_top "Where one stage run's CPU went" "$GDSLOAD" stage $STAGE_ARGS "$SRC" "$DST"
fi
