"""A tile: the items of some track rows in a time range at a pixel width.

An event at least one pixel wide is an item of its own. Consecutive narrower events of a row that
start in the same pixel column become one merged item: it spans from the first start to the last
end, carries how many events it holds and the name of the longest of them (the dominant one). So
a row yields at most about two items per pixel column, whatever the trace size, and every event in
the range is in exactly one item.
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass

import numpy as np

from .index import TimelineIndex

MAX_WIDTH = 20000  # pixels: a request wider than any screen is refused rather than served


@dataclass
class Tile:
    row: np.ndarray  # uint32: index into the requested rows
    start: np.ndarray  # int64 ns (absolute)
    end: np.ndarray  # int64 ns
    count: np.ndarray  # uint32: events in the item
    event: np.ndarray  # int64: the event row of the item (the longest one when merged)
    name: np.ndarray  # int32: string id of that event's name
    events_in_range: int


def _row_items(index: TimelineIndex, row: int, t0: int, t1: int, ns_per_px: float):
    """(start, end, count, event) of one row's items in [t0, t1]."""
    part = index.row_slice(row)
    ends, starts = index.sorted_end[part], index.sorted_ts[part]
    lo = int(np.searchsorted(ends, t0, side="left"))
    hi = int(np.searchsorted(starts, t1, side="right"))
    if hi <= lo:
        return None
    start, end = starts[lo:hi], ends[lo:hi]
    events = index.order[part][lo:hi]
    small = (end - start) < ns_per_px
    column = np.floor((start - t0) / ns_per_px).astype(np.int64)
    boundary = np.ones(len(start), bool)
    boundary[1:] = ~small[1:] | ~small[:-1] | (column[1:] != column[:-1])
    first = np.flatnonzero(boundary)
    group = np.cumsum(boundary) - 1
    count = np.diff(np.append(first, len(start)))
    # the dominant event of a group: its first longest one (linear, no sort)
    length = end - start
    longest = np.maximum.reduceat(length, first)
    candidates = np.flatnonzero(length == longest[group])
    leading = np.ones(len(candidates), bool)
    leading[1:] = group[candidates[1:]] != group[candidates[:-1]]
    dominant = events[candidates[leading]]
    return start[first], np.maximum.reduceat(end, first), count, dominant


def make_tile(index: TimelineIndex, names: np.ndarray, rows: list[int], t0: int, t1: int, width: int) -> Tile:
    ns_per_px = max(1.0, (t1 - t0) / max(1, width))
    parts = []
    total = 0
    for position, row in enumerate(rows):
        items = _row_items(index, row, t0, t1, ns_per_px)
        if items is None:
            continue
        total += int(items[2].sum())
        parts.append((np.full(len(items[0]), position, np.uint32),) + items)
    if not parts:
        empty = np.zeros(0, np.int64)
        return Tile(np.zeros(0, np.uint32), empty, empty, np.zeros(0, np.uint32), empty, np.zeros(0, np.int32), 0)
    row, start, end, count, event = (np.concatenate(column) for column in zip(*parts))
    return Tile(row, start, end, count.astype(np.uint32), event, names[event].astype(np.int32), total)


def encode(tile: Tile, header: dict, strings, origin: int) -> bytes:
    """The binary answer (layout in docs/http_api.md): u32 length of a JSON header, the header,
    padding to 8 bytes, then n float64 starts, n float64 durations (ns relative to `origin`),
    n int32 event ids, n int32 name indexes (into header["names"]), n uint32 counts, n uint32 rows."""
    used, local = np.unique(tile.name, return_inverse=True)
    header = dict(header, count=int(len(tile.start)), events_in_range=tile.events_in_range,
                  names=[strings[int(name)] or "" for name in used])
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * ((-(len(raw) + 4)) % 8)
    arrays = [(tile.start - origin).astype("<f8"), (tile.end - tile.start).astype("<f8"),
              tile.event.astype("<i4"), local.reshape(-1).astype("<i4"), tile.count.astype("<u4"),
              tile.row.astype("<u4")]
    return struct.pack("<I", len(raw)) + raw + b"".join(a.tobytes() for a in arrays)
