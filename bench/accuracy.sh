#!/usr/bin/env bash
# Accuracy of gloowatch's measurements against the standard tools, side by
# side in one run, on the same paths:
#   bandwidth  vs iperf3 (single stream, same byte count), and vs tbf caps
#   latency    vs sockperf ping-pong over TCP (same message size, RTT)
#   clock      vs the shift libfaketime applies to one daemon
# Paths: loopback (root namespace, 127.0.0.1) and a veth link between two
# network namespaces this script creates (10.x addresses that exist only
# inside them). gloowatch's figures come from real gloowatchd daemons through
# their /metrics, the product's own code path.
#
#   bash bench/accuracy.sh [BUILD_DIR]     (default: build)
#   ACCURACY_ONLY=latency,clock bash bench/accuracy.sh   (a subset of
#   bandwidth, tbf, latency, clock; ACCURACY_DEBUG=1 also logs the raw
#   clock samples)
#
# Needs root for the veth parts (skipped with a message otherwise). Cleans up
# every namespace and process it starts; bounded to 330 s. Prints one table;
# a figure short of its target says SHORT. Targets are fixed, never relaxed.
set -u -o pipefail

BUILD=${1:-build}
GLOOWATCHD=$BUILD/gloowatchd
SHIFT_PROBE=$BUILD/bench/clock_shift_probe
CLIENT=$BUILD/client/gloowatch
GLOO_PINGPONG=$BUILD/bench/gloo_pingpong
FAKETIME_LIB=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
BUDGET_SECONDS=330

# Workloads (one place, so the docs can quote them).
BIG_BYTES=$((1024 * 1024 * 1024))        # unshaped bandwidth: 1 GiB per transfer
MESSAGE_BYTES=$((4 * 1024 * 1024))       # gloowatch's bulk message (the default)
TBF_RATES=(200mbit 500mbit 1gbit)
LATENCY_BYTES=14                         # sockperf's minimum message size
LATENCY_SECONDS=4
CLOCK_SHIFTS=(-0.25 +0.002 +0.5 +5)      # seconds, libfaketime's relative syntax
CLOCK_ERROR_TARGET_US=100
BW_RATIO_TARGET=0.90
LAT_RATIO_TARGET=1.30
CAP_TOLERANCE=0.10

for tool in "$GLOOWATCHD" "$CLIENT" "$SHIFT_PROBE" "$GLOO_PINGPONG"; do
  if [[ ! -x $tool ]]; then
    echo "accuracy: $tool not found: build it first (cmake --build $BUILD --target gloowatchd gloowatch clock_shift_probe gloo_pingpong)" >&2
    exit 2
  fi
done
for tool in iperf3 sockperf python3; do
  if ! command -v "$tool" > /dev/null; then
    echo "accuracy: $tool is not installed (see scripts/packages.txt)" >&2
    exit 2
  fi
done

WORK=$(mktemp -d -t gwacc.XXXXXX)
PIDS=()
NAMESPACES=()
ROWS=()
NOTES=()

