"""The operator tables (analysis/ops.py) on hand-made tables: every field of every row worked out by hand
in the comments (times in ns), so that a one-token change in ops.py shows (issue 46, mutation testing)."""
import numpy as np

from _synthetic import ev, table

from canning_tb.analysis.context import Context
from canning_tb.analysis.ops import op_stats, python_stacks
from canning_tb.ingest.table import Kind as K


def _launch(ts, corr, ext=-1, dur=10):
    return ev("cudaLaunchKernel", K.RUNTIME, ts, dur, correlation=corr, external_id=ext)


def _row(o):
    return (o.name, o.calls, o.host_self_ns, o.host_total_ns, o.device_self_ns, o.device_total_ns,
            o.host_total_min_ns, o.host_total_max_ns, o.has_call_stack, o.tc_eligible)


def _kernels(o):
    return [(k.name, k.calls, k.total_ns) for k in o.kernels]


def _model():
    """Host (pid 1, tid 1):
    ProfilerStep#1 (annotation) 0-2000, and ProfilerStep#2 as a CPU_OP 2100-2110 (old traces): no rows.
    aten::linear#1 10-510 (ext 1, shapes A) > aten::addmm 20-320 (ext 2, shapes B, stack "m.py(3): f")
      > launches 30-40 (corr 100), 50-60 (101), cudaMemcpyAsync 70-75 (105); linear#1 launches 400-420 (102).
    train.py(9): step 590-790 > nn/module.py(1): fwd 595-745 > aten::linear#2 600-700 (ext 3, shapes C),
      launch 610-620 (103).
    aten::relu 800-850, nothing launched. aten::mean 900-960 (ext 4) > aten::mean 905-945 (ext 5, its only
      child: folded) > launch 910-915 (104).
    Device: gemmA 100-150 (100), gemmB 120-180 (101), Memcpy 200-210 (105), add 450-480 (102),
      add 700-740 (103), mean_k 920-928 (104)."""
    return table([
        ev("ProfilerStep#1", K.USER_ANNOTATION, 0, 2000),
        ev("ProfilerStep#2", K.CPU_OP, 2100, 10),
        ev("aten::linear", K.CPU_OP, 10, 500, external_id=1, shapes="A"),
        ev("aten::addmm", K.CPU_OP, 20, 300, external_id=2, shapes="B", stack="m.py(3): f"),
        _launch(30, 100, 2), _launch(50, 101, 2),
        ev("cudaMemcpyAsync", K.RUNTIME, 70, 5, correlation=105, external_id=2),
        _launch(400, 102, 1, dur=20),
        ev("train.py(9): step", K.PYTHON_FUNCTION, 590, 200),
        ev("nn/module.py(1): fwd", K.PYTHON_FUNCTION, 595, 150),
        ev("aten::linear", K.CPU_OP, 600, 100, external_id=3, shapes="C"),
        _launch(610, 103, 3),
        ev("aten::relu", K.CPU_OP, 800, 50),
        ev("aten::mean", K.CPU_OP, 900, 60, external_id=4),
        ev("aten::mean", K.CPU_OP, 905, 40, external_id=5),
        _launch(910, 104, 5, dur=5),
        ev("gemmA", K.KERNEL, 100, 50, correlation=100, external_id=2),
        ev("gemmB", K.KERNEL, 120, 60, correlation=101, external_id=2),
        ev("Memcpy HtoD", K.MEMCPY, 200, 10, correlation=105, external_id=2),
        ev("add", K.KERNEL, 450, 30, correlation=102, external_id=1),
        ev("add", K.KERNEL, 700, 40, correlation=103, external_id=3),
        ev("mean_k", K.KERNEL, 920, 8, correlation=104, external_id=5),
    ])


def test_ops_by_name_every_field():
    """linear: 2 calls, host total 500 + 100 = 600; self (500 - 300 addmm - 20 launch) + (100 - 10) = 270;
    device self = its own adds 30 + 40 = 70; total adds addmm's gemmA u gemmB (100-180: 80) and the memcpy
    (10): 160; min 100, max 500. addmm: self 300 - 10 - 10 - 5 = 275; device 80 + 10 = 90 (self = total).
    mean (folded: one call): host total 60, self (60 - 40) + (40 - 5) = 55; device 8. relu: 50, nothing on the
    device. Sorted by host total: linear 600, addmm 300, mean 60, relu 50; no ProfilerStep row."""
    by_name, _, _ = op_stats(Context(_model()))
    assert [_row(o) for o in by_name] == [
        ("aten::linear", 2, 270, 600, 70, 160, 100, 500, True, True),
        ("aten::addmm", 1, 275, 300, 90, 90, 300, 300, True, True),
        ("aten::mean", 1, 55, 60, 8, 8, 60, 60, False, False),
        ("aten::relu", 1, 50, 50, 0, 0, 50, 50, False, False),
    ]
    assert [_kernels(o) for o in by_name] == [
        [("add", 2, 70)], [("gemmB", 1, 60), ("gemmA", 1, 50), ("Memcpy HtoD", 1, 10)], [("mean_k", 1, 8)], []]
    # not a CUDA window (no devices): the Tensor Core shares are unknown
    assert {(o.tc_self_share, o.tc_total_share) for o in by_name} == {(-1.0, -1.0)}


