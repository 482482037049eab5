"""A three-rank torch.distributed (gloo) loop that knows nothing of
gloowatch, for the hang attribution test: 20 ms of "compute" (sleep), then
an all_reduce, until DURATION seconds (default 60) have passed. Rank,
world size and rendezvous from torchrun's environment."""
import datetime
import os
import time

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    t = torch.ones(256)
    end = time.monotonic() + float(os.environ.get("DURATION", "60"))
    while time.monotonic() < end:
        time.sleep(0.02)
        dist.all_reduce(t)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
