"""Analysis on tiny hand-made EventTables: every expected number is worked out by hand below.

All values are integers in ns, so every comparison is exact (tolerance 0).
"""
import random

import numpy as np
import pytest

from canning_tb.analysis import intervals as iv
from canning_tb.analysis import report
from canning_tb.analysis.build import build_digest
from canning_tb.util.digest_json import to_plain
from canning_tb.analysis.cluster import analyse_ranks
from canning_tb.analysis.common import collective_kind, nest
from canning_tb.analysis.digest import SCHEMA_VERSION
from canning_tb.analysis.memory import downsample
from canning_tb.analysis.summary import window_figures
from canning_tb.ingest.table import EVENT_COLUMNS, MEMORY_COLUMNS, ColumnBuilder, EventTable, Kind, sort_by_time

K = Kind


def mk(events, memory=(), devices=None, rank=0, side=None) -> EventTable:
    t = EventTable()
    b = ColumnBuilder(EVENT_COLUMNS)
    for e in events:
        e = dict(e)
        e["name"] = t.strings.id(e["name"])
        for k in ("shapes", "stack", "core", "group"):
            if k in e:
                e[k] = t.strings.id(e[k])
        e.setdefault("pid", 1)
        e.setdefault("tid", 1)
        e["kind"] = int(e["kind"])
        if e["kind"] in (K.KERNEL, K.COMM_KERNEL, K.MEMCPY, K.MEMSET):
            e.setdefault("device", 0)
            e.setdefault("stream", 7)
            e.setdefault("pid", 0)
        b.add(**e)
    m = ColumnBuilder(MEMORY_COLUMNS)
    for r in memory:
        r = dict(r)
        r["device"] = t.strings.id(r["device"])
        if "component" in r:
            r["component"] = t.strings.id(r["component"])
        m.add(**r)
    t.events = sort_by_time(b.freeze())
    t.memory = sort_by_time(m.freeze())
    t.meta.devices = devices or []
    t.meta.rank = rank
    t.side = side or {}
    t.check()
    return t


# ---------------------------------------------------------------- intervals


def _points(s, e):
    out = set()
    for a, b in zip(s, e):
        out.update(range(int(a), int(b)))
    return out


def test_interval_ops_by_hand():
    u = iv.union([5, 0, 2, 10, 20], [7, 3, 4, 12, 20])  # [20,20) is empty
    assert u[0].tolist() == [0, 5, 10] and u[1].tolist() == [4, 7, 12]
    a = iv.union([0, 10], [5, 20])
    b = iv.union([3, 12], [11, 15])
    i = iv.intersect(a, b)
    assert list(zip(i[0].tolist(), i[1].tolist())) == [(3, 5), (10, 11), (12, 15)]
    d = iv.subtract(a, b)
    assert list(zip(d[0].tolist(), d[1].tolist())) == [(0, 3), (11, 12), (15, 20)]
    assert iv.total(a) == 15
    assert iv.measure(a, [0, 4, 19], [10, 12, 100]).tolist() == [5, 3, 1]
    assert iv.union([0, 3], [3, 5])[0].tolist() == [0]  # touching intervals merge


def test_interval_ops_against_point_sets():
    rng = random.Random(7)
    for _ in range(200):
        def rand_set():
            n = rng.randint(0, 8)
            s = [rng.randint(0, 60) for _ in range(n)]
            e = [x + rng.randint(0, 15) for x in s]
            return iv.union(s, e), _points(s, e)
        (a, pa), (b, pb_) = rand_set(), rand_set()
        assert _points(*iv.intersect(a, b)) == pa & pb_
        assert _points(*iv.subtract(a, b)) == pa - pb_
        assert _points(*iv.union_sets(a, b)) == pa | pb_
        lo, hi = sorted([rng.randint(0, 80), rng.randint(0, 80)])
        assert int(iv.measure(a, [lo], [hi])[0]) == len({p for p in pa if lo <= p < hi})


# ---------------------------------------------------------------- nesting


