#!/usr/bin/env bash
# The .deb under a real systemd: a minimal Debian 12 tree (debootstrap,
# cached outside the checkout), the package installed into a copy of it with
# apt, booted with systemd-nspawn on a private network (loopback only), and
# checked through systemctl and journalctl inside: start waits for READY,
# the dynamic user and the hardening, reload with a good and a bad config,
# the watchdog restarting a SIGSTOPped daemon, a clean stop, and the
# journal's priorities. Usage: systemd_boot_test.sh BUILD_DIR
# The tree, the install and the containers: container_lib.sh.
set -euo pipefail
build=$1
. "$(dirname "$0")/container_lib.sh"
watchdog_sec=5
ct_init boot "${GLOOWATCH_BOOT_TEST_BUDGET:-840}"
ct_install "$build" recommends   # with the Python helper's Recommends
root=$(ct_mount ct)

# --- configs: node-a is the packaged unit, node-b a peer on 127.0.0.2 --------
node_config node-b 127.0.0.2 node-a 127.0.0.1 node-c 127.0.0.3 > "$root/etc/gloowatch/peer-b.yaml"
mkdir -p "$root/etc/systemd/system/gloowatchd.service.d"
# Quick restarts for the watchdog check, and how the daemon ended, recorded
# outside the sandbox ('+'): an inactive unit is soon unloaded, and with it
# its ExecMain* properties. The watchdog is shortened later, so that start
# and reload are checked with the shipped unit's.
test_dropin() {  # [WATCHDOG_SEC]
  printf '[Service]\nRestartSec=1s\n'
  printf '%s\n' 'ExecStopPost=+/bin/sh -c "echo $$SERVICE_RESULT $$EXIT_CODE $$EXIT_STATUS >> /run/gloowatchd-exits"'
  [ -z "${1:-}" ] || printf 'WatchdogSec=%ss\n' "$1"
}
test_dropin > "$root/etc/systemd/system/gloowatchd.service.d/test.conf"

