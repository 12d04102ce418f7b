"""The end of a trace_view.json read: the columns of all pieces joined, each event given its Kind and
columns by its process (Python, CANN, Ascend Hardware, HCCL, Overlap Analysis; docs/formats/ascend.md),
decided per distinct process, thread, category, name and task type, never per event in Python."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from canning_tb.ingest import op_args
from canning_tb.ingest import side_tables as side
from canning_tb.ingest.ascend.csv.rows import norm_shapes, norm_stack, to_int
from canning_tb.ingest.ascend.hardware import DTYPE_BYTES, STREAM_RE, classify_hardware
from canning_tb.ingest.table import METRIC_FLOPS, NONE, Kind, blank_events, is_comm_kernel_name
from canning_tb.util.arrays import distinct

from . import decode as dec
from . import flows as trace_flows
from .parse import TEXT_ARGS, flow_phase


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
    metrics: dict[str, np.ndarray] = field(default_factory=dict)  # METRIC_FLOPS of host ops, when the file has it

    def __len__(self) -> int:
        return len(self.events.get("ts", ()))


PY, CANN, HW, HCCL, OVERLAP, OTHER, UNNAMED = range(7)
_HANDLERS = {"Python": PY, "CANN": CANN, "Ascend Hardware": HW, "HCCL": HCCL, "Overlap Analysis": OVERLAP, "": UNNAMED}


def _lookup(values: list, fn, dtype=np.int64) -> np.ndarray:
    """fn of each local value, as an array indexed by the local id (the extra last slot: id NONE)."""
    return np.array([fn(v) for v in values] + [fn(None)], dtype)


def _dense(parse, attr: str, n: int, absent) -> np.ndarray:
    dtype = np.int32 if attr in TEXT_ARGS else np.float64 if attr == "flops" else np.int64
    out = np.full(n, absent, dtype)
    for part in parse.sparse:
        if attr in part:
            rows, vals = part[attr]
            out[rows] = vals
    return out


class _Finish:
    def __init__(self, parse, strings, hint: int, comm_groups: dict[str, str]):
        self.p, self.s, self.hint, self.comm_groups = parse, strings, hint, comm_groups
        parts = parse.parts
        self.ev = {k: np.concatenate([q[k] for q in parts]) if parts else np.zeros(0, np.int64)
                   for k in ("ts", "dur", "combo")}
        parse.parts = []
        combo = self.ev.pop("combo").astype(np.int64)
        for i, k in enumerate(("name", "cat", "pid", "tid")):
            self.ev[k] = parse.combos.column(i)[combo] if len(combo) else np.zeros(0, np.int32)
        self.n = n = len(self.ev["ts"])
        self.names = parse.ids["name"].values_in_order()
        self.cats = parse.ids["cat"].values_in_order()
        pids = parse.ids["pid"].values_in_order()
        self.pid_int = _lookup(pids, lambda v: NONE if (x := to_int(v)) is None else x)
        self.pname = [parse.pnames.get(i, "") for i in range(len(pids))] + [""]
        self.handler_of_pid = np.array([_HANDLERS.get(x, OTHER) for x in self.pname], np.int8)
        dev = [NONE if (x in ("Python", "CANN", "") or p < 0) else (hint if hint != NONE else p & 31)
               for x, p in zip(self.pname, self.pid_int.tolist())]
        self.dev_of_pid = np.array(dev, np.int64)
        self.out = blank_events(n)
        self.out["kind"][:] = Kind.OTHER
        self.handler = self.handler_of_pid[self.ev["pid"]]
        unnamed = self.handler == UNNAMED
        py_cat = _lookup(self.cats, lambda c: c in ("cpu_op", "python_function", "user_annotation"), bool)
        self.handler[unnamed] = np.where(py_cat[self.ev["cat"][unnamed]], PY, OTHER)
        self.host = np.zeros(n, bool)
        self.device = np.zeros(n, bool)
        self.devices: set[int] = set()
        self.metrics: dict[str, np.ndarray] = {}

    def ids(self, local: np.ndarray, values: list, fn=lambda v: v) -> np.ndarray:
        """Local ids -> ids of fn(value) in the table's strings."""
        table = _lookup(values, lambda v: NONE if v is None or (x := fn(v)) is None else self.s.id(x), np.int32)
        return table[local]

    def run(self) -> TraceData:
        ev, out = self.ev, self.out
        out["ts"], out["dur"] = ev["ts"], ev["dur"]
        out["name"] = self.ids(ev["name"], self.names)
        out["cat"] = self.ids(ev["cat"], self.cats)
        out["pid"] = self.pid_int[ev["pid"]]
        tids = self.p.ids["tid"].values_in_order()
        out["tid"] = _lookup(tids, lambda v: NONE if (x := to_int(v)) is None else x)[ev["tid"]]
        self.conn = _dense(self.p, "conn", self.n, dec.INT_ABSENT)
        self._python()
        self._cann()
        self._hardware(tids)
        self._hccl(tids)
        self._overlap_and_other()
        return self._data(tids)

    def _rows(self, handler: int) -> np.ndarray:
        return np.flatnonzero(self.handler == handler)

    def _correlation(self, rows: np.ndarray) -> None:
        c = self.conn[rows]
        self.out["correlation"][rows] = np.where(c == dec.INT_ABSENT, NONE, c)

    def _python(self) -> None:
        rows = self._rows(PY)
        if not len(rows):
            return
        cat, name = self.ev["cat"][rows], self.ev["name"][rows]
        pf = _lookup(self.cats, lambda c: c == "python_function", bool)[cat]
        ua = _lookup(self.cats, lambda c: c == "user_annotation", bool)[cat] | \
            _lookup(self.names, lambda v: isinstance(v, str) and v.startswith("ProfilerStep#"), bool)[name]
        op = _lookup(self.cats, lambda c: c in ("cpu_op", "operator"), bool)[cat]
        kind = np.where(pf, Kind.PYTHON_FUNCTION, np.where(ua, Kind.USER_ANNOTATION,
                                                           np.where(op, Kind.CPU_OP, Kind.OTHER)))
        self.out["kind"][rows] = kind
        host = rows[(kind == Kind.USER_ANNOTATION) | (kind == Kind.CPU_OP)]
        self.host[host] = True
        for attr, col, fn in (("dims", "shapes", norm_shapes), ("stack", "stack", norm_stack), ("itype", "args", _types)):
            local = _dense(self.p, attr, self.n, NONE)
            self.out[col][host] = self.ids(local[host], self.p.ids[TEXT_ARGS[attr]].values_in_order(), fn)
        flops = _dense(self.p, "flops", self.n, np.nan)[host]
        with np.errstate(invalid="ignore"):
            known = flops >= 0  # torch_npu counts them itself with with_flops=True; NaN / negative: unknown
        if known.any():
            self.metrics[METRIC_FLOPS] = np.full(self.n, np.nan)
            self.metrics[METRIC_FLOPS][host[known]] = flops[known]

    def _cann(self) -> None:
        rows = self._rows(CANN)
        self.out["kind"][rows] = Kind.RUNTIME
        self._correlation(rows)

    def _device_rows(self, rows: np.ndarray) -> None:
        dev = self.dev_of_pid[self.ev["pid"][rows]]
        self.out["device"][rows] = dev
        self.device[rows] = True
        self.devices.update(distinct(dev).tolist())

    def _thread_name(self, tids: list, rows: np.ndarray) -> tuple[list[str], np.ndarray]:
        """(thread name of each distinct (pid, tid) of rows, the index of each row's pair)."""
        pairs = (self.ev["pid"][rows].astype(np.int64) + 1) * (1 << 32) + self.ev["tid"][rows] + 1
        uniq, inverse = np.unique(pairs, return_inverse=True)
        names = [self.p.tnames.get((int(u >> 32) - 1, int(u & 0xFFFFFFFF) - 1), "") for u in uniq.tolist()]
        return names, inverse

    def _hardware(self, tids: list) -> None:
        rows = self._rows(HW)
        if not len(rows):
            return
        names, inverse = self._thread_name(tids, rows)
        from_name = np.array([int(m.group(1)) if (m := STREAM_RE.search(x)) else NONE for x in names], np.int64)
        ps = _dense(self.p, "pstream", self.n, dec.INT_ABSENT)[rows]
        self.out["stream"][rows] = np.where(ps != dec.INT_ABSENT, ps, from_name[inverse])
        task = _dense(self.p, "task_type", self.n, NONE)[rows]
        tasks = self.p.ids["task"].values_in_order()
        self.out["core"][rows] = self.ids(task, tasks, lambda v: v or None)
        self._correlation(rows)
        self._device_rows(rows)
        name = self.ev["name"][rows]
        pair = name.astype(np.int64) * (len(tasks) + 1) + np.where(task < 0, len(tasks), task)
        uniq, inverse = np.unique(pair, return_inverse=True)
        kinds = [classify_hardware(_text(self.names, int(u // (len(tasks) + 1))),
                                   _text(tasks, int(u % (len(tasks) + 1)))) for u in uniq.tolist()]
        self.out["kind"][rows] = np.array(kinds, np.uint8)[inverse]

    def _hccl(self, tids: list) -> None:
        rows = self._rows(HCCL)
        if not len(rows):
            return
        names, inverse = self._thread_name(tids, rows)
        group_thread = np.array([x.startswith("Group") for x in names], bool)[inverse]
        plane = np.array([x.startswith("Plane") for x in names], bool)[inverse]
        comm = _lookup(self.names, lambda v: isinstance(v, str) and is_comm_kernel_name(v), bool)[self.ev["name"][rows]]
        is_op = group_thread | (comm & ~plane)
        self._correlation(rows)
        dev = self.dev_of_pid[self.ev["pid"][rows]]
        self.devices.update(distinct(dev).tolist())
        self.out["device"][rows] = dev
        ops, subtasks = rows[is_op], rows[~is_op]
        self.out["stream"][ops] = NONE
        self.out["kind"][ops] = Kind.COMM_KERNEL
        self.out["core"][ops] = self.s.id("HCCL")
        self.out["bytes"][ops] = self._hccl_bytes(ops)
        self.out["group"][ops] = self._groups(ops, [names[i] for i in inverse[is_op].tolist()])
        self.device[ops] = True
        for attr, col in (("size", "bytes"), ("sid", "stream")):
            v = _dense(self.p, attr, self.n, dec.INT_ABSENT)[subtasks]
            self.out[col][subtasks] = np.where(v == dec.INT_ABSENT, NONE, v)

    def _hccl_bytes(self, ops: np.ndarray) -> np.ndarray:
        count = _dense(self.p, "count", self.n, dec.INT_ABSENT)[ops]
        dtype = _dense(self.p, "data_type", self.n, NONE)[ops]
        sizes = _lookup(self.p.ids["dtype"].values_in_order(), lambda v: DTYPE_BYTES.get(str(v).upper(), NONE))
        size = sizes[dtype]
        ok = (count != dec.INT_ABSENT) & (count >= 0) & (size != NONE)
        return np.where(ok, count * np.where(ok, size, 0), NONE)

    def _groups(self, ops: np.ndarray, thread_names: list[str]) -> np.ndarray:
        names = self.ev["name"][ops].tolist()
        return np.array([NONE if not (g := self.comm_groups.get(self.names[k]) or t or None) else self.s.id(g)
                         for k, t in zip(names, thread_names)], np.int32)

    def _overlap_and_other(self) -> None:
        rows = np.flatnonzero((self.handler == OVERLAP) | (self.handler == OTHER))
        self.out["device"][rows] = self.dev_of_pid[self.ev["pid"][rows]]

    def _data(self, tids: list) -> TraceData:
        ext, self.unbound = trace_flows.bind(_flow_columns(self.p), self.ev, self.host, self.device)
        self.out["external_id"] = ext
        self.p.flows = []
        td = TraceData(events=self.out, device_mask=self.device, devices=self.devices, metrics=self.metrics)
        for i, name in enumerate(self.pname[:-1]):
            pid = self.pid_int[i]
            if pid != NONE and self.p.pnames.get(i) is not None:
                td.process_names[int(pid)] = name
                if name == "Ascend Hardware":
                    td.hardware_pid = int(pid)
        pids = self.p.ids["pid"].values_in_order()
        for (pid, tid), name in self.p.tnames.items():
            td.thread_names[f"{_text(pids, pid) if pid >= 0 else None}:{_text(tids, tid) if tid >= 0 else None}"] = name
        td.overlap = self._overlap_table()
        self.ev = {}  # the local columns: done with
        groups = self.pname
        td.counters = self.p.counters.columns(np.arange(len(groups), dtype=np.int32), self.dev_of_pid_counters(),
                                              groups)
        return td

    def dev_of_pid_counters(self) -> np.ndarray:
        """Counters: device = the hint or pid & 31 for any pid >= 0 (the plain reading's rule); -1 drops."""
        return np.array([-1 if p < 0 else (self.hint if self.hint != NONE else p & 31)
                         for p in self.pid_int.tolist()], np.int64)

    def _overlap_table(self):
        rows = self._rows(OVERLAP)
        if not len(rows):
            return None
        name = self.ev["name"][rows]
        uniq, first = np.unique(name, return_index=True)
        rank = np.empty(len(uniq), np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(len(uniq))
        order = np.argsort(rank[np.searchsorted(uniq, name)], kind="stable")
        rows = rows[order]
        ts = self.ev["ts"][rows]
        ids, at = np.unique(self.ev["name"][rows], return_inverse=True)  # each distinct name's text once
        code, texts = side.intern_texts([_text(self.names, k) for k in ids.tolist()])  # (None and "": one text)
        return side.Columns.build("overlap_analysis", name=(code[at.reshape(-1)], texts),
                                  start_ns=ts, end_ns=ts + self.ev["dur"][rows])


def _types(text: str) -> str | None:
    """A host op's `args` (ingest/op_args.py): its input dtypes ("Input type": 'float;\r\nScalar')."""
    return op_args.encode(types=op_args.split_list(text))


def _text(values: list, i: int) -> str:
    v = values[i] if 0 <= i < len(values) else None
    return "" if v is None else str(v)


def _flow_columns(parse) -> dict[str, np.ndarray]:
    if not parse.flows:
        return {}
    cols = {k: np.concatenate([f[k] for f in parse.flows]) for k in parse.flows[0]}
    combo = cols.pop("combo").astype(np.int64)
    cols["pid"], cols["tid"] = parse.combos.column(2)[combo], parse.combos.column(3)[combo]
    cols["ph"] = flow_phase(cols["ph"])
    return cols


def finish(parse, strings, hint: int, comm_groups: dict[str, str]) -> tuple[TraceData, int]:
    f = _Finish(parse, strings, hint, comm_groups)
    td = f.run()
    return td, f.unbound
