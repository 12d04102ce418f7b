"""store/compute.py under mutation (issue 46): where a window's work runs and what each path answers.
Real digests of a tiny hand-written Kineto trace for the in-process paths; for the process pools a
stand-in executor that runs each job here (or fails as a pool fails: a spawn refused, a broken pool,
a crashed job) records how it was made, so no test starts a process or waits on one."""
import concurrent.futures
import json
import logging
import os

import pytest

from canning_tb.ingest.table import InputError
from canning_tb.store import compute as compute_mod
from canning_tb.store.compute import (BackgroundJobs, ChildStartError, build_timeline_index, compute_and_cache,
                                      compute_in_child, compute_into_cache, compute_many, digest_of,
                                      events_prefix, read_window, table_into_cache, write_cache)
from canning_tb.store.discover import Window

TRACE = ('{"traceEvents": [{"ph": "X", "name": "aten::mm", "cat": "cpu_op", "ts": 100, "dur": 5, "pid": 1, '
         '"tid": 1}, {"ph": "X", "name": "ProfilerStep#7", "cat": "user_annotation", "ts": 99, "dur": 10, '
         '"pid": 1, "tid": 1}]}')


def window(tmp_path, text=TRACE, name="w.pt.trace.json", fmt="kineto"):
    path = tmp_path / "logdir" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return Window(id="1", label="window 1", format=fmt, path=str(path), files=(str(path),), root=str(tmp_path / "logdir"))


def test_read_window_by_format_and_an_unknown_one(tmp_path):
    win = window(tmp_path)
    assert len(read_window(win)) == 2  # the two events of the file
    with pytest.raises(ValueError, match="unknown window format 'pdf'"):
        read_window(Window(id="1", label="", format="pdf", path=win.path, files=win.files, root=win.root))


def test_read_window_opens_only_inside_its_logdir(tmp_path):
    """The window's trace is a link to a file outside its logdir: refused, naming the file."""
    outside = window(tmp_path / "outside")
    os.makedirs(tmp_path / "logdir")
    os.symlink(outside.path, tmp_path / "logdir" / "w.pt.trace.json")
    linked = Window(id="1", label="", format="kineto", path=str(tmp_path / "logdir" / "w.pt.trace.json"),
                    files=(str(tmp_path / "logdir" / "w.pt.trace.json"),), root=str(tmp_path / "logdir"))
    with pytest.raises(InputError) as e:
        read_window(linked)
    assert e.value.file == linked.path
    assert len(read_window(outside)) == 2  # the same file, read in its own logdir


def test_a_snapshot_window_is_a_table_of_no_events_naming_its_file(tmp_path):
    import shutil

    from conftest import fixture_path
    os.makedirs(tmp_path / "logdir")
    path = tmp_path / "logdir" / "s.pickle"
    shutil.copy(fixture_path("memory_snapshot", "snapshot_with_empty_cache.pkl"), path)
    table = read_window(Window(id="1", label="", format="snapshot", path=str(path), files=(str(path),),
                               root=str(tmp_path / "logdir")))
    assert len(table) == 0 and table.meta.format == "snapshot" and table.meta.source_files == ["s.pickle"]


def test_the_worker_is_named_unless_the_window_names_one(tmp_path):
    win = window(tmp_path)
    assert digest_of(win, "rank0").window.worker == "rank0"
    assert digest_of(win).window.worker == ""
    manifest = tmp_path / "logdir" / "rank7.1.canning.json"
    manifest.write_text(json.dumps({"kind": "kineto", "worker": "rank7", "window": 1,
                                    "files": [{"name": "w.pt.trace.json"}]}))
    named = Window(id="1", label="", format="canning", path=str(manifest), files=(str(manifest), win.path),
                   root=win.root)
    assert digest_of(named, "other").window.worker == "rank7"


def test_events_prefix_replaces_the_digest_suffix():
    assert events_prefix("/c/abc.digest.pb") == "/c/abc.events"


def test_write_cache_makes_the_folder_and_a_failed_write_is_only_logged(tmp_path, caplog):
    path = str(tmp_path / "a" / "b" / "x.bin")
    write_cache(lambda p: open(p, "wb").write(b"1"), path)
    assert open(path, "rb").read() == b"1"
    (tmp_path / "file").write_text("")
    with caplog.at_level(logging.WARNING, logger="canning_tb.store"):
        write_cache(lambda p: pytest.fail("not reached"), str(tmp_path / "file" / "x.bin"))
    (record,) = caplog.records
    assert record.getMessage() == (f"canning: cannot write cache {tmp_path / 'file' / 'x.bin'}: [Errno 17] File exists: "
                                   f"'{tmp_path / 'file'}'")  # makedirs of a folder where a file is


