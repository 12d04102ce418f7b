"""`--follow-links` reaches discovery and the readers as an argument (Store(follow_links=...)), never through the
process's environment: a long-lived process (the MCP server, a test worker) that serves one logdir with links
followed and another without keeps each its own choice, and no later Store inherits it."""
import gzip
import json
import os
import shutil

import pytest

from canning_tb.store import Store
from canning_tb.util import safe_files
from conftest import fixture_path

TRACE = "rank0.179646896775100000.pt.trace.json.gz"


@pytest.fixture(autouse=True)
def no_process_setting(monkeypatch):
    monkeypatch.delenv(safe_files.FOLLOW_ENV, raising=False)


def linked_logdir(folder, outside):
    """A logdir whose one run is a link to a run folder outside it."""
    folder.mkdir()
    (folder / "theirs").symlink_to(outside)
    return folder


def steps_in_the_file(path) -> int:
    """ProfilerStep#N ranges of the trace, read with json (not with canning_tb's readers)."""
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    return len({e["name"] for e in events if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")})


@pytest.fixture
def outside(tmp_path):
    run = tmp_path / "outside" / "run"
    run.mkdir(parents=True)
    shutil.copy(fixture_path("kineto", "gloo_pipeline_2stages", TRACE), run / TRACE)
    return run


@pytest.mark.parametrize("isolate_bytes", [None, 0], ids=["in this process", "in a child process"])
def test_a_store_told_to_follow_reads_the_linked_run(tmp_path, outside, isolate_bytes):
    store = Store(str(linked_logdir(tmp_path / "a", outside)), cache_dir=str(tmp_path / "cache"),
                  isolate_bytes=isolate_bytes, follow_links=True)
    assert store.runs() == ["theirs"]
    (worker,) = store.workers("theirs")
    (window,) = store.windows("theirs", worker.name)
    assert window.root == ""  # carried to the worker process: no confinement there
    digest = store.digest("theirs", worker.name, window.id)
    assert digest is not None and len(digest.steps) == steps_in_the_file(outside / TRACE) > 0
    assert safe_files.FOLLOW_ENV not in os.environ


def test_one_logdir_followed_leaves_another_confined(tmp_path, outside):
    followed = linked_logdir(tmp_path / "a", outside)
    confined = linked_logdir(tmp_path / "b", outside)
    assert Store(str(followed), cache_dir=str(tmp_path / "cache"), follow_links=True).runs() == ["theirs"]
    # the same process, later: a store not told to follow lists no link out and opens none
    assert Store(str(confined), cache_dir=str(tmp_path / "cache")).runs() == []
    with pytest.raises(safe_files.Refused, match="a link to outside the logdir"):
        safe_files.read_file(str(confined / "theirs" / TRACE))
    assert safe_files.read_file(str(followed / "theirs" / TRACE)) == (outside / TRACE).read_bytes()
    assert safe_files.FOLLOW_ENV not in os.environ


def test_the_process_setting_still_lets_every_logdir_follow(tmp_path, outside, monkeypatch):
    """TensorBoard has no command line of ours: CANNING_FOLLOW_LINKS=1 in its environment is read (never set)."""
    monkeypatch.setenv(safe_files.FOLLOW_ENV, "1")
    assert Store(str(linked_logdir(tmp_path / "c", outside)), cache_dir=str(tmp_path / "cache")).runs() == ["theirs"]


def test_a_folder_of_a_followed_logdir_follows_too(tmp_path, outside):
    """scan_folder's own policy for a folder below the root (a single window given to the CLI) takes the root's."""
    from canning_tb.store.links import Policy
    logdir = linked_logdir(tmp_path / "d", outside)
    assert not Policy(str(logdir / "theirs")).outside_ok  # nothing said for it yet
    Policy(str(logdir), follow_links=True)
    assert Policy(str(logdir / "theirs")).outside_ok