# --- boot ---------------------------------------------------------------------
ct_boot ct --private-network
leader=$LEADER
ct() { ct_in "$leader" "$@"; }
show() { ct systemctl show -p "$2" --value "$1"; }
metrics() { ct_net "$leader" curl -sf --max-time 3 http://127.0.0.1:7610/metrics; }

[ ! -e "$root/bin/kill" ] && [ ! -e "$root/usr/bin/kill" ] && ok "no /bin/kill in the container (no procps)" ||
  err "the container has a kill binary: the reload check would not prove ExecReload works without it"
[ "$(ct systemctl is-enabled gloowatchd 2>&1)" = disabled ] || err "fresh install: unit is $(ct systemctl is-enabled gloowatchd 2>&1), not disabled"
[ "$(ct systemctl is-active gloowatchd 2>&1)" = inactive ] || err "fresh install: daemon is $(ct systemctl is-active gloowatchd 2>&1) after boot"

# --- start: returns once READY=1 was sent ---------------------------------------
node_config node-a 127.0.0.1 node-b 127.0.0.2 > "$root/etc/gloowatch/gloowatchd.yaml"
ct systemd-run --quiet --unit=gloowatch-peer-b -p Type=notify -p DynamicUser=yes \
  /usr/sbin/gloowatchd --config /etc/gloowatch/peer-b.yaml || err "could not start peer node-b"
t0=$(date +%s.%N)
ct systemctl start gloowatchd || { ct journalctl -u gloowatchd --no-pager | tail -20; die "systemctl start gloowatchd failed"; }
echo "systemctl start took $(since "$t0") s"
# Type=notify: start returned after READY=1, which is sent once both ports
# listen, so the very first scrape must succeed.
if metrics > "$tmp/metrics.0"; then ok "/metrics answers as soon as start returned"; else err "/metrics not answering right after start returned"; fi
[ "$(show gloowatchd ActiveState)/$(show gloowatchd SubState)" = active/running ] ||
  err "after start: $(show gloowatchd ActiveState)/$(show gloowatchd SubState)"
status=$(show gloowatchd StatusText)
[ "$status" = "probing 1 peers" ] && ok "STATUS: $status" || err "status text after start: '$status'"
up_b() { metrics | grep -qx 'gloowatch_peer_up{node="node-a",peer="node-b"} 1'; }
wait_for 20 up_b && ok "node-a probes node-b (peer_up 1)" || err "node-a -> node-b not up within 20 s"

# --- the installed Python helper, on a host without protoc -------------------
ct sh -c '! command -v protoc && ! python3 -c "import grpc_tools"' 2>/dev/null ||
  err "the container has protoc or grpc_tools: the helper check would not prove it needs neither"
if ct gloowatch-report --job pkg --rank 0 --step 1 --step-seconds 2 --comm-seconds 0.5 \
    --daemon 127.0.0.1:7601 > "$tmp/report.out" 2>&1; then
  ok "gloowatch-report from the package reported a step"
else
  err "gloowatch-report failed: $(tail -5 "$tmp/report.out")"
fi
reported() { metrics | grep -q '^gloowatch_training_steps_total{node="node-a",rank="0",training_job="pkg"} 1'; }
wait_for 5 reported || err "the step gloowatch-report sent is not in /metrics"

# --- the dynamic user and the hardening, as the kernel sees them ------------
main_pid=$(show gloowatchd MainPID)
proc_status() { ct cat "/proc/$1/status"; }
check_hardening() {  # PID WHAT
  local st uid
  st=$(proc_status "$1") || { err "$2: cannot read /proc/$1/status"; return; }
  uid=$(printf '%s\n' "$st" | awk '$1 == "Uid:" { print $2 }')
  # DynamicUser= allocates from 61184-65519 (systemd.exec(5)).
  if [ "$uid" -ge 61184 ] && [ "$uid" -le 65519 ]; then ok "$2 runs as dynamic uid $uid"; else err "$2 runs as uid $uid"; fi
  for field in "NoNewPrivs:	1" "Seccomp:	2" "CapEff:	0000000000000000" \
      "CapPrm:	0000000000000000" "CapBnd:	0000000000000000"; do
    printf '%s\n' "$st" | grep -qxF "$field" || err "$2: no '$field' in /proc/$1/status"
  done
  # ProtectSystem=strict: / is read-only in the daemon's mount namespace.
  ct awk '$5 == "/" { print $6 }' "/proc/$1/mountinfo" | grep -q '^ro' || err "$2: / is writable"
  ct awk '$5 == "/home" { print $6 }' "/proc/$1/mountinfo" | grep -q '^ro' || err "$2: /home is not protected"
}
check_hardening "$main_pid" "gloowatchd (pid $main_pid)"
transport_pid=$(ct sh -c "cat /proc/$main_pid/task/*/children" | awk '{ print $1 }')
if [ -n "$transport_pid" ]; then check_hardening "$transport_pid" "its transport (pid $transport_pid)"; else err "gloowatchd has no transport process"; fi

# --- reload: a good config is applied, a bad one refused and the old kept ----
node_config node-a 127.0.0.1 node-b 127.0.0.2 node-c 127.0.0.3 > "$root/etc/gloowatch/gloowatchd.yaml"
ct systemctl reload gloowatchd || err "systemctl reload (good config) failed"
[ "$(show gloowatchd MainPID)" = "$main_pid" ] || err "reload changed the main pid"
status=$(show gloowatchd StatusText)
[ "$status" = "probing 2 peers" ] && ok "reload applied: STATUS: $status" || err "status after a good reload: '$status'"
has_c() { metrics | grep -q 'gloowatch_peer_up{node="node-a",peer="node-c"}'; }
wait_for 10 has_c || err "no node-c series after the good reload"
# node-c has no daemon: its prober's first refused open (after the start-up
# spread) is logged at warning; the journal check below relies on it.
c_warned() {
  ct journalctl -u gloowatchd SYSLOG_IDENTIFIER=gloowatchd --no-pager -o cat -p warning..warning |
    grep -q 'peer node-c'
}
wait_for 20 c_warned || err "no warning about node-c within 20 s of the good reload"
ct journalctl -u gloowatchd --no-pager -o cat | grep -q 'Reloaded gloowatchd.service' ||
  err "the journal has no 'Reloaded gloowatchd.service' (RELOADING=1 ... READY=1)"

{ node_config node-a 127.0.0.1 node-b 127.0.0.2; echo "schedule_typo: 1"; } > "$root/etc/gloowatch/gloowatchd.yaml"
ct systemctl reload gloowatchd || err "systemctl reload (bad config) failed"
status=$(show gloowatchd StatusText)
case "$status" in
  "probing 2 peers; last reload REFUSED: "*schedule_typo*) ok "bad reload: STATUS: $status" ;;
  *) err "status after a bad reload: '$status'" ;;
