"""memory / memory_allocations: the plugin's /memory and /memory_range answers (queries/sections.py),
bounded: the curve thinned by the digest's own rule (analysis/memory.downsample: min and max per
bucket, first, last and the exact peak kept), the allocation events paged."""
from __future__ import annotations

from canning_tb.queries import sections

from .bounds import UNITS, first, offset_of, paged
from .terms import MEMORY, glossary

CURVES = ("curve_ts_ns", "curve_allocated_bytes", "curve_reserved_bytes", "curve_active_bytes")
OPS_SHOWN = 20  # per-operator allocation rows (most bytes first, as the digest orders them), NPU components


def _where(run: str, worker: str, window: str) -> dict:
    return {"run": run, "worker": worker, "window": window}


def _thinned(device: dict, points: int) -> dict:
    """The device's curves at the points analysis/memory.downsample keeps of its allocated curve."""
    import numpy as np

    from canning_tb.analysis.memory import downsample
    allocated = device["curve_allocated_bytes"]
    keep = downsample(np.array(allocated, np.int64), max(points - 1, 2)).tolist() if allocated else []
    curves = {name: [device[name][i] for i in keep] if device[name] else [] for name in CURVES}
    return {**curves, "curve_points_total": len(allocated)}


def memory(host, run: str, worker: str, window: str, points: int = 200) -> dict:
    """Per device: peaks, capacity, counts, components, the top allocating operators, the curve."""
    pending = host.pending(run, worker, window)
    if pending:
        return pending
    body = sections.memory_impl(host.store(), run, worker, window)
    devices = []
    for device in body["devices"]:
        kept = {k: v for k, v in device.items() if k not in CURVES + ("events", "ops", "components")}
        devices.append({**kept, "events_total": len(device["events"]), **first(device["ops"], OPS_SHOWN, "ops"),
                        **first(device["components"], OPS_SHOWN, "components"), **_thinned(device, points)})
    return {**_where(run, worker, window), "devices": devices, "glossary": glossary(MEMORY), "units": UNITS}


def memory_allocations(host, run: str, worker: str, window: str, device: str, start_ns: int | None = None,
                       end_ns: int | None = None, cursor: str | None = None, limit: int = 100) -> dict:
    """The allocation events of `device` allocated in [start_ns, end_ns] (relative ns, either open),
    in the digest's order, and what each operator allocated there."""
    pending = host.pending(run, worker, window)
    if pending:
        return pending
    question = {"tool": "memory_allocations", **_where(run, worker, window), "device": device,
                "start_ns": start_ns, "end_ns": end_ns}
    offset = offset_of(cursor, question)
    body = sections.memory_range_impl(host.store(), run, worker, window, device, start_ns, end_ns)
    events = body["events"]
    answer = {**_where(run, worker, window), "device": device, "start_ns": start_ns, "end_ns": end_ns,
              "total": len(events), "offset": offset, "events_total": body["events_total"],
              "events_truncated": body["events_truncated"], **first(body["ops"], OPS_SHOWN, "ops"),
              "events": events[offset:offset + limit], "units": UNITS}
    return paged(answer, "events", question, offset, len(events))


STACK_FRAMES = 8  # frames of each stack in memory_snapshot's answer (innermost first)


def _short_stacks(value):
    """Every "stack" list of an answer cut to STACK_FRAMES frames (the rest counted in "stack_more")."""
    if isinstance(value, dict):
        out = {k: _short_stacks(v) for k, v in value.items()}
        stack = value.get("stack")
        if isinstance(stack, list) and len(stack) > STACK_FRAMES:
            out["stack"], out["stack_more"] = stack[:STACK_FRAMES], len(stack) - STACK_FRAMES
        return out
    if isinstance(value, list):
        return [_short_stacks(v) for v in value]
    return value


def memory_snapshot(host, run: str, worker: str, window: str, index: int = 0, limit: int = 5) -> dict:
    """The window's allocator snapshot explained (the plugin's /memory_snapshot), stacks cut to STACK_FRAMES."""
    from canning_tb.queries.memory_snapshot import snapshot_impl
    body = snapshot_impl(host.store(), run, worker, window, index, limit)
    return {**_short_stacks(body), "units": UNITS}


def memory_snapshot_ranks(host, run: str, window_index: int = 0, limit: int = 100) -> dict:
    """The ranks' snapshots side by side at one window position (the plugin's /memory_snapshot_ranks), the first
    `limit` ranks."""
    from canning_tb.queries.memory_snapshot import snapshot_ranks_impl
    body = snapshot_ranks_impl(host.store(), run, window_index)
    rows = body["ranks"]
    return {**body, "ranks": rows[:limit], "ranks_total": len(rows), "units": UNITS}
