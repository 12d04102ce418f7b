"""The plain reading of the profiler db's memory tables and counters: one row dict (or tuple) per row."""
from __future__ import annotations

import numpy as np

from canning_tb.ingest import side_tables as side
from .counters import db_counter_rows
from .csv_io import to_int
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
