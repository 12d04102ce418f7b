"""One job of the findings lab (tests/lab, benchmarks/lab.py), run as a script: one rank of a real CPU
workload with a known problem ("before") or with the change the finding proposes applied ("after").

usage: _lab_job.py PAIR VARIANT RANK WORLD PORT OUT

Profiled with canning's public API (ps.Profile, ps.schedule(wait=1, warmup=1, active=ACTIVE),
ps.tensorboard_trace_handler(OUT/run, worker_name=f"rank{RANK}")); WORLD=2 runs it as a real gloo job.
The job times every step itself (time.perf_counter around loading the batch and the step: the
measurement the lab compares the findings' gains with, independent of the profiler) and writes
OUT/timer.rank{RANK}.json: {"pair", "variant", "rank", "steps_ms": [...], "active": [indexes of the
profiled steps], "after_window": [indexes of the steps run after the window, unprofiled]}.
"""
import json
import math
import os
import sys
import time

import numpy as np
import torch

ACTIVE = 8  # profiled steps per window
WAIT, WARMUP = 1, 1
SETTLE = 3  # steps run before the profile starts (a job is profiled once it runs at speed)
AFTER_WINDOW = 3  # unprofiled steps timed after the window (the job's speed without the profiler)

# the problems, made of sleeps where they can be (their cost does not depend on the machine's load)
SLOW_RANK_BASE_S, SLOW_RANK_EXTRA_S = 0.020, 0.030  # every rank's work, rank 1's extra work per step
LOADER_SAMPLE_S, LOADER_BATCH, LOADER_STEP_S = 0.005, 4, 0.020  # a sample's load time; the step's own work
HOST_PYTHON_S, HOST_STEP_S = 0.025, 0.010  # Python before the step's first operator; the step's own work
DDP_LAYERS, DDP_LAYER_BACKWARD_S = 13, 0.008  # 52 MiB of gradients: DDP's default buckets are 3
# a 2-stage pipeline: 8 layers, stage 0 holds 6 of them before (3x stage 1), 4 after; a layer's forward and
# backward compute each PIPE_LAYER_S (a wait: the two ranks do not compete for the cores); PIPE_MICRO micro-batches
PIPE_LAYERS, PIPE_FIRST_BEFORE, PIPE_LAYER_S, PIPE_MICRO = 8, 6, 0.005, 4


def main(pair: str, variant: str, rank: int, world: int, port: int, out: str) -> None:
    torch.manual_seed(rank)
    torch.set_num_threads(1)  # two ranks on a busy 2-core machine: threads of one matmul would wait for each other
    if world > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    step = WORKLOADS[pair](variant == "before", rank)
    from canning import profiling_suite as ps
    total = WAIT + WARMUP + ACTIVE
    for i in range(-SETTLE, 0):  # a job profiled after it settled: workers started, DDP's buckets rebuilt
        step(i)
    times = []
    # record_shapes: the collectives' sizes (the replay places DDP's buckets by them), as users profile
    with ps.Profile(activities=[ps.ProfilerActivity.CPU], schedule=ps.schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE),
                    record_shapes=True,
                    on_trace_ready=ps.tensorboard_trace_handler(os.path.join(out, "run"), worker_name=f"rank{rank}",
                                                                digest=False)) as prof:
        for i in range(total):
            t0 = time.perf_counter()
            step(i)
            times.append(time.perf_counter() - t0)
            prof.step()
    if world > 1:  # the ranks leave the profile (its trace written) at different times: not a step's time
        import torch.distributed as dist
        dist.barrier()
    for i in range(total, total + AFTER_WINDOW):
        t0 = time.perf_counter()
        step(i)
        times.append(time.perf_counter() - t0)
    if world > 1:
        import torch.distributed as dist
        dist.barrier()
        dist.destroy_process_group()
    record = {"pair": pair, "variant": variant, "rank": rank, "steps_ms": [t * 1e3 for t in times],
              "active": list(range(WAIT + WARMUP, total)), "after_window": list(range(total, total + AFTER_WINDOW))}
    tmp = os.path.join(out, f".timer.rank{rank}.json")
    with open(tmp, "w") as f:
        json.dump(record, f)
    os.replace(tmp, os.path.join(out, f"timer.rank{rank}.json"))


