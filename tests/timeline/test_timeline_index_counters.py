"""The timeline's index (tracks, depths by the stack rule, rows, its cache file) and its counter lanes
(memory per device, the NPU's sampled counters, each downsampled to a pixel width), on events and samples
placed here by hand (ns): every expected value is worked out in the docstring by the rules the modules'
docs state (issue 46: mutation testing of timeline/)."""
import numpy as np
import pytest

from _synthetic import ev, table

from canning_tb.ingest.table import NONE, Kind
from canning_tb.timeline import index as timeline_index
from canning_tb.timeline.counters import (Series, memory_counters, memory_series, npu_counters, npu_series,
                                          series_info)
from canning_tb.timeline.index import _nested_depths, build_index, cached_index, stack_depths


def _depths(t, idx):
    return {(t.name(r), int(t.events["ts"][r])): int(idx.depth[r]) for r in range(len(t))}


def test_tracks_are_host_threads_first_then_devices_each_threads_python_apart():
    """(is device, pid, tid, python) in order: host (2, 9), (5, 1), (5, 1) python, (5, 3); devices (0, 7) of
    device 0, (1, 7) of device 1."""
    t = table([ev("op", Kind.CPU_OP, 0, 10, pid=5, tid=1), ev("f", Kind.PYTHON_FUNCTION, 0, 10, pid=5, tid=1),
               ev("op3", Kind.CPU_OP, 0, 10, pid=5, tid=3), ev("other", Kind.CPU_OP, 0, 10, pid=2, tid=9),
               ev("k0", Kind.KERNEL, 0, 10, pid=0, tid=7, device=0), ev("k1", Kind.KERNEL, 0, 10, pid=1, tid=7, device=1)])
    idx = build_index(t)
    assert idx.track_pid.tolist() == [2, 5, 5, 5, 0, 1]
    assert idx.track_tid.tolist() == [9, 1, 1, 3, 7, 7]
    assert idx.track_device.tolist() == [NONE, NONE, NONE, NONE, 0, 1]
    assert idx.track_python.tolist() == [False, False, True, False, False, False] and idx.track_python.dtype == bool
    assert idx.depth.tolist() == [0] * 6  # each alone on its track, all from 0 to 10 ns
    assert {t.name(r): int(idx.track_of[r]) for r in range(len(t))} == {
        "other": 0, "op": 1, "f": 2, "op3": 3, "k0": 4, "k1": 5}
    assert idx.rows_of(2).tolist() == [2] and idx.rows_of(9).tolist() == []


NESTED = [("a", 0, 100), ("b", 10, 40), ("z", 10, 0), ("c", 20, 10), ("d", 50, 10), ("e", 60, 0), ("y", 60, 0),
          ("f", 100, 10)]
# the stack rule by hand, visiting by start then longest first: a 0; b 1 (a open); z 2 (zero-length, inside b);
# c 2 (z ended at 10); d 1 (c and b ended by 50); e 1, y 1 (d ended at 60, zero-length each); f 0 (a ended)
NESTED_DEPTHS = {("a", 0): 0, ("b", 10): 1, ("z", 10): 2, ("c", 20): 2, ("d", 50): 1, ("e", 60): 1, ("y", 60): 1,
                 ("f", 100): 0}


def test_one_process_with_threads_and_a_device():
    """pid 5 holds a host thread and a device stream: two tracks, host first."""
    t = table([ev("op", Kind.CPU_OP, 0, 10, pid=5, tid=1), ev("k", Kind.KERNEL, 0, 10, pid=5, tid=7, device=0)])
    idx = build_index(t)
    assert (idx.track_pid.tolist(), idx.track_tid.tolist(), idx.track_device.tolist()) == ([5, 5], [1, 7], [NONE, 0])


def test_the_vectorised_depths_of_properly_nested_tracks_are_the_stack_rules():
    """NESTED on three tracks, shifted by 1000, 5000 and 1000 ns (so the times do not start at 0): on each the
    stack rule's depths, computed by the vectorised path alone (no fallback to the loop)."""
    rows = [(n, ts + shift, dur, track) for track, shift in ((0, 1000), (1, 5000), (2, 1000)) for n, ts, dur in NESTED]
    order_in = sorted(range(len(rows)), key=lambda i: (rows[i][3], rows[i][1], -rows[i][2], i))
    ts = np.array([r[1] for r in rows], np.int64)
    end = ts + np.array([r[2] for r in rows], np.int64)
    track = np.array([r[3] for r in rows], np.int32)
    depth = _nested_depths(ts, end, track, np.array(order_in))
    expected = [NESTED_DEPTHS[(n, ts - shift)] for n, ts, _, t in rows for shift in [(1000, 5000, 1000)[t]]]
    assert depth.tolist() == expected


