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
