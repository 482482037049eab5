"""Provokes one real torch.distributed Gloo failure; used by explain_log tests.

Usage: gloo_failure.py SCENARIO RANK WORLD_SIZE
Scenarios: peer_killed, collective_timeout, bad_ifname, healthy. MASTER_ADDR/PORT come
from the environment. Every blocking call is bounded: init and collectives
time out after a few seconds, so a broken run never hangs the test.
"""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    scenario, rank, world = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    timeout = datetime.timedelta(seconds=3 if scenario == "collective_timeout" else 10)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timeout)
    t = torch.ones(1024)
    if scenario == "peer_killed":
        for i in range(200):
            if rank == 1 and i == 20:
                os.kill(os.getpid(), 9)
            dist.all_reduce(t)
            time.sleep(0.01)
    elif scenario == "collective_timeout":
        if rank == 0:
            dist.all_reduce(t)
        else:
            time.sleep(8)
    elif scenario in ("bad_ifname", "healthy"):
        for _ in range(5):
            dist.all_reduce(t)
        dist.destroy_process_group()
    print("rank %d finished" % rank, flush=True)


if __name__ == "__main__":
    main()
