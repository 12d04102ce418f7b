"""queries/timeline.py's table-bound routes on a small window made by hand (issue 46: fast tests for a mutation
run): the tracks, a tile, a slice's details and raw args, a search, a range's summary, the counters, a
collective's peers on three ranks, the raw args' build job and the window's loading (events from their cache,
an index that cannot be written, a slow build). Every expected value is worked out by hand below; the tiles are
read back with struct/numpy by the layout of docs/http_api.md.

The window (origin 1000 ns, end 2000 ns), by start:
  row 0  py        python_function  [1090, 1140)  pid 1 tid 1            track 1 (the thread's Python frames)
  row 1  outer     cpu_op           [1100, 1200)  pid 1 tid 1            track 0, depth 0
  row 2  aten::mm  cpu_op           [1120, 1150)  pid 1 tid 1            track 0, depth 1
  row 3  aten::mm  cpu_op           [1160, 1180)  pid 1 tid 1            track 0, depth 1
  row 4  mm_kernel kernel           [1200, 1240)  device 0, pid 0 tid 7  track 2
Tracks: host threads first, by (pid, tid), a thread's Python frames after its operators, then the devices.
Rows (track, depth): (0, 0), (0, 1), (1, 0), (2, 0)."""
import json
import logging
import struct
import threading
from concurrent import futures
from types import SimpleNamespace

import numpy as np
import pytest

from _hand_store import HandStore, RunStore
from _synthetic import ev, table
from canning_tb.analysis import digest_pb2 as pb
from canning_tb.ingest.table import Kind
from canning_tb.queries import timeline
from canning_tb.queries.errors import BadParameter, NotFound
from canning_tb.timeline.counters import Series
from canning_tb.timeline.index import build_index

ORIGIN, END = 1000, 2000


def events():
    t = table([ev("outer", Kind.CPU_OP, 1100, 100), ev("aten::mm", Kind.CPU_OP, 1120, 30, external_id=5),
               ev("aten::mm", Kind.CPU_OP, 1160, 20), ev("py", Kind.PYTHON_FUNCTION, 1090, 50),
               ev("mm_kernel", Kind.KERNEL, 1200, 40, tid=7, external_id=5)])
    assert [t.name(r) for r in range(len(t))] == ["py", "outer", "aten::mm", "aten::mm", "mm_kernel"]
    t.meta.process_names = {1: "python3"}
    t.meta.thread_names = {"1:1": "MainThread"}
    return t


def loaded(t=None, origin=ORIGIN, end=END, rank=3, counters=(), memory=()):
    t = t if t is not None else events()
    return timeline.Loaded(t, build_index(t), origin, end, rank, [{"number": 7, "start_ns": 100, "dur_ns": 500}],
                           list(counters), list(memory), step_source="trace")


class Cache:
    """`get` answers the window's Loaded (by worker), counting the asks, and refuses any store but `store` (the
    route's own is passed on); `raw_args_state` answers `state`."""

    def __init__(self, windows, state="pending", store="S"):
        self.windows, self.asked, self.state, self.states, self.store = windows, [], state, [], store

    def get(self, store, run, worker, window):
        assert store is self.store, "the route's store is passed on"
        self.asked.append((run, worker, window))
        return self.windows[worker]

    def raw_args_state(self, prefix, rows, root=""):
        self.states.append((prefix, rows, root))
        return self.state


def decode(body):
    """The tile's header and items (docs/http_api.md: u32 header length, the JSON header padded to 8 bytes, then
    n f8 starts, n f8 durations, n i4 events, n i4 name indexes, n u4 counts, n u4 rows)."""
    length = struct.unpack_from("<I", body)[0]
    header = json.loads(body[4:4 + length])
    n, offset = header["count"], 4 + length
    items = {}
    for name, dtype in (("start", "<f8"), ("dur", "<f8"), ("event", "<i4"), ("name", "<i4"), ("count", "<u4"),
                        ("row", "<u4")):
        items[name] = np.frombuffer(body, dtype, n, offset).tolist()
        offset += n * np.dtype(dtype).itemsize
    assert offset == len(body)
    items["name"] = [header["names"][i] for i in items["name"]]
    return header, items


def tile(cache, tracks, start, end, width):
    return decode(timeline.tile_impl(cache, "S", "r", "w", "1", tracks, start, end, width))


