"""When no process can be started (process or memory limits, made here by failing multiprocessing's
start, since root ignores RLIMIT_NPROC): the many-window prefetch and the timeline's background
index say so per window, remember nothing, and work again once processes can start."""
import multiprocessing.context
import shutil
import time

from canning_tb.store import Store

from conftest import fixture_path


def refuse(*_):
    raise BlockingIOError(11, "Resource temporarily unavailable")


def two_window_store(tmp_path, **kw):
    """A run of two Kineto windows (two ranks of a real DLRM job), max_workers 2: the pool is used."""
    run = tmp_path / "logdir" / "r"
    run.mkdir(parents=True)
    for trace in sorted(fixture_path("param", "dlrm_8ranks").glob("*.pt.trace.json.gz"))[:2]:
        shutil.copy(trace, run / trace.name)
    store = Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "cache"), max_workers=2, **kw)
    items = [("r", w.name, win.id) for w in store.workers("r") for win in store.windows("r", w.name)]
    return store, items


def test_prefetch_without_processes_reports_each_window_and_remembers_nothing(tmp_path, monkeypatch):
    store, items = two_window_store(tmp_path)
    assert len(items) >= 2
    with monkeypatch.context() as m:
        m.setattr(multiprocessing.context.SpawnProcess, "_Popen", staticmethod(refuse))
        errors = store.prefetch(items)
    assert set(errors) == set(items)
    assert all("no process could be started" in e and "Resource temporarily unavailable" in e for e in errors.values())
    assert store.prefetch(items) == {}  # not remembered: with processes to spare, every window is read
    for run, worker, wid in items:
        assert store.digest(run, worker, wid).steps


def test_timeline_index_without_a_process_is_skipped_and_the_next_one_runs(tmp_path, monkeypatch):
    from canning_tb.store.compute import BackgroundJobs
    done = tmp_path / "done"
    jobs = BackgroundJobs()
    with monkeypatch.context() as m:
        m.setattr(multiprocessing.context.SpawnProcess, "_Popen", staticmethod(refuse))
        jobs.submit("a", shutil.copyfile, __file__, str(done))  # no exception: the job is skipped
    jobs.wait("a", 1)
    assert not done.exists()
    jobs.submit("b", shutil.copyfile, __file__, str(done))
    jobs.wait("b", 60)
    assert done.read_bytes() == open(__file__, "rb").read()


def test_a_dead_background_process_is_replaced(tmp_path):
    """The index process killed (as the kernel does for memory) between two jobs: the next job runs in
    a fresh process instead of every later job failing on the broken pool."""
    import os
    import signal

    from canning_tb.store.compute import BackgroundJobs
    jobs = BackgroundJobs()
    jobs.submit("a", os.getpid)
    jobs.wait("a", 60)
    (pid,) = [p.pid for p in jobs._pool._processes.values()]
    os.kill(pid, signal.SIGKILL)
    done = tmp_path / "done"
    for _ in range(200):  # the pool notices the death on its own thread
        if jobs._pool._broken:
            break
        time.sleep(0.05)
    assert jobs._pool._broken
    jobs.submit("b", shutil.copyfile, __file__, str(done))
    jobs.wait("b", 60)
    assert done.read_bytes() == open(__file__, "rb").read()