def test_depths_by_the_stack_rule_with_zero_length_events():
    t = table([ev(n, Kind.CPU_OP, ts, dur) for n, ts, dur in NESTED])
    assert _depths(t, build_index(t)) == NESTED_DEPTHS


def test_a_partial_overlap_goes_above_every_open_event():
    """p [0, 100), q [50, 150) (partial), r [120, 130): r starts with q open (p ended): the rule puts it
    above every event still on the stack, at 2, so that q and r never share a row; s [200, 210): 0."""
    t = table([ev("p", Kind.CPU_OP, 0, 100), ev("q", Kind.CPU_OP, 50, 100), ev("r", Kind.CPU_OP, 120, 10),
               ev("s", Kind.CPU_OP, 200, 10), ev("k", Kind.CPU_OP, 0, 500, tid=2), ev("m", Kind.CPU_OP, 10, 5, tid=2)])
    assert _depths(t, build_index(t)) == {("p", 0): 0, ("q", 50): 1, ("r", 120): 2, ("s", 200): 0, ("k", 0): 0,
                                          ("m", 10): 1}


def test_a_partial_overlap_on_a_later_track_is_found_too():
    """The same partial overlap on thread 2 (track 1), thread 1 nesting properly: r at 2 there as well."""
    t = table([ev("a", Kind.CPU_OP, 0, 500), ev("b", Kind.CPU_OP, 10, 5),
               ev("p", Kind.CPU_OP, 0, 100, tid=2), ev("q", Kind.CPU_OP, 50, 100, tid=2),
               ev("r", Kind.CPU_OP, 120, 10, tid=2)])
    assert _depths(t, build_index(t)) == {("a", 0): 0, ("b", 10): 1, ("p", 0): 0, ("q", 50): 1, ("r", 120): 2}


def test_times_too_far_apart_for_one_key_take_the_loop_to_the_same_depths():
    """The same events, then one 2**61 ns later on a second thread: (2 tracks) x span >= 2**62, so every
    track goes through the stack loop; the depths are the rule's as above."""
    far = 2**61
    events = [ev(n, Kind.CPU_OP, ts, dur) for n, ts, dur in NESTED] + [ev("late", Kind.CPU_OP, far, 5, tid=2)]
    t = table(events)
    assert _depths(t, build_index(t)) == {**NESTED_DEPTHS, ("late", far): 0}
    ts, end = t.events["ts"], t.events["ts"] + t.events["dur"]
    one_track = stack_depths(ts[:-1], end[:-1], np.zeros(len(ts) - 1, np.int32))
    assert {(t.name(r), int(ts[r])): int(one_track[r]) for r in range(len(ts) - 1)} == NESTED_DEPTHS
    # three tracks over 2**62 - 10 ns: (tracks) x span past int64 keys: the loop, by the rule
    edge = 2**62 - 10
    wide = table([ev(f"a{tid}", Kind.CPU_OP, 0, edge, tid=tid) for tid in (1, 2, 3)] +
                 [ev(f"b{tid}", Kind.CPU_OP, 5, 5, tid=tid) for tid in (1, 2, 3)] +
                 [ev(f"c{tid}", Kind.CPU_OP, edge - 5, 5, tid=tid) for tid in (1, 2, 3)])
    assert {t_name: d for (t_name, _), d in _depths(wide, build_index(wide)).items()} == {
        "a1": 0, "a2": 0, "a3": 0, "b1": 1, "b2": 1, "b3": 1, "c1": 1, "c2": 1, "c3": 1}
    # 2**55 ns apart (past float64's exact integers, within int64 keys): p holds c, d follows p
    far_t = 2**55
    apart = table([ev("x", Kind.CPU_OP, 0, 1), ev("p", Kind.CPU_OP, far_t, 10, tid=2),
                   ev("c", Kind.CPU_OP, far_t + 3, 1, tid=2), ev("d", Kind.CPU_OP, far_t + 10, 2, tid=2)])
    assert {name: d for (name, _), d in _depths(apart, build_index(apart)).items()} == {"x": 0, "p": 0, "c": 1, "d": 0}


