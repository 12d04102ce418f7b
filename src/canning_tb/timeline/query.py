"""Search by name and the summed time per name in a range (the numbers the timeline shows)."""
from __future__ import annotations

import numpy as np

from canning_tb.analysis.common import HOST_COMM_RE, collective_kind
from canning_tb.ingest.table import EventTable, Kind


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
           exact: bool = False, collective: bool = False) -> dict:
    """How many events' names hold `text` (or are `text`, or, with `collective`, are collectives of
    the kind `text`), the first match starting after `at_ns` and the last one starting before it
    (absolute ns), by start time, and the longest match."""
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
    return {"count": int(len(rows)),
            "next": int(rows[after]) if after < len(rows) else None,
            "previous": int(rows[before]) if before >= 0 else None,
            "next_index": after if after < len(rows) else None,
            "longest": int(rows[np.argmax(ev["dur"][rows])]) if len(rows) else None}


def range_summary(table: EventTable, t0: int, t1: int, tracks: np.ndarray | None, track_of: np.ndarray,
                  limit: int = 50) -> dict:
    """Per name: the time its events spend inside [t0, t1] (clipped) and how many overlap it."""
    ev = table.events
    start = np.maximum(ev["ts"], t0)
    stop = np.minimum(ev["ts"] + ev["dur"], t1)
    inside = (stop > start) | ((ev["dur"] == 0) & (ev["ts"] >= t0) & (ev["ts"] <= t1))
    if tracks is not None:
        inside &= np.isin(track_of, tracks)
    names = ev["name"][inside]
    clipped = (stop - start)[inside].clip(min=0)
    uniq, inverse = np.unique(names, return_inverse=True)
    totals = np.bincount(inverse, weights=clipped, minlength=len(uniq)).astype(np.int64)
    counts = np.bincount(inverse, minlength=len(uniq))
    order = np.lexsort((uniq, -totals))[:limit]
    return {"start_ns": t0, "end_ns": t1, "events": int(inside.sum()), "names": int(len(uniq)),
            "rows": [{"name": table.strings[int(uniq[i])] or "", "total_ns": int(totals[i]), "count": int(counts[i])}
                     for i in order]}
