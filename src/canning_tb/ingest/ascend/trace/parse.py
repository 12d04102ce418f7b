"""One range of trace_view.json's events into columns, a piece at a time (helper for trace.py): each
piece's events become numpy columns in reader-local ids at once (`_Parse.piece`), mergeable with
another range's (trace_merge); nothing per event outlives its piece.

Each field is pulled from the piece's events once, for the events that use it: the phase of every
event, then (name, category, process, thread) of duration and flow events as one key (`Combos`: one id
per distinct key, its parts decoded once), their times as text read as ns from their bytes (csv/columns.py),
and the args a handler may read (host operators' inputs only for the keys whose category or name makes
them host operators)."""
from __future__ import annotations

from itertools import repeat
from operator import attrgetter, is_not, itemgetter

import numpy as np

from canning_tb.ingest.ascend.counters import CounterParts
from canning_tb.ingest.ascend.csv.columns import dur_column, float_column, us_to_ns_column
from canning_tb.ingest.ascend.csv.rows import to_int
from canning_tb.ingest.table import NONE

from . import decode as dec
from . import scan as trace_scan
from .decode import DEVICE_INTS, DEVICE_TEXT, HOST_ARGS, TEXT_ARGS

_HOST_CATS = ("user_annotation", "cpu_op", "operator")
_KEY = attrgetter("name", "cat", "pid", "tid")
_PH, _TS, _DUR, _ARGS, _ID = (attrgetter(k) for k in ("ph", "ts", "dur", "args", "id"))
_X, _C, _M = ord("X"), ord("C"), ord("M")
_FLOW = (ord("s"), ord("f"), ord("t"))
_PH_CODES = {"X": _X, "C": _C, "M": _M, "s": _FLOW[0], "f": _FLOW[1], "t": _FLOW[2]}


class Ids(dict):
    """value -> dense id in order of first sight; None -> NONE."""

    def __init__(self):
        super().__init__({None: NONE})

    def __missing__(self, key):
        new = self[key] = len(self) - 1
        return new

    def values_in_order(self) -> list:
        return list(self)[1:]


class Combos(dict):
    """(name, cat, pid, tid) of an event -> one id; each new key's parts get their ids in the name, cat,
    pid and tid spaces at once, and whether it can be a host operator or a torch_to_npu flow."""

    def __init__(self, ids: dict[str, Ids]):
        super().__init__()
        self.spaces = ids
        self.parts: list[tuple[int, int, int, int]] = []
        self.host: list[bool] = []
        self.flow: list[bool] = []

    def __missing__(self, key):
        name, cat, pid, tid = key
        name = "None" if name is None else name  # the plain reading's str(name)
        s = self.spaces
        self.parts.append((s["name"][name], s["cat"][cat], s["pid"][pid], s["tid"][tid]))
        self.host.append(cat != "python_function" and (cat in _HOST_CATS or name.startswith("ProfilerStep#")))
        self.flow.append(cat == "async_npu" or name == "torch_to_npu")
        new = self[key] = len(self.parts) - 1
        return new

    def column(self, part: int) -> np.ndarray:
        """The local id of one part (0 name, 1 cat, 2 pid, 3 tid) of every combo."""
        return np.array([p[part] for p in self.parts], np.int32)


def _ints(values: tuple) -> np.ndarray:
    """to_int of int args decoded with INT_ABSENT for absence -> int64, INT_ABSENT where unknown."""
    try:
        a = np.fromiter(values, np.int64, len(values))
    except (TypeError, ValueError, OverflowError):
        a = np.fromiter((dec.INT_ABSENT if (v := to_int(x)) is None else v for x in values), np.int64,
                        len(values))
        return a
    return dec.known_ints(a)


_DEVICE_INTS = attrgetter(*DEVICE_INTS)


def _int_args(args: list, typed: bool) -> list[np.ndarray]:
    """The int args of every event (INT_ABSENT where absent or unknown), one column per DEVICE_INTS:
    ints decoded as such go through numpy at once; values taken as written, through to_int."""
    if typed:
        try:
            m = np.array(list(map(_DEVICE_INTS, args)), np.int64).reshape(len(args), len(DEVICE_INTS))
            return list(dec.known_ints(m).T)
        except OverflowError:  # an int past int64: to_int decides
            pass
    return [_ints(tuple(map(attrgetter(attr), args))) for attr in DEVICE_INTS]


def _present(values: list) -> np.ndarray:
    """Where values are not None (any value: a list in an Any field stays one cell)."""
    return np.flatnonzero(np.fromiter(map(is_not, values, repeat(None)), bool, len(values)))


def _pick(items: list, rows: np.ndarray) -> list:
    """items at rows, as a list (all of it when rows is every row)."""
    if len(rows) == len(items):
        return items
    if len(rows) == 1:
        return [items[int(rows[0])]]
    return list(itemgetter(*rows.tolist())(items))


def _phases(events: list) -> np.ndarray:
    """The phase of each event as a byte code ('X', 'C' ...; 0 for any other phase)."""
    phs = list(map(_PH, events))
    try:
        text = "".join(phs).encode("ascii")
    except UnicodeEncodeError:
        text = b""
    if len(text) == len(phs) and "" not in phs:  # then every phase is one character
        return np.frombuffer(text, np.uint8)
    return np.fromiter((_PH_CODES.get(p, 0) for p in phs), np.uint8, len(phs))


