"""ingest/ascend/db/read.py under mutation (issue 46): opening the db untouched (immutable, or a private copy when
its -wal holds data), the URI's escapes, Db's look-ups, read_ascend_db's errors and problems, and the window's facts
(NPU_INFO, RANK_DEVICE_MAP, SESSION_TIME_INFO, HOST_INFO, META_DATA); on small db files made here
(tests/_ascend_db_make.py). Every answer by hand."""
from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile

import pytest

from _ascend_db_make import make_db, open_db
from canning_tb.ingest.ascend.db import read
from canning_tb.ingest.ascend.layout import Layout
from canning_tb.ingest.table import EventTable, InputError


def _layout(tmp_path, names=("p.db",)):
    out = tmp_path / "w" / "OUT"
    out.mkdir(parents=True, exist_ok=True)
    return Layout(root=str(tmp_path / "w"), out_dir=str(out), base="w", names=frozenset(names), db="p.db"), out


def test_uri_escapes_and_makes_absolute(tmp_path, monkeypatch):
    """'?' and '#' would end a file: URI's path: %3f and %23; a relative path is made absolute."""
    assert read._uri("/a/b?c#d.db") == "file:/a/b%3fc%23d.db"
    monkeypatch.chdir(tmp_path)
    assert read._uri("x.db") == "file:" + str(tmp_path) + "/x.db"


def test_connect_reads_and_leaves_the_file_as_it_was(tmp_path):
    """A plain db (a name with '?' and '#'): its tables read; not a byte, an mtime or a -shm / -wal file
    changed or made."""
    path = tmp_path / "a?b#c.db"
    make_db(path, {"STRING_IDS": [(1, "x")]})
    os.utime(path, ns=(10**18, 10**18))
    before = path.read_bytes()
    conn = read._connect(str(path))
    try:
        assert conn.execute("select value from STRING_IDS").fetchall() == [("x",)]
    finally:
        conn.close()
    assert path.read_bytes() == before and path.stat().st_mtime_ns == 10**18
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a?b#c.db"]


def test_connect_sees_the_rows_a_wal_holds(tmp_path, monkeypatch):
    """A db whose -wal holds rows not yet checkpointed (copied while its writer is open): the rows are read (from a
    private copy, its folder removed at once), the user's db and -wal untouched."""
    src = tmp_path / "src.db"
    w = sqlite3.connect(src)
    w.execute("pragma journal_mode=wal")
    w.execute("pragma wal_autocheckpoint=0")
    w.execute("create table t (a)")
    w.commit()
    w.execute("pragma wal_checkpoint(TRUNCATE)")
    w.executemany("insert into t values (?)", [(1,), (2,), (3,)])
    w.commit()
    (tmp_path / "user").mkdir()
    db = tmp_path / "user" / "p.db"
    shutil.copy(src, db)
    shutil.copy(str(src) + "-wal", str(db) + "-wal")
    w.close()
    assert os.path.getsize(str(db) + "-wal") > 0
    plain = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
    assert plain.execute("select count(*) from t").fetchone() == (0,)  # immutable alone misses the -wal's rows
    plain.close()
    before = {p.name: p.read_bytes() for p in (tmp_path / "user").iterdir()}
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")  # nothing is copied beside the process either
    conn = read._connect(str(db))
    try:
        assert conn.execute("select a from t order by a").fetchall() == [(1,), (2,), (3,)]
    finally:
        conn.close()
    assert {p.name: p.read_bytes() for p in (tmp_path / "user").iterdir()} == before
    assert list(temp.iterdir()) == [] and list((tmp_path / "cwd").iterdir()) == []


def test_connect_of_no_file_is_an_operational_error(tmp_path):
    """No such file: sqlite3.OperationalError 'cannot open: <the OS's words>'."""
    with pytest.raises(sqlite3.OperationalError) as e:
        read._connect(str(tmp_path / "none.db"))
    assert str(e.value) == "cannot open: No such file or directory"


