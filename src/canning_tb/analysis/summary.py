"""Headline figures of a window, per-rank rows and the run summary, from digests only.

One function computes each figure, so the Overview (`window_figures`), the per-rank rows of the
run table (`rank_row`) and the run summary (`run_summary`) always show the same number:

- every share is `share(part, total)`, None (unknown) without a total; the shares below are of the
  average step (`Digest.average.total_ns`) or of one step (`step_shares`, the one place each is
  computed; docs/glossary.md words them; the digest keeps times only, never a ratio):
  compute = (compute + overlapped) / step where the window has device work; on a window without
  any (CPU-only) the host operators are the computation: compute = (host + overlapped) / step, the
  overlapped part being the host operators that ran beside communication (steps.py)
  (`compute_source` "host"); communication not hidden = communication (not overlapped) / step;
  dataloader / step; idle = nothing recorded (the breakdown's Idle) / step; device idle = the step
  minus the device's busy time (compute, overlapped, communication, memcpy, memset) / step, None
  without device work (the figure the suggestions quote). `category_shares`: each breakdown
  category / step (the Overview's breakdown table and chart, the Scalars trends).
- communication of this rank per step and for the mean step (`communication_figures`): total =
  overlapped + not overlapped of the step breakdown; wait / transfer from
  analysis/communication/wait_transfer.py (the one definition, the ranks table's too).
- the slowest operator: the operator (ProfilerStep#* ranges excluded) with the most device self
  time, or host self time when the window has no device work (`has_device_work`); its share is
  its time over the sum of that metric over the same operators.
- memory: the peak allocated bytes of each device, devices other than CPU first; the per-rank row
  shows the device with the highest peak among them.
"""
from __future__ import annotations

import math

import msgspec

from .step_note import step_note
from . import digest_pb2 as pb
from .figures import CategoryShares, MemoryFigure, SlowestOp, StepShares, WindowFigures, plain

STEP_RANGE_PREFIX = "ProfilerStep#"
SUMMARY_KEYS = ("step_ns", "compute_share", "comm_not_hidden_share", "memory_peak_bytes")


def has_device_work(digest: pb.Digest) -> bool:
    """The window recorded work on a device: kernels, device time in the steps, or on operators."""
    mean = digest.average
    # not overlapped_ns: on a window without device work it is communication beside host compute
    if digest.kernels_by_name or mean.compute_ns + mean.memcpy_ns + mean.memset_ns > 0:
        return True
    return any(o.device_self_ns > 0 or o.device_total_ns > 0 for o in digest.ops_by_name)


def kernel_total_ns(digest: pb.Digest) -> int:
    """Summed device time of all kernels: the denominator of the kernels' share column."""
    return sum(k.total_ns for k in digest.kernels_by_name if k.total_ns > 0)


def share(part: int, total: int) -> float | None:
    """part / total, the one ratio every share is: None (unknown) without a total or a part."""
    if total <= 0 or part < 0:
        return None
    value = part / total
    return value if math.isfinite(value) else None


def slowest_op(digest: pb.Digest) -> dict | None:
    """{name, ns, metric, share} of the operator with the most self time (see the module doc)."""
    metric = "device_self_ns" if has_device_work(digest) else "host_self_ns"
    top, top_ns, total = None, 0, 0
    for op in digest.ops_by_name:  # one pass: a run overview asks this of every rank
        ns = getattr(op, metric)
        if ns > 0 and not op.name.startswith(STEP_RANGE_PREFIX):
            total += ns
            if ns > top_ns:  # the first of equal ones, as max() picks
                top, top_ns = op, ns
    if top is None:
        return None
    return {"name": top.name, "ns": top_ns, "metric": metric, "share": top_ns / total}


def memory_peaks(digest: pb.Digest) -> list[dict]:
    """[{device, peak_bytes, capacity_bytes}] per device, devices other than CPU first."""
    devices = sorted(digest.memory, key=lambda m: m.device.upper() == "CPU")  # stable: digest order kept
    return [{"device": m.device, "peak_bytes": m.peak_allocated_bytes, "capacity_bytes": m.capacity_bytes}
            for m in devices]


