"""Headline figures of a window, per-rank rows and the run summary, from digests only.

One function computes each figure, so the Overview (`window_figures`), the per-rank rows of the
run table (`rank_row`) and the run summary (`run_summary`) always show the same number:

- shares are of the average step (`Digest.average.total_ns`): compute = (compute + overlapped) /
  step, communication not hidden = communication (not overlapped) / step, dataloader / step;
  None when the window has no step time.
- the slowest operator: the operator (ProfilerStep#* ranges excluded) with the most device self
  time, or host self time when the window has no device work (`has_device_work`); its share is
  its time over the sum of that metric over the same operators.
- memory: the peak allocated bytes of each device, devices other than CPU first; the per-rank row
  shows the device with the highest peak among them.
"""
from __future__ import annotations

import math

from . import digest_pb2 as pb

STEP_RANGE_PREFIX = "ProfilerStep#"
SUMMARY_KEYS = ("step_ns", "compute_share", "comm_not_hidden_share", "memory_peak_bytes")


def has_device_work(digest: pb.Digest) -> bool:
    """The window recorded work on a device: kernels, device time in the steps, or on operators."""
    mean = digest.average
    if digest.kernels_by_name or mean.compute_ns + mean.overlapped_ns + mean.memcpy_ns + mean.memset_ns > 0:
        return True
    return any(o.device_self_ns > 0 or o.device_total_ns > 0 for o in digest.ops_by_name)


def kernel_total_ns(digest: pb.Digest) -> int:
    """Summed device time of all kernels: the denominator of the kernels' share column."""
    return sum(k.total_ns for k in digest.kernels_by_name if k.total_ns > 0)


def _share(part: int, total: int) -> float | None:
    if total <= 0 or part < 0:
        return None
    value = part / total
    return value if math.isfinite(value) else None


def slowest_op(digest: pb.Digest) -> dict | None:
    """{name, ns, metric, share} of the operator with the most self time (see the module doc)."""
    metric = "device_self_ns" if has_device_work(digest) else "host_self_ns"
    ops = [o for o in digest.ops_by_name if not o.name.startswith(STEP_RANGE_PREFIX) and getattr(o, metric) > 0]
    if not ops:
        return None
    top = max(ops, key=lambda o: getattr(o, metric))
    total = sum(getattr(o, metric) for o in ops)
    return {"name": top.name, "ns": getattr(top, metric), "metric": metric, "share": getattr(top, metric) / total}


def memory_peaks(digest: pb.Digest) -> list[dict]:
    """[{device, peak_bytes, capacity_bytes}] per device, devices other than CPU first."""
    devices = sorted(digest.memory, key=lambda m: m.device.upper() == "CPU")  # stable: digest order kept
    return [{"device": m.device, "peak_bytes": m.peak_allocated_bytes, "capacity_bytes": m.capacity_bytes}
            for m in devices]


def window_figures(digest: pb.Digest) -> dict:
    """The window's headline figures (GET /overview `figures`)."""
    mean = digest.average
    return {
        "steps": len(digest.steps),
        "total_step_ns": sum(max(0, s.dur_ns) for s in digest.steps),
        "average_step_ns": mean.total_ns,
        "compute_share": _share(mean.compute_ns + mean.overlapped_ns, mean.total_ns),
        "comm_not_hidden_share": _share(mean.communication_ns, mean.total_ns),
        "dataloader_share": _share(mean.dataloader_ns, mean.total_ns),
        "memory": memory_peaks(digest),
        "slowest_op": slowest_op(digest),
    }


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
