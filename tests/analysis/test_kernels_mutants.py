"""The kernel tables (analysis/kernels.py) on hand-made tables: every field worked out by hand in the
comments (times in ns), so that a one-token change in kernels.py shows (issue 46, mutation testing)."""
import math

import numpy as np
import pytest

from _synthetic import ev, table

from canning_tb.analysis.context import Context
from canning_tb.analysis.kernels import (CORE_ELIGIBLE, CORE_OTHER, CORE_TENSOR, eligible_rows, kernel_stats,
                                         kernel_types, task_coverage)
from canning_tb.ingest import side_tables as side
from canning_tb.ingest.table import Kind as K

TC = "volta_h884gemm_64x64_ldg8_nn"  # a Tensor Core GEMM (h884: Volta's HMMA)


def _row(k):
    return (k.name, k.calls, k.total_ns, k.min_ns, k.max_ns, k.device, k.stream, k.core, k.mean_blocks,
            k.tensor_cores, k.communication)


def _cuda():
    """Host: aten::mm 0-1000 (ext 1) > aten::relu 600-700 (ext 3); aten::add 2000-2500 (ext 2).
    Device (device 0, stream 7 unless said): TC 10-110 by mm (blocks 8, stream 9), TC 200-500 by mm (blocks 4,
    stream 9), TC 2010-2060 by add (no blocks), relu_k 700-730 by relu, elementwise 2100-2120 by add (device 1,
    stream 3), ncclKernel 3000-3400 launched by nothing."""
    return table([
        ev("aten::mm", K.CPU_OP, 0, 1000, external_id=1), ev("aten::relu", K.CPU_OP, 600, 100, external_id=3),
        ev("aten::add", K.CPU_OP, 2000, 500, external_id=2),
        ev(TC, K.KERNEL, 10, 100, external_id=1, blocks=8, stream=9),
        ev(TC, K.KERNEL, 200, 300, external_id=1, blocks=4, stream=9),
        ev(TC, K.KERNEL, 2010, 50, external_id=2),
        ev("relu_k", K.KERNEL, 700, 30, external_id=3),
        ev("elementwise", K.KERNEL, 2100, 20, external_id=2, device=1, stream=3),
        ev("ncclKernel_AllReduce_RING_LL_Sum_float", K.COMM_KERNEL, 3000, 400),
    ], devices=[{"kind": "cuda", "index": 0}])


def test_kernels_by_name_every_field():
    """TC: 3 calls, 100 + 300 + 50 = 450, min 50, max 300, streams 9, 9, 7 -> 9, blocks (8 + 4) / 2 = 6;
    nccl 400 (communication, no blocks: -1); relu_k 30; elementwise 20 on device 1 stream 3."""
    by_name, _, _ = kernel_stats(Context(_cuda()))
    assert [_row(k) for k in by_name] == [
        (TC, 3, 450, 50, 300, 0, 9, "", 6.0, True, False),
        ("ncclKernel_AllReduce_RING_LL_Sum_float", 1, 400, 400, 400, 0, 7, "", -1.0, False, True),
        ("relu_k", 1, 30, 30, 30, 0, 7, "", -1.0, False, False),
        ("elementwise", 1, 20, 20, 20, 1, 3, "", -1.0, False, False),
    ]
    assert [k.op_name for k in by_name] == [""] * 4
    # the GEMM's time is all under aten::mm / aten::add: matmul for 400 of its 450 ns
    assert (by_name[0].family, by_name[1].family) == ("matmul", "communication")
    # no measurements in the table: each unknown
    assert {(k.mean_blocks_per_sm, k.mean_occupancy_pct, k.registers_per_thread, k.shared_memory_bytes,
             k.mean_mix_block_dim, len(k.pmu)) for k in by_name} == {(-1.0, -1.0, -1.0, -1.0, -1.0, 0)}


def test_kernels_by_op_split_by_launcher():
    """(nccl, "") 400 and (TC, aten::mm) 400 tie: by name, n before v; then (TC, add) 50, relu_k 30,
    elementwise 20."""
    _, by_op, _ = kernel_stats(Context(_cuda()))
    assert [(k.op_name,) + _row(k) for k in by_op] == [
        ("", "ncclKernel_AllReduce_RING_LL_Sum_float", 1, 400, 400, 400, 0, 7, "", -1.0, False, True),
        ("aten::mm", TC, 2, 400, 100, 300, 0, 9, "", 6.0, True, False),
        ("aten::add", TC, 1, 50, 50, 50, 0, 7, "", -1.0, True, False),
        ("aten::relu", "relu_k", 1, 30, 30, 30, 0, 7, "", -1.0, False, False),
        ("aten::add", "elementwise", 1, 20, 20, 20, 1, 3, "", -1.0, False, False),
    ]


