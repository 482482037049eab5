"""One rank of a three-host torch.distributed (gloo) job for the netns hang
tests (tests/netns/netns_job_test.cc). It knows nothing of gloowatch: the test runs
it under `gloowatch_report.py run`, which instruments its calls.

A training loop in miniature: 20 ms of "compute" (sleep), then an
all_reduce, until DURATION seconds have passed. A failed collective is
logged the way a job's own logging does it (dated lines on stderr, which is
what `gloowatch explain-log` reads), then the process stays up for LINGER
seconds before it exits 1 (a job saving a checkpoint, or waiting for its
launcher to tear it down): so the test sees the survivors still heard from.

Environment: rank, world size and rendezvous as torchrun sets them (RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT), GLOO_SOCKET_IFNAME; PG_TIMEOUT
(seconds, default 20), DURATION (default 150), LINGER (default 60);
ALL_TO_ALL=1 makes the step's collective an all_to_all_single, so every
pair of ranks carries data (a ring all_reduce uses its neighbours only);
TENSOR_FLOATS (default 256: the all_reduce's floats, or those to each rank
in an all_to_all) and COMPUTE_SECONDS (default 0.02: the "compute" before
each call): megabytes keep data in flight between the ranks most of the
time, as a real gradient does.
Every blocking call is bounded by the process-group timeout.
"""
import datetime
import logging
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train.rank%s" % os.environ["RANK"])
    timeout = datetime.timedelta(seconds=float(os.environ.get("PG_TIMEOUT", "20")))
    dist.init_process_group("gloo", timeout=timeout)
    log.info("joined: world size %d, process-group timeout %s", dist.get_world_size(), timeout)
    floats = int(os.environ.get("TENSOR_FLOATS", "256"))
    t = torch.ones(floats)
    compute = float(os.environ.get("COMPUTE_SECONDS", "0.02"))
    all_to_all = os.environ.get("ALL_TO_ALL", "") == "1"
    chunks = torch.ones(floats * dist.get_world_size())  # `floats` to each rank
    received = torch.empty_like(chunks)
    end = time.monotonic() + float(os.environ.get("DURATION", "150"))
    step = 0
    try:
        while time.monotonic() < end:
            time.sleep(compute)
            if all_to_all:
                dist.all_to_all_single(received, chunks)
            else:
                dist.all_reduce(t)
            step += 1
    except RuntimeError as e:
        log.error("all_reduce failed at step %d: %s", step, str(e).strip().replace("\n", " "))
        time.sleep(float(os.environ.get("LINGER", "60")))
        return 1
    dist.destroy_process_group()
    log.info("finished %d steps", step)
    return 0


if __name__ == "__main__":
    sys.exit(main())
