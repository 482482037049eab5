#!/usr/bin/env bash
# deploy/kubernetes: the example renders exactly as committed (so it follows
# the rule file), every manifest passes the Kubernetes and prometheus-operator
# API schemas, a broken one does not, the rendered daemon config is valid for
# a node with --node, the PrometheusRule's rules pass promtool, and bad input
# to render.py is a clear error.
# Usage: kubernetes_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
k8s=$src/deploy/kubernetes
validator=$src/tests/deploy/kubernetes
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gloowatch-k8s-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

[ -d "$validator/node_modules/kubernetes-models" ] ||
  fail "the schema validator is not installed: run scripts/install-deps.sh (npm ci in tests/deploy/kubernetes)"

render() {
  python3 "$k8s/render.py" --nodes "$k8s/example/nodes.json" --image gloowatch:0.1.0 \
    --node-selector nvidia.com/gpu.present=true "$@"
}
render > "$tmp/gloowatch.yaml"
diff -u "$k8s/example/gloowatch.yaml" "$tmp/gloowatch.yaml" ||
  fail "deploy/kubernetes/example/gloowatch.yaml is stale; re-render it (see its README)"

node "$validator/validate.mjs" "$tmp/gloowatch.yaml"
sed 's/containerPort: 7601/containerPort: grpc-port/' "$tmp/gloowatch.yaml" > "$tmp/broken.yaml"
if node "$validator/validate.mjs" "$tmp/broken.yaml" > "$tmp/broken.out"; then
  fail "a DaemonSet with a string containerPort passed validation"
fi
grep -q "containerPort must be integer" "$tmp/broken.out" || { cat "$tmp/broken.out"; fail "wrong error"; }

# The ConfigMap's file and the PrometheusRule's groups, as the pods and the
# operator get them.
python3 - "$tmp" <<'PY'
import sys, yaml
tmp = sys.argv[1]
docs = [d for d in yaml.safe_load_all(open(f"{tmp}/gloowatch.yaml")) if d]
by_kind = {d["kind"]: d for d in docs}
open(f"{tmp}/gloowatchd.yaml", "w").write(by_kind["ConfigMap"]["data"]["gloowatchd.yaml"])
yaml.safe_dump({"groups": by_kind["PrometheusRule"]["spec"]["groups"]}, open(f"{tmp}/rules.yml", "w"))
args = by_kind["DaemonSet"]["spec"]["template"]["spec"]["containers"][0]["args"]
assert "--node=$(NODE_NAME)" in args, args
PY
out=$("$build/gloowatchd" --check-config "$tmp/gloowatchd.yaml" --node gpu-02)
echo "$out"
[[ "$out" == *"OK (node gpu-02, 3 peers)"* ]] || fail "gpu-02 should probe the 3 other GPU nodes"
if "$build/gloowatchd" --check-config "$tmp/gloowatchd.yaml" > /dev/null 2>&1; then
  fail "the shared config must need --node"
fi
promtool check rules "$tmp/rules.yml" | tee "$tmp/promtool.out"
grep -q "SUCCESS: [1-9][0-9]* rules found" "$tmp/promtool.out" || fail "no rules in the PrometheusRule"

# Bad input: a clear error and exit 65, never a traceback.
expect_error() {
  local want=$1; shift
  if "$@" > "$tmp/out" 2> "$tmp/err"; then fail "render.py accepted: $*"; fi
  grep -q "$want" "$tmp/err" || { cat "$tmp/err"; fail "render.py: expected '$want'"; }
  ! grep -q Traceback "$tmp/err" || fail "render.py crashed"
}
echo 'not json' > "$tmp/bad.json"
expect_error "cannot read the node list" python3 "$k8s/render.py" --image x --nodes "$tmp/bad.json"
echo '{"items": [{"metadata": {"name": "n1"}, "status": {}}]}' > "$tmp/noip.json"
expect_error "has no valid InternalIP" python3 "$k8s/render.py" --image x --nodes "$tmp/noip.json"
expect_error "is not KEY=VALUE" render --node-selector novalue
echo "kubernetes manifests: OK"