esac
[ "$(show gloowatchd ActiveState)" = active ] && [ "$(show gloowatchd MainPID)" = "$main_pid" ] ||
  err "the daemon did not survive a bad reload"
metrics > "$tmp/metrics.bad" || err "/metrics after the bad reload"
grep -q 'gloowatch_peer_up{node="node-a",peer="node-c"}' "$tmp/metrics.bad" ||
  err "the running config was not kept (node-c gone after the refused reload)"
refused=$(ct journalctl -u gloowatchd -p err..err SYSLOG_IDENTIFIER=gloowatchd --no-pager -o cat)
case "$refused" in
  *"SIGHUP: reload refused, keeping the running config: "*schedule_typo*) ok "journal at err: $refused" ;;
  *) err "no refused reload at error priority in the journal: '$refused'" ;;
esac

# --- the watchdog: a SIGSTOPped daemon is killed and restarted -------------
node_config node-a 127.0.0.1 node-b 127.0.0.2 > "$root/etc/gloowatch/gloowatchd.yaml"
test_dropin "$watchdog_sec" > "$root/etc/systemd/system/gloowatchd.service.d/test.conf"
ct systemctl daemon-reload
ct systemctl restart gloowatchd || err "restart with WatchdogSec=${watchdog_sec}s failed"
[ "$(show gloowatchd WatchdogUSec)" = "${watchdog_sec}s" ] || err "WatchdogUSec: $(show gloowatchd WatchdogUSec)"
sleep 2   # a few WATCHDOG=1 pings
restarts=$(show gloowatchd NRestarts)
stopped_pid=$(show gloowatchd MainPID)
ct sh -c "kill -STOP $stopped_pid"
t_stop=$(date +%s.%N)
restarted() {
  local pid
  pid=$(show gloowatchd MainPID)
  [ "$pid" != 0 ] && [ "$pid" != "$stopped_pid" ] && [ "$(show gloowatchd ActiveState)" = active ]
}
if wait_for $((watchdog_sec + 15)) restarted; then
  t_up=$(date +%s.%N)
  t_kill=$(ct journalctl -u gloowatchd --no-pager -o short-unix --since "@${t_stop%.*}" |
    awk '/Watchdog timeout/ { print $1; exit }')
  if [ -n "$t_kill" ]; then
    # The last ping came at most 1 s before the SIGSTOP.
    if awk -v k="$t_kill" -v s="$t_stop" -v w="$watchdog_sec" 'BEGIN { d = k - s; exit !(d >= w - 1.5 && d <= w + 1) }'; then
      ok "watchdog killed the stopped daemon $(awk -v k="$t_kill" -v s="$t_stop" 'BEGIN { printf "%.2f", k - s }') s after SIGSTOP (WatchdogSec=${watchdog_sec}s)"
    else
      err "watchdog timeout $(awk -v k="$t_kill" -v s="$t_stop" 'BEGIN { printf "%.2f", k - s }') s after SIGSTOP, expected ${watchdog_sec} s (-1.5/+1)"
    fi
  else
    err "no 'Watchdog timeout' in the journal"
  fi
  echo "restarted and READY $(awk -v u="$t_up" -v s="$t_stop" 'BEGIN { printf "%.2f", u - s }') s after SIGSTOP"
  [ "$(show gloowatchd NRestarts)" = $((restarts + 1)) ] || err "NRestarts $(show gloowatchd NRestarts), expected $((restarts + 1))"
  wait_for 20 up_b && ok "the restarted daemon probes node-b again" || err "node-b not up again after the restart"
