"""The input pipeline section (analysis/input_pipeline.py) on hand-made tables: each figure worked out by
hand in the docstrings (times in ns), so that a one-token change in its filters, its step edges, its
unions or its means shows (issue 46, mutation testing). The fixture test (test_numbers_input_pipeline.py)
has a multiprocessing loader and no pin_memory, no worker names, no unknown sizes."""
import numpy as np
import pytest
from _synthetic import ev, table

from canning_tb.analysis.input_pipeline import input_pipeline
from canning_tb.ingest.table import NONE
from canning_tb.ingest.table import Kind as K

SINGLE = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
MULTI = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
NUMS, STARTS, ENDS = np.array([1, 2, 3]), np.array([0, 100, 200]), np.array([100, 190, 300])


def _copy(name, ts, dur, size):
    return ev(name, K.MEMCPY, ts, dur, bytes=size)


def _events():
    """Steps 1 [0, 100), 2 [100, 190), 3 [200, 300) (a gap 190-200).
    next(): host calls 0-20, 10-30, 90-110 (CPU ops), 100-105 (an annotation); a kernel of that name at 250
    is not one. Step 1: union [0, 30) + [90, 100) = 40 ns, 3 calls (starts 0, 10, 90); step 2: [100, 110)
    = 10 ns, 1 call (the annotation starting at 100: a step's start is in it, its end not); step 3: 0.
    H2D copies (MEMCPY): 100-130 (1000 B), 120-140 (500 B): step 2 union [100, 140) = 40 ns, 2 calls,
    1500 B; 192-196 (9 B) lies in the gap, in no step; 294-304 (64 B, "h2d") gives step 3 its 6 ns to
    300, 1 call, 64 B. Not copies: a DtoH copy, a CPU op named "Memcpy HtoD".
    pin_memory (host): aten::pin_memory 200-230 and aten::_pin_memory 210-250: step 3 union [200, 250) =
    50 ns; aten::pin_memory_x and a kernel named aten::pin_memory are not."""
    return [ev(SINGLE, K.CPU_OP, 0, 20), ev(SINGLE, K.CPU_OP, 10, 20), ev(SINGLE, K.CPU_OP, 90, 20),
            ev(SINGLE, K.USER_ANNOTATION, 100, 5), ev(SINGLE, K.KERNEL, 250, 10),
            _copy("Memcpy HtoD (Pageable -> Device)", 100, 30, 1000), _copy("Memcpy HtoD", 120, 20, 500),
            _copy("Memcpy HtoD", 192, 4, 9), _copy("Memcpy h2d", 294, 10, 64),
            _copy("Memcpy DtoH (Device -> Pageable)", 150, 10, 7), ev("Memcpy HtoD", K.CPU_OP, 50, 10),
            ev("aten::pin_memory", K.CPU_OP, 200, 30), ev("aten::_pin_memory", K.CPU_OP, 210, 40),
            ev("aten::pin_memory_x", K.CPU_OP, 0, 60), ev("aten::pin_memory", K.KERNEL, 260, 30)]


def _steps(out):
    return [(s.step, s.step_ns, s.next_ns, s.next_calls, s.h2d_ns, s.h2d_calls, s.h2d_bytes, s.pin_ns)
            for s in out.steps]


def test_per_step_figures_by_hand():
    """Per step (see _events): (step, step_ns, next_ns, next_calls, h2d_ns, h2d_calls, h2d_bytes, pin_ns)."""
    out = input_pipeline(table(_events()), NUMS, STARTS, ENDS, np.array([True, True, True]))
    assert _steps(out) == [(1, 100, 40, 3, 0, 0, 0, 0), (2, 90, 10, 1, 40, 2, 1500, 0), (3, 100, 0, 0, 6, 1, 64, 50)]
    assert out.loader == "single process" and out.next_calls == 4
    assert out.workers == 0 and list(out.worker_names) == []  # the main process loads: no worker, known


def test_means_are_over_the_kept_steps():
    """Kept: steps 2 and 3. step 95 = (90 + 100) / 2; next 5 = (10 + 0) / 2, share 5 / 95; h2d 23 = (40 + 6) / 2;
    pin 25 = (0 + 50) / 2; bytes 782 = (1500 + 64) / 2."""
    out = input_pipeline(table(_events()), NUMS, STARTS, ENDS, np.array([False, True, True]))
    assert (out.step_ns, out.next_ns, out.h2d_ns, out.pin_ns, out.h2d_bytes) == (95, 5, 23, 25, 782)
    assert out.next_share == pytest.approx(5 / 95)


def test_no_kept_step_means_every_step():
    """None kept: all three. step 97 = round(290 / 3 = 96.7); next 17 = round(50 / 3 = 16.7); h2d 15 =
    round(46 / 3 = 15.3); pin 17 = round(50 / 3); bytes 521 = round(1564 / 3 = 521.3)."""
    out = input_pipeline(table(_events()), NUMS, STARTS, ENDS, np.array([False, False, False]))
    assert (out.step_ns, out.next_ns, out.h2d_ns, out.pin_ns, out.h2d_bytes) == (97, 17, 15, 17, 521)
    assert out.next_share == pytest.approx(17 / 97)


def test_one_copy_of_unknown_size_makes_every_steps_bytes_unknown():
    """The 500 B copy's size unknown (NONE): the bytes of every step are -1, step 1's (no copy) too, and the
    mean is -1; the times are as before."""
    events = [dict(e, bytes=NONE) if e.get("bytes") == 500 else e for e in _events()]
    out = input_pipeline(table(events), NUMS, STARTS, ENDS, np.array([True, True, True]))
    assert [s.h2d_bytes for s in out.steps] == [-1, -1, -1] and out.h2d_bytes == -1
    assert [s.h2d_ns for s in out.steps] == [0, 40, 6]


