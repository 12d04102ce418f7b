"""The NPU's sampled counters (AI Core frequency, HBM / LLC bandwidth, NPU memory, accelerator PMU
and SoC bandwidth levels) -> rows of the `npu_counters` side table, from trace_view.json's
``"ph":"C"`` events or from the profiler db's tables. Units converted once, here: trace_view.json
writes KB (1024 bytes: its APP/HBM equals the db's NPU_MEM bytes / 1024) and MB/s (msprof scales
by 1024²); the db writes bytes, bytes/s and MHz already."""
from __future__ import annotations

import re
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from canning_tb.ingest import side_tables as side

from .csv.columns import float_column, us_to_ns_column
from .trace.decode import any_args

_TS, _ARGS, _NAME_PID = attrgetter("ts"), attrgetter("args"), attrgetter("name", "pid")


class _Made(dict):
    """key -> make(key), made once per distinct key."""

    def __init__(self, make):
        super().__init__()
        self.make = make

    def __missing__(self, key):
        value = self[key] = self.make(key)
        return value


class _Codes(dict):
    def __missing__(self, key):
        code = self[key] = len(self)
        return code


def _pick(items: list, rows: np.ndarray) -> list:
    return [items[int(rows[0])]] if len(rows) == 1 else list(itemgetter(*rows.tolist())(items))

_UNIT_RE = re.compile(r"\(([^()]*)\)\s*$")
# the file's unit -> (ours, factor)
_SCALE = {"KB": ("bytes", 1024.0), "MB/s": ("bytes/s", float(1 << 20)), "MHz": ("MHz", 1.0)}


def _unit(key: str) -> tuple[str, float]:
    """Unit and factor of one arg: 'KB', 'MHz', 'Read(MB/s)', 'Hit Rate(%)', 'value'."""
    if key in _SCALE:
        return _SCALE[key]
    match = _UNIT_RE.search(key)
    if not match:
        return "", 1.0
    return _SCALE.get(match.group(1), (match.group(1), 1.0))


def is_id_key(key: str) -> bool:
    """An arg that names the series (acc_id, llc_id ...), not a sampled value."""
    return key.lower().endswith("id")


def _series(name: str, ids: list[str], values: tuple) -> str:
    return " ".join([name, *(f"{key} {x}" for key, x in zip(ids, values))])


