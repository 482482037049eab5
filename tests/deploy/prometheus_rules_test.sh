#!/usr/bin/env bash
# promtool: the alert rules parse, their unit tests pass (every alert firing
# and not firing; a single and a rolling restart of 8 nodes raising nothing
# but the down node's GloowatchDaemonDown), the example Prometheus config and
# file_sd targets are valid; plus structural checks of rules, runbooks and
# dashboard.
# Usage: prometheus_rules_test.sh SOURCE_DIR
set -euo pipefail
src=$1
command -v promtool >/dev/null || { echo "SKIP: promtool not installed (package prometheus)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gloowatch-promtool-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prom=$src/deploy/prometheus

promtool check rules "$prom/gloowatch-alerts.yml" "$prom/gloowatch-records.yml"
promtool test rules "$prom/tests/gloowatch-alerts.test.yml"
python3 "$src/tests/deploy/generate_restart_tests.py" --check
promtool test rules "$prom/tests/gloowatch-restarts.test.yml"

# The example config names the paths it will have once installed; check a
# copy that points at the files in the source tree instead.
mkdir -p "$tmp/targets"
cp "$prom/targets/gloowatch.json" "$tmp/targets/"
sed -e "s#/etc/prometheus/gloowatch-\([a-z]*\).yml#$prom/gloowatch-\1.yml#" \
    -e "s#/etc/prometheus/targets/#$tmp/targets/#" \
    "$prom/prometheus.yml" > "$tmp/prometheus.yml"
promtool check config "$tmp/prometheus.yml"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$prom/targets/gloowatch.json"

python3 "$src/tests/deploy/check_monitoring_files.py" "$src"
