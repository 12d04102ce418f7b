"""canning_tb.open: every table's figures are the views' for the same window, and SQL over them answers what a
plain reading of the files says.

Two comparisons per table: with the plugin's own answers (the /overview route through TensorBoard's WSGI app, and
the `queries` selections every front door serves), and with an independent reading of the fixture files done here
with json / csv and loops: communication.json's wait and transit per rank on the 2-rank Ascend fixture, and the
kernel time per stream of a 2021 Kineto trace. Unknown is NULL in the tables where the views send -1.
"""
import collections
import csv
import gzip
import json
import shutil
from decimal import Decimal

import pytest
from tensorboard.backend import application
from werkzeug.test import Client

from conftest import fixture_path
from test_plugin_routes import get, make_plugin

import canning_tb
from canning_tb.queries import sections
from canning_tb.store import Store

RESNET = "resnet"
ASCEND = "ascend"


def _unknown(value):
    """The views' -1 (unknown) as the tables' NULL."""
    return None if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0 else value


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("logdir")
    shutil.copytree(fixture_path("kineto", "resnet50_v100"), root / RESNET)
    shutil.copytree(fixture_path("ascend", "level1"), root / ASCEND)
    return root


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def run(logdir, cache):
    return canning_tb.open(str(logdir), cache_dir=str(cache))


@pytest.fixture(scope="module")
def store(logdir, cache):
    return Store(str(logdir), cache_dir=str(cache))


def _windows(store):
    return [(r, w.name, win.id) for r in store.runs() for w in store.workers(r) for win in store.windows(r, w.name)]


def _rows(table, run, worker, window):
    return [r for r in table.to_pylist() if (r["run"], r["worker"], r["window"]) == (run, worker, window)]


def test_every_window_of_every_run_is_there(run, store):
    windows = run.df("windows")
    assert sorted(zip(windows["run"], windows["worker"], windows["window"])) == sorted(_windows(store))
    assert set(windows["run"]) == {RESNET, ASCEND}
    assert sorted(windows[windows["run"] == ASCEND]["rank"]) == [0, 1]  # the two ranks of the Ascend job
    assert run.problems == []


def test_steps_are_the_overview_route_s(run, logdir, cache):
    """Each step's duration, breakdown and shares as GET /overview sends them (TensorBoard's WSGI app)."""
    plugin = make_plugin(logdir, store_factory=lambda folder: Store(folder, cache_dir=str(cache)))
    client = Client(application.TensorBoardWSGI([plugin]))
    steps = run.arrow("steps")
    seen = 0
    for name, worker, window in {(r["run"], r["worker"], r["window"]) for r in steps.to_pylist()}:
        code, overview = get(client, "overview", run=name, worker=worker, window=window)
        assert code == 200, overview
        rows = sorted(_rows(steps, name, worker, window), key=lambda r: r["step"])
        assert [r["step"] for r in rows] == [s["number"] for s in overview["steps"]]
        for row, step in zip(rows, overview["steps"]):
            assert row["start_ns"] == _unknown(step["start_ns"]) and row["dur_ns"] == step["dur_ns"]
            assert row["untraced_wait_ns"] == step["untraced_wait_ns"] and row["distorted"] == step["distorted"]
            for category, ns in step["breakdown"].items():
                column = "breakdown_total_ns" if category == "total_ns" else category
                assert row[column] == _unknown(ns), (category, row[column], ns)
            for category, share in step["shares"].items():
                assert row[f"share_{category}"] == pytest.approx(share) if share is not None else \
                    row[f"share_{category}"] is None
            seen += 1
        assert run.df("windows").query("run == @name and worker == @worker and window == @window")[
            "average_step_ns"].item() == overview["figures"]["average_step_ns"]
    assert seen >= 6 + 6 + 2  # two ResNet windows of 6 steps, one step per Ascend rank at least


