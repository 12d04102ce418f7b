"""Kernel-table edges that the fixtures do not reach, by hand (written after mutation testing
showed them untested: docs/mutants.md)."""
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


@pytest.mark.xfail(strict=True, raises=IndexError,
                   reason="kernels.kernel_stats indexes host rows that a window of device events only does not have")
def test_device_events_without_any_host_event():
    d = build_digest(table([ev("gemm", K.KERNEL, 0, 10)]))
    assert [(x.name, x.op_name) for x in d.kernels_by_op] == [("gemm", "")]
