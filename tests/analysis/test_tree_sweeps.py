"""ingest/native/tree.c against the numpy it replaces (kept as the fallback where no C compiler is found):
the nesting sweep (common._nest_sorted) on a case worked out by hand, thousands of random event sets
(equal starts, zero lengths, events that overlap without nesting) and the row sets the digest nests on
real fixtures; the sums up the tree (common.sum_up_tree) bit for bit, floats included, on random trees
and on the fixtures' host nesting. common.nest against a per-event reference: test_digest_fast_paths.py.
Where tree.c is not built, the cases worked out by hand check the numpy path alone; the comparisons skip."""
from __future__ import annotations

import numpy as np
import pytest

from canning_tb.analysis import common
from test_digest_fast_paths import FIXTURES, fixture_table, row_sets


def _paths():
    """CANNING_NEST_SWEEP values to run: the compiled sweep where it is built, and numpy's."""
    return ("1", "0") if common._compiled_tree is not None else ("0",)


def _both(start, end, monkeypatch):
    out = []
    for sweep in _paths():
        monkeypatch.setenv("CANNING_NEST_SWEEP", sweep)
        assert common.nest_compiled() == (sweep == "1")
        depth, parent = common._nest_sorted(np.asarray(start, np.int64), np.asarray(end, np.int64))
        out.append((depth.tolist(), parent.tolist()))
    return out


@pytest.mark.compiled("_tree")
def test_the_sweep_is_built():
    assert common._compiled_tree is not None


def test_a_case_by_hand(monkeypatch):
    """Sorted by (start, longer first): A [0, 100) holds B [0, 50), which holds C [10, 20) and the zero-length
    D at 50 (an end equal to a start has ended: D is A's child, not B's); E [60, 120) overlaps A without
    nesting (open under A, depth 1, but not inside it: a root); F [70, 80) is open under A and E (depth 2)
    and its last earlier event of depth 1 is E, which holds it; G at 200 after all."""
    start = [0, 0, 10, 50, 60, 70, 200]
    end = [100, 50, 20, 50, 120, 80, 210]
    want = ([0, 1, 2, 1, 1, 2, 0], [-1, 0, 1, 0, -1, 4, -1])
    assert _both(start, end, monkeypatch) == [want] * len(_paths())


