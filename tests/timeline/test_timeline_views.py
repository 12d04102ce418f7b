"""What the timeline shows of a clicked slice, its peers on the other ranks, a search, the binary tile
and the Chrome trace written from a table: each on a few events placed here by hand (ns), every
expected value worked out in the test's docstring or read back from the bytes by the layout
docs/http_api.md gives (issue 46: mutation testing of timeline/)."""
import json
import struct

import numpy as np

from _synthetic import ev, table

from canning_tb.ingest.table import Kind
from canning_tb.timeline.chrome import chrome_trace
from canning_tb.timeline.details import linked, self_time, slice_details
from canning_tb.timeline.index import build_index
from canning_tb.timeline.peers import is_collective, peers
from canning_tb.timeline.query import search
from canning_tb.timeline.tiles import Tile, encode


def _row(t, name, ts):
    """The row of the event of that name starting at ts (found here with numpy, not by the code under test)."""
    return int(np.flatnonzero((t.events["name"] == t.strings.find(name)) & (t.events["ts"] == ts))[0])


# -- the Chrome trace -----------------------------------------------------------------------------------
def test_the_chrome_trace_is_the_events_in_microseconds_with_their_ids_and_names():
    """mm: 1500 ns for 2250 ns -> ts 1.5, dur 2.25 µs, its correlation, external id and shapes as args, its
    category as written; the kernel (no category) is of kind "kernel", 4000 / 1001 ns -> 4.0 / 1.001 µs; a
    nameless runtime call is "". Thread names whose pid or tid is not a number are left out; negative
    ones are numbers."""
    t = table([ev("aten::mm", Kind.CPU_OP, 1500, 2250, correlation=5, external_id=7, shapes="[[2, 3]]"),
               ev("k", Kind.KERNEL, 4000, 1001), ev(None, Kind.RUNTIME, 6000, 0)])
    t.events["cat"][_row(t, "aten::mm", 1500)] = t.strings.id("cpu_op")
    t.meta.process_names = {1: "python"}
    t.meta.thread_names = {"1:1": "main", "x:2": "bad", "3:y": "bad too", "-3:-4": "negative", "X5:1": "no",
                           "5:X1": "no either"}
    chunks = list(chrome_trace(t))
    assert chunks[0] == b'{"displayTimeUnit":"ns","traceEvents":[' and chunks[-1] == b"]}"
    text = b"".join(chunks).decode()
    assert text == (
        '{"displayTimeUnit":"ns","traceEvents":['
        '{"ph":"M","name":"process_name","pid":1,"args":{"name":"python"}},'
        '{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"main"}},'
        '{"ph":"M","name":"thread_name","pid":-3,"tid":-4,"args":{"name":"negative"}},'
        '{"ph":"X","name":"aten::mm","cat":"cpu_op","pid":1,"tid":1,"ts":1.5,"dur":2.25,'
        '"args":{"correlation":5,"External id":7,"Input Dims":"[[2, 3]]"}},'
        '{"ph":"X","name":"k","cat":"kernel","pid":0,"tid":1,"ts":4.0,"dur":1.001,"args":{}},'
        '{"ph":"X","name":"","cat":"runtime","pid":1,"tid":1,"ts":6.0,"dur":0.0,"args":{}}]}')


def test_an_empty_table_is_an_empty_trace():
    t = table([])
    assert b"".join(chrome_trace(t)) == b'{"displayTimeUnit":"ns","traceEvents":[]}'


