"""``trace_view.json`` of a torch_npu output folder (helper for ``ascend.py``).

The file is a bare JSON array of Chrome trace events; ``ts`` is a string in µs with 3
decimals (converted exactly to int ns), ``dur`` a float in µs. Processes are named by ``M``
events (``Python``, ``CANN``, ``Ascend Hardware``, ``HCCL``, ``Overlap Analysis``, counter
tracks ...). CANN pids are encoded ``(pid << 10) | (sort_index << 5) | device_id``; the device
of a device-side event is ``pid & 31`` (or the folder's device when known).

Mapping (process, category/thread -> Kind):
- Python ``cpu_op`` -> CPU_OP, except ``ProfilerStep#N`` -> USER_ANNOTATION; ``python_function`` ->
  PYTHON_FUNCTION; ``user_annotation`` -> USER_ANNOTATION; other Python events (enqueue/dequeue) -> OTHER.
- CANN ``AscendCL@*`` and other CANN API events -> RUNTIME (correlation = args connection_id).
- Ascend Hardware stream tasks -> KERNEL for compute task types (AI_CORE, AI_VECTOR_CORE, MIX_*,
  AI_CPU, DSA ...), COMM_KERNEL for ``hcom_*`` names, MEMCPY for memcpy tasks (MEMCPY_ASYNC,
  *DMA_SQE), OTHER for synchronisation / HCCL sub-tasks (EVENT_*, Notify*, Write Value, SDMA on
  the HCCL stream, PLACE_HOLDER, PROFILING_*) so that they never enter the comm or compute union.
- HCCL ``Group N Communication`` ``hcom_*`` -> COMM_KERNEL (bytes = count x dtype size, group);
  HCCL ``Plane N`` sub-tasks -> OTHER (bytes from ``size(Byte)``).
- Overlap Analysis -> OTHER, and their intervals per name are returned for extras.
- Counter events (``ph: C``) are skipped.
Flows ``torch_to_npu`` (s on the host op, f on the device task, matched by id) give the host op
and the device task the same external_id: one fresh integer per host op, so every task an op
launched shares the op's id.
"""
from __future__ import annotations

import bisect
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import msgspec

from .ascend_csv import none_to, norm_shapes, norm_stack, read_bytes, to_int, us_to_ns
from .table import NONE, Kind, Problem, is_comm_kernel_name

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


def hccl_bytes(args: dict) -> int:
    count = to_int(args.get("count"))
    size = DTYPE_BYTES.get(str(args.get("data_type", "")).upper())
    if count is None or size is None or count < 0:
        return NONE
    return count * size


def classify_hardware(name: str, task_type: str) -> Kind:
    if is_comm_kernel_name(name):
        return Kind.COMM_KERNEL
    if _MEMCPY_RE.search(task_type) or (not _COMPUTE_TASK_RE.search(task_type) and _MEMCPY_RE.search(name)):
        return Kind.MEMCPY
    if _COMPUTE_TASK_RE.search(task_type):  # incl. AI_CORE "*_MemSet" kernels, which kernel_details lists
        return Kind.KERNEL
    if "MEMSET" in name.upper() or "MEMSET" in task_type.upper():
        return Kind.MEMSET
    if _SYNC_RE.search(task_type) or _SYNC_RE.search(name):
        return Kind.OTHER
    if not task_type:  # unknown task without a type: a named op is most likely compute
        return Kind.KERNEL
    return Kind.OTHER


def _put(row: dict, key: str, value: Any) -> None:
    """Set a column of an event row only when the value is known."""
    if value is not None:
        row[key] = value


