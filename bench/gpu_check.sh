#!/usr/bin/env bash
# Issue 24's GPU check, one command on a lent GPU machine (no ray or mlflow there; see
# /work/shared/notes/gpu-notes.md): installs the pydantic wheels carried in .whl/ where pydantic is missing,
# then runs bench/gpu_check.py, which prints one table. --dry proves it on the CPU in a few minutes.
#
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux2014_x86_64 -d .whl pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 \
#     typing-inspection==0.4.5          # once, on a machine with PyPI; the device tool carries .whl/
#   bench/gpu_check.sh                   # on the GPU (carry .whl)
#   bench/gpu_check.sh --dry             # on the CPU
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 -c "import pydantic" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD:$PWD/bench${PYTHONPATH:+:$PYTHONPATH}"
export RAYCOMP_CACHE_DIR="${RAYCOMP_CACHE_DIR:-/tmp/raycomp-cache}"
exec python3 bench/gpu_check.py "$@"
