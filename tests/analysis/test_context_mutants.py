"""The kernel -> launching operator attribution of analysis/context.py (Context.device_owner, through
_launches and _inside) on hand-made tables: each expected owner worked out by hand in the docstring
(times in ns), so that a one-token change in the time or thread checks shows (issue 46, mutation testing)."""
from _synthetic import ev, table

from canning_tb.analysis.context import Context
from canning_tb.ingest.table import NONE
from canning_tb.ingest.table import Kind as K


def _owners(t):
    """Per device row (time order): (name, ts) of the host event it is attributed to, or None."""
    c = Context(t)
    names, e = t.strings.values, t.events
    rows = c.host.rows
    return [None if o == NONE else (names[e["name"][rows[o]]], int(e["ts"][rows[o]])) for o in c.device_owner]


def _launch(ts, corr, ext=-1, dur=10, **kw):
    return ev("cudaLaunchKernel", K.RUNTIME, ts, dur, correlation=corr, external_id=ext, **kw)


def _kernel(ts, corr, ext=-1):
    return ev("k", K.KERNEL, ts, 5, correlation=corr, external_id=ext)


def test_launch_at_the_ops_last_instant_keeps_the_id_owner():
    """opA 0-100 (ext 1), opB 100-300 (ext 2) > launch at 100 (corr 7, ext 1). The kernel's id names opA;
    the launch starts at 100 = opA's ts + dur, the last instant _inside counts (start <= end), so opA stays,
    not opB, the op that encloses the launch."""
    t = table([ev("opA", K.CPU_OP, 0, 100, external_id=1), ev("opB", K.CPU_OP, 100, 200, external_id=2),
               _launch(100, 7, 1), _kernel(500, 7, 1)])
    assert _owners(t) == [("opA", 0)]


def test_launch_at_the_ops_first_instant_keeps_the_id_owner():
    """opA 0-200 (ext 1) > opC 0-150 (ext 2) > launch 0-10 (corr 7). The kernel's id names opA; the launch
    starts at 0 = opA's ts (ts <= start), inside: opA, not opC (the innermost op around the launch)."""
    t = table([ev("opA", K.CPU_OP, 0, 200, external_id=1), ev("opC", K.CPU_OP, 0, 150, external_id=2),
               _launch(0, 7, 1), _kernel(500, 7, 1)])
    assert _owners(t) == [("opA", 0)]


def test_launch_before_or_after_the_id_owner_goes_to_the_enclosing_op():
    """opB 0-100 (ext 2) > launch 90-95 (corr 7); opA 100-200 (ext 1); opD 201-300 (ext 3) > launch 201-211
    (corr 8). Both kernels carry id 1 (opA): the first launch starts at 90 < 100, the second at 201 > 200,
    neither inside opA, so each goes to its enclosing op: opB, opD."""
    t = table([ev("opB", K.CPU_OP, 0, 100, external_id=2), _launch(90, 7, 1, dur=5),
               ev("opA", K.CPU_OP, 100, 100, external_id=1),
               ev("opD", K.CPU_OP, 201, 99, external_id=3), _launch(201, 8, 1),
               _kernel(500, 7, 1), _kernel(600, 8, 1)])
    assert _owners(t) == [("opB", 0), ("opD", 201)]


def test_launch_on_another_thread_or_process_goes_to_the_enclosing_op():
    """opA 0-100 (ext 1, pid 1 tid 1); opT 0-100 (ext 2, tid 2) > launch 10-20 (tid 2, corr 7);
    opP 0-100 (ext 3, pid 2) > launch 10-20 (pid 2, corr 8). Both kernels carry id 1 (opA) and their
    launches lie inside opA's time, but on another thread / process: each goes to its enclosing op."""
    t = table([ev("opA", K.CPU_OP, 0, 100, external_id=1),
               ev("opT", K.CPU_OP, 0, 100, external_id=2, tid=2), _launch(10, 7, 1, tid=2),
               ev("opP", K.CPU_OP, 0, 100, external_id=3, pid=2), _launch(10, 8, 1, pid=2),
               _kernel(500, 7, 1), _kernel(600, 8, 1)])
    assert _owners(t) == [("opT", 0), ("opP", 0)]


def test_launch_inside_a_runtime_call_has_no_op():
    """aclrtOuter 0-50 (runtime, host position 0) > opX 1-3 (position 1) and launch 5-10 (corr 7, position
    2). The kernel carries no id, so the op enclosing its launch decides: the launch's parent is a runtime
    call (CANN API layers), not an op, so no owner. (opX at position 1 makes a read of the wrong position,
    hk[1] instead of hk[0], see an op.)"""
    t = table([ev("aclrtOuter", K.RUNTIME, 0, 50), ev("opX", K.CPU_OP, 1, 2), _launch(5, 7, dur=5),
               _kernel(500, 7)])
    assert _owners(t) == [None]


def test_launch_without_id_goes_to_the_innermost_enclosing_op():
    """opA 0-100 > opB 10-60 > launch 20-30 (corr 7); a second launch 70-80 (corr 8) in opA only; a third,
    80-90 (corr 9), whose kernel finds no launch (its corr 99 matches none). Kernels carry no id:
    opB, opA, none."""
    t = table([ev("opA", K.CPU_OP, 0, 100), ev("opB", K.CPU_OP, 10, 50), _launch(20, 7), _launch(70, 8),
               _launch(80, 9), _kernel(500, 7), _kernel(600, 8), _kernel(700, 99)])
    assert _owners(t) == [("opB", 10), ("opA", 0), None]


def test_only_a_runtime_call_is_a_launch():
    """opA 0-100 > opB 10-60 (carrying correlation 7, as no reader writes for an op, but a mislabelled trace
    may); no runtime call has correlation 7. The kernel (corr 7, no id) finds no launch, so no owner:
    opB is not taken for its launch (which would make opA, opB's parent, the owner)."""
    t = table([ev("opA", K.CPU_OP, 0, 100), ev("opB", K.CPU_OP, 10, 50, correlation=7), _kernel(500, 7)])
    assert _owners(t) == [None]
