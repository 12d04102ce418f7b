"""Shared pieces of the analysis: event selection, collective names, per-thread nesting."""
from __future__ import annotations

import os
import re
import weakref
from dataclasses import dataclass

import numpy as np

from canning_tb.util.arrays import ranks

try:  # built by pip from ingest/native/tree.c where a C compiler is found (setup.py: optional)
    from canning_tb.ingest.native import _tree as _compiled_tree
except ImportError:  # pragma: no cover - numpy's sorts then give the same nesting
    _compiled_tree = None

from canning_tb.ingest.table import EP_EXCHANGE_RE, NONE, EventTable, Kind

DEVICE_KINDS = (Kind.KERNEL, Kind.COMM_KERNEL, Kind.MEMCPY, Kind.MEMSET)
HOST_OP_KINDS = (Kind.CPU_OP, Kind.USER_ANNOTATION)

# 18 digits at most: a step number is an int64 (Step.number); a longer one names no step (an ordinary range)
STEP_RE = re.compile(r"^ProfilerStep#(\d{1,18})$")
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
    if EP_EXCHANGE_RE.search(n):  # expert-parallel token exchange (DeepEP dispatch / combine ...)
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
    """Ids of the event names whose text matches rx (a loop over distinct names, not events, and
    never over the other strings: a trace recorded with_stack interns a call stack of kilobytes for
    every Python frame, and scanning those was 98 % of a digest's time). Remembered per strings table
    and pattern, since several sections ask for the same: do not modify the result."""
    found = _IDS_MATCHING.setdefault(table.strings, {})
    key = (rx.pattern, rx.flags, len(table.strings))  # a table whose strings grew is looked at again
    if key not in found:
        values = table.strings.values
        ids = np.array([i for i in _name_ids(table, found).tolist() if rx.search(values[i])], dtype=np.int32)
        ids.flags.writeable = False
        found[key] = ids
    return found[key]


def _name_ids(table: EventTable, found: dict) -> np.ndarray:
    """The distinct string ids of the events' names, ascending (remembered beside the patterns)."""
    names = table.events["name"]
    key = ("names", len(table.strings), id(names), len(names))
    if key not in found:
        size = len(table.strings)
        used = np.zeros(size, bool)
        used[names[(names >= 0) & (names < size)]] = True
        found[key] = np.flatnonzero(used)
    return found[key]


_IDS_MATCHING: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Strings -> {pattern: ids}


def id_mask(col: np.ndarray, ids, size: int) -> np.ndarray:
    """col in ids, for small non-negative id spaces (string ids, kinds), by a lookup table."""
    ids = np.asarray(ids, dtype=np.int64)
    if len(ids) == 0 or len(col) == 0:
        return np.zeros(len(col), bool)
    lut = np.zeros(max(int(size), 1) + 1, bool)  # the last entry stays False: NONE (-1) reads it
    lut[ids[(ids >= 0) & (ids < size)]] = True
    if int(col.min()) < NONE or int(col.max()) >= size:
        col = np.where((col >= 0) & (col < size), col, size)
    return lut[col]


def name_mask(table: EventTable, rx: re.Pattern) -> np.ndarray:
    return id_mask(table.events["name"], ids_matching(table, rx), len(table.strings))


def kind_mask(table: EventTable, kinds) -> np.ndarray:
    lut = np.zeros(256, bool)
    lut[[int(k) for k in kinds]] = True
    return lut[table.events["kind"]]


def thread_keys(table: EventTable, rows: np.ndarray) -> np.ndarray:
    """One int per (pid, tid) of the given rows: the rank of its pair among the rows' distinct pairs."""
    ev = table.events
    pid, tid = ev["pid"][rows], ev["tid"][rows]
    packed = _packed([pid, tid]) if len(rows) else None
    if packed is None:
        return group_rows(np.stack([pid, tid], axis=1))[1]
    return dense_codes(packed)[0]


