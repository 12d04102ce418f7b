"""The one columnar shape every reader produces and every analysis consumes.

An `EventTable` holds one window of one rank: duration events as parallel numpy
columns (never one Python object per event), memory records as a second set of
columns, interned strings, and the window's metadata. Units are fixed here, once:
time in integer nanoseconds (absolute, as the profiler clock gave them), sizes in
bytes. Readers convert; nothing downstream converts again.
"""
from __future__ import annotations

import enum
import json
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from canning_tb.util import safe_files

from .side_tables import Columns, check_rows

NONE = -1  # "absent" in every integer column (ids, correlation, device, stream, bytes)


class Kind(enum.IntEnum):
    """What an event is, independent of which profiler wrote it."""

    OTHER = 0
    CPU_OP = 1  # aten / c10d / torch_npu operators on the host ("cpu_op", 2021 "Operator")
    USER_ANNOTATION = 2  # record_function ranges, ProfilerStep#N, DataLoader ranges
    PYTHON_FUNCTION = 3  # python_function (with_stack / with_modules)
    RUNTIME = 4  # cuda_runtime / cuda_driver / 2021 "Runtime" / AscendCL / CANN API
    KERNEL = 5  # device compute: GPU kernels, NPU AI Core / AI Vector / AI CPU / MIX tasks
    MEMCPY = 6  # device copies (gpu_memcpy, NPU MEMCPY tasks)
    MEMSET = 7
    GPU_USER_ANNOTATION = 8  # record_function ranges projected on the device
    COMM_KERNEL = 9  # device-side communication: NCCL/RCCL kernels, HCCL tasks (hcom_*)


_COMM_KERNEL_RE = re.compile(r"^(nccl|ncclDevKernel|ncclKernel|rccl|hcom_|hccl|Hccl)", re.I)
# expert-parallel token exchange (an all-to-all): DeepEP's dispatch / combine (demangled and mangled),
# pplx-kernels, TensorRT-LLM's MoE all-to-all, AMD MoRI's EP kernels
EP_EXCHANGE_RE = re.compile(
    r"deep_ep::\w+::\w*(dispatch|combine)\b|_ZN7deep_ep\d+(?:intranode|internode|internode_ll)\d+\w*?(?:dispatch|combine)"
    r"(?=[IE])|pplx::(?:\w+::)*\w*(?:[Dd]ispatch|[Cc]ombine)|moeA2A\w*(?:Dispatch|Combine)|[Mm]oe_?[Aa]2[Aa]|"
    r"mori::\w*(?:::\w+)*(?:Dispatch|Combine)|EpDispatch|EpCombine|all_?to_?all\w*[Kk]ernel")
# collective kernel families named inside a (demangled, templated) kernel name: NCCL, torch
# symmetric memory (multimem / one-shot / two-shot all-reduce, all-gather ...), vLLM's custom
# all-reduce, NVSHMEM's transfers, the expert-parallel exchange above
_COMM_KERNEL_IN_RE = re.compile(
    r"ncclKernel|ncclDevKernel|(multimem|one_shot|two_shot)_\w*(all_reduce|all_gather|reduce_scatter|allreduce)"
    r"|symmetric_memory::|cross_device_reduce|nvshmemi?_\w*kernel")


def is_comm_kernel_name(name: str) -> bool:
    """Device events that are collectives rather than compute (shared by all readers)."""
    return bool(_COMM_KERNEL_RE.match(name) or _COMM_KERNEL_IN_RE.search(name) or EP_EXCHANGE_RE.search(name))


# Column name -> dtype. All columns of a table have the same length.
EVENT_COLUMNS: dict[str, Any] = {
    "ts": np.int64,  # start, ns
    "dur": np.int64,  # duration, ns, >= 0
    "kind": np.uint8,  # Kind
    "name": np.int32,  # string id
    "cat": np.int32,  # string id of the raw category as written in the file
    "pid": np.int64,
    "tid": np.int64,
    "device": np.int32,  # device index for device events, NONE on the host
    "stream": np.int64,  # device stream / NPU stream, NONE on the host
    "correlation": np.int64,  # runtime launch <-> device event (same value on both)
    "external_id": np.int64,  # host op <-> its runtime launches and device events
    "shapes": np.int32,  # string id of the input shapes, e.g. "[[32, 3, 224, 224], []]"
    "stack": np.int32,  # string id of the call stack "file(line): func;file(line): func"
    "core": np.int32,  # string id: NPU accelerator core (AI_CORE, AI_VECTOR_CORE, AI_CPU, MIX_AIC, ...)
    "blocks": np.int64,  # NPU block dim / GPU blocks (grid product), NONE if unknown
    "bytes": np.int64,  # bytes moved by a collective or copy, NONE if unknown
    "group": np.int32,  # string id of the communication group, NONE if none
    # string id of the operator's other arguments the FLOPs / bytes models read (ingest/op_args.py:
    # input dtypes, concrete scalar inputs, NPU kernel type, formats, output shapes), NONE if none
    "args": np.int32,
}