def test_nesting_parents_and_self_time():
    t = mk([
        dict(ts=0, dur=100, kind=K.CPU_OP, name="outer"),
        dict(ts=10, dur=30, kind=K.CPU_OP, name="a"),
        dict(ts=10, dur=10, kind=K.CPU_OP, name="a_child"),  # same start as its parent
        dict(ts=40, dur=0, kind=K.CPU_OP, name="zero"),       # zero length, right after a ends
        dict(ts=50, dur=20, kind=K.CPU_OP, name="b"),
        dict(ts=0, dur=5, kind=K.CPU_OP, name="other_thread", tid=2),
    ])
    rows = np.arange(len(t))
    n = nest(t, rows)
    names = [t.name(int(r)) for r in n.rows]
    par = {names[i]: (names[n.parent[i]] if n.parent[i] >= 0 else None) for i in range(len(names))}
    assert par == {"outer": None, "a": "outer", "a_child": "a", "zero": "outer", "b": "outer", "other_thread": None}
    d = build_digest(t)
    by = {o.name: o for o in d.ops_by_name}
    assert by["outer"].host_self_ns == 100 - 30 - 0 - 20
    assert by["a"].host_self_ns == 20
    assert by["a_child"].host_total_ns == 10


# ---------------------------------------------------------------- step breakdown priorities


def gpu_table():
    """Two steps on the host; kernels, a comm kernel, memcpy, runtime launches, dataloader.

    Step 1 host [0, 100), step 2 host [100, 200). Launches (RUNTIME) inside step 1:
    k1 at [20, 60) (launched at 10), comm at [50, 80) (launched at 12), k2 at [90, 130)
    (launched at 14: straddles the host end of step 1, so step 1 extends to 130 -> capped at the
    start of step 2 = 100). Step 2: memcpy [140, 150) launched at 105, memset [150, 152).
    """
    ev = [
        dict(ts=0, dur=100, kind=K.USER_ANNOTATION, name="ProfilerStep#1"),
        dict(ts=100, dur=100, kind=K.USER_ANNOTATION, name="ProfilerStep#2"),
        dict(ts=1, dur=8, kind=K.USER_ANNOTATION, name="enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"),
        dict(ts=9, dur=20, kind=K.CPU_OP, name="aten::addmm", external_id=1, shapes="[[2], [2, 2]]"),
        dict(ts=10, dur=1, kind=K.RUNTIME, name="cudaLaunchKernel", correlation=101, external_id=1),
        dict(ts=12, dur=1, kind=K.RUNTIME, name="cudaLaunchKernel", correlation=102, external_id=1),
        dict(ts=14, dur=1, kind=K.RUNTIME, name="cudaLaunchKernel", correlation=103, external_id=1),
        dict(ts=20, dur=40, kind=K.KERNEL, name="k1", correlation=101, external_id=1),
        dict(ts=50, dur=30, kind=K.COMM_KERNEL, name="ncclDevKernel_AllReduce_Sum_f32_RING_LL", correlation=102,
             external_id=1, bytes=1000),
        dict(ts=90, dur=40, kind=K.KERNEL, name="k2", correlation=103, external_id=1),
        dict(ts=104, dur=10, kind=K.CPU_OP, name="aten::copy_", external_id=2),
        dict(ts=105, dur=3, kind=K.RUNTIME, name="cudaMemcpyAsync", correlation=104, external_id=2),
        dict(ts=140, dur=10, kind=K.MEMCPY, name="Memcpy HtoD", correlation=104, external_id=2),
        dict(ts=150, dur=2, kind=K.MEMSET, name="Memset", correlation=105),
        dict(ts=160, dur=10, kind=K.CPU_OP, name="aten::empty_cache_like"),
    ]
    return mk(ev, devices=[{"kind": "cuda", "index": 0, "name": "X", "memory": 1000, "compute_capability": "8.0"}])


