"""SQLite export of torch_npu (``ascend_pytorch_profiler[_{rank}].db`` + ``analysis.db``) -> EventTable.

Opened read-only (``file:...?mode=ro`` URI). Times are ns and sizes bytes in the profiler db; names are
ids into STRING_IDS. Mapping:
- PYTORCH_API type 50001 (op) -> CPU_OP (ProfilerStep#N -> USER_ANNOTATION), 50003 (trace/python) ->
  PYTHON_FUNCTION, others (queue, mstx) -> OTHER; shapes from inputShapes (the column whose strings look
  like shapes: some versions swap inputShapes/inputDtypes), stack from PYTORCH_CALLCHAINS.
- STEP_TIME -> USER_ANNOTATION ``ProfilerStep#<id>`` for steps PYTORCH_API does not already hold.
- CANN_API -> RUNTIME (correlation = connectionId).
- TASK + COMPUTE_TASK_INFO -> KERNEL (core = taskType string, blocks = blockDim, shapes);
  COMMUNICATION_OP -> COMM_KERNEL (bytes = count x data type size, group = groupName string);
  TASK rows of COMMUNICATION_TASK_INFO (HCCL plane sub-tasks) -> OTHER; other TASK rows: memcpy -> MEMCPY,
  everything else -> OTHER (they include an AI_CORE task per HCCL op that spans the whole op on the comm
  stream, so counting them as KERNEL would double count communication).
- PYTORCH_API.connectionId -> CONNECTION_IDS(id -> connectionId) -> TASK / COMMUNICATION_OP connectionId:
  one external_id per PYTORCH_API row shared with its device tasks.
- MEMORY_RECORD -> memory columns; OP_MEMORY / NPU_MODULE_MEM / OVERLAP_ANALYSIS -> extras as in ascend.py.
- analysis.db CommAnalyzerTime/Bandwidth/Matrix, StepTraceTime -> extras communication /
  communication_matrix / step_trace (units ms / MB / µs as in the JSON forms, converted the same way).
"""
from __future__ import annotations

import os
import re
import sqlite3
from typing import Any

import numpy as np

from . import ascend_tables as T
from .ascend_csv import ms_to_ns, norm_shapes, to_float, to_int, us_float_to_ns
from .ascend_trace import DTYPE_BYTES, classify_hardware
from .table import (EVENT_COLUMNS, MEMORY_COLUMNS, NONE, ColumnBuilder, EventTable, Kind, Problem,
                    sort_by_time)

_SHAPE_RE = re.compile(r"^[\d,\s;\[\]\"\r\n-]*$")
_OVERLAP_NAMES = {0: "Computing", 1: "Communication", 2: "Communication(Not Overlapped)", 3: "Free"}


def _connect(path: str) -> sqlite3.Connection:
    uri = "file:" + os.path.abspath(path).replace("?", "%3f").replace("#", "%23") + "?mode=ro"
    return sqlite3.connect(uri, uri=True)


def _tables(c: sqlite3.Connection) -> set[str]:
    return {r[0] for r in c.execute("select name from sqlite_master where type='table'")}


def _cols(c: sqlite3.Connection, t: str) -> set[str]:
    return {r[1] for r in c.execute(f'pragma table_info("{t}")')}


def read_ascend_db(path: str, display: str, analysis: str | None, analysis_display: str,
                   table: EventTable) -> None:
    problems = table.problems
    try:
        c = _connect(path)
        tabs = _tables(c)
    except sqlite3.Error as e:
        from .table import InputError
        raise InputError(display, f"not a readable SQLite file: {e}")
    try:
        _read_profiler_db(c, tabs, display, table)
    except sqlite3.Error as e:
        problems.append(Problem(display, f"SQLite error, partly read: {e}"))
    finally:
        c.close()
    if analysis:
        try:
            a = _connect(analysis)
            try:
                _read_analysis_db(a, _tables(a), table)
            finally:
                a.close()
        except sqlite3.Error as e:
            problems.append(Problem(analysis_display, f"SQLite error: {e}"))
    table.check()


