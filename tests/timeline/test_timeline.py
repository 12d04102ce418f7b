"""Timeline tiles, details, search and summaries on real fixtures, checked against hand computations
and a second reading of the raw trace files (json/gzip here), through the real Store and the plugin's
HTTP routes."""
import gzip
import json
import os
import struct
import threading
import time
from collections import defaultdict

import numpy as np
import pytest
from tensorboard.backend import application
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from canning_tb.queries import timeline
from canning_tb.plugin.plugin import CanningPlugin
from canning_tb.store.store import Store
from conftest import fixture_path

FIXTURES = [("kineto", "resnet50_v100"), ("ascend", "level1"), ("param", "dlrm_8ranks")]


def first_window(parts):
    store = Store(str(fixture_path(*parts)))
    run = store.runs()[0]
    worker = store.workers(run)[0].name
    return store, run, worker, store.windows(run, worker)[0].id


@pytest.fixture(scope="module", params=FIXTURES, ids=["/".join(p) for p in FIXTURES])
def window(request):
    store, run, worker, win = first_window(request.param)
    cache = timeline.IndexCache()
    return cache, store, run, worker, win, cache.get(store, run, worker, win)


def hand_depths(table):
    """Depth by containment, computed by hand: per track (a device stream, a host thread's
    profiler events, its Python frames), events by start (longest first), an event's depth is the
    number of earlier events of its track still on the stack."""
    ev = table.events
    device = ev["device"] != -1
    python = ev["kind"] == 3  # Kind.PYTHON_FUNCTION, as ingest/table.py numbers it
    tracks = defaultdict(list)
    for row in range(len(table)):
        tracks[(bool(device[row]), int(ev["pid"][row]), int(ev["tid"][row]), bool(python[row]))].append(row)
    depth = {}
    for rows in tracks.values():
        rows.sort(key=lambda r: (int(ev["ts"][r]), -int(ev["dur"][r])))
        open_ends = []
        for row in rows:
            start, end = int(ev["ts"][row]), int(ev["ts"][row] + ev["dur"][row])
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            depth[row] = len(open_ends)
            open_ends.append(end)
    return depth


def decode(body):
    length = struct.unpack_from("<I", body)[0]
    header = json.loads(body[4:4 + length])
    offset, count = 4 + length, header["count"]
    columns = {}
    for name, dtype in (("start", "<f8"), ("dur", "<f8"), ("event", "<i4"), ("name", "<i4"), ("count", "<u4"),
                        ("row", "<u4")):
        columns[name] = np.frombuffer(body, dtype, count, offset)
        offset += count * np.dtype(dtype).itemsize
    assert offset == len(body)
    return header, columns


def test_depths_match_a_hand_stack(window):
    *_, loaded = window
    depth = hand_depths(loaded.table)
    assert [depth[r] for r in range(len(loaded.table))] == loaded.index.depth.tolist()
    assert loaded.index.depth.max() >= 1  # the fixtures nest


