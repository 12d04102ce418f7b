"""canning_tb.arrays.distinct is np.unique(a), value for value and dtype, on what the readers give it:
ids with many distinct values, few, negatives (NONE), floats with NaN, empty, 2-D."""
import numpy as np
import pytest

from canning_tb.arrays import distinct

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