else
  err "not restarted within $((watchdog_sec + 15)) s of the SIGSTOP"
  ct systemctl status gloowatchd --no-pager || true
fi

# --- stop: quick, exit 0, nothing left in the cgroup -------------------------
t0=$(date +%s.%N)
ct systemctl stop gloowatchd || err "systemctl stop failed"
took=$(since "$t0")
awk -v t="$took" 'BEGIN { exit !(t < 5) }' || err "stop took $took s (the daemon promises 2 s)"
# Every end of the daemon, in order: the restart for the new drop-in, the
# watchdog's SIGABRT, this stop (exited by itself with 0, not killed).
exits=$(ct cat /run/gloowatchd-exits 2>/dev/null | paste -sd, || true)
[ "$exits" = "success exited 0,watchdog killed ABRT,success exited 0" ] &&
  ok "stopped in $took s; the daemon's ends: $exits" || err "the daemon's ends (result code status): '$exits'"
left=$(ct sh -c 'cat /sys/fs/cgroup/system.slice/gloowatchd.service/cgroup.procs 2>/dev/null' || true)
[ -z "$left" ] || err "processes left in gloowatchd.service's cgroup: $left"

# --- the journal: priorities, no timestamps of our own ------------------------
journal() { ct journalctl -u gloowatchd SYSLOG_IDENTIFIER=gloowatchd --no-pager -o cat "$@"; }
journal -p info..info | grep -Eq '^(INFO )?node node-a: gRPC on 127.0.0.1:7601, metrics on 127.0.0.1:7610' ||
  err "no start-up line at info priority"
journal -p warning..warning | grep -Eq '^(WARN )?TLS is NOT configured' || err "no TLS warning at warning priority"
journal -p warning..warning | grep -q 'peer node-c' || err "node-c's failures are not at warning priority"
others=$(journal -p err | grep -Ev '^(ERROR )?SIGHUP: reload refused' || true)
[ -z "$others" ] || err "unexpected lines at error priority or above: $others"
stamped=$(journal | grep -E '^(<[0-9]>|[0-9]{4}-[0-9]{2}-[0-9]{2}[ T])' | head -3 || true)
[ -z "$stamped" ] || err "journal lines with a priority prefix or timestamp of their own: $stamped"
ok "journal: $(journal | wc -l) lines; $(journal -p warning | wc -l) at warning or above"

