# Shared helpers for the benchmark scripts: timing from outside the process,
# dropping the page cache, medians. Source it; it defines functions only.

# need CMD PACKAGE: install PACKAGE with apt-get when CMD is missing.
need() {
  command -v "$1" >/dev/null 2>&1 && return 0
  echo "installing $2 for $1" >&2
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && apt-get install -y -qq "$2") >/dev/null 2>&1
  fi
  command -v "$1" >/dev/null 2>&1 || { echo "$1 is missing: apt-get install $2" >&2; exit 1; }
}

# drop_caches: a cold page cache for the next run (needs root).
drop_caches() {
  sync
  if ! echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then
    echo "cannot write /proc/sys/vm/drop_caches: run as root for cold-cache figures" >&2
    exit 1
  fi
}

# timed OUTFILE CMD...: runs CMD, appends "wall user sys" (seconds) to OUTFILE.
# GNU time measures from outside the process, children included.
timed() {
  local out=$1; shift
  local tf; tf=$(mktemp)
  if ! /usr/bin/time -f '%e %U %S' -o "$tf" "$@" >/dev/null 2>"$tf.err"; then
    echo "command failed: $*" >&2; cat "$tf.err" >&2; rm -f "$tf" "$tf.err"; exit 1
  fi
  tail -n 1 "$tf" >>"$out"
  rm -f "$tf" "$tf.err"
}

# median: the median of the numbers on stdin.
median() {
  sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "nan"; exit}; if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'
}

# gibps BYTES FILE: one GiB/s figure per line of a timed file.
gibps() { awk -v b="$1" '{printf "%.4f\n", b/1073741824/$1}' "$2"; }

# cpugib BYTES FILE: CPU seconds (user+sys) per GiB per line of a timed file.
cpugib() { awk -v b="$1" '{printf "%.4f\n", ($2+$3)/(b/1073741824)}' "$2"; }

# ratios A B: per-run ratios of paired lines of two files of numbers.
ratios() { paste "$1" "$2" | awk '{printf "%.4f\n", $1/$2}'; }

# spread: "min..max" of the numbers on stdin.
spread() { sort -g | awk 'NR==1{lo=$1} {hi=$1} END {printf "%.2f..%.2f", lo, hi}'; }

# make_file PATH BYTES: a file of incompressible bytes, reused when it exists.
make_file() {
  local path=$1 bytes=$2
  if [ -f "$path" ] && [ "$(stat -c %s "$path")" = "$bytes" ]; then return 0; fi
  mkdir -p "$(dirname "$path")"
  echo "writing $bytes bytes to $path" >&2
  head -c "$bytes" /dev/urandom >"$path.tmp" && mv "$path.tmp" "$path"
}

# --- helpers shared by bench-vs-fio.sh, bench-rdmafs.sh, bench-stage.sh ---

# timed_out OUT STDOUT CMD...: runs CMD, appends "wall user sys maxrss"
# (seconds; peak resident set of the largest process, KiB) to OUT and keeps
# CMD's standard output in the file STDOUT (for the byte count each run
# must report). The wall time is taken to the nanosecond around GNU time,
# which reports it to 10 ms only.
timed_out() {
  local out=$1 so=$2; shift 2
  local tf t0 t1; tf=$(mktemp)
  t0=$(date +%s%N)
  if ! /usr/bin/time -f '%e %U %S %M' -o "$tf" "$@" >"$so" 2>"$tf.err"; then
    echo "command failed: $*" >&2; cat "$tf.err" >&2; rm -f "$tf" "$tf.err"; exit 1
  fi
  t1=$(date +%s%N)
  tail -n 1 "$tf" | awk -v ns=$((t1 - t0)) '{printf "%.4f %s %s %s\n", ns/1e9, $2, $3, $4}' >>"$out"
  rm -f "$tf" "$tf.err"
}

# proc_cpu PID...: CPU seconds (user+sys) the processes have used so far,
# for servers that run across many timed transfers.
proc_cpu() {
  local tck; tck=$(getconf CLK_TCK)
  local p t=0
  for p in "$@"; do
    [ -r "/proc/$p/stat" ] || continue
    # Fields 14 and 15 (utime, stime) counted after the ") " that ends
    # the command name, which may hold spaces.
    t=$((t + $(sed 's/.*) //' "/proc/$p/stat" | awk '{print $12 + $13}')))
  done
  awk -v t="$t" -v k="$tck" 'BEGIN{printf "%.3f\n", t/k}'
}

