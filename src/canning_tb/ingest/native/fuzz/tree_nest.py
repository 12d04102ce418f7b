"""Fuzz target: _tree.nest_sorted, the events' nesting, on events decoded from the fuzz bytes: starts
ascending (as common._nest_sorted gives them) or in any order, ends anywhere from a few ticks to int64's
extremes, the outputs now and then the very arrays of the inputs. With ascending starts the answer must be
the one the C file's comment defines (checked here with numpy); in any case every depth is in [0, i] and
every parent an earlier row or -1. Buffers of different lengths must be refused."""
import sys

import atheris
import numpy as np

from _arrays import short, times
from _load import module

tree = module("tree")


def expected(start: np.ndarray, end: np.ndarray):
    """depth[i] = #{j < i: end[j] > start[i]}; parent[i] = the last j < i of depth depth[i] - 1 if end[j] >= end[i]."""
    n = len(start)
    earlier = np.tri(n, k=-1, dtype=bool)  # [i, j]: j < i
    depth = ((end[None, :] > start[:, None]) & earlier).sum(axis=1)
    parent, last = [], {}
    for i, d in enumerate(depth.tolist()):
        up = last.get(d - 1, -1) if d > 0 else -1
        parent.append(up if up >= 0 and end[up] >= end[i] else -1)
        last[d] = i
    return depth.tolist(), parent


def TestOneInput(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    n = fdp.ConsumeIntInRange(0, 200)
    start, end = np.array(times(fdp, n), np.int64), np.array(times(fdp, n), np.int64)
    ascending = fdp.ConsumeBool()
    if ascending:
        start.sort()
    if fdp.ConsumeBool():  # most ends after their start, as events have them
        end = start + np.abs(end) % 50
    shape = fdp.ConsumeIntInRange(0, 7)
    depth, parent = np.full(n, -7, np.int64), np.full(n, -7, np.int64)
    arrays = [start, end, depth, parent]
    if short(fdp, arrays) >= 0:
        try:
            tree.nest_sorted(*arrays)
        except ValueError:
            return
        raise AssertionError("buffers of different lengths were not refused")
    if shape == 0:  # the outputs written over an input: memory-safe still, no answer to check
        tree.nest_sorted(start.copy(), end, end, parent)
        return
    kept = start.copy(), end.copy()
    tree.nest_sorted(start, end, depth, parent)
    assert (start == kept[0]).all() and (end == kept[1]).all(), "an input changed"
    at = np.arange(n)
    assert ((depth >= 0) & (depth <= at)).all() and ((parent >= -1) & (parent < at)).all(), (depth, parent)
    if ascending:
        want = expected(start, end)
        assert (depth.tolist(), parent.tolist()) == want, ((depth, parent), want)


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
