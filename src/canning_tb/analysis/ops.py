"""Operator statistics: by name, by name + input shapes, by name + call stack.

Rows: CPU_OP events on the host, ProfilerStep#N excluded; a call that is the only child of a call
of the same name (a redispatch) is folded into that call, as torch's key_averages() does
(`Context.op_target`): one call, its self time and kernels added to the parent's.
- host total = the event's duration; host self = total minus its direct children on the same
  thread (CPU_OP / USER_ANNOTATION children and RUNTIME calls such as cudaLaunchKernel: as
  torch's key_averages() self CPU time and torch-tb-profiler count it); nesting from
  `common.nest` (sort-based, vectorised).
- device self of a row (name, shape or stack) = the length of the union of the intervals of the
  device events (kernels, memcpy, memset, communication) whose launching innermost op is one of
  its calls (see `context.Context`); device total = the same over the events launched by its
  calls and their descendants: a kernel under two nested calls of the same name (HcclAllreduce
  inside HcclAllreduce on Ascend) counts once, kernels running at the same time count once, so
  self <= total <= the window (`_device_union`).
- call stack: the `stack` column; when empty, the names of the enclosing PYTHON_FUNCTION events
  on the same thread, innermost first, up to 16 frames (the cheap version).
- tc_eligible: the op name is in tensor_cores.TC_ELIGIBLE_OPS (matmul / convolution / attention-like
  ops that cuBLAS / cuDNN run on Tensor Cores in fp16/bf16/tf32); tc_self_share / tc_total_share:
  tensor_cores.op_tc_shares.
"""
from __future__ import annotations

import numpy as np

from canning_tb.util.arrays import distinct, distinct_pairs

from ..ingest.table import NONE, Kind
from . import digest_pb2 as pb
from .common import STEP_RE, group_rows, id_mask, ids_matching, nest
from .context import Context
from .tensor_cores import TC_ELIGIBLE_OPS, op_tc_shares

TOP_KERNELS = 5
MAX_STACK_FRAMES = 16


def _op_positions(ctx: Context) -> np.ndarray:
    """Positions (in ctx.host.rows) of the CPU_OP rows that make the tables."""
    t = ctx.table
    step_ids = ids_matching(t, STEP_RE)
    rows = ctx.host.rows
    kept = ctx.op_target == np.arange(len(rows))  # a redispatched call counts in its parent's row
    return np.flatnonzero((ctx.host_kind == int(Kind.CPU_OP)) & kept & ~id_mask(ctx.ev["name"][rows], step_ids,
                                                                               len(t.strings)))


