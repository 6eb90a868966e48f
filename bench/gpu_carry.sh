#!/usr/bin/env bash
# What a lent GPU machine lacks for raycomp, packed small enough for the device tool to carry (.whl/, ignored by
# git; the whole working tree that travels may hold 64 MiB). That machine has torch, pandas, pyarrow, grpcio,
# protobuf and the rest of Ray's needs, but no pydantic, no jsonschema and no Ray, and reaches no package index.
#
# Ray's wheel is 79 MB; 32 MB of it is the Java workers' jar. Without the jar, the dashboard's web client, RLlib,
# Serve, Ray's LLM library and the C++ API (none of which a Tune sweep or a Train run loads), Ray's installed tree
# packs into ~25 MB with xz. bench/gpu_check.sh unpacks it into /tmp/site beside the wheels, so the card runs
# real Ray Tune sweeps and finds (issue 58, item 4).
#
#   bench/gpu_carry.sh                     # once, here (PyPI reachable): .whl/ for the card's Python 3.12
#   bench/gpu_carry.sh 3.11 /tmp/carry311  # the same for this machine's Python, to try it here (README of bench/)
set -euo pipefail
cd "$(dirname "$0")/.."
python_version="${1:-3.12}"
out="${2:-.whl}"
tag="cp${python_version/./}"
mkdir -p "$out"
download() {
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$python_version" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$out" "$@"
}
# pydantic (raycomp's config) and jsonschema (Ray's runtime_env checks), at this repository's tested versions
download pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
  jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1

packed="$out/ray-2.60.0-$tag-trimmed.tar.xz"
if [ ! -s "$packed" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  download --dest "$work" ray==2.60.0
  mkdir "$work/site"
  unzip -q "$work"/ray-2.60.0-*.whl -d "$work/site"  # unzip, unlike python's zipfile, keeps the executable bits
  rm -rf "$work"/site/ray/{jars,cpp,rllib,serve,llm} "$work/site/ray/dashboard/client/build"
  tar -C "$work/site" -cf - . | xz -9 -T0 >"$packed.partial"
  mv "$packed.partial" "$packed"
fi
du -sh "$out"
