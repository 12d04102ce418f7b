"""What the timeline shows for one clicked slice: its fields, self time, and the events it is
linked to (the runtime call and device work of an operator by external id, a launch and its kernel
by correlation id)."""
from __future__ import annotations

import numpy as np

from canning_tb.ingest.table import NONE, EventTable, Kind

from .index import TimelineIndex

_OPTIONAL = ("device", "stream", "correlation", "external_id", "blocks", "bytes")
_STRING_ARGS = ("shapes", "stack", "core", "group")
MAX_LINKS = 200


def self_time(table: EventTable, index: TimelineIndex, event: int) -> int:
    """Duration minus the time covered by its children (the next row of its track, clipped)."""
    ts = int(table.events["ts"][event])
    end = ts + int(table.events["dur"][event])
    track, depth = int(index.track_of[event]), int(index.depth[event])
    below = np.flatnonzero((index.row_track == track) & (index.row_depth == depth + 1))
    if len(below) == 0:
        return end - ts
    part = index.row_slice(int(below[0]))
    starts, ends = index.sorted_ts[part], index.sorted_end[part]
    lo = int(np.searchsorted(ends, ts, side="right"))
    hi = int(np.searchsorted(starts, end, side="left"))
    covered = np.minimum(ends[lo:hi], end) - np.maximum(starts[lo:hi], ts)
    return end - ts - int(covered[covered > 0].sum())


def linked(table: EventTable, event: int) -> list[int]:
    """Event rows that share this event's correlation id or (for an operator / its device work)
    its external id: the launch <-> kernel and operator <-> kernels arrows."""
    ev = table.events
    hits = np.zeros(len(table), bool)
    correlation = int(ev["correlation"][event])
    if correlation != NONE:
        hits |= ev["correlation"] == correlation
    external = int(ev["external_id"][event])
    if external != NONE:
        hits |= ev["external_id"] == external
    hits[event] = False
    return np.flatnonzero(hits)[:MAX_LINKS].tolist()


def brief(table: EventTable, index: TimelineIndex, event: int, origin: int) -> dict:
    ev = table.events
    return {"event": event, "name": table.name(event) or "", "kind": Kind(int(ev["kind"][event])).name.lower(),
            "start_ns": int(ev["ts"][event]) - origin, "dur_ns": int(ev["dur"][event]),
            "track": int(index.track_of[event]), "depth": int(index.depth[event])}


def slice_details(table: EventTable, index: TimelineIndex, event: int, origin: int) -> dict:
    ev, strings = table.events, table.strings
    out = brief(table, index, event, origin)
    out["category"] = strings[int(ev["cat"][event])] or ""
    out["self_ns"] = self_time(table, index, event)
    out["args"] = {name: int(ev[name][event]) for name in _OPTIONAL if int(ev[name][event]) != NONE}
    for name in _STRING_ARGS:
        text = strings[int(ev[name][event])]
        if text:
            out["args"][name] = text
    out["input_shapes"] = strings[int(ev["shapes"][event])] or ""
    out["call_stack"] = [frame for frame in (strings[int(ev["stack"][event])] or "").split(";") if frame]
    out["links"] = [brief(table, index, other, origin) for other in linked(table, event)]
    return out