def dense_codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    """(rank of each value among the distinct values, number of distinct values): np.unique's
    inverse without sorting the values (arrays.ranks)."""
    uniq, rank = ranks(np.asarray(values, np.int64))
    return rank, len(uniq)


@dataclass
class Nesting:
    """Per-thread nesting of `rows` (indices into the table): parent and depth per row.

    parent[i] is a position in `rows` (NONE at a root), so rows[parent[i]] is the table row.
    """

    rows: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    threads: np.ndarray | None = None  # per row: its thread's key (thread_keys), as nest() made it


def nest(table: EventTable, rows: np.ndarray) -> Nesting:
    """Parents by interval containment on each thread, without a per-event Python loop.

    On each thread the rows are sorted by (start, longer first). The depth of event i is the
    number of earlier events still open at its start, i - #{j < i: end_j <= start_i}; its
    parent is the last earlier event of depth d-1, found by one searchsorted over
    (depth, position) keys. A parent that does not contain the child (records that overlap
    without nesting) is dropped, so such an event becomes a root. All threads are handled at
    once: each thread's times are moved into a range of their own (`_thread_times`).
    """
    rows = np.asarray(rows, dtype=np.int64)
    parent = np.full(len(rows), NONE, np.int64)
    depth = np.zeros(len(rows), np.int64)
    if len(rows) == 0:
        return Nesting(rows, parent, depth, np.zeros(0, np.int64))
    ev = table.events
    keys = thread_keys(table, rows)
    start, end = _thread_times(keys, ev["ts"][rows], ev["dur"][rows])
    order = _start_order(start, end)
    sorted_depth, local_parent = _nest_sorted(start[order], end[order])
    parent[order] = np.where(local_parent >= 0, order[np.maximum(local_parent, 0)], NONE)
    depth[order] = sorted_depth
    if not ((sorted_depth > 0) & (local_parent < 0)).any():
        return Nesting(rows, parent, depth, keys)
    return Nesting(rows, parent, _depth_from_parents(parent), keys)


def _thread_times(keys: np.ndarray, ts: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) moved so that thread k's times lie in a range of their own, below thread k+1's:
    order and equality within a thread are kept, and no event of one thread compares with another's
    as earlier-and-open or as a container. Times ranked first when the shifted values would overflow."""
    start = ts.astype(np.int64)
    end = start + dur
    base = min(int(start.min()), int(end.min()))
    span = max(int(start.max()), int(end.max())) - base + 1
    threads = int(keys.max()) + 1
    if threads * span >= 2 ** 62:
        ranks, span = dense_codes(np.concatenate([start, end]))
        start, end, base = ranks[: len(ts)], ranks[len(ts):], 0
    offset = keys.astype(np.int64) * span
    return (start - base) + offset, (end - base) + offset


def _start_order(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Positions by (start, longer first), ties in position order (np.lexsort((-dur, start)));
    rows come nearly sorted by start, so a stable sort by start and one by (start group, length)
    of the nearly sorted result are cheap."""
    by_start = np.argsort(start, kind="stable")
    first = start[by_start]
    group = np.cumsum(np.r_[True, first[1:] != first[:-1]])
    length = (end - start)[by_start]
    longest, spread = int(length.max()), int(length.max()) - int(length.min())
    if int(group[-1]) * (spread + 1) + spread < 2 ** 62:
        return by_start[np.argsort(group * (spread + 1) + (longest - length), kind="stable")]
    return by_start[np.lexsort((-length, group))]


