#!/usr/bin/env bash
# systemd/gloowatchd.service: the directives the design requires are there,
# `systemd-analyze verify` has nothing to say about it, and its exposure
# score stays low. Usage: systemd_unit_test.sh SOURCE_DIR BINARY_DIR
set -euo pipefail
src=$1 bin=$2
unit=$src/systemd/gloowatchd.service
command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze not installed"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gloowatch-unit-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
err() { echo "FAIL: $*"; fail=1; }

for line in \
  'Type=notify' 'WatchdogSec=30' 'Restart=on-failure' 'DynamicUser=yes' \
  'ProtectSystem=strict' 'ProtectHome=yes' 'NoNewPrivileges=yes' 'PrivateTmp=yes' \
  'CapabilityBoundingSet=' 'AmbientCapabilities=' \
  'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX AF_NETLINK' \
  'ConfigurationDirectory=gloowatch' 'KillMode=mixed' \
  'ExecStart=/usr/sbin/gloowatchd --config /etc/gloowatch/gloowatchd.yaml' \
  'ExecReload=/bin/sh -c "kill -HUP $MAINPID"' 'WantedBy=multi-user.target'; do
  grep -qxF -- "$line" "$unit" || err "missing directive: $line"
done

# The shipped unit names /usr/sbin/gloowatchd, which exists only once the
# package is installed: verify a copy that runs the built binary. No output
# at all is accepted (no warning is expected on Debian 12's systemd 252).
sed "s#/usr/sbin/gloowatchd#$bin/gloowatchd#g" "$unit" > "$tmp/gloowatchd.service"
if ! out=$(systemd-analyze verify "$tmp/gloowatchd.service" 2>&1) || [ -n "$out" ]; then
  err "systemd-analyze verify (built binary):"; echo "$out"
fi
# The shipped unit itself: its only possible complaint is the missing binary.
out=$(systemd-analyze verify "$unit" 2>&1 || true)
unexplained=$(printf '%s\n' "$out" | grep -v -e '^$' \
  -e 'Command /usr/sbin/gloowatchd is not executable: No such file or directory' || true)
if [ -n "$unexplained" ]; then err "systemd-analyze verify (shipped unit):"; echo "$unexplained"; fi

# gloowatch act's timer and service: verified together against the built CLI.
sed "s#/usr/bin/gloowatch#$bin/client/gloowatch#g" "$src/systemd/gloowatch-act.service" \
  > "$tmp/gloowatch-act.service"
cp "$src/systemd/gloowatch-act.timer" "$tmp/"
if ! out=$(systemd-analyze verify "$tmp/gloowatch-act.service" "$tmp/gloowatch-act.timer" 2>&1) ||
  [ -n "$out" ]; then
  err "systemd-analyze verify (gloowatch-act):"; echo "$out"
fi
grep -qxF 'Type=oneshot' "$src/systemd/gloowatch-act.service" || err "gloowatch-act: not oneshot"
grep -qxF 'OnUnitActiveSec=1min' "$src/systemd/gloowatch-act.timer" || err "gloowatch-act.timer: no period"

# Exposure: 1.9 today ("OK"); fail if hardening is lost (above 3.0).
if systemd-analyze security --help 2>/dev/null | grep -q -- '--offline'; then
  if ! out=$(systemd-analyze security --offline=yes --threshold=30 --no-pager \
               "$tmp/gloowatchd.service" 2>&1); then
    err "systemd-analyze security exposure above 3.0:"; printf '%s\n' "$out" | tail -3
  else
    printf '%s\n' "$out" | tail -1
  fi
fi

# The fleet drop-in (deploy/systemd/fleet-node.conf, README "Quickstart on N
# hosts"): the unit with it verifies as cleanly, its ExecStart replaces the
# unit's with --node %H, and the daemon takes one fleet file as each host's.
dropin=$src/deploy/systemd/fleet-node.conf
grep -qxF 'ExecStart=' "$dropin" || err "fleet-node.conf does not reset ExecStart"
grep -qxF 'ExecStart=/usr/sbin/gloowatchd --config /etc/gloowatch/gloowatchd.yaml --node %H' "$dropin" ||
  err "fleet-node.conf does not start gloowatchd with --node %H"
mkdir -p "$tmp/gloowatchd.service.d"
sed "s#/usr/sbin/gloowatchd#$bin/gloowatchd#g" "$dropin" > "$tmp/gloowatchd.service.d/fleet-node.conf"
if ! out=$(systemd-analyze verify "$tmp/gloowatchd.service" 2>&1) || [ -n "$out" ]; then
  err "systemd-analyze verify (unit + fleet-node.conf):"; echo "$out"
fi
printf '%s
' 'grpc_listen: 0.0.0.0:7601' 'metrics_listen: 0.0.0.0:7610' 'peers:' \
  '  - {name: gpu-01, grpc: 10.0.3.1:7601}' '  - {name: gpu-02, grpc: 10.0.3.2:7601}' \
  '  - {name: gpu-03, grpc: 10.0.3.3:7601}' > "$tmp/fleet.yaml"
for node in gpu-01 gpu-02 gpu-03; do
  out=$("$bin/gloowatchd" --check-config "$tmp/fleet.yaml" --node "$node" 2>&1) &&
    [ "$out" = "$tmp/fleet.yaml: OK (node $node, 2 peers)" ] || err "the fleet file as $node's: $out"
done

[ "$fail" -eq 0 ] && echo "OK: gloowatchd.service (and with fleet-node.conf)"
exit "$fail"