def test_rows_hold_their_events_by_start():
    """Thread 1: a [0, 100) at 0, b [10, 50) and d [60, 70) at 1; thread 2: x [5, 10), w [20, 30) at 0. Rows
    (0, 0) a; (0, 1) b d; (1, 0) x w; each row's starts and ends in order."""
    t = table([ev("a", Kind.CPU_OP, 0, 100), ev("b", Kind.CPU_OP, 10, 40), ev("d", Kind.CPU_OP, 60, 10),
               ev("x", Kind.CPU_OP, 5, 5, tid=2), ev("w", Kind.CPU_OP, 20, 10, tid=2)])
    idx = build_index(t)
    rows = [(int(idx.row_track[r]), int(idx.row_depth[r]), [t.name(int(e)) for e in idx.order[idx.row_slice(r)]],
             idx.sorted_ts[idx.row_slice(r)].tolist(), idx.sorted_end[idx.row_slice(r)].tolist())
            for r in range(len(idx.row_track))]
    assert rows == [(0, 0, ["a"], [0], [100]), (0, 1, ["b", "d"], [10, 60], [50, 70]),
                    (1, 0, ["x", "w"], [5, 20], [10, 30])]
    assert idx.row_offsets.tolist() == [0, 1, 3, 5]


def test_an_empty_window_has_an_empty_index():
    idx = build_index(table([]))
    assert len(idx.track_pid) == 0 and len(idx.track_tid) == 0 and len(idx.row_track) == 0
    assert idx.row_offsets.tolist() == [0]


def test_the_index_is_cached_read_back_and_rebuilt_when_stale(tmp_path, monkeypatch):
    t = table([ev(n, Kind.CPU_OP, ts, dur) for n, ts, dur in NESTED])
    path = str(tmp_path / "w.timeline.npz")
    built = cached_index(t, path)
    assert _depths(t, built) == NESTED_DEPTHS

    def no_build(table):
        raise AssertionError("rebuilt")
    with monkeypatch.context() as m:
        m.setattr(timeline_index, "build_index", no_build)
        again = cached_index(t, path)  # read back: not built
    for name in built.__dataclass_fields__:
        assert np.array_equal(getattr(again, name), getattr(built, name)), name
    longer = table([ev(n, Kind.CPU_OP, ts, dur) for n, ts, dur in NESTED + [("g", 200, 5)]])
    assert len(cached_index(longer, path).track_of) == len(longer)  # another table's length: rebuilt
    with open(path, "rb") as f, np.load(f) as z:
        assert len(z["track_of"]) == len(longer)  # and saved in its place
    fields = {name: getattr(built, name) for name in built.__dataclass_fields__}
    with open(path, "wb") as f:
        np.savez(f, version=np.array("other code"), **fields)
    with pytest.raises(ValueError, match="built by other code"):
        timeline_index.TimelineIndex.load(path)
    assert _depths(t, cached_index(t, path)) == NESTED_DEPTHS
    with open(path, "rb") as f, np.load(f) as z:
        assert str(z["version"]) == timeline_index.index_version()


# -- counters -------------------------------------------------------------------------------------------
def test_memory_lanes_per_device_and_measure_without_an_unreported_reserved():
    """cuda:0: allocated 50 at 10, 100 at 30 (unknown at 20); reserved 300 at 20, 200 at 30. CPU: allocated 10,
    20; reserved 0 beside allocated bytes: not reported, no lane. npu:0: allocated and reserved 0 (no
    allocated bytes: a curve at 0, kept)."""
    memory = [dict(ts=30, device="cuda:0", bytes=0, allocated=100, reserved=200),
              dict(ts=10, device="cuda:0", bytes=0, allocated=50, reserved=NONE),
              dict(ts=20, device="cuda:0", bytes=0, allocated=NONE, reserved=300),
              dict(ts=5, device="CPU", bytes=0, allocated=10, reserved=0),
              dict(ts=15, device="CPU", bytes=0, allocated=20, reserved=0),
              dict(ts=1, device="npu:0", bytes=0, allocated=0, reserved=0)]
    t = table([], memory=memory)
    got = {(d, m): (ts.tolist(), v.tolist()) for d, m, ts, v in memory_series(t)}
    assert got == {("cuda:0", "allocated"): ([10, 30], [50, 100]), ("cuda:0", "reserved"): ([20, 30], [300, 200]),
                   ("CPU", "allocated"): ([5, 15], [10, 20]), ("npu:0", "allocated"): ([1], [0]),
                   ("npu:0", "reserved"): ([1], [0])}