def test_cuda_cores_partition():
    """Tensor Cores: the three GEMMs, 450; eligible: relu_k (under aten::mm), 30; other: elementwise (under
    aten::add), 20. The NCCL kernel is no compute kernel: in none."""
    ctx = Context(_cuda())
    _, _, cores = kernel_stats(ctx)
    assert [(c.core, c.calls, c.total_ns) for c in cores] == [(CORE_TENSOR, 3, 450), (CORE_ELIGIBLE, 1, 30),
                                                              (CORE_OTHER, 1, 20)]
    names = [ctx.table.strings[int(x)] for x in ctx.ev["name"][eligible_rows(ctx)]]
    assert names == ["relu_k"]


def test_no_cores_outside_cuda_or_without_compute_kernels():
    t = table([ev("k", K.KERNEL, 0, 10)], devices=[{"kind": "rocm"}])
    assert kernel_stats(Context(t))[2] == []
    t = table([ev("nccl", K.COMM_KERNEL, 0, 10)], devices=[{"kind": "cuda"}])
    assert kernel_stats(Context(t))[2] == []
    assert kernel_stats(Context(table([ev("aten::mm", K.CPU_OP, 0, 10)]))) == ([], [], [])


def test_kernels_without_host_events():
    """A window without host events: no launcher, no eligible kernels (all "Other")."""
    t = table([ev("k", K.KERNEL, 0, 10), ev("k", K.KERNEL, 20, 30)], devices=[{"kind": "gpu"}])
    by_name, by_op, cores = kernel_stats(Context(t))
    assert [(k.name, k.op_name, k.calls, k.total_ns) for k in by_op] == [("k", "", 2, 40)]
    assert [(c.core, c.calls, c.total_ns) for c in cores] == [(CORE_TENSOR, 0, 0), (CORE_ELIGIBLE, 0, 0),
                                                              (CORE_OTHER, 2, 40)]


def test_eligible_under_an_ancestor_two_levels_up():
    """aten::linear > aten::t > aten::contiguous launching k: eligible through its grandparent."""
    t = table([ev("aten::linear", K.CPU_OP, 0, 100), ev("aten::t", K.CPU_OP, 10, 50),
               ev("aten::contiguous", K.CPU_OP, 20, 20, external_id=5), ev("k", K.KERNEL, 30, 7, external_id=5),
               ev("aten::t", K.CPU_OP, 200, 50, external_id=6), ev("j", K.KERNEL, 210, 9, external_id=6)],
              devices=[{"kind": "cuda"}])
    _, _, cores = kernel_stats(Context(t))
    assert [(c.core, c.calls, c.total_ns) for c in cores] == [(CORE_TENSOR, 0, 0), (CORE_ELIGIBLE, 1, 7),
                                                              (CORE_OTHER, 1, 9)]


def _npu():
    """HCCL tasks named per call (hcom_allReduce__586_2_1, ..._3_1: one family hcom_allReduce_; 2023's
    hcom_broadcast__483_0: hcom_broadcast_), a compute task named like a call (foo_1_2: a KERNEL, kept) and
    cores: add (AI_VECTOR_CORE) 0-200, mm 300-400 and 500-550 (AI_CORE, blocks 20 and 40)."""
    return table([
        ev("hcom_allReduce__586_2_1", K.COMM_KERNEL, 1000, 30),
        ev("hcom_allReduce__586_3_1", K.COMM_KERNEL, 1100, 70),
        ev("hcom_broadcast__483_0", K.COMM_KERNEL, 1200, 5),
        ev("foo_1_2", K.KERNEL, 1300, 1, core="AI_CPU"),
        ev("add", K.KERNEL, 0, 200, core="AI_VECTOR_CORE"),
        ev("mm", K.KERNEL, 300, 100, core="AI_CORE", blocks=20),
        ev("mm", K.KERNEL, 500, 50, core="AI_CORE", blocks=40),
    ], fmt="ascend")


