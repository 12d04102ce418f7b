"""SQLite export of torch_npu (``ascend_pytorch_profiler[_{rank}].db`` + ``analysis.db``) -> EventTable.

Opened immutable (``file:...?immutable=1`` URI: nothing of the user's is written or touched). Times are ns and sizes bytes in the profiler db; names
are ids into STRING_IDS. This module reads the window's facts and the host side (PYTORCH_API,
STEP_TIME, CANN_API); ``ascend_db_device`` the device tasks; ``ascend_db_side`` memory and the side
tables. The table-by-table mapping is in docs/formats/ascend.md.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import tempfile
from typing import Any

from .csv_io import norm_shapes, to_int
from .db_device import read_device_tasks
from .db_side import read_analysis_db, read_memory_tables
from canning_tb.ingest.ascend.info import apply_metadata
from canning_tb.ingest.table import (EVENT_COLUMNS, NONE, ColumnBuilder, EventTable, InputError, Kind, Problem, metric_columns,
                    sort_with_metrics)

_SHAPE_RE = re.compile(r"^[\d,\s;\[\]\"\r\n-]*$")
_API_CATS = {50001: "cpu_op", 50002: "queue", 50003: "python_function", 50004: "mstx"}


def _connect(path: str) -> sqlite3.Connection:
    """Open without changing a byte or an mtime of the user's files: `immutable=1` (read-only alone
    still creates or touches -shm / -wal). A db whose -wal holds data not yet checkpointed is opened
    from a private copy instead (immutable would not see that data)."""
    try:
        wal = os.path.getsize(path + "-wal")
    except OSError:
        wal = 0
    if wal:
        return _connect_copy(path)
    return sqlite3.connect(_uri(path) + "?immutable=1", uri=True)


def _uri(path: str) -> str:
    return "file:" + os.path.abspath(path).replace("?", "%3f").replace("#", "%23")


def _connect_copy(path: str) -> sqlite3.Connection:
    """The db and its -wal copied to a temporary folder, checkpointed there, and the copy opened
    immutable; the folder is removed at once (the open file stays readable on POSIX)."""
    folder = tempfile.mkdtemp(prefix="canning-db-")
    try:
        copy = os.path.join(folder, os.path.basename(path))
        shutil.copyfile(path, copy)
        shutil.copyfile(path + "-wal", copy + "-wal")
        own = sqlite3.connect(copy)
        try:
            own.execute("pragma wal_checkpoint(TRUNCATE)").fetchall()
        finally:
            own.close()
        conn = sqlite3.connect(_uri(copy) + "?immutable=1", uri=True)
        conn.execute("select count(*) from sqlite_master").fetchone()  # opens the file before it is removed
        return conn
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class Db:
    """One open profiler db: its tables, strings and enums."""

    def __init__(self, conn: sqlite3.Connection):
        self.c = conn
        self.tables = {r[0] for r in conn.execute("select name from sqlite_master where type='table'")}
        self.strings: dict[int, str] = dict(conn.execute("select id, value from STRING_IDS")) \
            if "STRING_IDS" in self.tables else {}

    def name(self, i: Any) -> str | None:
        return None if i is None else self.strings.get(i)

    def enum(self, t: str) -> dict[int, str]:
        return dict(self.c.execute(f'select id, name from "{t}"')) if t in self.tables else {}

    def columns(self, t: str) -> set[str]:
        return {r[1] for r in self.c.execute(f'pragma table_info("{t}")')}

    def rows(self, t: str, sql: str):
        """The rows of `sql` when table t exists, else none."""
        return self.c.execute(sql) if t in self.tables else ()


def read_ascend_db(lay, table: EventTable, used: list[str]) -> None:
    path, display = lay.path(lay.db), lay.display(lay.db)
    used.append(path)
    try:
        db = Db(_connect(path))
    except sqlite3.Error as e:
        raise InputError(display, f"not a readable SQLite file: {e}") from None
    if not db.tables:
        db.c.close()
        raise InputError(display, "a SQLite file without any table (an empty or unfinished export?)")
    try:
        _read_profiler_db(db, table)
    except sqlite3.Error as e:
        table.problems.append(Problem(display, f"SQLite error, partly read: {e}"))
    finally:
        db.c.close()
    if "analysis.db" in lay.names:
        used.append(lay.path("analysis.db"))
        try:
            analysis = Db(_connect(lay.path("analysis.db")))
            try:
                read_analysis_db(analysis, table)
            finally:
                analysis.c.close()
        except sqlite3.Error as e:
            table.problems.append(Problem(lay.display("analysis.db"), f"SQLite error: {e}"))


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


def _window_facts(db: Db, table: EventTable) -> None:
    meta = table.meta
    for did, nm in db.rows("NPU_INFO", "select id, name from NPU_INFO"):
        meta.devices.append({"kind": "npu", "index": int(did), "name": f"Ascend ({nm})" if nm else "Ascend"})
    for rank, _dev in db.rows("RANK_DEVICE_MAP", "select rankId, deviceId from RANK_DEVICE_MAP"):
        if rank is not None and int(rank) >= 0 and meta.environment.get("rank_source") is None:
            meta.rank = int(rank)
            meta.environment["rank_source"] = "RANK_DEVICE_MAP"
    for start, end in db.rows("SESSION_TIME_INFO", "select startTimeNs, endTimeNs from SESSION_TIME_INFO"):
        if meta.start_ns < 0:
            meta.start_ns = int(start)
        if meta.end_ns < 0:
            meta.end_ns = int(end)
    for (host,) in db.rows("HOST_INFO", "select hostName from HOST_INFO"):
        meta.host = str(host or meta.host)
    md = {}
    for k, v in db.rows("META_DATA", "select name, value from META_DATA"):
        try:
            md[k] = json.loads(v) if isinstance(v, str) and v[:1] in "{[" else v
        except (ValueError, RecursionError):
            md[k] = v
    if md:
        apply_metadata(md, table)
        if "comm_groups" in table.side:
            meta.environment["source.comm_groups"] = "META_DATA"


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
                                    pid=gtid >> 32, tid=gtid & 0xFFFFFFFF, shapes=s.id(_shapes(db, shapes1, shapes2)))
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
