"""The plain reading of the profiler db: PYTORCH_API, STEP_TIME, CANN_API one row at a time into a
ColumnBuilder (opening the db, its window facts and analysis.db are canning-tb's own: db.py, db_side.py)."""
from __future__ import annotations

import re
from typing import Any

from canning_tb.ingest.ascend.db import read as columnar_db
from canning_tb.ingest.ascend.db.read import Db, _window_facts
from canning_tb.ingest.ascend.db.side import read_analysis_db
from canning_tb.ingest import op_args
from canning_tb.ingest.table import EVENT_COLUMNS, NONE, ColumnBuilder, EventTable, Kind, metric_columns, sort_with_metrics

from .csv_io import norm_shapes, to_int
from .db_device import read_device_tasks
from .db_side import read_memory_tables

_SHAPE_RE = re.compile(r"^[\d,\s;\[\]\"\r\n-]*$")
_API_CATS = {50001: "cpu_op", 50002: "queue", 50003: "python_function", 50004: "mstx"}


def read_ascend_db(lay, table: EventTable, used: list[str]) -> None:
    columnar_db.read_ascend_db(lay, table, used, _read_profiler_db, read_analysis_db)


def _read_profiler_db(db: Db, table: EventTable) -> None:
    _window_facts(db, table)
    b = ColumnBuilder(EVENT_COLUMNS)
    ext_of_conn: dict[int, int] = {}
    steps_seen = _pytorch_api(db, table, b, ext_of_conn)
    _step_time(db, table, b, steps_seen)
    _cann_api(db, table, b)
    metrics: dict[int, dict] = {}
    read_device_tasks(db, table, b, ext_of_conn, metrics)
    table.events, table.metrics = sort_with_metrics(b.freeze(), metric_columns(metrics.items(), len(b)))
    read_memory_tables(db, table)


def _exact_int(v):
    """PYTORCH_API keeps its ns times as text: every digit counts (a float would round them to 256 ns)."""
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    return to_int(v)


def _api_kind(typ: int | None, name: str) -> Kind:
    if typ == 50001:
        return Kind.USER_ANNOTATION if name.startswith("ProfilerStep#") else Kind.CPU_OP
    return Kind.PYTHON_FUNCTION if typ == 50003 else Kind.OTHER


def _pytorch_links(db: Db) -> tuple[dict[int, list[int]], dict[int, list[str]]]:
    """(PYTORCH_API connectionId -> device connection ids, callchain id -> frames)."""
    conn_map: dict[int, list[int]] = {}
    for i, cid in db.rows("CONNECTION_IDS", "select id, connectionId from CONNECTION_IDS"):
        conn_map.setdefault(i, []).append(cid)
    chains: dict[int, list[str]] = {}
    for i, st, _d in db.rows("PYTORCH_CALLCHAINS",
                             "select id, stack, stackDepth from PYTORCH_CALLCHAINS order by id, stackDepth"):
        chains.setdefault(i, []).append(db.strings.get(st, ""))
    return conn_map, chains


def _shapes(db: Db, *cells) -> str | None:
    """Some versions swap inputShapes / inputDtypes: the cell whose string looks like shapes."""
    for cell in cells:
        text = db.name(cell)
        if text and _SHAPE_RE.match(text):
            return norm_shapes(text)
    return None


def _dtypes(db: Db, *cells) -> str | None:
    """The `args` of a PYTORCH_API row: its input dtypes, from the cell that does not hold shapes."""
    for cell in cells:
        text = db.name(cell)
        if text and not _SHAPE_RE.match(text):
            return op_args.encode(types=op_args.split_list(text))
    return None


def _pytorch_api(db: Db, table: EventTable, b: ColumnBuilder, ext_of_conn: dict[int, int]) -> set[str]:
    """PYTORCH_API rows -> host events; the ProfilerStep names seen."""
    if "PYTORCH_API" not in db.tables:
        return set()
    s = table.strings
    conn_map, chains = _pytorch_links(db)
    steps_seen: set[str] = set()
    next_ext = 1
    for st, en, gtid, conn, nm, shapes1, shapes2, chain, typ in db.c.execute(
            "select startNs, endNs, globalTid, connectionId, name, inputShapes, inputDtypes, callchainId, type "
            "from PYTORCH_API"):
        ts = _exact_int(st)
        if ts is None:
            continue
        name = db.name(nm) or ""
        kind = _api_kind(to_int(typ), name)
        if kind == Kind.USER_ANNOTATION:
            steps_seen.add(name)
        gtid = to_int(gtid) or 0
        vals: dict[str, Any] = dict(ts=ts, dur=max((_exact_int(en) or ts) - ts, 0), kind=int(kind), name=s.id(name),
                                    cat=s.id(_API_CATS.get(to_int(typ), "pytorch_api")),
                                    pid=gtid >> 32, tid=gtid & 0xFFFFFFFF, shapes=s.id(_shapes(db, shapes1, shapes2)),
                                    args=s.id(_dtypes(db, shapes1, shapes2)))
        if chain in chains:
            vals["stack"] = s.id(";".join(f for f in chains[chain] if f))
        if conn in conn_map and kind in (Kind.CPU_OP, Kind.USER_ANNOTATION):
            vals["external_id"] = next_ext
            for cid in conn_map[conn]:
                ext_of_conn.setdefault(cid, next_ext)
            next_ext += 1
        b.add(**vals)
    return steps_seen


def _step_time(db: Db, table: EventTable, b: ColumnBuilder, steps_seen: set[str]) -> None:
    """STEP_TIME -> ProfilerStep#<id> ranges PYTORCH_API does not already hold."""
    s = table.strings
    for sid, st, en in db.rows("STEP_TIME", "select id, startNs, endNs from STEP_TIME"):
        name = f"ProfilerStep#{sid}"
        if name in steps_seen or st is None:
            continue
        b.add(ts=int(st), dur=max(int(en or st) - int(st), 0), kind=int(Kind.USER_ANNOTATION), name=s.id(name),
              cat=s.id("step_time"))


def _cann_api(db: Db, table: EventTable, b: ColumnBuilder) -> None:
    s = table.strings
    api_types = db.enum("ENUM_API_TYPE")
    for st, en, typ, gtid, conn, nm in db.rows(
            "CANN_API", "select startNs, endNs, type, globalTid, connectionId, name from CANN_API"):
        gtid = to_int(gtid) or 0
        b.add(ts=int(st), dur=max(int(en) - int(st), 0), kind=int(Kind.RUNTIME), name=s.id(db.name(nm) or ""),
              cat=s.id(api_types.get(typ, "cann_api")), pid=gtid >> 32, tid=gtid & 0xFFFFFFFF,
              correlation=NONE if conn is None else int(conn))
