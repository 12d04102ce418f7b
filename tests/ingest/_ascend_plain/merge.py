"""Device tasks of trace_view.json and kernel_details.csv merged without double counting, into columns.

kernel_details.csv, when present, is the list of device tasks; each row is matched to the trace's
device event of the same (start, name), else of the same name within 2 µs (HCCL ops are written
1 ns apart in the two files); the matched trace event is dropped and its links (external id,
correlation, stream, pid/tid; bytes and group for HCCL ops) go to the row. Trace device events no
row matched stay (memcpy, sync tasks ...). The rule in full: docs/formats/ascend.md.
"""
from __future__ import annotations

import numpy as np

from canning_tb.ingest.table import (EVENT_COLUMNS, MEMORY_COLUMNS, NONE, ColumnBuilder, EventTable, Kind, metric_columns,
                    sort_by_time, sort_with_metrics)

MATCH_TOLERANCE_NS = 2000
_STRING_COLS = ("name", "cat", "shapes", "stack", "core", "group", "args")


def _trace_index(trace) -> tuple[dict, dict]:
    """(start, name) -> trace rows and name -> trace rows of the trace's device events."""
    by_key: dict[tuple, list[int]] = {}
    by_name: dict[str, list[int]] = {}
    for i in trace.device_rows:
        r = trace.rows[i]
        by_key.setdefault((r["ts"], r["name"]), []).append(i)
        by_name.setdefault(r["name"], []).append(i)
    return by_key, by_name


def _match(k: dict, rows: list[dict], by_key: dict, by_name: dict, taken: set[int]) -> int | None:
    for i in by_key.get((k["ts"], k["name"]), ()):
        if i not in taken:
            return i
    best = None
    for i in by_name.get(k["name"], ()):
        if i in taken:
            continue
        gap = abs(rows[i]["ts"] - k["ts"])
        if gap <= MATCH_TOLERANCE_NS and (best is None or gap < best[0]):
            best = (gap, i)
    return None if best is None else best[1]


def _inherit(k: dict, t: dict) -> None:
    """A kernel_details row takes the links of its trace event."""
    for c in ("external_id", "correlation", "pid", "tid"):
        if c in t:
            k[c] = t[c]
    if k.get("stream", NONE) == NONE and t.get("stream", NONE) != NONE:
        k["stream"] = t["stream"]
    if k.get("device", NONE) == NONE:
        k["device"] = t.get("device", NONE)
    if k["kind"] == Kind.COMM_KERNEL:
        for c in ("bytes", "group"):
            if t.get(c) not in (None, NONE):
                k[c] = t[c]


def merge_device_rows(trace, kernels: list[dict] | None) -> list[dict]:
    if trace is None:
        rows = list(kernels or [])
        for r in rows:
            r.setdefault("tid", r.get("stream", NONE))
        return rows
    rows = trace.rows
    if not kernels:
        return rows
    by_key, by_name = _trace_index(trace)
    taken: set[int] = set()
    for k in kernels:
        idx = _match(k, rows, by_key, by_name, taken)
        if idx is None:
            k.setdefault("pid", trace.hardware_pid)
            k.setdefault("tid", k.get("stream", NONE))
            continue
        taken.add(idx)
        _inherit(k, rows[idx])
    merged = [r for i, r in enumerate(rows) if i not in taken]
    merged.extend(kernels)
    return merged


def fill_events(table: EventTable, rows: list[dict]) -> None:
    b = ColumnBuilder(EVENT_COLUMNS)
    s = table.strings
    for r in rows:
        vals = {}
        for c in EVENT_COLUMNS:
            v = r.get(c)
            if v is None:
                continue
            vals[c] = s.id(v) if c in _STRING_COLS else v
        b.add(**vals)
    metrics = metric_columns(((i, r.get("metrics")) for i, r in enumerate(rows)), len(rows))
    table.events, table.metrics = sort_with_metrics(b.freeze(), metrics)


def fill_memory(table: EventTable, mem: list[tuple]) -> None:
    s = table.strings
    n = len(mem)
    cols = {k: np.full(n, NONE, dtype=t) for k, t in MEMORY_COLUMNS.items()}
    cols["bytes"][:] = 0
    for i, (ts, dev, allocated, reserved, active, comp) in enumerate(mem):
        cols["ts"][i] = ts
        cols["device"][i] = s.id(dev)
        for key, v in (("allocated", allocated), ("reserved", reserved), ("active", active)):
            if v is not None:
                cols[key][i] = v
        cols["component"][i] = s.id(comp)
    table.memory = sort_by_time(cols)
