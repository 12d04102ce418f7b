"""``trace_view.json`` of a torch_npu output folder (helper for ``ascend.py``): a bare JSON array of
Chrome trace events, µs string timestamps converted exactly to int ns. Each process (Python, CANN,
Ascend Hardware, HCCL, Overlap Analysis) has its handler; the Kind each event gets, and how the
torch_to_npu flows link host ops to device tasks, are in docs/formats/ascend.md.
"""
from __future__ import annotations

import bisect
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import msgspec

from canning_tb.ingest._json import TOO_DEEP
from .counters import trace_counter_rows
from .csv_io import none_to, norm_shapes, norm_stack, read_bytes, to_float, to_int, us_to_ns
from canning_tb.ingest import op_args
from canning_tb.ingest.table import METRIC_FLOPS, NONE, Kind, Problem, is_comm_kernel_name

from canning_tb.ingest.ascend.hardware import DTYPE_BYTES, classify_hardware, hccl_bytes  # noqa: F401,E402

_STREAM_RE = re.compile(r"Stream\s+(\d+)")


@dataclass
class TraceData:
    rows: list[dict] = field(default_factory=list)  # event rows (column name -> value)
    process_names: dict[int, str] = field(default_factory=dict)
    thread_names: dict[str, str] = field(default_factory=dict)
    overlap: dict[str, list[list[int]]] = field(default_factory=dict)
    devices: set[int] = field(default_factory=set)
    device_rows: list[int] = field(default_factory=list)  # indices of Ascend Hardware / HCCL group rows
    hardware_pid: int = NONE
    counters: list[dict] = field(default_factory=list)  # npu_counters side table rows ("ph":"C" events)


def _put(row: dict, key: str, value: Any) -> None:
    """Set a column of an event row only when the value is known."""
    if value is not None:
        row[key] = value


def _decode(path: str, display: str, problems: list[Problem]) -> list | None:
    raw = read_bytes(path, display, problems)
    if raw is None:
        return None
    try:
        events = msgspec.json.decode(raw)
    except msgspec.DecodeError as e:
        problems.append(Problem(display, f"not valid JSON (truncated or still being written?): {e}"))
        return None
    except RecursionError:
        problems.append(Problem(display, TOO_DEEP))
        return None
    if isinstance(events, dict):  # tolerate the {"traceEvents": [...]} form
        events = events.get("traceEvents")
    if not isinstance(events, list):
        problems.append(Problem(display, "expected a JSON array of trace events"))
        return None
    return events


