"""numpy helpers every layer uses.

`distinct`: np.unique(a) through its sorting path. numpy 2.3+ answers a plain np.unique(a) with a hash
table that is 40-80x slower than sorting when most values differ (0.9 s vs 0.02 s for 900k int64 on this
machine's numpy 2.4); asking for the counts takes the sorting path, with the same answer.
"""
from __future__ import annotations

import numpy as np


def distinct(a) -> np.ndarray:
    """The sorted distinct values of `a` (flattened), as np.unique(a) gives them."""
    return np.unique(a, return_counts=True)[0]


def ranks(values) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, int64 rank of each value among them) of an int array, flattened:
    np.unique(values, return_inverse=True) without sorting the values: a lookup table when they span a
    small range (ids), else a binary search in the distinct first values of their runs (thread ids of
    time-ordered rows come in long runs). Other dtypes: np.unique."""
    values = np.asarray(values).reshape(-1)
    if values.dtype.kind not in "iu":
        uniq, inverse = np.unique(values, return_inverse=True)
        return uniq, inverse.reshape(-1).astype(np.int64, copy=False)
    if len(values) == 0:
        return values.copy(), np.zeros(0, np.int64)
    low = int(values.min())
    span = int(values.max()) - low + 1
    if span <= 2 * len(values) + (1 << 16):  # values - low cannot overflow: they lie within span of low
        offset = np.subtract(values, low, dtype=np.int64)
        present = np.zeros(span, bool)
        present[offset] = True
        rank = np.cumsum(present) - 1
        np.take(rank, offset, out=offset)  # fresh memory is dear (a page fault per 4 KB): reuse it
        return (np.flatnonzero(present) + low).astype(values.dtype), offset
    heads = values[np.r_[True, values[1:] != values[:-1]]]
    uniq = distinct(heads)
    return uniq, np.searchsorted(uniq, values).astype(np.int64, copy=False)


def pair_codes(a, b) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(distinct a values, distinct b values, one int64 code per (a, b) pair that orders as the pairs do:
    a's rank * len(distinct b) + b's rank). Values of any int range (INT64 min included)."""
    ua, ia = ranks(a)
    ub, ib = ranks(b)
    ia *= len(ub)
    ia += ib
    return ua, ub, ia


def distinct_pairs(a, b) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a values, b values, inverse) of the distinct (a, b) pairs in sorted order, as np.unique over the
    stacked rows with axis=0 and return_inverse gives them, but through one sort of int64 codes (numpy
    sorts rows as void records, several times slower)."""
    ua, ub, code = pair_codes(a, b)
    key, inverse = np.unique(code, return_inverse=True)
    return ua[key // max(len(ub), 1)], ub[key % max(len(ub), 1)], inverse.reshape(-1)