class CounterParts:
    """The counter samples of trace_view.json's "ph":"C" events, a piece at a time, as columns: one row
    per numeric arg (args named *id, acc_id, name the series). The process (the group) and the device
    are known only once the whole file is read: rows keep the pid's id until then (trace_kinds)."""

    def __init__(self):
        self.series: dict[str, int] = {}
        self.units: dict[str, int] = {}
        self.parts: list[dict[str, np.ndarray]] = []

    def add(self, parse, cs: list, seq: np.ndarray) -> None:
        """The counter events `cs` of a piece (file order `seq`): grouped by (name, process, keys of the
        args), each group's values taken a key at a time."""
        ts, ok = us_to_ns_column(list(map(_TS, cs)))
        args = any_args(list(map(_ARGS, cs)))
        if set(map(type, args)) == {dict}:
            sigs = list(map(tuple, args))
        else:  # args that are no object give no sample
            sigs = [tuple(a) if type(a) is dict else None for a in args]
        keys = _Codes()
        codes = np.fromiter(map(keys.__getitem__, zip(map(_NAME_PID, cs), sigs)), np.int32, len(cs))
        order = np.argsort(codes, kind="stable")
        cuts = np.flatnonzero(np.diff(codes[order])) + 1
        for group, ((name, pid), sig) in zip(np.split(order, cuts), sorted(keys, key=keys.get)):
            rows = group[ok[group]]
            if sig is None or not len(rows):
                continue
            self._group(parse.ids["pid"][pid], name, sig, _pick(args, rows), ts[rows], seq[rows])

    def _group(self, pid: int, name: str | None, keys: tuple, group_args: list, ts: np.ndarray,
               seq: np.ndarray) -> None:
        ids = [key for key in keys if is_id_key(key)]
        id_values = list(zip(*(map(itemgetter(key), group_args) for key in ids))) if ids else None
        self.add_group(pid, name, keys, lambda pos, key: float_column(list(map(itemgetter(key), group_args))),
                       id_values, ts, seq)

    def add_group(self, pid: int, name: str | None, keys: tuple, values_at, id_values: list | None, ts: np.ndarray,
                  seq: np.ndarray) -> None:
        """One group's samples (one name, process and set of arg keys): values_at(pos, key) is the float
        column of a value arg (NaN where no number), id_values the values of the id args of each sample."""
        name = "None" if name is None else name  # the plain reading's str(name)
        ids = [key for key in keys if is_id_key(key)]
        values = [key for key in keys if not is_id_key(key)]
        n = len(ts)
        for pos, key in enumerate(keys):
            if key not in values:
                continue
            v = values_at(pos, key)
            keep = ~np.isnan(v)
            unit, factor = _unit(key)
            suffix = f"/{key}" if len(values) > 1 else ""
            series = self._series_codes(name, ids, id_values, suffix, n)
            k = int(keep.sum())
            self.parts.append({"pid": np.full(k, pid, np.int32), "ts": ts[keep], "series": series[keep],
                               "unit": np.full(k, self._code(self.units, unit), np.int32),
                               "value": v[keep] * factor, "seq": seq[keep] * 64 + min(pos, 63)})

    def _series_codes(self, name: str, ids: list, id_values, suffix: str, n: int) -> np.ndarray:
        """The series code of each sample: its name, the values of its id args, the arg's key."""
        if not ids:
            return np.full(n, self._code(self.series, name + suffix), np.int32)
        made = _Made(lambda v: self._code(self.series, _series(name, ids, v) + suffix))
        try:
            return np.fromiter(map(made.__getitem__, id_values), np.int32, n)
        except TypeError:  # an id that is a list or an object: no caching
            return np.fromiter((self._code(self.series, _series(name, ids, v) + suffix) for v in id_values),
                               np.int32, n)

    def absorb(self, other: "CounterParts", pid_map: np.ndarray, seq_offset: int) -> None:
        """Another reader's samples (the range after ours), their codes mapped to ours."""
        series = np.array([self._code(self.series, t) for t in other.series] + [-1], np.int32)
        units = np.array([self._code(self.units, t) for t in other.units] + [-1], np.int32)
        for part in other.parts:
            self.parts.append({**part, "pid": pid_map[part["pid"]].astype(np.int32), "series": series[part["series"]],
                               "unit": units[part["unit"]], "seq": part["seq"] + seq_offset * 64})

    @staticmethod
    def _code(table: dict[str, int], text: str) -> int:
        code = table.get(text)
        if code is None:
            code = table[text] = len(table)
        return code

    def columns(self, group_of_pid: np.ndarray, device_of_pid: np.ndarray, groups: list[str]) -> side.Columns | None:
        """The npu_counters side table, in file order: group_of_pid / device_of_pid map a pid id to the
        group's index in `groups` and the device (-1: the pid is no device, its samples are dropped)."""
        if not self.parts:
            return None
        cols = {k: np.concatenate([p[k] for p in self.parts]) for k in self.parts[0]}
        device = device_of_pid[cols["pid"]]
        order = np.argsort(cols["seq"], kind="stable")
        order = order[device[order] >= 0]
        devices, dev_ids = _codes(device[order])
        dev_names = [f"npu:{d}" for d in devices.tolist()]
        return side.Columns.build(
            "npu_counters", group=(group_of_pid[cols["pid"][order]], groups),
            counter=(cols["series"][order], list(self.series)), unit=(cols["unit"][order], list(self.units)),
            device=(dev_ids, dev_names), ts_ns=cols["ts"][order], value=cols["value"][order])