DEVICE_BUSY = ("compute_ns", "overlapped_ns", "communication_ns", "memcpy_ns", "memset_ns")
CATEGORIES = tuple(f.name[:-3] for f in pb.Breakdown.DESCRIPTOR.fields if f.name != "total_ns")


def comm_not_hidden_share(breakdown: pb.Breakdown) -> float | None:
    """Communication not overlapped by device compute / the breakdown's step time."""
    return share(breakdown.communication_ns, breakdown.total_ns)


def _category_shares(breakdown: pb.Breakdown) -> CategoryShares:
    return CategoryShares(**{c: share(getattr(breakdown, f"{c}_ns"), breakdown.total_ns) for c in CATEGORIES})


def category_shares(breakdown: pb.Breakdown) -> dict:
    """Each breakdown category's time / the breakdown's step time (a step, or the average step)."""
    return plain(_category_shares(breakdown))


def _step_shares(breakdown: pb.Breakdown, on_device: bool) -> StepShares:
    total = breakdown.total_ns
    # on the CPU, overlapped is communication beside host compute on other threads: compute time too
    computing = breakdown.compute_ns + breakdown.overlapped_ns if on_device else breakdown.host_ns + breakdown.overlapped_ns
    busy = sum(getattr(breakdown, field) for field in DEVICE_BUSY)
    return StepShares(
        compute_share=share(computing, total),
        compute_source="device" if on_device else "host",
        comm_not_hidden_share=comm_not_hidden_share(breakdown),
        dataloader_share=share(breakdown.dataloader_ns, total),
        idle_share=share(breakdown.idle_ns, total),
        device_idle_share=share(max(total - busy, 0), total) if on_device else None,
    )


def step_shares(breakdown: pb.Breakdown, on_device: bool) -> dict:
    """The shares of one breakdown (a step or the mean step): see the module doc."""
    return plain(_step_shares(breakdown, on_device))


def window_figures(digest: pb.Digest) -> dict:
    """The window's headline figures (GET /overview `figures`): figures.WindowFigures."""
    mean = digest.average
    top = slowest_op(digest)
    return plain(WindowFigures(
        steps=len(digest.steps),
        total_step_ns=sum(max(0, s.dur_ns) for s in digest.steps),
        average_step_ns=mean.total_ns,
        **msgspec.structs.asdict(_step_shares(mean, has_device_work(digest))),
        average_shares=_category_shares(mean),
        memory=[MemoryFigure(**m) for m in memory_peaks(digest)],
        slowest_op=SlowestOp(**top) if top else None,
        step_source=digest.step_source or "trace", step_note=step_note(digest),
    ))


def _comm_row(breakdown: pb.Breakdown, split: dict) -> dict:
    return {"dur_ns": breakdown.total_ns, "total_ns": breakdown.overlapped_ns + breakdown.communication_ns,
            "overlapped_ns": breakdown.overlapped_ns, "not_overlapped_ns": breakdown.communication_ns,
            "not_overlapped_share": comm_not_hidden_share(breakdown),
            **{key: split.get(key, -1) for key in ("wait_ns", "p2p_wait_ns", "transfer_ns")}}


