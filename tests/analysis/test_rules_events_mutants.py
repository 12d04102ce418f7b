"""The rules' readers of the window's events (analysis/rules/events.py), each called on events placed here by hand
(issue 46, docs/mutants.md "What was run on rules/events.py, attention_backward.py and cann.py": before it only
whole-window digests reached them, and a mutation run left what each returns unread). Every expected value is worked
out in the docstring or a comment from the times written in the test (ns); rows are checked by their start times, read
from the table, not by positions the code under test chose.
"""
import re

import numpy as np

from _synthetic import ev, table

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.context import Context
from canning_tb.analysis.rules import events
from canning_tb.analysis.rules.engine import RuleInput
from canning_tb.ingest.table import Kind as K


def with_events(evs, start=0, end=5000, steps=((1, 0, 1000),), kept=None):
    """A RuleInput over the events, its digest made by hand: the window [start, end) and the steps
    (number, start, duration), the average over `kept` (all of them when None)."""
    d = pb.Digest()
    d.window.start_ns, d.window.end_ns = start, end
    for n, s, dur in steps:
        d.steps.add(number=n, start_ns=s, dur_ns=dur)
    d.average_steps.extend(kept if kept is not None else [n for n, _, _ in steps])
    return RuleInput(d, Context(table(evs)))


def starts(inp, rows) -> list:
    return inp.ctx.table.events["ts"][rows].tolist()


def pairs(iset) -> list:
    return [(int(a), int(b)) for a, b in zip(*iset)]


NONZERO = [
    ev("aten::nonzero", K.CPU_OP, 0, 100),
    ev("aten::nonzero", K.CPU_OP, 200, 50),
    ev("my_nonzero_wrapper", K.USER_ANNOTATION, 300, 30),
    ev("nonzero_kernel", K.KERNEL, 400, 70),  # on the device: not a host event
    ev("aten::add", K.CPU_OP, 500, 10),
]


def test_host_ranges_counts_and_sums_the_named_host_events():
    """`nonzero` anywhere in the name, on the host: aten::nonzero twice (100 + 50 ns), the annotation once (30 ns);
    the kernel of that name is on the device and aten::add does not match."""
    got = events.host_ranges(with_events(NONZERO), re.compile("nonzero"))
    assert got == {"aten::nonzero": (2, 150), "my_nonzero_wrapper": (1, 30)}


def test_host_ranges_without_events_reads_the_digests_operators():
    d = pb.Digest()
    d.ops_by_name.add(name="aten::nonzero", calls=3, host_total_ns=900)
    d.ops_by_name.add(name="x_nonzero_y", calls=1, host_total_ns=5)
    d.ops_by_name.add(name="aten::add", calls=7, host_total_ns=70)
    assert events.host_ranges(RuleInput(d), re.compile("nonzero")) == {"aten::nonzero": (3, 900), "x_nonzero_y": (1, 5)}


def test_host_rows_are_the_named_host_events_and_none_without_events():
    inp = with_events(NONZERO)
    assert starts(inp, events.host_rows(inp, re.compile("nonzero"))) == [0, 200, 300]
    empty = events.host_rows(RuleInput(pb.Digest()), re.compile("nonzero"))
    assert (len(empty), empty.dtype) == (0, np.int64)  # an index array: float would not index


def test_rows_set_merges_nested_and_parallel_ranges():
    """0-100 with 10-20 inside it, 200-300 on thread 1 and 250-400 on thread 2: [0, 100] and [200, 400]."""
    inp = with_events([ev("a", K.CPU_OP, 0, 100), ev("a", K.CPU_OP, 10, 10), ev("a", K.CPU_OP, 200, 100),
                       ev("a", K.CPU_OP, 250, 150, tid=2)])
    assert pairs(events.rows_set(inp, events.host_rows(inp, re.compile("^a$")))) == [(0, 100), (200, 400)]
    assert events.rows_set(RuleInput(pb.Digest()), np.zeros(0, np.int64)) is None


