"""torch_npu profiler output (``*_ascend_pt`` folder = one window of one rank) -> EventTable.

``read_ascend(folder)`` reads ``<folder>/profiler_info[_{rank}].json``, ``profiler_metadata.json`` and
``<folder>/ASCEND_PROFILER_OUTPUT/``. Helpers: ``ascend_csv`` (CSV quirks, unit conversion),
``ascend_trace`` (trace_view.json), ``ascend_tables`` (the other text files), ``ascend_db`` (SQLite).

Text vs SQLite: when the text export (trace_view.json or kernel_details.csv) exists it is used and
the ``*.db`` files are ignored (no Problem; meta.environment["ascend_source"] says "text" or "db" and
["ascend_db_ignored"] names the ignored files). Only without text files is ``ascend_pytorch_profiler*.db``
(+ ``analysis.db``) read.

Device tasks, not double counted (the dedup rule):
- kernel_details.csv, when present and readable, is the authoritative list of device compute and
  communication tasks: each row becomes one KERNEL (COMM_KERNEL for Accelerator Core HCCL/COMMUNICATION
  or ``hcom_*`` names) with ``core`` = the Accelerator Core cell as written (``N/A`` at Level0),
  ``blocks`` = Block Dim / Block Num, ``shapes`` = Input Shapes, exact start/duration.
- Each row is matched to a trace_view.json device event (Ascend Hardware task or HCCL group op) by
  (start ns, name), else by name with the nearest start within 2 µs (HCCL ops are written 1 ns apart
  in the two files). The matched trace event is dropped; the row inherits its external_id (torch_to_npu
  flow), correlation (connection_id), stream, pid/tid and, for HCCL ops, bytes and group.
- trace_view device events that no row matched stay, with the kind of their task type: memcpy tasks
  -> MEMCPY, sync / HCCL sub-tasks (Notify Wait, Write Value, EVENT_*, SDMA on the HCCL stream) -> OTHER,
  compute task types -> KERNEL (only tasks that kernel_details lacks, so nothing is counted twice).
- Without kernel_details.csv, the trace_view device events are used as they are.
HCCL ``Plane N`` sub-tasks and Overlap Analysis events are OTHER, so they stay out of comm/compute unions.

extras keys (all times int ns, sizes int bytes; ``None`` where the file says N/A):
- ``overlap_analysis``: {name: [[start_ns, end_ns], ...]} from the trace's Overlap Analysis process
  (or OVERLAP_ANALYSIS in the db: type 0..3 = Computing, Communication, Communication(Not Overlapped), Free).
- ``step_trace``: [{step, computing_ns, communication_not_overlapped_ns, overlapped_ns, communication_ns,
  free_ns, stage_ns, bubble_ns, communication_not_overlapped_exclude_receive_ns, preparing_ns}].
- ``op_statistic``: [{op_type, core_type, count, total_ns, min_ns, avg_ns, max_ns}].
- ``operator_details`` (only when trace_view.json is missing/unusable): [{name, input_shapes, call_stack,
  host_self_ns, host_total_ns, device_self_ns, device_total_ns}].
- ``operator_memory``: [{name, bytes, alloc_ns, free_ns (-1 if not freed in the window), device}].
- ``npu_module_mem``: [{component, ts_ns, reserved_bytes, device}].
- ``communication``: {step_key: {"collective"|"p2p": {op_name: {group, elapse_ns, transit_ns, wait_ns,
  synchronization_ns, idle_ns, start_ns, bandwidth: {transport: {size_bytes, time_ns, bandwidth_gbps,
  large_packet_ratio, size_distribution: {packet_bytes: [count, total_ns]}}}}}}}; "Total Op Info" is kept
  as an op named so (group None).
- ``communication_matrix``: [{step, kind, group, src, dst, transport, bytes, time_ns, bandwidth_gbps, op, link}].
Units of the communication files: "Transit Size(MB)" is decimal MB (x 10^6 -> bytes): the fixtures' packet
sizes (2.064384 MB) equal the byte counts of the SQLite export (2064384); bandwidth GB/s kept as written.
Memory CSVs: MB = MiB (x 1024²), operator_memory Size(KB) x 1024.

Memory columns come from memory_record.csv (one sample per row: bytes = 0, allocated / reserved / active
in bytes, device "npu:N" or "CPU", component PTA / GE / APP / PTA+GE / WORKSPACE).

Problems: a missing ASCEND_PROFILER_OUTPUT, or a trace_view.json that does not parse, marks the folder as
truncated / still being written; each broken file gives an error Problem and the rest still loads; CSV rows
with the wrong column count are skipped with one warning. ``InputError(folder, ...)`` only when nothing
usable exists.
"""
from __future__ import annotations

