"""Real CPU workloads, each built to show one problem the rules look for, and their clean twins.

`profiled(tmp, name, step, **settings)` runs `step` under torch.profiler (1 warm-up step, ACTIVE
recorded steps) and returns (digest, raw trace events); the raw events let a test check the
figures the findings quote by a second, independent reading of the file. `rule_input=True` adds the
rules' input (digest and events) for tests of what a rule detects before the significance floors.
"""
import json
import time

import pytest

ACTIVE = 3


def profiled(tmp_path, name, step, rule_input=False, **settings):
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, schedule

    from canning_tb.analysis.build import build_digest
    from canning_tb.ingest.kineto.read import read_kineto
    path = tmp_path / f"{name}.pt.trace.json"
    torch.manual_seed(0)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=ACTIVE),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(path)), **settings) as prof:
        for _ in range(ACTIVE + 1):
            step()
            prof.step()
    raw = json.loads(path.read_text())["traceEvents"]
    digest = build_digest(read_kineto(str(path)))
    if not rule_input:
        return digest, raw
    from canning_tb.analysis.context import Context
    from canning_tb.analysis.rules.engine import RuleInput
    from canning_tb.analysis.steps import breakdowns
    table = read_kineto(str(path))
    ctx = Context(table)
    breakdowns(table, ctx)  # the category sets the rules' claims read
    return digest, raw, RuleInput(digest, ctx)


class Recordings(dict):
    """{name: [recordings]}, and `others_cores`: the cores the rest of the machine kept busy on average while
    they were taken (the machine's CPU time less this process's and its children's, over the wall time; None
    where the machine does not say, not Linux)."""
    others_cores: float | None = None


def interleaved(record, names, pairs) -> Recordings:
    """`pairs` recordings of each workload in `names`, taken in turns (a b, b a, a b, ...): a change of the
    machine's load falls on both alike. record(name, i) -> one recording."""
    from _lab import _machine_cpu_s
    runs = Recordings({name: [] for name in names})
    machine0, ours0, wall0 = _machine_cpu_s(), _own_cpu_s(), time.monotonic()
    for i in range(pairs):
        for name in (names if i % 2 == 0 else names[::-1]):
            runs[name].append(record(name, i))
    machine1, wall = _machine_cpu_s(), time.monotonic() - wall0
    if machine0 is not None and machine1 is not None and wall > 0:
        runs.others_cores = max(0.0, (machine1 - machine0) - (_own_cpu_s() - ours0)) / wall
    return runs


def _own_cpu_s() -> float:
    import resource
    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


def crowded(runs: Recordings) -> str | None:
    """Why a measured gain of these recordings is not judged, or None: the rest of the machine left this process
    less than 3/4 of a core on average (another test worker on a 2-core machine leaves it one; a mutation run
    beside the suite, none: a compile recorded then took 1.4 times its estimate)."""
    import os
    cores = os.cpu_count() or 1
    if runs.others_cores is not None and runs.others_cores > cores - 0.75:
        return (f"the rest of the machine kept {runs.others_cores:.1f} of its {cores} cores busy while the "
                f"recordings ran: a measured gain is not judged on a crowded machine")
    return None


def one_thread():
    """torch on one thread while a measurement runs (restored after): two threads of a matmul wait for each
    other whenever one of them waits for a core, and on a loaded machine that is most of the time."""
    import contextlib
    import torch

    @contextlib.contextmanager
    def held():
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(before)
    return held()


def step_ms(raw, fastest: bool = False) -> float:
    """Mean (or the shortest) ProfilerStep#N duration of the raw trace (ms): the loop's own measure."""
    durs = [e["dur"] for e in raw if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")]
    return (min(durs) if fastest else sum(durs) / len(durs)) / 1e3


def sleepy_loader(sleep_s):
    """A DataLoader whose samples take `sleep_s` each to load (batch of 2)."""
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Slow(Dataset):
        def __len__(self):
            return 1000

        def __getitem__(self, i):
            if sleep_s:
                time.sleep(sleep_s)
            return torch.randn(64)
    return iter(DataLoader(Slow(), batch_size=2, num_workers=0))


def linear_step(in_features, out_features, batch, item=False):
    import torch
    model = torch.nn.Linear(in_features, out_features)
    x = torch.randn(batch, in_features)

    def step():
        y = model(x)
        if item:
            y.sum().item()  # the host reads the value back every step
    return step


def rms_norm_manual(x, w, eps=1e-6):
    import torch
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    import torch
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def llama_block_step(fused: bool, layers=2):
    """A small decoder-like block per layer: RMSNorm, rotary embedding, SwiGLU MLP, an SGD step;
    written out operator by operator (fused=False) or with the fused APIs (fused=True)."""
    import torch
    import torch.nn.functional as F
    dim = 64
    weights = [torch.nn.Parameter(torch.randn(dim, 2 * dim) * 0.05) for _ in range(layers)]
    norm_w = torch.ones(dim)
    cos, sin = torch.randn(16, dim), torch.randn(16, dim)
    opt = torch.optim.SGD(weights, lr=0.01, **({"fused": True} if fused else {"foreach": False}))
    x0 = torch.randn(16, dim)

    def step():
        x = x0
        for w in weights:
            if fused:
                h = F.rms_norm(x, (dim,), norm_w)
                a, b = (h @ w).chunk(2, dim=-1)
                x = F.gelu(a) + b
            else:
                h = rms_norm_manual(x, norm_w)
                h = h * cos + rotate_half(h) * sin
                a, b = (h @ w).chunk(2, dim=-1)
                x = F.silu(a) * b
        x.sum().backward()
        opt.step()
        opt.zero_grad()
    return step


def recompiling_step(dynamic_shapes: bool):
    """torch.compile (eager backend: no C++ compiler needed) of a small function, called with a
    new length each step (recompiles inside the window) or always the same one."""
    import torch
    torch._dynamo.reset()  # the lambda's code is the same in every recording: its compiled shapes would be reused
    fn = torch.compile(lambda x: (x * 2).sin().sum(), backend="eager", dynamic=False)
    count = [0]

    def step():
        count[0] += 1
        fn(torch.randn(100 + (count[0] if dynamic_shapes else 0)))
    return step
