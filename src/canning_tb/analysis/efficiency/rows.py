"""The work of the table rows: operators by name and by name + input shapes, kernels by name and by
name + launching operator. A row's FLOPs (bytes) are the sum over its calls, known only when every
call's is; its rates are over the row's time: the device total of its calls (the kernels they
launched, each once), or their host total on a window without device work (a CPU profile); a
kernel row's, the total of its calls. An FP32 matrix row whose kernels ran on Tensor Cores is
judged against the TF32 peak."""
from __future__ import annotations

import numpy as np

from ...ingest.table import NONE
from .. import digest_pb2 as pb
from ..context import Context
from . import rates
from .calls import Calls, distinct
from .peaks import Peak

PIPES = {"mac": "cube", "vec": "vector", "scalar": "scalar", "mte1": "mte1", "mte2": "mte2", "mte3": "mte3",
         "fixpipe": "fixpipe"}


def _sums(keys: np.ndarray, calls: Calls):
    """Per group (keys: group index per call): FLOPs and bytes (NaN unless every call has them), the
    first call's dtype / model, whether any call is matrix work."""
    n = int(keys.max()) + 1 if len(keys) else 0
    flops = np.bincount(keys, weights=np.nan_to_num(calls.flops), minlength=n)
    moved = np.bincount(keys, weights=np.nan_to_num(calls.bytes), minlength=n)
    missing_f = np.bincount(keys, weights=np.isnan(calls.flops), minlength=n) > 0
    missing_b = np.bincount(keys, weights=np.isnan(calls.bytes), minlength=n) > 0
    first = np.full(n, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(first, keys, np.arange(len(keys)))
    matrix = np.bincount(keys, weights=calls.matrix, minlength=n) > 0
    return np.where(missing_f, np.nan, flops), np.where(missing_b, np.nan, moved), first, matrix


def _set(w: pb.WorkRates, calls: Calls, f: float, b: float, first: int, matrix: bool, time_ns: int, count: int,
         peak: Peak | None, tensor_cores: bool) -> None:
    dtype = calls.dtype[first]
    if dtype == "fp32" and matrix and tensor_cores:
        dtype = "tf32"
    rates.fill(w, None if np.isnan(f) else f, None if np.isnan(b) else b, time_ns, count, peak, dtype, matrix,
               calls.model[first])


def no_work(w: pb.WorkRates) -> None:
    rates.fill(w, None, None, 0, 0, None, "", False, "")


def _grouped(cols: list[np.ndarray], size: int, calls: Calls):
    """Id columns of the calls -> ({key tuple: group}, the groups' _sums)."""
    if not len(cols[0]):
        return {}, ([], [], [], [])
    uniq, groups = distinct(cols, size)
    return {u: g for g, u in enumerate(uniq)}, _sums(groups, calls)


def _id(t, text: str) -> int:
    """The string id of a row's text, NONE for "" (a call without shapes, a kernel without an op)."""
    return t.strings.find(text) if text else NONE


def _shape_ids(t, rows: np.ndarray) -> np.ndarray:
    ids = t.events["shapes"][rows].astype(np.int64)
    empty = t.strings.find("")
    if empty >= 0:
        ids[ids == empty] = NONE
    return ids


def fill_operators(ctx: Context, stats: list, pos: np.ndarray, calls: Calls, by_shape: bool, peak: Peak | None,
                   host_time: bool) -> None:
    """Set OpStat.work of ops_by_name (by_shape: ops_by_shape) rows from their calls."""
    t = ctx.table
    rows = ctx.host.rows[pos]
    shapes = _shape_ids(t, rows) if by_shape else np.full(len(rows), NONE, np.int64)
    index, (flops, moved, first, matrix) = _grouped([t.events["name"][rows], shapes], len(t.strings) + 1, calls)
    for o in stats:
        g = index.get((_id(t, o.name), _id(t, o.input_shapes) if by_shape else NONE))
        if g is None or calls.model[first[g]] == "":
            no_work(o.work)
            continue
        time_ns = o.host_total_ns if host_time else o.device_total_ns
        _set(o.work, calls, flops[g], moved[g], first[g], bool(matrix[g]), time_ns, o.calls, peak,
             o.tc_total_share > 0.5)


def kernel_op_ids(ctx: Context, dpos: np.ndarray) -> np.ndarray:
    """Per kernel: the string id of its launching operator's name (NONE none), as kernels_by_op groups them."""
    owner = ctx.device_owner[dpos]
    out = np.full(len(dpos), NONE, np.int64)
    if len(ctx.host.rows):
        has = owner != NONE
        out[has] = ctx.ev["name"][ctx.host.rows[owner[has]]]
    return out


def fill_kernels(ctx: Context, stats: list, dpos: np.ndarray, calls: Calls, with_op: bool,
                 peaks: dict[int, Peak]) -> None:
    """Set KernelStat.work (and the pipe shares) of kernels_by_name / kernels_by_op rows."""
    t = ctx.table
    names = ctx.ev["name"][ctx.device_rows[dpos]].astype(np.int64)
    ops = kernel_op_ids(ctx, dpos) if with_op else np.full(len(dpos), NONE, np.int64)
    index, (flops, moved, first, matrix) = _grouped([names, ops], len(t.strings) + 1, calls)
    for k in stats:
        _pipes(k)
        g = index.get((_id(t, k.name), _id(t, k.op_name) if with_op else NONE))
        if g is None or calls.model[first[g]] == "":
            no_work(k.work)
            continue
        _set(k.work, calls, flops[g], moved[g], first[g], bool(matrix[g]), k.total_ns, k.calls,
             peaks.get(k.device), k.tensor_cores)


def _pipes(k: pb.KernelStat) -> None:
    """The NPU pipes' busy shares from the kernel's PMU ratios (aic_*: its cube core, aiv_*: its
    vector core), busiest first (equal shares by name); a MIX kernel's vector-core pipes named "aiv <pipe>"."""
    del k.pipes[:]
    found = []
    both = any(n.startswith("aic_") for n in k.pmu) and any(n.startswith("aiv_") for n in k.pmu)
    for name, value in k.pmu.items():
        if not name.endswith("_ratio") or name[:4] not in ("aic_", "aiv_") or name[4:-6] not in PIPES:
            continue
        pipe = PIPES[name[4:-6]]
        if both and name.startswith("aiv_") and pipe != "vector":
            pipe = f"aiv {pipe}"
        found.append((pipe, float(value)))
    for pipe, share in sorted(found, key=lambda p: (-p[1], p[0])):  # ties by name: a protobuf map has no order
        k.pipes.add(pipe=pipe, share=share)
