#!/usr/bin/env bash
# Demo: installs what building and running needs (not the tests'
# packages), builds, starts three gloowatchd daemons on loopback that probe
# each other over Gloo pairs, then shows the cluster as `gloowatch health`
# sees it, plus a few of the Prometheus metrics.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --build-only
# Its own build directory: the demo must not leave build/ configured without
# tests for the README's test command.
cmake -S . -B build-demo -DGLOOWATCH_BUILD_TESTS=OFF >/dev/null
cmake --build build-demo -j2 --target gloowatchd gloowatch

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

names=(node-a node-b node-c)
grpc_port() { echo $((17601 + $1)); }
metrics_port() { echo $((19601 + $1)); }
for i in 0 1 2; do
  {
    echo "node: ${names[$i]}"
    echo "grpc_listen: 127.0.0.1:$(grpc_port "$i")"
    echo "metrics_listen: 127.0.0.1:$(metrics_port "$i")"
    echo "gloo: {address: 127.0.0.1, timeout: 2s}"
    # No bandwidth budget: the demo wants every figure within seconds.
    echo "schedule: {latency_interval: 1s, skew_interval: 2s, bandwidth_interval: 10s, bandwidth_budget: 1}"
    echo "peers:"
    for j in 0 1 2; do
      [ "$i" = "$j" ] && continue
      echo "  - {name: ${names[$j]}, grpc: 127.0.0.1:$(grpc_port "$j")}"
    done
  } > "$work/${names[$i]}.yaml"
  build-demo/gloowatchd --config "$work/${names[$i]}.yaml" 2> "$work/${names[$i]}.log" &
  pids+=($!)
done

echo "three daemons started; measuring for 8 seconds..."
sleep 8
daemons="127.0.0.1:$(grpc_port 0),127.0.0.1:$(grpc_port 1),127.0.0.1:$(grpc_port 2)"
set +e
build-demo/client/gloowatch health --daemons "$daemons"
verdict=$?
set -e
echo
echo "a few metrics of node-a (http://127.0.0.1:$(metrics_port 0)/metrics):"
exec 3<>"/dev/tcp/127.0.0.1/$(metrics_port 0)"
printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
grep -E '^gloowatch_peer_(up|rtt_p50_seconds|bandwidth_bytes_per_second|clock_offset_seconds)' <&3 || true
exec 3>&-
echo
echo "gloowatch health exit code: $verdict (0 healthy, 1 degraded, 2 failed)"
