"""The backward of a written-out attention as the fused attention changes it (analysis/rules/attention_backward.py),
called on autograd functions placed here by hand (issue 46, docs/mutants.md "What was run on rules/events.py,
attention_backward.py and cann.py": before it only real CPU traces of torch.profiler runs reached it). Each function is
a top-level operator `autograd::engine::evaluate_function: X` with an operator X inside whose first input shape is the
gradient it received. The expected cuts and rescales are worked out in each docstring (times in ns).
"""
from _synthetic import ev, table

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.context import Context
from canning_tb.analysis.rules.attention_backward import backward_edit
from canning_tb.analysis.rules.engine import RuleInput
from canning_tb.ingest.table import Kind as K

VALUES, SCORES = "[[2, 4, 16, 8]]", "[[2, 4, 16, 32]]"  # [B, H, L, Ev] and [B, H, L, S]: L 16, Ev 8, S 32
SCORES_KEY = (2, 4, 16, 32)


def fn(name, ts, dur, shapes=None, inner=None, tid=1, **kw):
    """The function `name` over [ts, ts + dur) and its operator (named `inner`, by default `name`) 1 ns inside it."""
    op = ev(inner or name, K.CPU_OP, ts + 1, dur - 2, tid=tid, **kw)
    if shapes is not None:
        op["shapes"] = shapes
    return [ev(f"autograd::engine::evaluate_function: {name}", K.CPU_OP, ts, dur, tid=tid), op]


def edit(evs, scores, device=False):
    return backward_edit(RuleInput(pb.Digest(), Context(table(evs))), scores, device)


def test_the_scores_functions_go_and_the_two_matmul_backwards_are_rescaled_on_the_host():
    """The values matmul's backward (100-120, its gradient [.., 16, 8] = [.., L, Ev]); a 1-D MmBackward (skipped: its
    gradient is no matrix); dropout's backward (130-135, scores-shaped: cut); the softmax backward (140-150: cut, and
    the values matmul's backward before it pairs with it; its second operator of the name, [7, 7], is not read);
    MulBackward0 whose operator is aten::mul (not its own name: skipped); the scores matmul's backward (160-190,
    [.., 16, 32]): the pair is rescaled. Forward matmuls 60 ns, E 16, Ev 8: 60 x (3 x 16 + 2 x 8) / (16 + 8) = 160 ns
    of fused matmul work for 20 + 30 ns of theirs: 3.2 on the host (no device) for both. Then a softmax backward with
    no values matmul before it (200-210: cut only, the pair was used up) and a matmul backward after it (no pair);
    a softmax backward whose operator has no shapes (250-260) is not seen."""
    evs = (fn("BmmBackward0", 100, 20, VALUES) + fn("MmBackward0", 122, 6, "[[32]]")
           + fn("NativeDropoutBackward0", 130, 5, SCORES) + fn("SoftmaxBackward0", 140, 10, SCORES)
           + [ev("SoftmaxBackward0", K.CPU_OP, 146, 3, shapes="[[7, 7]]")]
           + fn("MulBackward0", 152, 6, SCORES, inner="aten::mul") + fn("BmmBackward0", 160, 30, SCORES)
           + fn("_SoftmaxBackward", 200, 10, SCORES) + fn("BmmBackward0", 220, 20, SCORES)
           + fn("SoftmaxBackward0", 250, 10))
    evs[7]["dur"] = 4  # the softmax backward's first operator: 141-145, before the second at 146
    cuts, rescale = edit(evs, {SCORES_KEY: (60.0, 16, 8)})
    assert cuts == [(1, 1, 130, 135), (1, 1, 140, 150), (1, 1, 200, 210)]
    assert rescale == [(1, 1, 100, 120, 3.2, 3.2), (1, 1, 160, 190, 3.2, 3.2)]


def _matrix_attention(kernels=True):
    """2-D: values matmul backward 0-20 ([16, 8]), softmax backward 30-40 ([16, 32]), scores matmul backward 50-80;
    their operators launch kernels of 40 and 60 ns (at 1000 and 1100) when `kernels`."""
    ids = ({"external_id": 1}, {"external_id": 2}) if kernels else ({}, {})
    evs = (fn("MmBackward0", 0, 20, "[[16, 8]]", **ids[0]) + fn("SoftmaxBackward0", 30, 10, "[[16, 32]]")
           + fn("MmBackward0", 50, 30, "[[16, 32]]", **ids[1]))
    if kernels:
        evs += [ev("gemm", K.KERNEL, 1000, 40, external_id=1), ev("gemm", K.KERNEL, 1100, 60, external_id=2)]
    return evs


def test_on_the_device_the_kernels_time_is_rescaled_and_the_host_kept():
    """As above on 2-D matrices with a device: 160 ns of fused work for the kernels' 40 + 60 ns, 1.6 on the device,
    1.0 on the host."""
    cuts, rescale = edit(_matrix_attention(), {(16, 32): (60.0, 16, 8)}, device=True)
    assert cuts == [(1, 1, 30, 40)]
    assert rescale == [(1, 1, 0, 20, 1.0, 1.6), (1, 1, 50, 80, 1.0, 1.6)]


def test_matmul_backwards_without_device_time_are_not_divided_by_zero():
    """No kernels, on the device: 0 + 0 ns, taken as 1 ns: a factor of 160."""
    _, rescale = edit(_matrix_attention(kernels=False), {(16, 32): (60.0, 16, 8)}, device=True)
    assert rescale == [(1, 1, 0, 20, 1.0, 160.0), (1, 1, 50, 80, 1.0, 160.0)]


def test_the_pair_is_per_thread():
    """The values matmul backward on thread 1, the softmax and scores matmul backwards on thread 2: no pair (a
    thread's backward runs its own functions in order); the softmax's cut stays."""
    evs = fn("MmBackward0", 0, 20, "[[16, 8]]") + fn("SoftmaxBackward0", 30, 10, "[[16, 32]]", tid=2) \
        + fn("MmBackward0", 50, 30, "[[16, 32]]", tid=2)
    assert edit(evs, {(16, 32): (60.0, 16, 8)}) == ([(1, 2, 30, 40)], [])
