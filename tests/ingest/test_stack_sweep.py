"""The Python frames' sweep (ingest/kineto/stacks.py) through _sweep.c against the Python loop it replaces
(kept as the fallback where no C compiler is found): a case worked out by hand, thousands of random frames
(threads, equal times, frames that overlap without nesting, hidden C calls, names holding ';'), and a real
torch.profiler run with with_stack read both ways. Where _kineto_sweep is not built, the case by hand checks
the Python loop alone; the comparisons skip."""
from __future__ import annotations

import random

import numpy as np
import pytest

from canning_tb.ingest.kineto import stacks
from canning_tb.ingest.table import NONE, EventTable


def _table(names: list[str]) -> EventTable:
    t = EventTable()
    for n in names:
        t.strings.id(n)
    return t


def _both(names, thread, start, end, name_ids):
    """(parents, stack texts, strings) of the C sweep (where it is built) and of the Python loop, each on
    its own table."""
    out = []
    for compiled in (True, False) if stacks._compiled is not None else (False,):
        t = _table(names)
        skip = np.array([n.startswith("<built-in") for n in names], bool)[name_ids]
        cols = (t, np.asarray(thread, np.int64), np.asarray(start, np.int64), np.asarray(end, np.int64),
                np.asarray(name_ids, np.int32), skip)
        parent, sid = stacks._sweep_compiled(*cols, np.ones(len(skip), bool)) if compiled else stacks._sweep_python(*cols)
        out.append((parent.tolist(), [None if s == NONE else t.strings[int(s)] for s in sid.tolist()],
                    list(t.strings.values), sid.tolist()))
    return out


@pytest.mark.compiled("_kineto_sweep")
def test_the_sweep_is_built():
    assert stacks._compiled is not None and stacks.compiled()


def test_a_stack_worked_out_by_hand():
    """Thread 0: A [0, 10] holds B [1, 5]; C [5, 8] starts where B ends, so B still encloses it (an end equal
    to a start encloses); the C call H [6, 7] inside C shows no frame of its own, and E [6.5, 7] inside it gets
    C's path; D [9, 12] pops C and B and sits in A. Thread 1: F [0, 3] starts a stack of its own."""
    names = ["A", "B", "C", "<built-in method H>", "E", "D", "F"]
    frames = [(0, 0, 10, 0), (0, 1, 5, 1), (0, 5, 8, 2), (0, 6, 7, 3), (0, 6, 7, 4), (0, 9, 12, 5), (1, 0, 3, 6)]
    thread, start, end, name_ids = (list(c) for c in zip(*frames))
    ways = _both(names, thread, start, end, name_ids)
    assert all(way == ways[-1] for way in ways)
    parent, texts, _, _ = ways[-1]
    assert parent == [-1, 0, 1, 2, 3, 0, -1]
    assert texts == ["A", "B;A", "C;B;A", "C;B;A", "E;C;B;A", "D;A", "F"]


def _random_frames(rng: random.Random, n: int):
    names = [f"f{k}.py({k}): g{k}" for k in range(12)] + ["<built-in method len>", "a;b", "a", ";b", "b"]
    frames = []
    for th in range(rng.randint(1, 4)):
        t = 0
        for _ in range(n):
            t += rng.choice([0, 0, 1, 2, 5])
            frames.append((th, t, t + rng.choice([0, 1, 2, 3, 8, 20, 50]), rng.randrange(len(names))))
    frames.sort(key=lambda f: (f[0], f[1], -(f[2] - f[1])))  # the order fill_python_stacks sorts frames into
    return names, [list(c) for c in zip(*frames)]


@pytest.mark.compiled("_kineto_sweep")
@pytest.mark.parametrize("seed", range(20))
def test_random_frames_sweep_as_the_python_loop(seed):
    rng = random.Random(seed)
    names, (thread, start, end, name_ids) = _random_frames(rng, rng.choice([1, 5, 300, 2000]))
    c, py = _both(names, thread, start, end, name_ids)
    assert c == py  # parents, texts, the strings table in the same order, the same ids


@pytest.mark.compiled("_kineto_sweep")
def test_no_frames():
    t = _table(["x"])
    parent, sid = stacks._sweep_compiled(t, *(np.zeros(0, d) for d in (np.int64, np.int64, np.int64, np.int32)),
                                         np.zeros(0, bool), np.zeros(0, bool))
    assert parent.tolist() == [] and sid.tolist() == []


@pytest.mark.compiled("_kineto_sweep")
def test_arrays_of_other_lengths_are_refused():
    from canning_tb.ingest.native import _kineto_sweep as _sweep
    one, two, flag = np.zeros(1, np.int64), np.zeros(2, np.int64), np.zeros(1, np.uint8)
    for bad in ((one, one, two, np.zeros(1, np.int32), flag, flag), (two, one, one, np.zeros(1, np.int32), flag, flag),
                (one, two, one, np.zeros(1, np.int32), flag, flag), (one, one, one, np.zeros(1, np.int64), flag, flag),
                (one, one, one, np.zeros(1, np.int32), np.zeros(2, np.uint8), flag),
                (one, one, one, np.zeros(1, np.int32), flag, np.zeros(2, np.uint8))):
        with pytest.raises(ValueError, match="one item per row"):
            _sweep.sweep(*bad)


