#!/usr/bin/env bash
# What one gloowatchd costs its host while probing 31 peers at the default
# schedules: CPU (user+sys) of the daemon and of its transport child, resident
# memory, threads, file descriptors, and the share of link time the bandwidth
# probes took. 32 daemons on loopback, started and stopped by this script.
#
#   bash bench/overhead.sh [BUILD_DIR]
# Env: OVERHEAD_SECONDS (measurement, default 180), OVERHEAD_WARMUP (default 20),
#      OVERHEAD_SLOPE=0 skips the 8- and 16-peer runs (fds/threads slope),
#      OVERHEAD_BASE_PORT (default 23000; uses BASE .. BASE+2*32).
# Targets: < 1% of one core, RSS < 64 MiB (daemon + transport), fds O(peers).
# A figure that misses its target is printed with SHORT and the reason.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bin=$build/gloowatchd
[ -x "$bin" ] || { echo "overhead: $bin not built (cmake --build $build --target gloowatchd)" >&2; exit 1; }
measure_s=${OVERHEAD_SECONDS:-180}
warmup_s=${OVERHEAD_WARMUP:-20}
slope=${OVERHEAD_SLOPE:-1}
base=${OVERHEAD_BASE_PORT:-23000}
hz=$(getconf CLK_TCK)

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_free() { ! ss -Htln "sport = :$1" | grep -q .; }

# start_cluster N: N daemons, full mesh, default schedules and probe sizes.
start_cluster() {
  local n=$1 i j
  for ((i = 0; i < 2 * n; i++)); do
    port_free $((base + i)) || { echo "overhead: port $((base + i)) is in use; set OVERHEAD_BASE_PORT" >&2; exit 1; }
  done
  for ((i = 0; i < n; i++)); do
    {
      echo "node: n$i"
      echo "grpc_listen: 127.0.0.1:$((base + i))"
      echo "metrics_listen: 127.0.0.1:$((base + n + i))"
      echo "gloo: {address: 127.0.0.1}"
      echo "peers:"
      for ((j = 0; j < n; j++)); do
        [ "$i" = "$j" ] || echo "  - {name: n$j, grpc: 127.0.0.1:$((base + j))}"
      done
    } > "$work/n$i.yaml"
    "$bin" --config "$work/n$i.yaml" 2> "$work/n$i.log" &
    pids+=($!)
  done
}

stop_cluster() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
  sleep 1  # ports back
}

child_of() { pgrep -P "$1" | head -1; }
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }  # utime + stime
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
hwm_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }
anon_kib() { awk '/^RssAnon:/ {print $2}' "/proc/$1/status"; }
age_s() { awk -v hz="$hz" -v up="$(cut -d' ' -f1 /proc/uptime)" '{sub(/.*\) /, ""); print up - $20 / hz}' "/proc/$1/stat"; }
threads() { awk '/^Threads:/ {print $2}' "/proc/$1/status"; }
fds() { ls "/proc/$1/fd" | wc -l; }

metrics_text() {  # the /metrics body of the daemon whose metrics port is $1 (empty when down)
  python3 -c 'import sys, urllib.request
try: sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read().decode())
except Exception: pass' "$1"
}
metric() {  # metric PORT NAME: the value of the first series of NAME
  metrics_text "$1" | awk -v n="$2" '$1 == n || index($1, n "{") == 1 {print $2; exit}'
}
peers_up() {  # how many peers the daemon with metrics port $1 reports up
  metrics_text "$1" | awk '/^gloowatch_peer_up\{/ && $2 == 1 {n++} END {print n + 0}'
}

wait_up() {  # wait_up N TIMEOUT_S: node 0 sees all N-1 peers up
  local n=$1 deadline=$((SECONDS + $2))
  while ((SECONDS < deadline)); do
    [ "$(peers_up $((base + n)))" -ge $((n - 1)) ] && return 0
    sleep 1
  done
  echo "overhead: node 0 sees $(peers_up $((base + n))) of $((n - 1)) peers up after $2 s" >&2
  return 1
}

echo "gloowatchd overhead: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"

# --- fds and threads vs peers -------------------------------------------------
if [ "$slope" = 1 ]; then
  echo
  printf '%-6s %-24s %-24s %s\n' peers "fds (daemon+transport)" "threads (daemon+transport)" "RSS MiB"
  for n in 9 17; do
    start_cluster $n
    wait_up $n 40 || true
    sleep 5
    d=${pids[0]}
    t=$(child_of "$d")
    printf '%-6s %-24s %-24s %s\n' $((n - 1)) "$(fds "$d")+$(fds "$t")" "$(threads "$d")+$(threads "$t")" \
      "$(awk -v a="$(rss_kib "$d")" -v b="$(rss_kib "$t")" 'BEGIN {printf "%.1f", (a + b) / 1024}')"
    stop_cluster
  done
fi

# --- 31 peers -----------------------------------------------------------------
n=32
start_cluster $n
wait_up $n 60 || true
sleep "$warmup_s"
d=${pids[0]}
t=$(child_of "$d")
[ -n "$t" ] || { echo "overhead: no transport process under $d" >&2; exit 1; }
mport=$((base + n))
c0d=$(cpu_ticks "$d"); c0t=$(cpu_ticks "$t")
b0=$(metric $mport gloowatch_bandwidth_probe_seconds_total)
[ -n "$b0" ] || { echo "overhead: cannot read gloowatch_bandwidth_probe_seconds_total from port $mport" >&2; exit 1; }
start=$(date +%s.%N)
# Sample memory, threads and fds through the window; keep the peaks.
peak_rss=0; peak_fds=0; peak_thr=0
end=$((SECONDS + measure_s))
while ((SECONDS < end)); do
  r=$(( $(rss_kib "$d") + $(rss_kib "$t") )); ((r > peak_rss)) && peak_rss=$r
  f=$(( $(fds "$d") + $(fds "$t") )); ((f > peak_fds)) && peak_fds=$f
  h=$(( $(threads "$d") + $(threads "$t") )); ((h > peak_thr)) && peak_thr=$h
  sleep 2