# Optional per-event measurements some formats carry for device work (EventTable.metrics):
# name -> float64 column as long as the events, NaN where the event has none. Only present when
# the file has them. GPU (Kineto kernel args): blocks per SM, estimated achieved occupancy (%),
# registers per thread, shared memory (bytes). NPU (kernel_details.csv / TASK_PMU_INFO): the PMU
# ratios (aic_mac_ratio, aiv_vec_ratio ...) under their CANN names, `aic_time_ns` / `aiv_time_ns`
# (the cube / vector core time the ratios are of), `mix_block_dim`, `cube_utilization_pct`.
METRIC_BLOCKS_PER_SM = "blocks_per_sm"
METRIC_OCCUPANCY = "occupancy_pct"
METRIC_REGISTERS = "registers_per_thread"
METRIC_SHARED_MEMORY = "shared_memory_bytes"
METRIC_AIC_TIME = "aic_time_ns"
METRIC_AIV_TIME = "aiv_time_ns"
METRIC_MIX_BLOCK_DIM = "mix_block_dim"
# host operators: the FLOPs the profiler itself counted (torch_npu's `flops` arg with with_flops=True)
METRIC_FLOPS = "flops"

MEMORY_COLUMNS: dict[str, Any] = {
    "ts": np.int64,  # ns
    "device": np.int32,  # string id: "CPU", "cuda:0", "npu:0"
    "bytes": np.int64,  # signed change (+alloc, -free); 0 for a pure sample
    "addr": np.int64,  # block address, NONE if unknown
    "allocated": np.int64,  # total allocated after this record, NONE if unknown
    "reserved": np.int64,  # total reserved after this record, NONE if unknown
    "active": np.int64,  # total active (NPU), NONE if unknown
    "component": np.int32,  # string id: Ascend component (PTA, GE, APP, PTA+GE, WORKSPACE); NONE otherwise
    "op": np.int32,  # string id of the operator that made the record, when the file says so
}


class Strings:
    """Interned strings: columns hold ids into `values`."""

    def __init__(self, values: list[str] | None = None):
        self.values: list[str] = list(values or [])
        self._ids: dict[str, int] = {v: i for i, v in enumerate(self.values)}

    def id(self, s: str | None) -> int:
        if s is None:
            return NONE
        i = self._ids.get(s)
        if i is None:
            i = len(self.values)
            self.values.append(s)
            self._ids[s] = i
        return i

    def find(self, s: str) -> int:
        """The id of s, or NONE when s never occurs (no interning)."""
        return self._ids.get(s, NONE)

    def __getitem__(self, i: int) -> str | None:
        return None if i < 0 else self.values[i]

    def __len__(self) -> int:
        return len(self.values)


@dataclass
class Problem:
    """Something wrong in the input: which file, what, and whether results are still sound."""

    file: str
    message: str
    severity: str = "error"  # "error": this part is missing; "warning": read, but be careful

    def __str__(self) -> str:
        return f"{self.file}: {self.message}"


class InputError(Exception):
    """A file that cannot be read at all; the message names the file and the problem."""

    def __init__(self, file: str, message: str):
        super().__init__(f"{file}: {message}")
        self.file = file
        self.problem = message


@dataclass
class Meta:
    """What the window is, beside its events."""

    format: str = ""  # "kineto" | "ascend" | "canning"
    rank: int = 0
    world_size: int = 1
    local_rank: int = NONE
    host: str = ""
    pid: int = NONE
    worker: str = ""
    # devices: [{"kind": "cuda"|"npu"|"cpu", "index": 0, "name": ..., "memory": bytes, "compute_capability": "8.0", ...}]
    devices: list[dict] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)  # versions, profiler settings, world size ...
    source_files: list[str] = field(default_factory=list)
    process_names: dict[int, str] = field(default_factory=dict)  # pid -> name
    thread_names: dict[str, str] = field(default_factory=dict)  # "pid:tid" -> name
    start_ns: int = NONE  # profiling window, when the file says so
    end_ns: int = NONE


def _empty(columns: dict[str, Any]) -> dict[str, np.ndarray]:
    return {k: np.zeros(0, dtype=t) for k, t in columns.items()}