def test_breakdown_priorities_by_hand():
    d = build_digest(gpu_table())
    assert d.schema_version == SCHEMA_VERSION
    s1, s2 = d.steps
    assert (s1.number, s1.start_ns, s1.dur_ns) == (1, 0, 100)
    assert (s2.number, s2.start_ns, s2.dur_ns) == (2, 100, 100)
    b = s1.breakdown
    # K = [20,60) u [90,100) (k2 clipped at the step end); C = [50,80)
    assert b.compute_ns == (50 - 20) + (100 - 90)  # K - C
    assert b.overlapped_ns == 60 - 50
    assert b.communication_ns == 80 - 60
    assert b.runtime_ns == 3  # [10,11) [12,13) [14,15)
    assert b.dataloader_ns == 8  # [1,9)
    # host: addmm [9,29) minus runtime (3) minus kernel k1 [20,29) = 9 - 3 = 8... computed below
    host_points = set(range(9, 29)) - {10, 12, 14} - set(range(20, 29))
    assert b.host_ns == len(host_points)
    parts = [b.compute_ns, b.overlapped_ns, b.communication_ns, b.memcpy_ns, b.memset_ns, b.device_wait_ns, b.runtime_ns,
             b.dataloader_ns, b.host_ns, b.idle_ns]
    assert sum(parts) == b.total_ns == 100
    b2 = s2.breakdown
    assert b2.compute_ns == 30  # k2 [100,130) belongs to step 2 by time
    assert b2.memcpy_ns == 10 and b2.memset_ns == 2
    assert b2.runtime_ns == 0  # [105,108) lies under k2 [100,130): compute wins
    assert b2.host_ns == 10  # copy_ [104,114) is under k2 too; the op at [160,170) counts
    assert sum([b2.compute_ns, b2.overlapped_ns, b2.communication_ns, b2.memcpy_ns, b2.memset_ns, b2.device_wait_ns, b2.runtime_ns,
                b2.dataloader_ns, b2.host_ns, b2.idle_ns]) == 100


def test_step_extends_to_device_work_of_last_step():
    t = mk([
        dict(ts=0, dur=50, kind=K.USER_ANNOTATION, name="ProfilerStep#3"),
        dict(ts=5, dur=1, kind=K.RUNTIME, name="cudaLaunchKernel", correlation=1),
        dict(ts=40, dur=30, kind=K.KERNEL, name="k", correlation=1),
    ])
    d = build_digest(t)
    assert d.steps[0].dur_ns == 70  # last step: extended to the end of its kernel
    assert d.steps[0].breakdown.compute_ns == 30


def test_no_steps_gives_one_window_step():
    t = mk([dict(ts=10, dur=5, kind=K.CPU_OP, name="aten::add"), dict(ts=30, dur=10, kind=K.CPU_OP, name="aten::mul")])
    d = build_digest(t)
    assert len(d.steps) == 1 and d.steps[0].number == 0
    assert (d.steps[0].start_ns, d.steps[0].dur_ns) == (10, 30)
    assert d.steps[0].breakdown.host_ns == 15 and d.steps[0].breakdown.idle_ns == 15


def test_ops_device_attribution_and_kernels():
    d = build_digest(gpu_table())
    by = {o.name: o for o in d.ops_by_name}
    assert "ProfilerStep#1" not in by
    a = by["aten::addmm"]
    # k1 [20, 60), the comm kernel [50, 80) and k2 [90, 130): their union, the overlap [50, 60) once
    assert a.calls == 1 and a.device_self_ns == (80 - 20) + (130 - 90) == a.device_total_ns
    assert a.tc_eligible and not by["aten::copy_"].tc_eligible
    assert by["aten::copy_"].device_self_ns == 10  # the memcpy
    assert {k.name: k.calls for k in a.kernels} == {"k1": 1, "k2": 1, "ncclDevKernel_AllReduce_Sum_f32_RING_LL": 1}
    shp = [o for o in d.ops_by_shape if o.name == "aten::addmm"][0]
    assert shp.input_shapes == "[[2], [2, 2]]"
    kn = {k.name: k for k in d.kernels_by_name}
    assert kn["k1"].total_ns == 40 and kn["k1"].stream == 7 and not kn["k1"].communication
    assert kn["ncclDevKernel_AllReduce_Sum_f32_RING_LL"].communication
    ko = {(k.name, k.op_name) for k in d.kernels_by_op}
    assert ("k2", "aten::addmm") in ko
    cores = {c.core: c.total_ns for c in d.cores}
    # k1 and k2 (80 ns) are launched by aten::addmm, a Tensor-Core-eligible op; the comm kernel is no compute
    assert cores == {"Tensor Cores": 0, "Other, under Tensor-Core-eligible operators": 80, "Other": 0}


def test_communication_section_by_hand():
    d = build_digest(gpu_table())
    c = d.communication
    assert c.total_ns == 30 and c.overlapped_ns == 10 and c.not_overlapped_ns == 20
    assert window_figures(d)["comm_not_hidden_share"] == pytest.approx(20 / 200)  # the one definition (one step)
    (s,) = c.collectives
    assert (s.kind, s.calls, s.total_ns, s.bytes) == ("AllReduce", 1, 30, 1000)
    assert s.bandwidth_gbps == pytest.approx(1000 / 30)
    assert [(x.kind, x.start_ns, x.dur_ns, x.step) for x in c.calls] == [("AllReduce", 50, 30, 1)]


