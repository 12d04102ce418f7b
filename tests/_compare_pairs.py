"""Real before/after pairs for the comparison tests: the same small CPU workload profiled with real
torch.profiler, with and without an obvious optimization whose direction is known in advance.

- gelu_unfused -> gelu_fused: tanh-GELU written as ~8 elementwise aten ops vs one aten::gelu
  (approximate="tanh") on the same 1M-element tensor: the fused run is faster, its aten::gelu is
  added and aten::tanh / aten::pow are removed.
- loader_sleep -> loader_fast: a DataLoader whose dataset sleeps SLEEP_S per item (batch of 1,
  no workers) vs the same without the sleep: the sleep shows as dataloader time, about SLEEP_S
  per step.
Each run is one kineto window (tensorboard_trace_handler) of ACTIVE steps in its own run folder.
"""
import glob
import gzip
import json
import math
import os
import shutil
import statistics
import time

import torch
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

ACTIVE = 6  # steps per window: the gate judges the noise from 5 steps a side (analysis/compare/noise.py)
SLEEP_S = 0.03
SIZE = 1 << 20


def gelu_unfused(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))


def gelu_fused(x):
    return torch.nn.functional.gelu(x, approximate="tanh")


class Items(torch.utils.data.Dataset):
    def __init__(self, sleep_s: float):
        self.sleep_s = sleep_s

    def __len__(self):
        return 64

    def __getitem__(self, index):
        if self.sleep_s:
            time.sleep(self.sleep_s)
        return torch.full((4,), float(index))


def _profiled(out: str, steps, attempts: int = 4):
    """One window of ACTIVE steps in `out`; recorded again (up to `attempts` times) when the shared machine
    stalled one of its steps (longer than twice the window's median step, read from the written trace):
    the pairs' known direction is a property of the workload, not of a loaded runner's moment."""
    for _ in range(attempts):
        shutil.rmtree(out, ignore_errors=True)
        _record(out, steps)
        steps_us = step_durations_us(out)
        if max(steps_us) <= 2 * statistics.median(steps_us):
            return


def step_durations_us(out: str) -> list[float]:
    """The ProfilerStep durations (µs) of the one trace a run folder holds, read from the raw file."""
    (trace,) = glob.glob(os.path.join(out, "*.pt.trace.json.gz"))
    with gzip.open(trace, "rt") as f:
        return [e["dur"] for e in json.load(f)["traceEvents"]
                if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")]


def _record(out: str, steps):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the machine is shared: one thread keeps the timings steady
    try:
        _record_window(out, steps)
    finally:
        torch.set_num_threads(threads)


def _record_window(out: str, steps):
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=ACTIVE),
                 on_trace_ready=tensorboard_trace_handler(out, use_gzip=True), record_shapes=True,
                 profile_memory=True, with_stack=True) as prof:
        for _ in range(ACTIVE + 1):
            steps()
            prof.step()


def write_gelu(out: str, fused: bool) -> None:
    torch.manual_seed(0)
    x = torch.randn(SIZE)
    fn = gelu_fused if fused else gelu_unfused
    _profiled(out, lambda: fn(x).sum())


def write_loader(out: str, sleep: bool) -> None:
    batches = iter(torch.utils.data.DataLoader(Items(SLEEP_S if sleep else 0.0), batch_size=1))
    weight = torch.randn(4, 4)

    def step():
        (next(batches) @ weight).sum()

    _profiled(out, step)


def write_all(root) -> None:
    """Four runs under `root`: gelu_unfused, gelu_fused, loader_sleep, loader_fast."""
    write_gelu(str(root / "gelu_unfused"), fused=False)
    write_gelu(str(root / "gelu_fused"), fused=True)
    write_loader(str(root / "loader_sleep"), sleep=True)
    write_loader(str(root / "loader_fast"), sleep=False)