def _read_profiler_db(c: sqlite3.Connection, tabs: set[str], display: str, table: EventTable) -> None:
    meta, s, problems, extras = table.meta, table.strings, table.problems, table.extras
    S: dict[int, str] = dict(c.execute("select id, value from STRING_IDS")) if "STRING_IDS" in tabs else {}

    def name(i: Any) -> str | None:
        return None if i is None else S.get(i)

    def enum(t: str) -> dict[int, str]:
        return dict(c.execute(f'select id, name from "{t}"')) if t in tabs else {}

    if "NPU_INFO" in tabs:
        for did, nm in c.execute("select id, name from NPU_INFO"):
            meta.devices.append({"kind": "npu", "index": int(did), "name": f"Ascend ({nm})" if nm else "Ascend"})
    if "RANK_DEVICE_MAP" in tabs:
        r = c.execute("select rankId, deviceId from RANK_DEVICE_MAP").fetchone()
        if r and r[0] is not None and int(r[0]) >= 0:
            meta.rank = int(r[0])
    if "SESSION_TIME_INFO" in tabs and meta.start_ns == NONE:
        r = c.execute("select startTimeNs, endTimeNs from SESSION_TIME_INFO").fetchone()
        if r:
            meta.start_ns, meta.end_ns = int(r[0]), int(r[1]) if meta.end_ns == NONE else meta.end_ns
    if "HOST_INFO" in tabs:
        r = c.execute("select hostName from HOST_INFO").fetchone()
        if r and r[0]:
            meta.host = str(r[0])
    if "META_DATA" in tabs:
        import json
        md = {}
        for k, v in c.execute("select name, value from META_DATA"):
            try:
                md[k] = json.loads(v) if isinstance(v, str) and v[:1] in "{[" else v
            except ValueError:
                md[k] = v
        from .ascend import apply_metadata
        apply_metadata(md, meta)

    b = ColumnBuilder(EVENT_COLUMNS)
    ext_of_conn: dict[int, int] = {}
    # -- PYTORCH_API ----------------------------------------------------------------------------
    steps_seen: set[str] = set()
    if "PYTORCH_API" in tabs:
        conn_map: dict[int, list[int]] = {}
        if "CONNECTION_IDS" in tabs:
            for i, cid in c.execute("select id, connectionId from CONNECTION_IDS"):
                conn_map.setdefault(i, []).append(cid)
        chains: dict[int, list[str]] = {}
        if "PYTORCH_CALLCHAINS" in tabs:
            for i, st, _d in c.execute("select id, stack, stackDepth from PYTORCH_CALLCHAINS order by id, stackDepth"):
                chains.setdefault(i, []).append(S.get(st, ""))
        next_ext = 1
        for (st, en, gtid, conn, nm, itype1, itype2, chain, typ) in c.execute(
                "select startNs, endNs, globalTid, connectionId, name, inputShapes, inputDtypes, callchainId, type "
                "from PYTORCH_API"):
            ts, te = to_int(st), to_int(en)
            if ts is None:
                continue
            n = name(nm) or ""
            typ = to_int(typ)
            if typ == 50001:
                kind = Kind.USER_ANNOTATION if n.startswith("ProfilerStep#") else Kind.CPU_OP
            elif typ == 50003:
                kind = Kind.PYTHON_FUNCTION
            else:
                kind = Kind.OTHER
            if kind == Kind.USER_ANNOTATION:
                steps_seen.add(n)
            gtid = to_int(gtid) or 0
            vals: dict[str, Any] = dict(ts=ts, dur=max((te or ts) - ts, 0), kind=int(kind), name=s.id(n),
                                        cat=s.id({50001: "cpu_op", 50002: "queue", 50003: "python_function",
                                                  50004: "mstx"}.get(typ, "pytorch_api")),
                                        pid=gtid >> 32, tid=gtid & 0xFFFFFFFF)
            shp = None
            for cand in (name(itype1), name(itype2)):
                if cand and _SHAPE_RE.match(cand):
                    shp = norm_shapes(cand)
                    break
            if shp:
                vals["shapes"] = s.id(shp)
            if chain is not None and chain in chains:
                vals["stack"] = s.id(";".join(f for f in chains[chain] if f))
            if conn is not None and kind in (Kind.CPU_OP, Kind.USER_ANNOTATION) and conn in conn_map:
                vals["external_id"] = next_ext
                for cid in conn_map[conn]:
                    ext_of_conn.setdefault(cid, next_ext)
                next_ext += 1
            b.add(**vals)
    if "STEP_TIME" in tabs:
        for sid, st, en in c.execute("select id, startNs, endNs from STEP_TIME"):
            n = f"ProfilerStep#{sid}"
            if n in steps_seen or st is None:
                continue
            b.add(ts=int(st), dur=max(int(en or st) - int(st), 0), kind=int(Kind.USER_ANNOTATION), name=s.id(n),
                  cat=s.id("step_time"))
    # -- CANN_API -------------------------------------------------------------------------------
    if "CANN_API" in tabs:
        api_types = enum("ENUM_API_TYPE")
        for st, en, typ, gtid, conn, nm in c.execute(
                "select startNs, endNs, type, globalTid, connectionId, name from CANN_API"):
            gtid = to_int(gtid) or 0
            b.add(ts=int(st), dur=max(int(en) - int(st), 0), kind=int(Kind.RUNTIME), name=s.id(name(nm) or ""),
                  cat=s.id(api_types.get(typ, "cann_api")), pid=gtid >> 32, tid=gtid & 0xFFFFFFFF,
                  correlation=NONE if conn is None else int(conn))
    # -- TASK ----------------------------------------------------------------------------------
    devices: set[int] = set()
    if "TASK" in tabs:
        compute: dict[int, tuple] = {}
        if "COMPUTE_TASK_INFO" in tabs:
            for row in c.execute("select globalTaskId, name, blockDim, taskType, inputShapes, opType "
                                 "from COMPUTE_TASK_INFO"):
                compute[row[0]] = row[1:]
        commtask: dict[int, tuple] = {}
        if "COMMUNICATION_TASK_INFO" in tabs:
            for row in c.execute("select globalTaskId, name, taskType, size, groupName from COMMUNICATION_TASK_INFO"):
                commtask[row[0]] = row[1:]
        for st, en, dev, conn, gid, gpid, ttype, stream in c.execute(
                "select startNs, endNs, deviceId, connectionId, globalTaskId, globalPid, taskType, streamId from TASK"):
            dev = NONE if dev is None else int(dev)
            devices.add(dev)
            vals = dict(ts=int(st), dur=max(int(en) - int(st), 0), device=dev, stream=NONE if stream is None else int(stream),
                        tid=NONE if stream is None else int(stream), pid=NONE if gpid is None else int(gpid),
                        correlation=NONE if conn is None else int(conn))
            if conn is not None and conn in ext_of_conn:
                vals["external_id"] = ext_of_conn[conn]
            tt = name(ttype) or ""
            if gid in compute:
                nm, blk, ctype, shp, optype = compute[gid]
                core = name(ctype) or tt
                n = name(nm) or tt
                vals.update(kind=int(Kind.COMM_KERNEL if n.startswith("hcom") else Kind.KERNEL), name=s.id(n),
                            cat=s.id("task"), core=s.id(core), blocks=NONE if blk is None else int(blk))
                sh = norm_shapes(name(shp))
                if sh:
                    vals["shapes"] = s.id(sh)
            elif gid in commtask:
                nm, ctt, size, grp = commtask[gid]
                vals.update(kind=int(Kind.OTHER), name=s.id(name(nm) or name(ctt) or tt), cat=s.id("hccl_task"),
                            bytes=NONE if size is None else int(size), group=s.id(name(grp)))
            else:
                # no COMPUTE_TASK_INFO: not a kernel of the kernel list (e.g. the AI_CORE task that spans a
                # whole HCCL op on the comm stream); memcpy stays MEMCPY, the rest is OTHER
                k = classify_hardware(tt, tt)
                vals.update(kind=int(k if k in (Kind.MEMCPY, Kind.MEMSET) else Kind.OTHER), name=s.id(tt),
                            cat=s.id("task"), core=s.id(tt or None))
            b.add(**vals)
    if "COMMUNICATION_OP" in tabs:
        dtypes = enum("ENUM_HCCL_DATA_TYPE")
        for op, st, en, conn, grp, dt, cnt in c.execute(
                "select opName, startNs, endNs, connectionId, groupName, dataType, count from COMMUNICATION_OP"):
            size = DTYPE_BYTES.get(str(dtypes.get(dt, "")).upper())
            cntv = to_int(cnt)
            vals = dict(ts=int(st), dur=max(int(en) - int(st), 0), kind=int(Kind.COMM_KERNEL),
                        name=s.id(name(op) or ""), cat=s.id("communication_op"), core=s.id("HCCL"),
                        bytes=cntv * size if (size and cntv is not None) else NONE, group=s.id(name(grp)),
                        correlation=NONE if conn is None else int(conn),
                        device=next(iter(devices)) if len(devices) == 1 else NONE)
            if conn is not None and conn in ext_of_conn:
                vals["external_id"] = ext_of_conn[conn]
            b.add(**vals)
    table.events = sort_by_time(b.freeze())
    for d in devices:
        if d != NONE and d not in {x.get("index") for x in meta.devices}:
            meta.devices.append({"kind": "npu", "index": d, "name": "Ascend"})
    # -- memory -----------------------------------------------------------------------------------
    if "MEMORY_RECORD" in tabs:
        rows = c.execute("select component, timestamp, totalAllocated, totalReserved, totalActive, deviceId "
                         "from MEMORY_RECORD").fetchall()
        n = len(rows)
        cols = {k: np.full(n, NONE, dtype=t) for k, t in MEMORY_COLUMNS.items()}
        cols["bytes"][:] = 0
        for i, (comp, ts, a, r, ac, dev) in enumerate(rows):
            cols["ts"][i] = int(ts)
            d = to_int(dev)
            cols["device"][i] = s.id(f"npu:{d}" if d is not None and 0 <= d < 0xFFFF else "CPU")
            for k, v in (("allocated", a), ("reserved", r), ("active", ac)):
                if v is not None:
                    cols[k][i] = int(v)
            cols["component"][i] = s.id(name(comp))
        table.memory = sort_by_time(cols)
    if "OP_MEMORY" in tabs:
        extras["operator_memory"] = [
            {"name": name(nm) or "", "bytes": NONE if sz is None else int(sz),
             "alloc_ns": NONE if at is None else int(at), "free_ns": -1 if rt is None else int(rt),
             "device": f"npu:{int(d)}" if d is not None else "CPU"}
            for nm, sz, at, rt, d in c.execute(
                "select name, size, allocationTime, releaseTime, deviceId from OP_MEMORY")]
    if "NPU_MODULE_MEM" in tabs:
        mods = enum("ENUM_MODULE")
        extras["npu_module_mem"] = [
            {"component": mods.get(m, str(m)), "ts_ns": int(ts), "reserved_bytes": to_int(r),
             "device": f"npu:{int(d)}" if d is not None else "CPU"}
            for m, ts, r, d in c.execute("select moduleId, timestampNs, totalReserved, deviceId from NPU_MODULE_MEM")]
    if "OVERLAP_ANALYSIS" in tabs:
        ov: dict[str, list[list[int]]] = {}
        for st, en, typ in c.execute("select startNs, endNs, type from OVERLAP_ANALYSIS order by startNs"):
            ov.setdefault(_OVERLAP_NAMES.get(typ, str(typ)), []).append([int(st), int(en)])
        if ov:
            extras["overlap_analysis"] = ov


