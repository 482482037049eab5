#!/usr/bin/env python3
"""Structural checks of deploy/prometheus and deploy/grafana that promtool
does not do: every alert has severity, summary, description and a runbook_url
whose anchor is a heading of docs/operations.md; every alert is unit-tested
both firing and not firing; the dashboard is valid JSON with the promised
variables and panels. Usage: check_monitoring_files.py SOURCE_DIR"""
import json
import re
import sys

import yaml

src = sys.argv[1]
failures = []


def fail(msg):
    failures.append(msg)


rules = yaml.safe_load(open(f"{src}/deploy/prometheus/gloowatch-alerts.yml"))
alerts = {r["alert"]: r for g in rules["groups"] for r in g["rules"] if "alert" in r}
expected = {"GloowatchPeerDown", "GloowatchLatencyHigh", "GloowatchBandwidthLow",
            "GloowatchClockSkew", "GloowatchPacketLoss", "GloowatchProbeFailuresRising",
            "GloowatchCommunicationShareHigh", "GloowatchDaemonDown"}
if set(alerts) != expected:
    fail(f"alerts {sorted(alerts)} != {sorted(expected)}")

ops = open(f"{src}/docs/operations.md").read()
headings = {h.strip() for h in re.findall(r"^#{2,4} (.+)$", ops, re.M)}
for name, rule in alerts.items():
    if rule.get("labels", {}).get("severity") not in ("critical", "warning", "info"):
        fail(f"{name}: severity label missing or unknown")
    if "for" not in rule:
        fail(f"{name}: no for:")
    ann = rule.get("annotations", {})
    for key in ("summary", "description", "runbook_url"):
        if not ann.get(key):
            fail(f"{name}: annotation {key} missing")
    # Routing labels (cluster, instance, job, node, topology target labels)
    # survive only aggregations `without` the per-peer labels.
    if re.search(r"\bby\s*\(", rule["expr"]):
        fail(f"{name}: aggregates `by (...)`, which drops the routing labels; use without (...)")
    url = ann.get("runbook_url", "")
    if not url.endswith(f"docs/operations.md#{name.lower()}"):
        fail(f"{name}: runbook_url {url} does not point at docs/operations.md#{name.lower()}")
    if name not in headings:
        fail(f"{name}: no '### {name}' runbook section in docs/operations.md")

tests = yaml.safe_load(open(f"{src}/deploy/prometheus/tests/gloowatch-alerts.test.yml"))
fires, quiet = set(), set()
for group in tests["tests"]:
    for case in group.get("alert_rule_test", []):
        (fires if case.get("exp_alerts") else quiet).add(case["alertname"])
for name in alerts:
    if name not in fires:
        fail(f"{name}: no promtool test where it fires")
    if name not in quiet:
        fail(f"{name}: no promtool test where it does not fire")

dash = json.load(open(f"{src}/deploy/grafana/gloowatch-dashboard.json"))
variables = {v["name"] for v in dash["templating"]["list"]}
for v in ("node", "peer", "job"):
    if v not in variables:
        fail(f"dashboard: variable ${v} missing")
ids = [p["id"] for p in dash["panels"]]
if len(ids) != len(set(ids)):
    fail("dashboard: duplicate panel ids")
text = json.dumps(dash)
for metric in ("gloowatch_peer_rtt_p50_seconds", "gloowatch_peer_rtt_p99_seconds",
               "gloowatch_peer_bandwidth_bytes_per_second", "gloowatch_peer_bandwidth_link_ratio",
               "gloowatch_peer_clock_offset_seconds", "gloowatch_peer_clock_offset_error_seconds",
               "gloowatch_peer_probe_failures_total", "gloowatch_training_communication_seconds_total",
               "gloowatch_peer_up"):
    if metric not in text:
        fail(f"dashboard: no panel uses {metric}")
if not any(t.get("id") == "groupingToMatrix" for p in dash["panels"]
           for t in p.get("transformations", [])):
    fail("dashboard: no latency matrix (groupingToMatrix) panel")

for f in failures:
    print("FAIL:", f)
print(f"checked {len(alerts)} alerts, {len(dash['panels'])} dashboard panels")
sys.exit(1 if failures else 0)
