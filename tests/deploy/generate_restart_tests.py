#!/usr/bin/env python3
"""Writes deploy/prometheus/tests/gloowatch-restarts.test.yml: promtool tests that a peer restart and
a rolling restart of 8 nodes raise nothing but the restarting node's
GloowatchDaemonDown (and that only while it is down for longer than 5 min).

The series are what 8 daemons in a full mesh export, scraped every 15 s,
while nodes restart (daemon/metrics/metrics.cc,
daemon/peers/peer_tracker.cc):
- the restarting daemon is not scraped: `up` is 0, its series go stale;
  when it is back, every series of it starts again (counters from 0, peer_up
  0 until its pairs connect, build_info with the new version);
- every other daemon sees its link to it fail: peer_up 0 within gloo.timeout,
  a `reset` per broken pair, then a `refused` per reconnect attempt under
  the capped exponential backoff (0.5 s doubling to 30 s), connected again
  at the first attempt after the peer is back;
- gauges of the link (round trip, offset, bandwidth, loss) keep their last
  values, as the daemon keeps exporting them.
Run with --check to compare with the committed file instead of writing it.
Usage: generate_restart_tests.py [--check]"""
import os
import sys

STEP = 15  # seconds, the scrape interval of deploy/prometheus/prometheus.yml
NODES = [f"gpu-{i}" for i in range(8)]
REASONS = ["refused", "unreachable", "timeout", "reset", "protocol", "wrong_interface", "other"]
BACKOFF_INITIAL, BACKOFF_MAX = 0.5, 30.0
ALERTS = ["GloowatchPeerDown", "GloowatchLatencyHigh", "GloowatchBandwidthLow",
          "GloowatchPacketLoss", "GloowatchClockSkew", "GloowatchProbeFailuresRising",
          "GloowatchCommunicationShareHigh", "GloowatchDaemonDown", "GloowatchHostOverloaded",
          "GloowatchTrainingJobHung", "GloowatchTrainingJobDied"]


def instance(node):
    return f"10.0.0.{NODES.index(node) + 1}:7610"


def rack(node):
    return f"rack-{NODES.index(node) // 4}"


def target_labels(node):
    return f'job="gloowatch",instance="{instance(node)}",cluster="train",rack="{rack(node)}"'


def reconnect_attempts(down_s, up_s):
    """Times of the reconnect attempts after a link broke at down_s; the last
    is the first one at or after up_s (it succeeds)."""
    times, t, wait = [], down_s, BACKOFF_INITIAL
    while True:
        t += wait
        times.append(t)
        if t >= up_s:
            return times
        wait = min(wait * 2, BACKOFF_MAX)


def encode(values):
    """promtool's expanding notation: runs of a constant step as a+bxn,
    missing samples as _xn, stale markers as 'stale'."""
    out, i = [], 0
    while i < len(values):
        v = values[i]
        if v is None or v == "stale":
            j = i
            while j < len(values) and values[j] == v:
                j += 1
            word = "_" if v is None else "stale"
            out.append(f"{word}x{j - i}" if j - i > 1 else word)
            i = j
            continue
        j = i + 1
        step = None
        while j < len(values) and isinstance(values[j], (int, float)):
            d = values[j] - values[j - 1]
            if step is None:
                step = d
            elif d != step:
                break
            j += 1
        if step is None or j - i == 2 and step != 0:
            out.append(f"{v:.12g}")
            i += 1
            continue
        sign = "+" if step >= 0 else "-"
        out.append(f"{v:.12g}{sign}{abs(step):.12g}x{j - i - 1}")
        i = j
    return " ".join(out)


