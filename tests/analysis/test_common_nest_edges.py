"""analysis/common.py's nesting, grouping and masks on tables made by hand (issue 46: the rest of common.py under
mutation). Expected values are worked out in the comments, or come from the per-event reference of
test_digest_fast_paths.py (one event at a time, bisect over the open ends) and from np.unique."""
from __future__ import annotations

import re

import numpy as np
import pytest

from _synthetic import ev, table
from canning_tb.analysis import common
from canning_tb.ingest.table import NONE, Kind
from test_digest_fast_paths import reference_nest

CPU = Kind.CPU_OP


def _paths(monkeypatch):
    """Each sweep in turn: the compiled one where it is built, then numpy's."""
    for sweep in (("1", "0") if common._compiled_tree is not None else ("0",)):
        monkeypatch.setenv("CANNING_NEST_SWEEP", sweep)
        yield sweep


# ---------------------------------------------------------------- masks and ids


def test_kind_mask_and_name_mask_by_hand():
    """Rows by time: mul (op, 0), launch (runtime, 5), k (kernel, 8), add (op, 20)."""
    t = table([ev("aten::mul", CPU, 0, 10), ev("launch", Kind.RUNTIME, 5, 1), ev("k", Kind.KERNEL, 8, 1),
               ev("aten::add", CPU, 20, 10)])
    assert common.kind_mask(t, [CPU, Kind.RUNTIME]).tolist() == [True, True, False, True]
    assert common.kind_mask(t, [Kind.KERNEL]).tolist() == [False, False, True, False]
    assert common.name_mask(t, re.compile(r"^aten::")).tolist() == [True, False, False, True]
    assert common.name_mask(t, re.compile(r"nothing")).tolist() == [False] * 4


def test_ids_matching_is_read_only():
    """The result is shared by every caller of the same table and pattern: writing to it must fail."""
    t = table([ev("aten::mul", CPU, 0, 10)])
    ids = common.ids_matching(t, re.compile("mul"))
    with pytest.raises(ValueError):
        ids[0] = 3


def test_ids_matching_of_two_tables_sharing_their_strings():
    """Two tables of one strings table, the same number of events, other names: each sees its own names."""
    a = table([ev("aten::mul", CPU, 0, 10)])
    b = table([ev("aten::add", CPU, 0, 10)])
    b.strings = a.strings
    b.events = dict(b.events, name=np.array([a.strings.id("aten::add")], np.int32))
    assert common.ids_matching(a, re.compile(r"mul")).tolist() == [a.strings.find("aten::mul")]
    assert common.ids_matching(b, re.compile(r"add")).tolist() == [a.strings.find("aten::add")]


def test_ids_matching_skips_names_out_of_range():
    """Strings: 0 "aten::mul", 1 "aten::add" (no event keeps it). Names -1 (none) and 2 (past the strings)
    name no string: only id 0 is an event's name."""
    t = table([ev("aten::mul", CPU, 0, 10), ev("aten::add", CPU, 20, 10), ev("aten::mul", CPU, 40, 10)])
    assert (t.strings.find("aten::mul"), t.strings.find("aten::add")) == (0, 1) and len(t.strings) == 2
    t.events = dict(t.events, name=np.array([0, NONE, 2], np.int32))
    assert common.ids_matching(t, re.compile(r"aten")).tolist() == [0]


# ---------------------------------------------------------------- grouping


def _unique(keys):
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    return uniq, inverse.reshape(-1)


@pytest.mark.parametrize("width", [3, 2 ** 20, 2 ** 40])
def test_group_rows_as_numpy_unique(width):
    """Narrow keys pack into one int64, wide ones (2**40 a column: 2**80 together) go through lexsort; both
    as np.unique(axis=0), with an int64 inverse, in 1-D, 2-D and 3-D."""
    rng = np.random.default_rng(width % 97)
    keys = rng.integers(-width, width, (300, 3))
    keys[100:200] = keys[:100]  # repeats
    for k in (keys[:, :1], keys[:, :2], keys):
        got_uniq, got_inverse = common.group_rows(k)
        want_uniq, want_inverse = _unique(k)
        assert np.array_equal(got_uniq, want_uniq) and np.array_equal(got_inverse, want_inverse)
        assert got_inverse.dtype == np.int64
    flat_uniq, flat_inverse = common.group_rows(keys[:, 0])
    assert np.array_equal(flat_uniq, _unique(keys[:, :1])[0]) and np.array_equal(flat_inverse, _unique(keys[:, :1])[1])


