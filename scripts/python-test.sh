#!/usr/bin/env bash
# Runs the Python package's tests (python/tests) against the library that
# `make python` built, with an interpreter that has torch and numpy:
# $PYTHON, else the first of /usr/bin/python3 and python3 that imports both
# (Debian's python3-torch and python3-numpy install for /usr/bin/python3).
# A missing torch or numpy fails: CI must not skip these tests.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-}
if [ -z "$py" ]; then
  for c in /usr/bin/python3 python3; do
    if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import torch, numpy' 2>/dev/null; then py=$c; break; fi
  done
fi
if [ -z "$py" ]; then
  echo "python tests: no python3 here imports torch and numpy; install Debian's python3-torch and python3-numpy (apt-get install python3-torch python3-numpy)" >&2
  exit 1
fi
echo "python tests with $py ($("$py" -c 'import torch, numpy; print("torch", torch.__version__, "numpy", numpy.__version__)'))"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
export GDSLOAD_REPO="$PWD"
# The scan cache (shard counts of datasets without a manifest) goes to a
# folder of this run's, not to the user's cache.
GDSLOAD_SCAN_CACHE=$(mktemp -d)
export GDSLOAD_SCAN_CACHE
trap 'rm -rf "$GDSLOAD_SCAN_CACHE"' EXIT
"$py" -m unittest discover -s python/tests -t python ${PYTHON_TEST_ARGS:--v}