def test_ops_by_shape_split_the_calls():
    """linear A (500, self 180, device self 30, total 30 + 90 = 120), addmm B, linear C (100: self 90, device 40),
    mean and relu without shapes ("")."""
    _, by_shape, _ = op_stats(Context(_model()))
    assert [(o.input_shapes,) + _row(o) for o in by_shape] == [
        ("A", "aten::linear", 1, 180, 500, 30, 120, 500, 500, True, True),
        ("B", "aten::addmm", 1, 275, 300, 90, 90, 300, 300, True, True),
        ("C", "aten::linear", 1, 90, 100, 40, 40, 100, 100, True, True),
        ("", "aten::mean", 1, 55, 60, 8, 8, 60, 60, False, False),
        ("", "aten::relu", 1, 50, 50, 0, 0, 50, 50, False, False),
    ]
    assert [o.call_stack for o in by_shape] == [""] * 5


def test_ops_by_stack_written_and_derived():
    """addmm's own stack; linear#2's derived from the python functions around it, innermost first; linear#1,
    mean and relu have neither: not in the table."""
    _, _, by_stack = op_stats(Context(_model()))
    assert [(o.call_stack, o.input_shapes) + _row(o) for o in by_stack] == [
        ("m.py(3): f", "", "aten::addmm", 1, 275, 300, 90, 90, 300, 300, True, True),
        ("nn/module.py(1): fwd;train.py(9): step", "", "aten::linear", 1, 90, 100, 40, 40, 100, 100, True, True),
    ]


def test_python_stacks_codes_and_depth_cap():
    """20 nested python functions (0-1000, 1-999, ...) around one op, one op outside them, one op with a
    written stack: the op inside gets the 16 innermost frames, innermost (f19) first; the others -1."""
    pys = [ev(f"f{i}", K.PYTHON_FUNCTION, i, 1000 - 2 * i) for i in range(20)]
    t = table(pys + [ev("aten::mul", K.CPU_OP, 100, 10), ev("aten::div", K.CPU_OP, 2000, 10),
                     ev("aten::sub", K.CPU_OP, 200, 10, stack="s.py(1): g")])
    ctx = Context(t)
    names = [t.strings[int(x)] for x in ctx.ev["name"]]
    rows = [names.index("aten::mul"), names.index("aten::div"), names.index("aten::sub")]
    code, strings = python_stacks(ctx, np.array(rows))
    assert code.tolist() == [0, -1, -1]
    assert strings == [";".join(f"f{i}" for i in range(19, 3, -1))]


def test_python_stacks_none_without_python_functions_or_need():
    t = table([ev("aten::mul", K.CPU_OP, 100, 10), ev("aten::sub", K.CPU_OP, 200, 10, stack="s")])
    code, strings = python_stacks(Context(t), np.array([0, 1]))
    assert (code.tolist(), strings) == ([-1, -1], [])
    # python functions, but every op has a written stack: nothing to derive
    t = table([ev("f", K.PYTHON_FUNCTION, 0, 1000), ev("aten::sub", K.CPU_OP, 200, 10, stack="s")])
    assert python_stacks(Context(t), np.array([1]))[0].tolist() == [-1]
    # python functions elsewhere (another thread, after the op): no frame, no strings
    t = table([ev("f", K.PYTHON_FUNCTION, 0, 1000, tid=2), ev("g", K.PYTHON_FUNCTION, 500, 10),
               ev("aten::mul", K.CPU_OP, 100, 10)])
    # rows by time: f 0, aten::mul 100, g 500
    code, strings = python_stacks(Context(t), np.array([1]))
    assert (code.tolist(), strings) == ([-1], [])


