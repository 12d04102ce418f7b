"""A many-rank run generated from a few real windows, written as the handler writes it with digests at
the source (manifest + `<worker>.<window>.digest.pb` beside it, manifest.digest_path): for the
many-rank tests and benchmarks/bench_ranks.py.

Rank r takes the digest of source window r % len(sources) and scales its durations: every duration
by a small per-rank jitter (a few %), and the computing part (compute and overlapped time of the
step breakdowns, the operators' and kernels' device time) by a further per-rank factor; the ranks
named in `slow` get that factor (e.g. 1.3: 30 % more computing). Instants (start, end, timestamps)
are kept. The trace file the manifest names is linked (or copied) from the source window's trace
when one is given, so the window is a real one should its digest be dropped.
"""
from __future__ import annotations

import json
import os
import random
import shutil

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.util.manifest import MANIFEST_SUFFIX, digest_path

INSTANTS = {"start_ns", "end_ns", "alloc_ns", "free_ns", "peak_ts_ns", "curve_ts_ns"}
PARTS = ("compute_ns", "overlapped_ns", "communication_ns", "memcpy_ns", "memset_ns", "runtime_ns",
         "dataloader_ns", "host_ns", "idle_ns", "device_wait_ns")
COMPUTING = ("compute_ns", "overlapped_ns")


def _scale_durations(message, factor: float) -> None:
    """Every non-negative int duration (`*_ns`, not an instant) of message and its children times factor."""
    for field, value in message.ListFields():
        if field.message_type is not None:
            children = value if field.is_repeated else [value]
            for child in children:
                if field.message_type.GetOptions().map_entry:
                    break
                _scale_durations(child, factor)
        elif (field.name.endswith("_ns") and field.name not in INSTANTS and not field.is_repeated
              and field.type in (field.TYPE_INT64, field.TYPE_INT32) and value > 0):
            setattr(message, field.name, int(round(value * factor)))


def _scale_computing(breakdown: pb.Breakdown, factor: float) -> int:
    """Computing parts times factor, total = the sum of the parts again; returns the change of total."""
    for name in COMPUTING:
        setattr(breakdown, name, int(round(getattr(breakdown, name) * factor)))
    before = breakdown.total_ns
    breakdown.total_ns = sum(getattr(breakdown, name) for name in PARTS)
    return breakdown.total_ns - before


def scaled_digest(source: pb.Digest, rank: int, world: int, jitter: float, computing: float) -> pb.Digest:
    digest = pb.Digest()
    digest.CopyFrom(source)
    _scale_durations(digest, jitter)
    for step in digest.steps:
        step.dur_ns += _scale_computing(step.breakdown, computing)
    _scale_computing(digest.average, computing)
    for group in (digest.ops_by_name, digest.ops_by_shape, digest.ops_by_stack):
        for op in group:
            op.device_self_ns = int(round(op.device_self_ns * computing))
            op.device_total_ns = int(round(op.device_total_ns * computing))
    for kernel in list(digest.kernels_by_name) + list(digest.kernels_by_op):
        if not kernel.communication:
            kernel.total_ns = int(round(kernel.total_ns * computing))
    worker = f"rank{rank}"
    digest.window.rank, digest.window.world_size, digest.window.worker = rank, world, worker
    return digest


def _place_trace(source_trace: str | None, folder: str, worker: str) -> list[dict]:
    if not source_trace:
        return []
    name = f"{worker}.0.pt.trace.json.gz"
    target = os.path.join(folder, name)
    try:
        os.link(source_trace, target)
    except OSError:  # another file system
        shutil.copyfile(source_trace, target)
    return [{"name": name, "bytes": os.path.getsize(target)}]


def write_many_ranks(folder: str, sources: list[pb.Digest], ranks: int, slow: dict[int, float] | None = None,
                     traces: list[str] | None = None, seed: int = 0, spread: float = 0.02) -> list[pb.Digest]:
    """Write `ranks` windows into `folder` (a run); returns the digests written, by rank."""
    os.makedirs(folder, exist_ok=True)
    rng = random.Random(seed)
    slow = slow or {}
    out = []
    for rank in range(ranks):
        jitter = 1.0 + rng.uniform(-spread, spread)
        computing = slow.get(rank, 1.0 + rng.uniform(-spread, spread))
        digest = scaled_digest(sources[rank % len(sources)], rank, ranks, jitter, computing)
        worker = digest.window.worker
        files = _place_trace(traces[rank % len(traces)] if traces else None, folder, worker)
        manifest = os.path.join(folder, f"{worker}.0{MANIFEST_SUFFIX}")
        body = {"format_version": 1, "kind": "kineto", "worker": worker, "window": 0, "rank": rank,
                "world_size": ranks, "files": files, "manifest": os.path.basename(manifest)}
        with open(manifest, "w") as f:
            json.dump(body, f)
        with open(digest_path(manifest), "wb") as f:  # after the trace: the digest is as new as the window
            f.write(digest.SerializeToString())
        out.append(digest)
    return out
