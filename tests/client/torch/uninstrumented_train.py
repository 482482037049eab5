"""A small two-rank torch.distributed (gloo) loop that knows nothing of
gloowatch: tests/client/torch/test_gloowatch_report.py runs it under
`gloowatch_report.py run` to show instrumentation needs no code change.

Rank, world size and the rendezvous come from torchrun's environment (RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT). Rank 1 "computes" (sleeps) 60 ms per
iteration, the others 10 ms, then every rank runs one of each kind of call:
blocking and async collectives, point-to-point, object collectives. Prints
"ops ok" when every result was right."""
import datetime
import os
import time

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    compute = 0.060 if rank == 1 else 0.010
    t = torch.ones(1024)
    ok = True
    for i in range(int(os.environ.get("ITERATIONS", "40"))):
        time.sleep(compute)
        t.fill_(1.0)
        dist.all_reduce(t)
        ok &= bool(t[0] == world)
        work = dist.all_reduce(t, async_op=True)
        work.wait()
        ok &= bool(t[0] == world * world)
        peer = (rank + 1) % world
        out, inp = torch.full((16,), float(rank)), torch.zeros(16)
        reqs = [dist.isend(out, peer), dist.irecv(inp, (rank - 1) % world)]
        for r in reqs:
            r.wait()
        ok &= bool(inp[0] == (rank - 1) % world)
        gathered = [torch.zeros(4) for _ in range(world)]
        dist.all_gather(gathered, torch.full((4,), float(rank)))
        ok &= [float(g[0]) for g in gathered] == [float(r) for r in range(world)]
        b = torch.full((8,), float(rank))
        dist.broadcast(b, src=0)
        ok &= bool(b[0] == 0)
        if i % 10 == 0:
            objs = [None] * world
            dist.all_gather_object(objs, rank)
            ok &= objs == list(range(world))
        dist.barrier()
    dist.destroy_process_group()
    print("ops ok" if ok else "ops WRONG", flush=True)


if __name__ == "__main__":
    main()
