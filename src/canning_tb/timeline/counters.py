"""Counter tracks: memory allocated / reserved per device over time, downsampled to a pixel width
with each column's highest value kept (the peak is never smoothed away), and the NPU's sampled
counters (the `npu_counters` side table: AI Core frequency, HBM / LLC bandwidth ...), downsampled
keeping each column's lowest and highest sample (a frequency drop is as visible as a peak)."""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from canning_tb.ingest.side_tables import rows as side_rows
from canning_tb.ingest.table import NONE, EventTable
from canning_tb.util.arrays import distinct


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


def memory_series(table: EventTable) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
    """(device, "allocated" | "reserved", ts, bytes) of each device's known totals, by time: made once
    per window, downsampled per request."""
    mem = table.memory
    ts_all = mem["ts"]
    order = np.argsort(ts_all, kind="stable")
    devices = mem["device"][order]
    out = []
    for device in distinct(devices):
        rows = order[devices == device]
        allocated = mem["allocated"][rows]
        for measure in ("allocated", "reserved"):
            values = mem[measure][rows]
            known = values != NONE
            # reserved is never below allocated: all zero beside allocated bytes is an allocator that
            # does not report it (the CPU's), not a curve at 0: no lane for it
            unreported = measure == "reserved" and not values[known].any() and (allocated[allocated != NONE] > 0).any()
            if known.any() and not unreported:
                out.append((table.strings[int(device)] or "", measure, ts_all[rows][known], values[known]))
    return out


def memory_counters(series: list, t0: int, t1: int, width: int, origin: int) -> list[dict]:
    out = []
    for device, measure, ts_all, values in series:
        ts, kept = _downsample(ts_all, values, t0, t1, width)
        out.append({"device": device, "measure": measure, "ts_ns": [t - origin for t in ts], "bytes": kept})
    return out


@dataclass
class Series:
    """One NPU counter: its samples ordered by time."""

    group: str
    name: str
    unit: str
    device: str
    ts: np.ndarray  # int64 ns
    values: np.ndarray  # float64, in `unit`


def _natural(text: str) -> list:
    """Sort key that puts 'acc_id 2' before 'acc_id 10'."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def npu_series(table: EventTable) -> list[Series]:
    """The window's NPU counters, one Series per (device, group, counter, unit), ordered by device,
    group and name (a group's series side by side)."""
    samples: dict[tuple, list] = {}
    for row in side_rows(table.side, "npu_counters"):
        samples.setdefault((row["device"], row["group"], row["counter"], row["unit"]), []).append(
            (row["ts_ns"], row["value"]))
    out = []
    for (device, group, name, unit), points in sorted(samples.items(), key=lambda item: [_natural(k) for k in item[0]]):
        ts = np.array([t for t, _ in points], np.int64)
        values = np.array([v for _, v in points], np.float64)
        order = np.argsort(ts, kind="stable")
        out.append(Series(group, name, unit, device, ts[order], values[order]))
    return out


def series_info(series: list[Series]) -> list[dict]:
    """What the tracks route lists of each counter (its peak fixes the lane's scale)."""
    return [{"id": i, "group": one.group, "name": one.name, "unit": one.unit, "device": one.device,
             "max": float(one.values.max()) if len(one.values) else 0.0} for i, one in enumerate(series)]


def _extremes(ts: np.ndarray, values: np.ndarray, t0: int, t1: int, width: int) -> tuple[list, list]:
    """The value in force at t0, then per pixel column its lowest and highest sample, in time order."""
    before = np.flatnonzero(ts < t0)
    out_ts, out_values = ([t0], [float(values[before[-1]])]) if len(before) else ([], [])
    inside = np.flatnonzero((ts >= t0) & (ts <= t1))
    if len(inside):
        column = (ts[inside] - t0) * max(1, width) // max(1, t1 - t0)
        by_value = inside[np.lexsort((values[inside], column))]
        edge = np.flatnonzero(np.diff(column) != 0)  # columns grow with time: groups are contiguous
        lows = by_value[np.append(0, edge + 1)]
        highs = by_value[np.append(edge, len(by_value) - 1)]
        kept = distinct(np.concatenate([lows, highs]))  # sample rows are in time order
        out_ts += ts[kept].tolist()
        out_values += values[kept].tolist()
    return out_ts, out_values


def npu_counters(series: list[Series], t0: int, t1: int, width: int, origin: int) -> list[dict]:
    out = []
    for i, one in enumerate(series):
        ts, values = _extremes(one.ts, one.values, t0, t1, width)
        out.append({"id": i, "ts_ns": [t - origin for t in ts], "values": values})
    return out
