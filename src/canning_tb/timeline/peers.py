"""The peers of a collective across the ranks of a window: on every rank, the call with the same
name and kind that is the same occurrence (the k-th by start time), and which rank arrived last
(the one the others waited for)."""
from __future__ import annotations

import numpy as np

from canning_tb.analysis.common import HOST_COMM_RE
from canning_tb.ingest.table import EventTable, Kind


def is_collective(table: EventTable, event: int) -> bool:
    kind = int(table.events["kind"][event])
    return kind == int(Kind.COMM_KERNEL) or bool(HOST_COMM_RE.match(table.name(event) or ""))


def _same_calls(table: EventTable, name: str, kind: int) -> np.ndarray:
    """Rows of the events with this name and kind, by start."""
    ev = table.events
    name_id = table.strings.find(name)
    rows = np.flatnonzero((ev["name"] == name_id) & (ev["kind"] == kind)) if name_id >= 0 else np.zeros(0, np.int64)
    return rows[np.lexsort((rows, ev["ts"][rows]))]


def peers(tables: list[EventTable], chosen: int, event: int) -> list[dict | None]:
    """Per table (rank): {event, start (absolute ns), dur, wait_ns, last} of the peer of `event`
    of tables[chosen], or None where that rank has no such occurrence. `wait_ns`: how long after
    this rank's start the last rank started; `last`: the rank that arrived last."""
    table = tables[chosen]
    name, kind = table.name(event) or "", int(table.events["kind"][event])
    ordinal = int(np.flatnonzero(_same_calls(table, name, kind) == event)[0])
    found: list[dict | None] = []
    for other in tables:
        calls = _same_calls(other, name, kind)
        if ordinal >= len(calls):
            found.append(None)
            continue
        row = int(calls[ordinal])
        found.append({"event": row, "start": int(other.events["ts"][row]), "dur_ns": int(other.events["dur"][row])})
    latest = max(peer["start"] for peer in found if peer)
    for peer in found:
        if peer:
            peer["wait_ns"] = latest - peer["start"]
            peer["last"] = peer["start"] == latest
    return found