class _Parse:
    """The columns of one range of the file's events, in reader-local ids (mergeable: trace_merge)."""

    def __init__(self):
        self.ids = {k: Ids() for k in ("name", "cat", "pid", "tid", "dims", "stack", "task", "dtype", "itype", "flow")}
        self.combos = Combos(self.ids)
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

    def piece(self, got) -> None:
        """One piece, as trace_scan.decode gives it: scanned columns, or (decoded events, unusable elements)."""
        if type(got) is trace_scan.Scanned:
            trace_scan.add(self, got)
            return
        events, bad = got
        self.bad += bad
        if not events:
            return
        ph = _phases(events)
        seq = np.arange(self.seq, self.seq + len(events))
        self.seq += len(events)
        rows = np.flatnonzero(ph == _X)
        if len(rows):
            self._durations(_pick(events, rows))
        if len(rows) == len(events):
            return
        flows = np.flatnonzero((ph == _FLOW[0]) | (ph == _FLOW[1]) | (ph == _FLOW[2]))
        if len(flows):
            self._flows(_pick(events, flows), ph[flows], seq[flows])
        counters = np.flatnonzero(ph == _C)
        if len(counters):
            self.counters.add(self, _pick(events, counters), seq[counters])
        for i in np.flatnonzero(ph == _M).tolist():
            self._meta(events[i])

    def _durations(self, xs: list) -> None:
        ts, ok = us_to_ns_column(list(map(_TS, xs)))
        if not ok.all():
            self.bad += int((~ok).sum())
            keep = np.flatnonzero(ok)
            xs, ts = _pick(xs, keep), ts[keep]
        if not xs:
            return
        combo = np.fromiter(map(self.combos.__getitem__, map(_KEY, xs)), np.int32, len(xs))
        dur, dok = dur_column(list(map(_DUR, xs)))
        self.parts.append({"ts": ts, "dur": np.maximum(np.where(dok, dur, 0), 0), "combo": combo})
        self._sparse_args(*dec.x_args(list(map(_ARGS, xs))), combo)
        self.n += len(xs)

    def _id(self, space: str, values: list) -> np.ndarray:
        return np.fromiter(map(self.ids[space].__getitem__, values), np.int32, len(values))

    def _sparse_args(self, args: list, typed: bool, combo: np.ndarray) -> None:
        out = {}
        host = np.flatnonzero(np.array(self.combos.host, bool)[combo])
        host_args = _pick(args, host) if len(host) else []
        for attr in HOST_ARGS:
            self._texts(out, attr, host_args, host, typed)
        for attr in DEVICE_TEXT:
            self._texts(out, attr, args, None, typed)
        for attr, a in zip(DEVICE_INTS, _int_args(args, typed)):
            rows = np.flatnonzero(a != dec.INT_ABSENT)
            if len(rows):
                out[attr] = (rows + self.n, a[rows])
        flops = list(map(attrgetter("flops"), host_args))
        rows = _present(flops) if flops.count(None) != len(flops) else ()
        if len(rows):
            out["flops"] = (host[rows] + self.n, float_column([flops[k] for k in rows.tolist()]))
        self.sparse.append(out)

    def _texts(self, out: dict, attr: str, args: list, at: np.ndarray | None, typed: bool) -> None:
        """One text arg of args (events `at` of this part, or all of them) into out, as ids of its space."""
        vals = list(map(attrgetter(attr), args))
        if vals.count(None) == len(vals):
            return
        rows = _present(vals)
        texts = _pick(vals, rows)
        if not typed:  # taken as written: the plain reading's str()
            texts = [v if type(v) is str else str(v) for v in texts]
        out[attr] = ((rows if at is None else at[rows]) + self.n, self._id(TEXT_ARGS[attr], texts))

    def _flows(self, fs: list, ph: np.ndarray, seq: np.ndarray) -> None:
        combo = np.fromiter(map(self.combos.__getitem__, map(_KEY, fs)), np.int32, len(fs))
        rows = np.flatnonzero(np.array(self.combos.flow, bool)[combo])
        if not len(rows):
            return
        fs = _pick(fs, rows)
        ts, ok = us_to_ns_column(list(map(_TS, fs)))
        self.flows.append({"ph": ph[rows], "id": self._id("flow", list(map(_ID, fs))), "combo": combo[rows],
                           "ts": np.where(ok, ts, NONE), "ts_ok": ok, "seq": seq[rows]})

    def _meta(self, e) -> None:
        if e.name not in ("process_name", "thread_name"):
            return
        args = dec.x_args([e.args])[0][0]
        label = "" if args.label is None else str(args.label)
        pid = self.ids["pid"][e.pid]
        if e.name == "process_name":
            self.pnames[pid] = label
        else:
            self.tnames[(pid, self.ids["tid"][e.tid])] = label


_PH_TEXT = np.array([chr(i) for i in range(256)], dtype=object)


def flow_phase(codes: np.ndarray) -> np.ndarray:
    """Flow phases as the text trace_flows compares ('s', 'f', 't')."""
    return _PH_TEXT[codes]