def slow_rank(before: bool, rank: int):
    """(1) Both ranks work SLOW_RANK_BASE_S then all-reduce; before: rank 1 works SLOW_RANK_EXTRA_S more."""
    import torch.distributed as dist
    x = torch.ones(4096)
    extra = SLOW_RANK_EXTRA_S if before and rank == 1 else 0.0

    def step(i):
        time.sleep(SLOW_RANK_BASE_S + extra)
        y = x * 2
        dist.all_reduce(y)
    return step


def dataloader(before: bool, rank: int):
    """(2) Each sample takes LOADER_SAMPLE_S to load; before: num_workers=0 (the step waits for the whole batch),
    after: two persistent workers loading ahead."""
    from torch.utils.data import DataLoader, Dataset

    class Slow(Dataset):
        def __len__(self):
            return 100000

        def __getitem__(self, i):
            time.sleep(LOADER_SAMPLE_S)
            return np.full(64, i % 7, dtype=np.float32)
    settings = {"num_workers": 0} if before else {"num_workers": 2, "persistent_workers": True, "prefetch_factor": 4}
    # batches as numpy arrays: they cross from the workers as bytes through the pipe (a torch tensor would be
    # shared through a shared-memory file per batch, a cost of its own on a loaded machine)
    loader = iter(DataLoader(Slow(), batch_size=LOADER_BATCH, collate_fn=np.stack, **settings))
    model = torch.nn.Linear(64, 64)

    def step(i):
        batch = torch.from_numpy(next(loader))
        model(batch).sum().backward()
        time.sleep(LOADER_STEP_S)  # the rest of the step's work, the same on both runs
    return step


def _mlp(layers: int, width: int):
    torch.manual_seed(0)  # the same parameters on every rank
    return torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU())
                                 for _ in range(layers)])


class _Hold(torch.autograd.Function):
    """Identity whose backward holds the thread DDP_LAYER_BACKWARD_S (a layer's backward compute, made of a
    wait so that the all-reduce it can hide does not compete with it for the machine's cores)."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        time.sleep(DDP_LAYER_BACKWARD_S)
        return grad


class _HeldLinear(torch.nn.Linear):
    def forward(self, x):
        return _Hold.apply(super().forward(x))


def ddp_buckets(before: bool, rank: int):
    """(3) DDP on DDP_LAYERS layers of 1024 x 1024 (4 MiB of gradients each), each layer's backward
    DDP_LAYER_BACKWARD_S; before: one bucket (bucket_cap_mb=10000: the all-reduce starts after the whole
    backward), after: DDP's default buckets (the first 1 MiB, then 25 MiB), which all-reduce while the backward
    goes on (the last one still after it)."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.manual_seed(0)  # the same parameters on every rank
    cap = {"bucket_cap_mb": 10000} if before else {}
    model = DDP(torch.nn.Sequential(*[_HeldLinear(1024, 1024) for _ in range(DDP_LAYERS)]), **cap)
    x = torch.randn(4, 1024)

    def step(i):
        model(x).sum().backward()
        for p in model.parameters():
            p.grad = None
    return step


def host_python(before: bool, rank: int):
    """(4) Before: HOST_PYTHON_S of Python (a blocking wait) before the step's first operator, every step."""
    model = torch.nn.Linear(256, 256)
    x = torch.randn(32, 256)

    def step(i):
        if before:
            time.sleep(HOST_PYTHON_S)
        model(x).sum().backward()
        with torch.profiler.record_function("rest_of_step"):  # the step's other work, traced as real work is
            time.sleep(HOST_STEP_S)  # the same on both runs
    return step


def unfused_optimizer(before: bool, rank: int):
    """(5) RMSprop (foreach only in torch: no fused=True) over 300 small parameters; before foreach=False (a few
    operators per tensor), after foreach=True."""
    params = [torch.nn.Parameter(torch.randn(32)) for _ in range(300)]
    opt = torch.optim.RMSprop(params, lr=1e-3, foreach=not before)
    for p in params:
        p.grad = torch.randn(32)

    def step(i):
        opt.step()
    return step


def attention(before: bool, rank: int):
    """(6) Forward attention (4 heads, 1,024 tokens) over 2 layers per step; before: written out (matmul mul
    softmax matmul), after: F.scaled_dot_product_attention."""
    import torch.nn.functional as F
    q, k, v = (torch.randn(1, 4, 1024, 64) for _ in range(3))
    scale = 1 / math.sqrt(64)

    def step(i):
        with torch.no_grad():
            for _ in range(2):
                if before:
                    o = torch.softmax(q @ k.transpose(-2, -1) * scale, dim=-1) @ v
                else:
                    o = F.scaled_dot_product_attention(q, k, v)
        return o
    return step


