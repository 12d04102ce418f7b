"""The timeline's index of one window: every event on a track (one per pid/tid, which is a host
thread or a device stream / NPU plane) at a nesting depth, rows (track, depth) stored contiguously
and ordered by start, so a time range of a row is two binary searches.

Depth follows the stack rule every trace viewer uses: an event sits one level below the events of
its track that are still open when it starts. Events of one row never overlap, so both their starts
and their ends are sorted, which is what makes a range query a pair of `searchsorted` calls.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from canning_tb.ingest.table import NONE, EventTable, Kind


@lru_cache(maxsize=1)
def index_version() -> str:
    """Identity of the code that builds the index: an index cached by other code is rebuilt."""
    with open(__file__, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()[:12]


@dataclass
class TimelineIndex:
    track_pid: np.ndarray  # per track
    track_tid: np.ndarray
    track_device: np.ndarray  # device index of the track's events, NONE for host threads
    track_python: np.ndarray  # the track holds a thread's python_function events
    track_of: np.ndarray  # per event: its track
    depth: np.ndarray  # per event: its nesting depth
    order: np.ndarray  # event rows ordered by (track, depth, ts)
    row_track: np.ndarray  # per row (track, depth)
    row_depth: np.ndarray
    row_offsets: np.ndarray  # row r holds order[row_offsets[r]:row_offsets[r + 1]]
    sorted_ts: np.ndarray  # ts[order]
    sorted_end: np.ndarray  # (ts + dur)[order]

    def rows_of(self, track: int) -> np.ndarray:
        return np.flatnonzero(self.row_track == track)

    def row_slice(self, row: int) -> slice:
        return slice(int(self.row_offsets[row]), int(self.row_offsets[row + 1]))

    def save(self, path: str) -> None:
        tmp = f"{path}.tmp{os.getpid()}.npz"
        np.savez(tmp, version=np.array(index_version()), **self.__dict__)
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str) -> "TimelineIndex":
        with np.load(path) as z:
            if str(z["version"]) != index_version():
                raise ValueError(f"{path}: built by other code ({z['version']})")
            return cls(**{name: z[name] for name in cls.__dataclass_fields__})


def _tracks(table: EventTable) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(pid, tid, device, python) per track, host threads first, and each event's track.

    A thread's python_function events get a track of their own: the Python tracer's frames nest
    among themselves, and the profiler's operators and record_function ranges among themselves, but
    not with each other (a ProfilerStep range starts inside one `step()` call and ends inside the
    next), and one track for both would stair-step deeper at every step."""
    ev = table.events
    is_device = (ev["device"] != NONE).astype(np.int64)
    is_python = (ev["kind"] == int(Kind.PYTHON_FUNCTION)).astype(np.int64)
    keys = np.stack([is_device, ev["pid"], ev["tid"], is_python], axis=1)
    uniq, track_of = np.unique(keys, axis=0, return_inverse=True)
    track_of = track_of.reshape(-1).astype(np.int32)
    device = np.full(len(uniq), NONE, np.int32)
    if len(ev["device"]):
        device[track_of] = ev["device"]
    return uniq[:, 1], uniq[:, 2], device, uniq[:, 3].astype(bool), track_of


def stack_depths(ts: np.ndarray, end: np.ndarray, track_of: np.ndarray) -> np.ndarray:
    """Depth of every event within its track by the stack rule (events visited by track, start,
    longest first)."""
    order = np.lexsort((-(end - ts), ts, track_of))
    depth = np.zeros(len(ts), np.int32)
    stack_ends: list[int] = []
    current = -1
    for row, track, start, stop in zip(order.tolist(), track_of[order].tolist(), ts[order].tolist(),
                                       end[order].tolist()):
        if track != current:
            stack_ends, current = [], track
        while stack_ends and stack_ends[-1] <= start:
            stack_ends.pop()
        # an open event below may have ended already (partial overlap): going above every event
        # still on the stack keeps each row's events disjoint
        depth[row] = len(stack_ends)
        stack_ends.append(stop)
    return depth


def build_index(table: EventTable) -> TimelineIndex:
    ev = table.events
    ts = ev["ts"]
    end = ts + ev["dur"]
    pid, tid, device, python, track_of = _tracks(table)
    depth = stack_depths(ts, end, track_of)
    order = np.lexsort((end, ts, depth, track_of)).astype(np.int64)
    pairs = np.stack([track_of[order], depth[order]], axis=1) if len(order) else np.zeros((0, 2), np.int64)
    change = np.ones(len(order), bool)
    if len(order) > 1:
        change[1:] = np.any(pairs[1:] != pairs[:-1], axis=1)
    starts = np.flatnonzero(change)
    return TimelineIndex(
        track_pid=pid.astype(np.int64), track_tid=tid.astype(np.int64), track_device=device, track_python=python,
        track_of=track_of, depth=depth, order=order,
        row_track=pairs[starts, 0].astype(np.int32), row_depth=pairs[starts, 1].astype(np.int32),
        row_offsets=np.append(starts, len(order)).astype(np.int64),
        sorted_ts=ts[order], sorted_end=end[order])
