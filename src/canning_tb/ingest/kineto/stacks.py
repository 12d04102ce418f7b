"""Call stacks of host ops from `python_function` events (torch >= 1.10 writes no "Call stack" arg).

Python frames nest on their thread: one time-ordered sweep over the frames gives each frame its
parent and its stack string ("file(line): func;..." innermost first, like the 2021 "Call stack"
arg, built once per distinct call path). Where native/kineto_sweep.c is built the ops ride in the same sweep (each
takes its innermost open frame's path); else a Python loop sweeps the frames and the ops find their
innermost enclosing frame with array operations.
"""
from __future__ import annotations

import os

import numpy as np

from canning_tb.ingest.table import NONE, EventTable, Kind
from canning_tb.util.arrays import pair_codes

try:  # built by pip from native/kineto_sweep.c where a C compiler is found (setup.py: optional)
    from canning_tb.ingest.native import _kineto_sweep as _compiled
except ImportError:  # pragma: no cover - the Python loop then sweeps
    _compiled = None


def compiled() -> bool:
    """The C sweep is built and not turned off (CANNING_STACK_SWEEP=0: the equality tests compare both)."""
    return _compiled is not None and os.environ.get("CANNING_STACK_SWEEP", "1") != "0"


def fill_python_stacks(table: EventTable) -> None:
    """Fill the empty `stack` of host ops and annotations from their enclosing python frames."""
    ev = table.events
    kind = ev["kind"]
    py = kind == Kind.PYTHON_FUNCTION
    ops = ((kind == Kind.CPU_OP) | (kind == Kind.USER_ANNOTATION)) & (ev["stack"] == NONE)
    if not py.any() or not ops.any():
        return
    rows = np.nonzero(py | ops)[0]
    # per thread, time order; at equal ts a frame before an op and an outer frame before an inner one
    rows = rows[sweep_order(ev["pid"][rows], ev["tid"][rows], ev["ts"][rows], ops[rows], ev["dur"][rows])]
    pid, tid = ev["pid"][rows], ev["tid"][rows]
    thread = np.concatenate([[0], np.cumsum((pid[1:] != pid[:-1]) | (tid[1:] != tid[:-1]))])
    start = ev["ts"][rows]
    end = start + ev["dur"][rows]
    is_frame = py[rows]
    names = table.strings.values
    name_ids = ev["name"][rows]
    skip = np.array([s.startswith("<built-in") for s in names] + [False])[name_ids]  # C calls: not shown
    if compiled():  # frames and ops in one pass in C: an op takes its innermost open frame's path
        _, sid = _sweep_compiled(table, thread, start, end, name_ids, skip, is_frame)
        ev["stack"][rows[~is_frame]] = sid[~is_frame]
        return
    fpos = np.nonzero(is_frame)[0]  # positions of frames in `rows`
    parent, sid = _sweep_python(table, thread[fpos], start[fpos], end[fpos], name_ids[fpos], skip[fpos])
    # each op: the last frame at or before it, then up the parents until one still runs
    last = np.where(is_frame, np.cumsum(is_frame) - 1, -1)
    last = np.maximum.accumulate(last)
    opos = np.nonzero(~is_frame)[0]
    frame = last[opos]
    t_op, th_op = start[opos], thread[opos]
    frame[(frame >= 0) & (thread[fpos][np.maximum(frame, 0)] != th_op)] = -1
    fend = end[fpos]
    while True:
        up = (frame >= 0) & (fend[np.maximum(frame, 0)] < t_op)
        if not up.any():
            break
        frame[up] = parent[frame[up]]
    found = frame >= 0
    stack = np.full(len(opos), NONE, np.int32)
    stack[found] = sid[frame[found]]
    ev["stack"][rows[opos]] = stack


def sweep_order(pid: np.ndarray, tid: np.ndarray, ts: np.ndarray, is_op: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """np.lexsort((-dur, is_op, ts, tid, pid)) without its five passes (0.6 s over 2M rows) where the rows come
    in time order, as the table's do: only runs of equal ts are sorted by (is_op, -dur), then the rows by
    thread, a stable counting sort of a small code of (pid, tid) that keeps their order (arrays.pair_codes)."""
    n = len(ts)
    same = ts[1:] == ts[:-1]
    if n > 1 and not (ts[1:] >= ts[:-1]).all():
        return np.lexsort((-dur, is_op, ts, tid, pid))
    order = np.arange(n)
    if same.any():
        tied = np.flatnonzero(np.r_[same, False] | np.r_[False, same])  # rows of a run of equal ts
        run = np.cumsum(np.r_[True, ~same])[tied]
        order[tied] = tied[np.lexsort((-dur[tied], is_op[tied], run))]  # each run keeps its own slots
    thread = pair_codes(pid, tid)[2]
    small = thread.astype(np.int16) if thread.max(initial=0) < 1 << 15 else thread  # int16: numpy's radix sort
    return order[np.argsort(small[order], kind="stable")]


def _sweep_compiled(table: EventTable, thread, start, end, name_ids, skip, is_frame) -> tuple[np.ndarray, np.ndarray]:
    """kineto_sweep.c's parents and stack string ids of every row; each distinct path's text made here, in order of
    first sight (so the strings get the ids the Python loop gives them)."""
    got = _compiled.sweep(*(np.ascontiguousarray(a, t) for a, t in
                            ((thread, np.int64), (start, np.int64), (end, np.int64), (name_ids, np.int32),
                             (skip, np.uint8), (is_frame, np.uint8))))
    parent, path, pairs = (np.frombuffer(b, np.int64) for b in got)
    strings = table.strings
    names = strings.values
    sid_of = np.empty(len(pairs) // 2 + 1, np.int32)
    sid_of[-1] = NONE  # path -1: none
    for k, (nm, up) in enumerate(pairs.reshape(-1, 2).tolist()):
        sid_of[k] = strings.id(names[nm] if up < 0 else f"{names[nm]};{names[sid_of[up]]}")
    return parent, sid_of[path]  # (parent: read-only)


def _sweep_python(table: EventTable, thread, start, end, name_ids, skip) -> tuple[np.ndarray, np.ndarray]:
    """Parent frame (index into the frames, -1 at the top) and stack string id of every frame, a Python step
    per frame (where kineto_sweep.c is not built; the ops then walk up the parents with numpy)."""
    strings = table.strings
    names = strings.values
    paths: dict[tuple[int, int], int] = {}
    parent = np.full(len(name_ids), -1, np.int64)
    sid = np.full(len(name_ids), NONE, np.int32)
    open_: list[tuple[int, int, int]] = []  # (end, index, stack id) of the enclosing frames
    last_thread = -1
    for i, (th, begin, finish, nm, hidden) in enumerate(zip(thread.tolist(), start.tolist(), end.tolist(),
                                                            name_ids.tolist(), skip.tolist())):
        if th != last_thread:
            open_, last_thread = [], th
        while open_ and open_[-1][0] < begin:
            open_.pop()
        up_sid = NONE
        if open_:
            parent[i] = open_[-1][1]
            up_sid = open_[-1][2]
        stack_id = up_sid
        if not hidden:
            stack_id = paths.get((nm, up_sid))
            if stack_id is None:
                text = names[nm] if up_sid == NONE else f"{names[nm]};{names[up_sid]}"
                stack_id = paths[(nm, up_sid)] = strings.id(text)
        sid[i] = stack_id
        open_.append((finish, i, stack_id))
    return parent, sid
