#!/usr/bin/env python3
"""Every query of deploy/grafana/gloowatch-dashboard.json (panel targets and
variables, with the variables at their defaults: All, top 10) against a real
Prometheus holding a large fleet's series: backfilled with `promtool tsdb
create-blocks-from openmetrics` from tests/deploy/dashboard_series.py,
Prometheus started here on loopback with a temporary tsdb and no scrape
targets. Every query must answer without error and return data; the time
of each is printed, the slowest last. The alert annotations only must parse
(nothing fires in a backfill).

  dashboard_queries_test.py SOURCE_DIR [--nodes N] [--peers P] [--samples S] [--runs R]
                            [--target-seconds T]

With --target-seconds (bench/dashboard.sh) the slowest query's median over
--runs is compared with T and printed as "met" or "SHORT"; the exit status
then only reflects errors and empty answers, never the time."""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashboard_series  # noqa: E402
from local_server import serve, stop  # noqa: E402

STEP_S = 60



def substitute(expr, span_s, computed):
    values = {**computed, "__rate_interval": f"{4 * STEP_S}s", "__interval": f"{STEP_S}s",
              "__range": f"{span_s}s", "cluster": ".*", "job": ".*", "node": ".*",
              "peer": ".*", "training_job": ".*", "topn": "10"}
    out = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: values.get(m.group(1) or m.group(2), m.group(0)),
                 expr)
    if "$" in out:
        raise SystemExit(f"FAIL: unknown Grafana variable in {expr}")
    return out


def computed_variables(dash):
    """{name: (promql, regex)} of the query_result() variables, whose values
    (a query's answer) the panels' queries use."""
    out = {}
    for v in dash["templating"]["list"]:
        q = v.get("query", {})
        q = q.get("query", "") if isinstance(q, dict) else q
        m = re.fullmatch(r"query_result\((.*)\)", q)
        if m:
            out[v["name"]] = (m.group(1), v.get("regex", "").strip("/"))
    return out


