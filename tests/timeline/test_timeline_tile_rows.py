"""The tile over several rows, the pixel width at its limits, the range summary's parents and edges, and
the pairing of the args store's keys: events placed here by hand (ns), each expected value worked out in
the docstring (issue 46: the survivors of mutmut over timeline/ read as missing tests)."""
import numpy as np

from _synthetic import ev, table

from canning_tb.ingest.table import Kind
from canning_tb.timeline.index import build_index
from canning_tb.timeline.query import range_summary
from canning_tb.timeline.raw_args import match_rows
from canning_tb.timeline.tiles import make_tile


def _items(t, tile):
    return list(zip(tile.row.tolist(), tile.start.tolist(), tile.end.tolist(), tile.count.tolist(),
                    [t.strings[int(n)] for n in tile.name]))


def _one_row(events, t0, t1, width):
    t = table([ev(name, Kind.CPU_OP, ts, dur) for name, ts, dur in events])
    return t, make_tile(build_index(t), t.events["name"], [0], t0, t1, width)


def test_a_tile_over_rows_some_empty_names_each_items_row_by_its_position():
    """Rows (track, depth): thread 1 depth 0 (a [0, 500)), depth 1 (b [100, 200)), thread 2 depth 0 (nothing in
    [150, 1000]: c [0, 50)), thread 3 depth 0 (d [700, 800)). Asked rows [2, 3, 0, 1] over [150, 1000] at
    10 px: positions 0 (row 2, empty), 1 (d), 2 (a), 3 (b); a, b and d are each 85 ns or wider (a pixel):
    items of their own."""
    t = table([ev("a", Kind.CPU_OP, 0, 500), ev("b", Kind.CPU_OP, 100, 100), ev("c", Kind.CPU_OP, 0, 50, tid=2),
               ev("d", Kind.CPU_OP, 700, 100, tid=3)])
    index = build_index(t)
    assert list(zip(index.row_track.tolist(), index.row_depth.tolist())) == [(0, 0), (0, 1), (1, 0), (2, 0)]
    tile = make_tile(index, t.events["name"], [2, 3, 0, 1], 150, 1000, 10)
    assert _items(t, tile) == [(1, 700, 800, 1, "d"), (2, 0, 500, 1, "a"), (3, 100, 200, 1, "b")]
    assert tile.events_in_range == 3
    assert [t.name(int(e)) for e in tile.event] == ["d", "a", "b"]
    assert (tile.row.dtype, tile.start.dtype, tile.end.dtype, tile.count.dtype, tile.event.dtype, tile.name.dtype) == (
        np.uint32, np.int64, np.int64, np.uint32, np.int64, np.int32)  # as Tile declares them


def test_a_tile_with_nothing_in_range_is_empty_in_every_column():
    t = table([ev("a", Kind.CPU_OP, 0, 10), ev("b", Kind.CPU_OP, 0, 10, tid=2)])
    tile = make_tile(build_index(t), t.events["name"], [0, 1], 100, 200, 10)
    columns = (tile.row, tile.start, tile.end, tile.count, tile.event, tile.name)
    assert [len(c) for c in columns] == [0] * 6 and tile.events_in_range == 0
    assert tuple(c.dtype for c in columns) == (np.uint32, np.int64, np.int64, np.uint32, np.int64, np.int32)


def test_at_one_ns_per_pixel_every_event_is_an_item():
    """[0, 10] at 10 px: 1 ns per pixel, so a 1 ns event is a pixel wide: x [0, 1) and y [1, 2) stay apart."""
    t, tile = _one_row([("x", 0, 1), ("y", 1, 1)], 0, 10, 10)
    assert _items(t, tile) == [(0, 0, 1, 1, "x"), (0, 1, 2, 1, "y")]
    # finer than 1 ns per pixel is still 1 ns per pixel: 10 ns at 40 px
    t, tile = _one_row([("x", 0, 1), ("y", 1, 1)], 0, 10, 40)
    assert tile.count.tolist() == [1, 1]


def test_one_pixel_holds_the_whole_range():
    """[0, 100] at 1 px: 100 ns per pixel; x (60 ns) and y (30 ns) are narrower and share column 0: one item."""
    t, tile = _one_row([("x", 0, 60), ("y", 70, 30)], 0, 100, 1)
    assert _items(t, tile) == [(0, 0, 100, 2, "x")]
    t, tile = _one_row([("x", 0, 60), ("y", 70, 30)], 0, 100, 0)  # no width: one pixel too
    assert _items(t, tile) == [(0, 0, 100, 2, "x")]


