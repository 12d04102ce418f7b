"""Search by name and the summed time per name in a range (the numbers the timeline shows)."""
from __future__ import annotations

import numpy as np

from canning_tb.analysis.common import HOST_COMM_RE, collective_kind
from canning_tb.ingest.table import EventTable, Kind

from .index import TimelineIndex

MAX_HITS = 500  # the matches listed (and highlighted) in a range: a bounded answer however many match


def matching_names(table: EventTable, text: str, exact: bool = False) -> np.ndarray:
    """String ids whose text holds `text` (case-insensitive), or is `text` exactly."""
    if exact:
        found = table.strings.find(text)
        return np.array([found] if found >= 0 else [], np.int64)
    needle = text.lower()
    return np.array([i for i, value in enumerate(table.strings.values) if needle in value.lower()], np.int64)


def collective_rows(table: EventTable, kind: str) -> np.ndarray:
    """Events that are collectives of this kind (analysis' collective_kind of their name): the
    device's communication kernels where the window has any of that kind, else the host's calls."""
    ev = table.events
    ids = [i for i, name in enumerate(table.strings.values) if collective_kind(name) == kind]
    named = np.isin(ev["name"], ids) if ids else np.zeros(len(table), bool)
    device = named & (ev["kind"] == int(Kind.COMM_KERNEL))
    if device.any():
        return device
    host_ids = [i for i in ids if HOST_COMM_RE.match(table.strings.values[i])]
    return np.isin(ev["name"], host_ids) if host_ids else np.zeros(len(table), bool)


def search(table: EventTable, text: str, at_ns: int, tracks: np.ndarray | None, track_of: np.ndarray,
           exact: bool = False, collective: bool = False, within: tuple[int, int] | None = None,
           depth: np.ndarray | None = None, origin: int = 0) -> dict:
    """How many events' names hold `text` (or are `text`, or, with `collective`, are collectives of
    the kind `text`), the first match starting after `at_ns` and the last one starting before it
    (absolute ns), by start time, the longest match and the tracks that hold a match. With `within` (absolute ns): also the
    matches that overlap that range, by start, the first MAX_HITS of them (`hits`, each `[event,
    track, depth, start_ns, dur_ns]` with start_ns relative to `origin`) and how many there are."""
    ev = table.events
    if collective:
        hits = collective_rows(table, text)
    else:
        ids = matching_names(table, text, exact)
        hits = np.isin(ev["name"], ids) if len(ids) else np.zeros(len(table), bool)
    if tracks is not None:
        hits &= np.isin(track_of, tracks)
    rows = np.flatnonzero(hits)
    rows = rows[np.lexsort((rows, ev["ts"][rows]))]
    starts = ev["ts"][rows]
    after = int(np.searchsorted(starts, at_ns, side="right"))
    before = int(np.searchsorted(starts, at_ns, side="left")) - 1
    found = {"count": int(len(rows)),
             "next": int(rows[after]) if after < len(rows) else None,
             "previous": int(rows[before]) if before >= 0 else None,
             "next_index": after if after < len(rows) else None,
             "longest": int(rows[np.argmax(ev["dur"][rows])]) if len(rows) else None,
             "match_tracks": [int(t) for t in np.unique(track_of[rows])]}
    if within is not None:
        t0, t1 = within
        ends = starts + ev["dur"][rows]
        seen = rows[(starts <= t1) & (ends >= t0)]
        kept = seen[:MAX_HITS]
        levels = depth[kept] if depth is not None else np.zeros(len(kept), np.int64)
        found["in_range"] = int(len(seen))
        found["hits"] = [[int(e), int(track_of[e]), int(d), int(ev["ts"][e]) - origin, int(ev["dur"][e])]
                         for e, d in zip(kept, levels)]
    return found


def _parents(index: TimelineIndex, events: np.ndarray) -> np.ndarray:
    """Each event's parent on its track (the event one level up that contains it), -1 where none:
    rows are ordered by (track, depth), so a row's parent row is the one before it when that is
    the same track one level up; in that row the parent is the last event starting at or before."""
    parent = np.full(len(events), -1, np.int64)
    if not len(events):
        return parent
    position = np.empty(len(index.order), np.int64)
    position[index.order] = np.arange(len(index.order))
    row_of = np.searchsorted(index.row_offsets, position[events], side="right") - 1
    for row in np.unique(row_of):
        if row == 0 or index.row_track[row - 1] != index.row_track[row] or \
                index.row_depth[row - 1] != index.row_depth[row] - 1:
            continue
        mine = np.flatnonzero(row_of == row)
        part = index.row_slice(int(row) - 1)
        starts, ends = index.sorted_ts[part], index.sorted_end[part]
        child_start = index.sorted_ts[position[events[mine]]]
        child_end = index.sorted_end[position[events[mine]]]
        at = np.searchsorted(starts, child_start, side="right") - 1
        ok = at >= 0
        ok[ok] &= ends[at[ok]] >= child_end[ok]
        parent[mine[ok]] = index.order[part.start + at[ok]]
    return parent


def range_summary(table: EventTable, t0: int, t1: int, tracks: np.ndarray | None, track_of: np.ndarray,
                  limit: int = 50, index: TimelineIndex | None = None) -> dict:
    """Per name, over the events that overlap [t0, t1]: how many, the time they spend inside the range
    (clipped to it), their self time inside it (less the clipped time of their children on the same
    track, with `index`), and that total as a share of the range's length (over 1 where calls overlap
    on several tracks); most time first, the first `limit` names."""
    ev = table.events
    start = np.maximum(ev["ts"], t0)
    stop = np.minimum(ev["ts"] + ev["dur"], t1)
    inside = (stop > start) | ((ev["dur"] == 0) & (ev["ts"] >= t0) & (ev["ts"] <= t1))
    if tracks is not None:
        inside &= np.isin(track_of, tracks)
    rows = np.flatnonzero(inside)
    names = ev["name"][rows]
    clipped = (stop - start)[rows].clip(min=0)
    uniq, inverse = np.unique(names, return_inverse=True)
    inverse = inverse.reshape(-1)
    totals = np.bincount(inverse, weights=clipped, minlength=len(uniq)).astype(np.int64)
    counts = np.bincount(inverse, minlength=len(uniq))
    selfs = None
    if index is not None:
        parent = _parents(index, rows)
        has = parent >= 0
        parent_code = np.searchsorted(uniq, ev["name"][parent[has]])
        under = np.bincount(parent_code, weights=clipped[has], minlength=len(uniq)).astype(np.int64)
        selfs = totals - under
    order = np.lexsort((uniq, -totals))[:limit]
    span = max(1, t1 - t0)
    return {"start_ns": t0, "end_ns": t1, "events": int(len(rows)), "names": int(len(uniq)),
            "rows": [{"name": table.strings[int(uniq[i])] or "", "total_ns": int(totals[i]), "count": int(counts[i]),
                      "self_ns": int(selfs[i]) if selfs is not None else -1,
                      "share": round(float(totals[i]) / span, 6)}
                     for i in order]}
