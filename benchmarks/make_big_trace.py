"""Generate a big, real Kineto trace: a real torch.profiler run of a real model on CPU.

    python benchmarks/make_big_trace.py --target-mb 300 --out benchmarks/out/medium/run

The model is a small Transformer encoder (torch.nn.TransformerEncoder) trained with AdamW; the profiler
runs with record_shapes=True, profile_memory=True, with_stack=True. A short calibration run measures the
bytes written per training step, then one profiling session covers enough steps (each marked by
``prof.step()`` under a schedule, so the trace holds ``ProfilerStep#N``) to reach the target uncompressed size.

A single-process gloo group (world size 1) is initialised so Kineto writes ``distributedInfo`` with
``rank: 0`` into the trace, as a real distributed job would (HTA keys files by that rank).

The output is ``<out>/worker0.<timestamp>.pt.trace.json`` (uncompressed, the name torch's
``tensorboard_trace_handler`` uses), written to a temporary name and renamed, so an interrupted run never
leaves a half file. If a trace of the right size (within -15 % / +40 % of the target) is already there,
nothing is generated. A sidecar ``<out>/../trace_info.json`` records size, event count and steps.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import socket
import sys
import tempfile
import time


def _count_events(path: str) -> int:
    """Number of entries in traceEvents (each kept as raw bytes: cheap in time and memory)."""
    import msgspec

    doc = msgspec.defstruct("_Doc", [("traceEvents", list[msgspec.Raw], [])])
    with open(path, "rb") as f:
        return len(msgspec.json.decode(f.read(), type=doc).traceEvents)


def existing_trace(out: str, target_bytes: int) -> str | None:
    for p in sorted(glob.glob(os.path.join(out, "*.pt.trace.json"))):
        if 0.85 * target_bytes <= os.path.getsize(p) <= 1.4 * target_bytes:
            return p
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _build(seed: int = 0):
    import torch
    from torch import nn

    torch.manual_seed(seed)
    d_model, nhead, layers, seq, batch, vocab = 128, 4, 2, 64, 8, 1000

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, d_model)
            layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=4 * d_model, dropout=0.1,
                                               batch_first=True)
            self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(d_model)
            self.head = nn.Linear(d_model, vocab)

        def forward(self, x):
            return self.head(self.norm(self.enc(self.emb(x))))

    model = Model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randint(0, vocab, (batch, seq))
    y = torch.randint(0, vocab, (batch, seq))

    def step():
        opt.zero_grad(set_to_none=True)
        out = model(x)
        loss = loss_fn(out.reshape(-1, vocab), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    return step


def _profile(step, n_steps: int, path: str) -> None:
    """One profiling window of n_steps active steps. A schedule is what makes torch record ProfilerStep#N
    (without one, prof.step() records nothing); the window is exported by on_trace_ready like a real job."""
    from torch.profiler import ProfilerActivity, profile, schedule

    def ready(prof):
        prof.export_chrome_trace(path)

    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=n_steps, repeat=1),
                 on_trace_ready=ready, record_shapes=True, profile_memory=True, with_stack=True) as prof:
        for _ in range(n_steps + 1):
            step()
            prof.step()
    if not os.path.exists(path):
        raise RuntimeError("profiler did not write the trace")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target-mb", type=float, default=300.0, help="uncompressed size to reach (MB = 1e6 bytes)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "out", "medium", "run"))
    ap.add_argument("--worker", default="worker0")
    ap.add_argument("--force", action="store_true", help="regenerate even if a trace of the right size exists")
    ap.add_argument("--no-dist", action="store_true", help="do not init a world-size-1 gloo group")
    args = ap.parse_args(argv)

    target = int(args.target_mb * 1e6)
    os.makedirs(args.out, exist_ok=True)
    # the sidecar lives next to the run folder, not in it: HTA takes every *.json in a trace folder for a trace
    info_path = os.path.join(os.path.dirname(os.path.abspath(args.out)), "trace_info.json")
    have = None if args.force else existing_trace(args.out, target)
    if have:
        info = {}
        if os.path.exists(info_path):
            with open(info_path) as f:
                info = json.load(f)
        if info.get("file") != os.path.basename(have) or "events" not in info:
            info = {"file": os.path.basename(have), "bytes": os.path.getsize(have), "events": _count_events(have)}
            with open(info_path, "w") as f:
                json.dump(info, f, indent=1)
        print(f"cached: {have}  {info['bytes'] / 1e6:.1f} MB  {info['events']:,} events")
        return 0
    for p in glob.glob(os.path.join(args.out, "*.pt.trace.json")):  # wrong size: replace
        os.remove(p)

    import torch

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    dist = False
    if not args.no_dist:
        import torch.distributed as td

        if td.is_available():
            td.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{_free_port()}", rank=0, world_size=1)
            dist = True
    step = _build()
    for _ in range(3):  # warm up (allocator, autograd graph)
        step()

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=args.out) as td_:
        cal_steps = 4
        cal = os.path.join(td_, "cal.json")
        _profile(step, cal_steps, cal)
        per_step = os.path.getsize(cal) / cal_steps
    n_steps = max(2, int(round(target / per_step)))
    print(f"calibration: {per_step / 1e6:.2f} MB/step -> {n_steps} steps for {target / 1e6:.0f} MB "
          f"({time.perf_counter() - t0:.1f} s)", flush=True)

    t0 = time.perf_counter()
    final = os.path.join(args.out, f"{args.worker}.{int(time.time() * 1000)}.pt.trace.json")
    tmp = final + ".tmp"
    _profile(step, n_steps, tmp)
    os.replace(tmp, final)
    size = os.path.getsize(final)
    events = _count_events(final)
    info = {"file": os.path.basename(final), "bytes": size, "events": events, "steps": n_steps,
            "model": "TransformerEncoder(d_model=128, nhead=4, layers=2) + AdamW, batch 8 x seq 64, CPU",
            "profiler": "record_shapes, profile_memory, with_stack", "torch": torch.__version__,
            "distributedInfo": dist, "generate_s": round(time.perf_counter() - t0, 1)}
    with open(info_path, "w") as f:
        json.dump(info, f, indent=1)
    print(f"wrote {final}  {size / 1e6:.1f} MB  {events:,} events  {n_steps} steps  "
          f"({info['generate_s']} s)")
    if dist:
        torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