def test_a_wide_first_event_does_not_split_the_narrow_ones_after_it():
    """[0, 1000] at 10 px: w [0, 100) is a pixel wide, b [110, 130) and c [150, 170) narrow in column 1: merged."""
    t, tile = _one_row([("w", 0, 100), ("b", 110, 20), ("c", 150, 20)], 0, 1000, 10)
    assert _items(t, tile) == [(0, 0, 100, 1, "w"), (0, 110, 170, 2, "b")]


def test_columns_from_a_start_that_is_not_a_multiple_of_the_pixel():
    """[1030, 2030] at 10 px: b at 1100 is 70 ns in (column 0), c at 1140 is 110 ns in (column 1): apart.
    (From 0 they would be 1100 and 1140: column 11 both.)"""
    t, tile = _one_row([("b", 1100, 20), ("c", 1140, 20)], 1030, 2030, 10)
    assert _items(t, tile) == [(0, 1100, 1120, 1, "b"), (0, 1140, 1160, 1, "c")]


def test_a_parent_is_found_when_it_starts_with_its_child_or_ends_with_it():
    """p [200, 500) holds c1 [200, 300) (same start) and c2 [400, 500) (same end); q [600, 700) and r [650, 800)
    overlap partly (r is not q's child: it outlasts it). Range [0, 1000]: p self 300 - 100 - 100 = 100;
    q self 100 (r is not subtracted); r 150."""
    t = table([ev("p", Kind.CPU_OP, 200, 300), ev("c1", Kind.CPU_OP, 200, 100), ev("c2", Kind.CPU_OP, 400, 100),
               ev("q", Kind.CPU_OP, 600, 100), ev("r", Kind.CPU_OP, 650, 150)])
    index = build_index(t)
    got = {r["name"]: (r["total_ns"], r["self_ns"]) for r in range_summary(t, 0, 1000, None, index.track_of,
                                                                             index=index)["rows"]}
    assert got == {"p": (300, 100), "c1": (100, 100), "c2": (100, 100), "q": (100, 100), "r": (150, 150)}


def test_the_whole_summary_of_a_range_with_a_zero_length_event_at_its_end_and_a_nameless_one():
    """[100, 200]: a [100, 150) 50 ns; z zero-length at 200 (its end: inside); a nameless event [120, 170)
    on thread 2, 50 ns, named ""; by total then by name id: a (id 0), the nameless one, z."""
    t = table([ev("a", Kind.CPU_OP, 100, 50), ev("z", Kind.CPU_OP, 200, 0), ev(None, Kind.CPU_OP, 120, 50, tid=2)])
    got = range_summary(t, 100, 200, None, build_index(t).track_of)
    assert got == {"start_ns": 100, "end_ns": 200, "events": 3, "names": 3, "rows": [
        {"name": "", "total_ns": 50, "count": 1, "self_ns": -1, "share": 0.5},
        {"name": "a", "total_ns": 50, "count": 1, "self_ns": -1, "share": 0.5},
        {"name": "z", "total_ns": 0, "count": 1, "self_ns": -1, "share": 0.0}]}


def test_a_one_ns_range_and_the_default_limit_of_50_names():
    """[100, 101] inside x [0, 1000): 1 ns of x, the whole range (share 1.0). 60 names of 1..60 ns: the
    50 longest by default (n60 .. n11)."""
    t = table([ev("x", Kind.CPU_OP, 0, 1000)])
    assert range_summary(t, 100, 101, None, build_index(t).track_of)["rows"][0]["share"] == 1.0
    many = table([ev(f"n{i}", Kind.CPU_OP, 10_000 * i, i) for i in range(1, 61)])
    rows = range_summary(many, 0, 10**6, None, build_index(many).track_of)["rows"]
    assert [r["name"] for r in rows] == [f"n{i}" for i in range(60, 10, -1)]


def test_keys_pair_on_all_three_columns():
    """Table (5 ns, 1 ns, name 0), (5, 2, 0); file (5, 2, 0), (5, 1, 0): each pairs with the file row of its
    own duration, 1 and 0. Table (1, 5, 0), (2, 5, 0); file (2, 5, 0), (1, 5, 0): by start, 1 and 0. A table
    key below every file key but matching none (0, 0, 0) gets -1."""
    assert match_rows(np.array([[5, 1, 0], [5, 2, 0]]), np.array([[5, 2, 0], [5, 1, 0]])).tolist() == [1, 0]
    assert match_rows(np.array([[1, 5, 0], [2, 5, 0]]), np.array([[2, 5, 0], [1, 5, 0]])).tolist() == [1, 0]
    assert match_rows(np.array([[0, 0, 0], [3, 3, 3]]), np.array([[3, 3, 3], [4, 4, 4]])).tolist() == [-1, 0]
    assert match_rows(np.array([[1, 1, 1]]), np.zeros((0, 3), np.int64)).tolist() == [-1]
    assert match_rows(np.zeros((0, 3), np.int64), np.array([[1, 1, 1]])).tolist() == []