def _random_table(rng: random.Random, n: int) -> EventTable:
    """Frames and ops (some with a stack of their own, some annotations, some kernels that take none) on a few
    threads of two processes, with the ties and overlaps of _random_frames."""
    from canning_tb.ingest.table import Kind, blank_events
    names, (thread, start, end, name_ids) = _random_frames(rng, n)
    t = _table(names + ["op", "given;stack"])
    ev = blank_events(len(thread))
    kinds = [Kind.PYTHON_FUNCTION] * 3 + [Kind.CPU_OP] * 2 + [Kind.USER_ANNOTATION, Kind.KERNEL]
    ev["kind"][:] = [rng.choice(kinds) for _ in thread]
    ev["pid"][:] = [th % 2 for th in thread]
    ev["tid"][:] = [th // 2 for th in thread]
    ev["ts"][:], ev["dur"][:] = start, np.subtract(end, start)
    frame = ev["kind"] == Kind.PYTHON_FUNCTION
    ev["name"][:] = np.where(frame, name_ids, len(names))
    ev["stack"][:] = [len(names) + 1 if not f and rng.random() < 0.1 else NONE for f in frame.tolist()]
    order = np.argsort(ev["ts"], kind="stable")  # the table's rows are in time order
    t.events = {k: v[order] for k, v in ev.items()}
    return t


@pytest.mark.compiled("_kineto_sweep")
@pytest.mark.parametrize("seed, n", [(seed, n) for seed in range(4) for n in (3, 40, 1500)])
def test_random_tables_get_the_stacks_the_python_path_gives(seed, n, monkeypatch):
    """fill_python_stacks whole: the ops ride in _sweep.c's pass, or walk up the Python loop's parents."""
    got = []
    for on in ("1", "0"):
        monkeypatch.setenv("CANNING_STACK_SWEEP", on)
        t = _random_table(random.Random(seed), n)
        stacks.fill_python_stacks(t)
        got.append(([None if s == NONE else t.strings[int(s)] for s in t.events["stack"].tolist()],
                    list(t.strings.values)))
    assert got[0] == got[1]
    if n > 3:  # some ops got a stack of several frames from the sweep, not only their own
        assert any(s is not None and s != "given;stack" and s.count(";") >= 2 for s in got[0][0])


@pytest.mark.compiled("_kineto_sweep")
def test_a_real_with_stack_trace_reads_the_same_both_ways(fresh_trace, monkeypatch):  # (conftest.py)
    from canning_tb.ingest.kineto.read import read_kineto
    tables = []
    for on in ("1", "0"):
        monkeypatch.setenv("CANNING_STACK_SWEEP", on)
        assert stacks.compiled() == (on == "1")
        tables.append(read_kineto(fresh_trace))
    c, py = tables
    assert c.strings.values == py.strings.values
    for k in c.events:
        assert np.array_equal(c.events[k], py.events[k]), k
    filled = (c.events["stack"] != NONE).sum()
    assert filled > 50  # the ops got their stacks from the frames


@pytest.mark.compiled("_kineto_sweep")
@pytest.mark.parametrize("seed", range(6))
def test_the_sweep_order_is_numpys_lexsort(seed):
    """stacks.sweep_order against np.lexsort((-dur, is_op, ts, tid, pid)) (the order it replaces), on rows with
    many ties (equal times, equal durations, threads of two processes, big OS thread ids, durations near 2**62)."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice([0, 1, 7, 5000]))
    pid = rng.choice([1, 2, 4_000_000], n)
    tid = rng.choice([3, 2**40, 7], n)
    ts = np.cumsum(rng.choice([0, 0, 1, 5], n)) + 1_700_000_000_000_000_000
    dur = rng.choice([0, 1, 2, 10, (1 << 62) - 1], n)
    is_op = rng.random(n) < 0.4
    want = np.lexsort((-dur, is_op, ts, tid, pid))
    assert stacks.sweep_order(pid, tid, ts, is_op, dur).tolist() == want.tolist()
    shuffled = rng.permutation(ts)  # rows out of time order: the plain lexsort
    assert stacks.sweep_order(pid, tid, shuffled, is_op, dur).tolist() == \
        np.lexsort((-dur, is_op, shuffled, tid, pid)).tolist()
    many = rng.integers(0, 40_000, n)  # more threads than an int16 code holds
    assert stacks.sweep_order(pid, many, ts, is_op, dur).tolist() == np.lexsort((-dur, is_op, ts, many, pid)).tolist()