def _every(fetch, key):
    """Every row of a paged selection (pages of 1,000: the views' largest)."""
    out, offset = [], 0
    while True:
        page = fetch({"limit": 1000, "offset": offset})[key]
        out += page
        offset += 1000
        if len(page) < 1000:
            return out


def _page_all(rows, fields):
    return {tuple(r[f] for f in fields): r for r in rows}


def test_operators_and_kernels_are_the_views(run, store):
    """Every operator (by name and by shape) and every kernel with the figures of the Operators / Kernels views
    (queries.sections, every row: one page as long as the table)."""
    for name, worker, window in _windows(store):
        for group_by, table in (("name", "operators"), ("shape", "operators_by_shape")):
            view = _every(lambda p: sections.operators_impl(store, name, worker, window, group_by, p), "rows")
            mine = _rows(run.arrow(table), name, worker, window)
            assert len(mine) == len(view) > 0
            ours = _page_all(mine, ("name", "input_shapes"))
            for op in view:
                row = ours[(op["name"], op.get("input_shapes", ""))]
                for field in ("calls", "host_self_ns", "host_total_ns", "device_self_ns", "device_total_ns"):
                    assert row[field] == _unknown(op[field]), (op["name"], field)
                if "work" in op:
                    assert row["work_flops"] == _unknown(op["work"]["flops"])
        view = _every(lambda p: sections.kernels_impl(store, name, worker, window, p), "kernels_by_name")
        mine = _page_all(_rows(run.arrow("kernels"), name, worker, window), ("name",))
        assert len(mine) == len(view)
        for kernel in view:
            row = mine[(kernel["name"],)]
            for field in ("calls", "total_ns", "min_ns", "max_ns", "device", "stream"):
                assert row[field] == _unknown(kernel[field]), (kernel["name"], field)


def test_communication_memory_findings_are_the_views(run, store):
    for name, worker, window in _windows(store):
        comm = sections.communication_impl(store, name, worker, window)["communication"]
        mine = _rows(run.arrow("collectives"), name, worker, window)
        assert sorted((r["kind"], r["group"], r["calls"], r["total_ns"]) for r in mine) == \
            sorted((c["kind"], c["group"], c["calls"], c["total_ns"]) for c in comm["collectives"])
        links = _rows(run.arrow("matrix"), name, worker, window)
        assert sorted((r["src"], r["dst"], r["transport"], r["bytes"]) for r in links) == \
            sorted((c["src"], c["dst"], c["transport"], _unknown(c["bytes"])) for c in comm["links"])
        calls = _rows(run.arrow("communication"), name, worker, window)
        assert sorted((r["kind"], r["start_ns"], r["dur_ns"]) for r in calls) == \
            sorted((c["kind"], c["start_ns"], c["dur_ns"]) for c in comm["calls"])
        memory = sections.memory_impl(store, name, worker, window)["devices"]
        mine = {r["device"]: r for r in _rows(run.arrow("memory"), name, worker, window)}
        assert set(mine) == {d["device"] for d in memory}
        for device in memory:
            row = mine[device["device"]]
            assert row["peak_allocated_bytes"] == _unknown(device["peak_allocated_bytes"])
            assert row["peak_ts_ns"] == _unknown(device["peak_ts_ns"])
            assert row["capacity_bytes"] == _unknown(device["capacity_bytes"])
            allocations = _rows(run.arrow("allocations"), name, worker, window)
            assert len([a for a in allocations if a["device"] == device["device"]]) == len(device["events"])
        findings = sections.suggestions_impl(store, name, worker, window)["findings"]
        mine = sorted(_rows(run.arrow("findings"), name, worker, window), key=lambda r: r["rank_order"])
        assert [(r["rule"], r["gain_ns"]) for r in mine] == [(f["rule"], _unknown(f["gain_ns"])) for f in findings]