def attention_train(before: bool, rank: int):
    """(6b) Attention trained (4 heads, 512 tokens, forward and backward) over 2 layers per step; before: written
    out (matmul mul softmax matmul, and their backward), after: F.scaled_dot_product_attention."""
    import torch.nn.functional as F
    q, k, v = (torch.randn(1, 4, 512, 64, requires_grad=True) for _ in range(3))
    scale = 1 / math.sqrt(64)

    def step(i):
        for _ in range(2):
            if before:
                o = torch.softmax(q @ k.transpose(-2, -1) * scale, dim=-1) @ v
            else:
                o = F.scaled_dot_product_attention(q, k, v)
            o.sum().backward()
        for x in (q, k, v):
            x.grad = None
    return step


def first_broadcast(before: bool, rank: int):
    """(7) DDP construction (its parameter broadcast from rank 0) inside the first profiled step (before) or
    before the loop (after); the same training step otherwise (before it: the forward alone)."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    base = _mlp(6, 1024)
    x = torch.randn(4, 1024)
    held = {"model": None if before else DDP(base)}

    def step(i):
        if held["model"] is None:
            if i < WAIT + WARMUP:
                base(x)  # not yet wrapped: the forward alone, as a loop does before it builds DDP
                return
            held["model"] = DDP(base)
        held["model"](x).sum().backward()
        for p in base.parameters():
            p.grad = None
    return step


class _Stage(torch.autograd.Function):
    """A stage's layers: a clone whose forward and backward each hold the thread PIPE_LAYER_S per layer (their
    compute, one wait per pass: a loaded machine's late wake-ups then cost alike on both runs)."""

    @staticmethod
    def forward(ctx, x, layers):
        ctx.layers = layers
        with torch.profiler.record_function("stage_forward"):
            time.sleep(PIPE_LAYER_S * layers)
            return x.clone()

    @staticmethod
    def backward(ctx, grad):
        time.sleep(PIPE_LAYER_S * ctx.layers)
        return grad.clone(), None


def pipeline(before: bool, rank: int):
    """(8) Two pipeline stages (rank 0 first, rank 1 last), PIPE_MICRO micro-batches per step in 1F1B order with
    blocking send / receive (gloo's send waits for its receive, so both ranks call them in the same order): stage
    0 runs forward 0 and 1, then for each next micro-batch receives a gradient, runs that backward and the next
    forward; stage 1 receives an activation, runs forward, loss and backward, and sends the gradient back.
    Before: stage 0 holds PIPE_FIRST_BEFORE of the PIPE_LAYERS layers (3x stage 1); after: half of them."""
    import torch.distributed as dist
    first = PIPE_FIRST_BEFORE if before else PIPE_LAYERS // 2
    mine = first if rank == 0 else PIPE_LAYERS - first
    shape = (16, 256)

    def run(x):
        return _Stage.apply(x, mine)

    def first_stage():
        outs = []

        def forward():
            outs.append(run(torch.randn(shape, requires_grad=True)))
            dist.send(outs[-1].detach(), 1)

        def backward(m):
            g = torch.empty(shape)
            dist.recv(g, 1)
            outs[m].backward(g)
        forward()
        for m in range(PIPE_MICRO):
            if m + 1 < PIPE_MICRO:
                forward()
            backward(m)

    def last_stage():
        a = torch.empty(shape)
        dist.recv(a, 0)
        for m in range(PIPE_MICRO):
            a.requires_grad_(True)
            run(a).sum().backward()
            grad = a.grad
            if m + 1 < PIPE_MICRO:  # the next activation first: stage 0 sends it before it receives this gradient
                a = torch.empty(shape)
                dist.recv(a, 0)
            dist.send(grad, 0)

    def step(i):
        first_stage() if rank == 0 else last_stage()
    return step


WORKLOADS = {"slow_rank": slow_rank, "dataloader": dataloader, "ddp_buckets": ddp_buckets,
             "host_python": host_python, "unfused_optimizer": unfused_optimizer, "attention": attention,
             "attention_train": attention_train,
             "first_broadcast": first_broadcast, "pipeline": pipeline}

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