def _read_analysis_db(c: sqlite3.Connection, tabs: set[str], table: EventTable) -> None:
    extras = table.extras
    if "StepTraceTime" in tabs:
        cols = [k for k, _ in T.STEP_FIELDS]
        dbcols = [k[:-3] for k in cols]
        have = _cols(c, "StepTraceTime")
        sel = ", ".join(x if x in have else "NULL" for x in dbcols)
        extras["step_trace"] = [
            {"step": T._step_value(r[0]), **{k: us_float_to_ns(v) for k, v in zip(cols, r[1:])}}
            for r in c.execute(f"select step, {sel} from StepTraceTime")]
    comm: dict[str, dict] = {}
    if "CommAnalyzerTime" in tabs:
        for op, grp, st, el, tr, wa, sy, idle, step, kind in c.execute(
                "select hccl_op_name, group_name, start_timestamp, elapse_time, transit_time, wait_time, "
                "synchronization_time, idle_time, step, type from CommAnalyzerTime"):
            rec = T.comm_op_record(grp, {"Elapse Time(ms)": el, "Transit Time(ms)": tr, "Wait Time(ms)": wa,
                                         "Synchronization Time(ms)": sy, "Idle Time(ms)": idle,
                                         "Start Timestamp(us)": st}, {})
            comm.setdefault(str(step), {}).setdefault(str(kind), {})[op] = rec
    if "CommAnalyzerBandwidth" in tabs:
        for op, grp, tp, size, tt, bw, lpr, pk, cnt, tot, step, kind in c.execute(
                "select hccl_op_name, group_name, transport_type, transit_size, transit_time, bandwidth, "
                "large_packet_ratio, package_size, count, total_duration, step, type from CommAnalyzerBandwidth"):
            rec = comm.setdefault(str(step), {}).setdefault(str(kind), {}).setdefault(
                op, T.comm_op_record(grp, {}, {}))
            sz = to_float(size)
            bwd = rec["bandwidth"].setdefault(tp, {
                "size_bytes": None if sz is None else int(round(sz * T.MB_DECIMAL)), "time_ns": ms_to_ns(tt),
                "bandwidth_gbps": to_float(bw), "large_packet_ratio": to_float(lpr), "size_distribution": {}})
            pkf = to_float(pk)
            if pkf is not None:
                bwd["size_distribution"][str(int(round(pkf * T.MB_DECIMAL)))] = [to_int(cnt), ms_to_ns(tot)]
    if comm:
        extras["communication"] = comm
    if "CommAnalyzerMatrix" in tabs:
        extras["communication_matrix"] = [
            T.matrix_row(step, kind, grp, src, dst, tp, size, tt, bw, op, link)
            for link, grp, src, dst, tp, size, tt, bw, step, kind, op in c.execute(
                "select hccl_op_name, group_name, src_rank, dst_rank, transport_type, transit_size, transit_time, "
                "bandwidth, step, type, op_name from CommAnalyzerMatrix")]