def python_stacks(ctx: Context, op_rows: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """For op rows with an empty `stack`: a derived stack from enclosing python functions.

    Returns (code per op row: -1 none, else index into the returned list of strings).
    """
    t, ev = ctx.table, ctx.ev
    code = np.full(len(op_rows), -1, np.int64)
    py = np.flatnonzero((ev["kind"] == int(Kind.PYTHON_FUNCTION)) & (ev["device"] == NONE))
    need = np.flatnonzero(ev["stack"][op_rows] == NONE)
    if len(py) == 0 or len(need) == 0:
        return code, []
    rows = np.concatenate([py, op_rows[need]])
    n = nest(t, rows)
    is_py = np.zeros(len(rows), bool)
    is_py[: len(py)] = True
    names = ev["name"][rows]
    frames = np.full((len(need), MAX_STACK_FRAMES), -1, np.int64)
    filled = np.zeros(len(need), np.int64)
    cur = n.parent[len(py):].copy()
    while True:
        alive = (cur != NONE) & (filled < MAX_STACK_FRAMES)
        if not alive.any():
            break
        idx = np.flatnonzero(alive)
        c = cur[idx]
        take = is_py[c]
        ti = idx[take]
        frames[ti, filled[ti]] = names[c[take]]
        filled[ti] += 1
        cur[idx] = n.parent[c]
        cur[~alive] = NONE
    has = filled > 0
    if not has.any():
        return code, []
    uniq, inv = group_rows(frames[has])
    strings = [";".join(t.strings[int(x)] for x in u if x >= 0) for u in uniq]
    code[need[has]] = inv.reshape(-1)
    return code, strings


def _group(keys: np.ndarray):
    """keys: (n, k) int array -> (unique keys, inverse)."""
    if len(keys) == 0:
        return keys, np.zeros(0, np.int64)
    return group_rows(keys)


def _launched_under(ctx: Context, pos: np.ndarray, inv: np.ndarray, nested: bool) -> tuple[np.ndarray, np.ndarray]:
    """(group, device row) pairs, each once: the device events launched by a call of the group, and
    with `nested` by any of its descendants too (walking up from each event's launching op)."""
    own = ctx.op_owner
    ok = own != NONE
    group_of_pos = np.full(len(ctx.host.rows), -1, np.int64)
    group_of_pos[pos] = inv
    dev = ctx.device_rows[ok]
    cur = own[ok].astype(np.int64)
    groups, events = [], []
    alive = np.arange(len(cur))
    while len(alive):
        found = group_of_pos[cur[alive]]
        hit = found >= 0
        groups.append(found[hit])
        events.append(dev[alive[hit]])
        if not nested:
            break
        cur[alive] = ctx.host.parent[cur[alive]]
        alive = alive[cur[alive] != NONE]
    if not groups or not sum(len(g) for g in groups):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    group, event, _ = distinct_pairs(np.concatenate(groups).astype(np.int64), np.concatenate(events).astype(np.int64))
    return group, event


def _device_union(ctx: Context, pos: np.ndarray, inv: np.ndarray, ng: int, nested: bool) -> np.ndarray:
    """Per group: the length of the union of the device intervals launched by its calls (module doc)."""
    group, rows = _launched_under(ctx, pos, inv, nested)
    out = np.zeros(ng, np.int64)
    if len(group) == 0:
        return out
    start = ctx.ev["ts"][rows].astype(np.int64)
    end = start + ctx.ev["dur"][rows].astype(np.int64)
    order = np.lexsort((start, group))
    group, start, end = group[order], start[order], end[order]
    first = np.r_[True, group[1:] != group[:-1]]
    base = np.minimum.reduceat(start, np.flatnonzero(first))[np.cumsum(first) - 1]
    start, end = start - base, end - base  # per group from 0, so that groups stack below `span`
    span = int(end.max()) + 1
    reach = np.maximum.accumulate(end + group * span)  # the furthest end so far, group by group
    before = np.r_[0, reach[:-1]] - group * span
    before[first] = 0
    np.add.at(out, group, np.maximum(0, end - np.maximum(start, before)))
    return out


def _stats(ctx: Context, pos: np.ndarray, inv: np.ndarray, ng: int):
    ev, h = ctx.ev, ctx.host
    dur = ev["dur"][h.rows[pos]]
    calls = np.bincount(inv, minlength=ng)
    hs = np.bincount(inv, weights=ctx.op_self[pos], minlength=ng)
    ht = np.bincount(inv, weights=dur, minlength=ng)
    ds = _device_union(ctx, pos, inv, ng, nested=False)
    dt = _device_union(ctx, pos, inv, ng, nested=True)
    mn = np.full(ng, np.iinfo(np.int64).max, np.int64)
    mx = np.full(ng, np.iinfo(np.int64).min, np.int64)
    np.minimum.at(mn, inv, dur)
    np.maximum.at(mx, inv, dur)
    return calls, hs, ht, ds, dt, mn, mx


def _top_kernels(ctx: Context, pos: np.ndarray, inv: np.ndarray, ng: int) -> list[list[tuple[int, int, int]]]:
    """Per group: [(kernel name id, calls, total ns)] of the device events launched by its ops
    (the op itself, not its children), top TOP_KERNELS by time."""
    out: list[list] = [[] for _ in range(ng)]
    own = ctx.op_owner
    ok = own != NONE
    if not ok.any():
        return out
    group_of_pos = np.full(len(ctx.host.rows), -1, np.int64)
    group_of_pos[pos] = inv
    dev = ctx.device_rows[ok]
    g = group_of_pos[own[ok]]
    keep = g >= 0
    g, dev = g[keep], dev[keep]
    if len(g) == 0:
        return out
    kn = ctx.ev["name"][dev].astype(np.int64)
    u, kinv = _group(np.stack([g, kn], axis=1))
    calls = np.bincount(kinv)
    tot = np.bincount(kinv, weights=ctx.ev["dur"][dev]).astype(np.int64)
    order = np.lexsort((-tot, u[:, 0]))
    ug = u[order, 0]
    starts = np.flatnonzero(np.r_[True, ug[1:] != ug[:-1]])
    ends = np.r_[starts[1:], len(ug)]
    for a, b in zip(starts, ends):
        sel = order[a:min(b, a + TOP_KERNELS)]
        out[int(ug[a])] = [(int(u[i, 1]), int(calls[i]), int(tot[i])) for i in sel]
    return out


def op_stats(ctx: Context) -> tuple[list, list, list]:
    """(ops_by_name, ops_by_shape, ops_by_stack) as lists of pb.OpStat, sorted by host total."""
    t, ev, h = ctx.table, ctx.ev, ctx.host
    pos = _op_positions(ctx)
    rows = h.rows[pos]
    name = ev["name"][rows].astype(np.int64)
    shapes = ev["shapes"][rows].astype(np.int64)
    stack = ev["stack"][rows].astype(np.int64)
    code, derived = python_stacks(ctx, rows)
    nstr = len(t.strings)
    stack_key = np.where(stack != NONE, stack, np.where(code >= 0, nstr + code, NONE))

    def stack_text(k: int) -> str:
        if k < 0:
            return ""
        return t.strings[k] if k < nstr else derived[k - nstr]

    has_stack_names = set(int(x) for x in distinct(name[stack_key != NONE]))

    def build(keys, with_shape=False, with_stack=False, only=None):
        p, k = pos, keys
        if only is not None:
            p, k = pos[only], keys[only]
        u, inv = _group(k)
        ng = len(u)
        calls, hs, ht, ds, dt, mn, mx = _stats(ctx, p, inv, ng)
        kern = _top_kernels(ctx, p, inv, ng)
        tc_self, tc_total = op_tc_shares(ctx, p, inv, ng)
        res = []
        for gi in range(ng):
            nm = t.strings[int(u[gi, 0])] or ""
            o = pb.OpStat(name=nm, calls=int(calls[gi]), host_self_ns=int(round(hs[gi])), host_total_ns=int(round(ht[gi])),
                          device_self_ns=int(round(ds[gi])), device_total_ns=int(round(dt[gi])),
                          host_total_min_ns=int(mn[gi]), host_total_max_ns=int(mx[gi]),
                          has_call_stack=int(u[gi, 0]) in has_stack_names, tc_eligible=nm in TC_ELIGIBLE_OPS,
                          tc_self_share=float(tc_self[gi]), tc_total_share=float(tc_total[gi]))
            if with_shape:
                o.input_shapes = t.strings[int(u[gi, 1])] or "" if u[gi, 1] >= 0 else ""
            if with_stack:
                o.call_stack = stack_text(int(u[gi, 1]))
            for kid, kc, kt in kern[gi]:
                o.kernels.add(name=t.strings[kid] or "", calls=kc, total_ns=kt)
            res.append(o)
        res.sort(key=lambda o: (-o.host_total_ns, o.name, o.input_shapes, o.call_stack))
        return res

    by_name = build(name[:, None])
    by_shape = build(np.stack([name, shapes], axis=1), with_shape=True)
    by_stack = build(np.stack([name, stack_key], axis=1), with_stack=True, only=stack_key != NONE)
    return by_name, by_shape, by_stack
