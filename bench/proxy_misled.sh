#!/usr/bin/env bash
# A real find whose proxy misleads (issue 57): find_cnn with a planted method that helps only on short runs
# (bench/plugins/raycomp_bench_plugins.py, `short_run_only`), searched on a quarter of the run. Confirm at full length
# should find the proxy's recipe not faster, say so, and confirm that recipe without the planted method instead.
#   bench/proxy_misled.sh [--set storage_path=...] [--resume]
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/bench/plugins${PYTHONPATH:+:$PYTHONPATH}" RAYCOMP_PLUGINS=raycomp_bench_plugins
exec python -m raycomp.find experiments/find_cnn.yaml --set name=find_cnn_misled \
    --set 'find.methods=[short_run_only, channels_last, layer_freezing, progressive_resizing]' \
    --set find.proxy.max_duration=0.25dur "$@"
