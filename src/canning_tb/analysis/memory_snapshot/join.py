"""The snapshot's clock tied to the window's, or not at all.

The allocator stamps each trace entry with `time_us`, the wall clock in µs. A window's events are on the trace's
clock, which Kineto ties to the wall clock by `baseTimeNanoseconds` (ingest/step_marks.py): an entry is then at
time_us * 1000 - base on the trace's clock. The join is made only when every entry has a time, the trace gives its
base, and the two overlap; otherwise it is "not joined" with the reason, and nothing is placed by a guess.
"""
from __future__ import annotations

import numpy as np

from canning_tb.ingest.snapshot.model import Snapshot
from canning_tb.ingest.table import EventTable, Kind

from .replay import Replay


def clock_offset(s: Snapshot, r: Replay, base_ns: int | None, window: tuple[int, int] | None) -> tuple[int | None, str]:
    """(offset in ns to subtract from time_us * 1000, "") when the clocks can be tied, else (None, why not)."""
    if not r.n:
        return None, "not joined: the snapshot has no history"
    times = s.tr_time_us[r.rows]
    if not (times >= 0).all():
        return None, "not joined: the snapshot's entries carry no times"
    if base_ns is None:
        return None, "not joined: the window's trace does not give its wall clock (baseTimeNanoseconds)"
    if window is not None:
        lo, hi = int(times.min()) * 1000 - base_ns, int(times.max()) * 1000 - base_ns
        if hi < window[0] or lo > window[1]:
            return None, "not joined: the snapshot's history does not overlap the window in time"
    return base_ns, ""


def operators_at(s: Snapshot, r: Replay, table: EventTable, offset_ns: int, positions: np.ndarray) -> list[str]:
    """The innermost host operator (aten / torch_npu op) running at each entry of `positions`, "" where none."""
    ev = table.events
    ops = np.nonzero(ev["kind"] == int(Kind.CPU_OP))[0]
    if not len(ops) or not len(positions):
        return [""] * len(positions)
    starts, ends = ev["ts"][ops], ev["ts"][ops] + ev["dur"][ops]
    order = np.argsort(starts, kind="stable")
    ops, starts, ends = ops[order], starts[order], ends[order]
    t = s.tr_time_us[r.rows[positions]] * 1000 - offset_ns
    out = []
    for when in t.tolist():
        k = int(np.searchsorted(starts, when, side="right"))
        lo = max(0, k - 512)  # the innermost open operator started last; nesting is shallow
        cands = np.nonzero(ends[lo:k] >= when)[0]
        out.append(table.name(int(ops[lo + cands[-1]])) or "" if len(cands) else "")
    return out