def test_a_tile_of_every_row_and_of_the_tracks_asked():
    """[0, 1000) at 1000 px: 1 ns a pixel, every event an item of its own, starts relative to the origin (1000),
    in row order: (0, 0) outer; (0, 1) both aten::mm; (1, 0) py; (2, 0) the kernel."""
    cache = Cache({"w": loaded()})
    header, items = tile(cache, None, 0, 1000, 1000)
    assert cache.asked == [("r", "w", "1")]
    assert (header["start_ns"], header["end_ns"], header["width"]) == (0, 1000, 1000)
    assert header["rows"] == [[0, 0], [0, 1], [1, 0], [2, 0]]
    assert (header["count"], header["events_in_range"]) == (5, 5)
    assert items["start"] == [100, 120, 160, 90, 200] and items["dur"] == [100, 30, 20, 50, 40]
    assert items["event"] == [1, 2, 3, 0, 4] and items["row"] == [0, 1, 1, 2, 3] and items["count"] == [1] * 5
    assert items["name"] == ["outer", "aten::mm", "aten::mm", "py", "mm_kernel"]
    # tracks 2 and 0 asked: their rows in row order (0, 0), (0, 1), (2, 0); the items' rows index that list
    header, items = tile(cache, [2, 0], 0, 1000, 1000)
    assert header["rows"] == [[0, 0], [0, 1], [2, 0]] and items["row"] == [0, 1, 1, 2]
    assert items["event"] == [1, 2, 3, 4]
    header, items = tile(cache, [], 0, 1000, 1000)  # no track: no row
    assert (header["rows"], header["count"]) == ([], 0)
    with pytest.raises(BadParameter, match=r"^unknown track 3 \(the window has 3\)$"):
        tile(cache, [3], 0, 1000, 1000)


def test_a_tiles_range_is_relative_to_the_window_start():
    """[150, 190] relative is [1150, 1190]: outer [1100, 1200), the first aten::mm ending at 1150 (touching) and
    the second [1160, 1180); py ends at 1140, the kernel starts at 1200. 40 ns at 40 px: 1 ns a pixel."""
    header, items = tile(Cache({"w": loaded()}), None, 150, 190, 40)
    assert (header["start_ns"], header["end_ns"], header["width"], header["events_in_range"]) == (150, 190, 40, 3)
    assert items["event"] == [1, 2, 3] and items["start"] == [100, 120, 160]


def test_a_tiles_widths_at_their_bounds():
    """1 pixel and 20,000 pixels (tiles.MAX_WIDTH) are served; a range of 1 ns is one."""
    cache = Cache({"w": loaded()})
    header, _ = tile(cache, None, 0, 1000, 1)
    assert header["width"] == 1 and header["events_in_range"] == 5
    header, _ = tile(cache, None, 0, 1000, 20_000)
    assert header["width"] == 20_000 and header["count"] == 5
    header, items = tile(cache, None, 125, 126, 10)  # [1125, 1126]: outer, the first aten::mm, py
    assert (header["start_ns"], header["end_ns"], items["event"]) == (125, 126, [1, 2, 0])


def test_the_tracks_of_a_window():
    """Three tracks (module docstring): the thread's operators (2 rows, 3 events), its Python frames, the kernel's
    stream (named by its device: the file names no process 0); the memory devices once each, sorted; the
    counters listed with their peak."""
    memory = [("npu:1", "allocated", np.array([1]), np.array([5])), ("npu:0", "reserved", np.array([1]), np.array([6])),
              ("npu:1", "reserved", np.array([1]), np.array([7]))]
    counters = [Series("ai core", "freq", "MHz", "0", np.array([1100, 1200]), np.array([800.0, 1000.0]))]
    asked = []
    cache = SimpleNamespace(ready=lambda *a: asked.append(a) or loaded(memory=memory, counters=counters))
    body = timeline.tracks_impl(cache, "S", "r", "w", "1")
    assert asked == [("S", "r", "w", "1", 3.0)]  # waits 3 s by default
    assert body == {
        "run": "r", "worker": "w", "window": "1", "rank": 3, "start_ns": 1000, "duration_ns": 1000, "events": 5,
        "tracks": [
            {"id": 0, "name": "python3 / MainThread", "pid": 1, "tid": 1, "device": -1, "kind": "host",
             "rows": [0, 1], "events": 3},
            {"id": 1, "name": "python3 / MainThread / Python", "pid": 1, "tid": 1, "device": -1, "kind": "python",
             "rows": [2], "events": 1},
            {"id": 2, "name": "device 0 / stream 7", "pid": 0, "tid": 7, "device": 0, "kind": "device",
             "rows": [3], "events": 1}],
        "steps": [{"number": 7, "start_ns": 100, "dur_ns": 500}], "step_source": "trace",
        "memory_devices": ["npu:0", "npu:1"],
        "counters": [{"id": 0, "group": "ai core", "name": "freq", "unit": "MHz", "device": "0", "max": 1000.0}]}
    timeline.tracks_impl(cache, "S", "r", "w", "1", wait_s=0.5)
    assert asked[-1] == ("S", "r", "w", "1", 0.5)


