#!/usr/bin/env bash
# Renders a speed-up report (report.html) in headless Chromium and saves a screenshot of it as a PNG.
#
#   bash scripts/screenshot_report.sh runs/sb/report/report.html docs/img/report.png [WIDTH,HEIGHT]
#
# WIDTH,HEIGHT is the browser window (default 1200,2400); what is below it is cut off. Needs Chromium
# (Debian/Ubuntu: apt-get install -y chromium). Exit codes: 0 written, 1 Chromium failed, 2 bad arguments.
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: $0 REPORT.html OUT.png [WIDTH,HEIGHT]" >&2
    exit 2
fi
html=$1
out=$2
size=${3:-1200,2400}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
    echo "error: Chromium not found (apt-get install -y chromium)" >&2
    exit 2
fi
if [ ! -f "$html" ]; then
    echo "error: no such file: $html" >&2
    exit 2
fi
mkdir -p "$(dirname "$out")"
out_abs=$(realpath -m "$out")
profile=$(mktemp -d)  # a profile of its own: runs side by side do not share a lock
trap 'rm -rf "$profile"' EXIT
rm -f "$out_abs"
# --no-sandbox: Chromium refuses to run as root (CI containers) with its sandbox on.
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --user-data-dir="$profile" --window-size="$size" --screenshot="$out_abs" \
    "file://$(realpath "$html")" >/dev/null 2>&1 || true
if [ ! -s "$out_abs" ]; then
    echo "error: Chromium wrote no screenshot to $out" >&2
    exit 1
fi
echo "screenshot: $out"
