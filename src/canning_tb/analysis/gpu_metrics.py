"""GPU efficiency per device: utilization, estimated SM efficiency, estimated achieved occupancy,
Tensor Core share (the figures of the old TensorBoard plugin's GPU summary, same definitions).

All four are taken over a span S of step time (build.py: the steps the average keeps), per GPU,
over its kernels (KERNEL and COMM_KERNEL events; copies and memsets are not kernels):
- utilization = |union of the kernels' intervals inside S| / |S|;
- est. SM efficiency = (1/|S|) x integral over S of min(sum of `blocks per SM` of the kernels
  running at that instant, 1): a kernel with fewer blocks than SMs leaves SMs idle. Kernels
  without the value (or with one <= 0) count as 0;
- est. achieved occupancy = the kernels' `est. achieved occupancy %` averaged with the weight of
  each kernel's time inside S (kernels without the value, or a negative one, left out);
- Tensor Core share = time inside S of kernels whose name says Tensor Cores
  (tensor_cores.uses_tensor_cores) / time inside S of all kernels; each kernel counted once. CUDA
  only (the name patterns are NVIDIA's): -1 on ROCm and other GPUs.
A figure is -1 (unknown) when the trace carries nothing it needs (e.g. no `blocks per SM`).
"""
from __future__ import annotations

import numpy as np

from canning_tb.util.arrays import distinct

from ..ingest.table import METRIC_BLOCKS_PER_SM, METRIC_OCCUPANCY, EventTable, Kind
from . import digest_pb2 as pb
from . import intervals as iv
from .tensor_cores import is_cuda_window, uses_tensor_cores

UNKNOWN = -1.0


def kernel_rows(table: EventTable) -> np.ndarray:
    kind = table.events["kind"]
    return np.flatnonzero((kind == int(Kind.KERNEL)) | (kind == int(Kind.COMM_KERNEL)))


def is_gpu_window(table: EventTable) -> bool:
    """GPU devices recorded (deviceProperties, "GPU N" labels), or none recorded at all: a Kineto
    trace's kernels run on a GPU unless the file says the devices are something else."""
    kinds = {str(dv.get("kind", "")).lower() for dv in table.meta.devices} - {"cpu"}
    return table.meta.format != "ascend" and (not kinds or bool(kinds & {"cuda", "gpu", "rocm"}))


def sm_efficiency_integral(starts: np.ndarray, ends: np.ndarray, blocks: np.ndarray, span) -> float:
    """Integral over the span of min(sum of blocks per SM of the running kernels, 1), in ns."""
    ok = (blocks > 0) & (ends > starts)
    if not ok.any():
        return 0.0
    pos = np.concatenate([starts[ok], ends[ok]])
    delta = np.concatenate([blocks[ok], -blocks[ok]])
    order = np.argsort(pos, kind="stable")
    pos, level = pos[order], np.cumsum(delta[order])
    last = np.r_[pos[1:] != pos[:-1], True]  # the level after the last endpoint at each instant
    pos, level = pos[last], level[last]
    inside = iv.measure(span, pos[:-1], pos[1:])
    return float(np.sum(np.clip(level[:-1], 0.0, 1.0) * inside))


def _weighted_occupancy(occupancy: np.ndarray, inside: np.ndarray) -> float:
    ok = (occupancy >= 0) & (inside > 0)
    weight = float(inside[ok].sum())
    return float(np.sum(occupancy[ok] * inside[ok]) / weight) if weight > 0 else UNKNOWN


def _device_name(table: EventTable, device: int) -> str:
    for dv in table.meta.devices:
        if int(dv.get("index", -1) or 0) == device and dv.get("name"):
            return str(dv["name"])
    return f"GPU {device}"


def _one_device(table: EventTable, rows: np.ndarray, device: int, span, cuda: bool) -> pb.GpuEfficiency:
    ev = table.events
    starts, ends = ev["ts"][rows], ev["ts"][rows] + ev["dur"][rows]
    span_ns = iv.total(span)
    out = pb.GpuEfficiency(device=device, name=_device_name(table, device), span_ns=span_ns, kernels=len(rows),
                           utilization=UNKNOWN, sm_efficiency=UNKNOWN, achieved_occupancy_pct=UNKNOWN,
                           tensor_core_share=UNKNOWN)
    out.busy_ns = iv.total(iv.intersect(iv.union(starts, ends), span))
    inside = iv.measure(span, starts, ends)
    blocks = table.metrics.get(METRIC_BLOCKS_PER_SM)
    occupancy = table.metrics.get(METRIC_OCCUPANCY)
    if blocks is not None:
        out.kernels_with_blocks_per_sm = int(np.count_nonzero(~np.isnan(blocks[rows])))
    if occupancy is not None:
        out.kernels_with_occupancy = int(np.count_nonzero(~np.isnan(occupancy[rows])))
    if span_ns <= 0:
        return out
    out.utilization = out.busy_ns / span_ns
    if out.kernels_with_blocks_per_sm:
        out.sm_efficiency = sm_efficiency_integral(starts, ends, np.nan_to_num(blocks[rows], nan=0.0), span) / span_ns
    if out.kernels_with_occupancy:
        out.achieved_occupancy_pct = _weighted_occupancy(np.nan_to_num(occupancy[rows], nan=-1.0), inside)
    if cuda and inside.sum() > 0:
        names = ev["name"][rows]
        tc_ids = [n for n in distinct(names) if uses_tensor_cores(table.strings[int(n)] or "")]
        tc = np.isin(names, tc_ids)
        out.tensor_core_share = float(inside[tc].sum()) / float(inside.sum())
    return out


def gpu_efficiency(table: EventTable, span_starts, span_ends) -> list[pb.GpuEfficiency]:
    """One GpuEfficiency per GPU that ran kernels, over the span (any intervals; merged here)."""
    if not is_gpu_window(table):
        return []
    rows = kernel_rows(table)
    span = iv.union(span_starts, span_ends)
    cuda = is_cuda_window(table)
    device = table.events["device"][rows]
    return [_one_device(table, rows[device == d], int(d), span, cuda) for d in distinct(device) if d >= 0]