def test_group_rows_of_wide_columns_where_only_the_first_changes():
    """Too wide to pack (spans 2**42 + 1 and 2**40 - 4: over 2**62 together), so sorted by lexsort: (-2**41, 5),
    (0, 5) twice, (7, 2**40), (2**41, 5). Four groups; the first three rows of the sort differ in the first
    column only."""
    keys = np.array([[0, 5], [2 ** 41, 5], [0, 5], [-(2 ** 41), 5], [7, 2 ** 40]], np.int64)
    assert common._packed([keys[:, 0], keys[:, 1]]) is None
    uniq, inverse = common.group_rows(keys)
    assert uniq.tolist() == [[-(2 ** 41), 5], [0, 5], [7, 2 ** 40], [2 ** 41, 5]]
    assert inverse.tolist() == [1, 3, 1, 0, 2]


def test_group_rows_of_int32_columns_across_their_range():
    """An int32 column from -2**31 + 5 to 2**31 - 5 (a span of 2**32 - 9: it packs); its values kept apart and in
    order: 2**31 - 5 minus the lowest would overflow in int32."""
    col = np.array([2 ** 31 - 5, -(2 ** 31) + 5, 0, 2 ** 31 - 5], np.int32)
    uniq, inverse = common.group_rows(col)
    assert uniq[:, 0].tolist() == [-(2 ** 31) + 5, 0, 2 ** 31 - 5] and inverse.tolist() == [2, 0, 1, 2]


def test_group_rows_of_no_row_and_of_one():
    uniq, inverse = common.group_rows(np.zeros((0, 2), np.int64))
    assert uniq.shape == (0, 2) and inverse.dtype == np.int64 and len(inverse) == 0
    uniq, inverse = common.group_rows(np.array([[4, 2]]))
    assert uniq.tolist() == [[4, 2]] and inverse.tolist() == [0]


def test_packed_sorts_like_the_columns_and_is_one_to_one():
    """Three columns of spans 5, 7 and 3 (and lows -2, 10, 0) pack into 5 x 7 x 3 = 105 values: distinct rows give
    distinct values, in the rows' lexicographic order."""
    rng = np.random.default_rng(0)
    cols = [rng.integers(-2, 3, 400), rng.integers(10, 17, 400), rng.integers(0, 3, 400)]
    packed = common._packed(cols)
    rows = list(zip(*(c.tolist() for c in cols)))
    rank = {r: i for i, r in enumerate(sorted(set(rows)))}
    assert len(set(packed.tolist())) == len(rank)
    assert [rank[r] for r in rows] == common.dense_codes(packed)[0].tolist()


def test_packed_declines_columns_that_overflow_together():
    """Spans 2**21 each: two fit (2**42), three (2**63) do not; past 2**62 the packing would wrap, so None."""
    wide = np.array([0, 2 ** 21 - 1], np.int64)
    assert common._packed([wide, wide]) is not None
    assert common._packed([wide, wide, wide]) is None


def test_thread_keys_of_no_row_and_of_wide_ids():
    """(pid, tid) ranked among the rows' distinct pairs; pids 2**40 apart and tids 2**40 apart do not pack
    (2**80), the ranks are the same: pairs (2**40, 1), (0, 2**40), (0, 2**40), (0, 1) -> 2, 1, 1, 0."""
    t = table([ev("a", CPU, 0, 1, pid=2 ** 40, tid=1), ev("b", CPU, 1, 1, pid=0, tid=2 ** 40),
               ev("c", CPU, 2, 1, pid=0, tid=2 ** 40), ev("d", CPU, 3, 1, pid=0, tid=1)])
    assert common.thread_keys(t, np.arange(4)).tolist() == [2, 1, 1, 0]
    assert common.thread_keys(t, np.array([3, 0])).tolist() == [0, 1]
    empty = common.thread_keys(t, np.zeros(0, np.int64))
    assert len(empty) == 0


