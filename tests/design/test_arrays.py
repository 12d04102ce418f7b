"""canning_tb.util.arrays.distinct is np.unique(a), value for value and dtype, on what the readers give it:
ids with many distinct values, few, negatives (NONE), floats with NaN, empty, 2-D."""
import numpy as np
import pytest

from canning_tb.util.arrays import distinct

rng = np.random.default_rng(0)


@pytest.mark.parametrize("a", [
    rng.integers(0, 2 ** 40, 10_000), rng.integers(-1, 5, 10_000).astype(np.int32),
    np.array([np.nan, 1.0, np.nan, -0.0, 0.0, 3.5]), np.zeros(0, np.int64), rng.integers(0, 9, (40, 3)),
    np.array([True, False, True]), np.array([b"b", b"a", b"b"]),
])
def test_distinct_is_np_unique(a):
    want = np.unique(a)
    got = distinct(a)
    assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=want.dtype.kind == "f")


@pytest.mark.parametrize("a,b", [
    (rng.integers(0, 50, 5_000), rng.integers(0, 2 ** 40, 5_000)),
    (np.array([np.iinfo(np.int64).min, 3, 3, np.iinfo(np.int64).min]), np.array([7, 7, 7, np.iinfo(np.int64).min])),
    (np.zeros(0, np.int64), np.zeros(0, np.int64)),
])
def test_distinct_pairs_is_np_unique_over_rows(a, b):
    from canning_tb.util.arrays import distinct_pairs
    rows = np.stack([a, b], axis=1)
    want, want_inverse = np.unique(rows, axis=0, return_inverse=True)
    first, second, inverse = distinct_pairs(a, b)
    assert np.array_equal(np.stack([first, second], axis=1).reshape(-1, 2), want.reshape(-1, 2))
    assert np.array_equal(inverse, want_inverse.reshape(-1))


@pytest.mark.parametrize("values", [
    rng.integers(0, 2 ** 40, 10_000),  # wide: the binary search over run heads
    np.repeat(rng.integers(0, 2 ** 40, 7), 300),  # wide, in runs
    rng.integers(-3, 15_503, 20_000),  # a small span: the lookup table
    np.array([np.iinfo(np.int64).min, 3, np.iinfo(np.int64).max, 3]),  # the whole int64 range
    np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).min + 2, np.iinfo(np.int64).min]),
    rng.integers(-1, 5, (40, 3)).astype(np.int32), np.array([7], np.uint8), np.zeros(0, np.int64),
    np.array([np.nan, 1.0, np.nan, 2.0]),  # not ints: np.unique itself
])
def test_ranks_are_np_unique_with_inverse(values):
    from canning_tb.util.arrays import ranks
    want, want_inverse = np.unique(values, return_inverse=True)
    got, inverse = ranks(values)
    assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=want.dtype.kind == "f")
    assert inverse.dtype == np.int64 and np.array_equal(inverse, want_inverse.reshape(-1))
