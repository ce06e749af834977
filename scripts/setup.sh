#!/usr/bin/env bash
# setup.sh: what `make build` needs on a fresh Debian machine with Go: a C
# compiler for cgo (gdsload loads CUDA, cuFile and NVML at run time through
# small C trampolines). Installs gcc with apt-get when run as root; says
# what to run otherwise.
set -euo pipefail
command -v go >/dev/null 2>&1 || { echo "Go is missing: install Go 1.26 (https://go.dev/dl) and put it on PATH" >&2; exit 1; }
if ! command -v "${CC:-gcc}" >/dev/null 2>&1 && ! command -v cc >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing gcc for cgo" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev >/dev/null
  else
    echo "a C compiler is missing (cgo needs one): sudo apt-get install gcc libc6-dev" >&2
    exit 1
  fi
fi
