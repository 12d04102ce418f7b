"""Kernel statistics: by name, by name + launching op; per-core time.

Kernels here are KERNEL and COMM_KERNEL events (device compute and device communication;
memcpy/memset are not kernels). The launching op is the innermost host op/annotation that
launched it (context.Context.device_owner); "" when unknown.

Each kernel's family (KernelStat.family) comes from what launched it first, then from its category, and
last from its name's tokens (kernel_families.py).

Tensor Cores (GPU): a kernel uses them when its name says so (tensor_cores.uses_tensor_cores).
`cores` reports NPU time per accelerator core (the `core`
column), and on CUDA GPUs a partition of the compute kernel time, each kernel counted once:
CORE_TENSOR (its name says Tensor Cores), CORE_ELIGIBLE (not on Tensor Cores, launched under a
Tensor-Core-eligible operator: its launching op or any op enclosing it is in TC_ELIGIBLE_OPS),
CORE_OTHER (the rest).

Ascend: op_statistic.csv counts every task of the window per op type and core; kernel_details.csv
(and the trace's device tasks) may hold only some of them (a sample). `kernel_types` is CANN's
table (Digest.kernel_types), `task_coverage` the tasks the events hold against it; where the events
hold fewer, the compute `cores` are op_statistic's (communication cores stay the events').

Per-kernel measurements, where the trace carries them (EventTable.metrics): mean blocks per SM and
mean est. achieved occupancy weighted by each call's duration (as the old TensorBoard plugin), the
most frequent registers per thread and shared memory; NPU: the mean MIX block dim and the PMU
ratios (npu_metrics.pmu_means). -1 (empty map) where unknown.
"""
from __future__ import annotations

import re

import numpy as np

from canning_tb.util.arrays import distinct

from ..ingest import side_tables as side
from ..ingest.table import (METRIC_BLOCKS_PER_SM, METRIC_MIX_BLOCK_DIM, METRIC_OCCUPANCY, METRIC_REGISTERS,
                            METRIC_SHARED_MEMORY, NONE, Kind)
from . import digest_pb2 as pb
from .common import group_rows, id_mask
from .context import Context
from .kernel_families import group_family, kernel_families
from .npu_metrics import pmu_means
from .tensor_cores import TC_ELIGIBLE_OPS, is_cuda_window, uses_tensor_cores

CORE_TENSOR = "Tensor Cores"
CORE_ELIGIBLE = "Other, under Tensor-Core-eligible operators"
CORE_OTHER = "Other"

# the per-call suffix of an HCCL operator name: hcom_allReduce__586_2_1, 2023's hcom_broadcast__483_0
HCCL_CALL_RE = re.compile(r"(?<=_)_?\d+_\d+(?:_\d+)?$")