# ---------------------------------------------------------------- nest


def test_nest_of_no_row(monkeypatch):
    t = table([ev("a", CPU, 0, 10)])
    for _ in _paths(monkeypatch):
        n = common.nest(t, np.zeros(0, np.int64))
        for a in (n.rows, n.parent, n.depth, n.threads):
            assert a is not None and len(a) == 0 and a.dtype == np.int64


def test_nest_fields_and_types_with_and_without_a_dropped_parent(monkeypatch):
    """Rows by time: A [0, 100) tid 1; B [10, 20) tid 2; C [30, 150) tid 1 (overlaps A: open under it, dropped, a
    root); D [40, 50) tid 1 (under A and C: its parent C). Without C: D under A, B alone on its thread."""
    t = table([ev("A", CPU, 0, 100), ev("B", CPU, 10, 10, tid=2), ev("C", CPU, 30, 120), ev("D", CPU, 40, 10)])
    for _ in _paths(monkeypatch):
        n = common.nest(t, np.array([0, 1, 2, 3]))
        assert n.rows.tolist() == [0, 1, 2, 3] and n.parent.tolist() == [NONE, NONE, NONE, 2]
        assert n.depth.tolist() == [0, 0, 0, 1] and n.threads.tolist() == [0, 1, 0, 0]
        assert n.parent.dtype == n.depth.dtype == np.int64
        n = common.nest(t, [3, 1, 0])
        assert n.rows.tolist() == [3, 1, 0] and n.parent.tolist() == [2, NONE, NONE]
        assert n.depth.tolist() == [1, 0, 0] and n.threads.tolist() == [0, 1, 0]
        assert n.rows.dtype == n.parent.dtype == n.depth.dtype == np.int64


def test_nest_equal_starts_after_the_first_longer_first(monkeypatch):
    """A [0, 100); b [10, 20) given before c [10, 50): c is the longer, so it holds b; both under A."""
    t = table([ev("A", CPU, 0, 100), ev("b", CPU, 10, 10), ev("c", CPU, 10, 40)])
    for _ in _paths(monkeypatch):
        n = common.nest(t, np.array([0, 1, 2]))
        assert n.parent.tolist() == [NONE, 2, 0] and n.depth.tolist() == [0, 2, 1]


def test_nest_a_child_ending_with_its_parent(monkeypatch):
    """B [5, 10) ends where A [0, 10) ends: inside it."""
    t = table([ev("A", CPU, 0, 10), ev("B", CPU, 5, 5)])
    for _ in _paths(monkeypatch):
        assert common.nest(t, np.array([0, 1])).parent.tolist() == [NONE, 0]


@pytest.mark.parametrize("seed", range(4))
def test_nest_as_the_reference_on_random_events(seed, monkeypatch):
    """300 events on two threads, few distinct starts (many ties, over 16 at one depth), a fifth of them
    zero-length, ends shared; then the same without the zero-length ones: both sweeps as the reference."""
    rng = np.random.default_rng(seed)
    n = 300
    start = rng.integers(0, 30, n) * 10
    dur = rng.choice([0, 5, 10, 20, 40, 400], n) * (rng.random(n) > 0.2)
    tid = rng.integers(1, 3, n)
    t = table([ev(f"e{i}", CPU, int(s), int(d), tid=int(k)) for i, (s, d, k) in enumerate(zip(start, dur, tid))])
    e = t.events
    for rows in (np.arange(n), np.flatnonzero(e["dur"] > 0)):
        parent, depth = reference_nest(*(e[c][rows].tolist() for c in ("ts", "dur", "pid", "tid")))
        for _ in _paths(monkeypatch):
            got = common.nest(t, rows)
            assert got.parent.tolist() == parent and got.depth.tolist() == depth