def test_cpu_only_host_collectives_count_as_communication():
    t = mk([
        dict(ts=0, dur=100, kind=K.USER_ANNOTATION, name="ProfilerStep#0"),
        dict(ts=10, dur=40, kind=K.CPU_OP, name="c10d::allreduce_"),
        dict(ts=12, dur=30, kind=K.CPU_OP, name="record_param_comms"),
        dict(ts=15, dur=20, kind=K.USER_ANNOTATION, name="gloo:all_reduce"),
        dict(ts=60, dur=10, kind=K.CPU_OP, name="aten::mm"),
    ])
    d = build_digest(t)
    b = d.steps[0].breakdown
    # one classification for the breakdown and the table: the backend range gloo:all_reduce [15,35);
    # the rest of c10d::allreduce_ / record_param_comms [10,15) [35,50) is host work, with aten::mm
    assert b.communication_ns == 20 and b.host_ns == 20 + 10 and b.idle_ns == 50
    (s,) = d.communication.collectives
    assert (s.kind, s.calls, s.total_ns) == ("AllReduce", 1, 20)


def test_gloo_worker_thread_counted_once():
    # gloo runs the collective on a worker thread, outside the c10d op that queued it
    t = mk([
        dict(ts=0, dur=100, kind=K.USER_ANNOTATION, name="ProfilerStep#0"),
        dict(ts=10, dur=5, kind=K.CPU_OP, name="c10d::allreduce_"),
        dict(ts=12, dur=30, kind=K.USER_ANNOTATION, name="gloo:all_reduce", tid=2),
        dict(ts=50, dur=5, kind=K.CPU_OP, name="c10d::broadcast_"),
    ])
    d = build_digest(t)
    assert {(c.kind, c.calls, c.total_ns) for c in d.communication.collectives} == {("AllReduce", 1, 30)}
    # the breakdown counts the same rows as the table: the worker range [12,42); the c10d ops that
    # queued work ([10,12) before it, [50,55)) are host time
    b = d.steps[0].breakdown
    assert (b.communication_ns, b.host_ns) == (30, 2 + 5)


def test_python_function_stacks_and_ai_cpu_rule():
    t = mk([
        dict(ts=0, dur=100, kind=K.PYTHON_FUNCTION, name="train.py(10): main"),
        dict(ts=5, dur=50, kind=K.PYTHON_FUNCTION, name="model.py(3): forward"),
        dict(ts=10, dur=10, kind=K.CPU_OP, name="aten::mm"),
        dict(ts=60, dur=10, kind=K.CPU_OP, name="aten::mm"),
        dict(ts=11, dur=1, kind=K.RUNTIME, name="aclnnMatmul", correlation=5),
        dict(ts=30, dur=25_000, kind=K.KERNEL, name="IndexPut", core="AI_CPU", correlation=5),
    ])
    d = build_digest(t)
    st = {(o.call_stack, o.calls) for o in d.ops_by_stack if o.name == "aten::mm"}
    assert st == {("model.py(3): forward;train.py(10): main", 1), ("train.py(10): main", 1)}
    assert {c.core: c.total_ns for c in d.cores} == {"AI_CPU": 25_000}
    (h,) = [h for h in d.rule_hits if h.rule == "ai_cpu"]
    assert h.value == 25_000 and "IndexPut" in h.detail
    mm = [o for o in d.ops_by_name if o.name == "aten::mm"][0]
    assert mm.device_self_ns == 25_000  # the kernel's launch lies inside the first aten::mm


@pytest.mark.parametrize("name,kind", [
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "AllReduce"), ("ncclKernel_AllGather_RING_LL_Sum_int8_t", "AllGather"),
    ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", "ReduceScatter"), ("c10d::allreduce_", "AllReduce"),
    ("gloo:all_reduce", "AllReduce"), ("nccl:all_to_all", "AllToAll"), ("hcom_allReduce_", "AllReduce"),
    ("hcom_reduceScatter__1", "ReduceScatter"), ("c10d::broadcast_", "Broadcast"), ("nccl:recv 0<-1", "Recv"),
    ("c10d::barrier", "Barrier"), ("hcom_send_", "Send"), ("c10d::_allgather_base_", "AllGather"),
    ("ncclKernel_Reduce_RING_LL_Sum_float", "Reduce"), ("c10d::gather_", "Gather"), ("c10d::scatter_", "Scatter"),
])
def test_collective_kind(name, kind):
    assert collective_kind(name) == kind


