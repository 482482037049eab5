#!/usr/bin/env bash
# The heatmap page at 256 nodes (bench/html_page_bench: a synthetic full-mesh
# report with every colour band, 2 nodes down, pending figures): its size,
# the time to render it, and the time Debian's headless Chromium takes to
# load and lay it out from file:// (--dump-dom waits for the load event),
# against the same Chromium on an empty page. Also a screenshot, to look at.
#
#   bash bench/html_page.sh [BUILD_DIR]
# Env: PAGE_NODES (default 256), PAGE_RUNS (default 5).
# Target: Chromium shows the 256-node page in < 2 s (wall, median).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
gen=$build/bench/html_page_bench
[ -x "$gen" ] || { echo "html_page: $gen not built (cmake --build $build --target html_page_bench)" >&2; exit 1; }
command -v chromium > /dev/null || { echo "html_page: chromium is missing (apt-get install chromium)" >&2; exit 1; }
nodes=${PAGE_NODES:-256}
runs=${PAGE_RUNS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# As the tests run it (tests/support/chromium.cc): headless, root, a fresh
# profile, no background services, no name resolution, a dead loopback
# proxy: it loads files only and reaches no address.
chrome() {
  chromium --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --user-data-dir="$work/profile" --no-first-run --no-default-browser-check \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-extensions --disable-default-apps --disable-breakpad \
    --proxy-server=http://127.0.0.1:9 '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1' \
    "$@" 2> /dev/null
}
# Median wall time (ms) of `chrome --dump-dom URL`; the DOM of the last run in $work/dom.
median_ms() {
  local url=$1 times=()
  for ((r = 0; r < runs; r++)); do
    local t0 t1
    t0=$(date +%s%N)
    timeout 60 bash -c "$(declare -f chrome); work=$work; chrome --dump-dom '$url'" > "$work/dom"
    t1=$(date +%s%N)
    times+=($(((t1 - t0) / 1000000)))
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n "$((runs / 2 + 1))p"
}

echo "heatmap page: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(chromium --version 2> /dev/null | head -1)"
"$gen" --nodes "$nodes" --out "$work/page.html"
echo '<!DOCTYPE html><title>empty</title>' > "$work/empty.html"
chrome --dump-dom "file://$work/empty.html" > /dev/null || true  # the profile's first start
empty=$(median_ms "file://$work/empty.html")
page=$(median_ms "file://$work/page.html")
rows=$(grep -o "<tr [^>]*data-node=\"gpu-node-[0-9]*\"" "$work/dom" | sort -u | wc -l || true)
timeout 60 bash -c "$(declare -f chrome); work=$work; chrome --screenshot=$work/page.png --window-size=1400,1600 file://$work/page.html" > /dev/null || true
mkdir -p "$build/bench" && cp "$work/page.png" "$build/bench/html_page_${nodes}.png" 2> /dev/null || true
echo "chromium median of $runs: empty page $empty ms, $nodes-node page $page ms (page work $((page - empty)) ms)"
echo "node rows in the DOM Chromium built: $rows of $nodes"
echo "screenshot: $build/bench/html_page_${nodes}.png"
if [ "$rows" -ne "$nodes" ]; then
  echo "html_page: Chromium's DOM lacks rows" >&2
  exit 1
fi
if [ "$page" -lt 2000 ]; then
  echo "$nodes-node page shown by Chromium in $page ms (target < 2 s): met"
else
  echo "$nodes-node page shown by Chromium in $page ms (target < 2 s): SHORT"
fi