@pytest.mark.parametrize("zoom", [1, 7, 60, 900])
@pytest.mark.parametrize("width", [300, 1600])
def test_no_slice_lost_and_counts_add_up(window, zoom, width):
    cache, store, run, worker, win, loaded = window
    ev, origin = loaded.table.events, loaded.origin
    duration = int(ev["ts"].max() + ev["dur"].max()) - origin
    span = max(1000, duration // zoom)
    start = (duration - span) // 3
    header, items = decode(timeline.tile_impl(cache, store, run, worker, win, None, start, start + span, width))
    rows = [tuple(r) for r in header["rows"]]
    depth = hand_depths(loaded.table)
    # the events in range, by hand: overlapping [start, start + span] relative to the window start
    ts, end = ev["ts"] - origin, ev["ts"] + ev["dur"] - origin
    inside = np.flatnonzero((end >= start) & (ts <= start + span))
    assert int(items["count"].sum()) == len(inside) == header["events_in_range"]
    per_row = defaultdict(list)
    for i in range(header["count"]):
        per_row[int(items["row"][i])].append((items["start"][i], items["start"][i] + items["dur"][i]))
    track_of = loaded.index.track_of
    for event in inside.tolist():
        row = rows.index((int(track_of[event]), depth[event]))
        assert any(lo <= ts[event] and end[event] <= hi for lo, hi in per_row[row]), event
    for spans in per_row.values():  # a few items per pixel column, never one per event
        assert len(spans) <= 2 * width + 2


def test_merged_item_names_its_longest_event(window):
    cache, store, run, worker, win, loaded = window
    ev = loaded.table.events
    duration = int(ev["ts"].max() - loaded.origin) + 1
    header, items = decode(timeline.tile_impl(cache, store, run, worker, win, None, 0, duration, 200))
    merged = np.flatnonzero(items["count"] > 1)
    assert len(merged) > 0
    for i in merged[:50].tolist():
        event = int(items["event"][i])
        assert header["names"][items["name"][i]] == loaded.table.name(event)
        assert int(ev["dur"][event]) <= items["dur"][i]


def raw_events(path):
    with gzip.open(path, "rt") as f:
        return json.load(f)["traceEvents"]


def resnet():
    store, run, worker, win = first_window(("kineto", "resnet50_v100"))
    cache = timeline.IndexCache()
    raw = raw_events(next(f for f in store.window(run, worker, win).files if f.endswith(".gz")))
    return cache, store, run, worker, win, cache.get(store, run, worker, win), raw


def event_of(loaded, name, ts_us):
    ev = loaded.table.events
    rows = [r for r in np.flatnonzero(ev["ts"] == round(ts_us * 1000)).tolist() if loaded.table.name(r) == name]
    assert rows, (name, ts_us)
    return rows[0]


def test_details_match_the_raw_file_and_flows_join_launch_and_kernel():
    cache, store, run, worker, win, loaded, raw = resnet()
    op = next(e for e in raw if e.get("cat") == "Operator" and e["name"] == "aten::conv2d")
    details = timeline.slice_impl(cache, store, run, worker, win, event_of(loaded, op["name"], op["ts"]))
    assert details["name"] == "aten::conv2d" and details["category"] == "Operator"
    assert details["dur_ns"] == round(op["dur"] * 1000)
    assert details["start_ns"] == round(op["ts"] * 1000) - loaded.origin
    assert json.loads(details["input_shapes"]) == op["args"]["Input Dims"]
    assert 0 <= details["self_ns"] < details["dur_ns"]
    # a launch and its kernel share args.correlation in the raw file
    kernels = {e["args"]["correlation"]: e for e in raw if e.get("cat") == "Kernel"}
    launch = next(e for e in raw if e.get("cat") == "Runtime" and e["args"].get("correlation") in kernels)
    kernel = kernels[launch["args"]["correlation"]]
    linked = timeline.slice_impl(cache, store, run, worker, win, event_of(loaded, launch["name"], launch["ts"]))["links"]
    assert any(link["name"] == kernel["name"] and link["start_ns"] == round(kernel["ts"] * 1000) - loaded.origin
               for link in linked)


def test_search_and_range_summary_against_the_raw_file():
    cache, store, run, worker, win, loaded, raw = resnet()
    complete = [e for e in raw if e.get("ph") == "X"]
    convs = sorted(e["ts"] for e in complete if "conv" in e["name"].lower())
    found = timeline.search_impl(cache, store, run, worker, win, "CONV", 0, None)
    assert found["count"] == len(convs)
    middle = round(convs[10] * 1000) - loaded.origin
    found = timeline.search_impl(cache, store, run, worker, win, "conv", middle, None)
    assert found["next"]["start_ns"] == round(convs[11] * 1000) - loaded.origin
    assert found["previous"]["start_ns"] == round(convs[9] * 1000) - loaded.origin
    lo_us, hi_us = convs[5], convs[200]
    summary = timeline.summary_impl(cache, store, run, worker, win, round(lo_us * 1000) - loaded.origin,
                                    round(hi_us * 1000) - loaded.origin, None)
    expected = defaultdict(float)
    for e in complete:
        overlap = min(e["ts"] + e["dur"], hi_us) - max(e["ts"], lo_us)
        if overlap > 0:
            expected[e["name"]] += overlap * 1000
    for row in summary["rows"][:20]:
        assert row["total_ns"] == pytest.approx(expected[row["name"]], abs=row["count"])


def _self_in_range(events, lo, hi):
    """Per name: (count, clipped time, clipped self time) of the raw complete events that overlap
    [lo, hi] (ns, the file's µs times rounded to ns): a plain stack sweep per (pid, tid), each event's
    direct children being the events that start while it is the innermost one still open and end
    inside it."""
    found = defaultdict(lambda: [0, 0, 0])
    by_thread = defaultdict(list)
    for e in events:
        ts, dur = round(e["ts"] * 1000), round(e["dur"] * 1000)
        by_thread[(e["pid"], e["tid"])].append((ts, ts + dur, e["name"]))
    for thread in by_thread.values():
        stack = []
        for ts, te, name in sorted(thread, key=lambda e: (e[0], e[0] - e[1])):
            while stack and stack[-1][1] <= ts:
                stack.pop()
            clipped = max(0, min(te, hi) - max(ts, lo))
            if te > lo and ts < hi:
                row = found[name]
                row[0] += 1
                row[1] += clipped
                row[2] += clipped
                if stack and te <= stack[-1][1]:
                    found[stack[-1][2]][2] -= clipped
            stack.append((ts, te, name))
    return found


def test_range_summary_self_time_share_and_hits_in_range_against_the_raw_file():
    cache, store, run, worker, win, loaded, raw = resnet()
    complete = [e for e in raw if e.get("ph") == "X" and e.get("dur", 0) > 0]
    ops = sorted(e["ts"] for e in complete if e["name"] == "aten::conv2d")
    lo_us, hi_us = ops[3] + 0.5, ops[40] + 0.5  # cuts through calls at both ends
    start, end = round(lo_us * 1000) - loaded.origin, round(hi_us * 1000) - loaded.origin
    summary = timeline.summary_impl(cache, store, run, worker, win, start, end, None)
    expected = _self_in_range(complete, start + loaded.origin, end + loaded.origin)
    # the share of the range the steps' critical path spends in events: a share, or unknown (None) where a step
    # the range touches keeps only its path's longest pieces
    share = summary["critical_path_share"]
    assert share is None or 0 <= share <= 1
    checked = 0
    for row in summary["rows"][:25]:
        count, total, self_ns = expected[row["name"]]
        assert row["count"] == count, row
        assert row["total_ns"] == total
        assert row["self_ns"] == self_ns, row
        assert row["share"] == pytest.approx(total / (end - start), abs=1e-6)
        checked += row["self_ns"] < row["total_ns"]
    assert checked >= 3  # operators with children in the range: self time is not the total
    # the matches that overlap a range, by start, as the raw file has them
    convs = sorted((e["ts"], e["dur"]) for e in complete if "conv" in e["name"].lower())
    seen = [(ts, dur) for ts, dur in convs if ts <= hi_us and ts + dur >= lo_us]
    found = timeline.search_impl(cache, store, run, worker, win, "conv", start, None, from_ns=start, to_ns=end)
    assert found["count"] == len(convs) and found["in_range"] == len(seen)
    assert [hit[3] for hit in found["hits"]] == sorted(round(ts * 1000) - loaded.origin for ts, _ in seen)[:500]
    with pytest.raises(timeline.BadParameter):
        timeline.search_impl(cache, store, run, worker, win, "conv", 0, None, from_ns=5)


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    plugin = CanningPlugin(base_plugin.TBContext(logdir=str(fixture_path("param", "dlrm_8ranks"))),
                           refresh_interval=0.0)
    assert plugin.scanner.wait_first(60)
    return Client(application.TensorBoardWSGI([plugin]))


def get(client, route, **params):
    """One route's answer; /timeline_tracks asked again while it says loading, as the browser does."""
    for _ in range(120):
        resp = client.get(f"/data/plugin/canning/timeline_{route}", query_string=params)
        if not (route == "tracks" and resp.status_code == 202):
            break
    return resp.status_code, resp.get_data(), resp.headers


def test_routes_over_http_ranks_tiles_and_download(client):
    code, body, _ = get(client, "ranks", run=".", window_index=0)
    ranks = json.loads(body)["ranks"]
    assert code == 200 and sorted(r["rank"] for r in ranks) == list(range(8))
    member = ranks[3]
    params = {"run": ".", "worker": member["worker"], "window": member["window"]}
    code, body, _ = get(client, "tracks", **params)
    tracks = json.loads(body)
    assert code == 200 and tracks["rank"] == member["rank"]
    code, body, headers = get(client, "tile", **params, start_ns=0, end_ns=tracks["duration_ns"], width=800,
                              tracks=",".join(str(t["id"]) for t in tracks["tracks"][:2]))
    assert code == 200 and headers["Content-Type"] == "application/octet-stream"
    header, items = decode(body)
    assert {r[0] for r in header["rows"]} <= {0, 1} and header["count"] == len(items["start"])
    code, body, _ = get(client, "tile", **params, start_ns=5, end_ns=1, width=800)
    assert code == 400 and "end_ns" in json.loads(body)["error"]
    code, body, headers = get(client, "download", **params)
    original = fixture_path("param", "dlrm_8ranks", f"{member['worker']}.{member['window']}.pt.trace.json.gz")
    assert code == 200 and body == original.read_bytes()
    assert "attachment" in headers["Content-Disposition"]


def test_ascend_download_is_a_chrome_trace_of_every_event():
    store, run, worker, win = first_window(("ascend", "level1"))
    cache = timeline.IndexCache()
    name, chunks = timeline.download_impl(cache, store, run, worker, win)
    trace = json.loads(b"".join(chunks))
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert name.endswith(".pt.trace.json") and len(complete) == len(cache.get(store, run, worker, win).table)


def test_collective_peers_across_ranks_against_the_raw_files(client):
    code, body, _ = get(client, "ranks", run=".", window_index=0)
    ranks = json.loads(body)["ranks"]
    member = ranks[0]
    params = {"run": ".", "worker": member["worker"], "window": member["window"]}
    code, body, _ = get(client, "search", **params, q="nccl:all_to_all", exact=1)
    found = json.loads(body)
    third = found["next"]
    for _ in range(2):  # the third call
        third = json.loads(get(client, "search", **params, q="nccl:all_to_all", exact=1, at_ns=third["start_ns"])[1])["next"]
    peers = json.loads(get(client, "peers", **params, event=third["event"])[1])
    assert peers["collective"] and len(peers["peers"]) == 8
    starts = {}
    for rank in ranks:  # by hand: the third nccl:all_to_all of each rank's raw file, by start
        path = fixture_path("param", "dlrm_8ranks", f"{rank['worker']}.{rank['window']}.pt.trace.json.gz")
        calls = sorted(e["ts"] for e in raw_events(path) if e.get("ph") == "X" and e["name"] == "nccl:all_to_all"
                       and e.get("cat") == "user_annotation")
        starts[rank["rank"]] = round(calls[2] * 1000)
    last = max(starts, key=starts.get)
    by_rank = {p["rank"]: p for p in peers["peers"]}
    assert [r for r, p in by_rank.items() if p["last"]] == [last]
    for rank in ranks:
        peer = by_rank[rank["rank"]]
        assert peer["start_ns"] == starts[rank["rank"]] - rank["start_ns"]
        assert peer["clock_ns"] == starts[rank["rank"]] - ranks[0]["start_ns"]
        assert peer["wait_ns"] == starts[last] - starts[rank["rank"]]


def test_memory_counters_keep_each_devices_peak():
    store, run, worker, win = first_window(("hta", "df_index_resolver"))
    cache = timeline.IndexCache()
    duration = timeline.tracks_impl(cache, store, run, worker, win, wait_s=120)["duration_ns"]
    answer = timeline.counters_impl(cache, store, run, worker, win, 0, duration, 300)
    peaks = defaultdict(int)  # by hand: the largest "Total Allocated" / "Total Reserved" per device
    for event in raw_events(store.window(run, worker, win).files[0]):
        if event.get("name") == "[memory]":
            args = event["args"]
            device = (args.get("Device Type"), args.get("Device Id"))
            peaks[(device, "allocated")] = max(peaks[(device, "allocated")], args["Total Allocated"])
            peaks[(device, "reserved")] = max(peaks[(device, "reserved")], args["Total Reserved"])
    # a reserved total of 0 beside allocated bytes is an allocator that does not report it (the CPU's
    # here): no lane, rather than an empty "CPU reserved" one
    unreported = {d for (d, m), v in peaks.items() if m == "reserved" and v == 0 and peaks[(d, "allocated")] > 0}
    assert unreported  # this file has such a device
    for measure in ("allocated", "reserved"):
        shown = sorted(max(c["bytes"]) for c in answer["memory"] if c["measure"] == measure)
        assert shown == sorted(v for (d, m), v in peaks.items() if m == measure
                               and not (m == "reserved" and d in unreported))
    for counter in answer["memory"]:
        assert len(counter["ts_ns"]) <= 301 and counter["ts_ns"] == sorted(counter["ts_ns"])


def test_step_track_matches_the_profiler_steps():
    cache, store, run, worker, win, loaded, raw = resnet()
    steps = timeline.tracks_impl(cache, store, run, worker, win, wait_s=120)["steps"]
    expected = sorted((e["ts"], e["name"]) for e in raw if e.get("name", "").startswith("ProfilerStep#"))
    assert [s["number"] for s in steps] == [int(name.split("#")[1]) for _, name in expected]
    assert [s["start_ns"] for s in steps] == [round(ts * 1000) - loaded.origin for ts, _ in expected]


def test_api_ts_declares_only_fields_the_timeline_routes_send(client):
    from test_frontend_types import API_TS, missing_fields, ts_interfaces
    interfaces = ts_interfaces(API_TS.read_text())
    ranks = json.loads(get(client, "ranks", run=".", window_index=0)[1])
    params = {"run": ".", "worker": ranks["ranks"][0]["worker"], "window": ranks["ranks"][0]["window"]}
    tracks = json.loads(get(client, "tracks", **params)[1])
    found = json.loads(get(client, "search", **params, q="nccl:all_to_all", from_ns=0,
                           to_ns=tracks["duration_ns"])[1])
    event = found["next"]["event"]
    launch = json.loads(get(client, "search", **params, q="cudaLaunchKernel")[1])["next"]["event"]
    answers = {
        "TimelineRanksResponse": ranks,
        "TimelineTracksResponse": tracks,
        "TimelineSearchResponse": found,
        "TimelineSliceResponse": json.loads(get(client, "slice", **params, event=launch)[1]),
        "TimelinePeersResponse": json.loads(get(client, "peers", **params, event=event)[1]),
        "TimelineSummaryResponse": json.loads(get(client, "summary", **params, start_ns=0,
                                                  end_ns=tracks["duration_ns"])[1]),
        "TimelineCountersResponse": json.loads(get(client, "counters", **params, start_ns=0,
                                                   end_ns=tracks["duration_ns"], width=100)[1]),
        "TimelineTileHeader": decode(get(client, "tile", **params, start_ns=0, end_ns=tracks["duration_ns"],
                                         width=100)[1])[0],
    }
    missing = []
    for name, body in answers.items():
        missing += missing_fields(body, name, interfaces, name)
    assert missing == [] and answers["TimelineSliceResponse"]["links"] and answers["TimelinePeersResponse"]["peers"]


def test_the_index_is_built_after_ingest_in_the_background_and_read_back_from_the_cache(tmp_path, monkeypatch):
    import canning_tb.timeline.index as index_module
    # a command-line store never shows a timeline: no index is built
    quiet = Store(str(fixture_path("kineto", "resnet50_v100")), cache_dir=str(tmp_path / "cli"))
    run = quiet.runs()[0]
    worker = quiet.workers(run)[0].name
    win = quiet.windows(run, worker)[0].id
    quiet.digest(run, worker, win)
    assert not os.path.exists(quiet.events_prefix(run, worker, win) + ".timeline.npz")
    # a viewer's store: the digest is handed back, then a background process builds the index; a
    # timeline asked for at once waits for that build instead of building it again
    store = Store(str(fixture_path("kineto", "resnet50_v100")), cache_dir=str(tmp_path / "tb"), timeline_index=True)
    path = store.events_prefix(run, worker, win) + ".timeline.npz"
    store.digest(run, worker, win)
    expected = index_module.build_index(store.table(run, worker, win))

    def no_build(table):
        raise AssertionError("the index was built again")

    monkeypatch.setattr(index_module, "build_index", no_build)
    again = timeline.IndexCache().get(store, run, worker, win).index
    assert path.startswith(str(tmp_path)) and os.path.exists(path)
    assert np.array_equal(again.order, expected.order) and np.array_equal(again.depth, expected.depth)


def generated_table(seed: int):
    """A window of random nested slices on a few threads and streams, with zero-length events,
    equal starts and partial overlaps (which a real trace has too), built through ColumnBuilder."""
    from canning_tb.ingest.table import EVENT_COLUMNS, ColumnBuilder, EventTable, Kind
    rng = np.random.default_rng(seed)
    table = EventTable()
    rows = ColumnBuilder(EVENT_COLUMNS)

    def nest(start, end, depth, pid, tid, device):
        at = start
        while at < end and depth < 6:
            length = int(rng.integers(0, max(1, (end - at) // 2) + 1))
            rows.add(ts=at, dur=length, kind=int(Kind.CPU_OP if device < 0 else Kind.KERNEL), pid=pid, tid=tid,
                     device=device, name=table.strings.id(f"op{int(rng.integers(0, 40))}"))
            if length > 10 and rng.random() < 0.7:
                nest(at, at + length, depth + 1, pid, tid, device)
            at += length + int(rng.integers(0, 50))
    for tid in range(3):
        nest(0, 1_000_000, 0, 1, tid, -1)
    nest(0, 1_000_000, 0, 0, 7, 0)
    for _ in range(30):  # partial overlaps on the device stream
        start = int(rng.integers(0, 990_000))
        rows.add(ts=start, dur=int(rng.integers(1, 10_000)), kind=int(Kind.KERNEL), pid=0, tid=7, device=0,
                 name=table.strings.id("overlap"))
    table.events = rows.freeze()
    table.check()
    return table


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_windows_lose_no_slice_at_any_zoom(seed):
    from canning_tb.timeline.index import build_index
    from canning_tb.timeline.tiles import make_tile
    table = generated_table(seed)
    index = build_index(table)
    depth = hand_depths(table)
    assert [depth[r] for r in range(len(table))] == index.depth.tolist()
    ev = table.events
    end = ev["ts"] + ev["dur"]
    rng = np.random.default_rng(seed)
    row_of = {(int(t), int(d)): r for r, (t, d) in enumerate(zip(index.row_track, index.row_depth))}
    for _ in range(8):
        lo = int(rng.integers(-1000, 1_000_000))
        hi = lo + int(rng.integers(1, 1_000_000))
        width = int(rng.integers(1, 3000))
        rows = list(range(len(index.row_track)))
        tile = make_tile(index, ev["name"], rows, lo, hi, width)
        inside = np.flatnonzero((end >= lo) & (ev["ts"] <= hi))
        assert int(tile.count.sum()) == len(inside) == tile.events_in_range
        for event in inside.tolist():
            mine = tile.row == row_of[(int(index.track_of[event]), depth[event])]
            assert np.any((tile.start[mine] <= ev["ts"][event]) & (tile.end[mine] >= end[event])), event


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_vectorised_depths_follow_the_stack_rule_where_tracks_nest(seed):
    from canning_tb.timeline.index import _bad_tracks, _nested_depths, _tracks
    table = generated_table(seed)
    ev = table.events
    ts, end = ev["ts"], ev["ts"] + ev["dur"]
    track_of = _tracks(table)[4]
    depth = _nested_depths(ts, end, track_of, np.lexsort((-(end - ts), ts, track_of)))
    bad = set(_bad_tracks(ts, end, track_of, depth).tolist())
    hand = hand_depths(table)
    host = set(track_of[ev["device"] == -1].tolist())
    assert host and not host & bad  # the host threads nest: no loop for them
    for row in range(len(table)):
        if int(track_of[row]) not in bad:
            assert depth[row] == hand[row], row


def test_zero_length_events_at_a_start_sit_on_the_stack_rule_depth():
    from canning_tb.timeline.index import stack_depths
    # A [0,10) with B [0,5) and an instant at 0 inside; two instants at 3; C [20,25) and an instant at 20
    ts = np.array([0, 0, 0, 3, 3, 20, 20], np.int64)
    end = np.array([10, 0, 5, 3, 3, 20, 25], np.int64)
    assert stack_depths(ts, end, np.zeros(7, np.int32)).tolist() == [0, 2, 1, 2, 2, 1, 0]


def test_search_by_collective_kind_finds_the_slowest_kernel_of_that_kind(client):
    ranks = json.loads(get(client, "ranks", run=".", window_index=0)[1])["ranks"]
    member = ranks[2]
    params = {"run": ".", "worker": member["worker"], "window": member["window"]}
    found = json.loads(get(client, "search", **params, q="AllReduce", collective=1)[1])
    path = fixture_path("param", "dlrm_8ranks", f"{member['worker']}.{member['window']}.pt.trace.json.gz")
    kernels = [e for e in raw_events(path) if e.get("cat") == "kernel" and e["name"].startswith(("ncclKernel_", "ncclDevKernel_"))
               and "AllReduce" in e["name"]]
    slowest = max(kernels, key=lambda e: e["dur"])
    assert found["count"] == len(kernels)
    assert found["longest"]["name"] == slowest["name"] and found["longest"]["dur_ns"] == round(slowest["dur"] * 1000)


def test_a_broken_rank_is_named_and_the_others_still_answer(tmp_path):
    import gzip as gz
    import shutil
    run = tmp_path / "dlrm"
    shutil.copytree(fixture_path("param", "dlrm_8ranks"), run)
    broken = sorted(run.glob("worker3*.pt.trace.json.gz"))[0]
    broken.write_bytes(gz.compress(gz.decompress(broken.read_bytes())[:4000]))
    store = Store(str(run), cache_dir=str(tmp_path / "cache"))
    answer = timeline.ranks_impl(store, ".", 0)["ranks"]
    bad = [r for r in answer if "error" in r]
    assert len(answer) == 8 and len(bad) == 1 and broken.name in bad[0]["error"]
    assert sorted(r["rank"] for r in answer if "error" not in r) == [0, 1, 2, 4, 5, 6, 7]
    assert all("offset_ns" in r for r in answer if "error" not in r)


@pytest.mark.parametrize("route", ["tracks", "tile", "slice", "peers", "search", "summary", "counters", "download"])
def test_unknown_windows_are_404_and_missing_parameters_400(client, route):
    params = {"start_ns": 0, "end_ns": 10, "width": 10, "event": 0, "q": "x"}
    code, body, _ = get(client, route, run=".", worker="nobody", window="1", **params)
    assert code == 404 and "unknown" in json.loads(body)["error"]
    code, body, _ = get(client, route, run=".", **params)
    assert code == 400 and "missing parameter" in json.loads(body)["error"]


def test_ranks_of_an_unknown_run_or_position(client):
    assert get(client, "ranks", run="nowhere", window_index=0)[0] == 404
    assert get(client, "ranks", run=".", window_index=5)[0] == 404
    assert get(client, "ranks", run=".", worker="nobody", window="1")[0] == 404


def test_tracks_say_loading_with_the_stage_and_what_is_ready_then_answer(tmp_path, monkeypatch):
    store = Store(str(fixture_path("kineto", "resnet50_v100")), cache_dir=str(tmp_path))
    run = store.runs()[0]
    worker = store.workers(run)[0].name
    win = store.windows(run, worker)[0].id
    gate = threading.Event()
    read_events = timeline._events

    def held_events(*args):  # the events stay "being loaded" until the test lets them go
        assert gate.wait(60)
        return read_events(*args)

    monkeypatch.setattr(timeline, "_events", held_events)
    cache = timeline.IndexCache()
    first = timeline.tracks_impl(cache, store, run, worker, win, wait_s=0)
    assert first["loading"] is True and first["stage"] in ("reading the trace", "loading the events")
    deadline = time.monotonic() + 180
    while first.get("stage") != "loading the events" and time.monotonic() < deadline:
        first = timeline.tracks_impl(cache, store, run, worker, win, wait_s=0.1)
    # the digest is known: the ruler and the step track can be drawn before the events are in
    assert first["loading"] is True and first["stage"] == "loading the events" and first["elapsed_s"] >= 0
    gate.set()
    answer = timeline.tracks_impl(cache, store, run, worker, win, wait_s=120)
    assert "loading" not in answer and answer["events"] == len(store.table(run, worker, win))
    assert (first["steps"], first["duration_ns"], first["start_ns"]) == (
        answer["steps"], answer["duration_ns"], answer["start_ns"])
    raw = raw_events(next(f for f in store.window(run, worker, win).files if f.endswith(".gz")))
    assert [s["number"] for s in first["steps"]] == sorted(
        int(e["name"].split("#")[1]) for e in raw if e.get("name", "").startswith("ProfilerStep#"))
