"""Interval sets as sorted numpy arrays, vectorised.

An *interval set* is a pair `(starts, ends)` of int64 arrays, sorted by start, pairwise
disjoint and non-adjacent (`ends[i] < starts[i+1]`), each interval half-open `[s, e)` and
non-empty. `union` turns any bag of intervals into such a set; `intersect`, `subtract` and
`combine` take sets and return sets. Every function is O(n log n) numpy work, with no Python
loop over intervals.
"""
from __future__ import annotations

import numpy as np

EMPTY = (np.zeros(0, np.int64), np.zeros(0, np.int64))


def _arr(a) -> np.ndarray:
    return np.asarray(a, dtype=np.int64)


def union(starts, ends) -> tuple[np.ndarray, np.ndarray]:
    """Merge any intervals (unsorted, overlapping, empty ones allowed) into a set."""
    s, e = _arr(starts), _arr(ends)
    keep = e > s
    s, e = s[keep], e[keep]
    if len(s) == 0:
        return EMPTY
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    run_end = np.maximum.accumulate(e)
    # a new group starts where the start lies after every earlier end (touching intervals merge)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > run_end[:-1]
    first = np.flatnonzero(new)
    last = np.r_[first[1:] - 1, len(s) - 1]
    return s[first], run_end[last]


def combine(sets: list[tuple[np.ndarray, np.ndarray]], keep) -> tuple[np.ndarray, np.ndarray]:
    """The set of instants where `keep(mask)` is true; mask has bit i set where sets[i] covers.

    `keep` receives an int64 array of masks (one per elementary segment) and returns bools.
    """
    pos, delta = [], []
    for i, (s, e) in enumerate(sets):
        s, e = _arr(s), _arr(e)
        pos += [s, e]
        delta += [np.full(len(s), 1 << i, np.int64), np.full(len(e), -(1 << i), np.int64)]
    if not pos:
        return EMPTY
    p = np.concatenate(pos)
    if len(p) == 0:
        return EMPTY
    d = np.concatenate(delta)
    order = np.argsort(p, kind="stable")
    p, d = p[order], d[order]
    mask = np.cumsum(d)  # sets are disjoint, so each bit is 0/1 and the sum is a bitmask
    # value after the last boundary at each distinct position
    last_at = np.r_[p[1:] != p[:-1], True]
    up, um = p[last_at], mask[last_at]
    if len(up) < 2:
        return EMPTY
    seg_s, seg_e, seg_m = up[:-1], up[1:], um[:-1]
    sel = np.asarray(keep(seg_m), dtype=bool)
    return union(seg_s[sel], seg_e[sel])


def intersect(a, b):
    return combine([a, b], lambda m: m == 3)


def subtract(a, b):
    """a minus b."""
    return combine([a, b], lambda m: m == 1)


def union_sets(*sets):
    if not sets:
        return EMPTY
    return union(np.concatenate([_arr(s) for s, _ in sets]), np.concatenate([_arr(e) for _, e in sets]))


def total(iset) -> int:
    s, e = iset
    return int(np.sum(_arr(e) - _arr(s)))


def clip(iset, lo: int, hi: int):
    s, e = _arr(iset[0]), _arr(iset[1])
    s2, e2 = np.maximum(s, lo), np.minimum(e, hi)
    keep = e2 > s2
    return s2[keep], e2[keep]


def covered_before(iset, t) -> np.ndarray:
    """Length of the set lying before each instant t (vectorised over t)."""
    s, e = _arr(iset[0]), _arr(iset[1])
    t = _arr(t)
    if len(s) == 0:
        return np.zeros(t.shape, np.int64)
    cum = np.r_[0, np.cumsum(e - s)]
    k = np.searchsorted(s, t, side="right")  # intervals starting at or before t
    over = np.where(k > 0, np.maximum(e[np.maximum(k - 1, 0)] - t, 0), 0)
    return cum[k] - over


def measure(iset, lo, hi) -> np.ndarray:
    """Length of the set inside each window [lo[i], hi[i]) (vectorised)."""
    lo, hi = _arr(lo), _arr(hi)
    return np.maximum(covered_before(iset, hi) - covered_before(iset, lo), 0)