def test_the_tracks_while_the_window_loads():
    """Not ready after the wait: the window named, `loading`, and the stage said."""
    asked = []
    cache = SimpleNamespace(ready=lambda *a: None,
                            progress=lambda *a: asked.append(a) or {"stage": "indexing", "elapsed_s": 1.5})
    assert timeline.tracks_impl(cache, "S", "r", "w", "1", wait_s=0) == {
        "run": "r", "worker": "w", "window": "1", "loading": True, "stage": "indexing", "elapsed_s": 1.5}
    assert asked == [("r", "w", "1")]


class Window:
    """The store of a slice: the events' prefix and the window's logdir root."""

    def __init__(self, prefix, root):
        self.prefix, self.root = prefix, root

    def events_prefix(self, run, worker, window):
        assert (run, worker, window) == ("r", "w", "1")
        return self.prefix

    def window(self, run, worker, window):
        assert (run, worker, window) == ("r", "w", "1")
        return SimpleNamespace(root=self.root)


def test_a_slices_details_and_raw_args(tmp_path):
    """outer (row 1): starts 100 ns after the origin, 100 ns long, self time 100 - 30 - 20 = 50 (both aten::mm
    below it); the raw args read from the store built from the file (the args it writes for outer)."""
    from canning_tb.timeline.raw_args import build_raw_args
    window = loaded()
    prefix = str(tmp_path / "w.1")
    trace = tmp_path / "w.1.pt.trace.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "name": "outer", "ts": 1.1, "dur": 0.1, "args": {"Sequence number": 9}},
        {"ph": "X", "name": "mm_kernel", "ts": 1.2, "dur": 0.04, "args": {"grid": [1, 2, 3]}}]}))
    build_raw_args(window.table, [str(trace)], prefix)
    store = Window(prefix, "/logdir")
    cache = Cache({"w": window}, state="ready", store=store)
    got = timeline.slice_impl(cache, store, "r", "w", "1", 1)
    assert cache.states == [(prefix, 5, "/logdir")] and cache.asked == [("r", "w", "1")]
    assert {k: got[k] for k in ("event", "name", "kind", "start_ns", "dur_ns", "track", "depth", "self_ns")} == {
        "event": 1, "name": "outer", "kind": "cpu_op", "start_ns": 100, "dur_ns": 100, "track": 0, "depth": 0,
        "self_ns": 50}
    assert (got["raw_args_state"], got["raw_args"]) == ("ready", {"Sequence number": 9})
    last = timeline.slice_impl(cache, store, "r", "w", "1", 4)  # the last event: the kernel, linked to aten::mm
    assert (last["name"], last["start_ns"], last["raw_args"]) == ("mm_kernel", 200, {"grid": [1, 2, 3]})
    assert [link["event"] for link in last["links"]] == [2]
    # pending (the store not built: reading it would fail): no args yet
    unbuilt = Window(str(tmp_path / "w.2"), "/logdir")
    first = timeline.slice_impl(Cache({"w": window}, store=unbuilt), unbuilt, "r", "w", "1", 0)
    assert (first["name"], first["raw_args_state"], first["raw_args"]) == ("py", "pending", None)
    for event in (-1, 5):
        with pytest.raises(NotFound, match=rf"^no event {event} in this window \(5 events\)$"):
            timeline.slice_impl(cache, store, "r", "w", "1", event)


def search(cache, text, at, tracks=None, **kw):
    return timeline.search_impl(cache, "S", "r", "w", "1", text, at, tracks, **kw)


def brief(event, name, start, dur, track, depth, kind="cpu_op"):
    return {"event": event, "name": name, "kind": kind, "start_ns": start, "dur_ns": dur, "track": track,
            "depth": depth}


MM1, MM2, KERNEL = brief(2, "aten::mm", 120, 30, 0, 1), brief(3, "aten::mm", 160, 20, 0, 1), \
    brief(4, "mm_kernel", 200, 40, 2, 0, "kernel")


def test_a_search():
    """"mm" (any case) is in aten::mm at 1120 and 1160 and mm_kernel at 1200; at 130 ns (1130 absolute) the next
    starts at 1160, the previous at 1120; the longest is the kernel (40 ns); on tracks 0 and 2."""
    cache = Cache({"w": loaded()})
    assert search(cache, "MM", 130) == {"count": 3, "next": MM2, "previous": MM1, "next_index": 1, "longest": KERNEL,
                                        "match_tracks": [0, 2], "query": "MM"}
    assert cache.asked == [("r", "w", "1")]
    # on track 0 only: the two aten::mm, the first the longest (30 ns); at 160 ns the next is none
    assert search(cache, "mm", 160, [0]) == {"count": 2, "next": None, "previous": MM1, "next_index": None,
                                             "longest": MM1, "match_tracks": [0], "query": "mm"}
    # exactly "mm": no name; exactly "aten::mm": two, at 0 ns both after
    assert search(cache, "mm", 0, exact=True) == {"count": 0, "next": None, "previous": None, "next_index": None,
                                                  "longest": None, "match_tracks": [], "query": "mm"}
    assert search(cache, "aten::mm", 0, exact=True)["count"] == 2
    with pytest.raises(BadParameter, match=r"^unknown track 5 \(the window has 3\)$"):
        search(cache, "mm", 0, [5])