def test_longest_shows_the_longest_row():
    """Durations 30, 80, 50: the one of 80 ns at 100, named b."""
    inp = with_events([ev("a", K.CPU_OP, 0, 30), ev("b", K.CPU_OP, 100, 80), ev("c", K.CPU_OP, 300, 50)])
    rows = events.host_rows(inp, re.compile("^[abc]$"))
    e = events.longest(inp, rows)
    assert (e.view, e.row, e.label, e.timeline_name, e.ts_ns, e.dur_ns, e.rank) == (
        "timeline", "b", "the longest b", "b", 100, 80, -1)
    e = events.longest(inp, rows, view="operators", row="R", label="L", rank=3)
    assert (e.view, e.row, e.label, e.timeline_name, e.ts_ns, e.dur_ns, e.rank) == ("operators", "R", "L", "b", 100,
                                                                                    80, 3)
    assert events.longest(inp, rows[:0]) is None
    assert events.longest(RuleInput(pb.Digest()), rows) is None


def test_longest_of_an_event_without_a_name_names_nothing():
    inp = with_events([ev(None, K.CPU_OP, 0, 30)])
    e = events.longest(inp, np.array([0]))
    assert (e.row, e.label, e.timeline_name, e.ts_ns, e.dur_ns) == ("", "the longest ", "", 0, 30)


def test_sync_calls_by_call_and_innermost_operator():
    """cudaStreamSynchronize under aten::item twice (40 + 20 ns; the annotation between them is no operator), once
    under aten::_local_scalar_dense inside aten::item (30 ns: the innermost operator), cudaDeviceSynchronize (70 ns)
    and cudaEventSynchronize (30 ns) under no operator (named as themselves). Most time first, then by name:
    70, 60, then the two of 30 ns, cudaEvent... before cudaStream..."""
    inp = with_events([
        ev("aten::item", K.CPU_OP, 0, 100), ev("inner", K.USER_ANNOTATION, 10, 80),
        ev("cudaStreamSynchronize", K.RUNTIME, 20, 40),
        ev("aten::item", K.CPU_OP, 200, 100), ev("aten::_local_scalar_dense", K.CPU_OP, 210, 80),
        ev("cudaStreamSynchronize", K.RUNTIME, 220, 30),
        ev("cudaDeviceSynchronize", K.RUNTIME, 400, 70),
        ev("aten::item", K.CPU_OP, 500, 100), ev("cudaStreamSynchronize", K.RUNTIME, 510, 20),
        ev("cudaEventSynchronize", K.RUNTIME, 700, 30),
        ev("cudaLaunchKernel", K.RUNTIME, 800, 90),  # launches do not block
    ])
    assert events.sync_calls(inp) == [
        {"name": "cudaDeviceSynchronize", "op": "cudaDeviceSynchronize", "calls": 1, "ns": 70},
        {"name": "cudaStreamSynchronize", "op": "aten::item", "calls": 2, "ns": 60},
        {"name": "cudaEventSynchronize", "op": "cudaEventSynchronize", "calls": 1, "ns": 30},
        {"name": "cudaStreamSynchronize", "op": "aten::_local_scalar_dense", "calls": 1, "ns": 30}]


def test_sync_calls_outside_the_host_nesting_or_under_a_nameless_operator_are_named_as_themselves():
    """A cudaStreamSynchronize under an operator without a name (10-30, 20 ns: that operator names nothing) and one
    recorded with a device (200-240, 40 ns: not among the host events, so under no operator) are both keyed by the
    call alone: 2 calls, 60 ns. The one under aten::item (310-330, 20 ns; the last host event, so a lookup of position
    -1 would find aten::item) stays apart."""
    inp = with_events([ev(None, K.CPU_OP, 0, 100), ev("cudaStreamSynchronize", K.RUNTIME, 10, 20),
                       ev("cudaStreamSynchronize", K.RUNTIME, 200, 40, device=0),
                       ev("aten::item", K.CPU_OP, 300, 100), ev("cudaStreamSynchronize", K.RUNTIME, 310, 20)])
    assert events.sync_calls(inp) == [
        {"name": "cudaStreamSynchronize", "op": "cudaStreamSynchronize", "calls": 2, "ns": 60},
        {"name": "cudaStreamSynchronize", "op": "aten::item", "calls": 1, "ns": 20}]