def test_top_kernels_five_longest_per_group():
    """One op launching 7 kernels k0..k6 of 10, 70, 20, 60, 30, 50, 40 ns (k1 twice: 70 + 5 = 75): the 5
    longest, longest first: k1 (2 calls, 75), k3 60, k5 50, k6 40, k4 30. A second op's one kernel stays its own."""
    durs = [10, 70, 20, 60, 30, 50, 40]
    evs = [ev("aten::bmm", K.CPU_OP, 0, 1000, external_id=1), ev("aten::add", K.CPU_OP, 2000, 100, external_id=2)]
    ts = 10
    for i, d in enumerate(durs + [5]):
        name = f"k{i}" if i < 7 else "k1"
        evs += [_launch(ts, 10 + i, 1, dur=1), ev(name, K.KERNEL, ts + 2, d, correlation=10 + i, external_id=1)]
        ts += 100
    evs += [_launch(2010, 50, 2, dur=1), ev("k9", K.KERNEL, 2020, 3, correlation=50, external_id=2)]
    by_name, _, _ = op_stats(Context(table(evs)))
    assert [(o.name, _kernels(o)) for o in by_name] == [
        ("aten::bmm", [("k1", 2, 75), ("k3", 1, 60), ("k5", 1, 50), ("k6", 1, 40), ("k4", 1, 30)]),
        ("aten::add", [("k9", 1, 3)]),
    ]
    # device self: 10 + 70 + 20 + 60 + 30 + 50 + 40 + 5, none overlapping
    assert [(o.device_self_ns, o.device_total_ns) for o in by_name] == [(285, 285), (3, 3)]


def test_device_union_overlaps_nesting_and_groups():
    """Op P (0-1000) > op Q (100-900) > op P again (200-300, not an only child: Q has two children).
    Kernels: by P-outer: 10-60 and 40-50 (inside: union 50); by Q: 30-100 (overlaps P's: 60-100 more);
    by P-inner: 500-600 and 550-700 (union 200); by R (2000-2100, another op): 2010-2040.
    P self = P-outer 50 + P-inner 200 = 250; P total = union of everything under either call, each once:
    10-100 (90) + 500-700 (200) = 290. Q self 70 (30-100); Q total 70 + 200 = 270. R 30 / 30."""
    evs = [ev("P", K.CPU_OP, 0, 1000, external_id=1), ev("Q", K.CPU_OP, 100, 800, external_id=2),
           ev("P", K.CPU_OP, 200, 100, external_id=3), ev("S", K.CPU_OP, 400, 10),
           ev("R", K.CPU_OP, 2000, 100, external_id=4)]
    for corr, (ext, ts, dur) in enumerate([(1, 10, 50), (1, 40, 10), (2, 30, 70), (3, 500, 100), (3, 550, 150),
                                           (4, 2010, 30)]):
        evs.append(ev(f"k{corr}", K.KERNEL, ts, dur, external_id=ext, correlation=corr))
    by_name, _, _ = op_stats(Context(table(evs)))
    assert {o.name: (o.calls, o.device_self_ns, o.device_total_ns) for o in by_name} == {
        "P": (2, 250, 290), "Q": (1, 70, 270), "R": (1, 30, 30), "S": (1, 0, 0)}


def test_no_device_events_and_no_ops():
    by_name, by_shape, by_stack = op_stats(Context(table([ev("aten::mul", K.CPU_OP, 0, 10)])))
    assert [_row(o) for o in by_name] == [("aten::mul", 1, 10, 10, 0, 0, 10, 10, False, False)]
    assert (len(by_shape), by_stack) == (1, [])
    assert op_stats(Context(table([ev("k", K.KERNEL, 0, 10)]))) == ([], [], [])


def test_device_events_nobody_launched():
    """A kernel with no launch and no op id (owner unknown) counts nowhere; the op's own kernel does."""
    t = table([ev("aten::mul", K.CPU_OP, 0, 100, external_id=1), ev("k", K.KERNEL, 10, 5, external_id=1),
               ev("lost", K.KERNEL, 500, 50)])
    (o,), _, _ = op_stats(Context(t))
    assert (o.device_self_ns, o.device_total_ns, _kernels(o)) == (5, 5, [("k", 1, 5)])


def test_ties_sorted_by_name_then_shape():
    """Equal host totals: by name, then by shapes."""
    t = table([ev("b", K.CPU_OP, 0, 10, shapes="y"), ev("b", K.CPU_OP, 20, 10, shapes="x"),
               ev("a", K.CPU_OP, 40, 20)])
    by_name, by_shape, _ = op_stats(Context(t))
    assert [(o.name, o.host_total_ns) for o in by_name] == [("a", 20), ("b", 20)]
    assert [(o.name, o.input_shapes) for o in by_shape] == [("a", ""), ("b", "x"), ("b", "y")]


def test_device_union_on_the_real_clock():
    """Kineto's timestamps are ns since the epoch (1.7e18: beyond float64's exact integers, spaced 256 apart
    there): kernels at T + 1 (3 ns) and T + 7 (2 ns) make 3 + 2 = 5 ns, not a float's rounding of them."""
    T = 1_700_000_000_000_000_000
    t = table([ev("aten::mul", K.CPU_OP, T, 100, external_id=1), ev("k", K.KERNEL, T + 1, 3, external_id=1),
               ev("k", K.KERNEL, T + 7, 2, external_id=1)])
    (o,), _, _ = op_stats(Context(t))
    assert (o.device_self_ns, o.device_total_ns, _kernels(o)) == (5, 5, [("k", 2, 5)])


