"""Counter tracks: memory allocated / reserved per device over time, downsampled to a pixel width
with each column's highest value kept (the peak is never smoothed away)."""
from __future__ import annotations

import numpy as np

from canning_tb.ingest.table import NONE, EventTable


def _downsample(ts: np.ndarray, values: np.ndarray, t0: int, t1: int, width: int) -> tuple[list, list]:
    """Per pixel column that holds samples: its first time and its highest value, plus the value
    in force at t0 (the last sample before the range)."""
    inside = (ts >= t0) & (ts <= t1)
    before = np.flatnonzero(ts < t0)
    out_ts, out_values = [], []
    if len(before):
        out_ts.append(t0)
        out_values.append(int(values[before[-1]]))
    if inside.any():
        sel_ts, sel_values = ts[inside], values[inside]
        column = ((sel_ts - t0) * max(1, width) // max(1, t1 - t0)).astype(np.int64)
        first = np.flatnonzero(np.append(True, column[1:] != column[:-1]))
        out_ts += sel_ts[first].tolist()
        out_values += np.maximum.reduceat(sel_values, first).tolist()
    return out_ts, out_values


def memory_counters(table: EventTable, t0: int, t1: int, width: int, origin: int) -> list[dict]:
    mem = table.memory
    order = np.argsort(mem["ts"], kind="stable")
    out = []
    for device in np.unique(mem["device"]):
        rows = order[mem["device"][order] == device]
        for measure in ("allocated", "reserved"):
            values = mem[measure][rows]
            known = values != NONE
            if not known.any():
                continue
            ts, kept = _downsample(mem["ts"][rows][known], values[known], t0, t1, width)
            out.append({"device": table.strings[int(device)] or "", "measure": measure,
                        "ts_ns": [t - origin for t in ts], "bytes": kept})
    return out