def test_db_lookups_by_hand(tmp_path):
    """Db: its tables, STRING_IDS as a dict, name of None / a known / an unknown id, an enum table (absent: {}),
    a table's columns, rows of an absent table: none."""
    db = open_db(make_db(tmp_path / "p.db", {"STRING_IDS": [(1, "x"), (2, "y")], "ENUM_MODULE": [(0, "SLOG")],
                                             "NPU_INFO": [(0, "910B")]}))
    assert db.tables == {"STRING_IDS", "ENUM_MODULE", "NPU_INFO"}
    assert db.strings == {1: "x", 2: "y"}
    assert (db.name(None), db.name(1), db.name(3)) == (None, "x", None)
    assert db.enum("ENUM_MODULE") == {0: "SLOG"} and db.enum("ENUM_API_TYPE") == {}
    assert db.columns("NPU_INFO") == {"id", "name"}
    assert list(db.rows("NPU_INFO", "select name from NPU_INFO")) == [("910B",)]
    assert list(db.rows("HOST_INFO", "select hostName from HOST_INFO")) == []
    db = open_db(make_db(tmp_path / "q.db", {"NPU_INFO": []}))
    assert db.strings == {}


def test_read_errors_and_problems(tmp_path):
    """Not SQLite: InputError 'not a readable SQLite file'; no table: 'a SQLite file without any table'; the
    profiler reader's sqlite3.Error: a problem 'SQLite error, partly read'; its ValueError: InputError 'a value is
    not what torch_npu writes there'; each path in `used`."""
    lay, out = _layout(tmp_path)
    (out / "p.db").write_bytes(b"not a database at all" * 100)
    used = []
    with pytest.raises(InputError) as e:
        read.read_ascend_db(lay, EventTable(), used)
    assert e.value.file == "w/OUT/p.db" and e.value.problem.startswith("not a readable SQLite file: ")
    assert used == [str(out / "p.db")]
    (out / "p.db").unlink()
    sqlite3.connect(out / "p.db").close()
    with pytest.raises(InputError) as e:
        read.read_ascend_db(lay, EventTable(), [])
    assert e.value.problem == "a SQLite file without any table (an empty or unfinished export?)"
    assert e.value.file == "w/OUT/p.db"
    (out / "p.db").unlink()
    make_db(out / "p.db", {"STRING_IDS": []})

    def fails(error):
        def reader(db, table):
            assert db.tables == {"STRING_IDS"}
            raise error
        return reader
    t = EventTable()
    read.read_ascend_db(lay, t, [], read_profiler=fails(sqlite3.OperationalError("disk I/O error")))
    assert [(p.file, p.message, p.severity) for p in t.problems] == [
        ("w/OUT/p.db", "SQLite error, partly read: disk I/O error", "error")]
    for error in (ValueError("v"), TypeError("t"), OverflowError("o")):
        with pytest.raises(InputError) as e:
            read.read_ascend_db(lay, EventTable(), [], read_profiler=fails(error))
        assert e.value.problem == f"a value is not what torch_npu writes there: {error}"
        assert e.value.file == "w/OUT/p.db"
    with pytest.raises(KeyError):  # anything else is no input error
        read.read_ascend_db(lay, EventTable(), [], read_profiler=fails(KeyError("k")))


def test_analysis_db_read_or_a_problem(tmp_path):
    """analysis.db among the names: read by the analysis reader (path in `used`); a broken one: a problem
    'SQLite error: ...' naming it; not among the names: not read."""
    lay, out = _layout(tmp_path, names=("p.db", "analysis.db"))
    make_db(out / "p.db", {"STRING_IDS": []})
    make_db(out / "analysis.db", {"StepTraceTime": []})
    seen, used = [], []
    t = EventTable()
    read.read_ascend_db(lay, t, used, read_profiler=lambda db, table: seen.append(("p", sorted(db.tables))),
                        read_analysis=lambda db, table: seen.append(("a", sorted(db.tables))))
    assert seen == [("p", ["STRING_IDS"]), ("a", ["StepTraceTime"])] and t.problems == []
    assert used == [str(out / "p.db"), str(out / "analysis.db")]
    (out / "analysis.db").write_bytes(b"garbage!" * 600)
    t = EventTable()
    read.read_ascend_db(lay, t, [], read_profiler=lambda db, table: None)
    assert len(t.problems) == 1 and t.problems[0].file == "w/OUT/analysis.db"
    assert t.problems[0].message.startswith("SQLite error: ") and t.problems[0].severity == "error"

    def broken(db, table):
        raise sqlite3.DatabaseError("malformed")
    (out / "analysis.db").unlink()
    make_db(out / "analysis.db", {"StepTraceTime": []})
    t = EventTable()
    read.read_ascend_db(lay, t, [], read_profiler=lambda db, table: None, read_analysis=broken)
    assert [(p.file, p.message) for p in t.problems] == [("w/OUT/analysis.db", "SQLite error: malformed")]
    lay, out = _layout(tmp_path / "x")
    make_db(out / "p.db", {"STRING_IDS": []})
    make_db(out / "analysis.db", {"StepTraceTime": []})
    used = []
    read.read_ascend_db(lay, EventTable(), used, read_profiler=lambda db, table: None,
                        read_analysis=lambda db, table: seen.append("never"))
    assert used == [str(out / "p.db")] and "never" not in seen


