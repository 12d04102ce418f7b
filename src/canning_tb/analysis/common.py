"""Shared pieces of the analysis: event selection, collective names, per-thread nesting."""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..ingest.table import NONE, EventTable, Kind

DEVICE_KINDS = (Kind.KERNEL, Kind.COMM_KERNEL, Kind.MEMCPY, Kind.MEMSET)
HOST_OP_KINDS = (Kind.CPU_OP, Kind.USER_ANNOTATION)

STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
DATALOADER_RE = re.compile(r"^(enumerate\(DataLoader\)#|enumerate\(DataPipe\)#|DataLoader)")
# host-side collective operators (CPU-only gloo runs; also the host side of NCCL runs)
HOST_COMM_RE = re.compile(
    r"^(c10d::|c10d_functional::|_c10d_functional::|symm_mem::|gloo:|nccl:|hccl:|record_param_comms$|hcom_|HcclAll|Hccl)")

_KIND_PATTERNS = [  # order matters: the more specific first
    ("ReduceScatter", r"reduce_?scatter"),
    ("AllGather", r"all_?gather"),
    ("AllReduce", r"all_?reduce"),
    ("AllToAll", r"all_?to_?all"),
    ("Broadcast", r"broadcast|bcast"),
    ("Barrier", r"barrier"),
    ("Send", r"send(?!recv)|isend"),
    ("Recv", r"recv|receive|irecv"),
    ("Reduce", r"reduce"),
    ("Gather", r"gather"),
    ("Scatter", r"scatter"),
]
_KIND_RES = [(k, re.compile(p, re.I)) for k, p in _KIND_PATTERNS]


def collective_kind(name: str) -> str:
    """Normalised collective kind from a kernel / op name; "Other" when none matches.

    ncclDevKernel_AllReduce_Sum_f32_RING_LL, ncclKernel_AllGather_..., c10d::allreduce_,
    gloo:all_reduce, nccl:all_reduce, hcom_allReduce_, hcom_reduceScatter_, SendRecv -> Send.
    """
    n = name
    if "deep_ep::" in n and re.search(r"dispatch|combine", n):  # DeepEP's expert-parallel exchange
        return "AllToAll"
    if "cross_device_reduce" in n:  # vLLM's custom all-reduce kernels
        return "AllReduce"
    if n.startswith("ncclDevKernel_") or n.startswith("ncclKernel_"):
        n = n.split("_", 1)[1]
    if re.search(r"sendrecv", n, re.I):
        return "Send"
    for k, rx in _KIND_RES:
        if rx.search(n):
            return k
    return "Other"


def ids_matching(table: EventTable, rx: re.Pattern) -> np.ndarray:
    """String ids whose text matches rx (a loop over distinct strings, not events)."""
    return np.array([i for i, s in enumerate(table.strings.values) if rx.search(s)], dtype=np.int32)


def id_mask(col: np.ndarray, ids, size: int) -> np.ndarray:
    """col in ids, for small non-negative id spaces (string ids, kinds), by a lookup table."""
    lut = np.zeros(max(int(size), 1) + 1, bool)
    ids = np.asarray(ids, dtype=np.int64)
    lut[ids[(ids >= 0) & (ids < size)]] = True
    c = col.astype(np.int64)
    c = np.where((c >= 0) & (c < size), c, size)
    return lut[c]


def name_mask(table: EventTable, rx: re.Pattern) -> np.ndarray:
    return id_mask(table.events["name"], ids_matching(table, rx), len(table.strings))


def kind_mask(table: EventTable, kinds) -> np.ndarray:
    lut = np.zeros(256, bool)
    lut[[int(k) for k in kinds]] = True
    return lut[table.events["kind"]]


def thread_keys(table: EventTable, rows: np.ndarray) -> np.ndarray:
    """One int per (pid, tid) of the given rows: an index into the unique pairs."""
    ev = table.events
    pairs = np.stack([ev["pid"][rows], ev["tid"][rows]], axis=1)
    if len(pairs) == 0:
        return np.zeros(0, np.int64)
    _, inv = group_rows(pairs)
    return inv


