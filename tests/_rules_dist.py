"""One rank of a real 2-process gloo run for the cross-rank rules (run as a script by the tests).

usage: _rules_dist.py RANK PORT OUT MODE[,MODE...] (one profile per mode, one process group);
MODE = "slow_rank" (both ranks all-reduce each step, rank 1 computes 8x longer; eight steps, so
that one step stalled by the machine, as a loaded 2-core CI runner does, stays inside the noise). Pipelines are in
tests/_rules_corpus_dist.py (torch.distributed.pipelining)."""
import sys
import time

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile, schedule


def busy(ms: float) -> None:
    """Real compute for about `ms` ms (matmuls), timed by the wall clock."""
    end = time.perf_counter() + ms / 1e3
    a = torch.randn(256, 256) / 16
    while time.perf_counter() < end:  # few, large operators: their time is the computing measured
        a = torch.tanh(a @ a)


def main(rank: int, port: int, out: str, modes: str) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    for mode in modes.split(","):
        profile_mode(rank, out, mode)
        dist.barrier()
    dist.destroy_process_group()


def profile_mode(rank: int, out: str, mode: str) -> None:
    x = torch.randn(1024)
    work = {"slow_rank": (5, 40)}[mode]

    def step():
        busy(work[rank])
        dist.all_reduce(x)

    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=8),
                 on_trace_ready=lambda p: p.export_chrome_trace(f"{out}/{mode}.rank{rank}.pt.trace.json")) as prof:
        for _ in range(9):
            step()
            prof.step()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4])
