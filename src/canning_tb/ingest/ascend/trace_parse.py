"""One range of trace_view.json's events into columns, a piece at a time (helper for trace.py): each
piece's events become numpy columns in reader-local ids at once (`_Parse.piece`), mergeable with
another range's (trace_merge); nothing per event outlives its piece."""
from __future__ import annotations

from itertools import repeat
from operator import attrgetter, is_not, itemgetter

import numpy as np

from . import trace_decode as dec
from .cells import float_column, us_to_ns_column
from .counters import CounterParts
from .csv_io import to_int
from ..table import NONE

# sparse text args -> the id space of their values
TEXT_ARGS = {"dims": "dims", "stack": "stack", "task_type": "task", "data_type": "dtype", "itype": "itype"}
_FIELD_NAMES = ("ph", "name", "cat", "pid", "tid", "ts", "dur", "id", "args")
_PH = attrgetter("ph")


class Ids(dict):
    """value -> dense id in order of first sight; None -> NONE."""

    def __init__(self):
        super().__init__({None: NONE})

    def __missing__(self, key):
        new = self[key] = len(self) - 1
        return new

    def values_in_order(self) -> list:
        return list(self)[1:]


def _ints(values: tuple) -> np.ndarray:
    """to_int of int args decoded with INT_ABSENT for absence -> int64, INT_ABSENT where unknown."""
    try:
        a = np.fromiter(values, np.int64, len(values))
    except (TypeError, ValueError, OverflowError):
        a = np.fromiter((dec.INT_ABSENT if (v := to_int(x)) is None else v for x in values), np.int64,
                        len(values))
        return a
    return np.where((a == dec.INT_ABSENT) | (np.abs(a) < 1 << 62), a, dec.INT_ABSENT)


def _present(values: list) -> np.ndarray:
    """Where values are not None (any value: a list in an Any field stays one cell)."""
    return np.flatnonzero(np.fromiter(map(is_not, values, repeat(None)), bool, len(values)))


class _Fields:
    """The fields of some events of a piece, each pulled once when first asked (cols[i]: a list)."""

    def __init__(self, events: list, rows: np.ndarray):
        self.events = events if len(rows) == len(events) else _picker(rows, len(events))(events)
        self.got: dict[int, list] = {}

    def __getitem__(self, i: int) -> list:
        col = self.got.get(i)
        if col is None:
            col = self.got[i] = list(map(attrgetter(_FIELD_NAMES[i]), self.events))
        return col


def _picker(rows: np.ndarray, n: int):
    """The cells of rows of a column, as a list (all of it when rows is every row)."""
    if len(rows) == n:
        return list
    if len(rows) == 1:
        k = int(rows[0])
        return lambda col: [col[k]]
    get = itemgetter(*rows.tolist())
    return lambda col: list(get(col))