def _ascend_comm_json(rank: int) -> dict:
    """communication.json of a rank read here: {op name: (step, wait ms, transit ms, elapse ms)}."""
    path = fixture_path("ascend", "level1", f"rank{rank}_ascend_pt", "ASCEND_PROFILER_OUTPUT", "communication.json")
    doc = json.loads(path.read_text())
    out = {}
    for step, kinds in doc.items():
        for kind in ("collective", "p2p"):
            for op, info in kinds.get(kind, {}).items():
                if op == "Total Op Info":
                    continue
                time = info["Communication Time Info"]
                out[op] = (int(step.removeprefix("step")), Decimal(str(time["Wait Time(ms)"])),
                           Decimal(str(time["Transit Time(ms)"])), Decimal(str(time["Elapse Time(ms)"])))
    return out


def test_sql_wait_per_rank_is_communication_json_s(run):
    """SELECT rank, sum(wait_ns), sum(transfer_ns) FROM communication: CANN's Wait and Transit Time of every
    call of communication.json, per rank (ms there, ns here; each call within a nanosecond of rounding)."""
    answer = run.sql(f"SELECT rank, count(*) AS calls, sum(wait_ns) AS wait, sum(transfer_ns) AS transfer, "
                     f"min(step) AS first_step FROM communication WHERE run = '{ASCEND}' GROUP BY rank ORDER BY rank")
    got = answer.table.to_pylist()
    assert [r["rank"] for r in got] == [0, 1] and not answer.truncated
    for row in got:
        calls = _ascend_comm_json(row["rank"])
        assert row["calls"] == len(calls) > 0
        wait_ns = sum(min(w, e) for _, w, _, e in calls.values()) * 1_000_000
        transit_ns = sum(min(t, e - min(w, e)) for _, w, t, e in calls.values()) * 1_000_000
        assert abs(row["wait"] - wait_ns) <= len(calls), (row, wait_ns)
        assert abs(row["transfer"] - transit_ns) <= len(calls), (row, transit_ns)
        assert row["first_step"] == min(s for s, *_ in calls.values())
    waits = {r["rank"]: r["wait"] for r in got}
    assert waits[0] > 10 * waits[1]  # rank 0 waited for rank 1 (5.6 ms against 0.07 ms in the first all-reduce)


def _kernel_ns_per_stream(path) -> dict:
    """{stream: summed kernel duration in ns} of a 2021 Kineto trace, by a plain walk of its events."""
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    out = collections.Counter()
    for event in doc["traceEvents"]:
        if event.get("ph") == "X" and event.get("cat") == "Kernel":
            out[event["args"]["stream"]] += int(Decimal(str(event["dur"])) * 1000)
    return dict(out)


def test_sql_kernel_time_per_stream_is_the_trace_s(run, store, cache, logdir):
    """Events: SELECT stream, sum(dur_ns) ... WHERE kind = 'kernel' per stream of one ResNet window, against a
    json walk of its trace; the window's events are cached as Parquet in the cache folder, never in the logdir."""
    worker = store.workers(RESNET)[0].name
    window = store.windows(RESNET, worker)[0]
    expected = _kernel_ns_per_stream(window.path)
    answer = run.sql(f"SELECT stream, sum(dur_ns) AS ns, count(*) AS kernels FROM events WHERE run = '{RESNET}' "
                     f"AND \"window\" = '{window.id}' AND kind = 'kernel' GROUP BY stream ORDER BY stream")
    got = {r["stream"]: int(r["ns"]) for r in answer.table.to_pylist()}
    assert got == expected and len(got) >= 1
    assert answer.tables == ["events"]
    assert list(cache.rglob("*.parquet")) and not list(logdir.rglob("*.parquet"))
    # only the window the WHERE names was read: the other ResNet window's events are not cached
    assert len(list(cache.rglob("*.parquet"))) == 1


