"""One rank of a small real torch.distributed (gloo) job that reports every
step to a real gloowatchd with gloowatch_report.StepReporter; used by
tests/client_e2e_test.cc.

Usage: e2e_train.py --daemon HOST:PORT --job J --rank R --world N [--steps 30]
MASTER_ADDR/MASTER_PORT come from the environment. Each step does some
compute (matmuls) plus an all_reduce of a few MiB, timed with rep.step() /
rep.comm(). The last stdout line is this rank's own totals as JSON. Every
blocking call is bounded (process-group timeout, reporter RPC timeout).
"""
import argparse
import datetime
import json
import os
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "client", "reporter"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import gloowatch_report  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--daemon", required=True)
    p.add_argument("--job", required=True)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--allreduce-floats", type=int, default=2 * 1024 * 1024)  # 8 MiB
    a = p.parse_args()

    torch.set_num_threads(1)  # two ranks on a small machine: no oversubscription
    dist.init_process_group("gloo", rank=a.rank, world_size=a.world,
                            timeout=datetime.timedelta(seconds=60))
    torch.manual_seed(a.rank)
    x = torch.randn(256, 256)
    w = torch.randn(256, 256)
    grad = torch.ones(a.allreduce_floats)
    # strict: a failed report is a test failure, not a silently skewed total.
    rep = gloowatch_report.StepReporter(job=a.job, rank=a.rank, daemon=a.daemon, timeout=10.0,
                                        strict=True)
    with rep:
        for step in range(a.steps):
            with rep.step(step):
                y = x
                for _ in range(4):
                    y = torch.tanh(y @ w)
                grad.fill_(float(y.mean()))
                with rep.comm():
                    dist.all_reduce(grad)
    dist.barrier()
    dist.destroy_process_group()
    print(json.dumps({
        "rank": a.rank,
        "steps": rep.steps,
        "errors": rep.errors,
        "step_seconds_total": rep.step_seconds_total,
        "comm_seconds_total": rep.comm_seconds_total,
        "communication_share": rep.communication_share,
    }), flush=True)


if __name__ == "__main__":
    main()
