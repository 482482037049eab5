#!/usr/bin/python3
"""Cost of gloowatch_report inside a training loop: per step (rep.step() +
rep.comm() around an empty body) and per instrumented collective (an
all_reduce of one float in a one-rank gloo group, wrapped by instrument()
vs torch's own), each against a real gloowatchd on loopback that is (a)
live and (b) hung (SIGSTOPped). Target: <= 10 us each, in every case.

Usage: bench/reporter_overhead.py BUILD_DIR [--steps N]
Figures are the median of 9 rounds; each round's figure is the mean of N
iterations, less the same loop without the reporter."""
import argparse
import datetime
import os
import signal
import statistics
import sys
import time

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "client", "reporter"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "client", "torch"))

TARGET_US = 10.0
ROUNDS = 9


def per_iteration_us(fn, n):
    start = time.perf_counter()
    fn(n)
    return (time.perf_counter() - start) / n * 1e6


def median_difference(with_fn, without_fn, n):
    diffs = []
    for _ in range(ROUNDS):  # interleaved: drift in machine load hits both
        diffs.append(per_iteration_us(with_fn, n) - per_iteration_us(without_fn, n))
    return statistics.median(diffs)


def step_loops(rep):
    def with_rep(n):
        for _ in range(n):
            with rep.step():
                with rep.comm():
                    pass

    def bare(n):
        for _ in range(n):
            pass
    return with_rep, bare


def collective_loops(dist, torch, wrapped, original):
    t = torch.ones(1)

    def with_rep(n):
        for _ in range(n):
            wrapped(t)

    def bare(n):
        for _ in range(n):
            original(t)
    return with_rep, bare


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build_dir")
    p.add_argument("--steps", type=int, default=20000)
    a = p.parse_args()
    os.environ["GLOOWATCH_BIN_DIR"] = os.path.realpath(a.build_dir)
    import gloowatch_report
    from gloowatchd_fixture import Daemon, free_port
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)

    daemon = Daemon(node="bench-reporter").start()
    try:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
        dist.init_process_group("gloo", rank=0, world_size=1,
                                timeout=datetime.timedelta(seconds=30))
        original = dist.all_reduce
        rep = gloowatch_report.instrument(job="bench", rank=0, daemon=daemon.grpc, timeout=1.0,
                                          flush_interval=0.1)
        wrapped = dist.all_reduce
        rows = []
        for state in ("live", "hung"):
            if state == "hung":
                daemon.signal(signal.SIGSTOP)
            accepted, dropped = rep.accepted, rep.dropped
            step_us = median_difference(*step_loops(rep), a.steps)
            with rep.step():  # collectives inside a step, as in training
                coll_us = median_difference(*collective_loops(dist, torch, wrapped, original),
                                            a.steps // 4)
            rep.flush(1.5)
            rows.append((state, step_us, coll_us, rep.accepted - accepted, rep.dropped - dropped))
        daemon.signal(signal.SIGCONT)
        rep.close(2.0)
        dist.destroy_process_group()
    finally:
        daemon.stop()

    print("| daemon | per step | per instrumented collective | reports accepted | dropped |")
    print("| --- | --- | --- | --- | --- |")
    for state, step_us, coll_us, acc, drop in rows:
        print("| %s | %.2f us | %.2f us | %d | %d |" % (state, step_us, coll_us, acc, drop))
    worst = True
    for state, step_us, coll_us, acc, drop in rows:
        for what, us in (("per step", step_us), ("per instrumented collective", coll_us)):
            ok = us <= TARGET_US
            worst &= ok
            print("reporter overhead %s, daemon %s: %.2f us (target <= %.0f us) %s"
                  % (what, state, us, TARGET_US, "met" if ok else "SHORT"))
    live, hung = rows
    # The live daemon must have taken the reports, the hung one none.
    if live[3] == 0 or hung[3] != 0 or hung[4] == 0:
        print("reporter delivery: live accepted %d, hung accepted %d dropped %d SHORT"
              % (live[3], hung[3], hung[4]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