def test_a_search_within_a_range():
    """[150, 165] relative is [1150, 1165]: the first aten::mm ends at 1150 (touching), the second starts at 1160;
    each hit [event, track, depth, start relative, dur]. A range of one instant (160) holds the second only."""
    cache = Cache({"w": loaded()})
    found = search(cache, "mm", 0, from_ns=150, to_ns=165)
    assert (found["in_range"], found["hits"]) == (2, [[2, 0, 1, 120, 30], [3, 0, 1, 160, 20]])
    found = search(cache, "mm", 0, from_ns=160, to_ns=160)
    assert (found["in_range"], found["hits"]) == (1, [[3, 0, 1, 160, 20]])
    assert "in_range" not in search(cache, "mm", 0)


def test_a_search_of_collectives():
    """With `collective`, the text is a kind: AllReduce finds the communication kernels; "nccl" is in their names
    but is no kind."""
    w0, _, _ = ranks()
    cache = Cache({"w": w0})
    found = search(cache, "AllReduce", 0, collective=True)
    # w0's device kernels: ncclDevKernel_AllReduce at 100 (rel.) and 300 (the latter nested in k: depth 1)
    assert (found["count"], found["next"]["event"], found["next"]["start_ns"]) == (2, 1, 100)
    assert search(cache, "nccl", 0)["count"] == 2 and search(cache, "nccl", 0, collective=True)["count"] == 0


def summary(cache, start, end, tracks=None, store=None):
    cache.store = store
    return timeline.summary_impl(cache, store, "r", "w", "1", start, end, tracks)


def path_store(tmp_path):
    d = pb.Digest()
    p = d.critical_path.add(start_ns=1100, dur_ns=100)  # [1100, 1200): outer's first 60 ns on the path
    p.segments.add(name="outer", ts_ns=1100, dur_ns=60)
    p.segments_total = 1
    return HandStore(tmp_path, {("r", "w", "1"): d})


def test_a_ranges_summary(tmp_path):
    """[100, 200] relative is [1100, 1200]: py clipped to [1100, 1140) 40 ns, outer 100, the two aten::mm 30 + 20
    = 50 (the kernel starts at the end: 0 ns in it, left out); outer's self time 100 - 50 = 50; shares of 100 ns;
    the critical path covers [1100, 1160) of the range: 0.6."""
    cache = Cache({"w": loaded()})
    got = summary(cache, 100, 200, store=path_store(tmp_path))
    assert cache.asked == [("r", "w", "1")]
    assert got == {"start_ns": 100, "end_ns": 200, "events": 4, "names": 3, "critical_path_share": 0.6,
                   "rows": [{"name": "outer", "total_ns": 100, "count": 1, "self_ns": 50, "share": 1.0},
                            {"name": "aten::mm", "total_ns": 50, "count": 2, "self_ns": 50, "share": 0.5},
                            {"name": "py", "total_ns": 40, "count": 1, "self_ns": 40, "share": 0.4}]}
    # track 1 (the Python frames) only; a window whose digest has no path: no share; one ns is a range
    got = summary(cache, 100, 200, [1], store=HandStore(tmp_path, {("r", "w", "1"): pb.Digest()}))
    assert got["rows"] == [{"name": "py", "total_ns": 40, "count": 1, "self_ns": 40, "share": 0.4}]
    assert got["critical_path_share"] is None
    assert summary(cache, 130, 131, [2], store=path_store(tmp_path))["events"] == 0
    with pytest.raises(BadParameter, match=r"^unknown track 3 \(the window has 3\)$"):
        summary(cache, 100, 200, [3], store=path_store(tmp_path))


