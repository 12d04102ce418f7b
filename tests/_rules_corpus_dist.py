"""One rank of a real 2-process gloo run for the findings corpus (run as a script by the tests).

usage: _rules_corpus_dist.py RANK PORT OUT MODE[,MODE...]: one profile per mode, one process group.
Modes (each a workload an engineer knows the answer for):
- "ddp": DDP with small buckets (bucket_cap_mb=0.05) over a 6-layer MLP: the gradients' all-reduces run
  in gloo's worker threads while the backward pass computes on the main thread.
- "pipeline": a 2-stage torch.distributed.pipelining Schedule1F1B, 4 micro-batches, 4 layers per stage.
- "pipeline_unbalanced": the same with 1 layer on stage 0 and 7 on stage 1 (the last stage does most), on
  micro-batches 4x larger,
  and tied embeddings: an all-reduce between the first and last stage each step (as Megatron's).
- "broadcast": the window's first step builds the DDP model of 9.4 MB (its parameters broadcast from
  rank 0), later steps train without DDP's all-reduce (no_sync): the only communication is that one-off.
Writes OUT/MODE.rankR.pt.trace.json."""
import sys

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile, schedule

WIDTH = 192


def mlp(layers: int, width: int = WIDTH) -> torch.nn.Module:
    return torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.Tanh())
                                 for _ in range(layers)])


def profiler(out: str, mode: str, rank: int, active: int = 4, warmup: int = 1):
    return profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=warmup, active=active),
                   on_trace_ready=lambda p: p.export_chrome_trace(f"{out}/{mode}.rank{rank}.pt.trace.json"))


def run_ddp(out: str, rank: int) -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.manual_seed(0)
    model = DDP(mlp(6), bucket_cap_mb=0.05)  # about one Linear (147 kB) per bucket
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(128, WIDTH), torch.randn(128, WIDTH)
    with profiler(out, "ddp", rank) as prof:
        for _ in range(5):
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
            prof.step()


def run_pipeline(out: str, rank: int, mode: str) -> None:
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B
    torch.manual_seed(0)
    layers = (1, 7) if mode == "pipeline_unbalanced" else (4, 4)
    module = mlp(layers[rank])
    stage = PipelineStage(module, rank, 2, torch.device("cpu"))
    # every rank passes the loss: a schedule without one runs forward only (and the stages then deadlock)
    sched = Schedule1F1B(stage, n_microbatches=4, loss_fn=lambda out, y: ((out - y) ** 2).mean())
    opt = torch.optim.SGD(module.parameters(), lr=0.01)
    # the unbalanced run's micro-batches are 4x larger: its stages' computing gap (about 14 ms per step) stays
    # well over the 5 % floor when a loaded runner stretches the step by waiting (64 rows: a 3 ms gap, lost there)
    rows = 256 if mode == "pipeline_unbalanced" else 64
    x, y = torch.randn(rows, WIDTH), torch.randn(rows, WIDTH)
    tied = torch.randn(WIDTH, WIDTH)  # the unbalanced run ties its first and last stage's embeddings
    steps = 6 if mode == "pipeline_unbalanced" else 4  # six: one stalled step stays inside the noise
    with profiler(out, mode, rank, active=steps) as prof:
        for _ in range(steps + 1):
            opt.zero_grad()
            sched.step(x) if rank == 0 else sched.step(target=y)
            if mode == "pipeline_unbalanced":
                dist.all_reduce(tied)  # the tied embeddings' gradients, between the first and last stage
            opt.step()
            prof.step()


def run_broadcast(out: str, rank: int) -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.manual_seed(rank)  # different initial weights: the broadcast does real work
    model = mlp(4, 768)  # 9.4 MB of parameters to broadcast, a few ms of compute per step
    x, y = torch.randn(4, 768), torch.randn(4, 768)
    with profiler(out, "broadcast", rank, active=3) as prof:
        for step in range(4):
            if step == 1:  # the first profiled step (after the warm-up) builds DDP: it broadcasts the parameters
                model = DDP(model)
            opt = torch.optim.SGD(model.parameters(), lr=0.01)
            sync = model.no_sync() if step else torch.enable_grad()  # local steps: no all-reduce in the window
            with sync:
                opt.zero_grad()
                ((model(x) - y) ** 2).mean().backward()
            opt.step()
            prof.step()


def main(rank: int, port: int, out: str, modes: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    for mode in modes.split(","):
        if mode == "ddp":
            run_ddp(out, rank)
        elif mode == "broadcast":
            run_broadcast(out, rank)
        else:
            run_pipeline(out, rank, mode)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4])
