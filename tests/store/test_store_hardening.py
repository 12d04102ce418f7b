"""The store never changes the user's files, keeps its cache within a budget, and remembers a
window it could not read until the window's files change (issue 14, items 5 and 6)."""
import hashlib
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from canning_tb.ingest.table import InputError
from canning_tb.store import Store
from canning_tb.store import compute as compute_module
from canning_tb.store import store as store_module

from conftest import fixture_path


def own_copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def state_of(folder: Path) -> dict:
    """Every file: (bytes, mtime, sha1) (the viewer writes no cache into a logdir)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            st = p.stat()
            out[str(p.relative_to(folder))] = (st.st_size, st.st_mtime_ns, hashlib.sha1(p.read_bytes()).hexdigest())
    return out


def cache_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def windows_of(store, run):
    return [(w.name, win.id) for w in store.workers(run) for win in store.windows(run, w.name)]


@pytest.mark.parametrize("level", ["db_level1", "db_level2"])
def test_reading_the_sqlite_export_changes_nothing_and_keeps_one_cache_entry(tmp_path, level):
    run = own_copy(fixture_path("ascend", level), tmp_path / "logdir" / "r")
    for db in run.rglob("ascend_pytorch_profiler*.db"):  # torch_npu leaves its dbs in WAL mode
        conn = sqlite3.connect(db)
        conn.execute("pragma journal_mode=wal")
        conn.close()
    before = state_of(run)
    sizes = []
    for _ in range(6):  # fresh stores: each request of a new process reads again
        store = Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "cache"))
        for worker, wid in windows_of(store, "r"):
            store.digest("r", worker, wid)
            store.table("r", worker, wid)
        sizes.append(cache_bytes(tmp_path / "cache"))
    assert sizes[0] > 0
    assert state_of(run) == before, "an input file was created, changed or touched"
    assert len(set(sizes)) == 1, f"the cache grew: {sizes}"


def test_a_wal_that_holds_data_is_read_from_a_copy(tmp_path):
    """Data still in the -wal (not checkpointed) is seen, and neither the db nor the -wal changes."""
    from canning_tb.ingest.ascend.db.read import _connect
    db = tmp_path / "ascend_pytorch_profiler_0.db"
    shutil.copyfile(fixture_path("ascend", "db_level1", "rank0_ascend_pt", "ASCEND_PROFILER_OUTPUT",
                                 "ascend_pytorch_profiler_0.db"), db)
    writer = sqlite3.connect(db)
    writer.execute("pragma journal_mode=wal")
    writer.execute("pragma wal_autocheckpoint=0")
    writer.execute("create table probe(x)")
    writer.execute("insert into probe values (42)")
    writer.commit()  # the writer stays open: the row lives in the -wal only
    before = state_of(tmp_path)
    assert (tmp_path / (db.name + "-wal")).stat().st_size > 0
    conn = _connect(str(db))
    assert conn.execute("select x from probe").fetchall() == [(42,)]
    conn.close()
    assert state_of(tmp_path) == before
    writer.close()


def test_the_cache_keeps_its_budget_evicting_the_least_recently_used(tmp_path, monkeypatch):
    monkeypatch.setenv("CANNING_CACHE_BESIDE_DATA", "1")  # the budget of one run's .canning/
    run = own_copy(fixture_path("param", "dlrm_8ranks"), tmp_path / "logdir" / "r")
    scratch = Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "scratch"))
    wins = windows_of(scratch, "r")[:3]
    sizes = []
    for worker, wid in wins:
        before = cache_bytes(tmp_path / "scratch")
        scratch.digest("r", worker, wid)
        sizes.append(cache_bytes(tmp_path / "scratch") - before)
    s0, s1, s2 = sizes
    limit = max(s0 + s1, s0 + s2) + 1
    assert limit < s0 + s1 + s2
    monkeypatch.setenv("CANNING_CACHE_MAX_BYTES", str(limit))

    def entry_of(worker, wid):
        return Path(store._key("r", store.window("r", worker, wid))[1]).name.split(".")[0]

    store = Store(str(tmp_path / "logdir"))
    store.digest("r", *wins[0])
    store.digest("r", *wins[1])
    Store(str(tmp_path / "logdir")).digest("r", *wins[0])  # a cache hit: window 0 is used again
    store.digest("r", *wins[2])
    kept = {p.name.split(".")[0] for p in (run / ".canning").iterdir()}
    assert cache_bytes(run / ".canning") <= limit
    assert kept == {entry_of(*wins[0]), entry_of(*wins[2])}


def test_an_unreadable_window_is_remembered_until_its_file_changes(tmp_path, monkeypatch):
    run = tmp_path / "logdir" / "r"
    run.mkdir(parents=True)
    trace = run / "w.1.pt.trace.json"
    trace.write_bytes(b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1, "args": ' + b"[" * 5000 + b"]" * 5000 + b"}]}")
    reads = []
    read = compute_module.read_window
    monkeypatch.setattr(compute_module, "read_window", lambda window: reads.append(window) or read(window))
    store = Store(str(tmp_path / "logdir"))
    (worker, wid), = windows_of(store, "r")
    for _ in range(5):
        with pytest.raises(InputError, match="nested deeper than"):
            store.digest("r", worker, wid)
    assert len(reads) == 1
    trace.write_bytes(b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1, "pid": 1, "tid": 1}]}')
    assert store.digest("r", worker, wid).window.end_ns >= 0
    assert len(reads) == 2


def test_an_unreadable_big_window_is_remembered_too(tmp_path, monkeypatch):
    run = tmp_path / "logdir" / "r"
    run.mkdir(parents=True)
    (run / "w.1.pt.trace.json").write_bytes(b'{"traceEvents": [{"ph": "X", "ts": 1e400' + b" " * 4096 + b"]")
    children = []
    child = store_module.compute_in_child
    monkeypatch.setattr(store_module, "compute_in_child", lambda *a: children.append(a) or child(*a))
    store = Store(str(tmp_path / "logdir"), isolate_bytes=1024)
    (worker, wid), = windows_of(store, "r")
    for _ in range(3):
        with pytest.raises(InputError, match="w.1.pt.trace.json"):
            store.digest("r", worker, wid)
    assert len(children) == 1


def test_events_evicted_from_the_cache_are_read_again_in_a_child_process(tmp_path, monkeypatch):
    """The timeline's columnar events of a big window, gone from the cache (its budget), come back
    from a child process: the host never parses the big window itself."""
    own_copy(fixture_path("hta", "df_index_resolver"), tmp_path / "logdir" / "r")
    store = Store(str(tmp_path / "logdir"), isolate_bytes=1024)
    (worker, wid), = windows_of(store, "r")
    store.digest("r", worker, wid)
    expected = len(store.table("r", worker, wid))
    prefix = Path(store.events_prefix("r", worker, wid))
    evicted = list(prefix.parent.glob(prefix.name + ".*"))
    assert evicted
    for p in evicted:
        p.unlink()

    def not_here(window):
        raise AssertionError("parsed in the host process")
    monkeypatch.setattr(compute_module, "read_window", not_here)  # the spawned child is unaffected
    assert len(store.table("r", worker, wid)) == expected
