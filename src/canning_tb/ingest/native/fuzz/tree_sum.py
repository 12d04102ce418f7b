"""Fuzz target: _tree.sum_up, the sums up the tree, on a tree decoded from the fuzz bytes: a float64 or
int64 column (int64's extremes included: sums that pass them wrap, as np.add.at's do), parents, the nodes by
depth and the level bounds, mostly valid and now and then not (an index out of range, bounds that fall, a
row short, an unknown kind: each must be refused). A valid input must give the additions of the C file's
comment, in its order (reference below: the floats bit for bit)."""
import sys

import atheris
import numpy as np

from _arrays import INT64, short
from _load import module

tree = module("tree")


def valid(column, parent, by_depth, bounds, kind) -> bool:
    n = len(parent)
    return (kind in "dq" and column.nbytes == parent.nbytes and len(by_depth) == n and len(bounds) >= 1
            and all(-1 <= x < n for x in parent.tolist() + by_depth.tolist())
            and all(0 <= b <= n for b in bounds.tolist()) and (np.diff(bounds) >= 0).all())


def reference(column, parent, by_depth, bounds) -> list:
    """The additions, deepest level first, in by_depth's order; ints wrap at 64 bits."""
    out, wrap = column.tolist(), column.dtype.kind == "i"
    b = bounds.tolist()
    for level in range(len(b) - 2, 0, -1):
        for k in range(b[level], b[level + 1]):
            node = int(by_depth[k])
            up = int(parent[node]) if node >= 0 else -1
            if up >= 0:
                out[up] += out[node]
                if wrap:
                    out[up] = (out[up] + (1 << 63)) % (1 << 64) - (1 << 63)
    return out


def TestOneInput(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    n = fdp.ConsumeIntInRange(0, 200)
    kind = fdp.PickValueInList(["d", "q", "d", "q", "x"])
    if kind == "d" or (kind == "x" and fdp.ConsumeBool()):
        column = np.array([fdp.ConsumeRegularFloat() if fdp.ConsumeBool() else fdp.ConsumeFloat() for _ in range(n)],
                          np.float64)
    else:
        column = np.array(fdp.ConsumeIntListInRange(n, *(INT64 if fdp.ConsumeBool() else (-100, 100))), np.int64)
    bad = not fdp.ConsumeIntInRange(0, 7)  # now and then an index anywhere
    lo, hi = (-3, n + 2) if bad else (-1, n - 1)
    parent = np.array(fdp.ConsumeIntListInRange(n, lo, hi), np.int64)
    by_depth = np.array(fdp.ConsumeIntListInRange(n, lo, hi) if bad or fdp.ConsumeBool()
                        else np.random.default_rng(fdp.ConsumeIntInRange(0, (1 << 32) - 1)).permutation(n), np.int64)
    bounds = np.array(sorted(fdp.ConsumeIntListInRange(fdp.ConsumeIntInRange(0, 12), 0, n)), np.int64)
    if bad and fdp.ConsumeBool():
        bounds = bounds[::-1].copy()
    arrays = [column, parent, by_depth, bounds]
    short(fdp, arrays)
    column, parent, by_depth, bounds = arrays
    ok = valid(column, parent, by_depth, bounds, kind)
    want = reference(column, parent, by_depth, bounds) if ok else None
    try:
        tree.sum_up(column, parent, by_depth, bounds, kind)
    except ValueError:
        assert not ok, "a valid tree was refused"
        return
    assert ok, "an invalid tree was taken"
    got = column.tolist()
    assert np.array_equal(np.array(got, column.dtype), np.array(want, column.dtype), equal_nan=True), (got, want)


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