# --- mutual TLS with the keys as systemd credentials ---------------------------
# The key files are root's, 0600 in a 0700 directory: the dynamic user cannot
# open them. LoadCredential= (drop-in, docs/operations.md) hands the service
# copies in $CREDENTIALS_DIRECTORY, and relative tls.* names are read there.
pki=$tmp/pki
mkdir -p "$pki" "$root/etc/gloowatch/tls"
chmod 0700 "$root/etc/gloowatch/tls"
ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
openssl req -x509 $ec -keyout "$pki/ca.key" -out "$pki/ca.pem" -days 2 -subj /CN=gloowatch-test-ca 2> /dev/null
for n in a:127.0.0.1 b:127.0.0.2; do
  name=${n%%:*} ip=${n#*:}
  printf 'subjectAltName=IP:%s\n' "$ip" > "$pki/$name.ext"
  openssl req $ec -keyout "$pki/$name.key" -out "$pki/$name.csr" -subj "/CN=node-$name" 2> /dev/null
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 2 -out "$pki/$name.pem" -extfile "$pki/$name.ext" 2> /dev/null
done
install -m 0600 "$pki/ca.pem" "$pki/a.pem" "$pki/a.key" "$pki/b.pem" "$pki/b.key" "$root/etc/gloowatch/tls/"
credentials() {  # NAME: the LoadCredential= lines for node NAME
  printf 'LoadCredential=%s:/etc/gloowatch/tls/%s\n' ca.pem ca.pem cert.pem "$1.pem" key.pem "$1.key"
}
{ echo '[Service]'; credentials a; } > "$root/etc/systemd/system/gloowatchd.service.d/credentials.conf"
tls_line='tls: {ca: ca.pem, cert: cert.pem, key: key.pem}'
{ node_config node-a 127.0.0.1 node-b 127.0.0.2; echo "$tls_line"; } > "$root/etc/gloowatch/gloowatchd.yaml"
{ node_config node-b 127.0.0.2 node-a 127.0.0.1; echo "$tls_line"; } > "$root/etc/gloowatch/peer-b.yaml"
ct systemctl stop gloowatch-peer-b
ct systemd-run --quiet --unit=gloowatch-peer-b-tls -p Type=notify -p DynamicUser=yes \
  -p "LoadCredential=ca.pem:/etc/gloowatch/tls/ca.pem" -p "LoadCredential=cert.pem:/etc/gloowatch/tls/b.pem" \
  -p "LoadCredential=key.pem:/etc/gloowatch/tls/b.key" \
  /usr/sbin/gloowatchd --config /etc/gloowatch/peer-b.yaml || err "could not start peer node-b with TLS"
ct systemctl daemon-reload
if ct systemctl start gloowatchd; then
  invocation=$(show gloowatchd InvocationID)
  wait_for 20 up_b && ok "mutual TLS: node-a probes node-b with the keys from LoadCredential=" ||
    err "node-a -> node-b not up within 20 s with TLS"
  ct journalctl _SYSTEMD_INVOCATION_ID="$invocation" --no-pager -o cat | grep -q 'TLS is NOT configured' &&
    err "the TLS run still warns that TLS is not configured"
  # The status API now wants a client certificate signed by the CA.
  health() { ct_net "$leader" timeout 10 "$build/client/gloowatch" health --daemons 127.0.0.1:7601,127.0.0.2:7601 "$@"; }
  # node-b started first: its first opens to node-a were refused, and it
  # retries within probe.backoff_max (30 s by default) + 2 Gloo timeouts.
  healthy_tls() {
    health --tls_ca "$pki/ca.pem" --tls_cert "$pki/a.pem" --tls_key "$pki/a.key" > "$tmp/health.tls" 2>&1
  }
  wait_for 45 healthy_tls && ok "gloowatch health over mutual TLS: healthy (exit 0)" ||
    { cat "$tmp/health.tls"; err "gloowatch health over TLS not healthy (exit 0) within 45 s"; }
  rc=0
  health > "$tmp/health.plain" 2>&1 || rc=$?
  [ "$rc" = 69 ] && ok "without a client certificate neither daemon answers (exit 69)" ||
    { cat "$tmp/health.plain"; err "gloowatch health without TLS exit $rc, expected 69"; }
else
  ct journalctl -u gloowatchd --no-pager -o cat | tail -5
  err "gloowatchd did not start with LoadCredential= and tls.* relative to it"
fi

if [ "$fail" -ne 0 ]; then
  echo "--- journal of gloowatchd.service"
  ct journalctl -u gloowatchd --no-pager -o short-precise | tail -60 || true
fi
[ "$fail" -eq 0 ] && echo "OK: systemd boot"
exit "$fail"
