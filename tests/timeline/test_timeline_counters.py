"""The NPU's counter tracks (AI Core frequency, HBM / LLC bandwidth, NPU memory ...): read from the
Ascend fixtures' trace_view.json "ph":"C" events and from the profiler db's tables, then served by
/timeline_tracks and /timeline_counters downsampled. Expected values come from a second reading of
the raw files here (json, sqlite3) with the units converted by hand (KB = 1024 bytes, MB/s = 2^20
bytes/s, as msprof scales them)."""
import json
from collections import defaultdict
from decimal import Decimal

import pytest

from canning_tb.ingest.ascend.read import read_ascend
from canning_tb.queries import timeline
from canning_tb.store.store import Store
from conftest import fixture_path, read_db

FACTOR = {"KB": 1024, "MB/s": 2**20}


def raw_counters(folder):
    """(series name -> [(ts ns, value in bytes / bytes/s / as written)]) of trace_view.json."""
    with open(folder / "ASCEND_PROFILER_OUTPUT" / "trace_view.json") as f:
        events = json.load(f)
    series = defaultdict(list)
    for event in events:
        if event.get("ph") != "C":
            continue
        args = dict(event["args"])
        acc = args.pop("acc_id", None)
        name = event["name"] + ("" if acc is None else f" acc_id {acc}")
        (key, value), = args.items()
        unit = key[key.find("(") + 1:-1] if "(" in key else key
        series[name].append((int(Decimal(event["ts"]) * 1000), value * FACTOR.get(unit, 1)))
    return series


@pytest.mark.parametrize("level", ["level0", "level1", "level2"])
def test_trace_view_counters_are_read_sample_for_sample(level):
    folder = fixture_path("ascend", level, "rank0_ascend_pt")
    raw = raw_counters(folder)
    read = defaultdict(list)
    for row in read_ascend(str(folder)).side["npu_counters"]:
        read[row["counter"]].append((row["ts_ns"], row["value"]))
    assert set(read) == set(raw)
    for name, samples in raw.items():
        assert [ts for ts, _ in sorted(read[name])] == [ts for ts, _ in sorted(samples)], name
        assert [v for _, v in sorted(read[name])] == pytest.approx([v for _, v in sorted(samples)]), name
    assert {value for _, value in raw["AI Core Freq"]} == {1800}
    assert raw["APP/HBM"][0][1] == 2160232 * 1024  # KB in the file, bytes here


def test_db_counters_match_a_sqlite_reading():
    folder = fixture_path("ascend", "db_level1", "rank0_ascend_pt")
    db = read_db(next(folder.rglob("ascend_pytorch_profiler_*.db")))
    rows = read_ascend(str(folder)).side["npu_counters"]
    by_name = defaultdict(list)
    for row in rows:
        by_name[row["counter"]].append((row["ts_ns"], row["value"], row["unit"]))
    assert sorted((ts, v) for ts, v, _ in by_name["AI Core Freq"]) == sorted(
        db.execute("select timestampNs, freq from AICORE_FREQ"))
    read_id = db.execute("select id from STRING_IDS where value = 'read'").fetchone()[0]
    assert sorted((ts, v) for ts, v, _ in by_name["HBM 2/Read"]) == sorted(
        db.execute("select timestampNs, bandwidth from HBM where hbmId = 2 and type = ?", (read_id,)))
    assert {unit for _, _, unit in by_name["HBM 2/Read"]} == {"bytes/s"}
    app = db.execute("select id from STRING_IDS where value = 'app'").fetchone()[0]
    assert sorted((ts, v) for ts, v, _ in by_name["APP/HBM"]) == sorted(
        db.execute("select timestampNs, hbm from NPU_MEM where type = ?", (app,)))
    assert len(by_name["read_bandwidth acc_id 0"]) == db.execute(
        "select count(*) from ACC_PMU where accId = 0").fetchone()[0]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    store = Store(str(fixture_path("ascend", "level1")), cache_dir=str(tmp_path_factory.mktemp("cache")))
    run = store.runs()[0]
    worker = next(w for w in store.workers(run) if w.rank == 0).name
    window = store.windows(run, worker)[0].id
    cache = timeline.IndexCache()
    return cache, store, run, worker, window, raw_counters(fixture_path("ascend", "level1", "rank0_ascend_pt"))


def test_tracks_list_every_counter_with_its_peak(served):
    cache, store, run, worker, window, raw = served
    tracks = timeline.tracks_impl(cache, store, run, worker, window, wait_s=120)
    listed = {c["name"]: c for c in tracks["counters"]}
    assert set(listed) == set(raw)
    for name, samples in raw.items():
        assert listed[name]["max"] == pytest.approx(max(v for _, v in samples))
    assert listed["AI Core Freq"]["unit"] == "MHz" and listed["HBM 0/Read"]["unit"] == "bytes/s"
    # a group's series are listed side by side (the browser draws one group header per run of them)
    groups = [c["group"] for c in tracks["counters"]]
    runs = [g for i, g in enumerate(groups) if i == 0 or groups[i - 1] != g]
    assert len(runs) == len(set(groups)) == 7


@pytest.mark.parametrize("width", [7, 40, 400])
def test_counters_keep_each_columns_lowest_and_highest_sample(served, width):
    cache, store, run, worker, window, raw = served
    tracks = timeline.tracks_impl(cache, store, run, worker, window, wait_s=120)
    origin = tracks["start_ns"]
    ids = {c["name"]: c["id"] for c in tracks["counters"]}
    start, end = tracks["duration_ns"] // 5, tracks["duration_ns"] // 2
    answer = {c["id"]: c for c in timeline.counters_impl(cache, store, run, worker, window, start, end, width)["npu"]}
    for name in ("QoS OTHERS", "HBM 0/Read", "read_bandwidth acc_id 0"):
        got = answer[ids[name]]
        columns = defaultdict(list)
        for ts, value in raw[name]:
            if origin + start <= ts <= origin + end:
                columns[(ts - origin - start) * width // (end - start)].append((ts - origin, value))
        points = list(zip(got["ts_ns"], got["values"]))
        for samples in columns.values():  # every column's extremes are sent, at the time of a sample of them
            for extreme in (min(v for _, v in samples), max(v for _, v in samples)):
                at = {t for t, v in samples if v == extreme}
                assert any(t in at and v == pytest.approx(extreme) for t, v in points), (name, extreme)
        before = [value for ts, value in sorted(raw[name]) if ts < origin + start]
        assert len(points) <= 2 * len(columns) + (1 if before else 0)
        if before:  # the value in force at the left edge comes first
            assert points[0] == (start, pytest.approx(before[-1]))
