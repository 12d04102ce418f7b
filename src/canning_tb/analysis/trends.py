"""A window's key figures as scalars for TensorBoard's Scalars tab, so that they plot across steps
and across runs next to the loss: the mean step time and each step category's share of it, the
share of communication not hidden by compute, the memory peak and the slowest operator's time,
all from summary.window_figures (the Overview's numbers). Figures a window does not have are left
out (a Scalars line has no "absent" point).

`trend_step` is the x of the window on the Scalars axis: the number of its last ProfilerStep#N,
else `fallback` (its position among its worker's windows) for windows without step numbers.
"""
from __future__ import annotations

from . import digest_pb2 as pb
from .summary import window_figures


def trend_scalars(digest: pb.Digest) -> dict[str, float]:
    fig = window_figures(digest)
    out: dict[str, float] = {}
    if fig["average_step_ns"] > 0:
        out["step_time_ms"] = fig["average_step_ns"] / 1e6
        for category, value in fig["average_shares"].items():
            if value is not None:
                out[f"breakdown_share/{category}"] = value
    if fig["comm_not_hidden_share"] is not None:
        out["comm_not_hidden_share"] = fig["comm_not_hidden_share"]
    peaks = [m for m in fig["memory"] if m["peak_bytes"] > 0]
    if peaks:
        out["memory_peak_bytes"] = float(peaks[0]["peak_bytes"])  # devices other than CPU come first
    top = fig["slowest_op"]
    if top:
        out["top_op_ms_per_step"] = top["ns"] / max(1, len(digest.steps)) / 1e6
    return out


def trend_step(digest: pb.Digest, fallback: int) -> int:
    numbers = [s.number for s in digest.steps if s.number > 0]
    return max(numbers) if numbers else fallback
