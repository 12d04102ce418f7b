"""SQLite export of torch_npu (``ascend_pytorch_profiler[_{rank}].db`` + ``analysis.db``) -> EventTable.

Opened immutable (``file:...?immutable=1`` URI: nothing of the user's is written or touched). Times are ns and sizes bytes in the profiler db; names
are ids into STRING_IDS. This module opens the db and reads the window's facts; ``host.py`` the host side
(PYTORCH_API, STEP_TIME, CANN_API), ``device.py`` the device tasks, ``side.py`` memory and the side
tables, all as columns (``columns.py``: values out of SQLite without a Python object per row). The table-by-table mapping is in docs/formats/ascend.md.
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
from typing import Any

from canning_tb.ingest.ascend.info import apply_metadata
from canning_tb.ingest.ascend.merge import fill_events
from canning_tb.ingest.table import EventTable, InputError, Problem
from canning_tb.util.safe_files import open_fd, open_file

from . import host as db_host
from .device import read_device_tasks
from .side import read_analysis_db, read_memory_tables


def _connect(path: str) -> sqlite3.Connection:
    """Open without changing a byte or an mtime of the user's files: `immutable=1` (read-only alone
    still creates or touches -shm / -wal). A db whose -wal holds data not yet checkpointed is opened
    from a private copy instead (immutable would not see that data). The file is opened and checked
    first (safe_files: a regular file inside the logdir), and SQLite opens that very file through the
    descriptor's /proc/self/fd link, so a swap after the check is not followed."""
    try:
        fd = open_fd(path)
    except OSError as e:
        raise sqlite3.OperationalError(f"cannot open: {e.strerror or e}") from None
    try:
        try:
            wal = os.path.getsize(path + "-wal")
        except OSError:
            wal = 0
        if wal:
            return _connect_copy(path, fd)
        proc = f"/proc/self/fd/{fd}"
        conn = sqlite3.connect(_uri(proc if os.path.exists(proc) else path) + "?immutable=1", uri=True)
        conn.execute("select count(*) from sqlite_master").fetchone()  # SQLite opens the file now, while fd is held
        return conn
    finally:
        os.close(fd)


def _uri(path: str) -> str:
    return "file:" + os.path.abspath(path).replace("?", "%3f").replace("#", "%23")


def _connect_copy(path: str, fd: int) -> sqlite3.Connection:
    """The db and its -wal copied to a temporary folder, checkpointed there, and the copy opened
    immutable; the folder is removed at once (the open file stays readable on POSIX)."""
    folder = tempfile.mkdtemp(prefix="canning-db-")
    try:
        copy = os.path.join(folder, os.path.basename(path))
        with os.fdopen(os.dup(fd), "rb") as src, open(copy, "wb") as dst:
            shutil.copyfileobj(src, dst)
        with open_file(path + "-wal") as src, open(copy + "-wal", "wb") as dst:
            shutil.copyfileobj(src, dst)
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


def read_ascend_db(lay, table: EventTable, used: list[str], read_profiler=None, read_analysis=None) -> None:
    """The profiler db (and analysis.db beside it) into table; the two readers are ours unless given."""
    read_profiler = read_profiler or _read_profiler_db
    read_analysis = read_analysis or read_analysis_db
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
        read_profiler(db, table)
    except sqlite3.Error as e:
        table.problems.append(Problem(display, f"SQLite error, partly read: {e}"))
    except (ValueError, TypeError, OverflowError) as e:  # SQLite keeps any type in any column: text in a time column
        raise InputError(display, f"a value is not what torch_npu writes there: {e}") from None
    finally:
        db.c.close()
    if "analysis.db" in lay.names:
        used.append(lay.path("analysis.db"))
        try:
            analysis = Db(_connect(lay.path("analysis.db")))
            try:
                read_analysis(analysis, table)
            finally:
                analysis.c.close()
        except sqlite3.Error as e:
            table.problems.append(Problem(lay.display("analysis.db"), f"SQLite error: {e}"))


def _read_profiler_db(db: Db, table: EventTable) -> None:
    _window_facts(db, table)
    s = table.strings
    host, steps_seen, links = db_host.pytorch_api(db, s)
    parts = [(host, {}), (db_host.step_time(db, s, steps_seen), {}), (db_host.cann_api(db, s), {})]
    parts += read_device_tasks(db, table, links)
    fill_events(table, [(cols, metrics, None) for cols, metrics in parts])  # the text export's one sort and scatter
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