def test_events_carry_parents_and_steps(run, store):
    """Each event's parent encloses it on the same thread; the step of an event is the step whose span holds its
    start (the steps table's)."""
    worker = store.workers(RESNET)[0].name
    window = store.windows(RESNET, worker)[0].id
    events = run.df("events", run=RESNET, worker=worker, window=window)
    steps = run.df("steps").query("run == @RESNET and worker == @worker and window == @window")
    child = events.dropna(subset=["parent"])
    assert len(child) > 1000
    parent = events.set_index("id").loc[child["parent"].astype(int)]
    assert ((parent["ts_ns"].values <= child["ts_ns"].values) &
            (parent["ts_ns"].values + parent["dur_ns"].values >= child["ts_ns"].values + child["dur_ns"].values)).all()
    assert (parent["tid"].values == child["tid"].values).all()
    inside = events.dropna(subset=["step"])
    for number, start, dur in zip(steps["step"], steps["start_ns"], steps["dur_ns"]):
        mine = inside[inside["step"] == number]
        assert len(mine) > 0 and (mine["ts_ns"] >= start).all() and (mine["ts_ns"] < start + dur).all()


def test_polars_and_pandas_agree_with_arrow(run):
    pl = pytest.importorskip("polars")
    table = run.arrow("kernels")
    assert run.pl("kernels").shape == (table.num_rows, table.num_columns)
    assert isinstance(run.pl("kernels"), pl.DataFrame)
    assert run.df("kernels")["total_ns"].sum() == sum(v for v in table["total_ns"].to_pylist() if v is not None)


def test_unknown_is_null_never_zero(run):
    """The ResNet windows have no CANN measurement and one rank only: no call's wait can be told (NULL, not 0)."""
    answer = run.sql(f"SELECT count(*) AS calls, count(wait_ns) AS known FROM communication WHERE run = '{RESNET}'")
    row = answer.table.to_pylist()[0]
    assert row["known"] == 0
    assert run.sql(f"SELECT count(*) AS n FROM communication WHERE run = '{RESNET}' AND wait_ns = 0").table[
        "n"].to_pylist() == [0]