def test_the_counters_of_a_range():
    """[150, 400] relative is [1150, 1400] at 10 px (25 ns a pixel): the memory's value in force at 1150 (10, set
    at 1100), then 30 at 1300 (column 6); 1500 is past the range. The NPU frequency: 800 in force at 1150, then
    1000 at 1200. Times relative to the origin."""
    memory = [("npu:0", "allocated", np.array([1100, 1300, 1500]), np.array([10, 30, 20]))]
    counters = [Series("ai core", "freq", "MHz", "0", np.array([1050, 1200]), np.array([800.0, 1000.0]))]
    cache = Cache({"w": loaded(memory=memory, counters=counters)})
    got = timeline.counters_impl(cache, "S", "r", "w", "1", 150, 400, 10)
    assert cache.asked == [("r", "w", "1")]
    assert got == {"start_ns": 150, "end_ns": 400,
                   "memory": [{"device": "npu:0", "measure": "allocated", "ts_ns": [150, 300], "bytes": [10, 30]}],
                   "npu": [{"id": 0, "ts_ns": [150, 200], "values": [800.0, 1000.0]}]}
    # [0, 1000] at 1 px: one column each: the highest memory (30, first time 1100), the frequency's low and high
    got = timeline.counters_impl(cache, "S", "r", "w", "1", 0, 1000, 1)
    assert got["memory"][0]["ts_ns"] == [100] and got["memory"][0]["bytes"] == [30]
    assert got["npu"] == [{"id": 0, "ts_ns": [50, 200], "values": [800.0, 1000.0]}]


AR = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"


def ranks():
    """Three ranks' windows at one position. w0 (origin 1000): a host op (track 0), then on its stream a kernel k
    [1250, 1400) holding the second all-reduce [1300, 1350) (depth 1), the first at [1100, 1130). w1 (origin
    5000): all-reduces at [5150, 5190) and [5250, 5270), an unnamed cpu op (its stream is track 1: host threads
    first). w2 (origin 0): one all-reduce."""
    t0 = table([ev("aten::mm", Kind.CPU_OP, 1050, 10), ev(AR, Kind.COMM_KERNEL, 1100, 30),
                ev("k", Kind.KERNEL, 1250, 150), ev(AR, Kind.COMM_KERNEL, 1300, 50)])
    t1 = table([ev(AR, Kind.COMM_KERNEL, 5150, 40), ev(AR, Kind.COMM_KERNEL, 5250, 20), ev("", Kind.CPU_OP, 5300, 5)])
    t2 = table([ev(AR, Kind.COMM_KERNEL, 120, 10)])
    return (loaded(t0, 1000, 2000, rank=0), loaded(t1, 5000, 6000, rank=1), loaded(t2, 0, 1000, rank=2))


def peers_store(tmp_path):
    return RunStore(tmp_path, "r", {"w0": (0, ["a"]), "w1": (1, ["x", "a"]), "w2": (2, ["a"])}, {})


def test_a_collectives_peers(tmp_path):
    """w1's second all-reduce (row 1, [5250, 5270)): its peers are each rank's second one; w2 has none. The last to
    arrive is w1 (5250 against w0's 1300): w0 waited 3950 ns. Starts relative to each one's window and to the
    chosen window's clock (5000): w0's 1300 is 300 and -3700."""
    w0, w1, w2 = ranks()
    store = RunStore(tmp_path, "r", {"w0": (0, ["a"]), "w1": (1, ["a"]), "w2": (2, ["a"])}, {})
    cache = Cache({"w0": w0, "w1": w1, "w2": w2}, store=store)
    got = timeline.peers_impl(cache, store, "r", "w1", "a", 1)
    assert got == {"collective": True, "name": AR, "peers": [
        {"worker": "w0", "window": "a", "rank": 0, "event": 3, "start_ns": 300, "clock_ns": -3700, "dur_ns": 50,
         "track": 1, "depth": 1, "wait_ns": 3950, "last": False},
        {"worker": "w1", "window": "a", "rank": 1, "event": 1, "start_ns": 250, "clock_ns": 250, "dur_ns": 20,
         "track": 1, "depth": 0, "wait_ns": 0, "last": True}]}
    assert cache.asked == [("r", "w1", "a"), ("r", "w0", "a"), ("r", "w1", "a"), ("r", "w2", "a")]
    # w0's first all-reduce (row 1, [1100, 1130)): every rank's first; w1's 5150 came last
    got = timeline.peers_impl(cache, store, "r", "w0", "a", 1)
    assert [(p["worker"], p["event"], p["wait_ns"], p["last"], p["clock_ns"]) for p in got["peers"]] == [
        ("w0", 1, 4050, False, 100), ("w1", 0, 0, True, 4150), ("w2", 0, 5030, False, -880)]


def test_the_peers_of_what_is_no_collective(tmp_path):
    """An operator that is no collective: no peers, its name (none: ""); events out of the window refused."""
    w0, w1, w2 = ranks()
    store = peers_store(tmp_path)
    cache = Cache({"w0": w0, "w1": w1, "w2": w2}, store=store)
    assert timeline.peers_impl(cache, store, "r", "w0", "a", 0) == {"collective": False, "name": "aten::mm",
                                                                    "peers": []}
    assert timeline.peers_impl(cache, store, "r", "w1", "a", 2) == {"collective": False, "name": "", "peers": []}
    for event in (-1, 3):
        with pytest.raises(NotFound, match=rf"^no event {event} in this window \(3 events\)$"):
            timeline.peers_impl(cache, store, "r", "w1", "a", event)