def test_window_facts_by_hand(tmp_path):
    """NPU_INFO -> devices ('Ascend (name)', or 'Ascend' for none); the first RANK_DEVICE_MAP rank >= 0 (NULL and
    -1 skipped); the first session start / end; the last host name (NULL keeps the one before); META_DATA values,
    JSON when they begin with '{' or '[' (bad or too deep JSON kept as text), parallel_group_info -> comm_groups
    from META_DATA."""
    groups = '{"g1": {"group_name": "dp", "group_rank": 1, "global_ranks": [0, 1, 2]}}'
    deep = "[" * 100000
    tables = {"STRING_IDS": [], "NPU_INFO": [(3, "910B"), (5, None), (6, "")],
              "RANK_DEVICE_MAP": [(None, 3), (-1, 3), (4, 3), (7, 5)],
              "SESSION_TIME_INFO": [(1000, 9000), (2000, 8000)], "HOST_INFO": [("u", "node1"), ("v", None)],
              "META_DATA": [("obj", '{"a": 1}'), ("lst", "[1,2]"), ("bad", "{nope"), ("spaced", " [1]"),
                            ("deep", deep), ("parallel_group_info", groups)]}
    lay, out = _layout(tmp_path)
    make_db(out / "p.db", tables)
    t = EventTable()
    read.read_ascend_db(lay, t, [], read_profiler=read._window_facts)
    m, env = t.meta, t.meta.environment
    assert m.devices == [{"kind": "npu", "index": 3, "name": "Ascend (910B)"},
                         {"kind": "npu", "index": 5, "name": "Ascend"}, {"kind": "npu", "index": 6, "name": "Ascend"}]
    assert m.rank == 4 and env["rank_source"] == "RANK_DEVICE_MAP"
    assert (m.start_ns, m.end_ns) == (1000, 9000)
    assert m.host == "node1"
    assert env["metadata.obj"] == '{"a": 1}' and env["metadata.lst"] == "[1, 2]"
    assert env["metadata.bad"] == "{nope" and env["metadata.spaced"] == " [1]" and env["metadata.deep"] == deep
    assert list(t.side["comm_groups"]) == [{"group": "g1", "name": "dp", "rank_in_group": 1, "ranks": "0,1,2"}]
    assert env["source.comm_groups"] == "META_DATA"


def test_window_facts_keep_what_is_known(tmp_path):
    """A rank already given (rank_source set), start / end already known: kept; no META_DATA: no metadata; no
    tables at all but STRING_IDS: nothing changes."""
    lay, out = _layout(tmp_path)
    make_db(out / "p.db", {"STRING_IDS": [], "RANK_DEVICE_MAP": [(2, 0)], "SESSION_TIME_INFO": [(5, 6)],
                           "META_DATA": [("k", "v")]})
    t = EventTable()
    t.meta.rank, t.meta.start_ns, t.meta.end_ns = 9, 100, 200
    t.meta.environment["rank_source"] = "profiler_metadata"
    t.meta.host = "h"
    read.read_ascend_db(lay, t, [], read_profiler=read._window_facts)
    assert (t.meta.rank, t.meta.start_ns, t.meta.end_ns, t.meta.host) == (9, 100, 200, "h")
    assert t.meta.environment == {"rank_source": "profiler_metadata", "metadata.k": "v"}
    assert "comm_groups" not in t.side


