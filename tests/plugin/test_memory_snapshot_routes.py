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


def test_ranks_side_by_side(tmp_path):
    """Three ranks, each a real Ascend snapshot (two of the leaking job, one of the job that frees everything),
    named rank<N>: one row each with the figures of its own /memory_snapshot."""
    from canning_tb.queries.memory_snapshot import snapshot_impl, snapshot_ranks_impl
    from canning_tb.store import Store
    run = tmp_path / "job"
    run.mkdir()
    names = {"rank0": SNAP, "rank1": "snapshot_with_empty_cache.pkl", "rank2": "snapshot_1768383987920985470.pkl"}
    for worker, name in names.items():
        shutil.copy(fixture_path("memory_snapshot", name), run / f"{worker}.pickle")
    store = Store(str(tmp_path))
    got = snapshot_ranks_impl(store, "job", 0)
    assert [r["worker"] for r in got["ranks"]] == ["rank0", "rank1", "rank2"]
    for row in got["ranks"]:
        dev = snapshot_impl(store, "job", row["worker"], row["window"])["devices"][0]
        assert row["peak_requested"] == dev["peak"]["requested"] and row["reserved"] == dev["at_snapshot"]["reserved"]
        assert row["leaks"] == len(dev["leaks"])
        growth = snapshot_impl(store, "job", row["worker"], row["window"], limit=200)["devices"][0]["growth"]
        assert row["last_step_grown"] == growth[-1]["grown"]  # the last step's, not the first's
    assert [r["leaks"] for r in got["ranks"]] == [1, 1, 0]
    # peaks of 570, 570 and 450 MiB: none 256 MiB above the median, no finding
    assert got["findings"] == []


def test_one_rank_far_above():
    from canning_tb.analysis.memory_snapshot.findings import rank_findings
    gib = 1 << 30
    rows = [{"worker": f"w{i}", "rank": i, "peak_requested": p} for i, p in enumerate([2 * gib, 2 * gib, 3 * gib, -1])]
    (f,) = rank_findings(rows)
    assert f["rule"] == "snapshot_rank_peak" and "Rank 2" in f["title"] and f["gain_bytes"] == gib  # 3 - median 2 GiB
