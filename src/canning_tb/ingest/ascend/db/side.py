"""Memory and side tables of the torch_npu SQLite export: MEMORY_RECORD -> memory columns;
OP_MEMORY, NPU_MODULE_MEM, OVERLAP_ANALYSIS and analysis.db's StepTraceTime, CommAnalyzerTime,
CommAnalyzerBandwidth, CommAnalyzerMatrix -> the side tables the text files give (analysis.db keeps
the JSON's units: ms, MB, µs; converted the same way)."""
from __future__ import annotations

import numpy as np

from canning_tb.ingest import side_tables as side
from canning_tb.ingest.ascend import tables as T
from canning_tb.ingest.ascend.counters import db_counter_rows
from canning_tb.ingest.ascend.csv import tables as C
from canning_tb.ingest.ascend.csv.rows import ms_to_ns, to_float, to_int, us_float_to_ns
from canning_tb.ingest.table import MEMORY_COLUMNS, NONE, EventTable, sort_by_time

from . import columns as q

_OVERLAP_NAMES = {0: "Computing", 1: "Communication", 2: "Communication(Not Overlapped)", 3: "Free"}
# StepTraceTime's column of a step_trace field is the field less "_ns", but for this one (torch_npu's name)
_STEP_COLUMNS = {"communication_not_overlapped_exclude_receive_ns": "communication_not_overlapped_and_exclude_receive"}


def _device(d) -> str:
    d = to_int(d)
    return f"npu:{d}" if d is not None and 0 <= d < 0xFFFF else "CPU"


def _device_of(value, _id=None) -> str:
    return _device(None if value == q.INT_NULL else value)


def _devices(ids: np.ndarray) -> tuple[np.ndarray, list]:
    uniq, inverse = np.unique(ids, return_inverse=True)
    names = [_device_of(int(u)) for u in uniq]
    values = list(dict.fromkeys(names))
    codes = np.array([values.index(x) for x in names], np.int32)
    return (codes[inverse] if len(uniq) else np.zeros(0, np.int32)), values


def _memory_record(db, table: EventTable) -> None:
    if "MEMORY_RECORD" not in db.tables:
        return
    c = q.select(db.c, "MEMORY_RECORD", ints=["component", "timestamp", "totalAllocated", "totalReserved",
                                              "totalActive", "deviceId"])
    if not len(c["timestamp"]):
        return
    s = table.strings
    codes, names = _devices(c["deviceId"])
    cols = {k: np.full(len(c["timestamp"]), NONE, t) for k, t in MEMORY_COLUMNS.items()}
    cols["bytes"][:] = 0
    cols["ts"] = c["timestamp"]
    cols["device"] = np.array([s.id(x) for x in names], np.int32)[codes] if names else cols["device"]
    for k, col in (("allocated", "totalAllocated"), ("reserved", "totalReserved"), ("active", "totalActive")):
        cols[k] = q.or_none(c[col], NONE)
    cols["component"] = q.text_ids(db, c["component"], s)
    table.memory = sort_by_time({k: v.astype(MEMORY_COLUMNS[k], copy=False) for k, v in cols.items()})


def read_memory_tables(db, table: EventTable) -> None:
    _memory_record(db, table)
    if "OP_MEMORY" in db.tables:
        c = q.select(db.c, "OP_MEMORY", ints=["name", "size", "allocationTime", "releaseTime", "deviceId"])
        side.put(table.side, "operator_memory", side.Columns.build(
            "operator_memory", name=q.texts(db, c["name"], lambda v, _: v or ""), bytes=c["size"],
            alloc_ns=q.or_none(c["allocationTime"], NONE), free_ns=q.or_none(c["releaseTime"], NONE),
            device=_devices(c["deviceId"])))
    if "NPU_MODULE_MEM" in db.tables:
        mods = db.enum("ENUM_MODULE")
        c = q.select(db.c, "NPU_MODULE_MEM", ints=["moduleId", "timestampNs", "totalReserved", "deviceId"])
        side.put(table.side, "npu_module_mem", side.Columns.build(
            "npu_module_mem", component=_enum_texts(c["moduleId"], mods), ts_ns=c["timestampNs"],
            reserved_bytes=c["totalReserved"], device=_devices(c["deviceId"])))
    if "OVERLAP_ANALYSIS" in db.tables:
        c = q.select(db.c, "OVERLAP_ANALYSIS", ints=["startNs", "endNs", "type"], order="startNs")
        side.put(table.side, "overlap_analysis", side.Columns.build(
            "overlap_analysis", name=_enum_texts(c["type"], _OVERLAP_NAMES), start_ns=c["startNs"], end_ns=c["endNs"]))
    counters = db_counter_rows(db)
    if counters is not None:
        side.put(table.side, "npu_counters", counters)


def _enum_texts(ids: np.ndarray, names: dict) -> tuple[np.ndarray, list]:
    uniq, inverse = np.unique(ids, return_inverse=True)
    texts = [names.get(int(u), str(None if u == q.INT_NULL else int(u))) for u in uniq]
    values = list(dict.fromkeys(texts))
    codes = np.array([values.index(t) for t in texts], np.int32)
    return (codes[inverse] if len(uniq) else np.zeros(0, np.int32)), values


def _step_trace(db, table: EventTable) -> None:
    if "StepTraceTime" not in db.tables:
        return
    fields = [k for k, _ in C.STEP_FIELDS]
    have = db.columns("StepTraceTime")
    columns = [next((c for c in (f[:-3], _STEP_COLUMNS.get(f)) if c in have), "NULL") for f in fields]
    sel = ", ".join(columns)
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