@dataclass
class Nesting:
    """Per-thread nesting of `rows` (indices into the table): parent and depth per row.

    parent[i] is a position in `rows` (NONE at a root), so rows[parent[i]] is the table row.
    """

    rows: np.ndarray
    parent: np.ndarray
    depth: np.ndarray


def nest(table: EventTable, rows: np.ndarray) -> Nesting:
    """Parents by interval containment on each thread, without a per-event Python loop.

    On each thread the rows are sorted by (start, longer first). The depth of event i is the
    number of earlier events still open at its start, i - #{j < i: end_j <= start_i}; its
    parent is the last earlier event of depth d-1, found by one searchsorted over
    (depth, position) keys. A parent that does not contain the child (records that overlap
    without nesting) is dropped, so such an event becomes a root.
    """
    rows = np.asarray(rows, dtype=np.int64)
    n_all = len(rows)
    parent = np.full(n_all, NONE, np.int64)
    depth = np.zeros(n_all, np.int64)
    if n_all == 0:
        return Nesting(rows, parent, depth)
    ev = table.events
    keys = thread_keys(table, rows)
    ts_all = ev["ts"][rows]
    dur_all = ev["dur"][rows]
    order_all = np.lexsort((-dur_all, ts_all, keys))
    bounds = np.flatnonzero(np.r_[True, keys[order_all][1:] != keys[order_all][:-1], True])
    dropped = False
    for a, b in zip(bounds[:-1], bounds[1:]):
        pos_in_rows = order_all[a:b]
        s = ts_all[pos_in_rows]
        d = dur_all[pos_in_rows]
        e = s + d
        n = len(s)
        i = np.arange(n, dtype=np.int64)
        ended = np.searchsorted(np.sort(e), s, side="right")
        # zero-length events at the same start sort last in their group: those at positions >= i
        # are counted by `ended` but are not earlier events
        zero = (d == 0).astype(np.int64)
        zc = np.r_[0, np.cumsum(zero)]
        chg = np.r_[True, s[1:] != s[:-1]]
        first = np.maximum.accumulate(np.where(chg, i, 0))
        chg_end = np.r_[s[1:] != s[:-1], True]
        last = np.minimum.accumulate(np.where(chg_end, i, n)[::-1])[::-1]
        z_t = zc[last + 1] - zc[first]
        k = np.minimum(z_t, last - i + 1)
        dep = i - (ended - k)
        dep = np.maximum(dep, 0)
        key = dep * (n + 1) + i
        dsmall = dep.astype(np.int16) if dep.max(initial=0) < 32000 else dep
        korder = np.argsort(dsmall, kind="stable")  # (depth, position) order: positions already ascend
        sk = key[korder]
        q = (dep - 1) * (n + 1) + i
        j = np.searchsorted(sk, q, side="left") - 1
        cand = np.where(j >= 0, korder[np.maximum(j, 0)], -1)
        ok = (dep > 0) & (cand >= 0)
        ok &= np.where(cand >= 0, dep[np.maximum(cand, 0)] == dep - 1, False)
        ok &= np.where(cand >= 0, e[np.maximum(cand, 0)] >= e, False)
        par_local = np.where(ok, cand, -1)
        parent[pos_in_rows] = np.where(par_local >= 0, pos_in_rows[np.maximum(par_local, 0)], NONE)
        depth[pos_in_rows] = dep
        if ((dep > 0) & (par_local < 0)).any():
            dropped = True
    if not dropped:
        return Nesting(rows, parent, depth)
    # recompute depth from the validated parents (dropped parents make roots)
    fixed = np.zeros(n_all, np.int64)
    cur = parent.copy()
    while True:
        has = cur >= 0
        if not has.any():
            break
        fixed += has
        cur = np.where(has, parent[np.maximum(cur, 0)], NONE)
    return Nesting(rows, parent, fixed)