done
c1d=$(cpu_ticks "$d"); c1t=$(cpu_ticks "$t")
stop=$(date +%s.%N)
b1=$(metric $mport gloowatch_bandwidth_probe_seconds_total)
[ -n "$b1" ] || { echo "overhead: cannot read gloowatch_bandwidth_probe_seconds_total from port $mport" >&2; exit 1; }
t_after=$(child_of "$d")
up=$(peers_up $mport)
restarts=$(metric $mport gloowatch_transport_restarts_total)

if [ "$t_after" != "$t" ]; then
  echo "overhead: the transport process was restarted during the window ($t -> $t_after); CPU of the transport is not comparable" >&2
fi

python3 - "$hz" "$start" "$stop" "$c0d" "$c1d" "$c0t" "$c1t" "$(rss_kib "$d")" "$(rss_kib "$t")" \
  "$(hwm_kib "$d")" "$(hwm_kib "$t")" "$(threads "$d")" "$(threads "$t")" "$(fds "$d")" "$(fds "$t")" \
  "$peak_rss" "$peak_fds" "$peak_thr" "$b0" "$b1" "$up" "$restarts" \
  "$(anon_kib "$d")" "$(anon_kib "$t")" "$(age_s "$d")" <<'EOF'
import sys
a = sys.argv[1:]
hz, start, stop = float(a[0]), float(a[1]), float(a[2])
c0d, c1d, c0t, c1t = (float(x) for x in a[3:7])
rss_d, rss_t, hwm_d, hwm_t = (int(x) / 1024 for x in a[7:11])
thr_d, thr_t, fd_d, fd_t = (int(x) for x in a[11:15])
peak_rss, peak_fds, peak_thr = int(a[15]) / 1024, int(a[16]), int(a[17])
b0, b1 = float(a[18] or 0), float(a[19] or 0)
up, restarts = a[20], a[21]
anon_d, anon_t = (int(x) / 1024 for x in a[22:24])
age = float(a[24])
wall = stop - start
cpu_d = (c1d - c0d) / hz
cpu_t = (c1t - c0t) / hz
per_min = lambda s: s / wall * 60
core = (cpu_d + cpu_t) / wall
print()
print(f"one daemon probing 31 peers at default schedules ({up} up, transport restarts {restarts}), "
      f"{wall:.0f} s window")
print(f"{'':28} {'daemon':>10} {'transport':>10} {'sum':>10}")
print(f"{'CPU s per minute':28} {per_min(cpu_d):10.3f} {per_min(cpu_t):10.3f} {per_min(cpu_d + cpu_t):10.3f}")
print(f"{'RSS MiB (end)':28} {rss_d:10.1f} {rss_t:10.1f} {rss_d + rss_t:10.1f}")
print(f"{'RSS MiB (peak, VmHWM)':28} {hwm_d:10.1f} {hwm_t:10.1f} {hwm_d + hwm_t:10.1f}")
print(f"{'  of which anonymous':28} {anon_d:10.1f} {anon_t:10.1f} {anon_d + anon_t:10.1f}")
# The transport is the same executable: its libraries' pages are the daemon's.
print(f"{'RSS MiB counted once':28} {'':10} {'':10} {rss_d + anon_t:10.1f}  (daemon RSS + transport anonymous)")
print(f"{'threads':28} {thr_d:10d} {thr_t:10d} {thr_d + thr_t:10d}")
print(f"{'file descriptors':28} {fd_d:10d} {fd_t:10d} {fd_d + fd_t:10d}")
print(f"peaks sampled every 2 s (sum): RSS {peak_rss:.1f} MiB, fds {peak_fds}, threads {peak_thr}")
share = (b1 - b0) / wall
since_start = b1 / age
print()
def verdict(ok, why):
    return "ok" if ok else f"SHORT ({why})"
print(f"CPU: {core * 100:.3f}% of one core (target < 1%): "
      + verdict(core < 0.01, f"daemon + transport use more than 1% of one core; {b1 - b0:.2f} s of "
                "the window were bandwidth transfers, which over loopback are memory copies that "
                "cost about their duration in CPU, up to the 1% budget"))
worst = max(rss_d + rss_t, hwm_d + hwm_t)
print(f"RSS: {worst:.1f} MiB at most, daemon + transport (target < 64 MiB): "
      + verdict(worst < 64, "see docs/performance.md for where the memory goes"))
print(f"fds: {fd_d + fd_t} for 31 peers ({(fd_d + fd_t) / 31:.1f} per peer): O(peers), see the slope above")
print(f"bandwidth probes: {b1 - b0:.3f} s in transfers in the {wall:.0f} s window = {share * 100:.3f}% of link time; "
      f"since start {b1:.3f} s in {age:.0f} s = {since_start * 100:.3f}% (budget schedule.bandwidth_budget, default 1%)")
print("  a transfer of d seconds closes the node's gate for d / budget (100 d at 1%): on a loopback shared by")
print("  32 daemons transfers are slow, so a short window can fall entirely inside one closure.")
print("  budget: " + verdict(since_start <= 0.01 * 1.1 or share <= 0.01 * 1.1, "over the 1% budget (10% tolerance)"))
EOF