def test_rank_0_and_times_of_0_are_values(tmp_path):
    """RANK_DEVICE_MAP rank 0 is a rank (rank_source set); a start / end of 0 already known is kept."""
    lay, out = _layout(tmp_path)
    make_db(out / "p.db", {"STRING_IDS": [], "RANK_DEVICE_MAP": [(0, 0), (3, 1)], "SESSION_TIME_INFO": [(5, 6)]})
    t = EventTable()
    t.meta.rank, t.meta.start_ns, t.meta.end_ns = 9, 0, 0
    read.read_ascend_db(lay, t, [], read_profiler=read._window_facts)
    assert (t.meta.rank, t.meta.environment["rank_source"]) == (0, "RANK_DEVICE_MAP")
    assert (t.meta.start_ns, t.meta.end_ns) == (0, 0)


def test_the_profiler_db_read_whole(tmp_path):
    """read_ascend_db with its own readers on a db of every part: a PYTORCH_API op (its connection 100 ->
    device connection 5000: external id 1), a STEP_TIME step it lacks, a CANN_API call, a compute task of
    connection 5000 (external id 1), one MEMORY_RECORD row: four events, one memory row."""
    from canning_tb.ingest.table import Kind
    strings = [(1, "aten::mm"), (2, "aclnnMm"), (3, "AI_CORE"), (4, "MatMul_k")]
    tables = {
        "STRING_IDS": strings,
        "PYTORCH_API": [("100", "400", 0, 100, 1, None, None, None, None, None, 50001)],
        "CONNECTION_IDS": [(100, 5000)],
        "STEP_TIME": [(4, 50, 900)],
        "CANN_API": [(150, 250, 1, 0, 7, 2)],
        "TASK": [(300, 380, 0, 5000, 1, 77, 3, 0, 2, 0, 0)],
        "COMPUTE_TASK_INFO": [(4, 1, 8, None, 3, None, None, None, None, None, None, None, None)],
        "MEMORY_RECORD": [(None, 120, 10, 20, 15, 0, 0)],
    }
    lay, out = _layout(tmp_path)
    make_db(out / "p.db", tables)
    t = EventTable()
    read.read_ascend_db(lay, t, [])
    ev, s = t.events, t.strings
    got = sorted((s[int(n)], int(k), int(ts), int(d), int(x)) for n, k, ts, d, x in zip(
        ev["name"], ev["kind"], ev["ts"], ev["dur"], ev["external_id"]))
    assert got == [("MatMul_k", Kind.KERNEL, 300, 80, 1), ("ProfilerStep#4", Kind.USER_ANNOTATION, 50, 850, -1),
                   ("aclnnMm", Kind.RUNTIME, 150, 100, -1), ("aten::mm", Kind.CPU_OP, 100, 300, 1)]
    assert t.memory["ts"].tolist() == [120] and t.memory["reserved"].tolist() == [20]
    assert t.meta.devices == [{"kind": "npu", "index": 0, "name": "Ascend"}]


def test_a_wal_mode_db_without_wal_is_opened_immutable(tmp_path):
    """A db in WAL mode whose -wal is gone (checkpointed): opened immutable, SQLite makes no -wal / -shm beside it
    (a plain read-only open would)."""
    path = tmp_path / "p.db"
    w = sqlite3.connect(path)
    w.execute("pragma journal_mode=wal")
    w.execute("create table t (a)")
    w.execute("insert into t values (5)")
    w.commit()
    w.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.db"]
    conn = read._connect(str(path))
    try:
        assert conn.execute("select a from t").fetchall() == [(5,)]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["p.db"]
    finally:
        conn.close()


def test_the_file_checked_is_the_file_read(tmp_path, monkeypatch):
    """SQLite opens the descriptor that was checked (/proc/self/fd/N), not the path again: were the path swapped
    after the check, the checked file is still the one read. Here the check's descriptor is another file's."""
    checked = make_db(tmp_path / "checked.db", {"STRING_IDS": [(1, "checked")]})
    other = make_db(tmp_path / "other.db", {"STRING_IDS": [(1, "other")]})
    monkeypatch.setattr(read, "open_fd", lambda path: os.open(checked, os.O_RDONLY))
    conn = read._connect(other)
    try:
        assert conn.execute("select value from STRING_IDS").fetchall() == [("checked",)]
    finally:
        conn.close()
