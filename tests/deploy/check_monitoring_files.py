#!/usr/bin/env python3
"""Structural checks of deploy/prometheus and deploy/grafana that promtool
does not do: every alert has severity, summary, description and a runbook_url
whose anchor is a heading of docs/operations.md, and no `by (...)`
aggregation that would drop routing labels; every alert is unit-tested both
firing and not firing; the dashboard uses the $datasource variable in every
panel and query (no __inputs), references $cluster in every query, shows no
unbounded series (top-N or aggregations by bounded labels only), has the
matrices as heatmaps and Grafana 10+ panel options. Usage: check_monitoring_files.py SOURCE_DIR"""
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
            "GloowatchCommunicationShareHigh", "GloowatchDaemonDown", "GloowatchHostOverloaded",
            "GloowatchTrainingJobHung", "GloowatchTrainingJobDied"}
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
DS = {"type": "prometheus", "uid": "${datasource}"}
if "__inputs" in dash:
    fail("dashboard: declares __inputs; panels use the $datasource variable instead")
if dash.get("schemaVersion", 0) < 38:
    fail(f"dashboard: schemaVersion {dash.get('schemaVersion')} is from before Grafana 10 (38)")
variables = {v["name"]: v for v in dash["templating"]["list"]}
for v in ("datasource", "cluster", "job", "node", "peer", "topn", "training_job"):
    if v not in variables:
        fail(f"dashboard: variable ${v} missing")
for name, v in variables.items():
    if v["type"] != "query":
        continue
    if v.get("datasource") != DS:
        fail(f"dashboard: variable ${name} does not use the $datasource variable")
    query = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
    if name != "cluster" and "$cluster" not in query:
        fail(f"dashboard: variable ${name} ignores $cluster: {query}")
for a in dash["annotations"]["list"]:
    if a.get("datasource") != DS or "$cluster" not in a.get("expr", "$cluster"):
        fail(f"dashboard: annotation {a.get('name')} ignores $datasource or $cluster")

# Labels with a bounded number of values: an aggregation by these alone
# gives a bounded number of series, whatever the size of the fleet.
BOUNDED = {"cluster", "job", "le", "reason", "kind", "training_job", "version", "gloo_version",
           "direction", "interface"}


# Variables holding the $topn worst nodes (query_result of a top-N): a
# selector restricted to them has at most $topn nodes' links.
TOP_NODES = {name for name, v in variables.items()
             if re.match(r"query_result\((topk|bottomk)\(",
                         v["query"]["query"] if isinstance(v.get("query"), dict)
                         else v.get("query", ""))}


def bounded(expr):
    """Whether a query returns a number of series that does not grow with the
    fleet: a top-N, the links of a top-N variable's nodes, or an aggregation
    by bounded labels only."""
    if re.search(r"\b(topk|bottomk)\s*\(", expr):
        return True
    if any(f'node=~"${name}"' in expr for name in TOP_NODES):
        return True
    e = re.sub(r"^\s*sort(_desc)?\(", "", expr)
    if not re.match(r"\s*(sum|count|count_values|min|max|avg|group)\b", e):
        return False
    if re.search(r"\bwithout\s*\(", e):
        return False
    return all(set(re.split(r"\s*,\s*", labels.strip())) <= BOUNDED
               for labels in re.findall(r"\bby\s*\(([^)]*)\)", e))


def all_panels(panels):
    for p in panels:
        yield p
        yield from all_panels(p.get("panels", []))


panels = [p for p in all_panels(dash["panels"]) if p["type"] != "row"]
ids = [p["id"] for p in all_panels(dash["panels"])]
if len(ids) != len(set(ids)):
    fail("dashboard: duplicate panel ids")
for p in panels:
    where = f"dashboard panel '{p['title']}'"
    if p.get("datasource") != DS:
        fail(f"{where}: datasource is not the $datasource variable")
    if not p.get("targets"):
        fail(f"{where}: no query")
    for t in p.get("targets", []):
        if t.get("datasource") != DS:
            fail(f"{where} {t.get('refId')}: datasource is not the $datasource variable")
        expr = t.get("expr", "")
        if "$cluster" not in expr:
            fail(f"{where} {t.get('refId')}: query ignores $cluster: {expr}")
        if not bounded(expr):
            fail(f"{where} {t.get('refId')}: unbounded query (no top-N, no aggregation by "
                 f"bounded labels): {expr}")
    custom = p.get("fieldConfig", {}).get("defaults", {}).get("custom", {})
    if p["type"] == "table" and "displayMode" in custom:
        fail(f"{where}: custom.displayMode is the pre-Grafana 10 table option (cellOptions)")
    if p["type"] == "heatmap" and ("calculate" not in p.get("options", {})
                                   or "dataFormat" in p.get("options", {})):
        fail(f"{where}: not the Grafana 9+ heatmap options (options.calculate)")

text = json.dumps(dash)
# Recorded series the dashboard reads must be recorded by the shipped rules.
records = yaml.safe_load(open(f"{src}/deploy/prometheus/gloowatch-records.yml"))
recorded = {r["record"] for g in records["groups"] for r in g["rules"]}
for metric in set(re.findall(r"\b[a-z_]+:[a-z_0-9]+:[a-z_0-9]+\b", text)):
    if metric not in recorded:
        fail(f"dashboard: reads {metric}, which deploy/prometheus/gloowatch-records.yml does not record")
for metric in ("gloowatch_peer_rtt_p50_seconds", "gloowatch_peer_rtt_p99_seconds",
               "gloowatch_peer_bandwidth_bytes_per_second", "gloowatch_peer_bandwidth_link_ratio",
               "gloowatch_peer_clock_offset_seconds", "gloowatch_peer_clock_offset_error_seconds",
               "gloowatch_peer_probe_failures_total", "gloowatch_training_communication_seconds_total",
               "gloowatch_peer_up", "gloowatch_peer_tcp_loss_ratio"):
    if metric not in text:
        fail(f"dashboard: no panel uses {metric}")
# The matrices as heatmaps: node x peer tables coloured by value.
for metric in ("gloowatch_peer_rtt_p50_seconds", "gloowatch_peer_tcp_loss_ratio",
               "gloowatch_peer_bandwidth_link_ratio"):
    if not any(any(t.get("id") == "groupingToMatrix" for t in p.get("transformations", []))
               and p["fieldConfig"]["defaults"].get("custom", {}).get("cellOptions", {})
               .get("type") == "color-background"
               and any(metric in t["expr"] for t in p["targets"]) for p in panels):
        fail(f"dashboard: no {metric} matrix heatmap (groupingToMatrix, colour-background cells)")

for f in failures:
    print("FAIL:", f)
print(f"checked {len(alerts)} alerts, {len(panels)} dashboard panels")
sys.exit(1 if failures else 0)