def test_device_union_zero_length_kernel_first_in_a_later_group():
    """A's kernel 0-100 (the longest span, 100); B's: a 0 ns kernel at 500, then one of 5 ns at 500 (rows in that
    order: the table keeps ties in order). B's union is 5: the groups stacked one above the other must not reach
    into each other (a span of 99 would leave B 4). B runs inside A: A's total is 100 + 5."""
    t = table([ev("A", K.CPU_OP, 0, 1000, external_id=1), ev("B", K.CPU_OP, 400, 200, external_id=2),
               ev("k", K.KERNEL, 0, 100, external_id=1), ev("z", K.KERNEL, 500, 0, external_id=2),
               ev("y", K.KERNEL, 500, 5, external_id=2)])
    by_name, _, _ = op_stats(Context(t))
    assert [(o.name, o.device_self_ns, o.device_total_ns) for o in by_name] == [("A", 100, 105), ("B", 5, 5)]


def test_python_stacks_one_function_one_frame():
    """One python function (its name the table's first string, id 0) around one op: a stack of one frame."""
    t = table([ev("f.py(1): run", K.PYTHON_FUNCTION, 0, 100), ev("aten::mul", K.CPU_OP, 10, 5)])
    code, strings = python_stacks(Context(t), np.array([1]))
    assert (code.tolist(), strings) == ([0], ["f.py(1): run"])


def test_derived_stacks_skip_ops_and_tell_calls_apart():
    """f.py(1): run 0-100 > aten::outer 10-60 > aten::inner 20-30; g.py(2): h 200-300 > aten::mul 210-220:
    inner's stack holds only python frames (not aten::outer); two stacks, each its own text. By host total
    outer 50, then inner and mul (10 each) by name."""
    t = table([ev("f.py(1): run", K.PYTHON_FUNCTION, 0, 100), ev("aten::outer", K.CPU_OP, 10, 50),
               ev("aten::inner", K.CPU_OP, 20, 10), ev("g.py(2): h", K.PYTHON_FUNCTION, 200, 100),
               ev("aten::mul", K.CPU_OP, 210, 10)])
    _, _, by_stack = op_stats(Context(t))
    assert [(o.name, o.call_stack, o.has_call_stack) for o in by_stack] == [
        ("aten::outer", "f.py(1): run", True), ("aten::inner", "f.py(1): run", True), ("aten::mul", "g.py(2): h", True)]


def test_string_id_zero_is_a_string_like_any_other():
    """The table's first string (id 0) as an op's written stack, as its shapes: kept as they are."""
    t = table([ev("m.py(3): f", K.OTHER, 500, 1), ev("aten::mul", K.CPU_OP, 0, 10, stack="m.py(3): f")])
    assert [o.call_stack for o in op_stats(Context(t))[2]] == ["m.py(3): f"]
    t = table([ev("[[1]]", K.OTHER, 500, 1), ev("aten::mul", K.CPU_OP, 0, 10, shapes="[[1]]")])
    assert [o.input_shapes for o in op_stats(Context(t))[1]] == ["[[1]]"]


def test_empty_names_stay_empty():
    """An op named "", with shapes "", launching a kernel named "": each shown as "" (nothing made up)."""
    t = table([ev("", K.CPU_OP, 0, 10, shapes="", external_id=1), ev("", K.KERNEL, 2, 3, external_id=1)])
    (o,), (s,), _ = op_stats(Context(t))
    assert (o.name, s.input_shapes, _kernels(o)) == ("", "", [("", 1, 3)])


def test_tensor_core_shares_on_a_cuda_window():
    """aten::linear (ext 2) > aten::mm (ext 1). mm launches a Tensor Core GEMM of 30 ns and an elementwise
    kernel of 10: self share 30 / 40 = 0.75, total the same; linear launches a 20 ns elementwise kernel itself:
    self share 0 / 20 = 0, total 30 / (30 + 10 + 20) = 0.5."""
    t = table([ev("aten::linear", K.CPU_OP, 0, 100, external_id=2), ev("aten::mm", K.CPU_OP, 10, 50, external_id=1),
               ev("volta_h884gemm_64x64_ldg8_nn", K.KERNEL, 20, 30, external_id=1),
               ev("elementwise", K.KERNEL, 60, 10, external_id=1), ev("elementwise", K.KERNEL, 80, 20, external_id=2)],
              devices=[{"kind": "cuda"}])
    by_name, _, _ = op_stats(Context(t))
    assert [(o.name, o.tc_self_share, o.tc_total_share) for o in by_name] == [
        ("aten::linear", 0.0, 0.5), ("aten::mm", 0.75, 0.75)]