def test_compute_and_cache_writes_the_digest_and_the_events_beside_it(tmp_path, monkeypatch):
    budgets = []
    monkeypatch.setattr(compute_mod.cache, "enforce_budget", budgets.append)
    path = str(tmp_path / "c" / "k.digest.pb")
    digest = compute_and_cache(window(tmp_path), "w", path)
    from canning_tb.analysis import digest_pb2
    assert digest_pb2.Digest.FromString(open(path, "rb").read()) == digest and digest.window.worker == "w"
    from canning_tb.ingest.table import EventTable
    assert len(EventTable.load(str(tmp_path / "c" / "k.events"))) == 2
    assert budgets == [path]
    table = table_into_cache(window(tmp_path), str(tmp_path / "d" / "k.events"))
    assert len(table) == 2 and len(EventTable.load(str(tmp_path / "d" / "k.events"))) == 2
    assert budgets == [path, str(tmp_path / "d" / "k.events.npz")]


def test_compute_into_cache_answers_an_input_error_as_file_and_problem(tmp_path):
    bad = window(tmp_path, text='{"traceEvents": [')
    assert compute_into_cache(bad, "w", str(tmp_path / "c" / "k.digest.pb")) == (bad.path, "not JSON: unexpected end at byte 17")
    assert compute_into_cache(window(tmp_path), "w", str(tmp_path / "c" / "k.digest.pb")) is None


def test_the_timeline_index_is_built_once_from_the_cached_events(tmp_path, monkeypatch):
    from canning_tb.timeline.index import INDEX_SUFFIX
    path = str(tmp_path / "c" / "k.digest.pb")
    build_timeline_index(path)  # no events cached: nothing
    assert not os.path.exists(tmp_path / "c")
    compute_and_cache(window(tmp_path), "w", path)
    build_timeline_index(path)
    index = str(tmp_path / "c" / "k.events") + INDEX_SUFFIX
    assert os.path.getsize(index) > 0
    os.utime(index, ns=(10**9, 10**9))
    build_timeline_index(path)  # there already: not built again
    assert os.stat(index).st_mtime_ns == 10**9


# -- the pools, with a stand-in executor --------------------------------------------------------------
class Pool:
    """Stands in for ProcessPoolExecutor: runs each job at submit; `refuse_after` submits succeed, then
    OSError (a spawn refused); `made` records each pool's arguments."""
    made = []

    def __init__(self, max_workers=None, mp_context=None, initializer=None, refuse_after=None):
        Pool.made.append((max_workers, mp_context.get_start_method(), initializer))
        self.refuse_after, self.submitted = refuse_after, 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def submit(self, fn, *args):
        if self.refuse_after is not None and self.submitted >= self.refuse_after:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        self.submitted += 1
        future = concurrent.futures.Future()
        try:
            future.set_result(fn(*args))
        except Exception as e:
            future.set_exception(e)
        return future


@pytest.fixture
def pool(monkeypatch):
    Pool.made = []
    monkeypatch.setattr(compute_mod, "ProcessPoolExecutor", Pool)
    return Pool


def test_compute_in_child_is_one_spawned_tuned_process(tmp_path, pool):
    bad = window(tmp_path, text='{"traceEvents": [')
    assert compute_in_child(bad, "w", str(tmp_path / "k.digest.pb")) == (bad.path, "not JSON: unexpected end at byte 17")
    assert pool.made == [(1, "spawn", compute_mod.tune_this_process)]
    path = str(tmp_path / "c" / "k.digest.pb")
    assert compute_in_child(window(tmp_path), "rank5", path) is None
    from canning_tb.analysis import digest_pb2
    assert digest_pb2.Digest.FromString(open(path, "rb").read()).window.worker == "rank5"