cleanup() {
  local pid ns
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2> /dev/null; done
  sleep 0.2
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2> /dev/null; done
  for ns in "${NAMESPACES[@]}"; do
    # Anything still running inside is ours.
    for pid in $(ip netns pids "$ns" 2> /dev/null); do kill -KILL "$pid" 2> /dev/null; done
    ip netns delete "$ns" 2> /dev/null
  done
  if [[ -n ${WATCHDOG:-} ]]; then
    pkill -TERM -P "$WATCHDOG" 2> /dev/null # its sleep
    kill "$WATCHDOG" 2> /dev/null
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'echo "accuracy: interrupted" >&2; exit 130' INT TERM HUP

# The whole run is bounded: past the budget the watchdog ends it (cleanup runs).
(sleep "$BUDGET_SECONDS" && echo "accuracy: over the ${BUDGET_SECONDS}s budget, stopping" >&2 &&
  kill -TERM $$) 2> /dev/null &
WATCHDOG=$!

log() { echo "accuracy: $*" >&2; }

# Runs a command in namespace $1 ("" = the current one).
in_ns() {
  local ns=$1
  shift
  if [[ -z $ns ]]; then "$@"; else ip netns exec "$ns" "$@"; fi
}

# spawn NS CMD...: starts CMD in the background in namespace NS ("" = here),
# as a direct child (so its pid is the command's), and remembers it for
# cleanup in SPAWNED and PIDS. Redirect the call to send its output somewhere.
spawn() {
  local ns=$1
  shift
  if [[ -z $ns ]]; then
    "$@" &
  else
    ip netns exec "$ns" "$@" &
  fi
  SPAWNED=$!
  PIDS+=("$SPAWNED")
}

forget_pid() {
  local keep=() p
  for p in "${PIDS[@]}"; do [[ $p != "$1" ]] && keep+=("$p"); done
  PIDS=("${keep[@]}")
}

# Stops a process we started: TERM, then KILL after 3 s.
stop_pid() {
  local pid=$1 i
  kill -TERM "$pid" 2> /dev/null
  for i in $(seq 30); do
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2> /dev/null
  wait "$pid" 2> /dev/null
  forget_pid "$pid"
}

# HTTP GET /metrics from inside a namespace, without curl.
scrape() { # ns host port
  in_ns "$1" timeout 3 bash -c "exec 3<>/dev/tcp/$2/$3 && printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 && cat <&3" 2> /dev/null
}

# Value of one series (exact label text) in a scrape on stdin.
series() { awk -v s="$1" 'index($0, s" ") == 1 { print $2 }'; }

# Waits until TCP port $3 listens in namespace $1 (at most $2 seconds).
wait_listen() {
  local ns=$1 deadline=$((SECONDS + $2)) port=$3
  while ((SECONDS < deadline)); do
    in_ns "$ns" ss -ltnH "sport = :$port" 2> /dev/null | grep -q . && return 0
    sleep 0.1
  done
  return 1
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# fmt_rate BYTES_PER_SECOND -> "2.31 GB/s" / "23.9 MB/s"
fmt_rate() { awk -v b="$1" 'BEGIN { if (b == "") print "n/a"; else if (b >= 1e9) printf "%.2f GB/s", b / 1e9; else printf "%.1f MB/s", b / 1e6 }'; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print ""; else printf "%.3f", a / b }'; }

# verdict VALUE OP TARGET -> met / SHORT (no figure is SHORT too)
verdict() {
  awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN {
    if (v == "") { print "SHORT"; exit }
    ok = (op == ">=") ? (v + 0 >= t + 0) : (v + 0 <= t + 0)
    print ok ? "met" : "SHORT" }'
}

add_row() { ROWS+=("$(printf '%s\t' "$@")"); } # comparison path gloowatch reference ratio target result

# --- paths ---------------------------------------------------------------------

# A path is: namespace and address of side A and of side B.
LO=("" 127.0.0.1 "" 127.0.0.1)
HAVE_VETH=0
VETH_SKIP_REASON=""

pick_loopback_ports() {
  local base tries
  for tries in $(seq 50); do
    base=$((20000 + RANDOM % 20000))
    if ! ss -ltnH | awk '{ print $4 }' | grep -qE ":($base|$((base + 1))|$((base + 2))|$((base + 3))|$((base + 4))|$((base + 5)))$"; then
      echo "$base"
      return
    fi
  done
  echo 0
}
LO_BASE=$(pick_loopback_ports)

setup_veth() {
  if [[ $(id -u) -ne 0 ]]; then
    VETH_SKIP_REASON="not root (the veth parts create network namespaces)"
    return 1
  fi
  for tool in ip tc; do
    command -v "$tool" > /dev/null || {
      VETH_SKIP_REASON="$tool is missing"
      return 1
    }
  done
  # Namespaces of earlier runs that were killed.
  local ns pid
  for ns in $(ip netns list 2> /dev/null | awk '{ print $1 }' | grep -E '^gwacc[0-9]+-[ab]$'); do
    pid=${ns#gwacc}
    pid=${pid%-*}
    kill -0 "$pid" 2> /dev/null || ip netns delete "$ns" 2> /dev/null
  done
  # A 10.x/24 the root namespace does not use (traffic never leaves the two
  # namespaces anyway: they have no other interfaces or routes).
  local x=$((200 + $$ % 50)) y=$((($$ / 50) % 256)) try
  for try in $(seq 20); do
    if ! ip -4 addr show 2> /dev/null | grep -q "inet 10\.$x\.$y\." &&
      ! ip -4 route show 2> /dev/null | grep -q "^10\.$x\.$y\."; then
      break
    fi
    y=$(((y + 1) % 256))
  done
  NS_A=gwacc$$-a
  NS_B=gwacc$$-b
  IP_A=10.$x.$y.1
  IP_B=10.$x.$y.2
  ip netns add "$NS_A" && NAMESPACES+=("$NS_A") &&
    ip netns add "$NS_B" && NAMESPACES+=("$NS_B") &&
    # Created inside A with its peer moved straight into B: never in the root namespace.
    ip -n "$NS_A" link add veth0 type veth peer name veth1 netns "$NS_B" &&
    ip -n "$NS_A" addr add "$IP_A/24" dev veth0 &&
    ip -n "$NS_B" addr add "$IP_B/24" dev veth1 &&
    ip -n "$NS_A" link set lo up && ip -n "$NS_B" link set lo up &&
    ip -n "$NS_A" link set veth0 up && ip -n "$NS_B" link set veth1 up || {
    VETH_SKIP_REASON="could not create the network namespaces / veth link"
    return 1
  }
  VETH=("$NS_A" "$IP_A" "$NS_B" "$IP_B")
  return 0
}

# shape RATE|none: tbf on the egress of both veth ends, so both directions are capped.
shape() {
  local dev ns
  for pair in "$NS_A:veth0" "$NS_B:veth1"; do
    ns=${pair%%:*}
    dev=${pair#*:}
    if [[ $1 == none ]]; then
      ip netns exec "$ns" tc qdisc del dev "$dev" root 2> /dev/null
    else
      ip netns exec "$ns" tc qdisc replace dev "$dev" root tbf rate "$1" burst 256kb latency 50ms || return 1
    fi
  done
}

# --- daemons -------------------------------------------------------------------

# Ports: on loopback both daemons share 127.0.0.1; in namespaces they are alone.
grpc_port() { if [[ $1 == lo ]]; then echo $((LO_BASE + $2)); else echo 7601; fi; }
metrics_port() { if [[ $1 == lo ]]; then echo $((LO_BASE + 2 + $2)); else echo 9601; fi; }

DAEMON_A=""
DAEMON_B=""
# Command prefixes that pin side A's and side B's processes to CPUs (latency).
PIN_A=()
PIN_B=()

# start_pair PATHNAME YAML_EXTRA [ENV_FOR_A...]: daemons "a" (side A) and "b"
# (side B) probing each other; waits until each sees the other up.
start_pair() {
  local path=$1 extra=$2
  shift 2
  local -n p=$path
  [[ $path == LO ]] && local pname=lo || local pname=veth
  local side name ip ns peer_ip gport mport pgport
  for side in 0 1; do
    name=$([[ $side == 0 ]] && echo a || echo b)
    ns=${p[$((side * 2))]}
    ip=${p[$((side * 2 + 1))]}
    peer_ip=${p[$(((1 - side) * 2 + 1))]}
    gport=$(grpc_port "$pname" "$side")
    mport=$(metrics_port "$pname" "$side")
    pgport=$(grpc_port "$pname" $((1 - side)))
    local extra_side=$extra
    [[ $side == 1 ]] && extra_side=${B_EXTRA:-$extra}
    cat > "$WORK/$name.yaml" << EOF
node: $name
grpc_listen: $ip:$gport
metrics_listen: $ip:$mport
gloo:
  address: $ip
  timeout: 5s
$extra_side
peers:
  - name: $([[ $name == a ]] && echo b || echo a)
    grpc: $peer_ip:$pgport
EOF
    if [[ $side == 0 ]]; then
      spawn "$ns" "${PIN_A[@]}" env "$@" "$GLOOWATCHD" --config "$WORK/$name.yaml" > "$WORK/$name.log" 2>&1
      DAEMON_A=$SPAWNED
    else
      spawn "$ns" "${PIN_B[@]}" "$GLOOWATCHD" --config "$WORK/$name.yaml" > "$WORK/$name.log" 2>&1
      DAEMON_B=$SPAWNED
    fi
  done
  local deadline=$((SECONDS + 20)) up_a up_b
  while ((SECONDS < deadline)); do
    up_a=$(scrape "${p[0]}" "${p[1]}" "$(metrics_port "$pname" 0)" | series 'gloowatch_peer_up{node="a",peer="b"}')
    up_b=$(scrape "${p[2]}" "${p[3]}" "$(metrics_port "$pname" 1)" | series 'gloowatch_peer_up{node="b",peer="a"}')
    [[ $up_a == 1 && $up_b == 1 ]] && return 0
    sleep 0.2
  done
  log "daemons on $pname did not come up in 20 s; logs:"
  tail -5 "$WORK/a.log" "$WORK/b.log" >&2
  return 1
}

stop_pair() {
  [[ -n $DAEMON_A ]] && stop_pid "$DAEMON_A"
  [[ -n $DAEMON_B ]] && stop_pid "$DAEMON_B"
  DAEMON_A=""
  DAEMON_B=""
}

# poll_series PATHNAME SECONDS MIN_SAMPLES PATTERN: scrapes both daemons every
# 0.2 s and prints each distinct "series value" line matching PATTERN (gauges
# change once per probe, so distinct values are distinct probes). Stops early
# once MIN_SAMPLES distinct lines were seen.
poll_series() {
  local path=$1 seconds=$2 want=$3 pattern=$4
  local -n p=$path
  [[ $path == LO ]] && local pname=lo || local pname=veth
  local seen="$WORK/seen" deadline=$((SECONDS + seconds))
  : > "$seen"
  while ((SECONDS < deadline)); do
    {
      scrape "${p[0]}" "${p[1]}" "$(metrics_port "$pname" 0)"
      scrape "${p[2]}" "${p[3]}" "$(metrics_port "$pname" 1)"
    } | grep -E "$pattern" >> "$seen"
    sort -u "$seen" -o "$seen"
    (($(wc -l < "$seen") >= want)) && break
    sleep 0.2
  done
  cat "$seen"
}

# poll_clock PATHNAME SECONDS: every 0.2 s asks both daemons (GetStatus, through
# the client) and prints each distinct "viewer offset_ms error_ms" it sees.
poll_clock() {
  local path=$1 seconds=$2
  local -n p=$path
  [[ $path == LO ]] && local pname=lo || local pname=veth
  local seen="$WORK/clock_seen" deadline=$((SECONDS + seconds))
  local daemons="${p[1]}:$(grpc_port "$pname" 0),${p[3]}:$(grpc_port "$pname" 1)"
  : > "$seen"
  while ((SECONDS < deadline)); do
    in_ns "${p[0]}" timeout 5 "$CLIENT" health --json --color=never --daemons "$daemons" 2> /dev/null |
      python3 -c 'import json, sys
try:
    links = json.load(sys.stdin)["links"]
except Exception:
    sys.exit(0)
for link in links:
    for key, viewer in (("a_to_b", link["a"]), ("b_to_a", link["b"])):
        v = link.get(key) or {}
        if v.get("clock_offset_ms") is not None and v.get("clock_error_ms") is not None:
            print(viewer, repr(v["clock_offset_ms"]), repr(v["clock_error_ms"]))' >> "$seen"
    sort -u "$seen" -o "$seen"
    sleep 0.2
  done
  cat "$seen"
}

# --- bandwidth -------------------------------------------------------------------

# iperf3_once PATHNAME BYTES [-R]: receiver-side bytes/s of one single-stream run
# (A is the client; -R makes B send).
iperf3_once() {
  local path=$1 bytes=$2
  shift 2
  local -n p=$path
  local port
  if [[ $path == LO ]]; then port=$((LO_BASE + 5)); else port=5201; fi
  spawn "${p[2]}" iperf3 -s -1 -B "${p[3]}" -p "$port" > /dev/null 2>&1
  local server=$SPAWNED
  if wait_listen "${p[2]}" 5 "$port"; then
    in_ns "${p[0]}" timeout 30 iperf3 -c "${p[3]}" -p "$port" -n "$bytes" "$@" -J 2> /dev/null |
      python3 -c 'import json,sys
try:
    print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 8)
except Exception:
    pass'
  fi
  stop_pid "$server"
}

# bandwidth_case PATHNAME LABEL BYTES SECONDS: iperf3 twice, gloowatch's
# transfers for up to SECONDS, iperf3 twice more (bracketing drift). Sets
# BW_GW and BW_IPERF (medians, bytes/s; empty when nothing was measured).
# Not run in a subshell: the processes it starts must stay known to cleanup.
bandwidth_case() {
  local path=$1 label=$2 bytes=$3 seconds=$4
  local ip_file="$WORK/iperf_$label" gw_file="$WORK/gw_$label"
  : > "$ip_file"
  : > "$gw_file"
  iperf3_once "$path" "$bytes" >> "$ip_file"
  iperf3_once "$path" "$bytes" -R >> "$ip_file"
  local extra
  extra=$(printf 'schedule:\n  latency_interval: 24h\n  skew_interval: 24h\n  bandwidth_interval: 100ms\nprobe:\n  bandwidth_bytes: %d\n  bandwidth_message_bytes: %d\n' "$bytes" "$MESSAGE_BYTES")
  if start_pair "$path" "$extra"; then
    poll_series "$path" "$seconds" 8 '^gloowatch_peer_bandwidth_bytes_per_second' | awk 'NF { print $2 }' > "$gw_file"
  fi
  stop_pair
  iperf3_once "$path" "$bytes" >> "$ip_file"
  iperf3_once "$path" "$bytes" -R >> "$ip_file"
  log "$label: gloowatch transfers (B/s): $(tr '\n' ' ' < "$gw_file")"
  log "$label: iperf3 runs (B/s): $(tr '\n' ' ' < "$ip_file")"
  BW_GW=$(median < "$gw_file")
  BW_IPERF=$(median < "$ip_file")
}

bandwidth_vs_iperf3() {
  local path=$1 pname=$2 gw ip r
  bandwidth_case "$path" "bw_$pname" "$BIG_BYTES" 12
  gw=$BW_GW
  ip=$BW_IPERF
  r=$(ratio "$gw" "$ip")
  add_row "bandwidth 1 GiB, 1 stream" "$pname" "$(fmt_rate "$gw")" "$(fmt_rate "$ip") iperf3" \
    "${r:-n/a}" ">= $BW_RATIO_TARGET" "$(verdict "$r" '>=' "$BW_RATIO_TARGET")"
}

bandwidth_vs_tbf() {
  local rate bits bytes cap gw ip r ri lo hi
  for rate in "${TBF_RATES[@]}"; do
    bits=$(awk -v r="$rate" 'BEGIN { n = r + 0; if (r ~ /gbit$/) n *= 1e9; else if (r ~ /mbit$/) n *= 1e6; print n }')
    cap=$(awk -v b="$bits" 'BEGIN { print b / 8 }')
    # About one second per transfer at the cap, in whole 4 MiB messages.
    bytes=$(awk -v c="$cap" -v m="$MESSAGE_BYTES" 'BEGIN { n = int(c / m + 0.5); if (n < 1) n = 1; print n * m }')
    if ! shape "$rate"; then
      add_row "bandwidth under tbf $rate" veth n/a n/a n/a "cap +-10%" "SHORT (tc tbf failed)"
      continue
    fi
    bandwidth_case VETH "tbf_$rate" "$bytes" 14
    gw=$BW_GW
    ip=$BW_IPERF
    shape none
    r=$(ratio "$gw" "$cap")
    ri=$(ratio "$ip" "$cap")
    lo=$(awk -v t="$CAP_TOLERANCE" 'BEGIN { print 1 - t }')
    hi=$(awk -v t="$CAP_TOLERANCE" 'BEGIN { print 1 + t }')
    local v
    v=$(awk -v r="$r" -v lo="$lo" -v hi="$hi" 'BEGIN { print (r != "" && r >= lo && r <= hi) ? "met" : "SHORT" }')
    add_row "bandwidth under tbf $rate" veth "$(fmt_rate "$gw")" "$(fmt_rate "$cap") cap" "${r:-n/a}" \
      "$lo..$hi of cap" "$v"
    add_row "  (iperf3 under the same cap)" veth "-" "$(fmt_rate "$ip") iperf3" "${ri:-n/a}" \
      "reference" "-"
  done
}

# --- latency ---------------------------------------------------------------------

# latency_case PATHNAME PATH_LABEL CPU_A CPU_B: both tools with side A's
# process on CPU_A and side B's on CPU_B. Placement decides the figure on a
# VM: a wake-up across CPUs costs an inter-processor interrupt, and a halted
# virtual CPU wakes slowly, so the tools are always compared pinned alike.
latency_case() {
  local path=$1 pname=$2 cpu_a=$3 cpu_b=$4
  local -n p=$path
  PIN_A=(taskset -c "$cpu_a")
  PIN_B=(taskset -c "$cpu_b")
  local placement="same CPU"
  [[ $cpu_a != "$cpu_b" ]] && placement="CPUs $cpu_a/$cpu_b"
  local port out sp50 sp99 gw50 gw99
  if [[ $path == LO ]]; then port=$((LO_BASE + 4)); else port=11111; fi
  # sockperf twice, before and after gloowatch (drift on a shared machine
  # moves both); each figure is the mean of the two runs' percentiles.
  sockperf_run() {
    spawn "${p[2]}" "${PIN_B[@]}" sockperf server --tcp -i "${p[3]}" -p "$port" > "$WORK/sockperf_server.log" 2>&1
    local server=$SPAWNED out=""
    if wait_listen "${p[2]}" 5 "$port"; then
      out=$(in_ns "${p[0]}" "${PIN_A[@]}" timeout $((LATENCY_SECONDS + 10)) sockperf ping-pong --tcp -i "${p[3]}" -p "$port" \
        -m "$LATENCY_BYTES" -t "$((LATENCY_SECONDS / 2))" --full-rtt 2>&1 | sed 's/\x1b\[[0-9;]*m//g')
    fi
    stop_pid "$server"
    local q50 q99
    q50=$(awk '/percentile 50.000 =/ { print $NF }' <<< "$out")
    q99=$(awk '/percentile 99.000 =/ { print $NF }' <<< "$out")
    # --full-rtt prints "avg-rtt"; without it sockperf reports RTT/2 ("avg-latency").
    if grep -q 'avg-latency' <<< "$out"; then
      q50=$(awk -v v="$q50" 'BEGIN { if (v != "") print 2 * v }')
      q99=$(awk -v v="$q99" 'BEGIN { if (v != "") print 2 * v }')
    fi
    [[ -n $q50 && -n $q99 ]] && echo "$q50 $q99" >> "$WORK/sockperf_runs"
  }
  : > "$WORK/sockperf_runs"
  sockperf_run
  # gloowatch: A pings B in bursts of 1000 (the most a probe may send) every
  # 100 ms over its command pair, so its threads are nearly as busy as
  # sockperf's; B only answers (its own probes are rare), so the two do not
  # compete. The p50/p99 gauges cover the last 4096 round trips (about 0.5 s):
  # they are read every 0.5 s and the medians of those readings reported.
  local extra b_extra
  extra=$(printf 'schedule:\n  latency_interval: 100ms\n  skew_interval: 24h\n  bandwidth_interval: 24h\nprobe:\n  latency_message_bytes: %d\n  latency_burst: 1000\n  bandwidth_bytes: 4KiB\n  bandwidth_message_bytes: 4KiB\n' "$LATENCY_BYTES")
  b_extra=$(printf 'schedule:\n  latency_interval: 24h\n  skew_interval: 24h\n  bandwidth_interval: 24h\nprobe:\n  latency_message_bytes: %d\n  bandwidth_bytes: 4KiB\n  bandwidth_message_bytes: 4KiB\n' "$LATENCY_BYTES")
  if B_EXTRA=$b_extra start_pair "$path" "$extra"; then
    sleep 1
    local readings="$WORK/latency_readings" deadline=$((SECONDS + LATENCY_SECONDS)) m
    : > "$readings"
    while ((SECONDS < deadline)); do
      m=$(scrape "${p[0]}" "${p[1]}" "$(metrics_port "$pname" 0)")
      echo "$(series 'gloowatch_peer_rtt_p50_seconds{node="a",peer="b"}' <<< "$m") $(series 'gloowatch_peer_rtt_p99_seconds{node="a",peer="b"}' <<< "$m")" >> "$readings"
      sleep 0.5
    done
    gw50=$(awk 'NF == 2 { print $1 * 1e6 }' "$readings" | median)
    gw99=$(awk 'NF == 2 { print $2 * 1e6 }' "$readings" | median)
  fi
  stop_pair
  sockperf_run
  sp50=$(awk '{ s += $1 } END { if (NR) print s / NR }' "$WORK/sockperf_runs")
  sp99=$(awk '{ s += $2 } END { if (NR) print s / NR }' "$WORK/sockperf_runs")
  log "latency $pname, $placement: sockperf runs (p50 p99 us): $(tr '\n' ';' < "$WORK/sockperf_runs")"
  PIN_A=()
  PIN_B=()
  log "latency $pname, $placement: sockperf RTT p50 ${sp50:-n/a} us p99 ${sp99:-n/a} us; gloowatch p50 ${gw50:-n/a} us p99 ${gw99:-n/a} us"
  # The floor: Gloo's sync pair alone (no daemon), back to back as sockperf
  # runs and in gloowatch's bursts (1000 round trips, then ~100 ms idle).
  local gloo_args=(--address "${p[1]}" --bytes "$LATENCY_BYTES" --seconds 3 --cpus "$cpu_a,$cpu_b")
  [[ -n ${p[2]} ]] && gloo_args+=(--responder_address "${p[3]}" --responder_netns "${p[2]}")
  local floor_b2b floor_burst
  floor_b2b=$(in_ns "${p[0]}" timeout 15 "$GLOO_PINGPONG" "${gloo_args[@]}" 2> /dev/null)
  floor_burst=$(in_ns "${p[0]}" timeout 15 "$GLOO_PINGPONG" "${gloo_args[@]}" --burst 1000 --gap_ms 100 2> /dev/null)
  local fb50 fb99 fu50 fu99
  fb50=$(awk '{ print $2 }' <<< "$floor_b2b")
  fb99=$(awk '{ print $4 }' <<< "$floor_b2b")
  fu50=$(awk '{ print $2 }' <<< "$floor_burst")
  fu99=$(awk '{ print $4 }' <<< "$floor_burst")
  log "latency $pname, $placement: Gloo alone back to back p50 ${fb50:-n/a} p99 ${fb99:-n/a} us; in bursts p50 ${fu50:-n/a} p99 ${fu99:-n/a} us"
  local r50 r99
  r50=$(ratio "$gw50" "$sp50")
  r99=$(ratio "$gw99" "$sp99")
  us() { awk -v v="$1" 'BEGIN { if (v == "") print "n/a"; else printf "%.1f us", v }'; }
  add_row "latency p50 RTT, ${LATENCY_BYTES} B, $placement" "$pname" "$(us "$gw50")" "$(us "$sp50") sockperf" "${r50:-n/a}" \
    "<= $LAT_RATIO_TARGET" "$(verdict "$r50" '<=' "$LAT_RATIO_TARGET")"
  add_row "latency p99 RTT, ${LATENCY_BYTES} B, $placement" "$pname" "$(us "$gw99")" "$(us "$sp99") sockperf" "${r99:-n/a}" \
    "(none)" "-"
  add_row "  (Gloo pair alone, back to back)" "$pname" "-" "$(us "$fb50") p50, $(us "$fb99") p99" \
    "$(ratio "$fb50" "$sp50")" "reference" "-"
  add_row "  (Gloo pair alone, in bursts)" "$pname" "-" "$(us "$fu50") p50, $(us "$fu99") p99" \
    "$(ratio "$fu50" "$sp50")" "reference" "-"
}

# --- clock offset ----------------------------------------------------------------

clock_case() {
  local path=$1 pname=$2 shift_s=$3
  local -n p=$path
  local env=(LD_PRELOAD="$FAKETIME_LIB" FAKETIME="$shift_s" FAKETIME_DONT_FAKE_MONOTONIC=1 FAKETIME_NO_CACHE=1)
  # Reference: the shift asked for; clock_shift_probe checks libfaketime applies
  # exactly that to absl::Now (the daemon's wall clock) and leaves CLOCK_MONOTONIC alone.
  local probe true_ns mono_ns applied_ns
  true_ns=$(awk -v s="$shift_s" 'BEGIN { printf "%.0f", s * 1e9 }')
  probe=$(in_ns "${p[0]}" env "${env[@]}" "$SHIFT_PROBE")
  applied_ns=$(awk '$1 == "absl_now" { print $2 }' <<< "$probe")
  mono_ns=$(awk '$1 == "monotonic" { print $2 }' <<< "$probe")
  NOTES+=("faketime $shift_s on $pname: absl::Now shifted by $applied_ns ns, CLOCK_REALTIME by $(awk '$1 == "realtime" { print $2 }' <<< "$probe") ns, CLOCK_MONOTONIC by $mono_ns ns (clock_shift_probe)")
  local extra
  extra=$(printf 'schedule:\n  latency_interval: 24h\n  skew_interval: 100ms\n  bandwidth_interval: 24h\nprobe:\n  bandwidth_bytes: 4KiB\n  bandwidth_message_bytes: 4KiB\n')
  local samples=""
  if start_pair "$path" "$extra" "${env[@]}"; then
    samples=$(poll_clock "$path" 3)
  fi
  [[ -n ${ACCURACY_DEBUG:-} ]] && log "clock samples: $samples"
  stop_pair
  # Each sample: "viewer offset_ms error_ms" from one GetStatus (so offset and
  # bound belong to the same probe). a runs under faketime: a sees b at -shift,
  # b sees a at +shift.
  local judged worst_us inside total last
  judged=$(awk -v t="$true_ns" '
    { expect = ($1 == "a") ? -t / 1e6 : t / 1e6; e = $2 - expect; if (e < 0) e = -e
      if (e > worst) worst = e; total++; if (e <= $3 + 1e-6) inside++
      if ($1 == "b") { last = $2; if ($3 > maxb) maxb = $3 } }
    END { printf "%s %d %d %s %s\n", (total ? worst * 1e3 : ""), inside, total, last, (maxb == "" ? "" : maxb * 1e3) }' <<< "$samples")
  local bound_us
  read -r worst_us inside total last bound_us <<< "$judged"
  log "clock $shift_s on $pname: $total offsets, worst |error| ${worst_us:-n/a} us, $inside within their bound"
  local v="SHORT"
  if [[ -n $worst_us && $total -gt 0 && $inside -eq $total ]] &&
    awk -v w="$worst_us" -v t="$CLOCK_ERROR_TARGET_US" 'BEGIN { exit !(w < t) }' &&
    awk -v m="$mono_ns" -v a="$applied_ns" -v t="$true_ns" \
      'BEGIN { d = a - t; exit !(m != "" && a != "" && m < 1000 && m > -1000 && d < 1000 && d > -1000) }'; then
    v=met
  fi
  add_row "clock offset, faketime $shift_s s" "$pname" \
    "$(awk -v v="$last" 'BEGIN { if (v == "") print "n/a"; else printf "%.4f ms", v }')" \
    "$(awk -v v="$true_ns" 'BEGIN { printf "%.4f ms shift", v / 1e6 }')" \
    "$(awk -v v="$worst_us" 'BEGIN { if (v == "") print "n/a"; else printf "|err| %.1f us", v }')" \
    "< ${CLOCK_ERROR_TARGET_US} us, in bound" "$v ($inside/$total in bound, bound <= ${bound_us:-?} us)"
}

# --- run -----------------------------------------------------------------------

START=$SECONDS
log "build dir $BUILD, loopback ports $LO_BASE..$((LO_BASE + 5)), load: $(cut -d' ' -f1-3 /proc/loadavg)"
if setup_veth; then
  HAVE_VETH=1
  log "veth: $NS_A ($IP_A, veth0) <-> $NS_B ($IP_B, veth1)"
else
  log "$VETH_SKIP_REASON"
fi

ONLY=${ACCURACY_ONLY:-bandwidth,tbf,latency,clock}
want() { [[ ,$ONLY, == *,$1,* ]]; }

paths=(LO:lo)
((HAVE_VETH)) && paths+=(VETH:veth)

if want bandwidth; then
  for entry in "${paths[@]}"; do bandwidth_vs_iperf3 "${entry%%:*}" "${entry#*:}"; done
fi
if ! want tbf; then
  :
elif ((HAVE_VETH)); then
  bandwidth_vs_tbf
else
  add_row "bandwidth under tbf" veth - - - "cap +-10%" "skipped: $VETH_SKIP_REASON"
fi
if want latency; then
  # Both ends on one CPU, then (with two or more) on two different CPUs.
  placements=("0 0")
  (($(nproc) > 1)) && placements+=("0 1")
  for entry in "${paths[@]}"; do
    for cpus in "${placements[@]}"; do
      read -r cpu_a cpu_b <<< "$cpus"
      latency_case "${entry%%:*}" "${entry#*:}" "$cpu_a" "$cpu_b"
    done
  done
fi
if ! want clock; then
  :
elif [[ -r $FAKETIME_LIB ]]; then
  for entry in "${paths[@]}"; do
    for s in "${CLOCK_SHIFTS[@]}"; do clock_case "${entry%%:*}" "${entry#*:}" "$s"; done
  done
else
  add_row "clock offset" any - - - "< ${CLOCK_ERROR_TARGET_US} us" "skipped: libfaketime missing ($FAKETIME_LIB)"
fi
((HAVE_VETH)) || add_row "bandwidth/latency/clock" veth - - - - "skipped: $VETH_SKIP_REASON"

echo
echo "== accuracy (gloowatch vs standard tools), $((SECONDS - START)) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
{
  printf 'comparison\tpath\tgloowatch\treference\tratio/error\ttarget\tresult\n'
  for row in "${ROWS[@]}"; do printf '%s\n' "$row"; done
} | awk -F'\t' '{ for (i = 1; i <= NF; i++) { cell[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) }
  if (NF > cols) cols = NF }
  END { for (r = 1; r <= NR; r++) { line = ""
      for (i = 1; i <= cols; i++) line = line sprintf("%-*s  ", w[i], cell[r, i])
      sub(/ +$/, "", line); print line } }'
for note in "${NOTES[@]}"; do echo "note: $note"; done
short=0
for row in "${ROWS[@]}"; do [[ $row == *SHORT* ]] && short=$((short + 1)); done
echo "$short comparison(s) short of target"
