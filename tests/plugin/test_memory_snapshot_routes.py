"""GET /memory_snapshot, /memory_snapshot_series and /memory_snapshot_state through TensorBoard's WSGI app
over a logdir holding a real Ascend snapshot (tests/fixtures/memory_snapshot), and the errors they map to."""
import json
import os
import pickle
import shutil

import pytest
from tensorboard.backend import application
from werkzeug.test import Client

from conftest import fixture_path
from test_plugin_routes import make_plugin

SNAP = "snapshot_with_empty_cache_expandable.pkl"


class _RunsCode:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("snaplog")
    (root / "job").mkdir()
    shutil.copy(fixture_path("memory_snapshot", SNAP), root / "job" / "rank0.pickle")
    marker = root.parent / f"{root.name}-ran"
    (root / "job" / "rank1.pickle").write_bytes(pickle.dumps({"segments": [_RunsCode(marker)]}))
    plugin = make_plugin(root)
    return Client(application.TensorBoardWSGI([plugin])), marker


def get(client, route, **params):
    resp = client.get(f"/data/plugin/canning/{route}", query_string=params)
    return resp.status_code, json.loads(resp.get_data())


def test_the_routes_answer(setup):
    client, _ = setup
    code, runs = get(client, "runs")
    windows = {w["name"]: w["windows"] for r in runs["runs"] for w in r["workers"]}
    assert windows["rank0"][0]["format"] == "snapshot" and windows["rank0"][0]["snapshots"] == 1
    sel = {"run": "job", "worker": "rank0", "window": windows["rank0"][0]["id"]}
    code, body = get(client, "memory_snapshot", **sel, limit=2)
    assert code == 200
    with open(fixture_path("memory_snapshot", SNAP), "rb") as f:
        plain = pickle.load(f)  # the trusted fixture, as the independent reading
    dev = body["devices"][0]
    assert dev["at_snapshot"]["reserved"] == sum(s["total_size"] for s in plain["segments"])
    assert dev["at_snapshot"]["expandable_segments"] == len(plain["segments"]) == 3
    assert len(dev["peak"]["by_frame"]) == 2 and dev["empty_cache"]["empty_cache_calls"] == 3
    code, series = get(client, "memory_snapshot_series", **sel, points=7)
    assert code == 200 and len(series["reserved"]) == 7
    code, state = get(client, "memory_snapshot_state", **sel, entry=0)
    assert code == 200 and state["entry"] == 0
    assert get(client, "memory_snapshot_state", **sel, entry=10**9)[0] == 400
    assert get(client, "memory_snapshot", **sel, limit=0)[0] == 400
    assert get(client, "memory_snapshot_series", **sel, device=3)[0] == 404


def test_a_hostile_pickle_is_a_422_naming_it_and_runs_nothing(setup):
    client, marker = setup
    code, runs = get(client, "runs")
    win = next(w["windows"][0]["id"] for r in runs["runs"] for w in r["workers"] if w["name"] == "rank1")
    code, body = get(client, "memory_snapshot", run="job", worker="rank1", window=win)
    assert code == 422 and body["file"] == "job/rank1.pickle" and "refused" in body["error"]
    assert not marker.exists()
