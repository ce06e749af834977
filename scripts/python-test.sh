#!/usr/bin/env bash
# Runs the Python package's tests (python/tests) against the library that
# `make python` built, with the interpreter of build/venv (`make venv`: a
# venv over Debian's /usr/bin/python3, so python3-torch and python3-numpy
# stay visible, holding scripts/test-requirements.txt: the reference
# safetensors and webdataset the tests compare against), or $PYTHON.
# A missing torch, numpy, safetensors or webdataset fails: CI must not skip
# these tests.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-build/venv/bin/python}
if ! [ -x "$py" ] && ! command -v "$py" >/dev/null 2>&1; then
  echo "python tests: $py is missing; run 'make venv' (it needs Debian's python3-venv, python3-torch and python3-numpy)" >&2
  exit 1
fi
if ! "$py" -c 'import torch, numpy, safetensors, webdataset' 2>/dev/null; then
  "$py" -c 'import torch, numpy, safetensors, webdataset' || true
  echo "python tests: $py cannot import torch, numpy, safetensors and webdataset; run 'make venv' (apt-get install python3-torch python3-numpy python3-venv for the first two)" >&2
  exit 1
fi
echo "python tests with $py ($("$py" -c 'import torch, numpy, safetensors, webdataset; print("torch", torch.__version__, "numpy", numpy.__version__, "safetensors", safetensors.__version__, "webdataset", getattr(webdataset, "__version__", "?"))'))"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
export GDSLOAD_REPO="$PWD"
# The scan cache (shard counts of datasets without a manifest) goes to a
# folder of this run's, not to the user's cache.
GDSLOAD_SCAN_CACHE=$(mktemp -d)
export GDSLOAD_SCAN_CACHE
trap 'rm -rf "$GDSLOAD_SCAN_CACHE"' EXIT
"$py" -m unittest discover -s python/tests -t python ${PYTHON_TEST_ARGS:--v}
