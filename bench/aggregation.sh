#!/usr/bin/env bash
# How `gloowatch health` scales with the number of daemons: 16, 64 and 256
# simulated nodes served by bench/status_loadgen (the real Status gRPC API,
# one port per node on 127.0.0.1; full mesh up to 64 nodes, a bounded peer
# set above). Times the real client with --json (median of several runs),
# checks the JSON (every node, every probed pair's latency p50 exactly as the
# load generator defines it, nothing where no pair is probed, a healthy
# verdict), and prints time and time/N.
#
#   bash bench/aggregation.sh [BUILD_DIR]
# Env: AGG_SIZES (default "16 64 256"), AGG_RUNS (default 7),
#      AGG_BASE_PORT (default 24000; uses BASE .. BASE+largest size-1),
#      AGG_FULL_MESH_MAX (default 64: larger clusters report a bounded peer set).
# Target: 256 daemons in < 2 s, time growing linearly with N. A figure that
# misses it is printed with SHORT.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
client=$build/client/gloowatch
loadgen=$build/bench/status_loadgen
for b in "$client" "$loadgen"; do
  [ -x "$b" ] || { echo "aggregation: $b not built (cmake --build $build --target gloowatch status_loadgen)" >&2; exit 1; }
done
sizes=${AGG_SIZES:-16 64 256}
runs=${AGG_RUNS:-7}
base=${AGG_BASE_PORT:-24000}
mesh_max=${AGG_FULL_MESH_MAX:-64}

work=$(mktemp -d)
lg=""
cleanup() {
  [ -n "$lg" ] && kill "$lg" 2>/dev/null && wait "$lg" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "gloowatch health aggregation: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
echo "median of $runs runs of: gloowatch health --daemons <N addresses> --json"
echo
printf '%6s %12s %12s %14s %10s %s\n' N "median ms" "min ms" "ms per node" links check
results=()
for n in $sizes; do
  for ((i = 0; i < n; i++)); do
    if ss -Htln "sport = :$((base + i))" | grep -q .; then
      echo "aggregation: port $((base + i)) is in use; set AGG_BASE_PORT" >&2; exit 1
    fi
  done
  : > "$work/loadgen.out"
  "$loadgen" --nodes "$n" --base_port "$base" --full_mesh_max "$mesh_max" > "$work/loadgen.out" 2> "$work/loadgen.err" &
  lg=$!
  for ((w = 0; w < 100; w++)); do
    grep -q ready "$work/loadgen.out" 2>/dev/null && break
    kill -0 "$lg" 2>/dev/null || { cat "$work/loadgen.err" >&2; exit 1; }
    sleep 0.1
  done
  grep -q ready "$work/loadgen.out" || { echo "aggregation: load generator not ready" >&2; exit 1; }
  "$loadgen" --nodes "$n" --base_port "$base" --full_mesh_max "$mesh_max" --print_expected > "$work/expected.txt"
  daemons=$(seq "$base" $((base + n - 1)) | sed 's/^/127.0.0.1:/' | paste -sd,)
  times=()
  for ((r = 0; r < runs; r++)); do
    t0=$(date +%s%N)
    set +e
    "$client" health --daemons "$daemons" --json > "$work/health.json" 2> "$work/health.err"
    code=$?
    set -e
    t1=$(date +%s%N)
    times+=($(((t1 - t0) / 1000)))
  done
  check=$(python3 - "$work/health.json" "$work/expected.txt" "$n" "$code" <<'EOF'
import json, sys
path, expected_path, n, code = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
try:
    j = json.load(open(path))
except Exception as e:
    print(f"BAD(no JSON: {e})"); sys.exit()
problems = []
names = j["node_names"]
if len(names) != n: problems.append(f"{len(names)} nodes, expected {n}")
if j["verdict"] != "healthy" or code != 0: problems.append(f"verdict {j['verdict']} exit {code}")
if sum(x["reachable"] for x in j["nodes"]) != n: problems.append("unreachable nodes")
idx = {name: i for i, name in enumerate(names)}
m = j["matrices"]["latency_p50_ms"]
probed = set()
for line in open(expected_path):
    a, b, p50 = line.split()
    probed.add((a, b))
    v = m[idx[a]][idx[b]]
    if v is None or abs(v - float(p50)) > 1e-9:
        problems.append(f"{a}->{b} p50 {v}, expected {p50}"); break
extra = sum(1 for a in names for b in names if a != b and (a, b) not in probed
            and m[idx[a]][idx[b]] is not None)
if extra: problems.append(f"{extra} values where no pair is probed")
links = len(j["links"])
if links * 2 != len(probed): problems.append(f"{links} links for {len(probed)} probed pairs")
print(("ok" if not problems else "BAD(" + "; ".join(problems[:3]) + ")") + f" {links}")
EOF
)
  kill "$lg"; wait "$lg" 2>/dev/null || true; lg=""
  sorted=($(printf '%s\n' "${times[@]}" | sort -n))
  median=${sorted[$((runs / 2))]}
  links=${check##* }
  results+=("$n $median")
  awk -v n="$n" -v med="$median" -v min="${sorted[0]}" -v links="$links" -v check="${check% *}" \
    'BEGIN {printf "%6d %12.1f %12.1f %14.3f %10s %s\n", n, med / 1000, min / 1000, med / 1000 / n, links, check}'
  sleep 0.5
done

echo
python3 - "${results[@]}" <<'EOF'
import sys
pts = [tuple(map(int, a.split())) for a in sys.argv[1:]]
by_n = {n: us / 1e6 for n, us in pts}
if 256 in by_n:
    t = by_n[256]
    print(f"256 daemons: {t:.3f} s (target < 2 s): " + ("ok" if t < 2 else "SHORT (slower than 2 s)"))
if len(pts) >= 2:
    (n0, t0), (n1, t1) = pts[-2], pts[-1]
    # Time per node must not grow with N (a fixed start-up cost makes it shrink).
    ratio = (t1 / n1) / (t0 / n0)
    print(f"time per node {n1} vs {n0}: x{ratio:.2f} (linear <= ~1, quadratic ~{n1 / n0:.0f}): "
          + ("ok" if ratio < 1.5 else "SHORT (grows faster than linearly)"))
EOF
