"""No test can hang: pyproject gives every test a timeout, the conftest hook a larger one to slow and browser
tests (a test's own mark wins), and a server process is ended even when it ignores SIGTERM."""
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import conftest
from _procs import communicate_all, stop_process

REPO = Path(__file__).resolve().parents[2]


class _Item:
    def __init__(self, *marks):
        self.marks = list(marks)

    def get_closest_marker(self, name):
        return next((m for m in self.marks if m.name == name), None)

    def add_marker(self, mark):
        self.marks.append(mark.mark)


def _limit(item):
    mark = item.get_closest_marker("timeout")
    return None if mark is None else mark.args[0]


def test_every_test_has_a_default_timeout():
    ini = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert ini["timeout"] == 300


def test_slow_and_browser_tests_get_larger_limits_and_an_own_mark_wins():
    plain, slow, browser = _Item(), _Item(pytest.mark.slow.mark), _Item(pytest.mark.browser.mark)
    both = _Item(pytest.mark.browser.mark, pytest.mark.slow.mark)
    own = _Item(pytest.mark.slow.mark, pytest.mark.timeout(5).mark)
    conftest.pytest_collection_modifyitems(None, [plain, slow, browser, both, own])
    assert [_limit(i) for i in (plain, slow, browser, both, own)] == [None, 1800, 900, 1800, 5]


def test_a_server_that_ignores_sigterm_is_killed():
    proc = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
                             " print('up', flush=True); time.sleep(600)"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "up\n"  # SIGTERM is ignored from here on

    stop_process(proc, grace_s=0.5)
    assert proc.returncode == -9  # SIGKILL, after the grace period
    stop_process(proc)  # twice: nothing left to do
    proc.stdout.close()


def test_a_moto_server_slow_to_start_is_not_left_running(tmp_path, monkeypatch):
    pytest.importorskip("moto.server")
    import _s3
    started = []
    real = subprocess.Popen

    def popen(*args, **kwargs):
        started.append(real(*args, **kwargs))
        return started[-1]

    def slow(self):
        raise RuntimeError("moto server did not start")  # as _wait says past its deadline

    monkeypatch.setattr(_s3.subprocess, "Popen", popen)
    monkeypatch.setattr(_s3.S3Server, "_wait", slow)
    with pytest.raises(RuntimeError, match="did not start"):
        _s3.S3Server(str(tmp_path))
    (proc,) = started
    assert proc.poll() is not None  # stopped and reaped


def test_ranks_still_running_after_communicate_are_killed():
    done = subprocess.Popen([sys.executable, "-c", "print('ok')"], stdout=subprocess.PIPE, text=True)
    hung = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], stdout=subprocess.PIPE, text=True)
    with pytest.raises(subprocess.TimeoutExpired):
        communicate_all([done, hung], timeout=1)
    assert (done.returncode, hung.returncode) == (0, -9)  # the hung one killed and reaped, not left behind
