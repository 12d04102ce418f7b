"""``trace_view.json`` of a torch_npu output folder (helper for ``read.py``): a bare JSON array of
Chrome trace events, µs string timestamps converted exactly to int ns. Read a block at a time
(trace_decode), each piece's events turned into numpy columns at once (`_Parse.piece`); nothing per
event outlives its piece. What an event is depends on its process, which `M` events anywhere in the
file name, so kinds are decided at the end over the columns (trace_kinds). The Kind each event gets,
and how the torch_to_npu flows link host ops to device tasks (trace_flows), are in
docs/formats/ascend.md.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Any

import msgspec
import numpy as np

from .. import _json
from .._json import TOO_DEEP
from . import trace_decode as dec
from .cells import us_to_ns_column
from .counters import CounterParts
from .csv_io import read_bytes, to_int
from ..table import NONE, Kind, Problem, is_comm_kernel_name

DTYPE_BYTES = {
    "INT8": 1, "UINT8": 1, "FP8": 1, "HIF8": 1, "BOOL": 1,
    "INT16": 2, "UINT16": 2, "FP16": 2, "BF16": 2, "BFP16": 2,
    "INT32": 4, "UINT32": 4, "FP32": 4, "FLOAT": 4,
    "INT64": 8, "UINT64": 8, "FP64": 8, "DOUBLE": 8, "INT128": 16,
}

_COMPUTE_TASK_RE = re.compile(r"AI_CORE|AI_VECTOR|AIV|AIC|MIX|AI_CPU|AICPU|DSA|KERNEL|FFTS|VECTOR|CUBE", re.I)
_MEMCPY_RE = re.compile(r"MEMCPY|DMA_SQE|PCIE_DMA|SDMA_SQE", re.I)
_SYNC_RE = re.compile(r"EVENT_|NOTIFY|WRITE VALUE|PLACE_HOLDER|PROFILING_|^SDMA$|RDMA|REDUCE_INLINE|STARS_COMMON|"
                      r"BARRIER|WAIT|RECORD", re.I)
# Task Type values that say nothing of the task: CANN writes "Other" where it does not know the
# hardware type (every task of some versions); the task's name then tells (an op name, or the
# task type's own name for sync and copy tasks)
_UNTYPED = frozenset({"", "OTHER", "UNKNOWN", "N/A", "NA", "NONE", "NULL", "INVALID"})
_TASK_TYPE_NAME_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")  # MODEL_EXECUTE, STREAM_SWITCH: a task type, no op
STREAM_RE = re.compile(r"Stream\s+(\d+)")
_FIELD_NAMES = ("ph", "name", "cat", "pid", "tid", "ts", "dur", "id", "args")
_PH = attrgetter("ph")


def hccl_bytes(args: dict) -> int:
    count = to_int(args.get("count"))
    size = DTYPE_BYTES.get(str(args.get("data_type", "")).upper())
    if count is None or size is None or count < 0:
        return NONE
    return count * size


def classify_hardware(name: str, task_type: str) -> Kind:
    if is_comm_kernel_name(name):
        return Kind.COMM_KERNEL
    untyped = task_type.strip().upper() in _UNTYPED
    if untyped:
        task_type = ""
    if _MEMCPY_RE.search(task_type) or (not _COMPUTE_TASK_RE.search(task_type) and _MEMCPY_RE.search(name)):
        return Kind.MEMCPY
    if _COMPUTE_TASK_RE.search(task_type):  # incl. AI_CORE "*_MemSet" kernels, which kernel_details lists
        return Kind.KERNEL
    # an op named *_MemSet runs on the AI Core (a kernel); a memset task is named by its type (MEMSET...)
    if "MEMSET" in task_type.upper() or ("MEMSET" in name.upper() and (not untyped or name.isupper())):
        return Kind.MEMSET
    if _SYNC_RE.search(task_type) or _SYNC_RE.search(name):
        return Kind.OTHER
    if not task_type:  # no type, or one that says nothing: an op's name is compute, a task type's is not
        return Kind.OTHER if _TASK_TYPE_NAME_RE.match(name) else Kind.KERNEL
    return Kind.OTHER


class Ids(dict):
    """value -> dense id in order of first sight; None -> NONE."""

    def __init__(self):
        super().__init__({None: NONE})

    def __missing__(self, key):
        new = self[key] = len(self) - 1
        return new

    def values_in_order(self) -> list:
        return list(self)[1:]


@dataclass
class TraceData:
    """What trace_view.json gave: event columns (EVENT_COLUMNS, string ids into the table's strings)."""

    events: dict[str, np.ndarray] = field(default_factory=dict)
    device_mask: np.ndarray | None = None  # Ascend Hardware tasks and HCCL group ops (the merge's candidates)
    process_names: dict[int, str] = field(default_factory=dict)
    thread_names: dict[str, str] = field(default_factory=dict)
    devices: set[int] = field(default_factory=set)
    hardware_pid: int = NONE
    overlap: Any = None  # side table Columns (overlap_analysis) or None
    counters: Any = None  # side table Columns (npu_counters) or None

    def __len__(self) -> int:
        return len(self.events.get("ts", ()))


def _ints(values: tuple) -> np.ndarray:
    """to_int of int args decoded with INT_ABSENT for absence -> int64, INT_ABSENT where unknown."""
    try:
        a = np.fromiter(values, np.int64, len(values))
    except (TypeError, ValueError, OverflowError):
        a = np.fromiter((dec.INT_ABSENT if (v := to_int(x)) is None else v for x in values), np.int64,
                        len(values))
        return a
    return np.where((a == dec.INT_ABSENT) | (np.abs(a) < 1 << 62), a, dec.INT_ABSENT)


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
        self.ids = {k: Ids() for k in ("name", "cat", "pid", "tid", "dims", "stack", "task", "dtype", "flow")}
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
        events, bad, counter_args = got
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
        if len(counter_rows):
            args = {k: counter_args[int(i)] for k, i in zip(counter_rows.tolist(), other[counter_rows].tolist())}
            self.counters.add(self, cols, counter_rows.tolist(), seq[other], args)
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
        for attr, space in (("dims", "dims"), ("stack", "stack"), ("task_type", "task"), ("data_type", "dtype")):
            vals = list(map(attrgetter(attr), args))
            rows = [i for i, v in enumerate(vals) if v is not None]
            if rows:
                texts = [v if type(v) is str else str(v) for v in itemgetter(*rows)(vals)] if len(rows) > 1 \
                    else [str(vals[rows[0]])]
                out[attr] = (np.array(rows, np.int64) + self.n, self._id(space, texts))
        for attr in ("pstream", "conn", "count", "size", "sid"):
            a = _ints(tuple(map(attrgetter(attr), args)))
            rows = np.flatnonzero(a != dec.INT_ABSENT)
            if len(rows):
                out[attr] = (rows + self.n, a[rows])
        self.sparse.append(out)

    def _flows(self, cols: list, rows: list[int], seq: np.ndarray) -> None:
        cat, name = cols[2], cols[1]
        rows = [i for i in rows if cat[i] == "async_npu" or name[i] == "torch_to_npu"]
        if not rows:
            return
        ts, ok = us_to_ns_column([cols[5][i] for i in rows])
        self.flows.append({"ph": np.array([cols[0][i] for i in rows]), "id": self._id("flow", [cols[7][i] for i in rows]),
                           "pid": self._id("pid", [cols[3][i] for i in rows]),
                           "tid": self._id("tid", [cols[4][i] for i in rows]),
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


def _decode_all(path: str, display: str, problems: list[Problem], parse: _Parse) -> bool:
    """Feed every piece of the file to parse; False (with an error Problem) when the file is no usable array."""
    def on_utf8():
        parse.utf8 += 1
    try:
        plan = dec.plan_file(path)
    except OSError as e:
        problems.append(Problem(display, f"cannot read: {e}"))
        return False
    except _json.InputError as e:
        problems.append(Problem(display, e.problem))
        return False
    try:
        if plan is not None:
            from .trace_merge import read_ranges
            read_ranges(plan, parse, on_utf8)
            return True
        return _decode_buffer(path, display, problems, parse, on_utf8)
    except msgspec.DecodeError as e:
        problems.append(Problem(display, f"not valid JSON (truncated or still being written?): {e}"))
    except RecursionError:
        problems.append(Problem(display, TOO_DEEP))
    return False


def _decode_buffer(path: str, display: str, problems: list[Problem], parse: _Parse, on_utf8) -> bool:
    buf = read_bytes(path, display, problems)
    if buf is None:
        return False
    buf = bytearray(buf)
    head = bytes(buf[:64]).lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if head == b"{":  # tolerate the {"traceEvents": [...]} form
        top = msgspec.json.decode(buf, type=dict[str, msgspec.Raw])
        events = top.get("traceEvents")
        if events is None or bytes(events[:1]) != b"[":
            problems.append(Problem(display, "expected a JSON array of trace events"))
            return False
        lo, hi = _json.value_span(buf, events)
        for got in _json.iter_chunks(buf, lo, hi, dec.decode_piece, on_utf8):
            parse.piece(got)
        return True
    if head != b"[":
        msgspec.json.decode(buf)  # the precise syntax error, or a value that is no array
        problems.append(Problem(display, "expected a JSON array of trace events"))
        return False
    for got in dec.iter_buffer(buf, on_utf8):
        parse.piece(got)
    return True


def read_trace(path: str, display: str, problems: list[Problem], strings, device_hint: int = NONE,
               comm_groups: dict[str, str] | None = None) -> TraceData | None:
    """Parse trace_view.json into columns (strings interned into `strings`); None (and an error
    Problem) when it cannot be parsed."""
    parse = _Parse()
    if not _decode_all(path, display, problems, parse):
        return None
    from .trace_kinds import finish
    td, unbound = finish(parse, strings, device_hint, comm_groups or {})
    if parse.bad:
        problems.append(Problem(display, f"{parse.bad} event(s) without a usable timestamp skipped", "warning"))
    if parse.utf8:
        problems.append(Problem(display, "not valid UTF-8 in places; undecodable bytes replaced", "warning"))
    if unbound:
        problems.append(Problem(display, f"{unbound} torch_to_npu flow(s) could not be bound to a host op "
                                         f"and a device task", "warning"))
    return td
