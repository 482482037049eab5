"""OpenMetrics text of what a large gloowatch fleet exports, for backfilling a
Prometheus with `promtool tsdb create-blocks-from openmetrics` (the
dashboard query test and bench/dashboard.sh).

`nodes` daemons in two clusters (racks of 16), each probing `peers` peers of
its own cluster (ring neighbours at +-1, +-2, ..., like the bounded topology
of docs/topology.md), every family the dashboard and the alert rules read
with the daemon's labels (the rtt histogram with its 17 buckets), plus the
target labels Prometheus adds (job, instance, cluster, rack), and the series
deploy/prometheus/gloowatch-records.yml would have recorded from them. Figures vary
per link so that top-N panels have something to rank; one node per cluster
is unreachable from all its probers, some links fail and lose packets, and
every 16th node runs a training rank."""

RTT_BUCKETS = ["1e-05", "2e-05", "5e-05", "0.0001", "0.0002", "0.0005", "0.001", "0.002",
               "0.005", "0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "+Inf"]
REASONS = ["refused", "unreachable", "timeout", "reset", "protocol", "wrong_interface", "other"]


def _topology(nodes, peers):
    """[(cluster, index in cluster, node name, [peer names])]"""
    clusters = {"a": nodes - nodes // 2, "b": nodes // 2}
    out = []
    for cluster, size in clusters.items():
        offsets = []
        k = 1
        while len(offsets) < min(peers, size - 1):
            offsets.append(k)
            if len(offsets) < min(peers, size - 1):
                offsets.append(-k)
            k += 1
        for i in range(size):
            names = [f"{cluster}-{(i + o) % size:04d}" for o in offsets]
            out.append((cluster, i, f"{cluster}-{i:04d}", names))
    return out


def write(prefix, nodes, peers, samples, step_s, end_s, nodes_per_file=100):
    """Writes `samples` scrapes, `step_s` apart, the last at `end_s` (unix
    seconds), into files PREFIX-0.om, PREFIX-1.om, ... of `nodes_per_file`
    daemons each (promtool holds a whole file's series in memory). Returns
    (the files, the number of series)."""
    topo = _topology(nodes, peers)
    files, series = [], 0
    for first in range(0, len(topo), nodes_per_file):
        files.append(f"{prefix}-{len(files)}.om")
        series += _write_file(files[-1], topo[first:first + nodes_per_file], samples, step_s,
                              end_s)
    return files, series


def _write_file(path, topo, samples, step_s, end_s):
    times = [end_s - step_s * (samples - 1 - k) for k in range(samples)]
    series = 0
    with open(path, "w", buffering=1 << 20) as f:
        def family(name, kind):
            f.write(f"# TYPE {name} {kind}\n")

        def emit(name, labels, values):
            nonlocal series
            series += 1
            prefix = f"{name}{{{labels}}} "
            f.write("".join(f"{prefix}{v:.9g} {t}\n" for v, t in zip(values, times)))

        def daemon_labels(cluster, i, node):
            return (f'job="gloowatch",instance="{cluster}{i:04d}.example:10025",cluster="{cluster}",'
                    f'rack="{cluster}-rack-{i // 16}",node="{node}"')

        def links(i, names):
            """(peer, h, down) per link: h, a figure between 0 and 1 fixed for
            the link; down, the peer every prober sees down."""
            return [(peer, ((i * 31 + j * 17) % 97) / 97.0, peer.endswith("-0007"))
                    for j, peer in enumerate(names)]

        def each_link():
            for cluster, i, node, names in topo:
                dl = daemon_labels(cluster, i, node)
                for j, (peer, h, down) in enumerate(links(i, names)):
                    yield dl + f',peer="{peer}"', h, down, i, j

        def failing(h, down, reason):
            return down and reason == "refused" or reason == "timeout" and h > 0.97

        flat = [0.0] * samples
        family("up", "gauge")
        for cluster, i, node, _ in topo:
            emit("up", daemon_labels(cluster, i, node).rsplit(',node=', 1)[0], [1] * samples)
        family("gloowatch_build_info", "gauge")
        for cluster, i, node, _ in topo:
            emit("gloowatch_build_info",
                 daemon_labels(cluster, i, node) + ',version="1.0.0",gloo_version="0.0.0"',
                 [1] * samples)
        family("gloowatch_link_speed_bytes_per_second", "gauge")
        for cluster, i, node, _ in topo:
            speed = 1.25e10 if i % 50 else 3.125e9  # a few 25G NICs among the 100G ones
            emit("gloowatch_link_speed_bytes_per_second",
                 daemon_labels(cluster, i, node) + ',interface="eth0"', [speed] * samples)
        for name, value in (("latency_seconds", 0.002), ("bandwidth_link_ratio", 0.8),
                            ("clock_offset_seconds", 0.1), ("failure_window_seconds", 3600),
                            ("communication_share", 0.3)):
            family(f"gloowatch_threshold_{name}", "gauge")
            for cluster, i, node, _ in topo:
                emit(f"gloowatch_threshold_{name}", daemon_labels(cluster, i, node),
                     [value] * samples)
        for name, per_step in (("bandwidth_probe_seconds", 0.4), ("transport_restarts", 0)):
            family(f"gloowatch_{name}", "counter")
            for cluster, i, node, _ in topo:
                emit(f"gloowatch_{name}_total", daemon_labels(cluster, i, node),
                     [per_step * (1 + i % 3) * k for k in range(samples)])
        for name, per_s in (("step_seconds", 1.0), ("communication_seconds", 0.2),
                            ("steps", 1.0)):
            family(f"gloowatch_training_{name}", "counter")
            for cluster, i, node, _ in topo:
                if i % 16 == 0:
                    labels = daemon_labels(cluster, i, node) + f',training_job="llm-{cluster}",rank="{i // 16}"'
                    emit(f"gloowatch_training_{name}_total", labels,
                         [per_s * step_s * k * (1 + 0.01 * (i % 7)) for k in range(samples)])

        # What deploy/prometheus/gloowatch-records.yml records from the
        # link series below (the same figures, aggregated per daemon).
        wiggle = [0.01 * (k % 3) for k in range(samples)]
        for name, per_node in (
                ("gloowatch_peer_rtt_p50_seconds:max",
                 lambda ls: [6e-5 + 4e-4 * max(h for _, h, _ in ls) * (1 + w) for w in wiggle]),
                ("gloowatch_peer_bandwidth_link_ratio:min",
                 lambda ls: [0.7 + 0.28 * min(h for _, h, _ in ls)] * samples),
                ("gloowatch_peer_tcp_loss_ratio:max",
                 lambda ls: [0.001 * max(h for _, h, _ in ls) * (1 + w) for w in wiggle]),
                ("gloowatch_peer_clock_offset_seconds:abs_max",
                 lambda ls: [max(abs(-0.01 + 0.02 * h + 0.0002 * w * 100) for _, h, _ in ls)
                             for w in wiggle]),
                ("gloowatch_peer_probe_failures:increase5m",
                 lambda ls: [min(k, 5) * sum(failing(h, down, r) for _, h, down in ls
                                             for r in REASONS) for k in range(samples)])):
            family(f"instance:{name}", "gauge")
            for cluster, i, node, names in topo:
                emit(f"instance:{name}", daemon_labels(cluster, i, node), per_node(links(i, names)))
        family("instance:gloowatch_peer_probes:rate5m", "gauge")
        for cluster, i, node, names in topo:
            up_links = sum(1 for _, _, down in links(i, names) if not down)
            for kind, per_min in (("latency", 12), ("skew", 6), ("bandwidth", 0.1)):
                emit("instance:gloowatch_peer_probes:rate5m",
                     daemon_labels(cluster, i, node) + f',kind="{kind}"',
                     [up_links * per_min / 60] * samples)

        family("peer:gloowatch_peer_up:probers_down", "gauge")
        probers = {}
        for cluster, i, node, names in topo:
            for peer, _, down in links(i, names):
                probers[(cluster, peer)] = probers.get((cluster, peer), 0) + down
        for (cluster, peer), count in sorted(probers.items()):
            emit("peer:gloowatch_peer_up:probers_down",
                 f'job="gloowatch",cluster="{cluster}",peer="{peer}"', [count] * samples)

        family("gloowatch_peer_up", "gauge")
        for labels, h, down, i, j in each_link():
            emit("gloowatch_peer_up", labels, [0 if down else 1] * samples)
        for name, base, spread in (("rtt_p50_seconds", 6e-5, 4e-4), ("rtt_p99_seconds", 2e-4, 2e-3),
                                   ("clock_offset_seconds", -0.01, 0.02),
                                   ("clock_offset_error_seconds", 1e-5, 1e-4),
                                   ("tcp_loss_ratio", 0, 0.001)):
            family(f"gloowatch_peer_{name}", "gauge")
            for labels, h, down, i, j in each_link():
                emit(f"gloowatch_peer_{name}", labels,
                     [base + spread * h + spread * 0.01 * (k % 3) for k in range(samples)])
        for name, scale in (("bandwidth_bytes_per_second", 1.25e10), ("bandwidth_link_ratio", 1)):
            family(f"gloowatch_peer_{name}", "gauge")
            for labels, h, down, i, j in each_link():
                for direction in ("tx", "rx"):
                    emit(f"gloowatch_peer_{name}", labels + f',direction="{direction}"',
                         [scale * (0.7 + 0.28 * h)] * samples)
        family("gloowatch_peer_tcp_sent_segments", "counter")
        for labels, h, down, i, j in each_link():
            emit("gloowatch_peer_tcp_sent_segments_total", labels,
                 [20000 * step_s / 60 * k for k in range(samples)])
        family("gloowatch_peer_probe_failures", "counter")
        for labels, h, down, i, j in each_link():
            for reason in REASONS:
                emit("gloowatch_peer_probe_failures_total", labels + f',reason="{reason}"',
                     [k if failing(h, down, reason) else 0 for k in range(samples)])
        family("gloowatch_peer_probes", "counter")
        for labels, h, down, i, j in each_link():
            for kind, per_min in (("latency", 12), ("skew", 6), ("bandwidth", 0.1)):
                emit("gloowatch_peer_probes_total", labels + f',kind="{kind}"',
                     flat if down else [per_min * step_s / 60 * k for k in range(samples)])
        family("gloowatch_peer_rtt_seconds", "histogram")
        for labels, h, down, i, j in each_link():
            per_step = 0 if down else 120 * step_s / 60
            # Cumulative counts: most round trips below 500 us, a tail above.
            first = 3 + int(h * 3)
            for b, le in enumerate(RTT_BUCKETS):
                share = 0 if b < first else min(1.0, 0.6 + 0.1 * (b - first))
                emit("gloowatch_peer_rtt_seconds_bucket", labels + f',le="{le}"',
                     [share * per_step * k for k in range(samples)] if le != "+Inf"
                     else [per_step * k for k in range(samples)])
            emit("gloowatch_peer_rtt_seconds_count", labels, [per_step * k for k in range(samples)])
            emit("gloowatch_peer_rtt_seconds_sum", labels,
                 [per_step * k * (1e-4 + 3e-4 * h) for k in range(samples)])
        f.write("# EOF\n")
    return series
