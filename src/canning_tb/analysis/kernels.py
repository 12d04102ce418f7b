"""Kernel statistics: by name, by name + launching op; per-core time.

Kernels here are KERNEL and COMM_KERNEL events (device compute and device communication;
memcpy/memset are not kernels). The launching op is the innermost host op/annotation that
launched it (context.Context.device_owner); "" when unknown.

Tensor Cores (GPU): a kernel uses them when its name contains one of TC_KERNEL_SUBSTRINGS
(case-sensitive substrings of the cuBLAS / cuDNN / CUTLASS kernel naming: the mma shape codes
884 / 1688 / 16816 / 8816, hmma/imma, xmma gemm/conv kernels, tf32 gemms, sm80+ cutlass
tensorop kernels, flash attention). `cores` reports NPU time per accelerator core (the `core`
column), and on CUDA GPUs a partition of the compute kernel time, each kernel counted once:
CORE_TENSOR (its name says Tensor Cores), CORE_ELIGIBLE (not on Tensor Cores, launched under a
Tensor-Core-eligible operator: its launching op or any op enclosing it is in ops.TC_ELIGIBLE_OPS),
CORE_OTHER (the rest).
"""
from __future__ import annotations

import re

import numpy as np

from ..ingest.table import NONE, Kind
from . import digest_pb2 as pb
from .common import group_rows, id_mask
from .context import Context
from .ops import TC_ELIGIBLE_OPS

CORE_TENSOR = "Tensor Cores"
CORE_ELIGIBLE = "Other, under Tensor-Core-eligible operators"
CORE_OTHER = "Other"

TC_KERNEL_SUBSTRINGS = (
    "h884", "s884", "h1688", "s1688", "i8816", "16816", "884gemm", "1688gemm", "hmma", "imma", "HMMA",
    "xmma_gemm", "xmma_implicit_gemm", "xmma_fprop", "xmma_dgrad", "xmma_wgrad", "gemm_tf32", "tf32gemm",
    "_tensorop_", "tensorop", "wmma", "sm80_xmma", "sm90_xmma", "flash_fwd", "flash_bwd", "fmha",
)


HCCL_CALL_RE = re.compile(r"(?<=_)_?\d+_\d+_\d+$")  # the per-call suffix of an HCCL operator name


def uses_tensor_cores(name: str) -> bool:
    return any(s in name for s in TC_KERNEL_SUBSTRINGS)


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
    for nid in np.unique(name[comm]):
        text = t.strings[int(nid)] or ""
        family = HCCL_CALL_RE.sub("", text)
        if family != text:
            key = families.setdefault(family, len(names))
            if key == len(names):
                names.append(family)
            name[comm & (name == nid)] = key
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

    return u, calls, tot, mn, mx, mean_blocks, most(ev["stream"]), most(ev["device"]), most(ev["core"])


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

    def build(keys, with_op):
        u, calls, tot, mn, mx, mb, stream, device, core = _group_stats(ctx, rows, keys)
        is_comm = np.zeros(len(u), bool)
        _, inv = group_rows(keys)
        np.logical_or.at(is_comm, inv.reshape(-1), comm)
        out = []
        for i in range(len(u)):
            nm = names[int(u[i, 0])]
            k = pb.KernelStat(name=nm, calls=int(calls[i]), total_ns=int(round(tot[i])), min_ns=int(mn[i]), max_ns=int(mx[i]),
                              device=int(device[i]), stream=int(stream[i]), core=t.strings[int(core[i])] or "" if core[i] >= 0 else "",
                              mean_blocks=float(mb[i]), tensor_cores=uses_tensor_cores(nm), communication=bool(is_comm[i]))
            if with_op:
                k.op_name = t.strings[int(u[i, 1])] or "" if u[i, 1] >= 0 else ""
            out.append(k)
        out.sort(key=lambda k: (-k.total_ns, k.name, k.op_name))
        return out

    by_name = build(name[:, None], False)
    by_op = build(np.stack([name, op_name], axis=1), True)

    return by_name, by_op, _cores(ctx, rows, dpos)


def _cores(ctx: Context, rows: np.ndarray, dpos: np.ndarray) -> list:
    t, ev = ctx.table, ctx.ev
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
    if not _tensor_core_device(ctx, rows):
        return cores
    name = ev["name"][rows].astype(np.int64)
    uniq = np.unique(name)
    tc = id_mask(name, uniq[[uses_tensor_cores(t.strings[int(x)] or "") for x in uniq]], len(t.strings))
    kern = ev["kind"][rows] == int(Kind.KERNEL)
    eligible = _under_eligible_op(ctx, dpos)
    for label, m in ((CORE_TENSOR, tc & kern), (CORE_ELIGIBLE, ~tc & kern & eligible), (CORE_OTHER, ~tc & kern & ~eligible)):
        cores.append(pb.CoreStat(core=label, calls=int(m.sum()), total_ns=int(ev["dur"][rows][m].sum())))
    return cores


def _tensor_core_device(ctx: Context, rows: np.ndarray) -> bool:
    """Compute kernels on a window whose devices are CUDA GPUs ("gpu": labelled only, without
    deviceProperties), not AMD / NPU / MTIA or any other kind."""
    t = ctx.table
    kinds = {str(dv.get("kind", "")).lower() for dv in t.meta.devices}
    if t.meta.format == "ascend" or kinds - {"cuda", "gpu"}:
        return False
    return bool((ctx.ev["kind"][rows] == int(Kind.KERNEL)).any())


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