def _open_depth(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Depth of each event sorted by (start, longer first): how many earlier events are still
    open at its start."""
    count = len(start)
    pos = np.arange(count, dtype=np.int64)
    ended = _count_at_or_below(end, start)
    zero = end == start
    if not zero.any():
        return np.maximum(pos - ended, 0)
    # zero-length events at the same start sort last in their group: those at positions >= pos
    # are counted by `ended` but are not earlier events
    zeros_before = np.r_[0, np.cumsum(zero, dtype=np.int64)]
    new_start = np.r_[True, start[1:] != start[:-1]]
    first_same = np.maximum.accumulate(np.where(new_start, pos, 0))
    last_start = np.r_[start[1:] != start[:-1], True]
    last_same = np.minimum.accumulate(np.where(last_start, pos, count)[::-1])[::-1]
    zeros_same = zeros_before[last_same + 1] - zeros_before[first_same]
    not_earlier = np.minimum(zeros_same, last_same - pos + 1)
    return np.maximum(pos - (ended - not_earlier), 0)


def _count_at_or_below(values: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """For each of the sorted `queries`: how many `values` are <= it (searchsorted(sort(values),
    queries, 'right')), by one stable merge: values first, so a tie counts as below."""
    merged = np.argsort(np.concatenate([values, queries]), kind="stable")
    is_value = merged < len(values)
    return np.cumsum(is_value)[~is_value]


def _count_below(values: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """searchsorted(values, queries, 'left') for sorted values and sorted queries, by one stable
    merge (two sorted runs): queries first, so a tie does not count as below."""
    merged = np.argsort(np.concatenate([queries, values]), kind="stable")
    is_value = merged >= len(queries)
    return np.cumsum(is_value)[~is_value]


def nest_compiled() -> bool:
    """ingest/native/tree.c is built and not turned off (CANNING_NEST_SWEEP=0: nest and sum_up_tree by numpy; the
    equality tests compare both)."""
    return _compiled_tree is not None and os.environ.get("CANNING_NEST_SWEEP", "1") != "0"


def _nest_sorted(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(depth, parent position or -1) of events sorted by (start, longer first)."""
    if nest_compiled():  # one pass with a heap of the open events' ends
        start, end = np.ascontiguousarray(start, np.int64), np.ascontiguousarray(end, np.int64)
        depth, parent = np.empty(len(start), np.int64), np.empty(len(start), np.int64)
        _compiled_tree.nest_sorted(start, end, depth, parent)
        return depth, parent
    count = len(start)
    dep = _open_depth(start, end)
    small = dep.astype(np.int16) if dep.max(initial=0) < 32000 else dep
    by_depth = np.argsort(small, kind="stable")  # (depth, position) order: positions already ascend
    depth = dep[by_depth]
    key = depth * (count + 1) + by_depth  # ascending
    # the last earlier event one level up: the key just below (depth - 1, position)
    below = _count_below(key, key - (count + 1)) - 1
    cand = np.where(below >= 0, by_depth[np.maximum(below, 0)], -1)
    safe = np.maximum(cand, 0)
    ok = (depth > 0) & (cand >= 0) & (dep[safe] == depth - 1) & (end[safe] >= end[by_depth])
    parent = np.empty(count, np.int64)
    parent[by_depth] = np.where(ok, cand, -1)
    return dep, parent


def _depth_from_parents(parent: np.ndarray) -> np.ndarray:
    """Depth recounted along validated parents (a dropped parent makes a root)."""
    depth = np.zeros(len(parent), np.int64)
    cur = parent.copy()
    while True:
        has = cur >= 0
        if not has.any():
            return depth
        depth += has
        cur = np.where(has, parent[np.maximum(cur, 0)], NONE)


def sum_up_tree(values: np.ndarray, nesting: Nesting) -> np.ndarray:
    """Inclusive sums: each node's value plus all its descendants' (loop over depth levels only).
    `values` may hold several columns (n, k): each is summed up alike."""
    tot = values.astype(np.float64 if values.dtype.kind == "f" else np.int64)
    if len(tot) == 0:
        return tot
    deepest = int(nesting.depth.max())
    small = nesting.depth.astype(np.int16) if deepest < 32000 else nesting.depth
    by_depth = np.argsort(small, kind="stable")  # each level's nodes in position order
    bounds = np.searchsorted(nesting.depth[by_depth], np.arange(deepest + 2))
    # one contiguous column at a time: np.add.at is fast on 1-D operands only (on (n, k) rows it
    # takes its slow general path, 5 ms of a 300 MB trace's memory section)
    columns = [tot] if tot.ndim == 1 else [np.ascontiguousarray(tot[:, j]) for j in range(tot.shape[1])]
    if nest_compiled():  # one C loop over the levels, the same additions in the same order
        parent, by_depth, bounds = (np.ascontiguousarray(a, np.int64) for a in (nesting.parent, by_depth, bounds))
        for column in columns:
            _compiled_tree.sum_up(column, parent, by_depth, bounds, "d" if column.dtype.kind == "f" else "q")
    else:
        for column in columns:
            for level in range(deepest, 0, -1):
                sel = by_depth[bounds[level]:bounds[level + 1]]
                np.add.at(column, nesting.parent[sel], column[sel])
    return tot if tot.ndim == 1 else np.stack(columns, axis=1)


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


def innermost_at(table: EventTable, nesting: Nesting, times: np.ndarray) -> np.ndarray:
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
    end_of = ev["ts"][rows] + ev["dur"][rows]
    steps = int(nesting.depth.max()) + 2
    for key in np.argsort(-counts, kind="stable"):
        todo = np.flatnonzero(out == NONE)
        if len(todo) == 0:
            break
        pos = np.flatnonzero(keys == key)
        s = ev["ts"][rows[pos]]
        order = np.argsort(s, kind="stable")
        pos, s = pos[order], s[order]
        t = times[todo]
        j = np.searchsorted(s, t, side="right") - 1
        cand = np.where(j >= 0, pos[np.maximum(j, 0)], NONE)
        # walk up the parents until the candidate contains t (only the instants still outside theirs)
        bad = np.flatnonzero((cand != NONE) & (end_of[np.maximum(cand, 0)] < t))
        for _ in range(steps):
            if not len(bad):
                break
            cand[bad] = nesting.parent[cand[bad]]
            up = cand[bad]
            bad = bad[(up != NONE) & (end_of[np.maximum(up, 0)] < t[bad])]
        out[todo] = cand
    return out


def group_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Like np.unique(keys, axis=0, return_inverse=True) for an (n, k) int array, but fast:
    the columns packed into one int64 and ranked (dense_codes), or one lexsort and a boundary scan
    when they do not pack. Returns (unique keys (g, k) in sorted order, inverse (n,))."""
    keys = np.asarray(keys)
    if keys.ndim == 1:
        keys = keys[:, None]
    n = len(keys)
    if n == 0:
        return keys[:0], np.zeros(0, np.int64)
    cols = [keys[:, j] for j in range(keys.shape[1])]
    packed = _packed(cols)
    if packed is not None:
        inv, count = dense_codes(packed)
        sample = np.empty(count, np.int64)
        sample[inv] = np.arange(n)  # any row of each group: they hold the same keys
        return keys[sample], inv
    order = np.lexsort(cols[::-1])
    change = np.zeros(n, bool)
    change[0] = True
    for c in cols:
        cs = c[order]
        change[1:] |= cs[1:] != cs[:-1]
    gid = np.cumsum(change) - 1
    inv = np.empty(n, np.int64)
    inv[order] = gid
    return keys[order[change]], inv


def _packed(cols: list[np.ndarray]) -> np.ndarray | None:
    """The columns as one int64 that sorts like them (column 0 first), or None when their ranges
    do not fit in one."""
    packed = np.zeros(len(cols[0]), np.int64)
    room = 1
    for c in cols:
        lo, hi = int(c.min()), int(c.max())
        span = hi - lo + 1
        if room > (2 ** 62) // max(span, 1):
            return None
        packed = packed * span + (c.astype(np.int64) - lo)
        room *= span
    return packed
