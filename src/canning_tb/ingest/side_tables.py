"""Declared side tables: the pre-aggregated figures a format carries beside its events.

Some profilers measure figures themselves that a trace cannot give back (CANN's step trace,
its per-operator communication times, link matrix, memory per module). A reader hands them to
analysis as side tables: each one declared here with its columns, their types, units and
meaning, as EVENT_COLUMNS declares the events. Readers write rows through `put`, which checks
every row against the declaration; analysis reads rows through `rows` and never sees a file
format (no CSV header, no MB/KB/µs: the reader converted to int ns and int bytes).

A value may be None where the file says N/A. Where each table comes from, file by file, is in
docs/formats/ascend.md.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from operator import itemgetter
from dataclasses import dataclass
from typing import Any

import numpy as np

_TYPES = {"int": (int,), "float": (float, int), "str": (str,), "bool": (bool,)}


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # "int" | "float" | "str" | "bool"
    unit: str  # "ns", "bytes", "GB/s", "count", "ratio", "" (none)
    doc: str


@dataclass(frozen=True)
class SideTable:
    name: str
    doc: str
    columns: tuple[Column, ...]

    @functools.cached_property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


def _table(name: str, doc: str, *cols: tuple[str, str, str, str]) -> SideTable:
    return SideTable(name, doc, tuple(Column(*c) for c in cols))


_STEP = ("step", "int", "", "CANN's step id (ProfilerStep#N); None when the file has no step column value")
_COMM_KEY = (
    ("step", "int", "", "CANN's step id"),
    ("kind", "str", "", "'collective' or 'p2p', as CANN files the operator"),
    ("op", "str", "", "HCCL operator name, e.g. hcom_allReduce__586_0_1 (one per call)"),
    ("group", "str", "", "communicator (HCCL group name), '' when unknown"),
)

SIDE_TABLES: dict[str, SideTable] = {t.name: t for t in (
    _table("step_trace", "CANN's own split of each step on the device (step_trace_time.csv, analysis.db StepTraceTime)",
           _STEP,
           ("computing_ns", "int", "ns", "device computing (Overlap Analysis 'Computing')"),
           ("communication_not_overlapped_ns", "int", "ns", "communication not hidden by computing"),
           ("overlapped_ns", "int", "ns", "communication hidden by computing"),
           ("communication_ns", "int", "ns", "all communication"),
           ("free_ns", "int", "ns", "device neither computing nor communicating"),
           ("stage_ns", "int", "ns", "step time minus bubble"),
           ("bubble_ns", "int", "ns", "pipeline-parallel receive time (hcom_receive*)"),
           ("communication_not_overlapped_exclude_receive_ns", "int", "ns",
            "communication not overlapped, pipeline receives excluded"),
           ("preparing_ns", "int", "ns", "step start to the first device task")),
    _table("comm_ops", "CANN's communication time per HCCL operator call (communication.json "
                       "'Communication Time Info', analysis.db CommAnalyzerTime); 'Total Op Info' is not a call and "
                       "is left out",
           *_COMM_KEY,
           ("start_ns", "int", "ns", "start of the operator (profiler clock)"),
           ("elapse_ns", "int", "ns", "operator duration"),
           ("transit_ns", "int", "ns", "time moving data"),
           ("wait_ns", "int", "ns", "time waiting (for the peer, or notify waits)"),
           ("synchronization_ns", "int", "ns", "waiting for the other ranks to arrive, before the first transfer"),
           ("idle_ns", "int", "ns", "elapse - transit - wait")),
    _table("comm_bandwidth", "Bytes and time per link type of each HCCL operator call (communication.json "
                             "'Communication Bandwidth Info', analysis.db CommAnalyzerBandwidth)",
           *_COMM_KEY,
           ("transport", "str", "", "HCCS, PCIE, SIO, RDMA, or SDMA (CANN's sum of the on-node HCCS+PCIE+SIO)"),
           ("size_bytes", "int", "bytes", "bytes moved over this link type"),
           ("time_ns", "int", "ns", "transfer time over this link type"),
           ("bandwidth_gbps", "float", "GB/s", "CANN's bandwidth, 1e9 bytes per second"),
           ("large_packet_ratio", "float", "ratio", "share of large packets")),
    _table("comm_packets", "Packet size distribution per link type and call ('Size Distribution')",
           *_COMM_KEY,
           ("transport", "str", "", "link type"),
           ("packet_bytes", "int", "bytes", "packet size"),
           ("count", "int", "count", "packets of that size"),
           ("time_ns", "int", "ns", "their total transfer time")),
    _table("comm_matrix", "Links between ranks (communication_matrix.json, analysis.db CommAnalyzerMatrix). "
                          "`aggregate` marks CANN's own sums over the calls of a step (keys '<kind>-total', "
                          "'<kind>-top1', ..., or 2023's 'Total Op Info'): only the per-call or only the total "
                          "rows may be added up, never both",
           ("step", "int", "", "CANN's step id"),
           ("kind", "str", "", "'collective' or 'p2p'"),
           ("group", "str", "", "communicator, '' when unknown"),
           ("link", "str", "", "the file's key for the cell set (e.g. allreduce-total, hcom_allReduce__586_0_1)"),
           ("aggregate", "str", "", "'total' (CANN's sum over the step), 'top'/'middle'/'bottom' (CANN's slices), "
                                    "'' for one operator call"),
           ("src", "int", "", "source rank"), ("dst", "int", "", "destination rank"),
           ("transport", "str", "", "HCCS, PCIE, SIO, RDMA, LOCAL"),
           ("bytes", "int", "bytes", "bytes moved"), ("time_ns", "int", "ns", "transfer time"),
           ("bandwidth_gbps", "float", "GB/s", "CANN's bandwidth"),
           ("op", "str", "", "the HCCL operator the cell belongs to")),
    _table("comm_groups", "Communicators of the job (profiler_metadata.json parallel_group_info, ascend_pytorch_profiler "
                          "META_DATA)",
           ("group", "str", "", "HCCL communicator name, as in communication.json's 'op@group' keys"),
           ("name", "str", "", "the framework's name for it (dp, tp, pp, default_group ...)"),
           ("rank_in_group", "int", "", "this rank's index in the group"),
           ("ranks", "str", "", "global ranks of the group, comma separated")),
    _table("op_statistic", "CANN's kernel time per op type and core (op_statistic.csv)",
           ("op_type", "str", "", "kernel type"), ("core_type", "str", "", "accelerator core"),
           ("count", "int", "count", "calls"), ("total_ns", "int", "ns", "total"), ("min_ns", "int", "ns", "minimum"),
           ("avg_ns", "int", "ns", "mean"), ("max_ns", "int", "ns", "maximum")),
    _table("operator_details", "One row per torch operator call with its times (operator_details.csv); read only when "
                               "trace_view.json is missing or unusable",
           ("name", "str", "", "operator"), ("input_shapes", "str", "", "normalised shapes, '[[1, 2], []]'"),
           ("call_stack", "str", "", "frames innermost first, ';' separated"),
           ("host_self_ns", "int", "ns", "host self time"), ("host_total_ns", "int", "ns", "host total time"),
           ("device_self_ns", "int", "ns", "device self time"), ("device_total_ns", "int", "ns", "device total time")),
    _table("operator_memory", "Allocations by operator (operator_memory.csv, OP_MEMORY)",
           ("name", "str", "", "operator (aten::empty_strided, cann::<GE op>)"),
           ("bytes", "int", "bytes", "block size"),
           ("alloc_ns", "int", "ns", "allocation time, -1 unknown"),
           ("free_ns", "int", "ns", "release time, -1 when not freed in the window"),
           ("device", "str", "", "'npu:N' or 'CPU'")),
    _table("npu_module_mem", "Memory reserved per CANN module over time (npu_module_mem.csv, NPU_MODULE_MEM)",
           ("component", "str", "", "CANN module (SLOG, HCCL, RUNTIME, FMK ...)"),
           ("ts_ns", "int", "ns", "sample time"), ("reserved_bytes", "int", "bytes", "reserved by the module"),
           ("device", "str", "", "'npu:N' or 'CPU'")),
    _table("overlap_analysis", "CANN's Overlap Analysis intervals (trace_view.json process, OVERLAP_ANALYSIS table)",
           ("name", "str", "", "Computing, Communication, Communication(Not Overlapped), Free"),
           ("start_ns", "int", "ns", "start"), ("end_ns", "int", "ns", "end")),
    _table("npu_counters", "The NPU's sampled counters (trace_view.json 'ph':'C' events; profiler db AICORE_FREQ, HBM, "
                           "LLC, NPU_MEM, ACC_PMU, SOC_BANDWIDTH_LEVEL): one row per sample of one series",
           ("group", "str", "", "the counter's process in trace_view.json: AI Core Freq, HBM, LLC, NPU MEM, Acc PMU, "
                                "QoS, Stars Soc Info"),
           ("counter", "str", "", "the series, e.g. 'HBM 0/Read', 'APP/HBM', 'read_bandwidth acc_id 1'"),
           ("unit", "str", "", "the unit of `value`: MHz, bytes, bytes/s, or the file's own ('%', '' for levels)"),
           ("device", "str", "", "'npu:N'"),
           ("ts_ns", "int", "ns", "sample time"),
           ("value", "float", "", "the sample, in `unit` (KB and MB/s converted to bytes and bytes/s)")),
    _table("step_marks", "The steps as the training loop marked them (prof.step()), when the trace has no "
                         "ProfilerStep ranges: from the window's manifest (step_times_ns) or the profile object, "
                         "moved onto the trace's clock (ingest/step_marks.py)",
           ("step", "int", "", "step number (the profile's count of prof.step() calls)"),
           ("start_ns", "int", "ns", "the step's start, on the trace's clock"),
           ("end_ns", "int", "ns", "the step's end, on the trace's clock")),
)}


class SideTableError(ValueError):
    """A reader wrote a row that does not fit its declaration (a bug in the reader, not bad input)."""


INT_NULL = np.iinfo(np.int64).min  # None in an int column of Columns (values lie within +-2**62)
_KIND_DTYPE = {"int": np.int64, "float": np.float64, "str": np.int32, "bool": np.int8}


class Columns(Sequence):
    """A side table held as numpy columns (for the tables that grow with the window: counters, memory
    by operator ...): no Python object per row is kept. It reads as the list of row dicts it stands for
    (iteration builds each row on the fly), so analysis sees one shape whatever the reader chose.
    Encoding: int -> int64 (INT_NULL for None), float -> float64 (NaN for None: readers never keep a
    NaN measurement), str -> int32 ids into `strings[column]` (-1 for None), bool -> int8 (-1 None)."""

    _BLOCK = 65536  # rows converted to Python values at once while iterating

    def __init__(self, name: str, data: dict[str, np.ndarray], strings: dict[str, list] | None = None):
        self.name, self.data, self.strings = name, data, strings or {}
        self.spec = SIDE_TABLES[name]

    @classmethod
    def build(cls, table: str, /, **cols: Any) -> "Columns":
        """From arrays (encoded as above), lists of Python values, or (ids, strings) pairs for str columns."""
        spec = SIDE_TABLES[table]
        data, strings = {}, {}
        for c in spec.columns:
            v = cols[c.name]
            if c.type == "str":
                if isinstance(v, tuple):
                    data[c.name], strings[c.name] = np.asarray(v[0], np.int32), list(v[1])
                else:
                    data[c.name], strings[c.name] = intern_texts(v)
            elif isinstance(v, np.ndarray):
                data[c.name] = v.astype(_KIND_DTYPE[c.type], copy=False)
            else:
                data[c.name] = _encode(v, c.type)
        return cls(table, data, strings)

    def __len__(self) -> int:
        first = self.spec.columns[0].name
        return len(self.data[first])

    def _values(self, col: Column, lo: int, hi: int) -> list:
        a = self.data[col.name][lo:hi]
        if col.type == "str":
            lookup = np.array(list(self.strings[col.name]) + [None], dtype=object)
            return lookup[a].tolist()  # id -1 picks the trailing None
        out = a.tolist()
        null = np.isnan(a) if col.type == "float" else (a == (INT_NULL if col.type == "int" else -1))
        for k in np.flatnonzero(null).tolist():
            out[k] = None
        if col.type == "bool":
            out = [None if v is None else bool(v) for v in out]
        return out

    def __iter__(self):
        names = self.spec.column_names
        for lo in range(0, len(self), self._BLOCK):
            hi = min(lo + self._BLOCK, len(self))
            cols = [self._values(c, lo, hi) for c in self.spec.columns]
            for vals in zip(*cols):
                yield dict(zip(names, vals))

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError(i)
        i %= n
        return {c.name: self._values(c, i, i + 1)[0] for c in self.spec.columns}

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and len(self) == len(other) and list(self) == list(other)

    __hash__ = None

    def check(self) -> None:
        want = set(self.spec.column_names)
        if set(self.data) != want:
            raise SideTableError(f"side table {self.name}: columns {sorted(set(self.data) ^ want)} differ "
                                 f"from the declaration")
        n = len(self)
        for c in self.spec.columns:
            a = self.data[c.name]
            if a.dtype != np.dtype(_KIND_DTYPE[c.type]) or a.ndim != 1 or len(a) != n:
                raise SideTableError(f"side table {self.name}: column {c.name} is not {c.type} of {n} rows")
            if c.type == "str" and len(a) and int(a.max(initial=-1)) >= len(self.strings.get(c.name, ())):
                raise SideTableError(f"side table {self.name}: column {c.name} names an unknown string")


class _Codes(dict):
    """str -> dense code in order of first sight (None -> -1)."""

    def __init__(self):
        super().__init__({None: -1})

    def __missing__(self, key):
        if not isinstance(key, str):
            raise SideTableError(f"side table value {key!r} is not str")
        code = self[key] = len(self) - 1
        return code


def intern_texts(values) -> tuple[np.ndarray, list]:
    """(a code per value, the distinct texts in order of first sight): a str column as Columns keeps it."""
    codes = _Codes()
    out = np.fromiter(map(codes.__getitem__, values), np.int32, len(values))
    return out, list(codes)[1:]


def _encode(values, kind: str) -> np.ndarray:
    if kind == "float":
        return np.array([np.nan if v is None else float(v) for v in values], np.float64)
    null = INT_NULL if kind == "int" else -1
    return np.array([null if v is None else int(v) for v in values], _KIND_DTYPE[kind])


def check_rows(name: str, rows) -> None:
    spec = SIDE_TABLES.get(name)
    if spec is None:
        raise SideTableError(f"side table {name!r} is not declared")
    if isinstance(rows, Columns):
        if rows.name != name:
            raise SideTableError(f"side table {name!r} holds the columns of {rows.name!r}")
        rows.check()
        return
    want = set(spec.column_names)
    for i, row in enumerate(rows):
        if row.keys() != want:
            raise SideTableError(f"side table {name}, row {i}: columns {sorted(set(row) ^ want)} differ "
                                 f"from the declaration")
    for col in spec.columns:  # a column at a time: the types present, then the row of a wrong one
        allowed = set(_TYPES[col.type]) | {type(None)} | ({bool} if col.type == "bool" else set())
        if set(map(type, map(itemgetter(col.name), rows))) <= allowed - ({bool} if col.type != "bool" else set()):
            continue
        for i, row in enumerate(rows):
            v = row[col.name]
            if v is not None and (not isinstance(v, _TYPES[col.type]) or (col.type != "bool" and isinstance(v, bool))):
                raise SideTableError(f"side table {name}, row {i}: {col.name}={v!r} is not {col.type}")


def put(side: dict, name: str, rows) -> None:
    """Store a side table (a list of row dicts, or Columns) after checking it (empty tables are not stored)."""
    check_rows(name, rows)
    if len(rows):
        side[name] = rows


def row(table_name: str, /, **values: Any) -> dict:
    """A row of a declared table: undeclared names are an error, missing columns are None."""
    spec = SIDE_TABLES[table_name]
    extra = set(values) - set(spec.column_names)
    if extra:
        raise SideTableError(f"side table {table_name}: undeclared column(s) {sorted(extra)}")
    return {c: values.get(c) for c in spec.column_names}


def where_equal(table_rows, want: tuple[str, ...], **equal: str) -> dict[str, list | np.ndarray]:
    """The columns `want` of the rows whose str columns equal `equal`, without a dict per row when the
    table is held as Columns (a big counter table has hundreds of thousands of rows): numpy arrays
    there (encoded as Columns says), lists of the rows' values for a list of dicts."""
    if isinstance(table_rows, Columns):
        mask = np.ones(len(table_rows), bool)
        for name, value in equal.items():
            ids = table_rows.strings.get(name, [])
            mask &= table_rows.data[name] == (ids.index(value) if value in ids else -2)
        return {c: table_rows.data[c][mask] for c in want}
    kept = [r for r in table_rows if all(r[k] == v for k, v in equal.items())]
    return {c: [r[c] for r in kept] for c in want}


