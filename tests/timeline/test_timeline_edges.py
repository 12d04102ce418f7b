"""The timeline's tiles and range summary at their edges, on events placed here by hand (ns):
which events merge into one item at a pixel width, and which events a range holds.

Rules (timeline/tiles.py, timeline/query.py): an event at least one pixel wide is an item of its
own; consecutive narrower events of a row that start in the same pixel column merge (first start to
last end, their count, the first longest named); a range [t0, t1] holds the events that overlap it
for some time, and the zero-length ones inside it, never those that only touch its edge. Written
against one-line bugs the suite let pass (issue 24, item 7): merging off by one pixel, and the
range summary counting events that only touch its edge.
"""
import numpy as np

from _synthetic import ev, table

from canning_tb.ingest.table import Kind
from canning_tb.timeline.index import build_index
from canning_tb.timeline.query import range_summary
from canning_tb.timeline.tiles import make_tile


def _tile(events, t0, t1, width):
    t = table([ev(name, Kind.CPU_OP, ts, dur) for name, ts, dur in events])
    index = build_index(t)
    assert len(index.row_track) == 1  # one thread, nothing nested: one row
    tile = make_tile(index, t.events["name"], [0], t0, t1, width)
    names = [t.name(int(e)) for e in tile.event]
    return list(zip(tile.start.tolist(), tile.end.tolist(), tile.count.tolist(), names)), tile


def test_items_at_100_ns_per_pixel_by_hand():
    """[0, 1000] at 10 px: 100 ns per pixel column."""
    items, tile = _tile([
        ("x", 0, 10),      # column 0, narrow
        ("wide", 10, 100),  # exactly one pixel wide: an item of its own, even in x's column
        ("b", 110, 20), ("c", 150, 20),  # column 1, both narrow: one item, the first longest named
        ("d", 200, 20), ("e", 290, 9),   # column 2: one item
        ("f", 300, 10), ("g", 399, 1),   # column 3, the pixel next to d / e's: an item of their own
        ("h", 420, 99),    # column 4, 1 ns under a pixel: narrow, alone in its column
    ], 0, 1000, 10)
    assert items == [(0, 10, 1, "x"), (10, 110, 1, "wide"), (110, 170, 2, "b"), (200, 299, 2, "d"),
                     (300, 400, 2, "f"), (420, 519, 1, "h")]
    assert tile.events_in_range == 9


def test_a_range_holds_the_events_at_its_edges_only_when_they_overlap_it():
    """Range [100, 200]: a ends at 100 and c starts at 200 (they touch it), b fills it, z (zero
    length) sits at its start, y (zero length) past its end."""
    t = table([ev("a", Kind.CPU_OP, 0, 100), ev("b", Kind.CPU_OP, 100, 100), ev("c", Kind.CPU_OP, 200, 100),
               ev("z", Kind.CPU_OP, 100, 0, tid=2), ev("y", Kind.CPU_OP, 250, 0, tid=2)])
    track_of = build_index(t).track_of
    got = range_summary(t, 100, 200, None, track_of)
    assert got["events"] == 2 and got["names"] == 2
    brief = [{k: r[k] for k in ("name", "total_ns", "count")} for r in got["rows"]]
    assert brief == [{"name": "b", "total_ns": 100, "count": 1}, {"name": "z", "total_ns": 0, "count": 1}]
    # a range inside one event: that event, clipped
    inner = range_summary(t, 120, 150, None, track_of)
    assert [{k: r[k] for k in ("name", "total_ns", "count")} for r in inner["rows"]] == [
        {"name": "b", "total_ns": 30, "count": 1}]
    # only the tracks asked for
    z_track = track_of[np.flatnonzero(t.events["name"] == t.strings.find("z"))[0]]
    only = range_summary(t, 100, 200, np.array([z_track]), track_of)
    assert [r["name"] for r in only["rows"]] == ["z"]


def test_self_time_and_share_of_a_range_by_hand():
    """p [0, 1000] holds c1 [100, 300] and c2 [500, 900], which holds g [600, 700]; q [0, 600] runs on
    another thread. Range [200, 800] (600 ns): p 600 in range, less c1's 100 and c2's 300: self 200;
    c1 100, self 100; c2 300 less g's 100: self 200; g 100; q 400 (its own thread: no child)."""
    t = table([ev("p", Kind.CPU_OP, 0, 1000), ev("c1", Kind.CPU_OP, 100, 200), ev("c2", Kind.CPU_OP, 500, 400),
               ev("g", Kind.CPU_OP, 600, 100), ev("q", Kind.CPU_OP, 0, 600, tid=2)])
    index = build_index(t)
    got = {r["name"]: (r["count"], r["total_ns"], r["self_ns"], r["share"])
           for r in range_summary(t, 200, 800, None, index.track_of, index=index)["rows"]}
    assert got == {"p": (1, 600, 200, 1.0), "q": (1, 400, 400, round(400 / 600, 6)),
                   "c2": (1, 300, 200, 0.5), "c1": (1, 100, 100, round(100 / 600, 6)),
                   "g": (1, 100, 100, round(100 / 600, 6))}
    # without the index, self time is unknown (-1), never the total
    assert {r["self_ns"] for r in range_summary(t, 200, 800, None, index.track_of)["rows"]} == {-1}


def test_an_event_that_ends_where_the_tile_starts_is_in_the_tile():
    """The tile's range is closed: [t0, t1] holds an event ending at t0 and one starting at t1."""
    items, tile = _tile([("before", 0, 50), ("at_end", 500, 100), ("after", 700, 10)], 50, 500, 9)
    assert [i[3] for i in items] == ["before", "at_end"] and tile.events_in_range == 2


def test_pixel_columns_count_from_the_ranges_start():
    """The same events 1050 ns later, the range [1050, 2050] at 10 px: the columns are counted from 1050, so
    b (1160) and c (1200) still share column 1; counted from 0 they would fall in columns 11 and 12. An event
    that starts before the range and ends inside it is in the tile, in a column of its own (before 0)."""
    items, tile = _tile([
        ("early", 1000, 60),  # 1000..1060: overlaps the range's start
        ("b", 1160, 20), ("c", 1200, 20),
        ("d", 1250, 20), ("e", 1349, 1),  # 200 and 299 ns from the start: column 2
    ], 1050, 2050, 10)
    assert items == [(1000, 1060, 1, "early"), (1160, 1220, 2, "b"), (1250, 1350, 2, "d")]
    assert tile.events_in_range == 5