# ---------------------------------------------------------------- memory


def test_memory_pairs_peak_and_ops():
    t = mk(
        [dict(ts=0, dur=100, kind=K.CPU_OP, name="outer"), dict(ts=10, dur=20, kind=K.CPU_OP, name="aten::empty"),
         dict(ts=50, dur=1, kind=K.CPU_OP, name="torch.cuda.empty_cache")],
        memory=[
            dict(ts=15, device="cuda:0", bytes=100, addr=1, allocated=100, reserved=200),
            dict(ts=20, device="cuda:0", bytes=50, addr=2, allocated=150, reserved=200),
            dict(ts=40, device="cuda:0", bytes=-100, addr=1, allocated=50, reserved=200),
            dict(ts=45, device="cuda:0", bytes=-30, addr=9, allocated=20, reserved=200),  # allocated before the window
            dict(ts=200, device="cuda:0", bytes=10, addr=3, allocated=30, reserved=200),  # outside every op
        ],
        devices=[{"kind": "cuda", "index": 0, "memory": 160}])
    d = build_digest(t)
    (m,) = d.memory
    assert (m.peak_allocated_bytes, m.peak_ts_ns, m.peak_reserved_bytes, m.capacity_bytes) == (150, 20, 200, 160)
    assert (m.allocations, m.frees, m.allocated_bytes, m.empty_cache_calls) == (3, 2, 160, 1)
    ev = sorted((e.op, e.bytes, e.alloc_ns, e.free_ns) for e in m.events)
    assert ev == [("", 10, 200, -1), ("aten::empty", 50, 20, -1), ("aten::empty", 100, 15, 40), ("outer", 30, -1, 45)]
    ops = {o.name: o for o in m.ops}
    assert (ops["aten::empty"].self_allocations, ops["aten::empty"].self_allocated_bytes) == (2, 150)
    assert ops["aten::empty"].self_increase_bytes == 150
    assert (ops["outer"].allocations, ops["outer"].allocated_bytes, ops["outer"].self_allocations) == (2, 150, 0)
    assert ops["outer"].increase_bytes == 150 - 100 - 30 and ops["outer"].self_increase_bytes == -130
    hits = {h.rule for h in d.rule_hits}
    assert {"peak_memory", "empty_cache"} <= hits  # 200 / 160 reserved > 90 %
    s = str(report.memory_summary(d))
    assert "Warning: empty_cache" in s and "cuda:0" in s


def test_memory_curve_uses_pta_ge_component():
    mem = [dict(ts=i, device="npu:0", bytes=0, allocated=v, reserved=2 * v, active=v, component=c)
           for i, (v, c) in enumerate([(5, "PTA"), (7, "PTA+GE"), (100, "APP"), (9, "PTA+GE"), (3, "GE")])]
    d = build_digest(mk([dict(ts=0, dur=10, kind=K.CPU_OP, name="x")], memory=mem))
    (m,) = d.memory
    assert list(m.curve_allocated_bytes) == [7, 9] and list(m.curve_active_bytes) == [7, 9]
    assert m.peak_allocated_bytes == 9 and m.peak_ts_ns == 3
    assert {c.component: c.peak_allocated_bytes for c in m.components} == {"PTA": 5, "PTA+GE": 9, "APP": 100, "GE": 3}


def test_downsample_keeps_global_peak():
    rng = np.random.default_rng(1)
    v = rng.integers(0, 1000, 100_000)
    v[54321] = 5000
    keep = downsample(v, 2000)
    assert len(keep) <= 2000 and 54321 in keep and keep[0] == 0 and keep[-1] == len(v) - 1
    assert v[keep].min() == v.min()


# ---------------------------------------------------------------- rules, reports, dict


