"""kineto/stacks.py by hand (issue 46, mutation testing): which rows take a stack from their Python frames (host
ops and annotations without one; never a runtime call, a kernel or an op that has its own), on which thread
(its own, in its own process), and which way runs (CANNING_STACK_SWEEP=0: the Python loop); sweep_order's
edges (two rows out of time order, no rows, thread codes past int16)."""
from __future__ import annotations

import numpy as np
import pytest

from canning_tb.ingest.kineto import stacks
from canning_tb.ingest.table import EventTable, Kind, blank_events

F, OP, ANN, RT, K = Kind.PYTHON_FUNCTION, Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.RUNTIME, Kind.KERNEL


def _table(rows):
    """rows: (kind, name, pid, tid, ts, dur, own stack or None), in time order."""
    t = EventTable()
    ev = blank_events(len(rows))
    for i, (kind, name, pid, tid, ts, dur, stack) in enumerate(rows):
        ev["kind"][i], ev["name"][i], ev["pid"][i], ev["tid"][i] = kind, t.strings.id(name), pid, tid
        ev["ts"][i], ev["dur"][i], ev["stack"][i] = ts, dur, t.strings.id(stack)
    t.events = ev
    return t


ROWS = [  # pid 1 thread 1: a.py [0, 100] holds b.py [10, 60], which holds a built-in call [20, 40]
    (F, "a.py(1): f", 1, 1, 0, 100, None),
    (F, "b.py(2): g", 1, 1, 10, 50, None),
    (OP, "aten::mm", 1, 1, 15, 5, None),          # in b: "b;a"
    (F, "<built-in method len>", 1, 1, 20, 20, None),
    (ANN, "step", 1, 1, 25, 5, None),             # in the hidden call: still "b;a"
    (RT, "cudaLaunchKernel", 1, 1, 30, 2, None),  # a runtime call takes no stack
    (OP, "aten::add", 1, 1, 35, 1, "given"),      # its own stack stays
    (K, "kernel", 1, 1, 36, 1, None),             # device work takes none
    (OP, "aten::cat", 1, 1, 70, 5, None),         # b ended at 60: in a only
    (OP, "aten::t", 1, 2, 15, 5, None),           # thread 2 of pid 1: no frame of its own
    (F, "c.py(3): h", 2, 1, 12, 50, None),        # pid 2 thread 1
    (OP, "aten::sum", 2, 1, 16, 2, None),         # in c (not in pid 1's a or b)
]


def _stacks(t):
    return {t.strings[int(n)]: t.strings[int(s)] for n, s in zip(t.events["name"], t.events["stack"])}


@pytest.mark.parametrize("sweep", ["1", "0"])
def test_the_rows_that_take_a_stack_by_hand(monkeypatch, sweep):
    monkeypatch.setenv("CANNING_STACK_SWEEP", sweep)
    order = np.argsort([r[4] for r in ROWS], kind="stable")
    t = _table([ROWS[i] for i in order])
    stacks.fill_python_stacks(t)
    got = _stacks(t)
    assert got["aten::mm"] == "b.py(2): g;a.py(1): f" and got["step"] == "b.py(2): g;a.py(1): f"
    assert got["aten::cat"] == "a.py(1): f" and got["aten::sum"] == "c.py(3): h"
    assert got["aten::add"] == "given"
    assert got["cudaLaunchKernel"] is None and got["kernel"] is None and got["aten::t"] is None


def test_the_switch_picks_the_way(monkeypatch):
    """CANNING_STACK_SWEEP=0 runs the Python loop even where the C sweep is built; unset, the C sweep."""
    used = []
    monkeypatch.setattr(stacks, "_sweep_python", lambda *a, **k: used.append("python") or (_ for _ in ()).throw(
        RuntimeError("stop")))
    monkeypatch.setattr(stacks, "_sweep_compiled", lambda *a, **k: used.append("c") or (_ for _ in ()).throw(
        RuntimeError("stop")))
    for value, way in (("0", "python"), (None, "c" if stacks._compiled is not None else "python")):
        if value is None:
            monkeypatch.delenv("CANNING_STACK_SWEEP", raising=False)
        else:
            monkeypatch.setenv("CANNING_STACK_SWEEP", value)
        with pytest.raises(RuntimeError, match="stop"):
            stacks.fill_python_stacks(_table(ROWS[:3]))
        assert used[-1] == way, value


def _lexsort(pid, tid, ts, is_op, dur):
    return np.lexsort((-dur, is_op, ts, tid, pid)).tolist()


def test_sweep_order_edges():
    """Two rows out of time order are sorted (the fast path needs rows in time order); no rows give no order;
    32,769 threads (codes 0 to 32,768, past int16) keep their order: each thread's rows in time order, the
    threads as (pid, tid) order them."""
    two = (np.array([1, 1]), np.array([1, 1]), np.array([5, 3]), np.array([False, False]), np.array([1, 1]))
    assert stacks.sweep_order(*two).tolist() == [1, 0]
    empty = (np.zeros(0, np.int64),) * 3 + (np.zeros(0, bool), np.zeros(0, np.int64))
    assert stacks.sweep_order(*empty).tolist() == []
    n = 32_769
    tid = np.arange(n, dtype=np.int64)[::-1].copy()  # rows in time order, threads in reverse
    cols = (np.zeros(n, np.int64), tid, np.arange(n, dtype=np.int64), np.zeros(n, bool), np.ones(n, np.int64))
    assert stacks.sweep_order(*cols).tolist() == _lexsort(*cols) == list(range(n))[::-1]


@pytest.mark.parametrize("sweep", ["1", "0"])
def test_a_frame_of_another_thread_never_holds_an_op(monkeypatch, sweep):
    """Thread 1's frame A [0, 100] runs while thread 2's op w starts at 30: w, whose last frame before it in the
    sweep order is A (the first frame, index 0), is on another thread and takes no stack. Thread 2's own frame
    B [40, 60] holds x at 50; z at 70 comes after B and has none; y at 60 on thread 1 is in A."""
    monkeypatch.setenv("CANNING_STACK_SWEEP", sweep)
    t = _table([(F, "A", 1, 1, 0, 100, None), (OP, "w", 1, 2, 30, 1, None), (F, "B", 1, 2, 40, 20, None),
                (OP, "x", 1, 2, 50, 1, None), (OP, "y", 1, 1, 60, 1, None), (OP, "z", 1, 2, 70, 1, None)])
    stacks.fill_python_stacks(t)
    assert _stacks(t) == {"A": None, "w": None, "B": None, "x": "B", "y": "A", "z": None}