def test_a_child_that_cannot_start_is_said_not_remembered(tmp_path, monkeypatch, pool):
    monkeypatch.setattr(compute_mod, "ProcessPoolExecutor", lambda **kw: Pool(refuse_after=0, **kw))
    win = window(tmp_path)
    with pytest.raises(ChildStartError) as e:
        compute_in_child(win, "w", str(tmp_path / "k.digest.pb"))
    assert e.value.errno == 11 and e.value.filename == win.path
    assert e.value.strerror == ("no process could be started to read it (Resource temporarily unavailable); "
                                "try again when the machine has processes or memory to spare")


def todo_of(tmp_path, n, bad=()):
    out = []
    for i in range(n):
        win = window(tmp_path, text='{"traceEvents": [' if i in bad else TRACE, name=f"w{i}.pt.trace.json")
        out.append((("r", f"w{i}", str(i)), win, str(tmp_path / "c" / f"k{i}.digest.pb")))
    return out


def test_one_window_or_one_worker_is_done_here_in_order(tmp_path, pool):
    todo = todo_of(tmp_path, 2, bad=(1,))
    got = list(compute_many(todo, 1))
    from canning_tb.analysis import digest_pb2
    assert digest_pb2.Digest.FromString(open(todo[0][2], "rb").read()).window.worker == "w0"  # ident[1]
    assert [(ident, lasting) for ident, _, lasting in got] == [(("r", "w0", "0"), True), (("r", "w1", "1"), True)]
    assert got[0][1] is None and got[1][1] == (todo[1][1].path, "not JSON: unexpected end at byte 17")
    assert list(compute_many(todo[:1], 8)) == [(("r", "w0", "0"), None, True)]
    assert pool.made == []  # no pool for either


def test_many_windows_go_to_a_pool_of_at_most_the_windows(tmp_path, pool):
    todo = todo_of(tmp_path, 3, bad=(2,))
    got = sorted(compute_many(todo, 8))
    assert got == [(("r", "w0", "0"), None, True), (("r", "w1", "1"), None, True),
                   (("r", "w2", "2"), (todo[2][1].path, "not JSON: unexpected end at byte 17"), True)]
    assert pool.made == [(3, "spawn", compute_mod.tune_this_process)]
    pool.made.clear()
    list(compute_many(todo, 2))
    assert pool.made[0][0] == 2
    from canning_tb.analysis import digest_pb2
    assert digest_pb2.Digest.FromString(open(todo[1][2], "rb").read()).window.worker == "w1"  # ident[1]


def test_windows_past_a_refused_spawn_wait_and_are_not_lasting(tmp_path, monkeypatch, pool, caplog):
    monkeypatch.setattr(compute_mod, "ProcessPoolExecutor", lambda **kw: Pool(refuse_after=1, **kw))
    todo = todo_of(tmp_path, 3)
    with caplog.at_level(logging.WARNING, logger="canning_tb.store"):
        got = list(compute_many(todo, 3))
    msg = ("no process could be started to read it (Resource temporarily unavailable); "
           "try again when the machine has processes or memory to spare")
    assert got[:2] == [(("r", "w1", "1"), (todo[1][1].path, msg), False),
                       (("r", "w2", "2"), (todo[2][1].path, msg), False)]
    assert got[2] == (("r", "w0", "0"), None, True)
    assert [r.getMessage() for r in caplog.records] == [f"canning: digest of ('r', 'w{i}', '{i}') not started: {msg}"
                                                        for i in (1, 2)]


def test_a_crashed_job_is_said_by_its_window_and_not_lasting(tmp_path, monkeypatch, pool, caplog):
    def crash(window, worker, path):
        if worker == "w1":
            raise MemoryError("killed")
        return None
    monkeypatch.setattr(compute_mod, "compute_into_cache", crash)
    with caplog.at_level(logging.WARNING, logger="canning_tb.store"):
        got = sorted(compute_many(todo_of(tmp_path, 2), 2), key=str)
    assert got == [(("r", "w0", "0"), None, True), (("r", "w1", "1"), ("1", "MemoryError: killed"), False)]
    (record,) = caplog.records
    assert record.getMessage() == "canning: digest of ('r', 'w1', '1') crashed" and record.exc_info[0] is MemoryError


# -- BackgroundJobs -----------------------------------------------------------------------------------
class Executor:
    """Stands in for the background process pool: `fail` lists what each submit raises (None: runs)."""
    def __init__(self, fail, made):
        self.fail, self.made = fail, made

    def submit(self, job, *args):
        self.made.append(job)
        raised = self.fail.pop(0) if self.fail else None
        if raised:
            raise raised
        future = concurrent.futures.Future()
        try:
            future.set_result(job(*args))
        except Exception as e:  # the job failed in the process
            future.set_exception(e)
        return future