import glob
import json
import os
import re
from typing import Any

import numpy as np

from . import ascend_tables as T
from .ascend_csv import to_int
from .ascend_trace import read_trace
from .table import (EVENT_COLUMNS, MEMORY_COLUMNS, NONE, ColumnBuilder, EventTable, InputError, Kind, Meta,
                    Problem, Strings, sort_by_time)

OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"
_MATCH_TOLERANCE_NS = 2000
_STRING_COLS = ("name", "cat", "shapes", "stack", "core", "group")


def read_ascend(folder: str) -> EventTable:
    folder = os.path.normpath(folder)
    if not os.path.isdir(folder):
        raise InputError(folder, "not a folder")
    table = EventTable()
    problems = table.problems
    meta = table.meta
    meta.format = "ascend"
    base = os.path.basename(folder)
    meta.worker = _worker_of(base)
    out_dir = os.path.join(folder, OUTPUT_DIR)
    used: list[str] = []

    def path(name: str) -> str:
        return os.path.join(out_dir, name)

    def disp(name: str) -> str:
        return f"{base}/{OUTPUT_DIR}/{name}"

    _read_info(folder, base, table, used)

    if not os.path.isdir(out_dir):
        raise InputError(folder, f"no {OUTPUT_DIR} folder (truncated, still being written, or not analysed yet)")

    have = {n for n in os.listdir(out_dir)}
    text_files = {"trace_view.json", "kernel_details.csv", "operator_details.csv", "memory_record.csv",
                  "step_trace_time.csv", "communication.json"}
    dbs = sorted(n for n in have if re.fullmatch(r"ascend_pytorch_profiler(_\d+)?\.db", n))
    device_hint = NONE

    if not (have & text_files) and dbs:
        from .ascend_db import read_ascend_db
        meta.environment["ascend_source"] = "db"
        analysis = path("analysis.db") if "analysis.db" in have else None
        read_ascend_db(path(dbs[0]), disp(dbs[0]), analysis, disp("analysis.db"), table)
        used.append(path(dbs[0]))
        if analysis:
            used.append(analysis)
        _finish(table, used, folder)
        return table

    meta.environment["ascend_source"] = "text"
    if dbs:
        meta.environment["ascend_db_ignored"] = ",".join(dbs)
    extras = table.extras
    usable = False

    def take(name: str, fn, *args):
        nonlocal usable
        if name not in have:
            return None
        used.append(path(name))
        v = fn(path(name), disp(name), problems, *args)
        if v is not None:
            usable = True
        return v

    comm = take("communication.json", T.read_communication)
    if comm is not None:
        extras["communication"] = comm
    mat = take("communication_matrix.json", T.read_communication_matrix)
    if mat is not None:
        extras["communication_matrix"] = mat
    kd = take("kernel_details.csv", T.read_kernel_details, NONE)
    if kd:
        devs = {r["device"] for r in kd if r["device"] != NONE}
        if len(devs) == 1:
            device_hint = devs.pop()
    trace = None
    if "trace_view.json" in have:
        trace = take("trace_view.json", read_trace, device_hint, T.comm_groups_of(comm))
        if trace is None:
            problems.append(Problem(disp("trace_view.json"), "trace unusable: the folder may be truncated or "
                                                             "still being written; host ops come from CSVs only"))
    else:
        problems.append(Problem(disp("trace_view.json"), "missing: no host ops or timeline flows", "warning"))

    if trace is None:
        od = take("operator_details.csv", T.read_operator_details)
        if od is not None:
            extras["operator_details"] = od

    for key, name, fn in (("step_trace", "step_trace_time.csv", T.read_step_trace),
                          ("op_statistic", "op_statistic.csv", T.read_op_statistic),
                          ("operator_memory", "operator_memory.csv", T.read_operator_memory),
                          ("npu_module_mem", "npu_module_mem.csv", T.read_npu_module_mem)):
        v = take(name, fn)
        if v is not None:
            extras[key] = v

    mem = take("memory_record.csv", T.read_memory_record)

    rows = _merge(trace, kd, problems, disp("kernel_details.csv")) if (trace or kd) else []
    if trace is not None:
        meta.process_names.update(trace.process_names)
        meta.thread_names.update(trace.thread_names)
        if trace.overlap:
            extras["overlap_analysis"] = trace.overlap
    if not usable and not rows:
        raise InputError(folder, "nothing usable: " + "; ".join(str(p) for p in problems[:5]))

    _fill_events(table, rows)
    if mem:
        _fill_memory(table, mem)
    devs = {int(d) for d in np.unique(table.events["device"]) if d != NONE}
    if trace is not None:
        devs |= {d for d in trace.devices if d != NONE}
    _set_devices(meta, devs)
    _finish(table, used, folder)
    return table