def queries(dash, span_s, computed):
    """[(where, promql, instant, must_have_data)]"""
    out = []

    def walk(panels):
        for p in panels:
            walk(p.get("panels", []))
            for t in p.get("targets", []):
                out.append((f"panel '{p['title']}' {t['refId']}", substitute(t["expr"], span_s, computed),
                            bool(t.get("instant")), True))

    walk(dash["panels"])
    for v in dash["templating"]["list"]:
        if v["type"] != "query":
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", q)
        if v["name"] in computed:
            continue  # evaluated before the panels' queries
        if not m:
            raise SystemExit(f"FAIL: variable ${v['name']}: cannot read {q}")
        # Grafana asks the label values API for these, not a query.
        out.append((f"variable ${v['name']}", ("label", m.group(2),
                                               substitute(m.group(1), span_s, computed)),
                    True, True))
    for a in dash["annotations"]["list"]:
        if "expr" in a:
            out.append((f"annotation {a['name']}", substitute(a["expr"], span_s, computed), False, False))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--peers", type=int, default=6)
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--target-seconds", type=float)
    ap.add_argument("--keep-tsdb", metavar="DIR",
                    help="backfill into DIR and keep it; reuse it if it holds blocks already")
    args = ap.parse_args()
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if not prometheus or not promtool:
        print("SKIP: prometheus/promtool not installed (package prometheus)")
        return 77
    dash = json.load(open(f"{args.src}/deploy/grafana/gloowatch-dashboard.json"))
    span_s = STEP_S * (args.samples - 1)

    tmp = tempfile.mkdtemp(prefix="gloowatch-dashboard-")
    proc = None
    try:
        t0 = time.monotonic()
        # The last sample a minute ago: the queries run "now", within the
        # 5-minute lookback of the last sample.
        end_s = int(time.time()) // STEP_S * STEP_S - STEP_S
        tsdb = args.keep_tsdb or f"{tmp}/tsdb"
        stamp = f"{tsdb}/gloowatch-backfill-end"
        if args.keep_tsdb and os.path.exists(stamp):
            end_s = int(open(stamp).read())
            print(f"reusing {tsdb}, last sample {int(time.time()) - end_s} s ago")
        else:
            files, series = dashboard_series.write(f"{tmp}/fleet", args.nodes, args.peers,
                                                   args.samples, STEP_S, end_s)
            t1 = time.monotonic()
            for om in files:
                backfill = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics",
                                           om, tsdb], capture_output=True, text=True)
                if backfill.returncode != 0:
                    print(f"FAIL: promtool backfill: {backfill.stderr[-2000:]}")
                    return 1
                os.remove(om)
            with open(stamp, "w") as f:
                f.write(str(end_s))
            print(f"{args.nodes} nodes x {args.peers} peers: {series} series x {args.samples} "
                  f"samples ({STEP_S} s apart); generated in {t1 - t0:.1f} s, backfilled in "
                  f"{time.monotonic() - t1:.1f} s")
        t2 = time.monotonic()

        with open(f"{tmp}/prometheus.yml", "w") as f:
            f.write("global:\n  scrape_interval: 60s\n")
        proc, port = serve(
            lambda port: [prometheus, f"--config.file={tmp}/prometheus.yml",
                          f"--storage.tsdb.path={tsdb}", f"--web.listen-address=127.0.0.1:{port}",
                          "--storage.tsdb.retention.time=30d", "--log.level=warn"],
            f"{tmp}/log",
            lambda port: urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready",
                                                timeout=2).read(),
            120)
        base = f"http://127.0.0.1:{port}"
        print(f"Prometheus ready after {time.monotonic() - t2:.1f} s")

        def run(promql, instant):
            if isinstance(promql, tuple):  # ("label", name, selector)
                params = {"match[]": promql[2], "start": end_s - span_s, "end": end_s}
                path = f"/api/v1/label/{promql[1]}/values"
            elif instant:
                params = {"query": promql, "time": end_s}
                path = "/api/v1/query"
            else:
                params = {"query": promql, "start": end_s - span_s, "end": end_s, "step": STEP_S}
                path = "/api/v1/query_range"
            start = time.monotonic()
            try:
                body = urllib.request.urlopen(
                    f"{base}{path}?{urllib.parse.urlencode(params)}", timeout=60).read()
            except urllib.error.HTTPError as e:
                return None, e.read().decode(errors="replace"), time.monotonic() - start
            took = time.monotonic() - start
            reply = json.loads(body)
            data = reply["data"]  # a list of values from the label values API
            return (data if isinstance(data, list) else data["result"]), None, took

        failures, timings = 0, []
        # query_result() variables first: Grafana substitutes what they
        # answered (all of it: the variable is at All) as a regex.
        computed = {}
        for name, (promql, regex) in computed_variables(dash).items():
            promql = substitute(promql, span_s, {})
            result, error, took = run(promql, True)
            values = sorted({m.group(1) for r in (result or [])
                             for m in [re.search(regex, json.dumps(r["metric"], separators=(",", ":"))
                                                 .replace('":"', '="'))] if m})
            if error or not values:
                print(f"FAIL: variable ${name}: {error or 'no values'}\n  {promql}")
                return 1
            # Grafana's escaping for Prometheus: a regex metacharacter gets
            # a backslash, itself escaped for the PromQL string.
            escaped = [re.sub(r"([$^*{}\[\]'+?.()|\\])", r"\\\\\1", v) for v in values]
            computed[name] = "(" + "|".join(escaped) + ")"
            timings.append((took, f"variable ${name}", len(values)))
        todo = queries(dash, span_s, computed)
        for where, promql, instant, must_have_data in todo:
            times = []
            for _ in range(args.runs):
                result, error, took = run(promql, instant)
                times.append(took)
                if error:
                    break
            if error:
                print(f"FAIL: {where}: {error}\n  {promql}")
                failures += 1
                continue
            if must_have_data and not result:
                print(f"FAIL: {where}: no data\n  {promql}")
                failures += 1
                continue
            timings.append((statistics.median(times), where, len(result)))
        for took, where, n in sorted(timings):
            print(f"{took * 1000:9.1f} ms  {n:6d} series  {where}")
        if timings:
            took, where, _ = max(timings)
            verdict = ""
            if args.target_seconds:
                verdict = "  met" if took < args.target_seconds else "  SHORT"
                verdict += f" (target < {args.target_seconds:g} s)"
            print(f"slowest dashboard query at {args.nodes} nodes x {args.peers} peers: "
                  f"{took * 1000:.0f} ms ({where}){verdict}")
        print(f"{len(todo)} queries, {failures} failed")
        return 1 if failures else 0
    finally:
        if proc:
            stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
