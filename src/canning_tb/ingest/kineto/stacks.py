"""Call stacks of host ops from `python_function` events (torch >= 1.10 writes no "Call stack" arg).

Python frames nest on their thread: one time-ordered sweep over the frames gives each frame its
parent and its stack string ("file(line): func;..." innermost first, like the 2021 "Call stack"
arg, built once per distinct call path); ops then find their innermost enclosing frame with
array operations only, as there are usually more ops than frames.
"""
from __future__ import annotations

import numpy as np

from ..table import NONE, EventTable, Kind


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
    rows = rows[np.lexsort((-ev["dur"][rows], ops[rows], ev["ts"][rows], ev["tid"][rows], ev["pid"][rows]))]
    pid, tid = ev["pid"][rows], ev["tid"][rows]
    thread = np.concatenate([[0], np.cumsum((pid[1:] != pid[:-1]) | (tid[1:] != tid[:-1]))])
    start = ev["ts"][rows]
    end = start + ev["dur"][rows]
    is_frame = py[rows]
    fpos = np.nonzero(is_frame)[0]  # positions of frames in `rows`
    parent, sid = _sweep(table, rows[fpos], thread[fpos], start[fpos], end[fpos])
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


def _sweep(table: EventTable, frows, thread, start, end) -> tuple[np.ndarray, np.ndarray]:
    """Parent frame (index into frows, -1 at the top) and stack string id of every frame."""
    strings = table.strings
    names = strings.values
    name_ids = table.events["name"][frows]
    skip = np.array([s.startswith("<built-in") for s in names] + [False])[name_ids]  # C calls: not shown
    paths: dict[tuple[int, int], int] = {}
    parent = np.full(len(frows), -1, np.int64)
    sid = np.full(len(frows), NONE, np.int32)
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
