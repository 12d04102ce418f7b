"""The timeline's index of one window: every event on a track (one per pid/tid, which is a host
thread or a device stream / NPU plane) at a nesting depth, rows (track, depth) stored contiguously
and ordered by start, so a time range of a row is two binary searches.

Depth follows the stack rule every trace viewer uses: an event sits one level below the events of
its track that are still open when it starts. Events of one row never overlap, so both their starts
and their ends are sorted, which is what makes a range query a pair of `searchsorted` calls.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from canning_tb.ingest.table import NONE, EventTable, Kind
from canning_tb.util import safe_files
from canning_tb.util.arrays import distinct

INDEX_SUFFIX = ".timeline.npz"  # beside the window's cached events: <events prefix>.timeline.npz


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
        # safe_files: never through a link where the cache folder sits inside a logdir (.canning)
        safe_files.atomic_write(path, write=lambda f: np.savez(f, version=np.array(index_version()), **self.__dict__))

    @classmethod
    def load(cls, path: str) -> "TimelineIndex":
        with safe_files.open_file(path) as f, np.load(f) as z:  # a regular file, inside the logdir if there
            if str(z["version"]) != index_version():
                raise ValueError(f"{path}: built by other code ({z['version']})")
            return cls(**{name: z[name] for name in cls.__dataclass_fields__})


def _codes(column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, each row's index among them)."""
    values, codes = np.unique(column, return_inverse=True)
    return values, codes.reshape(-1).astype(np.int64)


def _tracks(table: EventTable) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(pid, tid, device, python) per track, host threads first, and each event's track.

    A thread's python_function events get a track of their own: the Python tracer's frames nest
    among themselves, and the profiler's operators and record_function ranges among themselves, but
    not with each other (a ProfilerStep range starts inside one `step()` call and ends inside the
    next), and one track for both would stair-step deeper at every step."""
    ev = table.events
    is_device = (ev["device"] != NONE).astype(np.int64)
    is_python = (ev["kind"] == int(Kind.PYTHON_FUNCTION)).astype(np.int64)
    pids, pid_code = _codes(ev["pid"])
    tids, tid_code = _codes(ev["tid"])
    # one int64 key per event, ordered as (is_device, pid, tid, is_python) are: codes keep the order
    key = ((is_device * len(pids) + pid_code) * len(tids) + tid_code) * 2 + is_python
    keys, track_of = _codes(key)
    device = np.full(len(keys), NONE, np.int32)
    if len(ev["device"]):
        device[track_of] = ev["device"]
    return (pids[keys // 2 // len(tids) % max(1, len(pids))] if len(keys) else np.zeros(0, np.int64),
            tids[keys // 2 % max(1, len(tids))] if len(keys) else np.zeros(0, np.int64),
            device, (keys % 2).astype(bool), track_of.astype(np.int32))


def _stack_loop(ts: list, end: list, rows: list, depth: np.ndarray) -> None:
    """The stack rule over one track's events (in visiting order), written into `depth`."""
    stack_ends: list[int] = []
    for row, start, stop in zip(rows, ts, end):
        while stack_ends and stack_ends[-1] <= start:
            stack_ends.pop()
        # an open event below may have ended already (partial overlap): going above every event
        # still on the stack keeps each row's events disjoint
        depth[row] = len(stack_ends)
        stack_ends.append(stop)


def _nested_depths(ts: np.ndarray, end: np.ndarray, track_of: np.ndarray, order: np.ndarray) -> np.ndarray | None:
    """Depth where a track's events nest properly: the events of the track before it in visiting
    order, less those that ended by its start (no loop in Python). None when the (track, time) keys
    would not fit an int64."""
    if len(order) == 0:
        return np.zeros(0, np.int32)
    base = int(min(ts.min(), end.min()))
    span = int(max(ts.max(), end.max())) - base + 1
    if (int(track_of.max()) + 1) * span >= 2**62:
        return None
    tracks = track_of[order].astype(np.int64)
    first = np.flatnonzero(np.append(True, tracks[1:] != tracks[:-1]))
    track_start = np.repeat(first, np.diff(np.append(first, len(order))))
    # one sorted key per (track, end): how many of the track's events ended by each start
    ends = np.sort(tracks * span + (end[order] - base))
    starts = tracks * span + (ts[order] - base)
    ended = np.searchsorted(ends, starts, side="right") - track_start
    # zero-length events at its start that are not before it in visiting order (itself, those after
    # it) have "ended" by its start but were never on its stack
    zero = (end[order] == ts[order]).astype(np.int64)
    first_of_start = np.append(True, starts[1:] != starts[:-1])
    same = np.cumsum(first_of_start) - 1
    before = np.cumsum(zero) - zero  # zero-length events before each position
    zero_before = before - before[first_of_start][same]
    ended -= np.bincount(same, weights=zero).astype(np.int64)[same] - zero_before
    depth = np.empty(len(order), np.int32)
    depth[order] = np.arange(len(order)) - track_start - ended
    return depth


def _bad_tracks(ts: np.ndarray, end: np.ndarray, track_of: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """Tracks where the depths above leave two events of one row overlapping (partial overlaps)."""
    if len(ts) == 0:
        return np.zeros(0, np.int64)
    order = np.lexsort((ts, depth, track_of))
    same_row = (track_of[order][1:] == track_of[order][:-1]) & (depth[order][1:] == depth[order][:-1])
    overlap = same_row & (ts[order][1:] < end[order][:-1])
    return distinct(np.concatenate([track_of[order][1:][overlap], track_of[depth < 0]]))


def stack_depths(ts: np.ndarray, end: np.ndarray, track_of: np.ndarray) -> np.ndarray:
    """Depth of every event within its track by the stack rule (events visited by track, start,
    longest first): vectorised where a track nests properly, the loop for the other tracks."""
    order = np.lexsort((-(end - ts), ts, track_of))
    depth = _nested_depths(ts, end, track_of, order)
    if depth is None:
        depth = np.zeros(len(ts), np.int32)
        bad = distinct(track_of)
    else:
        bad = _bad_tracks(ts, end, track_of, depth)
    for track in bad.tolist():
        rows = order[track_of[order] == track]
        _stack_loop(ts[rows].tolist(), end[rows].tolist(), rows.tolist(), depth)
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


def cached_index(table: EventTable, path: str) -> TimelineIndex:
    """The index saved at `path` when it was built by this code for this table, else built now and
    saved there (OSError from a cache folder we cannot write is the caller's to log)."""
    try:
        index = TimelineIndex.load(path)
        if len(index.track_of) == len(table):
            return index
    except (OSError, ValueError, KeyError):
        pass
    index = build_index(table)
    index.save(path)
    return index