# -- peers of a collective ------------------------------------------------------------------------------
def test_a_collectives_peers_are_its_same_occurrence_on_each_rank():
    """AllReduce on rank 0 at 100 (50 ns) and 1000 (60 ns), rank 1 at 150 (40) and 1300 (20), rank 2 at
    120 (10) only, rank 3 never. The second call: rank 1 starts last (1300), rank 0 waited 300 ns; rank 2
    has no second call. The first call: starts 100, 150, 120 -> rank 1 last, waits 50, 0, 30. A host
    operator of the same name (another kind) is not a peer."""
    name = "ncclDevKernel_AllReduce_Sum"
    r0 = table([ev(name, Kind.COMM_KERNEL, 100, 50), ev(name, Kind.CPU_OP, 500, 5),
                ev(name, Kind.COMM_KERNEL, 1000, 60)])
    r1 = table([ev("aten::mm", Kind.CPU_OP, 0, 10), ev(name, Kind.COMM_KERNEL, 150, 40),
                ev(name, Kind.COMM_KERNEL, 1300, 20)])
    r2 = table([ev(name, Kind.CPU_OP, 0, 5), ev(name, Kind.COMM_KERNEL, 120, 10)])
    r3 = table([ev("aten::mm", Kind.CPU_OP, 0, 10), ev(None, Kind.COMM_KERNEL, 100, 5),
                ev(None, Kind.COMM_KERNEL, 1100, 5)])  # nameless calls are no one's peers
    tables = [r0, r1, r2, r3]
    second = peers(tables, 0, _row(r0, name, 1000))
    assert second == [{"event": _row(r0, name, 1000), "start": 1000, "dur_ns": 60, "wait_ns": 300, "last": False},
                      {"event": _row(r1, name, 1300), "start": 1300, "dur_ns": 20, "wait_ns": 0, "last": True},
                      None, None]
    first = peers(tables, 2, _row(r2, name, 120))
    assert first == [{"event": _row(r0, name, 100), "start": 100, "dur_ns": 50, "wait_ns": 50, "last": False},
                     {"event": _row(r1, name, 150), "start": 150, "dur_ns": 40, "wait_ns": 0, "last": True},
                     {"event": _row(r2, name, 120), "start": 120, "dur_ns": 10, "wait_ns": 30, "last": False},
                     None]


def test_calls_at_one_time_are_peers_in_row_order():
    """Two calls of rank 0 start at 100: the second row is the second occurrence, paired with rank 1's
    second (at 400)."""
    name = "hcom_allReduce_"
    r0 = table([ev(name, Kind.COMM_KERNEL, 100, 7), ev(name, Kind.COMM_KERNEL, 100, 9)])
    r1 = table([ev(name, Kind.COMM_KERNEL, 300, 1), ev(name, Kind.COMM_KERNEL, 400, 2)])
    rows = np.flatnonzero(r0.events["ts"] == 100).tolist()
    got = peers([r0, r1], 0, rows[1])
    assert [p["event"] for p in got] == [rows[1], _row(r1, name, 400)]
    assert [p["wait_ns"] for p in got] == [300, 0]


def test_what_is_a_collective():
    """A communication kernel whatever its name; a host call whose name the host pattern starts with
    (c10d::, nccl:, hcom_ ...); nothing else, and no name."""
    t = table([ev("whatever", Kind.COMM_KERNEL, 0, 1), ev("c10d::allreduce_", Kind.CPU_OP, 1, 1),
               ev("hcom_broadcast_", Kind.KERNEL, 2, 1), ev("aten::mm", Kind.CPU_OP, 3, 1),
               ev(None, Kind.CPU_OP, 4, 1), ev("my_nccl:x", Kind.CPU_OP, 5, 1)])
    assert [is_collective(t, row) for row in range(6)] == [True, True, True, False, False, False]


# -- a clicked slice ------------------------------------------------------------------------------------
def _clicked():
    """Thread 1: p [1000, 2000) holds c1 [1100, 1300), c2 [1500, 1600) and c3 [1900, 2100) (past p's end:
    100 ns of it under p); q [2500, 3000) holds d [2600, 2700). Thread 2: r [1000, 3000) holds r1 [1200,
    1400). Thread 3: the launch (correlation 11, external id 7). The kernel (correlation 11, external id 7,
    4 blocks, shapes, a stack with an empty frame, core and group). p has external id 7."""
    return table([
        ev("p", Kind.CPU_OP, 1000, 1000, external_id=7), ev("c1", Kind.CPU_OP, 1100, 200),
        ev("c2", Kind.CPU_OP, 1500, 100), ev("c3", Kind.CPU_OP, 1900, 200),
        ev("q", Kind.CPU_OP, 2500, 500), ev("d", Kind.CPU_OP, 2600, 100),
        ev("r", Kind.CPU_OP, 1000, 2000, tid=2), ev("r1", Kind.CPU_OP, 1200, 200, tid=2),
        ev("cudaLaunchKernel", Kind.RUNTIME, 1150, 20, tid=3, correlation=11, external_id=7),
        ev("gemm", Kind.KERNEL, 1180, 300, correlation=11, external_id=7, blocks=4, shapes="[[4, 4]]",
           stack="a.py(1): f;;b.py(2): g", core="AI_CORE", group="tp")])


def test_self_time_is_less_the_next_rows_time_under_it_clipped():
    """p: 1000 - 200 (c1) - 100 (c2) - 100 (c3 clipped at 2000) = 600 (r1, on thread 2, is not its child);
    q: 500 - 100 = 400; c1, a leaf: 200; r: 2000 - 200 = 1800."""
    t = _clicked()
    index = build_index(t)
    assert [self_time(t, index, _row(t, n, ts)) for n, ts in (("p", 1000), ("q", 2500), ("c1", 1100), ("r", 1000))] \
        == [600, 400, 200, 1800]


