#!/usr/bin/env bash
# Wall time of `gloowatch preflight` over N real gloowatchd daemons on
# loopback (each with its transport process; no probing peers, so the
# preflight's mesh is all the Gloo work): N*(N-1)/2 real Gloo pairs, every
# pair connected and one message each way, plus the store check (a listener
# on 127.0.0.1). Median of several runs, checked: verdict go, every pair ok.
# Also the daemons' memory (RSS of daemon + transport, summed and per node).
#
#   bash bench/preflight.sh [BUILD_DIR]
# Env: PF_SIZES (default "16 64"; add 256 on a machine with ~8 GiB free),
#      PF_RUNS (default 5), PF_BASE_PORT (default 41000; uses BASE-1 .. BASE+2N),
#      PF_TIMEOUT (default 10s: the job timeout given to preflight),
#      PF_DEADLINE (default 10s: --deadline, the bound of each Resolve call),
#      PF_SETTLE (default 2: seconds to wait after every daemon listens, for
#      the start-up of N daemons and their transports to finish).
# Target: 64 hosts in < 10 s.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
client=$build/client/gloowatch
daemon=$build/gloowatchd
for b in "$client" "$daemon"; do
  [ -x "$b" ] || { echo "preflight bench: $b not built" >&2; exit 1; }
done
sizes=${PF_SIZES:-16 64}
runs=${PF_RUNS:-5}
base=${PF_BASE_PORT:-41000}
timeout=${PF_TIMEOUT:-10s}
deadline=${PF_DEADLINE:-10s}
settle=${PF_SETTLE:-2}

work=$(mktemp -d)
pids=()
store=""
stop_daemons() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
cleanup() {
  stop_daemons
  [ -n "$store" ] && kill "$store" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The job's store: a listener that accepts and closes.
store_port=$((base - 1))
python3 -c "
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $store_port)); s.listen(1024)
while True: s.accept()[0].close()" &
store=$!

echo "gloowatch preflight: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
echo "median of $runs runs of: gloowatch preflight --daemons <N> --master 127.0.0.1:$store_port --timeout $timeout --deadline $deadline --json"
echo
printf '%6s %8s %12s %12s %14s %14s %-6s %s\n' N pairs "median s" "max s" "RSS MiB total" "MiB per node" target check
for n in $sizes; do
  in_use=$(ss -Htln | awk '{print $4}' | sed 's/^\[::ffff:\(.*\)\]/\1/' | sed -n 's/^127\.0\.0\.1://p' |
    awk -v lo="$base" -v hi=$((base + 2 * n)) '$1 >= lo && $1 < hi' | head -1)
  [ -z "$in_use" ] || { echo "preflight bench: port $in_use is in use; set PF_BASE_PORT" >&2; exit 1; }
  for ((i = 0; i < n; i++)); do
    grpc=$((base + i))
    metrics=$((base + n + i))
    printf 'node: n%d\ngrpc_listen: 127.0.0.1:%d\nmetrics_listen: 127.0.0.1:%d\ngloo: {address: 127.0.0.1, timeout: 5s}\npeers: []\n' \
      "$i" "$grpc" "$metrics" > "$work/n$i.yaml"
    "$daemon" --config "$work/n$i.yaml" 2> "$work/n$i.log" &
    pids+=($!)
  done
  daemons=$(seq "$base" $((base + n - 1)) | sed 's/^/127.0.0.1:/' | paste -sd,)
  # Ready when every daemon listens (start-up on 2 cores takes a while).
  for ((w = 0; w < 600; w++)); do
    up=$(ss -Htln | awk '{print $4}' | sed 's/^\[::ffff:\(.*\)\]/\1/' |
      grep -c -E "^127\.0\.0\.1:($(seq -s'|' "$base" $((base + n - 1))))$" || true)
    [ "$up" -ge "$n" ] && break
    sleep 0.2
  done
  [ "$up" -ge "$n" ] || { echo "preflight bench: only $up of $n daemons listen" >&2; tail -3 "$work/n0.log" >&2; exit 1; }
  sleep "$settle"
  rss_kib=0
  for p in "${pids[@]}"; do
    for q in "$p" $(pgrep -P "$p" || true); do
      r=$(awk '/VmRSS/ {print $2}' "/proc/$q/status" 2>/dev/null || echo 0)
      rss_kib=$((rss_kib + r))
    done
  done
  times=()
  code=0
  for ((r = 0; r < runs; r++)); do
    t0=$(date +%s%N)
    set +e
    "$client" preflight --daemons "$daemons" --master "127.0.0.1:$store_port" --timeout "$timeout" \
      --deadline "$deadline" --json > "$work/pf.json" 2> "$work/pf.err"
    code=$?
    set -e
    t1=$(date +%s%N)
    times+=($(((t1 - t0) / 1000000)))
    [ "$code" = 0 ] || break
  done
  check=$(python3 - "$work/pf.json" "$n" "$code" <<'PY'
import json, sys
path, n, code = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
try:
    j = json.load(open(path))
except Exception as e:
    print(f"BAD(no JSON: {e})"); sys.exit()
problems = []
if j["verdict"] != "go" or code != 0: problems.append(f"verdict {j['verdict']} exit {code}")
pairs = j["pairs"]
if len(pairs) != n * (n - 1) // 2: problems.append(f"{len(pairs)} pairs")
bad = [p for p in pairs if not p["ok"]]
if bad: problems.append(f"{len(bad)} failed pairs, e.g. {bad[0]['message'][:120]}")
errors = sorted({h["error"][:160] for h in j["hosts"] if h.get("error")})
if errors: problems.append(f"{sum(1 for h in j['hosts'] if h.get('error'))} hosts failed: " + " | ".join(errors[:3]))
if any(not h.get("store", {}).get("ok") for h in j["hosts"]): problems.append("store check failed")
print("ok" if not problems else "BAD(" + "; ".join(problems) + ")")
PY
)
  sorted=($(printf '%s\n' "${times[@]}" | sort -n))
  median=${sorted[$(((${#sorted[@]} - 1) / 2))]}
  max=${sorted[$((${#sorted[@]} - 1))]}
  # The target: 64 hosts in under 10 s (median), every pair connected.
  target="-"
  if [ "$n" = 64 ]; then
    if [ "$check" = ok ] && [ "$median" -lt 10000 ]; then target=met; else target=SHORT; fi
  fi
  printf '%6d %8d %12.2f %12.2f %14.0f %14.1f %-6s %s\n' "$n" $((n * (n - 1) / 2)) \
    "$(echo "$median / 1000" | bc -l)" "$(echo "$max / 1000" | bc -l)" \
    "$(echo "$rss_kib / 1024" | bc -l)" "$(echo "$rss_kib / 1024 / $n" | bc -l)" "$target" "$check"
  [ "$check" = ok ] || { cat "$work/pf.err" >&2; tail -5 "$work/n0.log" >&2; }
  stop_daemons
  sleep 1
done
