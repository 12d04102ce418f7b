"""Fuzz target: _kineto_sweep.sweep, the Python frames' sweep, on rows decoded from the fuzz bytes: up to 4
threads, times from a few ticks to int64's extremes, int32 names, hidden and frame flags; half the inputs
sorted as stacks.py sorts them, half in any order. The answer must equal a plain Python sweep written from
the C file's comment (reference below); a row short in one array must be refused."""
import sys

import atheris
import numpy as np

from _arrays import short, times
from _load import module

sweeper = module("kineto_sweep")


def reference(th, st, en, nm, hid, fr):
    parent, path, pairs, index, stack = [], [], [], {}, []
    for i in range(len(th)):
        if i == 0 or th[i] != th[i - 1]:
            stack = []
        while stack and stack[-1][0] < st[i]:  # an end equal to the start still encloses it
            stack.pop()
        up = stack[-1][2] if stack else -1
        parent.append(stack[-1][1] if stack else -1)
        if not fr[i]:
            path.append(up)
            continue
        own = up
        if not hid[i]:
            if (nm[i], up) not in index:
                index[nm[i], up] = len(index)
                pairs += [nm[i], up]
            own = index[nm[i], up]
        path.append(own)
        stack.append((en[i], i, own))
    return parent, path, pairs


def TestOneInput(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    n = fdp.ConsumeIntInRange(0, 300)
    th = fdp.ConsumeIntListInRange(n, 0, fdp.ConsumeIntInRange(0, 3))
    st, en = times(fdp, n), times(fdp, n)
    nm = fdp.ConsumeIntListInRange(n, *((0, 7) if fdp.ConsumeBool() else (-(1 << 31), (1 << 31) - 1)))
    hid, fr = fdp.ConsumeIntListInRange(n, 0, 255), fdp.ConsumeIntListInRange(n, 0, 3)
    rows = list(zip(th, st, en, nm, hid, fr))
    if fdp.ConsumeBool():  # stacks.sweep_order: thread, start, frames before ops, outer first
        rows.sort(key=lambda r: (r[0], r[1], not r[5], -r[2]))
    cols = [list(c) for c in zip(*rows)] or [[]] * 6
    arrays = [np.array(c, t) for c, t in zip(cols, (np.int64, np.int64, np.int64, np.int32, np.uint8, np.uint8))]
    if short(fdp, arrays) >= 0:
        try:
            sweeper.sweep(*arrays)
        except ValueError:
            return
        raise AssertionError("a row short in one array was not refused")
    parent, path, pairs = sweeper.sweep(*arrays)
    want = reference(*cols)
    got = [np.frombuffer(b, np.int64).tolist() for b in (parent, path, pairs)]
    assert got == list(want), (got, want)


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
