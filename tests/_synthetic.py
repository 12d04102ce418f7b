"""A tiny EventTable builder for the hand-made cases of the number tests (times in ns)."""
import numpy as np

from canning_tb.ingest.table import EVENT_COLUMNS, MEMORY_COLUMNS, ColumnBuilder, EventTable, Kind, sort_by_time

DEVICE = (Kind.KERNEL, Kind.COMM_KERNEL, Kind.MEMCPY, Kind.MEMSET)


def ev(name, kind, ts, dur, **kw):
    return dict(name=name, kind=kind, ts=ts, dur=dur, **kw)


def table(events, memory=(), devices=None, fmt="kineto", metrics=None) -> EventTable:
    """`metrics`: {column: values in the table's (time) order} (the profiler's per-kernel counters)."""
    t = EventTable()
    cols = ColumnBuilder(EVENT_COLUMNS)
    for e in events:
        e = dict(e)
        for k in ("name", "shapes", "stack", "core", "group", "args"):
            if k in e:
                e[k] = t.strings.id(e[k])
        e["kind"] = int(e["kind"])
        if e["kind"] in DEVICE:
            e.setdefault("device", 0)
            e.setdefault("stream", 7)
            e.setdefault("pid", 0)
        e.setdefault("pid", 1)
        e.setdefault("tid", 1)
        cols.add(**e)
    mem = ColumnBuilder(MEMORY_COLUMNS)
    for r in memory:
        r = dict(r, device=t.strings.id(r["device"]))
        mem.add(**r)
    t.events = sort_by_time(cols.freeze())
    t.memory = sort_by_time(mem.freeze())
    t.meta.format = fmt
    t.meta.devices = devices or []
    for name, values in (metrics or {}).items():
        t.metrics[name] = np.asarray(values, dtype=np.float64)
    t.check()
    return t
