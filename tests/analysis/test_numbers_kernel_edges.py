"""Kernel, core and operator-stack edges that the fixtures do not reach, by hand (written after
mutation testing showed them untested: docs/mutants.md)."""
import pytest

from _synthetic import ev, table

from canning_tb.analysis.build import build_digest
from canning_tb.ingest.table import NONE
from canning_tb.ingest.table import Kind as K


def test_mean_blocks_over_known_values_only_and_most_frequent_stream():
    d = build_digest(table([
        ev("aten::add", K.CPU_OP, 0, 1),
        ev("gemm", K.KERNEL, 0, 10, blocks=10, stream=7),
        ev("gemm", K.KERNEL, 20, 10, blocks=NONE, stream=9),
        ev("gemm", K.KERNEL, 40, 10, blocks=30, stream=9),
        ev("copy", K.KERNEL, 60, 5, blocks=NONE, stream=7),
    ]))
    k = {x.name: x for x in d.kernels_by_name}
    assert k["gemm"].mean_blocks == 20.0 and k["gemm"].stream == 9
    assert k["copy"].mean_blocks == -1.0 and k["copy"].stream == 7
    assert [x.name for x in d.kernels_by_name] == ["gemm", "copy"]  # by total time


def test_launching_op_named_by_the_first_string_of_the_table():
    """The first event's name has string id 0: a kernel launched by it still names it."""
    d = build_digest(table([
        ev("aten::mm", K.CPU_OP, 0, 100, external_id=5),
        ev("sgemm", K.KERNEL, 10, 50, external_id=5),
        ev("orphan", K.KERNEL, 70, 5),
    ]))
    assert {(x.name, x.op_name) for x in d.kernels_by_op} == {("sgemm", "aten::mm"), ("orphan", "")}
    (mm,) = d.ops_by_name
    assert [(x.name, x.calls, x.total_ns) for x in mm.kernels] == [("sgemm", 1, 50)]


def test_unnamed_kernel_keeps_an_empty_name():
    d = build_digest(table([ev("aten::add", K.CPU_OP, 0, 1), ev("", K.KERNEL, 0, 10), ev("gemm", K.KERNEL, 20, 5)]))
    assert [(x.name, x.calls, x.total_ns) for x in d.kernels_by_name] == [("", 1, 10), ("gemm", 1, 5)]


def test_device_events_without_any_host_event():
    d = build_digest(table([ev("gemm", K.KERNEL, 0, 10)]))
    assert [(x.name, x.op_name) for x in d.kernels_by_op] == [("gemm", "")]


def test_kernel_device_and_tensor_core_flag():
    """A cuBLAS half-precision mma kernel (`h884` in its name) on device 3 of a GPU window."""
    d = build_digest(table([ev("aten::mm", K.CPU_OP, 0, 1), ev("volta_h884gemm_128x64_nn", K.KERNEL, 0, 40, device=3),
                            ev("relu_kernel", K.KERNEL, 50, 10, device=3)],
                           devices=[{"kind": "cuda", "index": 3, "compute_capability": "7.0"}]))
    k = {x.name: x for x in d.kernels_by_name}
    assert (k["volta_h884gemm_128x64_nn"].device, k["volta_h884gemm_128x64_nn"].tensor_cores) == (3, True)
    assert (k["relu_kernel"].tensor_cores, k["relu_kernel"].core) == (False, "")
    # nothing links the kernels to aten::mm (no external id, no launch): neither is under an eligible op
    assert {c.core: (c.calls, c.total_ns) for c in d.cores} == {
        "Tensor Cores": (1, 40), "Other, under Tensor-Core-eligible operators": (0, 0), "Other": (1, 10)}


@pytest.mark.parametrize("fmt,devices", [("kineto", [{"kind": "rocm", "index": 0}]),
                                         ("kineto", [{"kind": "npu", "index": 0}]),
                                         ("ascend", [])])
def test_no_tensor_core_split_off_cuda(fmt, devices):
    d = build_digest(table([ev("aten::mm", K.CPU_OP, 0, 1), ev("gemm", K.KERNEL, 0, 40)], devices=devices, fmt=fmt))
    assert list(d.cores) == []


def test_npu_cores_with_an_unknown_core():
    d = build_digest(table([ev("aten::mm", K.CPU_OP, 0, 1), ev("MatMul", K.KERNEL, 0, 40, core="AI_CORE"),
                            ev("Cast", K.KERNEL, 50, 10)], fmt="ascend"))
    assert [(c.core, c.calls, c.total_ns) for c in d.cores] == [("AI_CORE", 1, 40), ("unknown", 1, 10)]


def py(name, ts, dur):
    return ev(name, K.PYTHON_FUNCTION, ts, dur)


def test_derived_stacks_from_python_functions():
    """Without a recorded stack, an op's stack is its enclosing python functions, innermost first,
    at most 16; enclosing operators are not frames; an op outside any python function has none."""
    deep = [py(f"f{i}", i, 1000 - 2 * i) for i in range(17)]  # f0 outermost .. f16 innermost
    d = build_digest(table(deep + [
        ev("aten::outer", K.CPU_OP, 100, 200), ev("aten::inner", K.CPU_OP, 110, 50),
        ev("aten::alone", K.CPU_OP, 2000, 10),
    ]))
    stacks = {o.name: o.call_stack for o in d.ops_by_stack}
    want = ";".join(f"f{i}" for i in range(16, 0, -1))  # 16 frames: f16 .. f1
    assert stacks == {"aten::outer": want, "aten::inner": want}
    assert {o.name for o in d.ops_by_name if o.has_call_stack} == {"aten::outer", "aten::inner"}


def test_one_python_function_and_one_op():
    d = build_digest(table([py("train_step", 0, 100), ev("aten::add", K.CPU_OP, 10, 5)]))
    assert [(o.name, o.call_stack, o.calls) for o in d.ops_by_stack] == [("aten::add", "train_step", 1)]


def test_unnamed_operator_keeps_an_empty_name():
    d = build_digest(table([ev("", K.CPU_OP, 0, 10), ev("aten::add", K.CPU_OP, 20, 5)]))
    assert [(o.name, o.calls) for o in d.ops_by_name] == [("", 1), ("aten::add", 1)]