class _Parse:
    """One pass over the events of trace_view.json, filling a TraceData."""

    def __init__(self, events: list, device_hint: int, comm_groups: dict[str, str]):
        self.td = TraceData()
        self.device_hint = device_hint
        self.comm_groups = comm_groups
        self.pnames: dict[Any, str] = {}
        self.tnames: dict[tuple, str] = {}
        self.flows: dict[Any, dict[str, dict]] = defaultdict(dict)
        self.host_slices: dict[tuple, list] = defaultdict(list)  # (pid, tid) -> (ts, -dur, row) of host ops
        self.dev_start: dict[tuple, list[int]] = defaultdict(list)  # (pid, tid, ts) -> device rows
        self._names(events)

    def _names(self, events: list) -> None:
        for e in events:
            if isinstance(e, dict) and e.get("ph") == "M":
                args = e.get("args") or {}
                if e.get("name") == "process_name":
                    self.pnames[e.get("pid")] = str(args.get("name", ""))
                elif e.get("name") == "thread_name":
                    self.tnames[(e.get("pid"), e.get("tid"))] = str(args.get("name", ""))
        for pid, n in self.pnames.items():
            p = to_int(pid)
            if p is not None:
                self.td.process_names[p] = n
                if n == "Ascend Hardware":
                    self.td.hardware_pid = p
        for (pid, tid), n in self.tnames.items():
            self.td.thread_names[f"{pid}:{tid}"] = n

    def event(self, e: Any) -> bool:
        """Take one event; False when it is unusable (no timestamp, not an object)."""
        if not isinstance(e, dict):
            return False
        ph = e.get("ph")
        if ph in ("s", "f", "t"):
            if e.get("cat") == "async_npu" or e.get("name") == "torch_to_npu":
                self.flows[e.get("id")][ph] = e
            return True
        if ph == "C":
            self._counter(e)
            return True
        if ph != "X":
            return True
        ts = us_to_ns(e.get("ts"))
        if ts is None:
            return False
        raw_pid, raw_tid = e.get("pid"), e.get("tid")
        pid = none_to(to_int(raw_pid))
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        row: dict[str, Any] = {"ts": ts, "dur": max(us_to_ns(e.get("dur")) or 0, 0), "name": str(e.get("name", "")),
                               "cat": e.get("cat"), "pid": pid, "tid": none_to(to_int(raw_tid))}
        pname = self.pnames.get(raw_pid, "")
        dev = NONE
        if pname not in ("Python", "CANN", "") and pid >= 0:
            dev = self.device_hint if self.device_hint != NONE else (pid & 31)
        handler = _PROCESS_HANDLERS.get(pname)
        if handler is None and not pname and row["cat"] in ("cpu_op", "python_function", "user_annotation"):
            handler = _PROCESS_HANDLERS["Python"]
        row["kind"] = int(handler(self, row, args, (raw_pid, raw_tid), dev) if handler else self._other(row, dev))
        self.td.rows.append(row)
        return True

    def _counter(self, e: dict) -> None:
        pid = to_int(e.get("pid"))
        if pid is None or pid < 0:
            return
        dev = self.device_hint if self.device_hint != NONE else (pid & 31)
        self.td.counters.extend(trace_counter_rows(e, self.pnames.get(e.get("pid"), ""), dev))

    def _other(self, row: dict, dev: int) -> Kind:
        if dev != NONE:
            row["device"] = dev
        return Kind.OTHER

    def _python(self, row: dict, args: dict, thread: tuple, dev: int) -> Kind:
        cat, name = row["cat"], row["name"]
        if cat == "python_function":
            return Kind.PYTHON_FUNCTION
        if name.startswith("ProfilerStep#") or cat == "user_annotation":
            kind = Kind.USER_ANNOTATION
        elif cat in ("cpu_op", "operator"):
            kind = Kind.CPU_OP
        else:
            return Kind.OTHER
        _put(row, "shapes", norm_shapes(args.get("Input Dims")))
        _put(row, "stack", norm_stack(args.get("Call stack")))
        _put(row, "args", op_args.encode(types=op_args.split_list(args.get("Input type"))))
        flops = to_float(args.get("flops"))  # torch_npu counts them itself with with_flops=True
        if flops is not None and flops >= 0:
            row["metrics"] = {METRIC_FLOPS: flops}
        self.host_slices[thread].append((row["ts"], -row["dur"], len(self.td.rows)))
        return kind

    def _cann(self, row: dict, args: dict, thread: tuple, dev: int) -> Kind:
        _put(row, "correlation", to_int(args.get("connection_id")))
        return Kind.RUNTIME

    def _device_row(self, row: dict, thread: tuple, dev: int) -> None:
        row["device"] = dev
        self.td.devices.add(dev)
        self.td.device_rows.append(len(self.td.rows))
        self.dev_start[(*thread, row["ts"])].append(len(self.td.rows))

    def _hardware(self, row: dict, args: dict, thread: tuple, dev: int) -> Kind:
        task_type = str(args.get("Task Type", ""))
        m = _STREAM_RE.search(self.tnames.get(thread, ""))
        stream = to_int(args.get("Physic Stream Id"))
        row["stream"] = none_to(stream if stream is not None else (int(m.group(1)) if m else None))
        if task_type:
            row["core"] = task_type
        _put(row, "correlation", to_int(args.get("connection_id")))
        self._device_row(row, thread, dev)
        return classify_hardware(row["name"], task_type)

    def _hccl(self, row: dict, args: dict, thread: tuple, dev: int) -> Kind:
        tname, name = self.tnames.get(thread, ""), row["name"]
        row["stream"] = NONE
        _put(row, "correlation", to_int(args.get("connection_id")))
        if tname.startswith("Group") or (is_comm_kernel_name(name) and not tname.startswith("Plane")):
            row.update(bytes=hccl_bytes(args), group=self.comm_groups.get(name) or tname or None, core="HCCL")
            self._device_row(row, thread, dev)
            return Kind.COMM_KERNEL
        row["device"] = dev
        self.td.devices.add(dev)
        _put(row, "bytes", to_int(args.get("size(Byte)")))
        _put(row, "stream", to_int(args.get("stream id")))
        return Kind.OTHER

    def _overlap(self, row: dict, args: dict, thread: tuple, dev: int) -> Kind:
        row["device"] = dev
        self.td.overlap.setdefault(row["name"], []).append([row["ts"], row["ts"] + row["dur"]])
        return Kind.OTHER

    def bind_flows(self) -> int:
        """torch_to_npu flows: the host op (s) and the device task (f) share one external_id.
        Returns the number of flows that could not be bound."""
        rows = self.td.rows
        for lst in self.host_slices.values():
            lst.sort()
        starts = {k: [t for t, _, _ in v] for k, v in self.host_slices.items()}
        next_ext, unbound = 1, 0
        for pair in self.flows.values():
            s, f = pair.get("s"), pair.get("f")
            if s is None or f is None:
                continue
            dev_idx = self.dev_start.get((f.get("pid"), f.get("tid"), us_to_ns(f.get("ts"))))
            key = (s.get("pid"), s.get("tid"))
            host_idx = _innermost(self.host_slices.get(key), starts.get(key), us_to_ns(s.get("ts")))
            if host_idx is None or not dev_idx:
                unbound += 1
                continue
            ext = rows[host_idx].get("external_id")
            if ext is None:
                ext, next_ext = next_ext, next_ext + 1
                rows[host_idx]["external_id"] = ext
            for di in dev_idx:
                rows[di]["external_id"] = ext
        return unbound


