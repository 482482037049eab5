#!/usr/bin/env bash
# The whole production path on three booted hosts: three containers with
# the .deb installed (container_lib.sh), each in a network namespace of its
# own with eth0 on one bridge, each with its own config, probing each
# other; a real Prometheus scrapes them with the shipped scrape config and
# alert rules; an nft partition in h1's namespace makes GloowatchPeerDown
# fire, and `gloowatch health --prometheus` shows the link down.
# Usage: three_hosts_test.sh BUILD_DIR
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
cli=$build/client/gloowatch
. "$(dirname "$0")/container_lib.sh"
for tool in ip nft prometheus promtool python3; do
  command -v "$tool" > /dev/null || die "$tool is not installed (scripts/packages-test.txt lists its package)"
done
[ -x "$cli" ] || die "no $cli: build the client first"

# Namespaces: gwh<pid>-sw holds bridge br0 (and Prometheus, on its own
# loopback); gwh<pid>-h<i> is host i's network, eth0 a veth port of br0.
ns=gwh$$
for stale in $(ip netns list | awk '{ print $1 }' | grep -E '^gwh[0-9]+-(sw|h[1-3])$' || true); do
  pid=${stale#gwh}
  pid=${pid%%-*}
  kill -0 "$pid" 2>/dev/null || ip netns del "$stale"
done
prom_pid=
ct_extra_cleanup() {
  [ -z "$prom_pid" ] || { kill "$prom_pid"; wait "$prom_pid"; } 2>/dev/null
  local n
  for n in "$ns-h1" "$ns-h2" "$ns-h3" "$ns-sw"; do ip netns del "$n" 2>/dev/null; done
}
ct_init hosts "${GLOOWATCH_HOSTS_TEST_BUDGET:-560}"

# A /24 of 10.252.0.0/16 that this host's root namespace does not route.
net=
for y in $(seq $(($$ % 200)) 254) $(seq 1 $(($$ % 200))); do
  ip -4 route show table all | grep -q "10\.252\.$y\." || { net=10.252.$y; break; }
done
[ -n "$net" ] || die "no free 10.252.Y.0/24"
ip netns add "$ns-sw"
ip -n "$ns-sw" link add br0 type bridge
ip -n "$ns-sw" addr add "$net.254/24" dev br0
ip -n "$ns-sw" link set br0 up
ip -n "$ns-sw" link set lo up
for i in 1 2 3; do
  ip netns add "$ns-h$i"
  ip -n "$ns-sw" link add "h$i" type veth peer name eth0 netns "$ns-h$i"
  ip -n "$ns-sw" link set "h$i" master br0 up
  ip -n "$ns-h$i" addr add "$net.$i/24" dev eth0
  ip -n "$ns-h$i" link set eth0 up
  ip -n "$ns-h$i" link set lo up
done

ct_install "$build"
leaders=()
for i in 1 2 3; do
  root=$(ct_mount "h$i")
  peers=()
  for j in 1 2 3; do [ "$j" = "$i" ] || peers+=("h$j" "$net.$j"); done
  node_config "h$i" "$net.$i" "${peers[@]}" | sed "s/gloo: {address: $net.$i,/gloo: {interface: eth0,/" \
    > "$root/etc/gloowatch/gloowatchd.yaml"
  ct_boot "h$i" --network-namespace-path="/run/netns/$ns-h$i"
  leaders[i]=$LEADER
  ct_in "$LEADER" systemctl enable --now gloowatchd > /dev/null 2>&1 ||
    err "h$i: systemctl enable --now gloowatchd failed"
done

# Prometheus: the shipped scrape config and rules, with the three hosts as
# its targets and 2 s intervals instead of 15 s, and GloowatchPeerDown's
# `for: 2m` as 10 s (promtool's rule tests, prometheus_rules_test, hold the
# 2 m; here two minutes of waiting would prove nothing more).
prom=$tmp/prometheus
mkdir -p "$prom/data" "$prom/targets"
cp "$src/deploy/prometheus/gloowatch-records.yml" "$prom/"
awk '/- alert: GloowatchPeerDown$/ { in_rule = 1 }
     in_rule && /^ *for: 2m$/ { sub(/2m/, "10s"); in_rule = 0; done = 1 }
     { print } END { exit !done }' "$src/deploy/prometheus/gloowatch-alerts.yml" \
  > "$prom/gloowatch-alerts.yml" || die "the shipped GloowatchPeerDown no longer has the for: 2m this test shortens"
sed -e 's/scrape_interval: 15s/scrape_interval: 2s/' -e 's/evaluation_interval: 15s/evaluation_interval: 2s/' \
  -e 's/scrape_timeout: 10s/scrape_timeout: 1s/' \
  -e "s#/etc/prometheus/gloowatch-\(alerts\|records\).yml#$prom/gloowatch-\1.yml#" \
  -e "s#/etc/prometheus/targets/#$prom/targets/#" \
  -e "s#targets: \['127.0.0.1:7610'\]#targets: ['$net.1:7610', '$net.2:7610', '$net.3:7610']#" \
  "$src/deploy/prometheus/prometheus.yml" > "$prom/prometheus.yml"
grep -qF "$net.3:7610" "$prom/prometheus.yml" || die "the shipped prometheus.yml no longer has the target this test replaces"
promtool check config "$prom/prometheus.yml" > "$prom/check.log" 2>&1 ||
  { cat "$prom/check.log"; die "promtool check config"; }
ip netns exec "$ns-sw" prometheus --config.file="$prom/prometheus.yml" --storage.tsdb.path="$prom/data" \
  --web.listen-address=127.0.0.1:9090 > "$prom/prometheus.log" 2>&1 &
prom_pid=$!
in_sw() { timeout 15 ip netns exec "$ns-sw" "$@"; }
query() {  # PROMQL: the result vector as JSON
  in_sw curl -sf --max-time 3 "http://127.0.0.1:9090/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["data"]["result"]))'
}
count_of() { query "$1" 2> /dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))' 2> /dev/null || echo none; }
targets_up() { [ "$(count_of 'up{job="gloowatch"} == 1')" = 3 ]; }
all_links_up() { [ "$(count_of 'gloowatch_peer_up{job="gloowatch"} == 1')" = 6 ]; }
wait_for 30 targets_up && ok "Prometheus scrapes all three hosts (up == 1)" ||
  { tail -5 "$prom/prometheus.log"; err "not all three targets up in Prometheus within 30 s"; }
