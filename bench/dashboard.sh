#!/usr/bin/env bash
# How fast the Grafana dashboard's queries answer at 1,000 nodes: backfills a
# real Prometheus (on loopback, temporary tsdb) with 1,000 daemons' series,
# each probing 45 peers (the bounded topology's size), and times every panel
# and variable query of deploy/grafana/gloowatch-dashboard.json with the
# variables at their defaults (median of 3). Target: the slowest < 1 s.
#
#   bash bench/dashboard.sh
# Env: DASH_NODES (default 1000), DASH_PEERS (default 45), DASH_SAMPLES
#      (default 16: 15 minutes of 1-minute scrapes), DASH_RUNS (default 3).
# Needs about 8 GB of memory at the defaults (promtool and Prometheus).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "dashboard queries: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
exec python3 tests/deploy/dashboard_queries_test.py "$PWD" \
  --nodes "${DASH_NODES:-1000}" --peers "${DASH_PEERS:-45}" --samples "${DASH_SAMPLES:-16}" \
  --runs "${DASH_RUNS:-3}" --target-seconds 1
