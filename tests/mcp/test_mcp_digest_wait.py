"""--digest-wait-s: how long a call waits for a window's digest before it answers "digesting". Checked on
the real Host over a real fixture (DLRM rank 0, 1.3 MB gzip): a long wait returns the digest's answer (None:
nothing pending), a zero wait answers "digesting" at once while the digest goes on, and bad values are
refused by the command line with a message that names the option."""
import shutil
import threading
import time

import pytest

from conftest import fixture_path

from canning_tb.cli.main import main as cli_main
from canning_tb.mcp.host import Host

TRACE = "worker0_step_12.1694128201545.pt.trace.json.gz"


def one_window(tmp_path):
    (tmp_path / "log" / "dlrm").mkdir(parents=True)
    shutil.copy(fixture_path("param", "dlrm_8ranks", TRACE), tmp_path / "log" / "dlrm" / TRACE)
    return str(tmp_path / "log"), str(tmp_path / "cache")


def the_window(host):
    store = host.store()
    worker = store.workers("dlrm")[0].name
    return "dlrm", worker, store.windows("dlrm", worker)[0].id


def test_a_long_wait_answers_with_the_digest(tmp_path):
    host = Host(*one_window(tmp_path), digest_wait_s=60)
    host.start()
    assert host.pending(*the_window(host)) is None  # waited for the digest: nothing pending
    assert host.store().has_digest(*the_window(host))


def test_a_zero_wait_answers_digesting_at_once_and_the_digest_goes_on(tmp_path, monkeypatch):
    host = Host(*one_window(tmp_path), digest_wait_s=0)
    host.start()
    window = the_window(host)
    # the digest is held until the answer is in: a call that waited for it would never answer (not a
    # race with the machine's speed; the join below is a hang guard)
    store, held, answer = host.prefetcher.store, threading.Event(), {}
    prefetch = store.prefetch
    monkeypatch.setattr(store, "prefetch", lambda *a, **k: held.wait(600) and prefetch(*a, **k))
    waits, progress = [], host.prefetcher.progress  # and it waits 0 s, not some default, before answering
    monkeypatch.setattr(host.prefetcher, "progress", lambda *a, **k: waits.append(k.get("wait")) or progress(*a, **k))
    asking = threading.Thread(target=lambda: answer.update(pending=host.pending(*window)))
    asking.start()
    asking.join(300)
    held.set()
    assert "pending" in answer and waits == [0], ("a zero wait must not wait for the digest", waits)
    pending = answer["pending"]
    assert pending["status"] == "digesting" and pending["elapsed_s"] < 0.5, pending
    deadline = time.monotonic() + 300
    while host.pending(*window) is not None:  # the background digest finishes on its own
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert host.store().has_digest(*window)


@pytest.mark.parametrize("value", ["-1", "61", "nan", "soon", "inf"])
def test_bad_waits_are_refused_naming_the_option(tmp_path, capsys, value):
    with pytest.raises(SystemExit) as exit_:
        cli_main(["mcp", "--logdir", str(tmp_path), "--digest-wait-s", value])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--digest-wait-s" in err and "0 to 60" in err and repr(value) in err