@pytest.mark.compiled("_tree")
@pytest.mark.parametrize("seed", range(40))
def test_random_events_as_the_numpy_path(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    start = np.sort(rng.integers(0, int(rng.choice([5, 50, 5000])), n))  # few distinct starts: many ties
    dur = rng.integers(0, int(rng.choice([1, 3, 40, 4000])), n) * (rng.random(n) > 0.2)  # a fifth zero-length
    end = start + dur
    order = np.lexsort((-(end - start), start))  # (start, longer first), as common._start_order gives
    compiled, numpy_path = _both(start[order], end[order], monkeypatch)
    assert compiled == numpy_path


def test_no_events(monkeypatch):
    assert _both([], [], monkeypatch) == [([], [])] * len(_paths())


@pytest.mark.compiled("_tree")
def test_wrong_buffers():
    with pytest.raises(ValueError):
        common._compiled_tree.nest_sorted(np.zeros(3, np.int64), np.zeros(2, np.int64), np.zeros(3, np.int64),
                                          np.zeros(3, np.int64))


@pytest.mark.compiled("_tree")
@pytest.mark.parametrize("parts", FIXTURES, ids="/".join)
def test_the_digests_row_sets_nest_alike(parts, monkeypatch):
    t = fixture_table(parts)
    for name, rows in row_sets(t).items():
        got = []
        for sweep in ("1", "0"):
            monkeypatch.setenv("CANNING_NEST_SWEEP", sweep)
            n = common.nest(t, rows)
            got.append((n.parent.tolist(), n.depth.tolist()))
        assert got[0] == got[1], name


def _sums_both(values, nesting, monkeypatch):
    out = []
    for sweep in _paths():
        monkeypatch.setenv("CANNING_NEST_SWEEP", sweep)
        out.append(common.sum_up_tree(values, nesting))
    return out


def test_sums_by_hand(monkeypatch):
    """A(0) holds B(1) and D(3); B holds C(2): inclusive sums A = 1+2+4+8, B = 2+4, C = 4, D = 8."""
    nesting = common.Nesting(np.arange(4), np.array([-1, 0, 1, 0]), np.array([0, 1, 2, 1]))
    for got in _sums_both(np.array([1, 2, 4, 8]), nesting, monkeypatch):
        assert got.tolist() == [15, 6, 4, 8] and got.dtype == np.int64


@pytest.mark.compiled("_tree")
def test_int_sums_past_int64_wrap_as_numpy_does(monkeypatch):
    """The fuzzer's find (ingest/native/fuzz/tree_sum.py): a child of 5534022346647487042 summed into a parent of
    as much overflowed int64 in _tree.c, undefined behaviour; both paths now wrap to the same int64
    (test_compiled_sanitized holds the C to it under UBSan)."""
    big = 5534022346647487042
    nesting = common.Nesting(np.arange(3), np.array([-1, 0, 1]), np.array([0, 1, 2]))
    top = np.iinfo(np.int64).max
    compiled, numpy_path = _sums_both(np.array([big, big, top]), nesting, monkeypatch)

    def wrap(x: int) -> int:
        return (x + 2 ** 63) % 2 ** 64 - 2 ** 63

    assert compiled.tolist() == numpy_path.tolist() == [wrap(2 * big + top), wrap(big + top), top]


@pytest.mark.compiled("_tree")
@pytest.mark.parametrize("seed", range(20))
def test_random_trees_sum_alike_bit_for_bit(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    start = np.sort(rng.integers(0, 10 ** 6, n))
    end = start + rng.integers(0, 10 ** 5, n)
    order = np.lexsort((-(end - start), start))
    t = fixture_free_table(start[order], end[order])
    nesting = common.nest(t, np.arange(n))
    floats = rng.random((n, 3)) * 10.0 ** rng.integers(-3, 9, (n, 3))  # magnitudes apart: the order shows
    compiled, numpy_path = _sums_both(floats, nesting, monkeypatch)
    assert compiled.dtype == numpy_path.dtype == np.float64 and compiled.tobytes() == numpy_path.tobytes()
    ints = rng.integers(-10 ** 12, 10 ** 12, n)
    compiled, numpy_path = _sums_both(ints, nesting, monkeypatch)
    assert compiled.tolist() == numpy_path.tolist()


def fixture_free_table(start, end):
    from _synthetic import ev, table
    from canning_tb.ingest.table import Kind
    return table([ev(f"op{i}", Kind.CPU_OP, int(s), int(e - s)) for i, (s, e) in enumerate(zip(start, end))])


@pytest.mark.compiled("_tree")
@pytest.mark.parametrize("parts", FIXTURES, ids="/".join)
def test_the_fixtures_host_sums_alike(parts, monkeypatch):
    from canning_tb.analysis.context import Context
    t = fixture_table(parts)
    host = Context(t).host
    dur = t.events["dur"][host.rows]
    compiled, numpy_path = _sums_both(np.stack([dur, dur * 0.1], axis=1), host, monkeypatch)
    assert compiled.tobytes() == numpy_path.tobytes()


@pytest.mark.compiled("_tree")
def test_sum_up_refuses_bad_indexes():
    col, parent = np.zeros(3), np.array([-1, 0, 5])
    with pytest.raises(ValueError):
        common._compiled_tree.sum_up(col, parent, np.arange(3), np.array([0, 1, 3]), "d")
    with pytest.raises(ValueError):
        common._compiled_tree.sum_up(col, np.array([-1, 0, 1]), np.arange(3), np.array([0, 2, 1]), "d")