def test_bad_names_are_clear(run, tmp_path):
    with pytest.raises(KeyError, match="unknown table 'nope'"):
        run.arrow("nope")
    with pytest.raises(FileNotFoundError, match="no profiles found"):
        canning_tb.open(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no such folder"):
        canning_tb.open(str(tmp_path / "missing"))


def test_an_unreadable_window_is_left_out_and_said(tmp_path, cache):
    good = tmp_path / "run"
    shutil.copytree(fixture_path("kineto", "resnet50_v100"), good)
    first = sorted(good.iterdir())[0]
    first.write_bytes(gzip.compress(gzip.decompress(first.read_bytes())[:5000]))
    run = canning_tb.open(str(tmp_path), cache_dir=str(cache / "bad"))
    steps = run.df("steps")
    assert len(set(steps["window"])) == 1
    assert len(run.problems) == 1 and first.name in run.problems[0]


def test_kernel_calls_are_kernel_details_csv_s(run):
    """The Ascend kernels by name: each compute kernel of kernel_details.csv (read with csv) with its number of
    calls (the collectives' tasks, hcom_*, are one family per collective in the view: left out here)."""
    path = fixture_path("ascend", "level1", "rank0_ascend_pt", "ASCEND_PROFILER_OUTPUT", "kernel_details.csv")
    with open(path, newline="") as f:
        calls = collections.Counter(row["Name"] for row in csv.DictReader(f) if not row["Name"].startswith("hcom_"))
    answer = run.sql(f"SELECT name, calls FROM kernels WHERE run = '{ASCEND}' AND rank = 0 AND NOT communication")
    assert {r["name"]: r["calls"] for r in answer.table.to_pylist()} == dict(calls) and len(calls) > 10


def test_events_of_the_windows_a_where_names_and_no_fewer(run, store):
    """Only the windows a simple WHERE names are read; an OR, a subquery or a join reads them all, so the
    answer is never short of a window."""
    from canning_tb.sql.run import events_where
    assert events_where("SELECT * FROM events WHERE rank = 3 AND kind = 'kernel'") == {"rank": [3]}
    assert events_where("SELECT * FROM events WHERE rank IN (1, 2) AND window_index = 0 AND \"window\" = 'w'") == \
        {"rank": [1, 2], "window_index": [0], "window": ["w"]}
    assert events_where("SELECT * FROM events WHERE rank = 3 OR kind = 'kernel'") == {}
    assert events_where("SELECT * FROM events WHERE rank = 3 AND id IN (SELECT parent FROM events "
                        "WHERE rank = 4)") == {}
    assert events_where("SELECT * FROM events e JOIN steps s USING (rank) WHERE rank = 3") == {}
    assert events_where("SELECT * FROM events WHERE rank > 3") == {}
    worker = store.workers(RESNET)[0].name
    first, second = (w.id for w in store.windows(RESNET, worker))
    answer = run.sql(f"SELECT count(DISTINCT \"window\") AS windows FROM events WHERE run = '{RESNET}' AND "
                     f"(\"window\" = '{first}' OR \"window\" = '{second}')")
    assert answer.table["windows"].to_pylist() == [2]


def test_a_window_not_analysed_yet_is_said(tmp_path, cache):
    """torch_npu output without ASCEND_PROFILER_OUTPUT (profiled, not analysed: profiler_info and FRAMEWORK/) is
    left out of every table and named in `problems`."""
    shutil.copytree(fixture_path("ascend", "level1", "rank0_ascend_pt"), tmp_path / "rank0_ascend_pt")
    raw = tmp_path / "rank1_ascend_pt"
    (raw / "FRAMEWORK").mkdir(parents=True)
    shutil.copy(fixture_path("ascend", "level1", "rank1_ascend_pt", "profiler_info_1.json"), raw)
    run = canning_tb.open(str(tmp_path), cache_dir=str(cache / "raw"))
    assert run.df("windows")["rank"].tolist() == [0]
    assert len(run.problems) == 1 and "not ready (incomplete)" in run.problems[0]


def test_the_other_tables_are_the_views_too(run, store):
    """efficiency (the operators by shape that have a FLOPs model, their `work`), kernels by operator, operators by
    stack, and the memory curve: the views' rows for every window."""
    efficiency, curve = run.arrow("efficiency"), run.arrow("memory_curve")
    modelled = 0
    for name, worker, window in _windows(store):
        by_shape = _every(lambda p: sections.operators_impl(store, name, worker, window, "shape", p), "rows")
        mine = _page_all(_rows(efficiency, name, worker, window), ("name", "input_shapes"))
        with_model = [op for op in by_shape if op.get("work", {}).get("model")]
        assert len(mine) == len(with_model)
        for op in with_model:
            row = mine[(op["name"], op["input_shapes"])]
            for field in ("flops", "bytes", "tflops", "gbps", "intensity", "roof_share", "bound", "model"):
                assert row[field] == _unknown(op["work"][field]), (op["name"], field)
        modelled += len(with_model)
        view = sections.kernels_impl(store, name, worker, window, {"limit": 1000})
        mine = _rows(run.arrow("kernels_by_op"), name, worker, window)
        assert len(mine) == view["kernels_by_op_all"] <= 1000  # one page holds them all
        assert sorted((r["name"], r["op_name"], r["calls"], r["total_ns"]) for r in mine) == \
            sorted((k["name"], k["op_name"], k["calls"], k["total_ns"]) for k in view["kernels_by_op"])
        stacks = _rows(run.arrow("operators_by_stack"), name, worker, window)
        assert len(stacks) == sections.operators_impl(store, name, worker, window, "stack")["all_rows"]
        for device in sections.memory_impl(store, name, worker, window)["devices"]:
            points = [r for r in _rows(curve, name, worker, window) if r["device"] == device["device"]]
            assert [p["ts_ns"] for p in points] == [_unknown(t) for t in device["curve_ts_ns"]]
            assert [p["allocated_bytes"] for p in points] == [_unknown(b) for b in device["curve_allocated_bytes"]]
    assert modelled > 0  # the ResNet windows' convolutions and matmuls have a model