def test_memory_downsampled_to_each_columns_first_time_and_highest_value():
    """Samples at 0, 10, 25, 30, 55, 100, 120 of 5, 1, 9, 3, 2, 7, 8; range [10, 100] at 3 px (30 ns a
    column: (ts - 10) * 3 // 90): 10, 25, 30 -> column 0, 55 -> 1, 100 -> 3; 120 is past the range. The
    value in force at 10 is 5 (the sample at 0). Times relative to origin 4."""
    series = [("cuda:0", "allocated", np.array([0, 10, 25, 30, 55, 100, 120]), np.array([5, 1, 9, 3, 2, 7, 8]))]
    assert memory_counters(series, 10, 100, 3, 4) == [
        {"device": "cuda:0", "measure": "allocated", "ts_ns": [6, 6, 51, 96], "bytes": [5, 9, 2, 7]}]
    # nothing before the range, a range of 0 ns and no width: one column, the first time and the highest
    assert memory_counters(series, 0, 0, 0, 0)[0] == {"device": "cuda:0", "measure": "allocated", "ts_ns": [0],
                                                      "bytes": [5]}
    assert memory_counters(series, 200, 300, 3, 0)[0]["ts_ns"] == [200]  # only the value in force: 8
    assert memory_counters(series, 200, 300, 3, 0)[0]["bytes"] == [8]


def _npu_table():
    t = table([])
    rows = [("npu:0", "AI Core Freq", "AI Core Freq", "MHz", 30, 1800.0),
            ("npu:0", "AI Core Freq", "AI Core Freq", "MHz", 10, 1600.0),
            ("npu:0", "Acc PMU", "read_bandwidth acc_id 10", "bytes/s", 5, 7.0),
            ("npu:0", "Acc PMU", "read_bandwidth acc_id 2", "bytes/s", 5, 3.0),
            ("npu:10", "HBM", "HBM 0/Read", "bytes/s", 1, 1.0),
            ("npu:2", "HBM", "HBM 0/Read", "bytes/s", 2, 2.0)]
    t.side["npu_counters"] = [dict(device=d, group=g, counter=c, unit=u, ts_ns=ts, value=v)
                              for d, g, c, u, ts, v in rows]
    return t


def test_npu_series_in_natural_order_each_by_time():
    """By device, group, counter, unit with numbers read as numbers (npu:2 before npu:10, acc_id 2 before 10);
    the frequency's samples by time (10, 30)."""
    got = [(s.device, s.group, s.name, s.unit, s.ts.tolist(), s.values.tolist()) for s in npu_series(_npu_table())]
    assert got == [("npu:0", "AI Core Freq", "AI Core Freq", "MHz", [10, 30], [1600.0, 1800.0]),
                   ("npu:0", "Acc PMU", "read_bandwidth acc_id 2", "bytes/s", [5], [3.0]),
                   ("npu:0", "Acc PMU", "read_bandwidth acc_id 10", "bytes/s", [5], [7.0]),
                   ("npu:2", "HBM", "HBM 0/Read", "bytes/s", [2], [2.0]),
                   ("npu:10", "HBM", "HBM 0/Read", "bytes/s", [1], [1.0])]
    assert series_info(npu_series(_npu_table()))[0] == {"id": 0, "group": "AI Core Freq", "name": "AI Core Freq",
                                                        "unit": "MHz", "device": "npu:0", "max": 1800.0}
    assert npu_series(table([])) == []
    empty = Series("g", "n", "u", "npu:0", np.zeros(0, np.int64), np.zeros(0))
    assert series_info([empty]) == [{"id": 0, "group": "g", "name": "n", "unit": "u", "device": "npu:0", "max": 0.0}]


