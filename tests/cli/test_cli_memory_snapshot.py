"""canning-prof --mode=view on a logdir holding a real Ascend snapshot: the text names the peak, the
empty_cache() calls and the leak; the JSON carries the route's figures (the CLI's numbers are the routes')."""
import json
import pickle
import shutil

from canning_tb.cli.main import main as cli_main
from canning_tb.queries.memory_snapshot import snapshot_impl
from canning_tb.store import Store
from conftest import fixture_path

SNAP = "snapshot_with_empty_cache.pkl"


def test_view_text_and_json(tmp_path, capsys):
    logdir = tmp_path / "log"
    (logdir / "job").mkdir(parents=True)
    shutil.copy(fixture_path("memory_snapshot", SNAP), logdir / "job" / "rank0.pickle")
    cache = tmp_path / "cache"
    assert cli_main(["--mode=view", f"--input={logdir}", f"--cache-dir={cache}"]) == 0
    text = capsys.readouterr().out
    with open(fixture_path("memory_snapshot", SNAP), "rb") as f:
        plain = pickle.load(f)  # the trusted fixture, read plainly
    assert f"{len(plain['segments'])} segments" in text
    assert "empty_cache(): 3 calls" in text
    assert "LEAK: train_one_step (" in text and ":11) keeps 40.0 MiB, 40.0 MiB more in steps 2, 3" in text
    assert "not joined" in text
    assert "finding [warning] Memory grows every step at train_one_step" in text
    assert cli_main(["--mode=view", f"--input={logdir}", "--format=json", f"--cache-dir={cache}"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["windows"]
    assert entry["format"] == "snapshot"
    (snap,) = entry["memory_snapshots"]
    want = snapshot_impl(Store(str(logdir)), "job", "rank0", entry["window"], 0, 10)
    assert snap["devices"] == want["devices"]
