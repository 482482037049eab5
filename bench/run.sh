#!/usr/bin/env bash
# Runs every gloowatch benchmark and prints their tables, then one summary of
# each figure against its target ("met" or "SHORT"). Needs root for the
# network-namespace parts; takes the build directory (default: build).
# Usage: bash bench/run.sh [BUILD_DIR]
# BENCH_QUICK=1 skips the four that take minutes each (accuracy, overhead,
# dashboard, faults: the fault catalogue alone takes about half an hour), as
# CI does; run them by hand.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
for bin in gloowatchd client/gloowatch bench/topology_sim bench/status_loadgen bench/explain_log_bench bench/localise_bench bench/job_sockets_bench bench/html_page_bench; do
  [ -x "$build/$bin" ] || { echo "bench: $build/$bin is missing: build first (cmake --build $build -j2)"; exit 1; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)," \
  "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), kernel $(uname -r)"
status=0
slow="accuracy overhead dashboard faults"
run() {
  local name=$1
  shift
  echo
  echo "== $name"
  if [ "${BENCH_QUICK:-0}" = 1 ] && [[ " $slow " == *" $name "* ]]; then
    echo "bench: $name skipped (BENCH_QUICK=1)"
    return
  fi
  local started=$SECONDS
  "$@" 2>&1 | tee "$out/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "($name took $((SECONDS - started)) s)"
  [ "$rc" -eq 0 ] || { echo "bench: $name exited $rc"; status=1; }
}
if [ -x "$build/bench/accuracy_bench" ]; then
  run accuracy "$build/bench/accuracy_bench" --build_dir="$build"
else
  echo
  echo "== accuracy"
  echo "bench: accuracy not run: $build/bench/accuracy_bench is built with the tests (GLOOWATCH_BUILD_TESTS=ON)"
fi
# Built with the tests, like accuracy: they start their daemons through the
# test support's LoopbackCluster (the fault catalogue: its netns beds).
for name in overhead aggregation preflight faults; do
  if [ "$name" = aggregation ]; then
    run aggregation bash bench/aggregation.sh "$build"
  elif [ "$name" = faults ] && [ -x "$build/bench/fault_catalogue_bench" ]; then
    run faults "$build/bench/fault_catalogue_bench" --build_dir="$build"
  elif [ -x "$build/bench/${name}_bench" ]; then
    run "$name" "$build/bench/${name}_bench" --build_dir="$build"
  else
    echo
    echo "== $name"
    echo "bench: $name not run: $build/bench/${name}_bench is built with the tests (GLOOWATCH_BUILD_TESTS=ON)"
  fi
done
run topology "$build/bench/topology_sim"
run explain_log "$build/bench/explain_log_bench"
run localise "$build/bench/localise_bench"
run job_sockets "$build/bench/job_sockets_bench"
run html_page bash bench/html_page.sh "$build"
run reporter /usr/bin/python3 bench/reporter_overhead.py "$build"
run dashboard bash bench/dashboard.sh

echo
echo "== summary: every figure with a target"
cat "$out"/*.log | grep -E '(^|[^[:alnum:]])(met|SHORT)([^[:alnum:]]|$)' || true
short=$(cat "$out"/*.log | grep -cE '(^|[^[:alnum:]])SHORT([^[:alnum:]]|$)')
echo "figures short of their target: $short"
exit "$status"