def _sync_digest(*names) -> pb.Digest:
    d = pb.Digest()
    figures = {"aten::item": (4, 400), "aten::_local_scalar_dense": (4, 350), "aten::nonzero": (2, 500),
               "aten::add": (9, 900)}
    for n in names:
        d.ops_by_name.add(name=n, calls=figures[n][0], host_total_ns=figures[n][1])
    return d


def test_sync_calls_without_blocking_calls_are_the_operators_that_return_a_value():
    """No runtime wait among the events (or no events): the digest's SYNC_OPS rows, most time first;
    aten::_local_scalar_dense only where aten::item, which calls it, is not there; aten::add is none."""
    d = _sync_digest("aten::item", "aten::_local_scalar_dense", "aten::nonzero", "aten::add")
    want = [{"name": "aten::nonzero", "op": "aten::nonzero", "calls": 2, "ns": 500},
            {"name": "aten::item", "op": "aten::item", "calls": 4, "ns": 400}]
    assert events.sync_calls(RuleInput(d)) == want
    inp = with_events([ev("aten::item", K.CPU_OP, 0, 100), ev("cudaLaunchKernel", K.RUNTIME, 10, 5)])
    inp.digest.CopyFrom(d)
    assert events.sync_calls(inp) == want
    alone = events.sync_calls(RuleInput(_sync_digest("aten::_local_scalar_dense")))
    assert alone == [{"name": "aten::_local_scalar_dense", "op": "aten::_local_scalar_dense", "calls": 4, "ns": 350}]


def test_event_mix_counts_events_python_and_shapes():
    """5 events: 2 Python functions, 1 operator with shapes."""
    inp = with_events([ev("f", K.PYTHON_FUNCTION, 0, 10), ev("g", K.PYTHON_FUNCTION, 20, 10),
                       ev("aten::mm", K.CPU_OP, 40, 10, shapes="[[2, 3], [3, 4]]"), ev("aten::add", K.CPU_OP, 60, 10),
                       ev("gemm", K.KERNEL, 80, 10)])
    assert events.event_mix(inp) == {"events": 5, "python_function": 2, "with_shapes": 1}
    assert events.event_mix(RuleInput(pb.Digest())) == {"events": 0, "python_function": 0, "with_shapes": 0}


def test_top_level_ops_per_thread_in_call_order():
    """Thread 2: aten::linear (0-100) with aten::addmm inside it (an operator under an operator: not top level)
    launching a 40 ns kernel, so linear's device total is 40. Thread 1: aten::relu (60-80) and aten::mul (100-150)
    under an annotation (not an operator: they stay top level), a runtime call (no operator), aten::add (600-700).
    Thread 1 first (ascending tid), each in call order: host durations 20, 50, 100, no device time."""
    inp = with_events([
        ev("aten::linear", K.CPU_OP, 0, 100, tid=2), ev("aten::addmm", K.CPU_OP, 10, 80, tid=2, external_id=1),
        ev("gemm", K.KERNEL, 30, 40, external_id=1),
        ev("## fwd ##", K.USER_ANNOTATION, 50, 450), ev("aten::relu", K.CPU_OP, 60, 20),
        ev("aten::mul", K.CPU_OP, 100, 50), ev("cudaLaunchKernel", K.RUNTIME, 200, 10),
        ev("aten::add", K.CPU_OP, 600, 100)])
    strings = inp.ctx.table.strings
    got = [([strings[int(i)] for i in names], host.tolist(), dev.tolist())
           for names, host, dev in events.top_level_ops(inp)]
    assert got == [(["aten::relu", "aten::mul", "aten::add"], [20, 50, 100], [0, 0, 0]),
                   (["aten::linear"], [100], [40])]
    assert events.top_level_ops(RuleInput(pb.Digest())) == []
    assert events.top_level_positions(RuleInput(pb.Digest())) == []
    assert events.top_level_positions(with_events([ev("## a ##", K.USER_ANNOTATION, 0, 10)])) == []