def sum_up_tree(values: np.ndarray, nesting: Nesting) -> np.ndarray:
    """Inclusive sums: each node's value plus all its descendants' (loop over depth levels only)."""
    tot = values.astype(np.float64 if values.dtype.kind == "f" else np.int64).copy()
    if len(tot) == 0:
        return tot
    for d in range(int(nesting.depth.max()), 0, -1):
        sel = np.flatnonzero(nesting.depth == d)
        np.add.at(tot, nesting.parent[sel], tot[sel])
    return tot


def join_on(keys_from: np.ndarray, keys_to: np.ndarray) -> np.ndarray:
    """For each key in keys_from, a position in keys_to with the same key (NONE when absent/-1)."""
    out = np.full(len(keys_from), NONE, np.int64)
    if len(keys_to) == 0 or len(keys_from) == 0:
        return out
    order = np.argsort(keys_to, kind="stable")
    sk = keys_to[order]
    p = np.searchsorted(sk, keys_from)
    p_ok = np.minimum(p, len(sk) - 1)
    hit = (p < len(sk)) & (sk[p_ok] == keys_from) & (keys_from != NONE)
    out[hit] = order[p_ok[hit]]
    return out


def innermost_at(table: EventTable, nesting: Nesting, times: np.ndarray, thread_rows_mask=None) -> np.ndarray:
    """For each instant, the position (in nesting.rows) of the innermost event containing it on the
    busiest thread that has one; NONE when none contains it. Threads are tried busiest first."""
    times = np.asarray(times, np.int64)
    out = np.full(len(times), NONE, np.int64)
    rows = nesting.rows
    if len(rows) == 0 or len(times) == 0:
        return out
    ev = table.events
    keys = thread_keys(table, rows)
    counts = np.bincount(keys)
    for key in np.argsort(-counts, kind="stable"):
        todo = np.flatnonzero(out == NONE)
        if len(todo) == 0:
            break
        pos = np.flatnonzero(keys == key)
        s = ev["ts"][rows[pos]]
        order = np.argsort(s, kind="stable")
        pos, s = pos[order], s[order]
        e = s + ev["dur"][rows[pos]]
        t = times[todo]
        j = np.searchsorted(s, t, side="right") - 1
        cand = np.where(j >= 0, pos[np.maximum(j, 0)], NONE)
        # walk up the parents until the candidate contains t
        end_of = ev["ts"][rows] + ev["dur"][rows]
        for _ in range(int(nesting.depth.max()) + 2 if len(nesting.depth) else 1):
            bad = (cand != NONE) & (end_of[np.maximum(cand, 0)] < t)
            if not bad.any():
                break
            cand = np.where(bad, nesting.parent[np.maximum(cand, 0)], cand)
        out[todo] = cand
    return out


def group_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Like np.unique(keys, axis=0, return_inverse=True) for an (n, k) int array, but fast:
    one lexsort and a boundary scan. Returns (unique keys (g, k) in sorted order, inverse (n,))."""
    keys = np.asarray(keys)
    if keys.ndim == 1:
        keys = keys[:, None]
    n = len(keys)
    if n == 0:
        return keys[:0], np.zeros(0, np.int64)
    cols = [keys[:, j] for j in range(keys.shape[1])]
    # pack the columns into one int64 key when their ranges allow: one argsort instead of lexsort
    packed = np.zeros(n, np.int64)
    room = 1
    for c in cols:
        lo, hi = int(c.min()), int(c.max())
        span = hi - lo + 1
        if room > (2 ** 62) // max(span, 1):
            packed = None
            break
        packed = packed * span + (c.astype(np.int64) - lo)
        room *= span
    order = np.argsort(packed, kind="stable") if packed is not None else np.lexsort(cols[::-1])
    change = np.zeros(n, bool)
    change[0] = True
    for c in cols:
        cs = c[order]
        change[1:] |= cs[1:] != cs[:-1]
    gid = np.cumsum(change) - 1
    inv = np.empty(n, np.int64)
    inv[order] = gid
    return keys[order[change]], inv