# -- merge trace_view device events with kernel_details rows -------------------------------------------
def _merge(trace, kd: list[dict] | None, problems: list[Problem], kd_display: str) -> list[dict]:
    if trace is None:
        rows = list(kd or [])
        for r in rows:
            r.setdefault("tid", r.get("stream", NONE))
        return rows
    rows = trace.rows
    if not kd:
        return rows
    by_key: dict[tuple, list[int]] = {}
    by_name: dict[str, list[int]] = {}
    for i in trace.device_rows:
        r = rows[i]
        by_key.setdefault((r["ts"], r["name"]), []).append(i)
        by_name.setdefault(r["name"], []).append(i)
    taken: set[int] = set()
    unmatched = 0
    for k in kd:
        idx = None
        for i in by_key.get((k["ts"], k["name"]), ()):
            if i not in taken:
                idx = i
                break
        if idx is None:
            best = None
            for i in by_name.get(k["name"], ()):
                if i in taken:
                    continue
                d = abs(rows[i]["ts"] - k["ts"])
                if d <= _MATCH_TOLERANCE_NS and (best is None or d < best[0]):
                    best = (d, i)
            if best is not None:
                idx = best[1]
        if idx is None:
            unmatched += 1
            k.setdefault("pid", trace.hardware_pid)
            k.setdefault("tid", k.get("stream", NONE))
            continue
        taken.add(idx)
        t = rows[idx]
        for c in ("external_id", "correlation", "pid", "tid"):
            if c in t:
                k[c] = t[c]
        if k.get("stream", NONE) == NONE and t.get("stream", NONE) != NONE:
            k["stream"] = t["stream"]
        if k.get("device", NONE) == NONE:
            k["device"] = t.get("device", NONE)
        if k["kind"] == Kind.COMM_KERNEL:
            for c in ("bytes", "group"):
                if t.get(c) not in (None, NONE):
                    k[c] = t[c]
    merged = [r for i, r in enumerate(rows) if i not in taken]
    merged.extend(kd)
    return merged


def _fill_events(table: EventTable, rows: list[dict]) -> None:
    b = ColumnBuilder(EVENT_COLUMNS)
    s = table.strings
    for r in rows:
        vals = {}
        for c in EVENT_COLUMNS:
            v = r.get(c)
            if v is None:
                continue
            vals[c] = s.id(v) if c in _STRING_COLS else v
        b.add(**vals)
    table.events = sort_by_time(b.freeze())


def _fill_memory(table: EventTable, mem: list[tuple]) -> None:
    s = table.strings
    n = len(mem)
    cols = {k: np.full(n, NONE, dtype=t) for k, t in MEMORY_COLUMNS.items()}
    cols["bytes"][:] = 0
    for i, (ts, dev, a, r, ac, comp) in enumerate(mem):
        cols["ts"][i] = ts
        cols["device"][i] = s.id(dev)
        if a is not None:
            cols["allocated"][i] = a
        if r is not None:
            cols["reserved"][i] = r
        if ac is not None:
            cols["active"][i] = ac
        cols["component"][i] = s.id(comp)
    table.memory = sort_by_time(cols)


def _set_devices(meta: Meta, devs: set[int]) -> None:
    name = meta.environment.get("npu_name") or "Ascend"
    known = {d.get("index") for d in meta.devices}
    for d in sorted(devs):
        if d not in known:
            meta.devices.append({"kind": "npu", "index": d, "name": name})