def test_without_loader_or_copies_next_is_unknown_and_bytes_zero():
    """Only a pin_memory op (0-30 in step 1): no DataLoader call, so loader "", next -1 (unknown, not 0), share
    -1, workers -1 (none named, the loader unknown); no copy: bytes 0 in every step and on average."""
    out = input_pipeline(table([ev("aten::pin_memory", K.CPU_OP, 0, 30)]), NUMS, STARTS, ENDS,
                         np.array([True, True, True]))
    assert (out.loader, out.next_calls, out.next_ns, out.next_share, out.workers) == ("", 0, -1, -1.0, -1)
    assert [s.h2d_bytes for s in out.steps] == [0, 0, 0] and out.h2d_bytes == 0
    assert [s.pin_ns for s in out.steps] == [30, 0, 0] and out.pin_ns == 10


def test_a_zero_step_leaves_the_share_unknown():
    """One step [50, 50): step_ns 0, next 0 (a next() call at 0-100 is outside it): the share of nothing is -1."""
    out = input_pipeline(table([ev(SINGLE, K.CPU_OP, 0, 100)]), np.array([7]), np.array([50]), np.array([50]),
                         np.array([True]))
    assert (out.step_ns, out.next_ns, out.next_share) == (0, 0, -1.0)
    assert _steps(out) == [(7, 0, 0, 0, 0, 0, 0, 0)]


def test_no_step_gives_zero_means():
    """No step at all: nothing to average: the means 0, next -1 (no DataLoader call), bytes -1 (no step to sum)."""
    out = input_pipeline(table([ev("x", K.CPU_OP, 0, 10)]), np.array([], np.int64), np.array([], np.int64),
                         np.array([], np.int64), np.array([], bool))
    assert (out.step_ns, out.next_ns, out.h2d_ns, out.pin_ns, out.h2d_bytes) == (0, -1, 0, 0, -1)
    assert len(out.steps) == 0


@pytest.mark.parametrize("names, loader, workers", [
    ([MULTI, SINGLE], "multiprocessing", -1),  # multiprocessing wins, whatever the order; no worker named
    ([SINGLE, SINGLE], "single process", 0),
    (["enumerate(DataPipe)#MyPipe", "DataLoader.__iter__"], "DataLoader", -1),  # neither iterator named
])
def test_the_loader_from_the_iterators_name(names, loader, workers):
    t = table([ev(n, K.CPU_OP, 10 * i, 5) for i, n in enumerate(names)])
    out = input_pipeline(t, np.array([1]), np.array([0]), np.array([100]), np.array([True]))
    assert (out.loader, out.workers, out.next_calls) == (loader, workers, len(names))


def test_the_workers_the_trace_names():
    """Thread and process names matching the loader's words (any case), once each, sorted (code points:
    upper case first); MainThread, python and an empty name are not workers. 4 names, workers 4, even with
    a multiprocessing loader."""
    t = table([ev(MULTI, K.CPU_OP, 0, 5)])
    t.meta.thread_names = {"1:1": "MainThread", "1:2": "pt_data_worker", "1:3": "pin_memory_thread",
                           "1:4": "pt_data_worker"}
    t.meta.process_names = {1: "python", 2: "DataLoader worker 0", 3: "", 4: "DATA_WORKER"}
    out = input_pipeline(t, np.array([1]), np.array([0]), np.array([100]), np.array([True]))
    assert list(out.worker_names) == ["DATA_WORKER", "DataLoader worker 0", "pin_memory_thread", "pt_data_worker"]
    assert out.workers == 4


def test_a_single_kept_step_is_its_own_mean():
    """Kept: step 2 only (see _events): its own figures, step 90, next 10, h2d 40, pin 0, 1500 B; share 10 / 90."""
    out = input_pipeline(table(_events()), NUMS, STARTS, ENDS, np.array([False, True, False]))
    assert (out.step_ns, out.next_ns, out.h2d_ns, out.pin_ns, out.h2d_bytes) == (90, 10, 40, 0, 1500)
    assert out.next_share == pytest.approx(10 / 90)


def test_a_loader_that_never_waits_in_the_kept_steps_has_a_share_of_zero():
    """Kept: step 3 only, where no next() call runs: the wait is known to be 0 (the trace has the loader's
    calls), so the share is 0.0, not unknown."""
    out = input_pipeline(table(_events()), NUMS, STARTS, ENDS, np.array([False, False, True]))
    assert (out.next_ns, out.step_ns, out.next_share) == (0, 100, 0.0)


def test_one_copy_of_known_size_gives_its_bytes():
    """One H2D copy, 10-15, 77 B, in the one step [0, 100): 77 B in the step and on average, 5 ns."""
    out = input_pipeline(table([_copy("Memcpy HtoD", 10, 5, 77)]), np.array([1]), np.array([0]), np.array([100]),
                         np.array([True]))
    assert _steps(out) == [(1, 100, 0, 0, 5, 1, 77, 0)] and out.h2d_bytes == 77


def test_a_one_ns_step_has_a_share():
    """One step [0, 1), a next() call 0-5 covering it: next 1 of a 1 ns step, share 1.0."""
    out = input_pipeline(table([ev(SINGLE, K.CPU_OP, 0, 5)]), np.array([1]), np.array([0]), np.array([1]),
                         np.array([True]))
    assert (out.next_ns, out.step_ns, out.next_share) == (1, 1, 1.0)