def test_the_peers_at_the_chosen_windows_position(tmp_path):
    """w1's window "a" is at position 1, where only w1 has one: the chosen rank alone, its own last."""
    _, w1, _ = ranks()
    store = peers_store(tmp_path)
    got = timeline.peers_impl(Cache({"w1": w1}, store=store), store, "r", "w1", "a", 0)
    assert got["peers"] == [{"worker": "w1", "window": "a", "rank": 1, "event": 0, "start_ns": 150, "clock_ns": 150,
                             "dur_ns": 40, "track": 1, "depth": 0, "wait_ns": 0, "last": True}]


def test_an_unnamed_collective(tmp_path):
    """A communication kernel with no name is a collective all the same: its name said as ""."""
    t = table([ev("", Kind.COMM_KERNEL, 100, 10)])
    store = RunStore(tmp_path, "r", {"w": (0, ["1"])}, {})
    got = timeline.peers_impl(Cache({"w": loaded(t, 0, 1000)}, store=store), store, "r", "w", "1", 0)
    assert (got["collective"], got["name"], [p["event"] for p in got["peers"]]) == (True, "", [0])


def test_the_raw_args_build(tmp_path, monkeypatch, caplog):
    """Not there: one build started in a process of its own (one worker, spawned: torch and grpc are not
    fork-safe) with the prefix and the logdir; "pending" until it ends; built: "ready" and the job forgotten
    (files gone: built again); a build that broke: "failed", said in the log, and not started again."""
    from canning_tb.timeline.raw_args import build_raw_args
    made, jobs = [], []

    class Pool:
        def __init__(self, **kw):
            made.append(kw)

        def submit(self, fn, *args):
            jobs.append((fn, args, futures.Future()))
            return jobs[-1][2]

    cache = timeline.IndexCache()
    monkeypatch.setattr(timeline.futures, "ProcessPoolExecutor", Pool)
    window = loaded()
    prefix = str(tmp_path / "w.1")
    assert cache.raw_args_state(prefix, 5, "/logdir") == "pending"
    assert cache.raw_args_state(prefix, 5, "/logdir") == "pending"  # the same job
    assert [kw["max_workers"] for kw in made] == [1] and made[0]["mp_context"].get_start_method() == "spawn"
    from canning_tb.timeline.raw_args import build_from_cache
    assert [(fn, args) for fn, args, _ in jobs] == [(build_from_cache, (prefix, "/logdir"))]
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "py", "ts": 1.09, "dur": 0.05, "args": {}}]}))
    build_raw_args(window.table, [str(trace)], prefix)
    jobs[0][2].set_result(5)
    assert cache.raw_args_state(prefix, 4, "/logdir") == "failed"  # done, but not for 4 rows
    assert cache._args_jobs == {}
    assert cache.raw_args_state(prefix, 5, "/logdir") == "ready"  # there: no job
    assert len(jobs) == 1
    other = str(tmp_path / "w.2")
    assert cache.raw_args_state(other, 5) == "pending" and len(made) == 1  # one pool for every window
    assert jobs[1][1] == (other, "")
    jobs[1][2].set_result(5)
    jobs.clear()
    assert cache.raw_args_state(other, 5) == "failed"  # done, but no files
    assert cache.raw_args_state(other, 5) == "pending" and len(jobs) == 1  # asked again: built again
    jobs[0][2].set_exception(OSError("no trace"))
    with caplog.at_level(logging.WARNING, logger="canning_tb.plugin"):
        assert cache.raw_args_state(other, 5) == "failed"
    assert [r.getMessage() for r in caplog.records] == [f"canning: the raw args of {other} could not be read: no trace"]
    assert cache.raw_args_state(other, 5) == "failed" and len(jobs) == 1  # broken: kept, not started again


class Ending(futures.Future):
    """A build that ends as it is asked about: `on_end` runs when its outcome is read (the files written, another
    ask having forgotten the job first)."""

    def __init__(self, on_end):
        super().__init__()
        self.on_end = on_end
        self.set_result(5)

    def exception(self, timeout=None):
        self.on_end()
        return super().exception(timeout)