def test_hccl_calls_grouped_by_family_and_npu_cores():
    """add 200; mm 150 (2 calls, blocks 30); hcom_allReduce_ 30 + 70 = 100 (min 30, max 70); hcom_broadcast_ 5;
    foo_1_2 1. Cores per `core`: AI_VECTOR_CORE 200, AI_CORE 150, the three HCCL tasks (no core) 105 as
    "unknown", AI_CPU 1."""
    by_name, by_op, cores = kernel_stats(Context(_npu()))
    assert [_row(k) for k in by_name] == [
        ("add", 1, 200, 200, 200, 0, 7, "AI_VECTOR_CORE", -1.0, False, False),
        ("mm", 2, 150, 50, 100, 0, 7, "AI_CORE", 30.0, False, False),
        ("hcom_allReduce_", 2, 100, 30, 70, 0, 7, "", -1.0, False, True),
        ("hcom_broadcast_", 1, 5, 5, 5, 0, 7, "", -1.0, False, True),
        ("foo_1_2", 1, 1, 1, 1, 0, 7, "AI_CPU", -1.0, False, False),
    ]
    assert [k.name for k in by_op] == [k.name for k in by_name]
    assert [(c.core, c.calls, c.total_ns) for c in cores] == [
        ("AI_VECTOR_CORE", 1, 200), ("AI_CORE", 2, 150), ("unknown", 3, 105), ("AI_CPU", 1, 1)]


def _op_statistic(t, rows):
    side.put(t.side, "op_statistic", [side.row("op_statistic", **r) for r in rows])
    return t


def test_cores_from_op_statistic_when_it_counts_more():
    """The events hold 4 compute tasks; op_statistic counts 10 + 5 + 0 (a count of None) + 0 (-3 as 0) = 15:
    its compute cores, and the three HCCL tasks from the events (no core: "unknown", with the row of no core):
    AI_VECTOR_CORE 3000, AI_CORE 1000 + 7 (the row of -3 calls), unknown 0 + 105 with 3 calls."""
    t = _op_statistic(_npu(), [
        dict(op_type="MatMul", core_type="AI_CORE", count=10, total_ns=1000, min_ns=50, max_ns=200),
        dict(op_type="Add", core_type="AI_VECTOR_CORE", count=5, total_ns=3000, min_ns=None, max_ns=None),
        dict(op_type="X", core_type=None, count=None, total_ns=None),
        dict(op_type="Y", core_type="AI_CORE", count=-3, total_ns=7),
    ])
    assert task_coverage(t) == (4, 15)
    _, _, cores = kernel_stats(Context(t))
    assert [(c.core, c.calls, c.total_ns) for c in cores] == [
        ("AI_VECTOR_CORE", 5, 3000), ("AI_CORE", 10, 1007), ("unknown", 3, 105)]
    types = kernel_types(t)
    assert [(k.name, k.core, k.calls, k.total_ns, k.min_ns, k.max_ns, k.device, k.stream, k.mean_blocks)
            for k in types] == [
        ("Add", "AI_VECTOR_CORE", 5, 3000, -1, -1, -1, -1, -1.0),
        ("MatMul", "AI_CORE", 10, 1000, 50, 200, -1, -1, -1.0),
        ("Y", "AI_CORE", -3, 7, -1, -1, -1, -1, -1.0),
        ("X", "", -1, -1, -1, -1, -1, -1, -1.0),
    ]


def test_op_statistic_counting_no_more_keeps_the_events_cores():
    """op_statistic counts 4 tasks, as many as the events hold: the events' cores stand."""
    t = _op_statistic(_npu(), [dict(op_type="MatMul", core_type="AI_CORE", count=4, total_ns=1)])
    assert task_coverage(t) == (4, 4)
    assert [c.core for c in kernel_stats(Context(t))[2]] == ["AI_VECTOR_CORE", "AI_CORE", "unknown", "AI_CPU"]
    assert task_coverage(_npu()) == (4, -1)
    assert kernel_types(_npu()) == []


def test_kernel_types_ties_by_name_then_core():
    t = _op_statistic(table([]), [dict(op_type="B", core_type="y", count=1, total_ns=5),
                                  dict(op_type="B", core_type="x", count=1, total_ns=5),
                                  dict(op_type="A", core_type="z", count=1, total_ns=5)])
    assert [(k.name, k.core) for k in kernel_types(t)] == [("A", "z"), ("B", "x"), ("B", "y")]