class _Parse:
    """The columns of one range of the file's events, in reader-local ids (mergeable: trace_merge)."""

    def __init__(self):
        self.ids = {k: Ids() for k in ("name", "cat", "pid", "tid", "dims", "stack", "task", "dtype", "itype", "flow")}
        self.parts: list[dict[str, np.ndarray]] = []  # duration events
        self.sparse: list[dict[str, tuple]] = []  # args few events have: name -> (rows, values)
        self.flows: list[dict[str, np.ndarray]] = []
        self.counters = CounterParts()
        self.pnames: dict[int, str] = {}  # pid id -> process name (last M event wins)
        self.tnames: dict[tuple[int, int], str] = {}
        self.n = 0  # duration events so far
        self.seq = 0  # elements so far (file order of flows and counters)
        self.bad = 0
        self.utf8 = 0

    def piece(self, got: tuple[list, int, dict]) -> None:
        events, bad, raw_args = got
        self.bad += bad
        if not events:
            return
        ph = np.array(list(map(_PH, events)), dtype=object)
        seq = np.arange(self.seq, self.seq + len(events))
        self.seq += len(events)
        rows = np.flatnonzero(ph == "X")
        if len(rows):
            self._durations(_Fields(events, rows), rows)
        other = np.flatnonzero(ph != "X")
        if not len(other):
            return
        cols = _Fields(events, other)
        ph_other = ph[other]
        flow_rows = np.flatnonzero((ph_other == "s") | (ph_other == "f") | (ph_other == "t"))
        if len(flow_rows):
            self._flows(cols, flow_rows.tolist(), seq[other])
        counter_rows = np.flatnonzero(ph_other == "C")
        if len(counter_rows) and raw_args is not None:
            args = dec.counter_args(raw_args, other[counter_rows].tolist())
            self.counters.add(self, cols, counter_rows.tolist(), seq[other], dict(zip(counter_rows.tolist(), args)))
        for i in np.flatnonzero(ph_other == "M").tolist():
            self._meta(cols, i)

    def _durations(self, cols: "_Fields", rows: np.ndarray) -> None:
        ts, ok = us_to_ns_column(cols[5])
        self.bad += int((~ok).sum())
        keep = _picker(np.flatnonzero(ok), len(ok))
        ts = ts[ok]
        dur, dok = us_to_ns_column([0 if v is None else v for v in keep(cols[6])])
        names = keep(cols[1])
        if None in names:
            names = ["None" if v is None else v for v in names]
        part = {"ts": ts, "dur": np.maximum(np.where(dok, dur, 0), 0), "name": self._id("name", names),
                "cat": self._id("cat", keep(cols[2])), "pid": self._id("pid", keep(cols[3])),
                "tid": self._id("tid", keep(cols[4]))}
        self._sparse_args([a or dec.NO_ARGS for a in keep(cols[8])], len(ts))
        self.parts.append(part)
        self.n += len(ts)

    def _id(self, space: str, values: list) -> np.ndarray:
        return np.fromiter(map(self.ids[space].__getitem__, values), np.int32, len(values))

    def _sparse_args(self, args: list, n: int) -> None:
        out = {}
        for attr, space in TEXT_ARGS.items():
            vals = list(map(attrgetter(attr), args))
            rows = _present(vals).tolist()
            if rows:
                texts = [v if type(v) is str else str(v) for v in itemgetter(*rows)(vals)] if len(rows) > 1 \
                    else [str(vals[rows[0]])]
                out[attr] = (np.array(rows, np.int64) + self.n, self._id(space, texts))
        for attr in ("pstream", "conn", "count", "size", "sid"):
            a = _ints(tuple(map(attrgetter(attr), args)))
            rows = np.flatnonzero(a != dec.INT_ABSENT)
            if len(rows):
                out[attr] = (rows + self.n, a[rows])
        flops = list(map(attrgetter("flops"), args))
        rows = _present(flops)
        if len(rows):
            out["flops"] = (rows + self.n, float_column([flops[k] for k in rows.tolist()]))
        self.sparse.append(out)

    def _flows(self, cols, rows: list[int], seq: np.ndarray) -> None:
        cat, name = cols[2], cols[1]
        rows = [i for i in rows if cat[i] == "async_npu" or name[i] == "torch_to_npu"]
        if not rows:
            return
        pick = itemgetter(*rows) if len(rows) > 1 else (lambda col: (col[rows[0]],))
        ts, ok = us_to_ns_column(list(pick(cols[5])))
        self.flows.append({"ph": np.array(pick(cols[0]), dtype=object), "id": self._id("flow", list(pick(cols[7]))),
                           "pid": self._id("pid", list(pick(cols[3]))), "tid": self._id("tid", list(pick(cols[4]))),
                           "ts": np.where(ok, ts, NONE), "ts_ok": ok, "seq": seq[rows]})

    def _meta(self, cols: list, i: int) -> None:
        name = cols[1][i]
        if name not in ("process_name", "thread_name"):
            return
        args = cols[8][i]
        label = "" if args is None or args.label is None else str(args.label)
        pid = self.ids["pid"][cols[3][i]]
        if name == "process_name":
            self.pnames[pid] = label
        else:
            self.tnames[(pid, self.ids["tid"][cols[4][i]])] = label