def max_by(table_rows, keys: tuple[str, str], value: str) -> dict[tuple, int]:
    """{(key0, key1): the largest `value`} over the rows, keys in the order they first appear, a None value
    counting as -1 (an int column); for a Columns table without a Python value per row (npu_module_mem has
    128k rows per 360 MB rank)."""
    if not isinstance(table_rows, Columns):
        out: dict[tuple, int] = {}
        for r in table_rows:
            key, v = (r[keys[0]], r[keys[1]]), r[value]
            out[key] = max(out.get(key, -1), -1 if v is None else v)
        return out
    if not len(table_rows):
        return {}
    codes = [table_rows.data[k].astype(np.int64) + 1 for k in keys]  # str ids, -1 (None) -> 0
    v = table_rows.data[value]
    v = np.where(v == INT_NULL, -1, v)
    _, first, inverse = np.unique(codes[0] * (int(codes[1].max()) + 1) + codes[1], return_index=True,
                                  return_inverse=True)  # first: each key's first row
    best = np.full(len(first), np.iinfo(np.int64).min)
    np.maximum.at(best, inverse.reshape(-1), v)
    seen = np.argsort(first, kind="stable")  # as a loop over the rows would meet them
    first, best = first[seen], best[seen]
    names = [[None if int(c) < 0 else table_rows.strings[k][int(c)] for c in table_rows.data[k][first]] for k in keys]
    return {(a, b): max(int(m), -1) for a, b, m in zip(*names, best)}


def rows(side: dict, name: str):
    """The rows of a side table ([] when the window has none): a list of dicts, or Columns that read as one."""
    if name not in SIDE_TABLES:
        raise SideTableError(f"side table {name!r} is not declared")
    return side.get(name) or []