def test_npu_counters_keep_each_columns_lowest_and_highest_in_time_order():
    """Samples at 0, 10, 20, 30, 40, 70, 95, 200 of 1, 5, 2, 8, 3, 4, 6, 9; range [10, 100] at 3 px
    ((ts - 10) * 3 // 90): 10, 20, 30 -> column 0 (lowest 2 at 20, highest 8 at 30), 40 -> 1 (3, both),
    70, 95 -> 2 (4 at 70, 6 at 95). The value in force at 10 is 1 (the sample at 0). Origin 10."""
    one = Series("g", "n", "u", "npu:0", np.array([0, 10, 20, 30, 40, 70, 95, 200]),
                 np.array([1.0, 5.0, 2.0, 8.0, 3.0, 4.0, 6.0, 9.0]))
    other = Series("g", "m", "u", "npu:0", np.array([500]), np.array([2.0]))
    assert npu_counters([one, other], 10, 100, 3, 10) == [
        {"id": 0, "ts_ns": [0, 10, 20, 30, 60, 85], "values": [1.0, 2.0, 8.0, 3.0, 4.0, 6.0]},
        {"id": 1, "ts_ns": [], "values": []}]
    # a highest sample before the lowest one in its column stays in time order: 30 (8) then 40 (3) at 1 px
    got = npu_counters([one], 25, 45, 1, 0)[0]
    assert (got["ts_ns"], got["values"]) == ([25, 30, 40], [2.0, 8.0, 3.0])
    # no width and a range of 0 ns: one column
    got = npu_counters([one], 40, 40, 0, 0)[0]
    assert (got["ts_ns"], got["values"]) == ([40, 40], [8.0, 3.0])


def test_memory_columns_at_one_pixel_one_ns_and_far_from_zero():
    """[0, 100] at 1 px: 10 and 60 share the one column (highest 7). [10, 11] at 1 px: 1 ns a column, 10 in
    column 0, 11 in column 1. [1000, 1100] at 2 px (50 ns a column): 1000 -> 0; 1060, 1080 -> 1 (first 1060,
    highest 9)."""
    def lane(ts, values, t0, t1, width):
        got = memory_counters([("d", "allocated", np.array(ts), np.array(values))], t0, t1, width, 0)[0]
        return got["ts_ns"], got["bytes"]
    assert lane([10, 60], [7, 3], 0, 100, 1) == ([10], [7])
    assert lane([10, 11], [7, 3], 10, 11, 1) == ([10, 11], [7, 3])
    assert lane([1000, 1060, 1080], [1, 4, 9], 1000, 1100, 2) == ([1000, 1060], [1, 9])


def test_the_npu_lanes_columns_at_one_pixel_one_ns_and_a_column_of_three():
    """As the memory lanes: [0, 100] at 1 px is one column; [10, 11] at 1 px two. Range [0, 90] at 3 px
    (30 ns a column): 0 -> column 0; 40 -> 1; 70 (4.0), 80 (9.5), 85 (6.0) -> 2: its lowest 70 and highest 80."""
    def lane(ts, values, t0, t1, width):
        got = npu_counters([Series("g", "n", "u", "d", np.array(ts), np.array(values, float))], t0, t1, width, 0)[0]
        return got["ts_ns"], got["values"]
    assert lane([10, 60, 70], [7, 3, 5], 0, 100, 1) == ([10, 60], [7.0, 3.0])
    assert lane([10, 11], [7, 3], 10, 11, 1) == ([10, 11], [7.0, 3.0])
    assert lane([10, 10, 11], [5, 7, 3], 10, 11, 1) == ([10, 10, 11], [5.0, 7.0, 3.0])  # 10 ns: two samples, both kept
    assert lane([0, 40, 70, 80, 85], [1, 2, 4, 9.5, 6], 0, 90, 3) == ([0, 40, 70, 80], [1.0, 2.0, 4.0, 9.5])


def test_memory_records_at_one_time_keep_their_order_and_a_device_without_a_name_or_of_one_byte():
    """40 records of cuda:0 at 5 ns, allocated 1 .. 40 in that order: at 10 ns the value in force is the last,
    40. A device with no name is ""; one byte allocated beside a reserved of 0 is still an allocator that
    does not report it (no reserved lane)."""
    memory = [dict(ts=5, device="cuda:0", bytes=0, allocated=i, reserved=NONE) for i in range(1, 41)]
    memory += [dict(ts=6, device="xpu:0", bytes=0, allocated=1, reserved=0),
               dict(ts=7, device=None, bytes=0, allocated=3, reserved=NONE)]
    series = memory_series(table([], memory=memory))
    assert [(d, m) for d, m, _, _ in series] == [("", "allocated"), ("cuda:0", "allocated"), ("xpu:0", "allocated")]
    assert memory_counters(series[1:2], 10, 20, 4, 0)[0]["bytes"] == [40]