# json_bytes FILE: the first "bytes" number of a gdsload --json result.
json_bytes() { grep -o '"bytes": *[0-9]*' "$1" | head -n 1 | grep -o '[0-9]*$'; }

# json_field FILE KEY: the first value of "KEY" in a JSON document (a
# number or a string without quotes).
json_field() { grep -o "\"$2\": *\"\\?[^\",}]*" "$1" | head -n 1 | sed 's/.*: *"\{0,1\}//'; }

# check_bytes WHAT GOT WANT: fails the benchmark when a run did not report
# every byte.
check_bytes() {
  if [ "$2" != "$3" ]; then
    echo "$1: moved $2 bytes, expected $3; the run is not counted and the benchmark stops" >&2
    exit 1
  fi
}

# col FILE N: column N (1-based) of a file of timed lines.
col() { awk -v c="$2" '{print $c}' "$1"; }

# per_gib BYTES: reads seconds on stdin, one a line; prints seconds per GiB.
per_gib() { awk -v b="$1" '{printf "%.4f\n", $1/(b/1073741824)}'; }

# peer_ratios MINE PEER: per-run throughput ratios from two files of wall
# times (peer time / my time: above 1 means faster than the peer).
peer_ratios() { paste "$1" "$2" | awk '{printf "%.4f\n", $2/$1}'; }

# best_of FILE...: per line, the smallest number across the files (the
# strongest peer of each run, by wall time).
best_of() { paste "$@" | awk '{m=$1; for (i=2;i<=NF;i++) if ($i<m) m=$i; print m}'; }

# ratio_line LABEL FILE TARGET: a Markdown row "| LABEL | median | spread |
# TARGET |" of the ratios in FILE, one a line.
ratio_line() { printf '| %s | %.2fx | %s | %s |\n' "$1" "$(median <"$2")" "$(spread <"$2")" "$3"; }

# stamp: the UTC date and time a table was taken, and the machine.
stamp() { echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(uname -r)"; }

# perf_top TITLE CMD...: runs CMD once under perf record and prints the
# symbols with the most CPU (self time, top 8) as a Markdown list, for the
# scripts' PROFILE=1 (apt-get install linux-perf).
perf_top() {
  local title=$1; shift
  local pf; pf=$(mktemp)
  perf record -q -F 999 -o "$pf" -- "$@" >/dev/null 2>&1 || { echo "perf record of $* failed" >&2; rm -f "$pf"; return 1; }
  echo
  echo "$title (perf, self time, top 8), $(stamp):"
  echo
  # awk reads to the end: perf must not die of a closed pipe.
  perf report -q -i "$pf" --no-children --sort symbol 2>/dev/null |
    awk 'NF >= 3 && $1 ~ /%$/ && n < 8 {printf "- %s %s\n", $1, $3; n++}'
  rm -f "$pf"
}

# --- helpers for the peers that run in Python venvs of their own ---

# peer_venv DIR SPEC...: a venv at DIR for a benchmark's peers, built once
# and rebuilt when the SPECs change. It is made with Debian's
# /usr/bin/python3 and sees its site packages (python3-torch, numpy), so
# that no peer brings a torch of its own. Each SPEC is one `pip install`
# argument list (split on spaces): a peer whose declared dependencies would
# replace Debian's torch is installed with --no-deps, the modules it
# imports listed in a SPEC of their own.
peer_venv() {
  local dir=$1; shift
  local want; want=$(printf '%s\n' "$@")
  if [ -f "$dir/.specs" ] && [ "$(cat "$dir/.specs")" = "$want" ]; then return 0; fi
  echo "installing the peers into $dir" >&2
  rm -rf "$dir"
  /usr/bin/python3 -m venv --system-site-packages "$dir" || { echo "cannot make a venv at $dir" >&2; return 1; }
  local s
  for s in "$@"; do
    # shellcheck disable=SC2086
    "$dir/bin/pip" install -q --disable-pip-version-check $s >&2 2>"$dir/pip.err" ||
      { cat "$dir/pip.err" >&2; echo "pip install $s into $dir failed" >&2; return 1; }
  done
  printf '%s\n' "$@" >"$dir/.specs"
}

# now_ns: the time in nanoseconds (for timing from outside a process).
now_ns() { date +%s%N; }

# winner NAME=SECONDS...: the NAME with the smallest SECONDS.
winner() { printf '%s\n' "$@" | awk -F= 'NR==1 || $2 < m {m=$2; n=$1} END {print n}'; }
