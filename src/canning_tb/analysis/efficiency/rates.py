"""Achieved rates against the roofs (docs/efficiency.md#rates):
- TFLOP/s = FLOPs / time, GB/s = bytes / time, intensity = FLOPs / bytes;
- roof = min(compute peak, intensity x HBM bandwidth): the compute peak is the matrix units' peak of
  the work's dtype for matmul / convolution / attention, the vector units' FP32 peak otherwise;
- share of roof = TFLOP/s / roof; for work without FLOPs (copies) GB/s / HBM bandwidth;
- bound: "latency" when the mean call is shorter than LATENCY_NS and reaches less than
  LATENCY_SHARE of its roof (too short or too small to reach either roof), else "compute" when the
  intensity is at or above the ridge (compute peak / HBM bandwidth), "memory" below it.
"""
from __future__ import annotations

from .. import digest_pb2 as pb
from .peaks import Peak

LATENCY_NS = 10_000  # a mean call under 10 µs
LATENCY_SHARE = 0.5


def fill(w: pb.WorkRates, flops: float | None, moved: float | None, time_ns: int, calls: int, peak: Peak | None,
         dtype: str, matrix: bool, model: str) -> None:
    """Set every field of one row's WorkRates (-1 / "" where unknown)."""
    w.flops = -1.0 if flops is None else float(flops)
    w.bytes = -1.0 if moved is None else float(moved)
    w.model, w.dtype, w.matrix, w.time_ns = model, dtype, matrix, int(time_ns)
    w.tflops = w.gbps = w.intensity = w.roof_tflops = w.roof_share = -1.0
    w.bound = ""
    if time_ns <= 0:
        return
    if flops is not None:
        w.tflops = flops / time_ns / 1e3
    if moved is not None:
        w.gbps = moved / time_ns
    if flops is not None and moved:
        w.intensity = flops / moved
    _against_roofs(w, time_ns / max(calls, 1), peak)


def _against_roofs(w: pb.WorkRates, mean_call_ns: float, peak: Peak | None) -> None:
    if peak is None:
        return
    compute = peak.compute_roof(w.dtype, w.matrix)
    hbm = peak.hbm
    if w.flops > 0 and w.intensity >= 0 and compute and hbm:
        w.roof_tflops = min(compute, w.intensity * hbm / 1e3)
        w.roof_share = w.tflops / w.roof_tflops
        ridge = compute * 1e3 / hbm
        kind = "compute" if w.intensity >= ridge else "memory"
    elif w.flops <= 0 and w.gbps >= 0 and hbm:  # data movement only: the bandwidth roof
        w.roof_share = w.gbps / hbm
        kind = "memory"
    else:
        return
    w.bound = "latency" if mean_call_ns < LATENCY_NS and w.roof_share < LATENCY_SHARE else kind