def _at(t, by_ts):
    """A metric column: the value at the event starting at each ts, NaN elsewhere."""
    col = np.full(len(t.events), np.nan)
    for i, ts in enumerate(t.events["ts"].tolist()):
        col[i] = by_ts.get(ts, np.nan)
    return col


def test_measurements_weighted_most_frequent_and_pmu():
    """k: calls at 0, 100, 200, 300 of 10, 30, 0, 60 ns; z: at 400 and 500, 0 ns each.
    blocks per SM k 2, 4, NaN, -1 (negative: unknown): (2x10 + 4x30) / 40 = 3.5; z none: -1.
    occupancy k 50, NaN, 80, 20: (500 + 0 + 1200) / 70; z 10 (a 0 ns call alone: the plain mean 10).
    MIX block dim k none: -1; z 3, 5, both 0 ns: the plain mean 4.
    registers k 32, 32, 64, NaN: 32; z none: -1. shared memory k 1024, 2048, 2048: 2048; z NaN, 4096: 4096.
    cube_utilization_pct (a PMU ratio weighted by duration) k 10, 20, NaN, 40: (100 + 600 + 2400) / 100 = 31;
    z 90 and 70 at 0 ns: no weight, not in the map."""
    t = table([ev("k", K.KERNEL, ts, d) for ts, d in ((0, 10), (100, 30), (200, 0), (300, 60))]
              + [ev("z", K.KERNEL, 400, 0), ev("z", K.KERNEL, 500, 0)])
    t.metrics = {
        "blocks_per_sm": _at(t, {0: 2, 100: 4, 300: -1}),
        "occupancy_pct": _at(t, {0: 50, 200: 80, 300: 20, 400: 10}),
        "mix_block_dim": _at(t, {400: 3, 500: 5}),
        "registers_per_thread": _at(t, {0: 32, 100: 32, 200: 64}),
        "shared_memory_bytes": _at(t, {0: 1024, 100: 2048, 200: 2048, 500: 4096}),
        "cube_utilization_pct": _at(t, {0: 10, 100: 20, 300: 40, 400: 90, 500: 70}),
    }
    by_name, by_op, _ = kernel_stats(Context(t))
    got = {k.name: (k.mean_blocks_per_sm, k.mean_occupancy_pct, k.mean_mix_block_dim, k.registers_per_thread,
                    k.shared_memory_bytes, dict(k.pmu)) for k in by_name}
    assert got["k"][0] == 3.5 and math.isclose(got["k"][1], 1700 / 70)
    assert got["k"][2:] == (-1.0, 32.0, 2048.0, {"cube_utilization_pct": pytest.approx(31.0)})
    assert got["z"] == (-1.0, 10.0, 4.0, -1.0, 4096.0, {})
    assert [k.name for k in by_op] == ["k", "z"]


def test_measurements_all_unknown_and_ties():
    """Registers all NaN: -1 for both; occupancy of a negative value only: -1; most frequent of a 1:1 tie in
    shared memory still one of the values seen."""
    t = table([ev("k", K.KERNEL, 0, 10), ev("k", K.KERNEL, 100, 10)])
    t.metrics = {"registers_per_thread": _at(t, {}), "occupancy_pct": _at(t, {0: -5}),
                 "shared_memory_bytes": _at(t, {0: 8, 100: 16})}
    (k,), _, _ = kernel_stats(Context(t))
    assert (k.registers_per_thread, k.mean_occupancy_pct) == (-1.0, -1.0)
    assert k.shared_memory_bytes in (8.0, 16.0)


def test_cores_from_op_statistic_with_communication_cores_of_their_own():
    """op_statistic counts 10 AI_CORE tasks (1000 ns), the events hold 1: its compute core; the HCCL tasks from
    the events: one on core "HCCL" (the table's first string, id 0) 30 ns, one on core "" 70 and one without
    a core 5: "unknown" 2 calls, 75 ns (a core op_statistic does not name). By total: AI_CORE, unknown, HCCL."""
    t = _op_statistic(table([
        ev("HCCL", K.OTHER, 5000, 1),
        ev("hcom_allReduce__1_1_1", K.COMM_KERNEL, 100, 30, core="HCCL"),
        ev("hcom_allReduce__1_2_1", K.COMM_KERNEL, 200, 70, core=""),
        ev("hcom_allReduce__1_3_1", K.COMM_KERNEL, 300, 5),
        ev("mm", K.KERNEL, 0, 50, core="AI_CORE"),
    ], fmt="ascend"), [dict(op_type="MatMul", core_type="AI_CORE", count=10, total_ns=1000)])
    _, _, cores = kernel_stats(Context(t))
    assert [(c.core, c.calls, c.total_ns) for c in cores] == [("AI_CORE", 10, 1000), ("unknown", 2, 75),
                                                              ("HCCL", 1, 30)]


