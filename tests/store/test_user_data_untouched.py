"""Nothing of the user's data is written by default (DESIGN.md "Inputs are read, never changed"): the CLI's
report of a writable copy of the fixtures, one run of each reader (a Kineto trace of two windows, an
HTA-style trace, torch_npu's JSON / CSV folders of two ranks, its SQLite export in WAL mode), then a real
TensorBoard with the plugin over that copy, every window's views, the trends, the ranks, the timeline
(its index and every raw arg, built in background processes), the CSV and the download, leave every
file and folder of the copy as it was: same names, sizes, modes and mtimes (folders' mtimes too, which
any file created inside would change). The caches go to the user's cache folder (conftest: a temporary
CANNING_CACHE_DIR). The whole suite run on a writable copy (CANNING_FIXTURES) checks the rest."""
import contextlib
import io
import json
import os
import shutil
import time
import urllib.parse
import urllib.request

import pytest

from canning_tb.cli.main import main as cli_main
from conftest import fixture_path
from test_plugin_routes import fetch_json, start_tensorboard, stop_tensorboard


def snapshot(root):
    """Every entry under root, folders included: (relative path, kind, size, mode, mtime ns)."""
    out = []
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            st = os.lstat(os.path.join(folder, name))
            out.append((os.path.relpath(os.path.join(folder, name), root), "d" if name in dirs else "f",
                        st.st_size if name in files else 0, st.st_mode, st.st_mtime_ns))
    st = os.lstat(root)
    return sorted(out) + [(".", "d", 0, st.st_mode, st.st_mtime_ns)]


RUNS = (("kineto", "resnet50_v100"), ("hta", "cpu_only"), ("ascend", "level1"), ("ascend", "db_level1"))


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    root = tmp_path_factory.mktemp("writable") / "fixtures"
    for run in RUNS:
        shutil.copytree(fixture_path(*run), root.joinpath(*run))
    for folder, dirs, files in os.walk(root):  # writable, as a user's own logdir is
        for name in dirs:
            os.chmod(os.path.join(folder, name), 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    os.chmod(root, 0o755)
    return root


def _get(url: str, route: str, **params) -> tuple[int, bytes]:
    query = urllib.parse.urlencode(params)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{url}/data/plugin/canning/{route}?{query}", timeout=120) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def _until_done(url: str, route: str, **params) -> dict:
    deadline = time.monotonic() + 120
    while True:
        code, body = _get(url, route, **params)
        if code != 202:
            return json.loads(body)
        assert time.monotonic() < deadline, body
        time.sleep(0.3)


def _visit_every_view(url: str) -> int:
    """Ask the routes that read or cache something; returns how many windows were opened."""
    runs = fetch_json(f"{url}/data/plugin/canning/runs")["runs"]
    windows = 0
    for run in runs:
        for worker in run["workers"]:
            _until_done(url, "trends", run=run["name"], worker=worker["name"])
            for win in worker["windows"]:
                _get(url, "overview", run=run["name"], worker=worker["name"], window=win["id"])
                windows += 1
        first = run["workers"][0]
        window = {"run": run["name"], "worker": first["name"], "window": first["windows"][0]["id"]}
        _until_done(url, "cluster", **window)
        if run["name"] in ("kineto/resnet50_v100", "ascend/level1"):  # the timeline of both kinds of window
            tracks = _until_done(url, "timeline_tracks", **window)
            _get(url, "timeline_tile", **window, start_ns=0, end_ns=max(1, tracks["duration_ns"]), width=800)
            _get(url, "timeline_slice", **window, event=0)  # starts the raw args' build
            _get(url, "timeline_download", **window)
            _get(url, "operators.csv", **window)
            _get(url, "compare", **window, **{f"base_{k}": v for k, v in window.items()})
    return windows


def test_the_cli_and_the_plugin_write_nothing_into_the_logdir(copy, tmp_path_factory):
    before = snapshot(copy)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert cli_main(["--mode=view", f"--input={copy}", "--format=json"]) == 0
    assert len(json.loads(out.getvalue())["ranks"]) == 2  # both torch_npu runs of two ranks were read
    assert snapshot(copy) == before, "the CLI wrote into the logdir"
    proc, url, log = start_tensorboard(copy, tmp_path_factory.mktemp("tb") / "tb.log")
    try:
        fetch_json(f"{url}/data/plugins_listing")  # is_active(): what used to start the trend files
        assert _visit_every_view(url) == 7
        time.sleep(2)  # the background jobs (timeline index, raw args) end or keep to the cache
    finally:
        stop_tensorboard(proc, log)
    after = snapshot(copy)
    assert [entry for entry in after if entry not in before] == [] and after == before
