"""store/digest_budget.py under mutation (issue 46): the budget by hand (512 MiB = 536,870,912 bytes plus
1.5 x the biggest window's bytes, or CANNING_DIGEST_MAX_RSS when it is a number), the window's bytes
summed over a hand-made folder, what apply() sets, and the watchdog's stop past the limit (a stand-in RSS
and exit, the loop's sleep cut short: no clock is raced)."""
import json
import os
import threading

import pytest

from canning_tb.store import digest_budget as db

BASE = 536_870_912


def window(folder, files, name="rank0.1.canning.json"):
    """A manifest in `folder` naming `files` {name: bytes | {sub path: bytes}} written there."""
    os.makedirs(folder, exist_ok=True)
    entries = []
    for fname, size in files.items():
        if isinstance(size, dict):
            for sub, n in size.items():
                os.makedirs(os.path.dirname(os.path.join(folder, fname, sub)), exist_ok=True)
                with open(os.path.join(folder, fname, sub), "wb") as f:
                    f.write(b"x" * n)
        elif size is not None:
            with open(os.path.join(folder, fname), "wb") as f:
                f.write(b"x" * size)
        entries.append({"name": fname})
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        json.dump({"kind": "kineto", "worker": "rank0", "window": 1, "files": entries}, f)
    return path


def test_window_bytes_add_files_and_folders(tmp_path):
    """100 + (10 + 20 + 30 in a folder, one of them a level down) + a missing file (0) = 160."""
    path = window(str(tmp_path), {"npu": {"a": 10, "b/c": 20, "b/d": 30}, "t.json": 100, "gone.json": None})
    assert db.window_bytes(path) == 160


def test_the_budget_is_the_base_plus_one_and_a_half_the_biggest_window(tmp_path, monkeypatch):
    monkeypatch.delenv("CANNING_DIGEST_MAX_RSS", raising=False)
    small = window(str(tmp_path / "a"), {"t.json": 100})
    big = window(str(tmp_path / "b"), {"t.json": 1001})
    (tmp_path / "bad.canning.json").write_text("[")
    assert db.budget([str(tmp_path / "bad.canning.json"), small, big]) == BASE + 1501  # int(1.5 * 1001)
    assert db.budget([]) == BASE
    monkeypatch.setenv("CANNING_DIGEST_MAX_RSS", "12345")
    assert db.budget([big]) == 12345
    monkeypatch.setenv("CANNING_DIGEST_MAX_RSS", "1e9")  # not digits: the computed budget
    assert db.budget([big]) == BASE + 1501


def test_apply_sets_one_thread_unless_set_and_watches_the_budget(tmp_path, monkeypatch):
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "CANNING_READ_WORKERS"):
        monkeypatch.setenv(var, "x")  # so that monkeypatch puts each back as it was, set or not
        monkeypatch.delenv(var)
    monkeypatch.delenv("CANNING_DIGEST_MAX_RSS", raising=False)
    watched = []
    monkeypatch.setattr(db, "watch", watched.append)
    manifest = window(str(tmp_path), {"t.json": 2})
    db.apply([manifest])
    names = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "CANNING_READ_WORKERS")
    assert [os.environ[v] for v in names] == ["1", "1", "1", "1"]
    assert watched == [BASE + 3]  # 1.5 x 2 bytes
    for var in names:
        monkeypatch.setenv(var, "4")
    monkeypatch.setenv("CANNING_DIGEST_MAX_RSS", "777")
    db.apply([manifest])
    assert [os.environ[v] for v in names] == ["4", "4", "4", "4"] and watched[-1] == 777


def test_rss_is_the_second_field_of_statm_in_pages(monkeypatch):
    with open("/proc/self/statm") as f:
        resident = int(f.read().split()[1])
    assert abs(db._rss() - resident * os.sysconf("SC_PAGE_SIZE")) < 64 << 20  # the same, give or take growth
    assert db._PAGE == os.sysconf("SC_PAGE_SIZE")
    import builtins
    real = builtins.open
    monkeypatch.setattr(builtins, "open", lambda p, *a, **k: (_ for _ in ()).throw(OSError("no /proc"))
                        if p == "/proc/self/statm" else real(p, *a, **k))
    assert db._rss() == 0


class Stopped(SystemExit):
    """Ends the watchdog's thread where os._exit would end the process (pytest reports it: filtered)."""


ENDS_ITS_THREAD = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")


def started(monkeypatch):
    """The threads digest_budget starts, recorded so that the test can join them."""
    threads = []

    class Recorded(threading.Thread):
        def start(self):
            threads.append(self)
            super().start()
    monkeypatch.setattr(db.threading, "Thread", Recorded)
    return threads


@ENDS_ITS_THREAD
def test_the_watchdog_stops_the_process_past_the_limit_not_at_it(monkeypatch, caplog):
    """RSS samples 10, 10, 11 against a limit of 10: the third passes it, and the process exits with 0."""
    samples = iter([10, 10, 10, 11])  # the first: whether there is a /proc at all
    exits, sleeps = [], []
    monkeypatch.setattr(db, "_rss", lambda: next(samples))
    monkeypatch.setattr(db.time, "sleep", sleeps.append)

    def exit_(code):
        exits.append(code)
        raise Stopped
    monkeypatch.setattr(db.os, "_exit", exit_)
    threads = started(monkeypatch)
    db.watch(10, interval=0.25)
    (thread,) = threads
    thread.join()
    assert thread.name == "canning-digest-budget" and thread.daemon
    assert exits == [0] and sleeps == [0.25, 0.25]
    assert [r.getMessage() for r in caplog.records] == [
        "digest at the source stopped: its memory passed the budget of 0 MiB (CANNING_DIGEST_MAX_RSS); the viewer "
        "will compute the digest on first open"]


def test_no_watchdog_where_there_is_no_proc(monkeypatch):
    monkeypatch.setattr(db, "_rss", lambda: 0)
    threads = started(monkeypatch)
    db.watch(10)
    assert threads == []


@ENDS_ITS_THREAD
@pytest.mark.parametrize("limit, said", [(3 << 20, "3 MiB")])
def test_the_message_says_the_limit_in_mib(monkeypatch, caplog, limit, said):
    samples = iter([1, 1, limit + 1])
    monkeypatch.setattr(db, "_rss", lambda: next(samples))
    sleeps = []
    monkeypatch.setattr(db.time, "sleep", sleeps.append)

    def exit_(code):
        raise Stopped
    monkeypatch.setattr(db.os, "_exit", exit_)
    threads = started(monkeypatch)
    db.watch(limit)
    threads[0].join()
    assert f"budget of {said}" in caplog.text and sleeps == [0.05]  # sampled every 50 ms by default