def communication_figures(digest: pb.Digest, ranks: list | None = None, found: dict | None = None) -> dict:
    """This rank's communication: `mean` (the mean step, the ranks table's unit), `window` (all
    steps) and `steps` (one row per step, with its calls per collective). Wait / transfer:
    wait_transfer.rank_figures with the calls matched over `ranks` (digests of the same window of
    the other ranks, this one included), or over this digest alone (CANN's own, else unknown);
    `found`: those figures when already computed (wait_transfer.own_figures of many windows at once)."""
    if found is None:
        from .communication.wait_transfer import wait_transfer  # numpy: only where communication is shown
        peers = ranks or [digest]
        found = wait_transfer(peers)[next(i for i, d in enumerate(peers) if d is digest)]
    per_step = {row["step"]: row for row in found["per_step"]}
    steps = []
    for step in digest.steps:
        row = {"step": int(step.number), **_comm_row(step.breakdown, per_step.get(step.number, {})),
               "collectives": _step_collectives(digest, step.number)}
        steps.append(row)
    window = pb.Breakdown(total_ns=sum(s.dur_ns for s in digest.steps),
                          overlapped_ns=sum(s.breakdown.overlapped_ns for s in digest.steps),
                          communication_ns=sum(s.breakdown.communication_ns for s in digest.steps))
    totals = {key: found[f"window_{key}"] for key in ("wait_ns", "p2p_wait_ns", "transfer_ns")}
    return {"mean": _comm_row(digest.average, found), "window": _comm_row(window, totals), "steps": steps,
            "calls_truncated": digest.communication.calls_truncated}


def _step_collectives(digest: pb.Digest, number: int) -> list[dict]:
    """Calls, summed durations and bytes per (kind, group) of the calls of one step."""
    out: dict = {}
    for call in digest.communication.calls:
        if call.step != number:
            continue
        row = out.setdefault((call.kind, call.group), {"kind": call.kind, "group": call.group, "calls": 0,
                                                       "total_ns": 0, "bytes": 0})
        row["calls"] += 1
        row["total_ns"] += call.dur_ns
        row["bytes"] = row["bytes"] + call.bytes if row["bytes"] >= 0 and call.bytes >= 0 else -1
    return sorted(out.values(), key=lambda r: (-r["total_ns"], r["kind"], r["group"]))


def rank_row(digest: pb.Digest) -> dict:
    """One rank's row of the run table: `window_figures` under the run table's field names
    (-1 and "" where a figure is absent)."""
    fig = window_figures(digest)
    peaks = [m for m in fig["memory"] if m["device"].upper() != "CPU"] or fig["memory"]
    mem = max(peaks, key=lambda m: m["peak_bytes"], default=None)
    top = fig["slowest_op"]
    return {
        "steps": fig["steps"],
        "step_ns": fig["average_step_ns"],
        "compute_share": _or_minus_one(fig["compute_share"]),
        "comm_not_hidden_share": _or_minus_one(fig["comm_not_hidden_share"]),
        "memory_device": mem["device"] if mem else "",
        "memory_peak_bytes": mem["peak_bytes"] if mem else -1,
        "memory_capacity_bytes": mem["capacity_bytes"] if mem else -1,
        "slowest_op": top["name"] if top else "",
        "slowest_op_ns": top["ns"] if top else -1,
        "slowest_op_metric": top["metric"] if top else
        ("device_self_ns" if has_device_work(digest) else "host_self_ns"),
    }


def _or_minus_one(value: float | None) -> float:
    return -1.0 if value is None else value


def run_summary(per_rank: list[dict]) -> dict:
    """The whole run over the rows of `rank_row` (each with its "rank"): for each figure the
    lowest and highest rank (None when no rank has it), and the slowest operator of any rank."""
    out: dict = {"ranks": len(per_rank)}
    for key in SUMMARY_KEYS:
        have = [p for p in per_rank if p[key] >= 0]
        if not have:
            out[key] = None
            continue
        low, high = min(have, key=lambda p: p[key]), max(have, key=lambda p: p[key])
        out[key] = {"min": low[key], "min_rank": low["rank"], "max": high[key], "max_rank": high["rank"]}
    with_op = [p for p in per_rank if p["slowest_op_ns"] > 0]
    top = max(with_op, key=lambda p: p["slowest_op_ns"], default=None)
    out["slowest_op"] = ({"name": top["slowest_op"], "ns": top["slowest_op_ns"], "rank": top["rank"],
                          "metric": top["slowest_op_metric"]} if top else None)
    return out