@dataclass
class EventTable:
    events: dict[str, np.ndarray] = field(default_factory=lambda: _empty(EVENT_COLUMNS))
    memory: dict[str, np.ndarray] = field(default_factory=lambda: _empty(MEMORY_COLUMNS))
    strings: Strings = field(default_factory=Strings)
    meta: Meta = field(default_factory=Meta)
    problems: list[Problem] = field(default_factory=list)
    # Pre-aggregated tables some formats carry and a trace cannot give (Ascend step_trace_time.csv,
    # communication.json ...): table name -> rows, each table declared in side_tables.SIDE_TABLES.
    side: dict[str, list[dict]] = field(default_factory=dict)
    # Optional per-event measurements (METRIC_* above): name -> float64 column, NaN unknown.
    metrics: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.events["ts"])

    def name(self, row: int) -> str | None:
        return self.strings[int(self.events["name"][row])]

    def check(self) -> None:
        """Columns are complete, equally long and correctly typed (readers call this last)."""
        for cols, spec in ((self.events, EVENT_COLUMNS), (self.memory, MEMORY_COLUMNS)):
            n = None
            for k, t in spec.items():
                a = cols.get(k)
                if a is None or a.dtype != np.dtype(t):
                    raise AssertionError(f"column {k}: missing or not {np.dtype(t)}")
                if n is None:
                    n = len(a)
                elif len(a) != n:
                    raise AssertionError(f"column {k}: length {len(a)} != {n}")
        for name, table_rows in self.side.items():
            check_rows(name, table_rows)
        for name, col in self.metrics.items():
            if col.dtype != np.float64 or len(col) != len(self):
                raise AssertionError(f"metric {name}: not float64 or length {len(col)} != {len(self)}")

    # -- cache form: one .npz of columns plus one JSON of everything else ----------------------
    def save(self, path_prefix: str) -> None:
        """Write `<prefix>.npz` and `<prefix>.json` atomically (timeline and digest caches)."""
        arrays = {f"e_{k}": v for k, v in self.events.items()}
        arrays.update({f"m_{k}": v for k, v in self.memory.items()})
        metric_names = sorted(self.metrics)
        for i, k in enumerate(metric_names):
            arrays.update(_metric_arrays(f"x_{i}", self.metrics[k]))
        columnar = {k: v for k, v in self.side.items() if isinstance(v, Columns)}
        for name, table in columnar.items():  # big side tables travel as arrays, never as JSON rows
            arrays.update({f"s_{name}__{c}": a for c, a in table.data.items()})
        # safe_files: never through a link where the cache folder sits inside a logdir (.canning)
        safe_files.atomic_write(path_prefix + ".npz", write=lambda f: np.savez(f, **arrays))
        sidecar = {
            "strings": self.strings.values,
            "meta": self.meta.__dict__,
            "problems": [p.__dict__ for p in self.problems],
            "side": {k: v for k, v in self.side.items() if k not in columnar},
            "side_columns": {k: v.strings for k, v in columnar.items()},
            "metrics": metric_names,
            "rows": len(self),
        }
        # dumps, not dump: json.dump streams through the pure-Python encoder, seconds with the GIL held
        # for a big window's sidecar while the digest is built beside this write
        text = json.dumps(sidecar, default=_jsonable).encode("utf-8")
        safe_files.atomic_write(path_prefix + ".json", write=lambda f: f.write(text))

    @classmethod
    def load(cls, path_prefix: str, lazy: bool = False) -> "EventTable":
        """The cached table; `lazy`: each column is read from the file when first used (a viewer that
        needs two columns of a big window does not wait for all of them)."""
        # safe_files: a cache inside a logdir (.canning) is a regular file there, never a FIFO or a link out
        with safe_files.open_file(path_prefix + ".json", "r", encoding="utf-8") as f:
            sidecar = json.load(f)
        names = sidecar.get("metrics", [])  # the measurement columns are few: read at once
        side = sidecar.get("side", {})
        if lazy:
            archive = np.load(safe_files.open_file(path_prefix + ".npz"))  # kept open: columns are read later
            events, memory = LazyColumns(archive, "e_", EVENT_COLUMNS), LazyColumns(archive, "m_", MEMORY_COLUMNS)
            metrics = {k: _metric(archive, f"x_{i}", sidecar) for i, k in enumerate(names)}
            side.update(_side_columns(archive, sidecar))
        else:
            with safe_files.open_file(path_prefix + ".npz") as f, np.load(f) as z:
                events = {k: z[f"e_{k}"] for k in EVENT_COLUMNS}
                memory = {k: z[f"m_{k}"] for k in MEMORY_COLUMNS}
                metrics = {k: _metric(z, f"x_{i}", sidecar) for i, k in enumerate(names)}
                side.update(_side_columns(z, sidecar))
        meta = Meta(**sidecar["meta"])
        meta.process_names = {int(k): v for k, v in meta.process_names.items()}
        return cls(events=events, memory=memory, strings=Strings(sidecar["strings"]), meta=meta,
                   problems=[Problem(**p) for p in sidecar["problems"]], side=side,
                   metrics=metrics)