wait_for 40 all_links_up && ok "all 6 directed links up, as Prometheus sees them" ||
  err "not all 6 links up within 40 s: $(query 'gloowatch_peer_up' || true)"

# The partition: h1 drops everything from h2, in h1's own namespace.
ip netns exec "$ns-h1" nft -f - <<EOF
add table inet gwfault
add chain inet gwfault input { type filter hook input priority -10 ; policy accept ; }
add rule inet gwfault input ip saddr $net.2 drop
EOF
t_cut=$(date +%s)
both_down() { [ "$(count_of 'gloowatch_peer_up{node=~"h1|h2",peer=~"h1|h2"} == 0')" = 2 ]; }
wait_for 30 both_down && ok "h1 -> h2 and h2 -> h1 down $(($(date +%s) - t_cut)) s after the cut" ||
  err "h1 <-> h2 not down within 30 s"
firing() {
  [ "$(count_of 'ALERTS{alertname="GloowatchPeerDown",alertstate="firing",node=~"h1|h2",peer=~"h1|h2"}')" = 2 ]
}
# `for: 10s` plus a few evaluations.
if wait_for 60 firing; then
  ok "GloowatchPeerDown firing for h1 -> h2 and h2 -> h1, $(($(date +%s) - t_cut)) s after the cut"
else
  err "GloowatchPeerDown not firing within 60 s of the cut: $(query 'ALERTS' || true)"
fi
others=$(count_of 'ALERTS{alertname="GloowatchPeerDown",alertstate="firing"}')
[ "$others" = 2 ] || err "$others GloowatchPeerDown alerts firing, expected the 2 of the cut link"

# gloowatch health --prometheus: the verdict and the cut link, from the
# same Prometheus.
rc=0
in_sw "$cli" health --prometheus http://127.0.0.1:9090 --json > "$tmp/health.json" 2> "$tmp/health.err" || rc=$?
in_sw "$cli" health --prometheus http://127.0.0.1:9090 > "$tmp/health.txt" 2>&1 || true
cat "$tmp/health.txt"
[ "$rc" = 2 ] || err "gloowatch health --prometheus exit $rc, expected 2 (failed): $(cat "$tmp/health.err")"
python3 - "$tmp/health.json" <<'EOF' || err "gloowatch health --prometheus does not show the cut link (above)"
import json, sys
h = json.load(open(sys.argv[1]))
links = {(l["a"], l["b"]): l for l in h["links"]}
assert h["source"] == "prometheus" and h["verdict"] == "failed", (h["source"], h["verdict"])
assert sorted(h["node_names"]) == ["h1", "h2", "h3"], h["node_names"]
cut = links[("h1", "h2")]
assert cut["a_to_b"]["state"] == "down" and cut["b_to_a"]["state"] == "down", cut
for pair in (("h1", "h3"), ("h2", "h3")):
    l = links[pair]
    assert l["a_to_b"]["state"] == "up" and l["b_to_a"]["state"] == "up", l
print("health: verdict failed; h1-h2 down both ways; h1-h3 and h2-h3 up")
EOF

if [ "$fail" -ne 0 ]; then
  for i in 1 2 3; do
    echo "--- h$i: journal of gloowatchd.service"
    ct_in "${leaders[i]}" journalctl -u gloowatchd --no-pager -o short-precise | tail -15 || true
  done
fi
[ "$fail" -eq 0 ] && echo "OK: three booted hosts"
exit "$fail"