def _codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(values, return_inverse=True) of ints >= 0, without its sort where they are small (device ids)."""
    if not len(values) or int(values.max()) >= 1 << 16:
        uniq, inverse = np.unique(values, return_inverse=True)
        return uniq, inverse.reshape(-1)
    uniq = np.flatnonzero(np.bincount(values))
    index = np.zeros(int(uniq[-1]) + 1, np.int64)
    index[uniq] = np.arange(len(uniq))
    return uniq, index[values]


_MEMORY_SIDES = {"app": "APP", "device": "Device"}  # NPU_MEM.type, named as trace_view.json names them


def _label(db, value: Any) -> str:
    text = db.name(value) or str(value)
    return _MEMORY_SIDES.get(text, text.title())


class _DbSamples:
    """The counter samples of the profiler db's tables, as columns, table after table."""

    def __init__(self, db):
        self.db, self.parts = db, []
        self.codes: dict[str, dict] = {"group": {}, "counter": {}, "unit": {}, "device": {}}

    def _code(self, kind: str, text: str) -> int:
        return CounterParts._code(self.codes[kind], text)

    def add(self, table: str, group: str, sql_cols: list[str], values: list[tuple], ts: str) -> None:
        """values: [(value column, unit, series)], series(row values of sql_cols) -> the counter's name, per
        distinct combination. One pass over the table for all its value columns. A table without its
        time, device or key columns is not read; a value column it lacks (another CANN's schema) is no
        counter, and the others are read."""
        from .db import columns as q
        if table not in self.db.tables:
            return
        have = self.db.columns(table)
        values = [v for v in values if v[0] in have]
        if not values or not {"deviceId", ts, *sql_cols} <= have:
            return
        c = q.select(self.db.c, table, ints=["deviceId", ts, *sql_cols], reals=[v for v, _, _ in values])
        keys = np.stack([c[x] for x in sql_cols], axis=1) if sql_cols else np.zeros((len(c[ts]), 0), np.int64)
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True) if len(keys) else (keys, np.zeros(0, np.int64))
        row_values = [[None if v == q.INT_NULL else v for v in u] for u in uniq.tolist()]
        dev_u, dev_at = np.unique(c["deviceId"], return_inverse=True)
        device = np.array([self._code("device", f"npu:{int(d)}") for d in dev_u], np.int32)[dev_at]
        timed = q.known(c[ts]) & q.known(c["deviceId"])
        group_code = self._code("group", group)
        for value, unit, series in values:  # each kind of text has its own codes: the order across kinds is free
            ok = timed & ~np.isnan(c[value])
            names = np.array([self._code("counter", series(*u)) for u in row_values], np.int32)
            n = int(ok.sum())
            self.parts.append({"group": np.full(n, group_code, np.int32),
                               "counter": names[inverse.reshape(-1)][ok] if len(uniq) else np.zeros(0, np.int32),
                               "unit": np.full(n, self._code("unit", unit), np.int32),
                               "device": device[ok], "ts_ns": c[ts][ok], "value": c[value][ok]})

    def columns(self) -> side.Columns | None:
        if not self.parts or not sum(len(p["ts_ns"]) for p in self.parts):
            return None
        cols = {k: np.concatenate([p[k] for p in self.parts]) for k in self.parts[0]}
        return side.Columns.build("npu_counters", **{k: (cols[k], list(self.codes[k])) for k in self.codes},
                                  ts_ns=cols["ts_ns"], value=cols["value"])


def db_counter_rows(db) -> side.Columns | None:
    """The counter tables of a profiler db (those it has), as the npu_counters side table."""
    out = _DbSamples(db)
    out.add("AICORE_FREQ", "AI Core Freq", [], [("freq", "MHz", lambda: "AI Core Freq")], "timestampNs")
    out.add("HBM", "HBM", ["hbmId", "type"], [("bandwidth", "bytes/s", lambda i, t: f"HBM {i}/{_label(db, t)}")],
            "timestampNs")
    out.add("LLC", "LLC", ["llcId", "mode"],
            [(column, unit, lambda i, mode, suffix=suffix: f"LLC {i} {_label(db, mode)}/{suffix}")
             for column, suffix, unit in (("throughput", "Throughput", "bytes/s"), ("hitRate", "Hit Rate", "%"))],
            "timestampNs")
    out.add("NPU_MEM", "NPU MEM", ["type"],
            [(column, "bytes", lambda t, column=column: f"{_label(db, t)}/{column.upper()}") for column in ("hbm", "ddr")],
            "timestampNs")
    out.add("ACC_PMU", "Acc PMU", ["accId"],
            [(column, "", lambda acc, series=series: f"{series} acc_id {acc}")
             for column, series in (("readBwLevel", "read_bandwidth"), ("writeBwLevel", "write_band_width"),
                                    ("readOstLevel", "read_ost"), ("writeOstLevel", "write_ost"))], "timestampNs")
    out.add("SOC_BANDWIDTH_LEVEL", "Stars Soc Info", [],
            [(column, "", lambda series=series: series)
             for column, series in (("mataBwLevel", "Mata Bw Level"), ("l2BufferBwLevel", "L2 Buffer Bw Level"))],
            "timestampNs")
    return out.columns()
