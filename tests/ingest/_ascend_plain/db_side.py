"""Memory and side tables of the torch_npu SQLite export: MEMORY_RECORD -> memory columns;
OP_MEMORY, NPU_MODULE_MEM, OVERLAP_ANALYSIS and analysis.db's StepTraceTime, CommAnalyzerTime,
CommAnalyzerBandwidth, CommAnalyzerMatrix -> the side tables the text files give (analysis.db keeps
the JSON's units: ms, MB, µs; converted the same way)."""
from __future__ import annotations

import numpy as np

from . import tables as T
from canning_tb.ingest import side_tables as side
from .counters import db_counter_rows
from .csv_io import ms_to_ns, to_float, to_int, us_float_to_ns
from canning_tb.ingest.table import MEMORY_COLUMNS, NONE, EventTable, sort_by_time

_OVERLAP_NAMES = {0: "Computing", 1: "Communication", 2: "Communication(Not Overlapped)", 3: "Free"}


def _device(d) -> str:
    d = to_int(d)
    return f"npu:{d}" if d is not None and 0 <= d < 0xFFFF else "CPU"


def _memory_record(db, table: EventTable) -> None:
    rows = list(db.rows("MEMORY_RECORD", "select component, timestamp, totalAllocated, totalReserved, totalActive, "
                                         "deviceId from MEMORY_RECORD"))
    if not rows:
        return
    s = table.strings
    cols = {k: np.full(len(rows), NONE, dtype=t) for k, t in MEMORY_COLUMNS.items()}
    cols["bytes"][:] = 0
    for i, (comp, ts, allocated, reserved, active, dev) in enumerate(rows):
        cols["ts"][i] = int(ts)
        cols["device"][i] = s.id(_device(dev))
        for k, v in (("allocated", allocated), ("reserved", reserved), ("active", active)):
            if v is not None:
                cols[k][i] = int(v)
        cols["component"][i] = s.id(db.name(comp))
    table.memory = sort_by_time(cols)


def read_memory_tables(db, table: EventTable) -> None:
    _memory_record(db, table)
    side.put(table.side, "operator_memory", [
        side.row("operator_memory", name=db.name(nm) or "", bytes=to_int(sz), alloc_ns=NONE if at is None else int(at),
                 free_ns=NONE if rt is None else int(rt), device=_device(d))
        for nm, sz, at, rt, d in db.rows("OP_MEMORY", "select name, size, allocationTime, releaseTime, deviceId "
                                                      "from OP_MEMORY")])
    mods = db.enum("ENUM_MODULE")
    side.put(table.side, "npu_module_mem", [
        side.row("npu_module_mem", component=mods.get(m, str(m)), ts_ns=int(ts), reserved_bytes=to_int(r),
                 device=_device(d))
        for m, ts, r, d in db.rows("NPU_MODULE_MEM", "select moduleId, timestampNs, totalReserved, deviceId "
                                                     "from NPU_MODULE_MEM")])
    side.put(table.side, "overlap_analysis", [
        side.row("overlap_analysis", name=_OVERLAP_NAMES.get(typ, str(typ)), start_ns=int(st), end_ns=int(en))
        for st, en, typ in db.rows("OVERLAP_ANALYSIS", "select startNs, endNs, type from OVERLAP_ANALYSIS "
                                                       "order by startNs")])
    side.put(table.side, "npu_counters", db_counter_rows(db))


def _step_trace(db, table: EventTable) -> None:
    if "StepTraceTime" not in db.tables:
        return
    fields = [k for k, _ in T.STEP_FIELDS]
    have = db.columns("StepTraceTime")
    sel = ", ".join(f[:-3] if f[:-3] in have else "NULL" for f in fields)
    side.put(table.side, "step_trace", [
        side.row("step_trace", step=T.step_value(r[0]), **{k: us_float_to_ns(v) for k, v in zip(fields, r[1:])})
        for r in db.c.execute(f"select step, {sel} from StepTraceTime")])


def _comm_ops(db, table: EventTable) -> None:
    side.put(table.side, "comm_ops", [
        T.comm_time_row({"step": T.step_value(step), "kind": str(kind), "op": str(op), "group": str(grp or "")},
                        {"Elapse Time(ms)": el, "Transit Time(ms)": tr, "Wait Time(ms)": wa,
                         "Synchronization Time(ms)": sy, "Idle Time(ms)": idle, "Start Timestamp(us)": st})
        for op, grp, st, el, tr, wa, sy, idle, step, kind in db.rows(
            "CommAnalyzerTime", "select hccl_op_name, group_name, start_timestamp, elapse_time, transit_time, "
                                "wait_time, synchronization_time, idle_time, step, type from CommAnalyzerTime")
        if op != T.TOTAL_OP_INFO])


def _comm_bandwidth(db, table: EventTable) -> None:
    """One CommAnalyzerBandwidth row per (op, transport, packet size): the link figures repeat."""
    links: dict[tuple, dict] = {}
    packets = []
    for op, grp, tp, size, tt, bw, lpr, pk, cnt, tot, step, kind in db.rows(
            "CommAnalyzerBandwidth", "select hccl_op_name, group_name, transport_type, transit_size, transit_time, "
                                     "bandwidth, large_packet_ratio, package_size, count, total_duration, step, type "
                                     "from CommAnalyzerBandwidth"):
        if op == T.TOTAL_OP_INFO:
            continue
        key = {"step": T.step_value(step), "kind": str(kind), "op": str(op), "group": str(grp or "")}
        links.setdefault((*key.values(), tp), side.row(
            "comm_bandwidth", **key, transport=str(tp), size_bytes=T.mb_decimal_to_bytes(size), time_ns=ms_to_ns(tt),
            bandwidth_gbps=to_float(bw), large_packet_ratio=to_float(lpr)))
        if T.mb_decimal_to_bytes(pk) is not None:
            packets.append(side.row("comm_packets", **key, transport=str(tp), packet_bytes=T.mb_decimal_to_bytes(pk),
                                    count=to_int(cnt), time_ns=ms_to_ns(tot)))
    side.put(table.side, "comm_bandwidth", list(links.values()))
    side.put(table.side, "comm_packets", packets)


def read_analysis_db(db, table: EventTable) -> None:
    _step_trace(db, table)
    _comm_ops(db, table)
    _comm_bandwidth(db, table)
    side.put(table.side, "comm_matrix", [
        T.matrix_row(step, kind, grp, src, dst, tp, size, tt, bw, op, link)
        for link, grp, src, dst, tp, size, tt, bw, step, kind, op in db.rows(
            "CommAnalyzerMatrix", "select hccl_op_name, group_name, src_rank, dst_rank, transport_type, transit_size, "
                                  "transit_time, bandwidth, step, type, op_name from CommAnalyzerMatrix")])