def scenario(minutes, outages):
    """Series of the 8-node mesh over `minutes`; outages: {node: (down_s,
    up_s)}, the daemon stopped at down_s and serving again at up_s."""
    n = minutes * 60 // STEP + 1
    times = [k * STEP for k in range(n)]

    def scraped(node, t):
        o = outages.get(node)
        return not o or not (o[0] <= t < o[1])

    def restarted_at(node, t):
        o = outages.get(node)
        return o[1] if o and t >= o[1] else None

    def own(node, fn):
        """A series node exports: stale once its scrape fails, absent while
        down, fn(t) otherwise (fn sees the restart through restarted_at)."""
        vals, was_up = [], True
        for t in times:
            if scraped(node, t):
                vals.append(fn(t))
                was_up = True
            else:
                vals.append("stale" if was_up else None)
                was_up = False
        return vals

    series = []

    def add(name, labels, vals):
        series.append({"series": f"{name}{{{labels}}}", "values": encode(vals)})

    for node in NODES:
        tl = target_labels(node)
        add("up", tl, [1 if scraped(node, t) else 0 for t in times])
        o = outages.get(node)
        alive = own(node, lambda t: 1)
        if o:  # an upgrade: the version label changes with the restart
            add("gloowatch_build_info", f'{tl},node="{node}",version="0.9.0",gloo_version="0.0.0"',
                [v if t < o[1] else None for t, v in zip(times, alive)])
            add("gloowatch_build_info", f'{tl},node="{node}",version="1.0.0",gloo_version="0.0.0"',
                [None if t < o[1] else v for t, v in zip(times, alive)])
        else:
            add("gloowatch_build_info", f'{tl},node="{node}",version="0.9.0",gloo_version="0.0.0"', alive)
        for gauge, value in (("latency_seconds", 0.002), ("bandwidth_link_ratio", 0.8),
                             ("clock_offset_seconds", 0.1), ("failure_window_seconds", 3600),
                             ("communication_share", 0.3)):
            add(f"gloowatch_threshold_{gauge}", f'{tl},node="{node}"',
                own(node, lambda t, v=value: v))
        add("gloowatch_transport_restarts_total", f'{tl},node="{node}"', own(node, lambda t: 0))
        # One training job's rank per host, 10% of each 1 s step communicating,
        # its process running all along (the daemon restarts, not the job): 50
        # collectives a second, each inside for a few ms when scraped.
        rl = f'{tl},node="{node}",training_job="llm",rank="{NODES.index(node)}"'
        for metric, per_s in (("step_seconds_total", 1.0),
                              ("communication_seconds_total", 0.1), ("steps_total", 1.0)):
            add(f"gloowatch_training_{metric}", rl,
                own(node, lambda t, r=per_s: r * (t - (restarted_at(node, t) or 0))))
        add("gloowatch_training_collective_seconds", rl, own(node, lambda t: 0.002))
        add("gloowatch_training_collective_seq", rl, own(node, lambda t: 50 * t))
        add("gloowatch_training_report_age_seconds", rl, own(node, lambda t: 0.5))
        for state in ("running", "stopped", "gone"):
            add("gloowatch_training_rank_process_state", f'{rl},state="{state}"',
                own(node, lambda t, s=state: 1 if s == "running" else 0))

        for peer in NODES:
            if peer == node:
                continue
            ll = f'{tl},node="{node}",peer="{peer}"'
            po = outages.get(peer)
            # The link breaks gloo.timeout (5 s) after the peer stops; the
            # reconnect succeeds at the first backoff attempt after it is back.
            attempts = reconnect_attempts(po[0] + 5, po[1]) if po else []
            link_back = attempts[-1] if attempts else None

            def link_up(t, po=po, link_back=link_back, node=node):
                if po and po[0] + 5 <= t < link_back:
                    return 0
                since = restarted_at(node, t)
                if since is not None and t < since + 2:  # own pairs connecting
                    return 0
                return 1

            add("gloowatch_peer_up", ll, own(node, link_up))

            def failures(t, reason, attempts=attempts, po=po, node=node):
                since = restarted_at(node, t) or 0
                if reason == "reset":  # command and bulk pair broken
                    return 2 if po and since <= po[0] + 5 <= t else 0
                if reason == "refused":  # all attempts but the last one
                    return sum(1 for a in attempts[:-1] if since <= a <= t)
                return 0

            for reason in REASONS:
                add("gloowatch_peer_probe_failures_total", f'{ll},reason="{reason}"',
                    own(node, lambda t, r=reason: failures(t, r)))
            add("gloowatch_peer_rtt_p50_seconds", ll, own(node, lambda t: 0.0003))
            add("gloowatch_peer_clock_offset_seconds", ll, own(node, lambda t: 0.004))
            for direction in ("tx", "rx"):
                add("gloowatch_peer_bandwidth_link_ratio", f'{ll},direction="{direction}"',
                    own(node, lambda t: 0.93))
            add("gloowatch_peer_tcp_loss_ratio", ll, own(node, lambda t: 0.0004))
            add("gloowatch_peer_tcp_sent_segments_total", ll,
                own(node, lambda t: 400 * (t - (restarted_at(node, t) or 0))))
    return series


