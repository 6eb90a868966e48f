#!/usr/bin/env bash
# Issue 24's GPU check, one command on a lent GPU machine (no pydantic, Ray or MLflow there; see
# /work/shared/notes/gpu-notes.md): installs what bench/gpu_carry.sh packed into .whl/ (pydantic, jsonschema and a
# trimmed Ray) where it is missing, then runs bench/gpu_check.py, which prints one table. The Ray parts run with
# tracking off, so they need no MLflow. --dry proves it on the CPU in a few minutes.
#
#   bench/gpu_carry.sh                   # once, on a machine with PyPI: .whl/ for the card's Python 3.12
#   bench/gpu_check.sh                   # on the GPU (the device tool's carry: [".whl"])
#   bench/gpu_check.sh --dry             # on the CPU
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 -c "import pydantic, jsonschema" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
ray_packed=".whl/ray-2.60.0-$(python3 -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')-trimmed.tar.xz"
if ! python3 -c "import ray" 2>/dev/null && [ -s "$ray_packed" ]; then
  # Python's own tarfile and lzma: the card may have no xz for tar -J (~5 s)
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall("/tmp/site", filter="tar")' "$ray_packed"
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD:$PWD/bench${PYTHONPATH:+:$PYTHONPATH}"
export RAYCOMP_CACHE_DIR="${RAYCOMP_CACHE_DIR:-/tmp/raycomp-cache}"
exec python3 bench/gpu_check.py "$@"