def _finish(table: EventTable, used: list[str], folder: str) -> None:
    table.meta.source_files = list(dict.fromkeys(used))
    table.check()


# -- profiler_info / profiler_metadata ------------------------------------------------------------------
_WORKER_RE = re.compile(r"^(.*?)(?:_(\d+(?:\.\d+)?))?_ascend_(?:pt|ms)$")


def _worker_of(base: str) -> str:
    m = _WORKER_RE.match(base)
    return m.group(1) if m else base


def _flatten(prefix: str, v: Any, out: dict[str, str]) -> None:
    if isinstance(v, dict):
        for k, x in v.items():
            _flatten(f"{prefix}.{str(k).lstrip('_')}" if prefix else str(k).lstrip("_"), x, out)
    elif isinstance(v, (list, tuple)):
        out[prefix] = ",".join(str(x) for x in v)
    else:
        out[prefix] = "" if v is None else str(v)


def _read_info(folder: str, base: str, table: EventTable, used: list[str]) -> None:
    meta, env, problems = table.meta, table.meta.environment, table.problems
    infos = sorted(glob.glob(os.path.join(glob.escape(folder), "profiler_info*.json")))
    rank_from_name = None
    if infos:
        p = infos[0]
        used.append(p)
        m = re.search(r"profiler_info_(\d+)\.json$", p)
        if m:
            rank_from_name = int(m.group(1))
        info = T.read_json_dict(p, f"{base}/{os.path.basename(p)}", problems)
        if info:
            rank = to_int(info.get("rank_id"))
            if rank is not None and rank >= 0:
                meta.rank = rank
            elif rank_from_name is not None:
                meta.rank = rank_from_name
            for k in ("torch_npu_version", "cann_version"):
                if info.get(k) is not None:
                    env[k] = str(info[k])
            cfg: dict[str, str] = {}
            _flatten("", info.get("config") or {}, cfg)
            for k, v in cfg.items():
                env["profiler." + k.replace("common_config.", "").replace("experimental_config.", "")] = v
            end = (info.get("end_info") or {})
            start = (info.get("start_info") or {})
            end_ns = to_int(end.get("collectionTimeEnd"))
            if end_ns is not None:
                meta.end_ns = end_ns
                begin = to_int(start.get("collectionTimeBegin"))
                if begin is None:
                    m0, m1 = to_int(start.get("start_monotonic")), to_int(end.get("MonotonicTimeEnd"))
                    if m0 is not None and m1 is not None and m1 >= m0:
                        begin = end_ns - (m1 - m0)
                if begin is not None:
                    meta.start_ns = begin
        elif rank_from_name is not None:
            meta.rank = rank_from_name
    else:
        m = re.search(r"rank[_-]?(\d+)", base)
        if m:
            meta.rank = int(m.group(1))
    mp = os.path.join(folder, "profiler_metadata.json")
    if os.path.isfile(mp):
        used.append(mp)
        md = T.read_json_dict(mp, f"{base}/profiler_metadata.json", problems)
        if md:
            apply_metadata(md, meta)


def apply_metadata(md: dict, meta: Meta) -> None:
    env = meta.environment
    for k, v in (md.get("ENV_VARIABLES") or {}).items():
        env["env." + str(k)] = "" if v is None else str(v)
    world = None
    dist = md.get("distributed_args") or {}
    if isinstance(dist, dict):
        for k, v in dist.items():
            env["distributed." + str(k)] = str(v)
        world = to_int(dist.get("world_size"))
    groups = md.get("parallel_group_info") or {}
    if isinstance(groups, dict) and groups:
        all_ranks: set[int] = set()
        summary = []
        for comm_name, g in groups.items():
            if not isinstance(g, dict):
                continue
            ranks = [r for r in (to_int(x) for x in (g.get("global_ranks") or [])) if r is not None]
            all_ranks.update(ranks)
            summary.append(f"{g.get('group_name', comm_name)}:{len(ranks)}")
        env["parallel_groups"] = ",".join(summary)
        if world is None and all_ranks:
            world = max(all_ranks) + 1
    if world is not None and world > 0:
        meta.world_size = world
        env["world_size"] = str(world)
    for k, v in md.items():
        if k in ("ENV_VARIABLES", "distributed_args", "parallel_group_info"):
            continue
        env["metadata." + str(k)] = v if isinstance(v, str) else json.dumps(v)[:4096]