def test_rules_reports_and_dict():
    ms = 1_000_000
    t = mk([
        dict(ts=0, dur=100 * ms, kind=K.USER_ANNOTATION, name="ProfilerStep#1"),
        dict(ts=0, dur=60 * ms, kind=K.USER_ANNOTATION, name="enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"),
        dict(ts=60 * ms, dur=10 * ms, kind=K.CPU_OP, name="aten::addmm"),
        dict(ts=75 * ms, dur=5 * ms, kind=K.CPU_OP, name="aten::addmm"),
        dict(ts=81 * ms, dur=5 * ms, kind=K.CPU_OP, name="aten::relu"),
    ])
    d = build_digest(t)
    hits = {h.rule: h for h in d.rule_hits}
    assert hits["dataloader_share"].value == pytest.approx(0.6)
    rep = report.op_summary(d)
    # no input shapes in this table: the FLOPs columns are unknown (None: an empty CSV cell), never 0
    assert rep.columns == ["Op Type", "Calls", "Total(ms)", "Avg(ms)", "Min(ms)", "Max(ms)", "GFLOP", "TFLOP/s", "Roof(%)"]
    assert rep.rows == [["aten::addmm", 2, 15.0, 7.5, 5.0, 10.0, None, None, None],
                        ["aten::relu", 1, 5.0, 5.0, 5.0, 5.0, None, None, None]]
    assert rep.to_csv().splitlines()[:2] == ["Op Type,Calls,Total(ms),Avg(ms),Min(ms),Max(ms),GFLOP,TFLOP/s,Roof(%)",
                                             "aten::addmm,2,15.0,7.5,5.0,10.0,,,"]
    assert "aten::addmm" in str(rep) and rep.to_dict()["rows"][0][1] == 2
    sug = report.suggestions(d)
    assert any("DataLoader" in r[1] for r in sug.rows)
    dd = to_plain(d)
    assert isinstance(dd["steps"][0]["dur_ns"], int) and dd["steps"][0]["dur_ns"] == 100 * ms
    assert dd["schema_version"] == SCHEMA_VERSION and "scalars" not in dd  # times only: no second definition


# ---------------------------------------------------------------- cluster


def test_cluster_wait_transfer_and_slow_rank_by_hand():
    def rank_table(rank, durs, compute):
        ev = [dict(ts=0, dur=1000, kind=K.USER_ANNOTATION, name="ProfilerStep#1"),
              dict(ts=0, dur=compute, kind=K.KERNEL, name="gemm")]
        ts = 500
        for x in durs:
            ev.append(dict(ts=ts, dur=x, kind=K.COMM_KERNEL, name="ncclDevKernel_AllReduce_Sum_f32_RING_LL", bytes=800))
            ts += 100
        return mk(ev, rank=rank)
    ds = [build_digest(rank_table(0, [10, 50], 300)), build_digest(rank_table(1, [30, 20], 400))]
    r = analyse_ranks(ds)
    # call 0: min(10, 30) = 10 -> waits 0 / 20; call 1: min(50, 20) = 20 -> waits 30 / 0
    by = {x["rank"]: x for x in r["ranks"]}
    assert (by[0]["transfer_ns"], by[0]["wait_ns"]) == (30, 30)
    assert (by[1]["transfer_ns"], by[1]["wait_ns"]) == (30, 20)
    sr = {x["metric"]: x for x in r["slow_ranks"]}
    assert sr["computing"]["ratio"] == pytest.approx((400 - 300) / 350) and sr["computing"]["slowest_rank"] == 1
    assert sr["communication"]["ratio"] == pytest.approx((60 - 50) / 55) and sr["communication"]["slowest_rank"] == 1
    assert sr["computing"]["flagged"]
    # ring matrix: AllReduce, n = 2, each rank sent 2 x 800 bytes: 2 (n-1)/n x 1600 = 1600 to the other
    assert r["matrix_source"] == "ring"
    assert {(c["src"], c["dst"]): c["bytes"] for c in r["matrix"]} == {(0, 1): 1600, (1, 0): 1600}


def test_empty_and_degenerate_tables():
    d = build_digest(EventTable())
    assert len(d.steps) == 1 and d.steps[0].dur_ns == 0 and not d.ops_by_name and not d.memory
    d = build_digest(mk([], memory=[dict(ts=5, device="CPU", bytes=8, addr=1, allocated=8, reserved=0)]))
    assert d.memory[0].peak_allocated_bytes == 8 and d.memory[0].events[0].op == ""
    d = build_digest(mk([dict(ts=0, dur=0, kind=K.USER_ANNOTATION, name="ProfilerStep#7")]))
    assert [(s.number, s.dur_ns) for s in d.steps] == [(7, 0)]
    for f in (report.op_summary, report.memory_summary, report.communication_summary, report.suggestions):
        str(f(d))
    assert analyse_ranks([])["ranks"] == [] and analyse_ranks([d])["slow_ranks"] == []