def _kernel_rows(ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    """(table rows, positions in ctx.device_rows) of the kernels."""
    ev = ctx.ev
    dev = ctx.device_rows
    k = ev["kind"][dev]
    sel = np.flatnonzero((k == int(Kind.KERNEL)) | (k == int(Kind.COMM_KERNEL)))
    return dev[sel], sel


def _grouping_names(t, rows: np.ndarray, comm: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """(name keys, key -> name) to group kernels by: the string ids of the names, except that HCCL
    names one operator per call (hcom_allReduce__586_2_1), so communication kernels are grouped by
    their family (hcom_allReduce_, keys after the table's strings) like other kernels."""
    name = t.events["name"][rows].astype(np.int64)
    names = list(t.strings.values)
    families: dict[str, int] = {}
    ids, at = np.unique(name[comm], return_inverse=True)  # one pass: a name per call makes many ids
    keys = ids.copy()
    for i, nid in enumerate(ids.tolist()):
        text = t.strings[nid] or ""
        family = HCCL_CALL_RE.sub("", text)
        if family != text:
            if family not in families:
                families[family] = len(names)
                names.append(family)
            keys[i] = families[family]
    name[comm] = keys[at.reshape(-1)]
    return name, names


def _group_stats(ctx: Context, rows: np.ndarray, keys: np.ndarray):
    ev = ctx.ev
    u, inv = group_rows(keys)
    ng = len(u)
    dur = ev["dur"][rows]
    calls = np.bincount(inv, minlength=ng)
    tot = np.bincount(inv, weights=dur, minlength=ng)
    mn = np.full(ng, np.iinfo(np.int64).max, np.int64)
    mx = np.full(ng, np.iinfo(np.int64).min, np.int64)
    np.minimum.at(mn, inv, dur)
    np.maximum.at(mx, inv, dur)
    blocks = ev["blocks"][rows]
    known = blocks != NONE
    bsum = np.bincount(inv[known], weights=blocks[known], minlength=ng)
    bcnt = np.bincount(inv[known], minlength=ng)
    mean_blocks = np.where(bcnt > 0, bsum / np.maximum(bcnt, 1), -1.0)

    def most(col):
        # the most frequent value of col per group
        v = col[rows].astype(np.int64)
        uu, cinv = group_rows(np.stack([inv, v], axis=1))
        cnt = np.bincount(cinv.reshape(-1))
        order = np.lexsort((-cnt, uu[:, 0]))
        g = uu[order, 0]
        first = order[np.r_[True, g[1:] != g[:-1]]]
        out = np.full(ng, NONE, np.int64)
        out[uu[first, 0]] = uu[first, 1]
        return out

    return u, calls, tot, mn, mx, mean_blocks, most(ev["stream"]), most(ev["device"]), most(ev["core"]), inv


def _weighted_mean(values: np.ndarray, weight: np.ndarray, inv: np.ndarray, ng: int) -> np.ndarray:
    """Per group: sum(value x weight) / sum(weight) over the known values; -1 without any."""
    ok = ~np.isnan(values) & (values >= 0)
    num = np.bincount(inv[ok], weights=values[ok] * weight[ok], minlength=ng)
    den = np.bincount(inv[ok], weights=weight[ok], minlength=ng)
    plain = np.bincount(inv[ok], weights=values[ok], minlength=ng) / np.maximum(np.bincount(inv[ok], minlength=ng), 1)
    has = np.bincount(inv[ok], minlength=ng) > 0  # calls of 0 ns: the plain mean
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.where(has, plain, -1.0))


def _most_frequent(values: np.ndarray, inv: np.ndarray, ng: int) -> np.ndarray:
    ok = ~np.isnan(values)
    out = np.full(ng, -1.0)
    if not ok.any():
        return out
    uu, cinv = group_rows(np.stack([inv[ok], values[ok].astype(np.int64)], axis=1))
    cnt = np.bincount(cinv.reshape(-1))
    order = np.lexsort((-cnt, uu[:, 0]))
    g = uu[order, 0]
    first = order[np.r_[True, g[1:] != g[:-1]]]
    out[uu[first, 0]] = uu[first, 1]
    return out


def _metric_stats(ctx: Context, rows: np.ndarray, inv: np.ndarray, ng: int) -> dict:
    """{KernelStat field: value per group} of the measurements the table carries."""
    t = ctx.table
    dur = ctx.ev["dur"][rows].astype(np.float64)
    out = {}
    for field, metric in (("mean_blocks_per_sm", METRIC_BLOCKS_PER_SM), ("mean_occupancy_pct", METRIC_OCCUPANCY),
                          ("mean_mix_block_dim", METRIC_MIX_BLOCK_DIM)):
        if metric in t.metrics:
            out[field] = _weighted_mean(t.metrics[metric][rows], dur, inv, ng)
    for field, metric in (("registers_per_thread", METRIC_REGISTERS), ("shared_memory_bytes", METRIC_SHARED_MEMORY)):
        if metric in t.metrics:
            out[field] = _most_frequent(t.metrics[metric][rows], inv, ng)
    pmu = pmu_means(t, rows, inv, ng)
    if pmu:
        out["pmu"] = pmu
    return out


def _set_metrics(k: pb.KernelStat, stats: dict, i: int) -> None:
    k.mean_blocks_per_sm = k.mean_occupancy_pct = k.registers_per_thread = -1.0
    k.shared_memory_bytes = k.mean_mix_block_dim = -1.0
    for field, values in stats.items():
        if field == "pmu":
            k.pmu.update({name: float(v[i]) for name, v in values.items() if not np.isnan(v[i])})
        else:
            setattr(k, field, float(values[i]))


def kernel_stats(ctx: Context) -> tuple[list, list, list]:
    """(kernels_by_name, kernels_by_op, cores), sorted by total time."""
    t, ev = ctx.table, ctx.ev
    rows, dpos = _kernel_rows(ctx)
    if len(rows) == 0:
        return [], [], []
    comm = ev["kind"][rows] == int(Kind.COMM_KERNEL)
    name, names = _grouping_names(t, rows, comm)
    owner = ctx.device_owner[dpos]
    op_name = np.full(len(rows), NONE, np.int64)
    if len(ctx.host.rows):  # a window without host events (no trace) has no launching ops
        has = owner != NONE
        op_name[has] = ev["name"][ctx.host.rows[owner[has]]]
    family_code, family_labels = kernel_families(ctx, rows, dpos)

    def build(keys, with_op):
        u, calls, tot, mn, mx, mb, stream, device, core, inv = _group_stats(ctx, rows, keys)
        inv = inv.reshape(-1)
        is_comm = np.zeros(len(u), bool)
        np.logical_or.at(is_comm, inv, comm)
        measured = _metric_stats(ctx, rows, inv, len(u))
        family = group_family(family_code, family_labels, ev["dur"][rows], inv, len(u))
        out = []
        for i in range(len(u)):
            nm = names[int(u[i, 0])]
            k = pb.KernelStat(name=nm, calls=int(calls[i]), total_ns=int(round(tot[i])), min_ns=int(mn[i]), max_ns=int(mx[i]),
                              device=int(device[i]), stream=int(stream[i]), core=t.strings[int(core[i])] or "" if core[i] >= 0 else "",
                              mean_blocks=float(mb[i]), tensor_cores=uses_tensor_cores(nm), communication=bool(is_comm[i]),
                              family=family[i])
            if with_op:
                k.op_name = t.strings[int(u[i, 1])] or "" if u[i, 1] >= 0 else ""
            _set_metrics(k, measured, i)
            out.append(k)
        out.sort(key=lambda k: (-k.total_ns, k.name, k.op_name))
        return out

    by_name = build(name[:, None], False)
    by_op = build(np.stack([name, op_name], axis=1), True)

    return by_name, by_op, _cores(ctx, rows, dpos)


def kernel_types(table) -> list:
    """CANN's kernel time per op type and core (op_statistic.csv), by total time."""
    out = [pb.KernelStat(name=r["op_type"], core=r["core_type"], calls=-1 if r["count"] is None else r["count"],
                         total_ns=-1 if r["total_ns"] is None else r["total_ns"],
                         min_ns=-1 if r["min_ns"] is None else r["min_ns"],
                         max_ns=-1 if r["max_ns"] is None else r["max_ns"], device=-1, stream=-1, mean_blocks=-1.0)
           for r in side.rows(table.side, "op_statistic")]
    return sorted(out, key=lambda k: (-k.total_ns, k.name, k.core))


def task_coverage(table) -> tuple[int, int]:
    """(compute tasks the events hold, tasks op_statistic.csv counts; -1 without it)."""
    held = int(np.count_nonzero(table.events["kind"] == int(Kind.KERNEL)))
    rows = side.rows(table.side, "op_statistic")
    return held, (sum(max(r["count"] or 0, 0) for r in rows) if rows else -1)


def _cores_from_op_statistic(ctx: Context, rows: np.ndarray) -> list:
    """Compute cores from op_statistic.csv (every task), communication cores from the events."""
    sums: dict[str, list[int]] = {}
    for r in side.rows(ctx.table.side, "op_statistic"):
        acc = sums.setdefault(r["core_type"] or "unknown", [0, 0])
        acc[0] += max(r["count"] or 0, 0)
        acc[1] += max(r["total_ns"] or 0, 0)
    comm = rows[ctx.ev["kind"][rows] == int(Kind.COMM_KERNEL)]
    for core, dur in zip(ctx.ev["core"][comm].tolist(), ctx.ev["dur"][comm].tolist()):
        acc = sums.setdefault(ctx.table.strings[int(core)] or "unknown" if core >= 0 else "unknown", [0, 0])
        acc[0] += 1
        acc[1] += int(dur)
    return [pb.CoreStat(core=k, calls=v[0], total_ns=v[1]) for k, v in sorted(sums.items(), key=lambda x: -x[1][1])]


def _cores(ctx: Context, rows: np.ndarray, dpos: np.ndarray) -> list:
    t, ev = ctx.table, ctx.ev
    held, counted = task_coverage(t)
    if counted > held:
        return _cores_from_op_statistic(ctx, rows)
    cores = []
    core_col = ev["core"][rows]
    if (core_col != NONE).any():
        u, inv = np.unique(core_col, return_inverse=True)
        calls = np.bincount(inv.reshape(-1))
        tot = np.bincount(inv.reshape(-1), weights=ev["dur"][rows])
        for i in np.argsort(-tot, kind="stable"):
            cores.append(pb.CoreStat(core=t.strings[int(u[i])] if u[i] >= 0 else "unknown", calls=int(calls[i]),
                                     total_ns=int(round(tot[i]))))
        return cores
    if not is_cuda_window(t) or not (ev["kind"][rows] == int(Kind.KERNEL)).any():
        return cores
    tc, kern, eligible = _tensor_core_masks(ctx, rows, dpos)
    for label, m in ((CORE_TENSOR, tc & kern), (CORE_ELIGIBLE, ~tc & kern & eligible), (CORE_OTHER, ~tc & kern & ~eligible)):
        cores.append(pb.CoreStat(core=label, calls=int(m.sum()), total_ns=int(ev["dur"][rows][m].sum())))
    return cores


def _tensor_core_masks(ctx: Context, rows: np.ndarray, dpos: np.ndarray) -> tuple:
    """Per kernel row: on Tensor Cores (by its name), a compute kernel, under a Tensor-Core-eligible operator."""
    t, ev = ctx.table, ctx.ev
    name = ev["name"][rows].astype(np.int64)
    uniq = distinct(name)
    tc = id_mask(name, uniq[[uses_tensor_cores(t.strings[int(x)] or "") for x in uniq]], len(t.strings))
    return tc, ev["kind"][rows] == int(Kind.KERNEL), _under_eligible_op(ctx, dpos)


def eligible_rows(ctx: Context) -> np.ndarray:
    """Rows of the kernels the Kernels view counts as CORE_ELIGIBLE (not on Tensor Cores, under an eligible op)."""
    rows, dpos = _kernel_rows(ctx)
    tc, kern, eligible = _tensor_core_masks(ctx, rows, dpos)
    return rows[~tc & kern & eligible]


def _under_eligible_op(ctx: Context, dpos: np.ndarray) -> np.ndarray:
    """Per kernel: its launching op, or an op enclosing that one, is Tensor-Core eligible."""
    h, t = ctx.host, ctx.table
    if len(h.rows) == 0:  # no host events: nothing launched the kernels
        return np.zeros(len(dpos), bool)
    eligible_ids = [t.strings.find(n) for n in TC_ELIGIBLE_OPS if t.strings.find(n) >= 0]
    is_eligible = id_mask(ctx.ev["name"][h.rows], eligible_ids, len(t.strings))
    under = is_eligible.copy()  # an op is under an eligible op when it or an ancestor is one
    for depth in range(1, int(h.depth.max(initial=0)) + 1):
        sel = np.flatnonzero(h.depth == depth)
        under[sel] |= under[h.parent[sel]]
    owner = ctx.device_owner[dpos]
    return np.where(owner != NONE, under[np.maximum(owner, 0)], False)