def test_core_string_id_zero_and_empty_names():
    """A core named by the table's first string (id 0) is that core; an op named "" and a core "" stay ""."""
    t = table([ev("AI_CORE", K.OTHER, 5000, 1), ev("mm", K.KERNEL, 0, 50, core="AI_CORE")], fmt="ascend")
    by_name, _, cores = kernel_stats(Context(t))
    assert ([k.core for k in by_name], [(c.core, c.calls, c.total_ns) for c in cores]) == (
        ["AI_CORE"], [("AI_CORE", 1, 50)])
    t = table([ev("", K.CPU_OP, 0, 100, external_id=1), ev("k", K.KERNEL, 10, 5, external_id=1, core="")])
    _, (k,), _ = kernel_stats(Context(t))
    assert (k.op_name, k.core) == ("", "")


def test_most_frequent_per_group_and_one_call_of_blocks():
    """b (the first name): one call, stream 8, 64 registers, blocks 16 (a mean of one: 16); a: streams 7, 7, 9 ->
    7, registers 32, 32, 128 -> 32, no blocks: -1."""
    t = table([ev("b", K.KERNEL, 0, 5, stream=8, blocks=16), ev("a", K.KERNEL, 10, 5, stream=7),
               ev("a", K.KERNEL, 20, 5, stream=7), ev("a", K.KERNEL, 30, 5, stream=9)])
    t.metrics = {"registers_per_thread": _at(t, {0: 64, 10: 32, 20: 32, 30: 128})}
    by_name, _, _ = kernel_stats(Context(t))
    assert sorted((k.name, k.stream, k.registers_per_thread, k.mean_blocks) for k in by_name) == [
        ("a", 7, 32.0, -1.0), ("b", 8, 64.0, 16.0)]


def test_weighted_mean_keeps_zero_values_and_one_ns_calls():
    """k: occupancy 0 over 10 ns and 50 over 30: (0 + 1500) / 40 = 37.5 (0 % is a value, not unknown);
    j: 10 over 1 ns and 30 over 0 ns: weighted 10 / 1 = 10 (the plain mean, 20, only without any weight)."""
    t = table([ev("k", K.KERNEL, 0, 10), ev("k", K.KERNEL, 100, 30), ev("j", K.KERNEL, 200, 1),
               ev("j", K.KERNEL, 300, 0)])
    t.metrics = {"occupancy_pct": _at(t, {0: 0, 100: 50, 200: 10, 300: 30})}
    by_name, _, _ = kernel_stats(Context(t))
    assert {k.name: k.mean_occupancy_pct for k in by_name} == {"k": 37.5, "j": 10.0}


def test_eligible_only_under_an_eligible_op_of_its_own_chain():
    """aten::add 0-10 launches k_add (5); aten::mm 20-40 launches nothing; step 50-150 > aten::mm 60-80 launches
    sgemm (7, not on Tensor Cores); lost (11) has no launcher. Eligible: sgemm only (its op eligible though its
    parent is not); other: k_add (a root op, not eligible, whatever the host rows after it) + lost = 16."""
    t = table([ev("aten::add", K.CPU_OP, 0, 10, external_id=1), ev("k_add", K.KERNEL, 2, 5, external_id=1),
               ev("aten::mm", K.CPU_OP, 20, 20), ev("step", K.USER_ANNOTATION, 50, 100),
               ev("aten::mm", K.CPU_OP, 60, 20, external_id=2), ev("sgemm", K.KERNEL, 62, 7, external_id=2),
               ev("lost", K.KERNEL, 300, 11)], devices=[{"kind": "cuda"}])
    ctx = Context(t)
    _, _, cores = kernel_stats(ctx)
    assert [(c.core, c.calls, c.total_ns) for c in cores] == [(CORE_TENSOR, 0, 0), (CORE_ELIGIBLE, 1, 7),
                                                              (CORE_OTHER, 2, 16)]
    assert [t.strings[int(x)] for x in ctx.ev["name"][eligible_rows(ctx)]] == ["sgemm"]
