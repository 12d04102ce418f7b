"""The sections of one window's digest as JSON: one `*_impl(store, run, worker, window, ...)`
per route, plain arguments in, a dict out (no request, no HTTP: testable as they are).

Every figure comes from the digest or from `canning_tb.analysis`; these functions select and
serialise. Times are sent relative to the window start (-1 stays -1 = absent).
"""
from __future__ import annotations

import math

from canning_tb.analysis.memory_range import memory_range
from canning_tb.analysis.summary import communication_figures, has_device_work, kernel_total_ns, window_figures
from canning_tb.digest_json import to_plain

from .errors import RouteError, short_path, window_digest

GROUPS = {"name": "ops_by_name", "shape": "ops_by_shape", "stack": "ops_by_stack"}


def relative(ts: int, t0: int) -> int:
    return ts - t0 if ts >= 0 else ts  # -1 means absent and stays so


def _head(store, run: str, worker: str, window: str, digest) -> dict:
    win = digest.window
    info = to_plain(win)
    info["duration_ns"] = max(0, win.end_ns - win.start_ns) if win.end_ns >= 0 and win.start_ns >= 0 else -1
    return {"run": run, "worker": worker, "window": window, "info": info,
            "problems": [{**to_plain(p), "file": short_path(store, p.file)} for p in digest.problems]}


def overview_impl(store, run: str, worker: str, window: str) -> dict:
    digest = window_digest(store, run, worker, window)
    t0 = digest.window.start_ns
    steps = []
    for message in digest.steps:
        step = to_plain(message)
        step["start_ns"] = relative(message.start_ns, t0)
        steps.append(step)
    return {**_head(store, run, worker, window, digest), "schema_version": digest.schema_version,
            "steps": steps, "average": to_plain(digest.average),
            "scalars": {k: v if math.isfinite(v) else None for k, v in digest.scalars.items()},  # JSON has no NaN
            "rule_hits": [to_plain(r) for r in digest.rule_hits], "figures": window_figures(digest),
            **device_efficiency(digest)}


def device_efficiency(digest) -> dict:
    """The overview's GPU / NPU card: the digest's per-device efficiency figures, as they are."""
    return {"gpu_efficiency": [to_plain(g) for g in digest.gpu_efficiency],
            "npu_efficiency": [to_plain(n) for n in digest.npu_efficiency]}


def modules_impl(store, run: str, worker: str, window: str) -> dict:
    """The nn.Module tree (empty when the trace has no module calls: with_modules / with_stack off)."""
    digest = window_digest(store, run, worker, window)
    t0 = digest.window.start_ns
    nodes = []
    for node in digest.modules:
        plain = to_plain(node)
        plain["first_start_ns"] = relative(node.first_start_ns, t0)
        nodes.append(plain)
    return {**_head(store, run, worker, window, digest), "modules": nodes}


def operators_impl(store, run: str, worker: str, window: str, group_by: str = "name") -> dict:
    if group_by not in GROUPS:
        raise RouteError(400, f"group_by must be one of {', '.join(GROUPS)}, not {group_by!r}")
    digest = window_digest(store, run, worker, window)
    return {**_head(store, run, worker, window, digest), "group_by": group_by,
            "has_device": has_device_work(digest), "has_stacks": len(digest.ops_by_stack) > 0,
            "rows": [to_plain(o) for o in getattr(digest, GROUPS[group_by])]}


def operator_detail_impl(store, run: str, worker: str, window: str, name: str, shapes: str | None = None) -> dict:
    """One operator: the ops_by_stack rows of its name (and input shapes, where those rows carry
    them) and the kernels it launched (the `kernels` of its ops_by_name / ops_by_shape row)."""
    digest = window_digest(store, run, worker, window)
    source = digest.ops_by_name if shapes is None else digest.ops_by_shape
    op = next((o for o in source if o.name == name and (shapes is None or o.input_shapes == shapes)), None)
    if op is None:
        with_shapes = "" if shapes is None else f" with input shapes {shapes!r}"
        raise RouteError(404, f"unknown operator: {name!r}{with_shapes}")
    stacks = [o for o in digest.ops_by_stack if o.name == name]
    by_shape = shapes is not None and any(o.input_shapes for o in stacks)
    if by_shape:
        stacks = [o for o in stacks if o.input_shapes == shapes]
    return {"run": run, "worker": worker, "window": window, "name": name, "input_shapes": shapes,
            "stacks_by_shape": by_shape,  # False: the digest groups stacks by name only
            "calls": op.calls,
            "stacks": [{k: v for k, v in to_plain(o).items() if k != "kernels"} for o in stacks],
            "kernels": [to_plain(k) for k in op.kernels]}


def kernels_impl(store, run: str, worker: str, window: str) -> dict:
    digest = window_digest(store, run, worker, window)
    return {**_head(store, run, worker, window, digest),
            "kernels_by_name": [to_plain(k) for k in digest.kernels_by_name],
            "total_ns": kernel_total_ns(digest),
            "kernels_by_op": [to_plain(k) for k in digest.kernels_by_op],
            "cores": [to_plain(c) for c in digest.cores]}


def _event(event, t0: int) -> dict:
    out = to_plain(event)
    out["alloc_ns"], out["free_ns"] = relative(event.alloc_ns, t0), relative(event.free_ns, t0)
    return out


def memory_impl(store, run: str, worker: str, window: str) -> dict:
    digest = window_digest(store, run, worker, window)
    t0 = digest.window.start_ns
    devices = []
    for mem in digest.memory:
        device = to_plain(mem)
        device["curve_ts_ns"] = [relative(ts, t0) for ts in mem.curve_ts_ns]
        device["peak_ts_ns"] = relative(mem.peak_ts_ns, t0)
        device["events"] = [_event(e, t0) for e in mem.events]
        devices.append(device)
    return {**_head(store, run, worker, window, digest), "devices": devices}


def memory_range_impl(store, run: str, worker: str, window: str, device: str,
                      start_ns: int | None = None, end_ns: int | None = None) -> dict:
    """The allocations of `device` in [start_ns, end_ns] (relative ns; both None: the whole window)."""
    if start_ns is not None and end_ns is not None and start_ns > end_ns:
        raise RouteError(400, f"start_ns ({start_ns}) is after end_ns ({end_ns})")
    digest = window_digest(store, run, worker, window)
    mem = next((m for m in digest.memory if m.device == device), None)
    if mem is None:
        raise RouteError(404, f"unknown device: {device!r}")
    t0 = digest.window.start_ns
    found = memory_range(mem, None if start_ns is None else start_ns + t0, None if end_ns is None else end_ns + t0)
    return {"device": device, "start_ns": start_ns, "end_ns": end_ns, **found,
            "events": [_event(e, t0) for e in found["events"]]}


def communication_impl(store, run: str, worker: str, window: str) -> dict:
    digest = window_digest(store, run, worker, window)
    t0 = digest.window.start_ns
    comm = to_plain(digest.communication)
    for call in comm["calls"]:
        call["start_ns"] = relative(call["start_ns"], t0)
    # this rank alone: wait / transfer where CANN measured them, else unknown (the view takes the
    # ranks' own from /cluster, the same definition with the calls matched across ranks)
    return {**_head(store, run, worker, window, digest), "communication": comm,
            "figures": communication_figures(digest)}