def test_links_are_by_correlation_or_external_id_and_never_by_an_absent_one():
    t = _clicked()
    p, launch, kernel = _row(t, "p", 1000), _row(t, "cudaLaunchKernel", 1150), _row(t, "gemm", 1180)
    assert linked(t, p) == sorted([launch, kernel])
    assert linked(t, kernel) == sorted([p, launch])
    assert linked(t, _row(t, "c1", 1100)) == []  # no ids: the other id-less events are not its links


def test_links_by_correlation_are_kept_beside_those_by_external_id():
    """The launch (correlation 3, external id 9): its kernel by correlation (no external id) and its operator by
    external id (no correlation)."""
    t = table([ev("op", Kind.CPU_OP, 0, 100, external_id=9), ev("launch", Kind.RUNTIME, 10, 5, correlation=3,
                                                                 external_id=9, tid=2),
               ev("kernel", Kind.KERNEL, 20, 5, correlation=3)])
    assert linked(t, _row(t, "launch", 10)) == sorted([_row(t, "op", 0), _row(t, "kernel", 20)])


def test_a_child_of_one_ns_is_taken_from_its_parents_self_time():
    t = table([ev("p", Kind.CPU_OP, 0, 10), ev("c", Kind.CPU_OP, 2, 1)])
    assert self_time(t, build_index(t), _row(t, "p", 0)) == 9


def test_links_stop_at_200():
    """205 kernels of one correlation id: the first 200 other rows, by row."""
    t = table([ev("k", Kind.KERNEL, i, 1, correlation=3) for i in range(206)])
    assert linked(t, 0) == list(range(1, 201))
    assert linked(t, 5) == [r for r in range(201) if r != 5]


def test_the_details_of_a_kernel_and_of_an_operator():
    """Tracks: host threads first by (pid, tid): pid 1 tid 1 -> 0, tid 2 -> 1, tid 3 -> 2; the kernel
    (pid 0 tid 1, a device) -> 3. Times relative to origin 1000."""
    t = _clicked()
    index = build_index(t)
    t.events["cat"][_row(t, "gemm", 1180)] = t.strings.id("kernel")
    launch, kernel, p = _row(t, "cudaLaunchKernel", 1150), _row(t, "gemm", 1180), _row(t, "p", 1000)
    brief = {"p": {"event": p, "name": "p", "kind": "cpu_op", "start_ns": 0, "dur_ns": 1000, "track": 0, "depth": 0},
             "launch": {"event": launch, "name": "cudaLaunchKernel", "kind": "runtime", "start_ns": 150,
                        "dur_ns": 20, "track": 2, "depth": 0}}
    assert slice_details(t, index, kernel, 1000) == {
        "event": kernel, "name": "gemm", "kind": "kernel", "start_ns": 180, "dur_ns": 300, "track": 3, "depth": 0,
        "category": "kernel", "self_ns": 300,
        "args": {"device": 0, "stream": 7, "correlation": 11, "external_id": 7, "blocks": 4,
                 "shapes": "[[4, 4]]", "stack": "a.py(1): f;;b.py(2): g", "core": "AI_CORE", "group": "tp"},
        "input_shapes": "[[4, 4]]", "call_stack": ["a.py(1): f", "b.py(2): g"],
        "links": sorted([brief["p"], brief["launch"]], key=lambda b: b["event"])}
    got = slice_details(t, index, _row(t, "c2", 1500), 1000)
    assert got["category"] == "" and got["args"] == {} and got["input_shapes"] == "" and got["call_stack"] == []
    assert (got["kind"], got["depth"], got["self_ns"], got["start_ns"]) == ("cpu_op", 1, 100, 500)
    assert slice_details(t, index, p, 1000)["args"] == {"external_id": 7}
    nameless = table([ev(None, Kind.CPU_OP, 0, 5)])
    assert slice_details(nameless, build_index(nameless), 0, 0)["name"] == ""