def read_trace(path: str, display: str, problems: list[Problem], device_hint: int = NONE,
               comm_groups: dict[str, str] | None = None) -> TraceData | None:
    """Parse trace_view.json; None (and an error Problem) when it cannot be parsed."""
    raw = read_bytes(path, display, problems)
    if raw is None:
        return None
    try:
        events = msgspec.json.decode(raw)
    except msgspec.DecodeError as e:
        problems.append(Problem(display, f"not valid JSON (truncated or still being written?): {e}"))
        return None
    if isinstance(events, dict):  # tolerate the {"traceEvents": [...]} form
        events = events.get("traceEvents")
    if not isinstance(events, list):
        problems.append(Problem(display, "expected a JSON array of trace events"))
        return None
    comm_groups = comm_groups or {}
    td = TraceData()
    pnames: dict[Any, str] = {}
    tnames: dict[tuple, str] = {}
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "M":
            args = e.get("args") or {}
            if e.get("name") == "process_name":
                pnames[e.get("pid")] = str(args.get("name", ""))
            elif e.get("name") == "thread_name":
                tnames[(e.get("pid"), e.get("tid"))] = str(args.get("name", ""))
    for pid, n in pnames.items():
        p = to_int(pid)
        if p is not None:
            td.process_names[p] = n
            if n == "Ascend Hardware":
                td.hardware_pid = p
    for (pid, tid), n in tnames.items():
        td.thread_names[f"{pid}:{tid}"] = n

    rows = td.rows
    flows: dict[Any, dict[str, dict]] = defaultdict(dict)
    # (pid, tid) -> list of (ts, -dur, row index) of host ops, for flow binding
    host_slices: dict[tuple, list] = defaultdict(list)
    dev_start: dict[tuple, list[int]] = defaultdict(list)
    bad = 0
    for e in events:
        if not isinstance(e, dict):
            bad += 1
            continue
        ph = e.get("ph")
        if ph in ("s", "f", "t"):
            if e.get("cat") == "async_npu" or e.get("name") == "torch_to_npu":
                flows[e.get("id")][ph] = e
            continue
        if ph != "X":
            continue
        ts = us_to_ns(e.get("ts"))
        if ts is None:
            bad += 1
            continue
        dur = us_to_ns(e.get("dur")) or 0
        if dur < 0:
            dur = 0
        raw_pid, raw_tid = e.get("pid"), e.get("tid")
        pid = none_to(to_int(raw_pid))
        tid = none_to(to_int(raw_tid))
        pname = pnames.get(raw_pid, "")
        tname = tnames.get((raw_pid, raw_tid), "")
        name = str(e.get("name", ""))
        cat = e.get("cat")
        args = e.get("args") or {}
        if not isinstance(args, dict):
            args = {}
        row: dict[str, Any] = {"ts": ts, "dur": dur, "name": name, "cat": cat, "pid": pid, "tid": tid}
        is_device_proc = pname not in ("Python", "CANN", "") and pid >= 0
        dev = NONE
        if is_device_proc:
            dev = device_hint if device_hint != NONE else (pid & 31)
        if pname == "Python" or (not pname and cat in ("cpu_op", "python_function", "user_annotation")):
            if cat == "python_function":
                kind = Kind.PYTHON_FUNCTION
            elif name.startswith("ProfilerStep#") or cat == "user_annotation":
                kind = Kind.USER_ANNOTATION
            elif cat == "cpu_op" or cat == "operator":
                kind = Kind.CPU_OP
            else:
                kind = Kind.OTHER
            if kind in (Kind.CPU_OP, Kind.USER_ANNOTATION):
                _put(row, "shapes", norm_shapes(args.get("Input Dims")))
                _put(row, "stack", norm_stack(args.get("Call stack")))
                host_slices[(raw_pid, raw_tid)].append((ts, -dur, len(rows)))
        elif pname == "CANN":
            kind = Kind.RUNTIME
            _put(row, "correlation", to_int(args.get("connection_id")))
        elif pname == "Ascend Hardware":
            task_type = str(args.get("Task Type", ""))
            kind = classify_hardware(name, task_type)
            m = _STREAM_RE.search(tname)
            stream = to_int(args.get("Physic Stream Id"))
            if stream is None and m:
                stream = int(m.group(1))
            row["stream"] = none_to(stream)
            row["device"] = dev
            if task_type:
                row["core"] = task_type
            _put(row, "correlation", to_int(args.get("connection_id")))
            td.devices.add(dev)
            td.device_rows.append(len(rows))
            dev_start[(raw_pid, raw_tid, ts)].append(len(rows))
        elif pname == "HCCL":
            row["device"] = dev
            row["stream"] = NONE
            td.devices.add(dev)
            _put(row, "correlation", to_int(args.get("connection_id")))
            if tname.startswith("Group") or (is_comm_kernel_name(name) and not tname.startswith("Plane")):
                kind = Kind.COMM_KERNEL
                row["bytes"] = hccl_bytes(args)
                row["group"] = comm_groups.get(name) or tname or None
                row["core"] = "HCCL"
                td.device_rows.append(len(rows))
                dev_start[(raw_pid, raw_tid, ts)].append(len(rows))
            else:
                kind = Kind.OTHER
                _put(row, "bytes", to_int(args.get("size(Byte)")))
                _put(row, "stream", to_int(args.get("stream id")))
        elif pname == "Overlap Analysis":
            kind = Kind.OTHER
            row["device"] = dev
            td.overlap.setdefault(name, []).append([ts, ts + dur])
        else:
            kind = Kind.OTHER
            if is_device_proc:
                row["device"] = dev
        row["kind"] = int(kind)
        rows.append(row)
    if bad:
        problems.append(Problem(display, f"{bad} event(s) without a usable timestamp skipped", "warning"))

    # -- torch_to_npu flows: host op (s) -> device task (f) -------------------------------
    for lst in host_slices.values():
        lst.sort()
    host_starts = {k: [t for t, _, _ in v] for k, v in host_slices.items()}
    next_ext = 1
    unbound = 0
    for fid, pair in flows.items():
        s, f = pair.get("s"), pair.get("f")
        if s is None or f is None:
            continue
        s_ts, f_ts = us_to_ns(s.get("ts")), us_to_ns(f.get("ts"))
        dev_idx = dev_start.get((f.get("pid"), f.get("tid"), f_ts))
        key = (s.get("pid"), s.get("tid"))
        lst = host_slices.get(key)
        host_idx = None
        if lst and s_ts is not None:
            starts = host_starts[key]
            j = bisect.bisect_right(starts, s_ts) - 1
            # innermost op that encloses s_ts: scan back a little (ops are nested)
            best = None
            k = j
            while k >= 0 and k > j - 64:
                t0, negdur, idx = lst[k]
                if t0 <= s_ts <= t0 - negdur:
                    if best is None or -negdur < best[0]:
                        best = (-negdur, idx)
                k -= 1
            if best is not None:
                host_idx = best[1]
        if host_idx is None or not dev_idx:
            unbound += 1
            continue
        ext = rows[host_idx].get("external_id")
        if ext is None:
            ext = next_ext
            next_ext += 1
            rows[host_idx]["external_id"] = ext
        for di in dev_idx:
            rows[di]["external_id"] = ext
    if unbound:
        problems.append(Problem(display, f"{unbound} torch_to_npu flow(s) could not be bound to a host op "
                                         f"and a device task", "warning"))
    return td
