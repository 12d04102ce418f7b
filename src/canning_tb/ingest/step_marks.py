"""The training loop's own step boundaries (prof.step()), put beside a trace that has no ProfilerStep ranges.

torch records ProfilerStep#N ranges only under a schedule; without one (`with ps.Profile() as prof:`
and prof.step() in the loop) the trace has no steps, but the profile object kept the wall clock
(ns since the epoch) of every step() call, and the handler wrote them into the manifest
(`step_times_ns`). Kineto's events are on its own clock: wall = baseTimeNanoseconds + ts, so a
mark moves onto the trace's clock by subtracting baseTimeNanoseconds (checked on real runs against
the ProfilerStep ranges of scheduled windows: the marks sit within tens of µs, the profiler's own
step() call, outside the ranges). A trace without baseTimeNanoseconds gets no marks: a guessed
offset would put the steps' boundaries anywhere.
"""
from __future__ import annotations

from . import side_tables as side
from .table import EventTable

BASE_KEY = "baseTimeNanoseconds"


def trace_base_ns(table: EventTable) -> int | None:
    """Kineto's wall clock at its ts 0 (ns), None when the trace does not say."""
    try:
        base = int(table.meta.environment.get(BASE_KEY, ""))
    except ValueError:
        return None
    return base if base > 0 else None


def attach(table: EventTable, wall_marks) -> bool:
    """Put `wall_marks` ([[step, begin_ns, end_ns]], wall clock) into the table's `step_marks` side
    table on the trace's clock; False (nothing put) when there are none or the clocks cannot be tied."""
    base = trace_base_ns(table)
    marks = sorted((int(s), int(b), int(e)) for s, b, e in wall_marks or () if e >= b)
    if base is None or not marks:
        return False
    side.put(table.side, "step_marks", [side.row("step_marks", step=s, start_ns=b - base, end_ns=e - base)
                                        for s, b, e in marks])
    return True
