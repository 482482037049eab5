#!/usr/bin/env python3
"""Renders gloowatch's Kubernetes manifests from the cluster's node list.

Peer discovery: the node list is rendered into the ConfigMap, one file for
every node; each pod's gloowatchd gets its node's name from the downward API
(--node), leaves itself out of the list and takes its rack from its own
entry. Why not a headless Service's DNS: it yields pod addresses, not the
node names and racks the probes and alerts are keyed by, and a node that goes
down drops out of DNS exactly when it must stay listed to be reported down.
Re-render when nodes join or leave (your CD, or a CronJob), apply, and the
pods pick up the new file on `kubectl rollout restart daemonset/gloowatchd`.

  kubectl get nodes -o json | deploy/kubernetes/render.py --image IMAGE > gloowatch.yaml

Writes: ConfigMap, DaemonSet (host network, as training pods use it),
headless Service, ServiceMonitor and PrometheusRule (from the same rule files
as deploy/prometheus/: the alerts and the dashboard's recording rules, so both
deployments stay one source).
"""

import argparse
import ipaddress
import json
import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
RULES = [os.path.join(HERE, "..", "prometheus", name)
         for name in ("gloowatch-alerts.yml", "gloowatch-records.yml")]
NAME = re.compile(r"^[A-Za-z0-9._-]{1,63}$")
APP = {"app.kubernetes.io/name": "gloowatch"}


def fail(message):
    print(f"render.py: {message}", file=sys.stderr)
    sys.exit(65)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nodes", default="-", help="kubectl get nodes -o json output (default stdin)")
    p.add_argument("--image", required=True, help="container image with gloowatchd")
    p.add_argument("--namespace", default="gloowatch")
    p.add_argument("--group-label", default="topology.kubernetes.io/zone",
                   help="node label whose value is the node's group (rack, switch)")
    p.add_argument("--node-selector", default="",
                   help="KEY=VALUE: only nodes with this label are listed and run the daemon")
    p.add_argument("--grpc-port", type=int, default=7601)
    p.add_argument("--metrics-port", type=int, default=7610)
    p.add_argument("--gloo-interface", default="",
                   help="interface the Gloo pairs use (as GLOO_SOCKET_IFNAME); default: "
                        "the address the node name resolves to, as PyTorch does")
    p.add_argument("--rules", nargs="+", default=RULES,
                   help="Prometheus rule files for the PrometheusRule (default: the alerts and the "
                        "dashboard's recording rules)")
    return p.parse_args(argv)


def internal_ip(node):
    for address in node.get("status", {}).get("addresses", []):
        if address.get("type") == "InternalIP":
            try:
                return ipaddress.ip_address(address.get("address", ""))
            except ValueError:
                return None
    return None


def peers(nodes, args):
    selector = None
    if args.node_selector:
        key, sep, value = args.node_selector.partition("=")
        if not sep or not key:
            fail(f"--node-selector {args.node_selector!r} is not KEY=VALUE")
        selector = (key, value)
    out = []
    for node in nodes:
        meta = node.get("metadata", {})
        name = meta.get("name", "")
        labels = meta.get("labels", {}) or {}
        if selector and labels.get(selector[0]) != selector[1]:
            continue
        if not NAME.match(name):
            fail(f"node name {name!r} is not a gloowatch name (1-63 of A-Z a-z 0-9 . _ -)")
        ip = internal_ip(node)
        if ip is None:
            fail(f"node {name} has no valid InternalIP address")
        host = f"[{ip}]" if ip.version == 6 else str(ip)
        peer = {"name": name, "grpc": f"{host}:{args.grpc_port}"}
        group = labels.get(args.group_label, "")
        if group:
            if not NAME.match(group):
                fail(f"node {name}: label {args.group_label}={group!r} is not a gloowatch name")
            peer["group"] = group
        out.append(peer)
    if not out:
        fail("no nodes to list (check --nodes and --node-selector)")
    return sorted(out, key=lambda p: p["name"])