def test_window_and_ranks_report_text():
    d = build_digest(gpu_table())
    text = report.window_report(d, top=3)
    for s in ("Step time breakdown", "Operator summary", "Kernel summary", "Communication summary", "Suggestions"):
        assert s in text
    st = report.step_summary(d)
    assert st.rows[0][:3] == ["1", 0.0, 0.0] and st.rows[-1][0] == "average"
    assert "Slow rank check" in report.ranks_report([d, d])


def test_memory_events_time_order_and_cap(monkeypatch):
    from canning_tb.analysis import memory as memmod
    mem = [dict(ts=10 * i + 1, device="cuda:0", bytes=b, addr=i + 1, allocated=sum([5, 50, 7][: i + 1]), reserved=64)
           for i, b in enumerate([5, 50, 7])]
    t = mk([dict(ts=0, dur=100, kind=K.CPU_OP, name="op")], memory=mem)
    assert [e.alloc_ns for e in build_digest(t).memory[0].events] == [1, 11, 21]
    monkeypatch.setattr(memmod, "MAX_EVENTS", 2)
    m = build_digest(t).memory[0]
    assert m.events_truncated and [e.bytes for e in m.events] == [50, 7]


def test_gpu_window_with_gloo_collectives_counts_them():
    """A GPU window whose collectives ran on the host (gloo on CPU tensors): no communication
    kernel, so the host backend range is the communication, in the table and the breakdown alike.
    Kernel [10,40); gloo:all_reduce [30,70) on gloo's worker thread: overlapped [30,40),
    communication [40,70)."""
    t = mk([
        dict(ts=0, dur=100, kind=K.USER_ANNOTATION, name="ProfilerStep#0"),
        dict(ts=10, dur=30, kind=K.KERNEL, name="gemm"),
        dict(ts=25, dur=10, kind=K.CPU_OP, name="c10d::allreduce_"),
        dict(ts=30, dur=40, kind=K.USER_ANNOTATION, name="gloo:all_reduce", tid=2),
    ], devices=[{"kind": "cuda", "index": 0, "name": "X", "memory": 1000, "compute_capability": "8.0"}])
    d = build_digest(t)
    b = d.steps[0].breakdown
    assert (b.compute_ns, b.overlapped_ns, b.communication_ns) == (20, 10, 30)
    assert [(c.kind, c.calls, c.total_ns) for c in d.communication.collectives] == [("AllReduce", 1, 40)]
    assert d.communication.total_ns == b.overlapped_ns + b.communication_ns == 40


def test_device_wait_category_by_hand():
    """cudaStreamSynchronize [20,45) and [58,60), cudaMemcpyAsync [45,58) whose copy [50,55) is
    device-to-host into pageable memory: blocking calls over [20,60). With the kernel [10,30) and
    the copy taking priority, device wait is [30,50) and [55,60) = 25; cudaLaunchKernel [5,8) is
    runtime."""
    t = mk([
        dict(ts=0, dur=100, kind=K.USER_ANNOTATION, name="ProfilerStep#0"),
        dict(ts=5, dur=3, kind=K.RUNTIME, name="cudaLaunchKernel", correlation=1),
        dict(ts=10, dur=20, kind=K.KERNEL, name="gemm", correlation=1),
        dict(ts=20, dur=25, kind=K.RUNTIME, name="cudaStreamSynchronize"),
        dict(ts=45, dur=13, kind=K.RUNTIME, name="cudaMemcpyAsync", correlation=2),
        dict(ts=50, dur=5, kind=K.MEMCPY, name="Memcpy DtoH (Device -> Pageable)", correlation=2),
        dict(ts=58, dur=2, kind=K.RUNTIME, name="cudaStreamSynchronize"),
    ])
    b = build_digest(t).steps[0].breakdown
    assert (b.compute_ns, b.memcpy_ns, b.device_wait_ns, b.runtime_ns) == (20, 5, 20 + 5, 3)
    assert b.idle_ns == 100 - 20 - 5 - 25 - 3
