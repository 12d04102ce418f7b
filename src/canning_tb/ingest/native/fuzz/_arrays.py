"""Structured inputs for the array-taking targets, decoded from the fuzz bytes (atheris's
FuzzedDataProvider): int64 times on a scale from a few ticks (events nest) to the whole int64 range
(the extremes), and now and then one array a row short (the module must refuse it, never read past it)."""
import numpy as np

INT64 = (-(1 << 63), (1 << 63) - 1)


def times(fdp, n: int) -> list[int]:
    lim = fdp.PickValueInList([16, 1000, 1 << 40, None])
    lo, hi = INT64 if lim is None else (-lim, lim)
    return fdp.ConsumeIntListInRange(n, lo, hi)


def short(fdp, arrays: list) -> int:
    """Index of the array cut one row short (-1: none, most inputs)."""
    if fdp.ConsumeIntInRange(0, 15):
        return -1
    at = fdp.ConsumeIntInRange(0, len(arrays) - 1)
    arrays[at] = arrays[at][:-1] if len(arrays[at]) else np.zeros(1, arrays[at].dtype)
    return at