def daemon_config(listed, args):
    config = {
        "grpc_listen": f"0.0.0.0:{args.grpc_port}",
        "metrics_listen": f"0.0.0.0:{args.metrics_port}",
    }
    if args.gloo_interface:
        config["gloo"] = {"interface": args.gloo_interface}
    config["peers"] = listed
    header = ("# Rendered by deploy/kubernetes/render.py: every node is listed; each\n"
              "# gloowatchd runs with --node=<its node> and leaves itself out.\n")
    return header + yaml.safe_dump(config, sort_keys=False)


def manifests(listed, rule_groups, args):
    ns = args.namespace
    meta = lambda name: {"name": name, "namespace": ns, "labels": dict(APP)}
    ports = [{"name": "grpc", "containerPort": args.grpc_port, "protocol": "TCP"},
             {"name": "metrics", "containerPort": args.metrics_port, "protocol": "TCP"}]
    container = {
        "name": "gloowatchd",
        "image": args.image,
        "args": ["--config=/etc/gloowatch/gloowatchd.yaml", "--node=$(NODE_NAME)"],
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "ports": ports,
        "readinessProbe": {"tcpSocket": {"port": "grpc"}, "periodSeconds": 10},
        "livenessProbe": {"tcpSocket": {"port": "metrics"}, "periodSeconds": 30,
                          "failureThreshold": 4},
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"},
                      "limits": {"memory": "256Mi"}},
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534,
                            "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/gloowatch", "readOnly": True}],
    }
    pod = {
        "hostNetwork": True,
        "dnsPolicy": "ClusterFirstWithHostNet",
        "terminationGracePeriodSeconds": 10,
        "tolerations": [{"operator": "Exists"}],
        "containers": [container],
        "volumes": [{"name": "config", "configMap": {"name": "gloowatch-config"}}],
    }
    if args.node_selector:
        key, _, value = args.node_selector.partition("=")
        pod["nodeSelector"] = {key: value}
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("gloowatch-config"),
         "data": {"gloowatchd.yaml": daemon_config(listed, args)}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta("gloowatchd"),
         "spec": {"selector": {"matchLabels": dict(APP)},
                  "updateStrategy": {"type": "RollingUpdate",
                                     "rollingUpdate": {"maxUnavailable": 1}},
                  "template": {"metadata": {"labels": dict(APP)}, "spec": pod}}},
        # Named "gloowatch": a ServiceMonitor's job label is the Service's
        # name, and GloowatchDaemonDown matches up{job="gloowatch"}.
        {"apiVersion": "v1", "kind": "Service", "metadata": meta("gloowatch"),
         "spec": {"clusterIP": "None", "selector": dict(APP),
                  "ports": [{"name": "metrics", "port": args.metrics_port,
                             "targetPort": "metrics", "protocol": "TCP"}]}},
        {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
         "metadata": meta("gloowatch"),
         "spec": {"selector": {"matchLabels": dict(APP)},
                  "namespaceSelector": {"matchNames": [ns]},
                  "endpoints": [{"port": "metrics", "interval": "15s", "path": "/metrics"}]}},
        {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
         "metadata": meta("gloowatch-rules"), "spec": {"groups": rule_groups}},
    ]


class Dumper(yaml.SafeDumper):
    """Multi-line strings (the ConfigMap's file) as literal blocks."""


Dumper.add_representer(
    str, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None))


def main(argv):
    args = parse_args(argv)
    try:
        text = sys.stdin.read() if args.nodes == "-" else open(args.nodes).read()
        node_list = json.loads(text)
    except (OSError, ValueError) as e:
        fail(f"cannot read the node list {args.nodes}: {e}")
    if not isinstance(node_list, dict) or not isinstance(node_list.get("items"), list):
        fail("the node list is not `kubectl get nodes -o json` output (no items)")
    groups = []
    for path in args.rules:
        try:
            with open(path) as f:
                rules = yaml.safe_load(f)
        except (OSError, yaml.YAMLError) as e:
            fail(f"cannot read the rule file {path}: {e}")
        if not isinstance(rules, dict) or not isinstance(rules.get("groups"), list):
            fail(f"{path} has no rule groups")
        groups += rules["groups"]
    docs = manifests(peers(node_list["items"], args), groups, args)
    print("# Rendered by deploy/kubernetes/render.py; do not edit, re-render.")
    sys.stdout.write(yaml.dump_all(docs, Dumper=Dumper, sort_keys=False, width=100))


if __name__ == "__main__":
    main(sys.argv[1:])