def test_a_build_ending_while_asked(tmp_path, monkeypatch):
    """The files are not there when asked, the build ends and writes them before its outcome is read, and a second
    ask (another thread) forgets the job first: "ready" (the files there for its 5 rows), no error."""
    from canning_tb.timeline.raw_args import build_raw_args
    cache = timeline.IndexCache()
    prefix = str(tmp_path / "w.1")
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "py", "ts": 1.09, "dur": 0.05, "args": {}}]}))

    def on_end():
        build_raw_args(events(), [str(trace)], prefix)
        cache._args_jobs.pop(prefix)

    monkeypatch.setattr(timeline.futures, "ProcessPoolExecutor",
                        lambda **kw: SimpleNamespace(submit=lambda *a: Ending(on_end)))
    assert cache.raw_args_state(prefix, 5) == "ready" and cache._args_jobs == {}


class Events(HandStore):
    """The digests by window; each window's events (`tables`, read when asked: `read` counts them) and its prefix
    in the logdir (`<run>.<worker>.<window>`, or `prefix`). `gates`: {(stage, window): threading.Event} the
    stage waits on ("digest": the digest read, "table": the events read, "index": the wait for the index);
    `arrived` waits until a stage was entered n times; `threads` names the threads that read events."""

    def __init__(self, logdir, digests, tables, prefix=None, gates=None):
        super().__init__(logdir, digests)
        self.tables, self.read, self.prefix, self.gates = tables, [], prefix, gates or {}
        self.counts, self.changed, self.threads = {}, threading.Condition(), []

    def _stage(self, stage, window):
        with self.changed:
            self.counts[(stage, window)] = self.counts.get((stage, window), 0) + 1
            self.changed.notify_all()
        gate = self.gates.get((stage, window))
        if gate is not None:
            assert gate.wait(60)

    def arrived(self, stage, window, times=1):
        with self.changed:
            assert self.changed.wait_for(lambda: self.counts.get((stage, window), 0) >= times, 60)

    def events_prefix(self, run, worker, window):
        return self.prefix or f"{self.logdir}/{run}.{worker}.{window}"

    def digest(self, run, worker, window):
        self._stage("digest", window)
        return super().digest(run, worker, window)

    def table(self, run, worker, window):
        self.read.append(window)
        self.threads.append(threading.current_thread().name)
        self._stage("table", window)
        return self.tables[window]

    def wait_timeline_index(self, run, worker, window):
        self._stage("index", window)


def digest(start=1000, end=2000, rank=2):
    d = pb.Digest()
    d.window.rank, d.window.start_ns, d.window.end_ns = rank, start, end
    return d


def test_a_windows_events_read_from_their_cache(tmp_path):
    """Events saved at the window's prefix (`r.w.1`: its run, worker and window) are read from there (the store's
    table is not asked), lazily (a column read when first used); the index is written beside them."""
    from canning_tb.ingest.table import LazyColumns
    events().save(str(tmp_path / "r.w.1"))
    store = Events(tmp_path, {("r", "w", "1"): digest()}, {})
    got = timeline.IndexCache().get(store, "r", "w", "1")
    assert store.read == [] and len(got.table) == 5 and got.table.name(4) == "mm_kernel"
    assert isinstance(got.table.events, LazyColumns)
    assert got.index.depth.tolist() == [0, 0, 1, 1, 0] and (tmp_path / "r.w.1.timeline.npz").exists()
    (tmp_path / "r.w.2.npz").write_bytes(b"not an archive")  # a broken cache: the events read again
    (tmp_path / "r.w.2.json").write_text("{}")
    store = Events(tmp_path, {("r", "w", "2"): digest()}, {"2": events()})
    assert len(timeline.IndexCache().get(store, "r", "w", "2").table) == 5 and store.read == ["2"]


def test_an_index_that_cannot_be_written_is_built(tmp_path, caplog):
    """The prefix's folder is a file: the index cannot be saved there, is built all the same, and the log says
    so."""
    (tmp_path / "file").write_text("")
    prefix = str(tmp_path / "file" / "w.1")
    store = Events(tmp_path, {("r", "w", "1"): digest()}, {"1": events()}, prefix=prefix)
    with caplog.at_level(logging.WARNING, logger="canning_tb.plugin"):
        got = timeline.IndexCache().get(store, "r", "w", "1")
    assert got.index.depth.tolist() == [0, 0, 1, 1, 0] and got.index.track_of.tolist() == [1, 0, 0, 0, 2]
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and said[0].startswith(f"canning: cannot write timeline index {prefix}.timeline.npz: ")
    assert "File exists" in said[0]  # the error said after the path


