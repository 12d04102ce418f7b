"""analysis/intervals.py at its edges (issue 46's mutation round): half-open intervals that touch, empty ones,
sets that are empty, instants before, inside and after a set, windows given backwards, and times near 2**62
ns (exact in int64, not in a float). Every expected value is counted by hand in the comments."""
import numpy as np

from canning_tb.analysis import intervals as iv

BIG = 2**62  # a time in ns past float64's 53 bits: 2**62 + 1 is no float


def pairs(iset):
    assert all(a.dtype == np.int64 for a in iset)
    return list(zip(iset[0].tolist(), iset[1].tolist()))


def test_union_merges_touching_and_overlapping_drops_empty_and_sorts():
    """[5,7) [0,3) [3,4) [10,12) [11,11) [2,2): [0,3) and [3,4) touch (one), [11,11) and [2,2) are empty; the
    last group's end is the largest of its ends, not its last one: [20,30) [21,25) is [20,30)."""
    assert pairs(iv.union([5, 0, 3, 10, 11, 2], [7, 3, 4, 12, 11, 2])) == [(0, 4), (5, 7), (10, 12)]
    assert pairs(iv.union([20, 21], [30, 25])) == [(20, 30)]
    assert pairs(iv.union([0, 2, 9], [10, 3, 9])) == [(0, 10)]  # all inside the first
    assert pairs(iv.union([4], [3])) == [] and pairs(iv.union([], [])) == []
    assert pairs(iv.union([BIG, BIG + 2], [BIG + 1, BIG + 3])) == [(BIG, BIG + 1), (BIG + 2, BIG + 3)]
    assert pairs(iv.union([7], [8])) == [(7, 8)]  # one interval
    # times of another int type come back as int64, as every set is
    assert pairs(iv.union(np.array([3, 0], np.int32), np.array([5, 1], np.int32))) == [(0, 1), (3, 5)]


def test_intersect_and_subtract_at_touching_edges():
    """a = [0,10) [20,30), b = [10,20) [25,26): they touch at 10 and 20 and share [25,26) only."""
    a, b = iv.union([0, 20], [10, 30]), iv.union([10, 25], [20, 26])
    assert pairs(iv.intersect(a, b)) == [(25, 26)]
    assert pairs(iv.subtract(a, b)) == [(0, 10), (20, 25), (26, 30)]
    assert pairs(iv.subtract(b, a)) == [(10, 20)]
    assert pairs(iv.intersect(a, iv.EMPTY)) == [] and pairs(iv.subtract(a, iv.EMPTY)) == [(0, 10), (20, 30)]
    assert pairs(iv.subtract(iv.EMPTY, a)) == [] and pairs(iv.intersect(iv.EMPTY, iv.EMPTY)) == []
    c = iv.union([BIG], [BIG + 3])
    assert pairs(iv.subtract(c, iv.union([BIG + 1], [BIG + 2]))) == [(BIG, BIG + 1), (BIG + 2, BIG + 3)]


def test_combine_gives_keep_one_bit_per_set():
    """Three sets: a = [0,10), b = [5,15), c = [8,20), bits 1, 2 and 4. Segments: [0,5) a alone (1), [5,8) a and b
    (3), [8,10) all three (7), [10,15) b and c (6), [15,20) c alone (4)."""
    a, b, c = iv.union([0], [10]), iv.union([5], [15]), iv.union([8], [20])
    assert pairs(iv.combine([a, b, c], lambda m: m == 7)) == [(8, 10)]
    assert pairs(iv.combine([a, b, c], lambda m: m == 4)) == [(15, 20)]
    assert pairs(iv.combine([a, b, c], lambda m: m == 1)) == [(0, 5)]
    assert pairs(iv.combine([a, b, c], lambda m: m > 0)) == [(0, 20)]  # adjacent segments merge
    assert pairs(iv.combine([], lambda m: m > 0)) == [] and pairs(iv.combine([iv.EMPTY], lambda m: m == 0)) == []
    assert pairs(iv.combine([a], lambda m: m == 1)) == [(0, 10)]  # one set: two points, one segment


def test_union_of_sets_total_and_clip():
    assert pairs(iv.union_sets()) == []
    assert pairs(iv.union_sets(iv.union([0], [5]), iv.union([5, 9], [7, 10]))) == [(0, 7), (9, 10)]
    assert iv.total(iv.union([0, 20], [10, 25])) == 15 and iv.total(iv.EMPTY) == 0
    assert iv.total(iv.union([BIG], [BIG + 1])) == 1
    s = iv.union([0, 10, 20], [5, 15, 30])
    assert pairs(iv.clip(s, 3, 12)) == [(3, 5), (10, 12)]
    assert pairs(iv.clip(s, 5, 10)) == []  # touches [0,5) and [10,15) only at their edges
    assert pairs(iv.clip(s, 12, 12)) == []


def test_covered_before_each_instant():
    """Set [0,10) [20,30): before -5 nothing, before 0 nothing, before 5: 5, before 10: 10, 15: 10, 20: 10,
    25: 15, 30: 20, 40: 20."""
    s = iv.union([0, 20], [10, 30])
    t = [-5, 0, 5, 10, 15, 20, 25, 30, 40]
    assert iv.covered_before(s, t).tolist() == [0, 0, 5, 10, 10, 10, 15, 20, 20]
    got = iv.covered_before(iv.EMPTY, [[1, 2], [3, 4]])
    assert got.shape == (2, 2) and got.dtype == np.int64 and not got.any()


def test_measure_inside_windows_and_none_in_a_window_given_backwards():
    """[0,10) [20,30) inside [5,25): 5 + 5 = 10; [10,20): 0; [30,40): 0; [25,5) (backwards): 0, not -10."""
    s = iv.union([0, 20], [10, 30])
    assert iv.measure(s, [5, 10, 30, 25, -10], [25, 20, 40, 5, 100]).tolist() == [10, 0, 0, 0, 20]
    assert iv.measure(iv.union([BIG], [BIG + 3]), [BIG + 1], [BIG + 2]).tolist() == [1]