def test_capture_ranges_from_each_begin_to_its_threads_last_end():
    """Begin A (thread 1, at 100): its thread's ends from 100 up to the next begin (1000): 300-310 and the
    instantiation 320-350, so 100-350 (the end at 50 is before it, the one at 400 on thread 2). Begin B (thread 1,
    1000): the end starting at 1000 itself (1000-1200); the one at 2000 starts at the next begin, not B's. Begin C
    (thread 2, 2000): no end after it on its thread: to the window's end, 5000."""
    inp = with_events([
        ev("cudaStreamEndCapture", K.RUNTIME, 50, 5), ev("cudaStreamBeginCapture", K.RUNTIME, 100, 5),
        ev("cudaStreamEndCapture", K.RUNTIME, 300, 10), ev("cudaGraphInstantiate", K.RUNTIME, 320, 30),
        ev("cudaStreamEndCapture", K.RUNTIME, 400, 10, tid=2),
        ev("hipStreamBeginCapture", K.RUNTIME, 1000, 5), ev("hipStreamEndCapture", K.RUNTIME, 1000, 200),
        ev("cudaStreamBeginCapture", K.RUNTIME, 2000, 5, tid=2), ev("cudaStreamEndCapture", K.RUNTIME, 2000, 100),
    ], end=5000)
    assert pairs(events.capture_ranges(inp)) == [(100, 350), (1000, 1200), (2000, 5000)]
    assert events.capture_ranges(with_events([ev("cudaStreamEndCapture", K.RUNTIME, 0, 5)])) is None


def test_startup_ranges_at_five_percent_of_the_window_inside_it():
    """A 1000 ns window: cudaGetDeviceCount 0-30 and cudaSetDevice 20-50 overlap, 50 ns = exactly 5 % (at least
    MIN_GAIN_SHARE): the set, cuInit 1000-1100 after the window with it. 1 ns less (0-49) is under; and 40 ns inside
    with 100 ns outside the window is under too (only the window's part counts)."""
    def run(evs, end=1000):
        return events.startup_ranges(with_events(evs, end=end))
    got = run([ev("cudaGetDeviceCount", K.RUNTIME, 0, 30), ev("cudaSetDevice", K.RUNTIME, 20, 30),
               ev("cuInit", K.RUNTIME, 1000, 100)])
    assert pairs(got) == [(0, 50), (1000, 1100)]
    assert run([ev("cudaGetDeviceCount", K.RUNTIME, 0, 30), ev("cudaSetDevice", K.RUNTIME, 20, 29)]) is None
    assert run([ev("cudaSetDevice", K.RUNTIME, 0, 40), ev("cuInit", K.RUNTIME, 1000, 100)]) is None
    assert run([ev("cudaSetDevice", K.RUNTIME, 0, 40)], end=0) is None  # a window of 0 ns
    assert run([ev("aten::add", K.CPU_OP, 0, 500)]) is None
    # the window 1000-2000 (1000 ns, not 3000): cudaSetDevice 1000-1050, 5 %
    later = events.startup_ranges(with_events([ev("cudaSetDevice", K.RUNTIME, 1000, 50)], start=1000, end=2000))
    assert pairs(later) == [(1000, 1050)]