def jobs_with(monkeypatch, fail):
    made, pools = [], []

    def executor(max_workers=None, mp_context=None, initializer=None):
        pools.append((max_workers, mp_context.get_start_method(), initializer))
        return Executor(fail, made)
    monkeypatch.setattr(compute_mod, "ProcessPoolExecutor", executor)
    return BackgroundJobs(), made, pools


def test_background_jobs_run_in_one_low_priority_process_started_once(monkeypatch):
    jobs, made, pools = jobs_with(monkeypatch, [])
    out = []
    jobs.submit("a", out.append, 1)
    jobs.submit("b", out.append, 2)
    assert out == [1, 2] and pools == [(1, "spawn", compute_mod._lower_priority)]
    assert jobs._pending == {}  # done jobs are forgotten
    jobs.wait("a", 0)  # none pending: at once


def test_a_broken_pool_is_replaced_once_and_a_refused_start_skips_the_job(monkeypatch, caplog):
    jobs, made, pools = jobs_with(monkeypatch, [concurrent.futures.BrokenExecutor("died")])
    out = []
    jobs.submit("a", out.append, 1)
    assert out == [1] and len(pools) == 2  # a fresh pool, the job run there
    jobs, made, pools = jobs_with(monkeypatch, [concurrent.futures.BrokenExecutor("died"),
                                                concurrent.futures.BrokenExecutor("again")])
    with caplog.at_level(logging.WARNING, logger="canning_tb.store"):
        jobs.submit("b", out.append, 2)
    assert out == [1] and len(pools) == 2
    assert caplog.records[-1].getMessage() == "canning: background job b not started: again"
    jobs, made, pools = jobs_with(monkeypatch, [OSError("no process")])
    jobs.submit("c", out.append, 3)
    assert out == [1] and len(pools) == 1 and jobs._pool is None  # not retried: the next job starts one
    jobs.submit("d", out.append, 4)
    assert out == [1, 4] and len(pools) == 2


def test_a_failed_background_job_is_logged_and_forgotten(monkeypatch, caplog):
    jobs, made, pools = jobs_with(monkeypatch, [])
    with caplog.at_level(logging.WARNING, logger="canning_tb.store"):
        jobs.submit("a", lambda: 1 / 0)
    assert [r.getMessage() for r in caplog.records] == ["canning: background job failed: division by zero"]
    assert jobs._pending == {}


def test_a_pending_job_is_waited_for_and_forgotten_only_when_it_is_the_latest(monkeypatch):
    waited = []
    monkeypatch.setattr(concurrent.futures, "wait", lambda futures, timeout=None: waited.append((futures, timeout)))
    jobs = BackgroundJobs()
    first, second = concurrent.futures.Future(), concurrent.futures.Future()
    jobs._pending["k"] = second
    jobs._forget("k", first)  # an older job of the key: the newer stays pending
    assert jobs._pending == {"k": second}
    jobs.wait("k", 5)
    jobs.wait("other", 5)  # none pending under that key: nothing to wait for
    assert waited == [([second], 5)]
    jobs._forget("k", second)
    assert jobs._pending == {}


def test_a_failed_job_is_logged(caplog):
    failed = concurrent.futures.Future()
    failed.set_exception(ValueError("bad index"))
    with caplog.at_level(logging.WARNING, logger="canning_tb.store"):
        compute_mod._log_failure(failed)
        ok = concurrent.futures.Future()
        ok.set_result(1)
        compute_mod._log_failure(ok)
        cancelled = concurrent.futures.Future()
        cancelled.cancel()
        compute_mod._log_failure(cancelled)
    assert [r.getMessage() for r in caplog.records] == ["canning: background job failed: bad index"]


def test_lower_priority_adds_10_to_the_niceness(monkeypatch):
    asked = []
    monkeypatch.setattr(compute_mod.os, "nice", lambda n: asked.append(n) or 0)
    compute_mod._lower_priority()
    assert asked == [10]

    def refused(n):
        raise PermissionError("not allowed")
    monkeypatch.setattr(compute_mod.os, "nice", refused)
    compute_mod._lower_priority()  # the same priority, no error