# -- search ---------------------------------------------------------------------------------------------
def _searched():
    """conv2d at 100 (30 ns), 300 (on thread 2, 80 ns), 500 (10 ns); Conv_bn at 200 (60 ns, nested in
    nothing), mm at 400; on thread 2, mm at 350 (5 ns, inside conv2d: depth 1) and a nameless event at 600."""
    return table([ev("aten::conv2d", Kind.CPU_OP, 100, 30), ev("aten::Conv_bn", Kind.CPU_OP, 200, 60),
                  ev("aten::conv2d", Kind.CPU_OP, 300, 80, tid=2), ev("aten::mm", Kind.CPU_OP, 400, 10),
                  ev("aten::conv2d", Kind.CPU_OP, 500, 10), ev("aten::mm", Kind.CPU_OP, 350, 5, tid=2),
                  ev(None, Kind.CPU_OP, 600, 5, tid=2)])


def test_search_counts_the_matches_and_finds_the_next_previous_and_longest():
    """"conv", any case: four matches, by start 100, 200, 300, 500. At 300: the next starts after it (500,
    the 4th: next_index 3), the previous before it (200); the longest is the 80 ns one (thread 2)."""
    t = _searched()
    index = build_index(t)
    got = search(t, "CONV", 300, None, index.track_of)
    assert got == {"count": 4, "next": _row(t, "aten::conv2d", 500), "previous": _row(t, "aten::Conv_bn", 200),
                   "next_index": 3, "longest": _row(t, "aten::conv2d", 300), "match_tracks": [0, 1]}
    before_all = search(t, "conv", 99, None, index.track_of)
    assert (before_all["next"], before_all["previous"], before_all["next_index"]) == (
        _row(t, "aten::conv2d", 100), None, 0)
    at_first = search(t, "conv", 100, None, index.track_of)  # a match at at_ns is neither next nor previous
    assert (at_first["next"], at_first["previous"], at_first["next_index"]) == (
        _row(t, "aten::Conv_bn", 200), None, 1)
    second = search(t, "conv", 150, None, index.track_of)  # the previous match is the first one
    assert (second["previous"], second["next"]) == (_row(t, "aten::conv2d", 100), _row(t, "aten::Conv_bn", 200))
    past_all = search(t, "conv", 600, None, index.track_of)
    assert (past_all["next"], past_all["previous"], past_all["next_index"]) == (
        None, _row(t, "aten::conv2d", 500), None)


def test_an_exact_search_and_one_limited_to_tracks():
    t = _searched()
    index = build_index(t)
    exact = search(t, "aten::conv2d", 0, None, index.track_of, exact=True)
    assert (exact["count"], exact["match_tracks"]) == (3, [0, 1])
    assert search(t, "conv2d", 0, None, index.track_of, exact=True) == {
        "count": 0, "next": None, "previous": None, "next_index": None, "longest": None, "match_tracks": []}
    on_two = search(t, "conv", 0, np.array([1]), index.track_of)
    assert (on_two["count"], on_two["next"], on_two["match_tracks"]) == (1, _row(t, "aten::conv2d", 300), [1])
    assert search(t, "nothing", 0, None, index.track_of)["count"] == 0
    assert search(t, "nothing", 0, np.array([0, 1]), index.track_of)["count"] == 0
    assert search(t, "nothing", 0, None, index.track_of, exact=True)["count"] == 0  # not the nameless event


def test_the_hits_in_a_range_overlap_it_and_are_relative_to_the_origin():
    """Range [260, 500]: Conv_bn [200, 260] ends at its start and conv2d at 500 starts at its end: both in;
    conv2d at 100 is out. Each hit: [event, track, depth, start - 100, dur]."""
    t = _searched()
    index = build_index(t)
    got = search(t, "conv", 0, None, index.track_of, within=(260, 500), depth=index.depth, origin=100)
    assert got["in_range"] == 3
    assert got["hits"] == [[_row(t, "aten::Conv_bn", 200), 0, 0, 100, 60], [_row(t, "aten::conv2d", 300), 1, 0, 200, 80],
                           [_row(t, "aten::conv2d", 500), 0, 0, 400, 10]]
    flat = search(t, "conv", 0, None, index.track_of, within=(261, 499))
    assert flat["in_range"] == 1 and flat["hits"] == [[_row(t, "aten::conv2d", 300), 1, 0, 300, 80]]
    nested = search(t, "aten::mm", 0, None, index.track_of, exact=True, within=(0, 1000), depth=index.depth)
    assert nested["hits"] == [[_row(t, "aten::mm", 350), 1, 1, 350, 5], [_row(t, "aten::mm", 400), 0, 0, 400, 10]]


def test_the_hits_stop_at_500_but_all_are_counted():
    t = table([ev("x", Kind.CPU_OP, 10 * i, 5) for i in range(502)])
    got = search(t, "x", 0, None, build_index(t).track_of, within=(0, 10**6))
    assert got["in_range"] == 502 and len(got["hits"]) == 500 and got["hits"][-1][3] == 4990