def test_not_steps_are_the_capture_and_the_startup_once():
    """Capture 100-350 (begin, end 300-350) and start-up 400-460 (60 of 1000 ns, above 5 %): both, in that order."""
    capture = [ev("cudaStreamBeginCapture", K.RUNTIME, 100, 5), ev("cudaStreamEndCapture", K.RUNTIME, 300, 50)]
    inp = with_events(capture + [ev("cudaSetDevice", K.RUNTIME, 400, 60)], end=1000)
    got = events.not_steps(inp)
    assert [pairs(s) for s in got] == [[(100, 350)], [(400, 460)]]
    assert events.not_steps(inp) is got and inp._not_steps is got  # once per input
    assert [pairs(s) for s in events.not_steps(with_events(capture, end=1000))] == [[(100, 350)]]
    assert events.not_steps(RuleInput(pb.Digest())) == []


def test_per_step_measures_inside_the_kept_steps_without_the_capture():
    """Steps 0-1000, 1000-2000 kept, 2000-3000 not; a capture 1200-1300. The set 500-1501 and 2500-2600: inside the
    kept steps 500-1501 less the capture, 700 + 201 = 901 ns (2500-2600 is in the step left out); per step 901 // 2
    = 450 (whole ns, rounded down). One step 0-1000 and 100-400: 300."""
    inp = with_events([ev("cudaStreamBeginCapture", K.RUNTIME, 1200, 5), ev("cudaStreamEndCapture", K.RUNTIME, 1250,
                                                                            50)],
                      end=3000, steps=((1, 0, 1000), (2, 1000, 1000), (3, 2000, 1000)), kept=[1, 2])
    assert events.per_step(inp, ([500, 2500], [1501, 2600])) == 450
    one = with_events([ev("aten::add", K.CPU_OP, 0, 5)], end=1000)
    assert events.per_step(one, ([100], [400])) == 300
    assert events.per_step(with_events([ev("aten::add", K.CPU_OP, 0, 5)], steps=()), ([100], [400])) == 0


def test_device_rows_of_op_are_the_kernels_its_calls_launched():
    """aten::mm launched gemm (at 10) and gemm2 (at 410), aten::add its kernel at 210: aten::mm's rows start at 10
    and 410; an operator that never ran has none; without events, None."""
    inp = with_events([
        ev("aten::mm", K.CPU_OP, 0, 100, external_id=1), ev("gemm", K.KERNEL, 10, 40, external_id=1),
        ev("aten::add", K.CPU_OP, 200, 100, external_id=2), ev("add_k", K.KERNEL, 210, 20, external_id=2),
        ev("aten::mm", K.CPU_OP, 400, 100, external_id=3), ev("gemm2", K.KERNEL, 410, 40, external_id=3)])
    assert starts(inp, events.device_rows_of_op(inp, "aten::mm")) == [10, 410]
    none = events.device_rows_of_op(inp, "aten::relu")
    assert (len(none), none.dtype) == (0, np.int64)


def test_device_rows_of_op_leave_out_kernels_of_no_operator_and_of_nameless_ones():
    """A kernel no operator launched (at 600, after aten::mm at 400, the last host event) is not aten::mm's; a kernel
    of an operator without a name (at 210) is not one of an operator that never ran."""
    inp = with_events([
        ev("aten::mm", K.CPU_OP, 0, 100, external_id=1), ev("gemm", K.KERNEL, 10, 40, external_id=1),
        ev(None, K.CPU_OP, 200, 100, external_id=4), ev("k", K.KERNEL, 210, 40, external_id=4),
        ev("aten::mm", K.CPU_OP, 400, 100, external_id=3), ev("gemm", K.KERNEL, 410, 40, external_id=3),
        ev("orphan", K.KERNEL, 600, 40)])
    assert starts(inp, events.device_rows_of_op(inp, "aten::mm")) == [10, 410]
    assert len(events.device_rows_of_op(inp, "aten::relu")) == 0
    assert events.device_rows_of_op(RuleInput(pb.Digest()), "aten::mm") is None