def test_nest_of_three_threads_whose_shifted_times_would_overflow(monkeypatch):
    """Times spread over S = 3.5e18 + 21 ns on three threads: thread 2's range would start at 2 x S = 7e18 and end
    past 2**63 (9.2e18), so the times are ranked first. On tid 3: P [0, F + 20) holds Q [F, F + 10); R [5, 8) too."""
    far = 3_500_000_000_000_000_000
    t = table([ev("a", CPU, 0, 10, tid=1), ev("b", CPU, 0, 10, tid=2), ev("P", CPU, 0, far + 20, tid=3),
               ev("R", CPU, 5, 3, tid=3), ev("Q", CPU, far, 10, tid=3)])
    rows = np.arange(len(t))
    names = [t.strings.values[i] for i in t.events["name"]]
    parent, depth = reference_nest(*(t.events[c].tolist() for c in ("ts", "dur", "pid", "tid")))
    assert [names[p] if p != NONE else None for p in parent] == [None, None, None, "P", "P"]
    for _ in _paths(monkeypatch):
        got = common.nest(t, rows)
        assert got.parent.tolist() == parent and got.depth.tolist() == depth


def test_nest_of_two_threads_far_apart_keeps_each_nanosecond(monkeypatch):
    """F = 2**60: thread 2's times sit F + 7 above thread 1's, where a float64 step is 512 ns. s1 [F + 1, F + 3)
    and s2 [F + 2, F + 600) overlap without nesting: both roots (s2's parent s1 does not hold it)."""
    far = 2 ** 60
    t = table([ev("a", CPU, 0, 10, tid=1), ev("s1", CPU, far + 1, 2, tid=2), ev("s2", CPU, far + 2, 598, tid=2)])
    for _ in _paths(monkeypatch):
        got = common.nest(t, np.arange(3))
        assert got.parent.tolist() == [NONE, NONE, NONE] and got.depth.tolist() == [0, 0, 0]


def test_nest_of_lengths_that_do_not_pack_with_their_starts(monkeypatch):
    """One thread: L [0, 2**60) and, at starts 1 .. 8, zero-length events; at start 5 a [5, 8) and b [5, 6) (a
    longer, so first; b inside a, and so are x6 and x7). The (start group, length) key would need 9 x 2**60 > 2**63: sorted by lexsort."""
    long = 2 ** 60
    events = [ev("L", CPU, 0, long)] + [ev(f"x{s}", CPU, s, 0) for s in (1, 2, 3, 4, 6, 7, 8)]
    events += [ev("b", CPU, 5, 1), ev("a", CPU, 5, 3)]
    t = table(events)
    names = [t.strings.values[i] for i in t.events["name"]]
    for _ in _paths(monkeypatch):
        got = common.nest(t, np.arange(len(t)))
        by = {names[i]: (names[p] if p != NONE else None) for i, p in enumerate(got.parent.tolist())}
        assert by == {"L": None, **{f"x{s}": "L" for s in (1, 2, 3, 4, 8)}, "x6": "a", "x7": "a", "a": "L", "b": "a"}


DEEP = 32_800  # past int16 (32,767): depths kept as int64


def _chain_table():
    """DEEP events, each inside the one before: event i is [i, 2 x DEEP - i)."""
    t = table([ev("x", CPU, 0, 1)])
    count = DEEP
    cols = {k: np.resize(v, count) for k, v in t.events.items()}
    cols["ts"] = np.arange(count, dtype=np.int64)
    cols["dur"] = (2 * count - 2 * np.arange(count)).astype(np.int64)
    t.events = cols
    return t


def test_nest_and_sums_deeper_than_int16(monkeypatch):
    """Event i's parent is i - 1, its depth i; ones summed up the chain: event i holds DEEP - i of them."""
    t = _chain_table()
    for _ in _paths(monkeypatch):
        n = common.nest(t, np.arange(DEEP))
        assert n.depth.tolist() == list(range(DEEP)) and n.parent[1:].tolist() == list(range(DEEP - 1))
        sums = common.sum_up_tree(np.ones(DEEP, np.int64), n)
        assert sums.tolist() == list(range(DEEP, 0, -1))