def _metric_arrays(key: str, column: np.ndarray) -> dict[str, np.ndarray]:
    """A metric as cached: its rows and values where most rows have none (an Ascend window's PMU figures
    are on its 24k kernel rows of 600k events), else the column."""
    rows = np.flatnonzero(~np.isnan(column))
    if 3 * len(rows) >= len(column):
        return {key: column}
    return {f"{key}_rows": rows.astype(_row_index_dtype(len(column))), f"{key}_values": column[rows]}


def _row_index_dtype(rows: int):
    """The narrowest type that numbers `rows` rows: int32 (half the cache of int64) below 2**31."""
    return np.int32 if rows < 2 ** 31 else np.int64


def _metric(archive, key: str, sidecar: dict) -> np.ndarray:
    if f"{key}_rows" not in archive.files:
        return archive[key]
    column = np.full(int(sidecar["rows"]), np.nan)
    column[archive[f"{key}_rows"]] = archive[f"{key}_values"]
    return column


def _side_columns(archive, sidecar: dict) -> dict[str, Columns]:
    """The side tables cached as arrays (save writes them as s_<table>__<column>)."""
    from .side_tables import SIDE_TABLES
    return {name: Columns(name, {c: archive[f"s_{name}__{c}"] for c in SIDE_TABLES[name].column_names}, strings)
            for name, strings in sidecar.get("side_columns", {}).items()}


class LazyColumns(Mapping):
    """Columns of a cached table read from its open .npz on first use, then kept (thread-safe)."""

    def __init__(self, archive, prefix: str, spec: dict[str, Any]):
        self._archive, self._prefix, self._spec = archive, prefix, spec
        self._read: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def __getitem__(self, name: str) -> np.ndarray:
        column = self._read.get(name)
        if column is None:
            if name not in self._spec:
                raise KeyError(name)
            with self._lock:
                column = self._read.get(name)
                if column is None:
                    column = self._read[name] = self._archive[self._prefix + name]
        return column

    def __iter__(self):
        return iter(self._spec)

    def __len__(self) -> int:
        return len(self._spec)


def _jsonable(o: Any) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


class ColumnBuilder:
    """Appends rows into typed column lists, then freezes them into numpy arrays.

    Readers that walk records one at a time use this; readers that already have arrays
    (CSV via numpy, SQLite) may build the columns directly.
    """

    def __init__(self, spec: dict[str, Any]):
        self.spec = spec
        self.cols: dict[str, list] = {k: [] for k in spec}
        zero = ("ts", "dur", "kind") if spec is EVENT_COLUMNS else ("ts", "bytes")
        self.defaults = {k: (0 if k in zero else NONE) for k in spec}

    def add(self, **values: Any) -> None:
        for k, col in self.cols.items():
            col.append(values.get(k, self.defaults[k]))

    def __len__(self) -> int:
        return len(self.cols["ts"])

    def freeze(self) -> dict[str, np.ndarray]:
        return {k: np.asarray(v, dtype=self.spec[k]) if v else np.zeros(0, dtype=self.spec[k])
                for k, v in self.cols.items()}


def blank_events(n: int) -> dict[str, np.ndarray]:
    """n events of every column at its default (ts, dur, kind 0; everything else NONE), to fill."""
    return {k: np.zeros(n, t) if k in ("ts", "dur", "kind") else np.full(n, NONE, t) for k, t in EVENT_COLUMNS.items()}


def sort_by_time(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Readers hand over rows ordered by start time (stable)."""
    order = np.argsort(cols["ts"], kind="stable")
    return {k: v[order] for k, v in cols.items()}


def sort_with_metrics(cols: dict[str, np.ndarray], metrics: dict[str, np.ndarray]):
    """sort_by_time for events and their metric columns together: (events, metrics)."""
    order = np.argsort(cols["ts"], kind="stable")
    return {k: v[order] for k, v in cols.items()}, {k: v[order] for k, v in metrics.items()}


def metric_columns(pairs, n: int) -> dict[str, np.ndarray]:
    """EventTable.metrics of n rows from (row index, {metric name: value}) pairs (row readers)."""
    pairs = [(i, m) for i, m in pairs if m]
    out = {name: np.full(n, np.nan) for name in sorted({name for _, m in pairs for name in m})}
    for i, m in pairs:
        for name, v in m.items():
            out[name][i] = v
    return out