def test_the_loading_stages_said(tmp_path, monkeypatch):
    """A window held at each stage in turn, on a clock that moves 10 s at each reading: the stage and, once the
    digest is read, its facts (rank 2, start 1000, 1000 ns long, step 4 at 1100 - 1000 = 100 ns, the steps'
    source), the time since the load began (its first reading: 10 s). Readings, in order: 10 the load begins;
    20, 30 the first ask (30 - 10 = 20 s); 40 the events' stage noted; 50, 60 the second ask (50 s); 70 the index's
    stage noted; 80, 90 the third ask (80 s); loaded: nothing said but "reading the trace", from now (110 - 100)."""
    clock = iter(range(10, 1000, 10))
    monkeypatch.setattr(timeline, "time", SimpleNamespace(monotonic=lambda: float(next(clock))))
    d = digest()
    d.steps.add(number=4, start_ns=1100, dur_ns=200)
    d.step_source = "trace"
    gates = {(stage, "1"): threading.Event() for stage in ("digest", "table", "index")}
    store = Events(tmp_path, {("r", "w", "1"): d}, {"1": events()}, gates=gates)
    cache = timeline.IndexCache()
    assert cache.ready(store, "r", "w", "1", 0) is None
    store.arrived("digest", "1")
    assert cache.progress("r", "w", "1") == {"stage": "reading the trace", "elapsed_s": 20.0}
    facts = {"rank": 2, "start_ns": 1000, "duration_ns": 1000, "steps": [{"number": 4, "start_ns": 100,
                                                                          "dur_ns": 200}], "step_source": "trace"}
    gates[("digest", "1")].set()
    store.arrived("table", "1")
    assert cache.progress("r", "w", "1") == dict(facts, stage="loading the events", elapsed_s=50.0)
    gates[("table", "1")].set()
    store.arrived("index", "1")
    assert cache.progress("r", "w", "1") == dict(facts, stage="indexing", elapsed_s=80.0)
    gates[("index", "1")].set()
    assert cache.ready(store, "r", "w", "1", 60).origin == 1000
    assert cache.progress("r", "w", "1") == {"stage": "reading the trace", "elapsed_s": 10.0}
    assert cache._progress == {}


def test_a_window_asked_twice_while_it_loads(tmp_path):
    """Asked again while its events are read: the same job (not a second one); asked at once by another route
    (cache.get) as well: the events read once, both answers the same window, neither fails, nothing left in the
    loading stages."""
    gates = {("table", "1"): threading.Event()}
    store = Events(tmp_path, {("r", "w", "1"): digest()}, {"1": events()}, gates=gates)
    cache = timeline.IndexCache()
    assert cache.ready(store, "r", "w", "1", 0) is None
    job = cache._jobs[("r", "w", "1")]
    store.arrived("table", "1")
    assert cache.ready(store, "r", "w", "1", 0) is None and cache._jobs == {("r", "w", "1"): job}
    other = {}
    thread = threading.Thread(target=lambda: other.update(got=cache.get(store, "r", "w", "1")))
    thread.start()
    store.arrived("digest", "1", 2)  # the second ask is under way (its stage noted before its digest read)
    gates[("table", "1")].set()
    got = cache.ready(store, "r", "w", "1", 60)
    thread.join(60)
    assert other["got"] is got and store.read == ["1"] and cache._jobs == {} and cache._progress == {}


def test_two_windows_load_at_once_a_third_waits(tmp_path):
    """Two loading threads (named canning-timeline): two windows held in their events' read are both under way
    (one is not waiting for the other's build), a third is not started until one ends."""
    gates = {("table", "1"): threading.Event(), ("table", "2"): threading.Event()}
    store = Events(tmp_path, {("r", "w", w): digest() for w in "123"}, {w: events() for w in "123"}, gates=gates)
    cache = timeline.IndexCache()
    assert cache.ready(store, "r", "w", "1", 0) is None and cache.ready(store, "r", "w", "2", 0) is None
    store.arrived("table", "1")
    store.arrived("table", "2")
    assert cache.ready(store, "r", "w", "3", 0.2) is None and store.counts.get(("digest", "3")) is None
    for gate in gates.values():
        gate.set()
    assert [cache.ready(store, "r", "w", w, 60).origin for w in "123"] == [1000] * 3
    assert sorted(store.read) == ["1", "2", "3"]
    assert all(name.startswith("canning-timeline_") for name in store.threads), store.threads


def test_the_last_16_windows_kept(tmp_path):
    """16 windows are kept in memory; a 17th drops the least recently used (read again when asked)."""
    tables = {str(i): table([ev("a", Kind.CPU_OP, 1000 + i, 5)]) for i in range(17)}
    store = Events(tmp_path, {("r", "w", str(i)): digest() for i in range(17)}, tables)
    cache = timeline.IndexCache()
    for i in range(16):
        cache.get(store, "r", "w", str(i))
    cache.get(store, "r", "w", "0")  # 0 used again: 1 is now the oldest
    assert len(store.read) == 16
    cache.get(store, "r", "w", "16")
    cache.get(store, "r", "w", "0")
    cache.get(store, "r", "w", "2")
    assert len(store.read) == 17
    cache.get(store, "r", "w", "1")
    assert store.read[-1] == "1" and len(store.read) == 18
