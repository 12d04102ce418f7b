"""--digest-wait-s: how long a call waits for a window's digest before it answers "digesting". Checked on
the real Host over a real fixture (DLRM rank 0, 1.3 MB gzip): a long wait returns the digest's answer (None:
nothing pending), a zero wait answers "digesting" at once while the digest goes on, and bad values are
refused by the command line with a message that names the option."""
import shutil
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


def test_a_zero_wait_answers_digesting_at_once_and_the_digest_goes_on(tmp_path):
    host = Host(*one_window(tmp_path), digest_wait_s=0)
    host.start()
    window = the_window(host)
    asked = time.monotonic()
    pending = host.pending(*window)
    assert time.monotonic() - asked < 0.5, "a zero wait must not wait for the digest"
    assert pending["status"] == "digesting" and pending["elapsed_s"] < 0.5, pending
    deadline = time.monotonic() + 120
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