_PROCESS_HANDLERS = {"Python": _Parse._python, "CANN": _Parse._cann, "Ascend Hardware": _Parse._hardware,
                     "HCCL": _Parse._hccl, "Overlap Analysis": _Parse._overlap}


def _innermost(slices: list | None, starts: list | None, at: int | None) -> int | None:
    """The innermost host op that encloses `at` (ops are nested: scan back a little)."""
    if not slices or at is None:
        return None
    j = bisect.bisect_right(starts, at) - 1
    best = None
    for k in range(j, max(j - 64, -1), -1):
        t0, negdur, idx = slices[k]
        if t0 <= at <= t0 - negdur and (best is None or -negdur < best[0]):
            best = (-negdur, idx)
    return None if best is None else best[1]


def read_trace(path: str, display: str, problems: list[Problem], device_hint: int = NONE,
               comm_groups: dict[str, str] | None = None) -> TraceData | None:
    """Parse trace_view.json; None (and an error Problem) when it cannot be parsed."""
    events = _decode(path, display, problems)
    if events is None:
        return None
    parse = _Parse(events, device_hint, comm_groups or {})
    bad = sum(1 for e in events if not parse.event(e))
    if bad:
        problems.append(Problem(display, f"{bad} event(s) without a usable timestamp skipped", "warning"))
    unbound = parse.bind_flows()
    if unbound:
        problems.append(Problem(display, f"{unbound} torch_to_npu flow(s) could not be bound to a host op "
                                         f"and a device task", "warning"))
    return parse.td
