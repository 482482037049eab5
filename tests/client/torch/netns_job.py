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
(seconds, default 20), DURATION (default 150), LINGER (default 60). Every
blocking call is bounded by the process-group timeout.
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
    t = torch.ones(256)
    end = time.monotonic() + float(os.environ.get("DURATION", "150"))
    step = 0
    try:
        while time.monotonic() < end:
            time.sleep(0.02)
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