def quiet_checks(minutes, expected):
    """Every alert at every minute: nothing but `expected(alert, minute)`."""
    checks = []
    for minute in range(1, minutes + 1):
        for alert in ALERTS:
            checks.append({"eval_time": f"{minute}m", "alertname": alert,
                           "exp_alerts": expected(alert, minute)})
    return checks


def daemon_down(node):
    return {"exp_labels": {"severity": "critical", "job": "gloowatch",
                           "instance": instance(node), "cluster": "train", "rack": rack(node),
                           "node": node, "peer": node},
            "exp_annotations": {
                "summary": f"gloowatchd at {instance(node)} is not being scraped",
                "description": f"Prometheus has not scraped gloowatchd at {instance(node)} for "
                               "5 minutes. Without it, the links of that host are not watched.",
                "runbook_url": "https://gloowatch.example.org/docs/operations.md"
                               "#gloowatchdaemondown"}}


def main():
    tests = []
    # A single peer restart of 7 minutes (a slow upgrade): gpu-3 is down from
    # 10m to 17m. Only its GloowatchDaemonDown fires, from 15m while it is
    # down; nothing for its 14 links, during or after.
    down, up = 10 * 60, 17 * 60
    minutes = 40
    tests.append({
        "name": "a 7-minute restart of one node raises only its GloowatchDaemonDown, while it is down",
        "interval": f"{STEP}s",
        "input_series": scenario(minutes, {"gpu-3": (down, up)}),
        "alert_rule_test": quiet_checks(
            minutes, lambda a, m: [daemon_down("gpu-3")]
            if a == "GloowatchDaemonDown" and down / 60 + 5 <= m < up / 60 else []),
    })
    # A rolling restart of all 8 nodes, one after the other every 2 minutes,
    # each down for 90 s: nothing at all fires, during or after.
    outages = {node: (300 + 120 * i, 300 + 120 * i + 90) for i, node in enumerate(NODES)}
    minutes = 45
    tests.append({
        "name": "a rolling restart of 8 nodes (90 s down each, 2 min apart) raises nothing",
        "interval": f"{STEP}s",
        "input_series": scenario(minutes, outages),
        "alert_rule_test": quiet_checks(minutes, lambda a, m: []),
    })

    import yaml
    text = ("# Generated by tests/deploy/generate_restart_tests.py; do not edit (the\n"
            "# prometheus_rules_test checks it is up to date).\n"
            "# promtool test rules gloowatch-restarts.test.yml\n")
    text += yaml.safe_dump({"rule_files": ["../gloowatch-alerts.yml"],
                            "evaluation_interval": f"{STEP}s", "tests": tests},
                           sort_keys=False, width=1000)
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "deploy", "prometheus", "tests",
                        "gloowatch-restarts.test.yml")
    if "--check" in sys.argv[1:]:
        if open(path).read() != text:
            print(f"FAIL: {path} is not what generate_restart_tests.py writes; rerun it")
            return 1
        return 0
    with open(path, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