def test_sum_up_tree_of_floats_and_of_nothing(monkeypatch):
    """A holds B holds C: 0.5 + 0.25 + 0.125 = 0.875 at A, 0.375 at B, 0.125 at C (floats kept, not truncated);
    with a second column 1, 2, 4 -> 7, 6, 4. No node: an empty result."""
    nesting = common.Nesting(np.arange(3), np.array([NONE, 0, 1]), np.array([0, 1, 2]))
    for _ in _paths(monkeypatch):
        got = common.sum_up_tree(np.array([0.5, 0.25, 0.125]), nesting)
        assert got.dtype == np.float64 and got.tolist() == [0.875, 0.375, 0.125]
        two = common.sum_up_tree(np.array([[0.5, 1.0], [0.25, 2.0], [0.125, 4.0]]), nesting)
        assert two.tolist() == [[0.875, 7.0], [0.375, 6.0], [0.125, 4.0]]
        empty = common.Nesting(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
        assert len(common.sum_up_tree(np.zeros(0), empty)) == 0


# ---------------------------------------------------------------- innermost_at


def test_innermost_at_by_hand():
    """tid 1 (three events, the busiest): A [0, 100) holds B [10, 50) and C [60, 70); tid 2: D [40, 200). Positions
    in time order: A 0, B 1, D 2, C 3. An instant is inside an event from its start to its end, both included:
    5 A; 20 B; 50 B (its end); 55 A (after B); 65 C; 100 A (its end); 150 none on tid 1, D on tid 2; 250 and -5
    none."""
    t = table([ev("A", CPU, 0, 100), ev("B", CPU, 10, 40), ev("C", CPU, 60, 10), ev("D", CPU, 40, 160, tid=2)])
    n = common.nest(t, np.arange(4))
    got = common.innermost_at(t, n, np.array([5, 20, 50, 55, 65, 100, 150, 250, -5, 60, 10]))
    assert got.tolist() == [0, 1, 1, 0, 3, 0, 2, NONE, NONE, 3, 1]  # 60 and 10: C's and B's first instants


def test_innermost_at_walks_up_several_levels():
    """E [0, 1000) > F [0, 500) > G [0, 100), and H [200, 300) in F: at 600 the last start is H's, which ended,
    as did F; E holds it. At 250: H; at 400: F; at 1000: E; at 1001: none. Positions: E 0, F 1, G 2, H 3."""
    t = table([ev("E", CPU, 0, 1000), ev("F", CPU, 0, 500), ev("G", CPU, 0, 100), ev("H", CPU, 200, 100)])
    n = common.nest(t, np.arange(4))
    assert n.parent.tolist() == [NONE, 0, 1, 1]
    assert common.innermost_at(t, n, [600, 250, 400, 1000, 1001, 50]).tolist() == [0, 3, 1, 0, NONE, 2]


def test_innermost_at_tries_the_busiest_thread_first():
    """tid 5: X [0, 100); tid 3: Y [0, 100) and Z [200, 300) (two rows: the busiest). At 50 both hold it: Y, the
    busiest thread's; at 250 Z. With one row each (no Z) the thread of the lower rank (tid 3 before tid 5) wins."""
    t = table([ev("X", CPU, 0, 100, tid=5), ev("Y", CPU, 0, 100, tid=3), ev("Z", CPU, 200, 100, tid=3)])
    rows = np.arange(3)
    names = [t.strings.values[i] for i in t.events["name"][rows]]
    n = common.nest(t, rows)
    assert [names[i] for i in common.innermost_at(t, n, [50, 250]).tolist()] == ["Y", "Z"]
    two = np.array([i for i, name in enumerate(names) if name != "Z"])
    assert [names[i] for i in two] == ["X", "Y"]
    n2 = common.nest(t, two)
    assert common.innermost_at(t, n2, [50]).tolist() == [1]  # Y, the second of the rows given


def test_innermost_at_an_instant_left_for_the_second_thread():
    """tid 1 (two rows, the busiest): P [0, 10) and R [200, 210); tid 2: Q [5, 105). Positions in time order: P 0,
    Q 1, R 2. At 50 tid 1's last start is P's, which ended at 10: Q on tid 2 holds it. At 5 P (tid 1 first); at 205
    R; at 200, R's first instant: R."""
    t = table([ev("P", CPU, 0, 10), ev("R", CPU, 200, 10), ev("Q", CPU, 5, 100, tid=2)])
    n = common.nest(t, np.arange(3))
    assert common.innermost_at(t, n, [50]).tolist() == [1]
    assert common.innermost_at(t, n, [5, 50]).tolist() == [0, 1]
    assert common.innermost_at(t, n, [205, 200, 60]).tolist() == [2, 2, 1]


def test_innermost_at_with_ties_among_other_values():
    """Rows given interleaved: a0 .. a11 from 0 (200, 190, ..., 90 ns long, each inside the one before) and b0 .. b11
    from 500 alike: at 5 the innermost is a11, the 12th a (position 22 of the rows given); at 505 b11 (23).
    Then 20 threads holding [0, 100) each, the odd tids with a second event [200, 210): the odd tids are the
    busiest, and among them tid 1 (the lowest pair) is tried first."""
    t = table([ev(f"a{i}", CPU, 0, 200 - 10 * i) for i in range(12)] + [ev(f"b{i}", CPU, 500, 200 - 10 * i)
                                                                          for i in range(12)])
    rows = np.ravel(np.column_stack([np.arange(12), np.arange(12, 24)]))  # a0, b0, a1, b1, ...
    n = common.nest(t, rows)
    assert common.innermost_at(t, n, [5, 505]).tolist() == [22, 23]
    events = [ev(f"t{k}", CPU, 0, 100, tid=k) for k in range(1, 21)]
    events += [ev(f"u{k}", CPU, 200, 10, tid=k) for k in range(1, 21, 2)]
    t = table(events)
    n = common.nest(t, np.arange(len(t)))
    (pos,) = common.innermost_at(t, n, [50]).tolist()
    assert t.events["tid"][pos] == 1 and t.events["ts"][pos] == 0


def test_innermost_at_among_equally_busy_threads_takes_the_lowest():
    """17 threads (tid k + 1 for key k) of one or two events, as COUNTS says; only keys 6 and 7 (both of two events)
    hold the instant 50, with [0, 100): key 6, the lower of the two, answers (its event's tid is 7)."""
    counts = [1, 2, 2, 2, 1, 1, 2, 2, 1, 1, 2, 1, 1, 2, 1, 1, 2]
    events = []
    for key, count in enumerate(counts):
        first = (0, 100) if key in (6, 7) else (1000, 10)
        events.append(ev(f"k{key}", CPU, first[0], first[1], tid=key + 1))
        if count == 2:
            events.append(ev(f"k{key}b", CPU, 2000, 10, tid=key + 1))
    t = table(events)
    n = common.nest(t, np.arange(len(t)))
    (pos,) = common.innermost_at(t, n, [50]).tolist()
    assert t.events["tid"][pos] == 7


def test_innermost_at_among_many_equal_starts_and_many_threads():
    """20 events from 0 on one thread, 200, 190, ..., 10 ns long (each inside the one before): at 5 the innermost is
    the last (10 ns), position 19; at 195 the first. Then 20 threads with one event [0, 100) each: at 50 the
    threads tie, the one of the lowest (pid, tid) wins: tid 1, position 0."""
    t = table([ev(f"n{i}", CPU, 0, 200 - 10 * i) for i in range(20)])
    n = common.nest(t, np.arange(20))
    assert common.innermost_at(t, n, [5, 195]).tolist() == [19, 0]
    t = table([ev(f"t{k}", CPU, 0, 100, tid=k) for k in range(1, 21)])
    n = common.nest(t, np.arange(20))
    (pos,) = common.innermost_at(t, n, [50]).tolist()
    assert t.events["tid"][pos] == 1


def test_innermost_at_of_nothing():
    t = table([ev("A", CPU, 0, 100)])
    n = common.nest(t, np.arange(1))
    assert common.innermost_at(t, n, np.zeros(0, np.int64)).tolist() == []
    empty = common.nest(t, np.zeros(0, np.int64))
    got = common.innermost_at(t, empty, [5, 6])
    assert got.tolist() == [NONE, NONE] and got.dtype == np.int64