def test_a_collective_search_takes_the_device_kernels_else_the_host_calls():
    """AllReduce: the NCCL kernel where the window has one; without it, the host calls whose names the
    host pattern starts (c10d::, nccl:), not a helper whose name only says all_reduce."""
    host = [ev("c10d::allreduce_", Kind.CPU_OP, 0, 10), ev("nccl:all_reduce", Kind.CPU_OP, 20, 10),
            ev("my_all_reduce_helper", Kind.CPU_OP, 40, 10), ev("c10d::broadcast_", Kind.CPU_OP, 60, 10)]
    kernel = ev("ncclDevKernel_AllReduce_Sum_f32", Kind.COMM_KERNEL, 5, 3)
    with_kernel = table(host + [kernel])
    got = search(with_kernel, "AllReduce", 0, None, build_index(with_kernel).track_of, collective=True)
    assert (got["count"], got["next"]) == (1, _row(with_kernel, "ncclDevKernel_AllReduce_Sum_f32", 5))
    only_host = table(host)
    got = search(only_host, "AllReduce", -1, None, build_index(only_host).track_of, collective=True)
    assert got["count"] == 2 and got["next"] == _row(only_host, "c10d::allreduce_", 0)
    none = table([ev("aten::mm", Kind.CPU_OP, 0, 1)])
    assert search(none, "AllReduce", 0, None, build_index(none).track_of, collective=True)["count"] == 0
    assert search(none, "AllReduce", 0, np.array([0]), build_index(none).track_of, collective=True)["count"] == 0
    only_helper = table([ev("my_all_reduce_helper", Kind.CPU_OP, 0, 1)])  # of the kind, but not a host call
    assert search(only_helper, "AllReduce", 0, np.array([0]), build_index(only_helper).track_of,
                  collective=True)["count"] == 0


# -- the binary tile ------------------------------------------------------------------------------------
def test_a_tile_encodes_as_the_documented_layout():
    """docs/http_api.md "GET /timeline_tile": u32 L, the JSON header (padded so the arrays start at a
    multiple of 8), then n f64 starts (relative to the origin 1000), n f64 durations, n i32 events, n i32
    name indexes into the header's names (the ids used, ascending: 2 -> "b", 5 -> "a"), n u32 counts,
    n u32 rows. A name with no text is ""."""
    strings = ["s0", "s1", "b", "s3", "s4", "a", None]
    tile = Tile(row=np.array([0, 1, 1], np.uint32), start=np.array([1100, 1500, 1800], np.int64),
                end=np.array([1200, 1750, 1801], np.int64), count=np.array([1, 3, 1], np.uint32),
                event=np.array([4, 9, 12], np.int64), name=np.array([5, 2, 6], np.int32), events_in_range=5)
    raw = encode(tile, {"start_ns": 0, "end_ns": 1000, "width": 10, "rows": [[0, 0], [1, 0]]}, strings, 1000)
    (length,) = struct.unpack("<I", raw[:4])
    assert (4 + length) % 8 == 0
    text = raw[4:4 + length]
    assert text.rstrip(b" ") == (b'{"start_ns":0,"end_ns":1000,"width":10,"rows":[[0,0],[1,0]],"count":3,'
                                 b'"events_in_range":5,"names":["b","a",""]}')
    body, n = raw[4 + length:], 3
    assert len(body) == n * (8 + 8 + 4 + 4 + 4 + 4)
    starts = struct.unpack("<3d", body[:24])
    durs = struct.unpack("<3d", body[24:48])
    events = struct.unpack("<3i", body[48:60])
    names = struct.unpack("<3i", body[60:72])
    counts = struct.unpack("<3I", body[72:84])
    rows = struct.unpack("<3I", body[84:96])
    assert (starts, durs, events, names, counts, rows) == (
        (100.0, 500.0, 800.0), (100.0, 250.0, 1.0), (4, 9, 12), (1, 0, 2), (1, 3, 1), (0, 1, 1))


def test_an_empty_tile_is_its_header_only():
    empty = np.zeros(0, np.int64)
    tile = Tile(np.zeros(0, np.uint32), empty, empty, np.zeros(0, np.uint32), empty, np.zeros(0, np.int32), 0)
    raw = encode(tile, {"rows": []}, [], 0)
    (length,) = struct.unpack("<I", raw[:4])
    assert len(raw) == 4 + length and (4 + length) % 8 == 0
    assert json.loads(raw[4:]) == {"rows": [], "count": 0, "events_in_range": 0, "names": []}
