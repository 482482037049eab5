#!/usr/bin/env python3
"""deploy/alertmanager/gloowatch-alertmanager.yml: amtool accepts it, its
inhibit rules name only alerts the rules file has and cover every link alert,
and a real Alertmanager (started here on loopback) applied to a set of
firing alerts silences exactly the ones it should: a down daemon's links in
both directions and a down link's other alerts, in its own cluster only.
Usage: alertmanager_test.py SOURCE_DIR"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_server import serve, stop  # noqa: E402

src = sys.argv[1]
config = f"{src}/deploy/alertmanager/gloowatch-alertmanager.yml"
binary = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
amtool = shutil.which("amtool")
if not binary or not amtool:
    print("SKIP: Alertmanager not installed (package prometheus-alertmanager)")
    sys.exit(77)
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


check = subprocess.run([amtool, "check-config", config], capture_output=True, text=True)
if check.returncode != 0:
    fail(f"amtool check-config: {check.stdout}{check.stderr}")

# The inhibit rules and the alert rules must agree on the alert names.
rules = yaml.safe_load(open(f"{src}/deploy/prometheus/gloowatch-alerts.yml"))
alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
am = yaml.safe_load(open(config))
targeted = set()
for rule in am["inhibit_rules"]:
    for matcher in rule["source_matchers"] + rule["target_matchers"]:
        names = matcher.split("=", 1)[1].strip().strip("~").strip().strip('"').split("|")
        if matcher in rule["target_matchers"]:
            targeted.update(names)
        for name in names:
            if name not in alerts:
                fail(f"inhibit rule names {name}, which deploy/prometheus has no alert for")
for name in ("GloowatchPeerDown", "GloowatchLatencyHigh", "GloowatchBandwidthLow",
             "GloowatchPacketLoss", "GloowatchClockSkew", "GloowatchProbeFailuresRising"):
    if name not in targeted:
        fail(f"{name} is a link alert but no inhibit rule silences it")



def alert(name, **labels):
    return {"labels": {"alertname": name, "job": "gloowatch", **labels},
            "annotations": {"summary": name}}


# name -> (alert, expected to be inhibited)
cases = {
    "b down": (alert("GloowatchDaemonDown", cluster="c1", instance="b:10025", node="node-b",
                     peer="node-b", severity="critical"), False),
    "a->b down, b's daemon down": (alert("GloowatchPeerDown", cluster="c1", instance="a:10025",
                                         node="node-a", peer="node-b"), True),
    "b->c slow, b's daemon down": (alert("GloowatchLatencyHigh", cluster="c1",
                                         instance="b:10025", node="node-b", peer="node-c"), True),
    "b's job, b's daemon down": (alert("GloowatchCommunicationShareHigh", cluster="c1",
                                       instance="b:10025", node="node-b", training_job="llm"),
                                 True),
    "a->b down in the other cluster": (alert("GloowatchPeerDown", cluster="c2",
                                             instance="a:10025", node="node-a", peer="node-b"),
                                       False),
    "a->c down": (alert("GloowatchPeerDown", cluster="c1", instance="a:10025", node="node-a",
                        peer="node-c"), False),
    "a->c failing, a->c down": (alert("GloowatchProbeFailuresRising", cluster="c1",
                                      instance="a:10025", node="node-a", peer="node-c"), True),
    "c->a failing": (alert("GloowatchProbeFailuresRising", cluster="c1", instance="c:10025",
                           node="node-c", peer="node-a"), False),
    "a's job": (alert("GloowatchCommunicationShareHigh", cluster="c1", instance="a:10025",
                      node="node-a", training_job="llm"), False),
    # A hung job is never held back: a link down between its hosts is its
    # likely cause, not a reason to stay quiet about it.
    "a's job hung, a->c down": (alert("GloowatchTrainingJobHung", cluster="c1",
                                      instance="a:10025", node="node-a", training_job="llm",
                                      severity="critical"), False),
    # A job that died inside a collective is reported as such, on its own.
    "a's job died in a collective": (alert("GloowatchTrainingJobDied", cluster="c1",
                                           instance="a:10025", node="node-a",
                                           training_job="llm", how="died_in_collective",
                                           severity="warning"), False),
    "d overloaded": (alert("GloowatchHostOverloaded", cluster="c1", instance="d:10025",
                           node="node-d", severity="warning"), False),
    "d->a lossy, d overloaded": (alert("GloowatchPacketLoss", cluster="c1", instance="d:10025",
                                       node="node-d", peer="node-a"), True),
    "a->d slow": (alert("GloowatchLatencyHigh", cluster="c1", instance="a:10025",
                        node="node-a", peer="node-d"), False),
}

tmp = tempfile.mkdtemp(prefix="gloowatch-alertmanager-")
body = json.dumps([a for a, _ in cases.values()]).encode()


def post_alerts(port):  # ready once it listens and has taken the alerts
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v2/alerts", body,
                                 {"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=2).read()


proc = None
try:
    proc, port = serve(lambda port: [binary, f"--config.file={config}", f"--storage.path={tmp}",
                                     f"--web.listen-address=127.0.0.1:{port}",
                                     "--cluster.listen-address="],
                       f"{tmp}/log", post_alerts, 30)
    url = f"http://127.0.0.1:{port}/api/v2/alerts"

    def key(labels):
        return tuple(sorted(labels.items()))

    want = {key(a["labels"]): (name, inhibited) for name, (a, inhibited) in cases.items()}
    # The inhibitor sees the sources asynchronously: poll (bounded) until the
    # answer matches, then report what differs.
    deadline = time.monotonic() + 20
    while True:
        got = {key(a["labels"]): bool(a["status"]["inhibitedBy"])
               for a in json.load(urllib.request.urlopen(url, timeout=5))}
        wrong = [(name, inhibited) for k, (name, inhibited) in want.items()
                 if got.get(k) != inhibited]
        if not wrong or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    for name, inhibited in wrong:
        fail(f"{name}: expected {'inhibited' if inhibited else 'not inhibited'}")
    print(f"checked {len(cases)} alerts against a real Alertmanager")
finally:
    if proc:
        stop(proc)
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures else 0)
