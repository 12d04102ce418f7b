"""The memory view's figures (analysis/memory.py, analysis/memory_range.py) on tables made by hand.

Every expected number is worked out by hand in the comments (issue 46: the mutants these tests kill).
Times in ns, sizes in bytes; -1 is "unknown" (NONE) in every column.
"""
import numpy as np
import pytest

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis import memory as memmod
from canning_tb.analysis.context import Context
from canning_tb.analysis.memory import _device_capacity, downsample, memory_stats
from canning_tb.analysis.memory_range import memory_range
from canning_tb.ingest.table import EVENT_COLUMNS, MEMORY_COLUMNS, ColumnBuilder, EventTable, Kind, sort_by_time

OP = Kind.CPU_OP


def tbl(events=(), memory=(), devices=None, side=None, first=()) -> EventTable:
    """An EventTable of host events (name, ts, dur[, kind, tid]) and memory records (dicts of MEMORY_COLUMNS,
    `device`, `component` and `op` given as text); the strings `first` are interned first (ids 0, 1 ...)."""
    t = EventTable()
    for text in first:
        t.strings.id(text)
    cols = ColumnBuilder(EVENT_COLUMNS)
    for name, ts, dur, *rest in events:
        kind = rest[0] if rest else OP
        tid = rest[1] if len(rest) > 1 else 1
        cols.add(name=t.strings.id(name), kind=int(kind), ts=ts, dur=dur, pid=1, tid=tid)
    mem = ColumnBuilder(MEMORY_COLUMNS)
    for r in memory:
        r = dict(r, device=t.strings.id(r["device"]))
        for k in ("component", "op"):
            if k in r:
                r[k] = t.strings.id(r[k])
        mem.add(**r)
    t.events = sort_by_time(cols.freeze())
    t.memory = sort_by_time(mem.freeze())
    t.meta.devices = devices or []
    t.side = side or {}
    t.check()
    return t


def stats(t: EventTable) -> dict:
    return {d.device: d for d in memory_stats(Context(t))}


def events_of(d) -> list:
    return [(e.op, e.bytes, e.alloc_ns, e.free_ns) for e in d.events]


# ---------------------------------------------------------------- downsample


def test_downsample_by_hand():
    # n = 10 > 6 points: (6 - 2) // 2 = 2 buckets, edges linspace(0, 10, 3) = [0, 5, 10]
    values = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3])
    # bucket [0, 5): max 5 at 4, min 1 at 1 (the first of the two 1s); bucket [5, 10): max 9 at 5, min 2 at 6;
    # plus the first (0), the last (9) and the global maximum (5)
    assert downsample(values, 6).tolist() == [0, 1, 4, 5, 6, 9]
    # 3 points: (3 - 2) // 2 = 0, at least 1 bucket [0, 10): max 9 at 5, min 1 at 1
    assert downsample(values, 3).tolist() == [0, 1, 5, 9]
    # exactly max_points values: all kept
    assert downsample(values[:6], 6).tolist() == [0, 1, 2, 3, 4, 5]


def test_downsample_first_of_equal_extremes():
    # n = 8, 6 points: 2 buckets, edges [0, 4, 8]; [7, 2, 7, 2]: max 7 at 0, min 2 at 1; [5, 5, 1, 1]: max 5 at 4,
    # min 1 at 6; global max 7 first at 0; last 7
    assert downsample(np.array([7, 2, 7, 2, 5, 5, 1, 1]), 6).tolist() == [0, 1, 4, 6, 7]


# ---------------------------------------------------------------- capacity


def test_device_capacity_by_name():
    two = tbl(devices=[{"kind": "cuda", "index": 0, "memory": 100}, {"kind": "CUDA", "index": 1, "memory": 200}])
    assert _device_capacity(two, "cuda:1") == 200  # the kinds compared in lower case
    assert _device_capacity(two, "CUDA:0") == 100
    assert _device_capacity(two, "cuda") == 100  # no number: device 0
    assert _device_capacity(two, "npu:0") == -1  # two devices, none of the kind
    assert _device_capacity(two, "cuda:2") == -1
    assert _device_capacity(two, "") == -1
    assert _device_capacity(two, ":0") == -1  # no kind: no match
    no_index = tbl(devices=[{"kind": "npu", "index": 1, "memory": 4}, {"kind": "cuda", "memory": 9}])
    assert _device_capacity(no_index, "cuda:0") == 9  # a device without an index is device 0
    unknown = tbl(devices=[{"kind": "cuda", "index": 0, "memory": None}, {"kind": "cuda", "index": 1}])
    assert _device_capacity(unknown, "cuda:0") == -1 and _device_capacity(unknown, "cuda:1") == -1


def test_device_capacity_of_the_only_device():
    one = tbl(devices=[{"kind": "npu", "index": 3, "memory": 64}])
    # no device npu:0, but the window has one accelerator: its memory
    assert _device_capacity(one, "npu:0") == 64 and _device_capacity(one, "gpu:0") == 64
    assert _device_capacity(one, "cuda:0") == 64
    assert _device_capacity(one, "CPU") == -1  # the host is not the accelerator
    assert _device_capacity(one, "npu:123456789") == 64  # 9 digits: a number, no device of it
    assert _device_capacity(one, "npu:1234567890") == -1  # 10 digits: a damaged file, no device
    big = tbl(devices=[{"kind": "npu", "index": 123456789, "memory": 5}, {"kind": "cpu", "index": 0, "memory": 1}])
    assert _device_capacity(big, "npu:123456789") == 5
    assert _device_capacity(tbl(devices=[{"kind": "npu", "index": 3, "memory": None}]), "npu:0") == -1
    assert _device_capacity(tbl(devices=[{"kind": "npu", "index": 3}]), "npu:0") == -1


# ---------------------------------------------------------------- curve


def rec(ts, nbytes, addr=-1, allocated=-1, reserved=-1, device="cuda:0", **kw):
    return dict(ts=ts, device=device, bytes=nbytes, addr=addr, allocated=allocated, reserved=reserved, **kw)


def test_curve_from_signed_sizes_when_no_totals():
    """Old Kineto records: the running sum 10, 15, -5, -2 of +10, +5, -20, +3, shifted up by 5 so the lowest
    point is 0: 15, 20, 0, 3; the peak 20 at ts 2."""
    (d,) = stats(tbl(memory=[rec(1, 10, 1), rec(2, 5, 2), rec(3, -20, 9), rec(4, 3, 3)])).values()
    assert list(d.curve_allocated_bytes) == [15, 20, 0, 3] and list(d.curve_ts_ns) == [1, 2, 3, 4]
    assert (d.peak_allocated_bytes, d.peak_ts_ns, d.peak_reserved_bytes) == (20, 2, -1)
    assert list(d.curve_reserved_bytes) == [] and list(d.curve_active_bytes) == []
    # never below 0: running sum 4, 3, 9 as it is
    (d,) = stats(tbl(memory=[rec(1, 4, 1), rec(2, -1, 1), rec(3, 6, 2)])).values()
    assert list(d.curve_allocated_bytes) == [4, 3, 9] and (d.peak_allocated_bytes, d.peak_ts_ns) == (9, 3)


def test_curve_without_any_figure():
    """Samples of 0 bytes without totals: no curve, every peak unknown."""
    (d,) = stats(tbl(memory=[rec(1, 0), rec(2, 0)])).values()
    assert list(d.curve_ts_ns) == [] and (d.peak_allocated_bytes, d.peak_ts_ns, d.peak_reserved_bytes) == (-1, -1, -1)
    assert (d.allocations, d.frees, d.allocated_bytes) == (0, 0, 0) and list(d.events) == []


def test_curve_takes_the_records_with_totals_only():
    # allocated known at ts 2 (5) and 4 (7): the curve is those two; reserved known at 2 only (8): its peak is 8,
    # but the reserved curve needs every point; the active column: 3 at ts 4, unknown at ts 2
    mem = [rec(1, 4, 1), rec(2, 1, 2, allocated=5, reserved=8), rec(3, 4, 3),
           rec(4, 2, 4, allocated=7, active=3)]
    (d,) = stats(tbl(memory=mem)).values()
    assert list(d.curve_ts_ns) == [2, 4] and list(d.curve_allocated_bytes) == [5, 7]
    assert (d.peak_allocated_bytes, d.peak_ts_ns, d.peak_reserved_bytes) == (7, 4, 8)
    assert list(d.curve_reserved_bytes) == [] and list(d.curve_active_bytes) == [-1, 3]


def test_reserved_curve_and_peak():
    # reserved 6, 9, 4 at every point: curve and peak 9 (not the last, not the first)
    mem = [rec(1, 4, 1, allocated=4, reserved=6), rec(2, 2, 2, allocated=6, reserved=9),
           rec(3, -4, 1, allocated=2, reserved=4)]
    (d,) = stats(tbl(memory=mem)).values()
    assert list(d.curve_reserved_bytes) == [6, 9, 4] and d.peak_reserved_bytes == 9
    assert (d.peak_allocated_bytes, d.peak_ts_ns) == (6, 2)
    # all 0 (the CPU allocator): not recorded
    (d,) = stats(tbl(memory=[rec(1, 4, 1, allocated=4, reserved=0, device="CPU")])).values()
    assert list(d.curve_reserved_bytes) == [] and d.peak_reserved_bytes == -1
    # a single positive point among zeros is a figure
    mem = [rec(1, 4, 1, allocated=4, reserved=0), rec(2, 4, 2, allocated=8, reserved=3)]
    (d,) = stats(tbl(memory=mem)).values()
    assert list(d.curve_reserved_bytes) == [0, 3] and d.peak_reserved_bytes == 3


def test_curve_component_choice_per_device():
    """npu:0 has PTA and GE records only: its curve is PTA (5, 6); npu:1 has PTA+GE: that (11); npu:2 has GE
    and records without component: those (40)."""
    mem = [rec(1, 0, allocated=5, device="npu:0", component="PTA"), rec(2, 0, allocated=50, device="npu:0", component="GE"),
           rec(3, 0, allocated=6, device="npu:0", component="PTA"),
           rec(1, 0, allocated=11, device="npu:1", component="PTA+GE"), rec(2, 0, allocated=3, device="npu:1", component="PTA"),
           rec(1, 0, allocated=40, device="npu:2"), rec(2, 0, allocated=70, device="npu:2", component="GE")]
    d = stats(tbl(memory=mem))
    assert list(d["npu:0"].curve_allocated_bytes) == [5, 6] and list(d["npu:0"].curve_ts_ns) == [1, 3]
    assert list(d["npu:1"].curve_allocated_bytes) == [11]
    assert list(d["npu:2"].curve_allocated_bytes) == [40] and d["npu:2"].peak_allocated_bytes == 40
    # components: per device, peaks of its own records only; unknown reserved / allocated as -1
    assert sorted((c.component, c.peak_allocated_bytes, c.peak_reserved_bytes) for c in d["npu:0"].components) == [
        ("GE", 50, -1), ("PTA", 6, -1)]
    assert [c.component for c in d["npu:2"].components] == ["GE"]


def test_components_reserved_and_unknown_allocated():
    mem = [rec(1, 0, reserved=30, device="npu:0", component="APP"), rec(2, 0, reserved=20, device="npu:0", component="APP"),
           rec(3, 0, allocated=2, reserved=-1, device="npu:0", component="PTA")]
    (d,) = stats(tbl(memory=mem)).values()
    assert sorted((c.component, c.peak_allocated_bytes, c.peak_reserved_bytes) for c in d.components) == [
        ("APP", -1, 30), ("PTA", 2, -1)]


# ---------------------------------------------------------------- allocation events


def test_events_pairs_orphans_and_ops():
    """Records on cuda:0 (op = the innermost CPU op at the record's time, else the record's own op column):
    ts 12 +100 @1 in B (B inside A)    -> allocation, freed at 30 (the next record of @1 is the -100 at 30)
    ts 14 +8 @2 in B                   -> allocated again at 16 before any free: not freed (-1)
    ts 16 +8 @2 in B                   -> freed at 60
    ts 30 -100 @1 in A
    ts 40 -64 @3 in A                  -> a free whose allocation was before the window: alloc -1, free 40, 64 bytes
    ts 45 -7 @3 in A                   -> the same again (the previous record of @3 is a free)
    ts 50 +5, no address, in A         -> counted, no event
    ts 60 -8 @2, outside every op
    ts 70 +9 @4 with op column "mine"  -> op "mine", not freed
    Events ordered by time (alloc, else free): 12, 14, 16, 40, 45, 70."""
    ev = [("A", 10, 40), ("B", 11, 10)]
    mem = [rec(12, 100, 1), rec(14, 8, 2), rec(16, 8, 2), rec(30, -100, 1), rec(40, -64, 3), rec(45, -7, 3),
           rec(50, 5), rec(60, -8, 2), rec(70, 9, 4, op="mine")]
    (d,) = stats(tbl(ev, mem)).values()
    assert events_of(d) == [("B", 100, 12, 30), ("B", 8, 14, -1), ("B", 8, 16, 60), ("A", 64, -1, 40),
                            ("A", 7, -1, 45), ("mine", 9, 70, -1)]
    # allocations: 100, 8, 8, 5, 9 (5 records, 130 bytes); frees: -100, -64, -7, -8
    assert (d.allocations, d.frees, d.allocated_bytes, d.events_truncated) == (5, 4, 130, False)


def test_events_same_time_smaller_first():
    # two allocations at ts 5 (30 and 20 bytes) and a free at 5 of a block from before the window (10 bytes):
    # by time, then size: 10, 20, 30
    mem = [rec(5, 30, 1), rec(5, 20, 2), rec(5, -10, 3)]
    (d,) = stats(tbl([("op", 0, 10)], mem)).values()
    assert [(e.bytes, e.alloc_ns, e.free_ns) for e in d.events] == [(10, -1, 5), (20, 5, -1), (30, 5, -1)]


def test_events_cap_keeps_the_largest(monkeypatch):
    """Four allocations 5 @1, 50 @2, 7 @3, 50 @4 at ts 1, 2, 3, 4 and a free of 60 at ts 5 from before the window;
    at most 3: the largest, largest first, equal sizes by time: 60 (free 5), 50 (ts 2), 50 (ts 4)."""
    monkeypatch.setattr(memmod, "MAX_EVENTS", 3)
    mem = [rec(1, 5, 1), rec(2, 50, 2), rec(3, 7, 3), rec(4, 50, 4), rec(5, -60, 5)]
    (d,) = stats(tbl([("op", 0, 10)], mem)).values()
    assert d.events_truncated
    assert [(e.bytes, e.alloc_ns, e.free_ns) for e in d.events] == [(60, -1, 5), (50, 2, -1), (50, 4, -1)]
    monkeypatch.setattr(memmod, "MAX_EVENTS", 5)  # exactly the cap: all, by time
    (d,) = stats(tbl([("op", 0, 10)], mem)).values()
    assert not d.events_truncated and [e.bytes for e in d.events] == [5, 50, 7, 50, 60]


def test_empty_cache_calls_are_cpu_ops_of_the_name():
    # two CPU ops whose name holds empty_cache (any case), an annotation of the name does not count
    ev = [("torch.cuda.empty_cache", 0, 1), ("torch_npu.npu.EMPTY_CACHE", 2, 1), ("empty_cache", 4, 1, Kind.USER_ANNOTATION),
          ("aten::empty", 6, 1)]
    mem = [rec(0, 4, 1, allocated=4, device="cuda:0"), rec(1, 4, 2, allocated=8, device="cuda:1")]
    d = stats(tbl(ev, mem))
    assert d["cuda:0"].empty_cache_calls == 2 and d["cuda:1"].empty_cache_calls == 2


# ---------------------------------------------------------------- per-op statistics


def test_op_statistics_by_hand():
    """Ops: A [0, 100) holds B [10, 30) and C [40, 60); B again [70, 80) inside A; D [200, 210) without records.
    Records: +100 at 15 (B), +50 at 20 (B), -100 at 45 (C), +30 at 50 (C), +40 at 75 (B), -60 at 90 (A),
    +1000 at 300 (no op).
    B: self = total: 3 allocations, 190 bytes, increase 190.  C: 1 allocation, 30 bytes, increase -70.
    A: self 0 / 0 / -60; total 4 allocations, 220 bytes, increase 190 - 70 - 60 = 60.  D: not touched, left out.
    Order by total bytes: A 220, B 190, C 30."""
    ev = [("A", 0, 100), ("B", 10, 20), ("C", 40, 20), ("B", 70, 10), ("D", 200, 10)]
    mem = [rec(15, 100, 1), rec(20, 50, 2), rec(45, -100, 1), rec(50, 30, 3), rec(75, 40, 4), rec(90, -60, 5),
           rec(300, 1000, 6)]
    (d,) = stats(tbl(ev, mem)).values()
    got = [(o.name, o.allocations, o.allocated_bytes, o.self_allocations, o.self_allocated_bytes, o.increase_bytes,
            o.self_increase_bytes) for o in d.ops]
    assert got == [("A", 4, 220, 0, 0, 60, -60), ("B", 3, 190, 3, 190, 190, 190), ("C", 1, 30, 1, 30, -70, -70)]


def test_op_statistics_frees_only_and_no_ops():
    # an op whose records only free: 0 allocations, increase -8, listed; a window without CPU ops: no statistics
    (d,) = stats(tbl([("F", 0, 10)], [rec(5, -8, 1)])).values()
    assert [(o.name, o.allocations, o.allocated_bytes, o.increase_bytes) for o in d.ops] == [("F", 0, 0, -8)]
    (d,) = stats(tbl([("ann", 0, 10, Kind.USER_ANNOTATION)], [rec(5, 8, 1)])).values()
    assert list(d.ops) == [] and [e.op for e in d.events] == [""]
    # equal bytes keep the names' order (their first appearance): Y then X, 8 bytes each
    (d,) = stats(tbl([("Y", 0, 10), ("X", 20, 10)], [rec(5, 8, 1), rec(25, 8, 2)])).values()
    assert [(o.name, o.allocated_bytes) for o in d.ops] == [("Y", 8), ("X", 8)]


# ---------------------------------------------------------------- Ascend side tables


def opmem(name, nbytes, alloc, free, device="npu:0"):
    return {"name": name, "bytes": nbytes, "alloc_ns": alloc, "free_ns": free, "device": device}


def test_operator_memory_side_table():
    """No memory records: the operator_memory rows make the device. Blocks with bytes > 0 only (0 and None are not);
    by allocation time. mm: 300 (freed) + 100 = 400 bytes, 2 allocations, increase 400 - 300 = 100;
    add: 50 (freed), increase 0. Frees: 2 blocks with a free time."""
    rows = [opmem("mm", 100, 30, -1), opmem("add", 50, 20, 25), opmem("mm", 300, 10, 40), opmem("z", 0, 5, 6),
            opmem("n", None, 7, -1)]
    t = tbl([("torch.npu.empty_cache", 0, 1)], devices=[{"kind": "npu", "index": 0, "memory": 77}],
            side={"operator_memory": rows})
    (d,) = stats(t).values()
    assert (d.device, d.capacity_bytes, d.empty_cache_calls) == ("npu:0", 77, 1)
    assert (d.peak_allocated_bytes, d.peak_ts_ns, d.peak_reserved_bytes) == (-1, -1, -1)
    assert events_of(d) == [("mm", 300, 10, 40), ("add", 50, 20, 25), ("mm", 100, 30, -1)]
    assert (d.allocations, d.frees, d.allocated_bytes, d.events_truncated) == (3, 2, 450, False)
    got = [(o.name, o.allocations, o.allocated_bytes, o.self_allocations, o.self_allocated_bytes, o.increase_bytes,
            o.self_increase_bytes) for o in d.ops]
    assert got == [("mm", 2, 400, 2, 400, 100, 100), ("add", 1, 50, 1, 50, 0, 0), ("z", 0, 0, 0, 0, 0, 0),
                   ("n", 0, 0, 0, 0, 0, 0)]


def test_operator_memory_cap(monkeypatch):
    """At most 2 events: the largest, largest first, equal sizes by allocation time: 300, then 100 at 5."""
    monkeypatch.setattr(memmod, "MAX_EVENTS", 2)
    rows = [opmem("a", 100, 30, -1), opmem("b", 300, 10, 40), opmem("c", 100, 5, -1)]
    (d,) = stats(tbl(side={"operator_memory": rows})).values()
    assert d.events_truncated and events_of(d) == [("b", 300, 10, 40), ("c", 100, 5, -1)]
    assert (d.allocations, d.allocated_bytes) == (3, 500)
    monkeypatch.setattr(memmod, "MAX_EVENTS", 3)
    (d,) = stats(tbl(side={"operator_memory": rows})).values()
    assert not d.events_truncated and [e.alloc_ns for e in d.events] == [5, 10, 30]


def test_operator_memory_beside_memory_records():
    """npu:0 has its own allocation records (one +8 inside op P): the side table adds nothing to its events or ops;
    rows without device go to the first device (npu:0); NPU:1 (any case) has none: its rows make its events."""
    rows = [opmem("x", 64, 1, 2, device=None), opmem("y", 32, 3, -1, device="NPU:1")]
    t = tbl([("P", 0, 10)], [rec(5, 8, 1, allocated=8, device="npu:0"), rec(6, 0, allocated=4, device="npu:1")],
            side={"operator_memory": rows})
    d = stats(t)
    assert list(d) == ["npu:0", "npu:1"]
    assert events_of(d["npu:0"]) == [("P", 8, 5, -1)] and [o.name for o in d["npu:0"].ops] == ["P"]
    assert events_of(d["npu:1"]) == [("y", 32, 3, -1)] and [o.name for o in d["npu:1"].ops] == ["y"]


def test_operator_memory_ops_kept_when_events_are_not():
    """A device whose records only free (allocations 0) but whose ops were counted: the side table gives its
    events, its per-op statistics stay those of the records (Q: increase -8)."""
    rows = [opmem("x", 64, 1, 2)]
    t = tbl([("Q", 0, 10)], [rec(5, -8, 1, device="npu:0")], side={"operator_memory": rows})
    (d,) = stats(t).values()
    assert events_of(d) == [("x", 64, 1, 2)] and d.allocations == 1
    assert [(o.name, o.increase_bytes) for o in d.ops] == [("Q", -8)]


def test_module_components():
    """npu_module_mem: the peak reserved per (device, module); a row without device is the first device's;
    a module already among the device's components is not added again; a device without records is made
    (npu:3, default device npu:0 when there is none)."""
    modules = [{"component": "HCCL", "ts_ns": 1, "reserved_bytes": 10, "device": "npu:0"},
               {"component": "HCCL", "ts_ns": 2, "reserved_bytes": 30, "device": None},
               {"component": "HCCL", "ts_ns": 3, "reserved_bytes": 20, "device": "npu:0"},
               {"component": "APP", "ts_ns": 1, "reserved_bytes": 99, "device": "npu:0"},
               {"component": "SLOG", "ts_ns": 1, "reserved_bytes": None, "device": "npu:3"}]
    t = tbl(memory=[rec(1, 0, allocated=5, reserved=6, device="npu:0", component="APP")],
            devices=[{"kind": "npu", "index": 3, "memory": 1000}, {"kind": "npu", "index": 0, "memory": 500}],
            side={"npu_module_mem": modules})
    d = stats(t)
    assert list(d) == ["npu:0", "npu:3"]
    assert [(c.component, c.peak_allocated_bytes, c.peak_reserved_bytes) for c in d["npu:0"].components] == [
        ("APP", 5, 6), ("HCCL", -1, 30)]
    assert [(c.component, c.peak_reserved_bytes) for c in d["npu:3"].components] == [("SLOG", -1)]
    assert (d["npu:3"].capacity_bytes, d["npu:3"].peak_allocated_bytes, d["npu:3"].peak_ts_ns,
            d["npu:3"].peak_reserved_bytes) == (1000, -1, -1, -1)
    # no records at all: rows without device go to npu:0
    (only,) = memory_stats(Context(tbl(side={"npu_module_mem": modules[1:2]})))
    assert (only.device, [(c.component, c.peak_reserved_bytes) for c in only.components]) == ("npu:0", [("HCCL", 30)])


# ---------------------------------------------------------------- memory_range


def test_memory_range_bounds_are_inclusive():
    m = pb.DeviceMemory(device="npu:0")
    for op, size, alloc, free in (("a", 10, 0, 5), ("b", 20, 5, 9), ("a", 30, -1, 5), ("b", 5, 9, -1)):
        m.events.add(op=op, bytes=size, alloc_ns=alloc, free_ns=free)
    # [5, 9]: allocated at 5 and 9 (both edges); b's free at 9 is inside
    r = memory_range(m, 5, 9)
    assert [e.alloc_ns for e in r["events"]] == [5, 9] and (r["events_total"], r["events_truncated"]) == (4, False)
    assert r["ops"] == [{"name": "b", "allocations": 2, "bytes": 25, "max_bytes": 20, "freed": 1}]
    # up to 4: the one allocated at 0 (not the one from before the window), its free at 5 outside
    assert memory_range(m, None, 4)["ops"] == [{"name": "a", "allocations": 1, "bytes": 10, "max_bytes": 10, "freed": 0}]
    # from 0: a's free at 5 inside
    assert memory_range(m, 0, None)["ops"][1] == {"name": "a", "allocations": 1, "bytes": 10, "max_bytes": 10, "freed": 1}


def test_memory_range_ties_by_name():
    m = pb.DeviceMemory(device="cuda:0")
    for op, size in (("z", 6), ("y", 4), ("y", 2), ("x", 1)):
        m.events.add(op=op, bytes=size, alloc_ns=1, free_ns=-1)
    # z 6, y 4 + 2 = 6 (max 4), x 1: equal bytes by name, y before z; nothing freed
    assert [(r["name"], r["bytes"], r["max_bytes"], r["freed"]) for r in memory_range(m)["ops"]] == [
        ("y", 6, 4, 0), ("z", 6, 6, 0), ("x", 1, 1, 0)]


@pytest.mark.parametrize("bounds", [(None, None), (0, 10)])
def test_memory_range_free_at_zero(bounds):
    m = pb.DeviceMemory(device="cuda:0")
    m.events.add(op="a", bytes=3, alloc_ns=0, free_ns=0)
    assert memory_range(m, *bounds)["ops"][0]["freed"] == 1


# ---------------------------------------------------------------- edges: 1 byte, time 0, nameless, many ops


def test_one_byte_records():
    """P [0, 100): +1 @1 at 10, -1 @1 at 20 (its free), +1 @2 at 30 (not freed); Q [200, 300): -1 @3 at 250 (from
    before the window). 2 allocations of 1 byte, 2 frees. P: 2 allocations, 2 bytes, increase 1 - 1 + 1 = 1;
    Q: none, increase -1 (touched: 0 + |-1| = 1 > 0). Reserved 1 byte at every point: a figure."""
    mem = [rec(10, 1, 1, allocated=1, reserved=1), rec(20, -1, 1, allocated=0, reserved=1),
           rec(30, 1, 2, allocated=1, reserved=1), rec(250, -1, 3, allocated=0, reserved=1)]
    (d,) = stats(tbl([("P", 0, 100), ("Q", 200, 100)], mem)).values()
    assert (d.allocations, d.frees, d.allocated_bytes) == (2, 2, 2)
    assert events_of(d) == [("P", 1, 10, 20), ("P", 1, 30, -1), ("Q", 1, -1, 250)]
    got = [(o.name, o.allocations, o.allocated_bytes, o.self_allocations, o.self_allocated_bytes, o.increase_bytes,
            o.self_increase_bytes) for o in d.ops]
    assert got == [("P", 2, 2, 2, 2, 1, 1), ("Q", 0, 0, 0, 0, -1, -1)]
    assert d.peak_reserved_bytes == 1 and list(d.curve_reserved_bytes) == [1, 1, 1, 1]


def test_allocation_at_time_zero():
    # allocated at 0 (freed at 50) and at 10: by allocation time, 0 first (its time is 0, not its free's 50)
    (d,) = stats(tbl([("op", 0, 100)], [rec(0, 4, 1), rec(10, 8, 2), rec(50, -4, 1)])).values()
    assert events_of(d) == [("op", 4, 0, 50), ("op", 8, 10, -1)]


def test_nameless_operator_and_device():
    # an operator named "" keeps its empty name in the events and the statistics; a record of no device: ""
    (d,) = stats(tbl([("", 0, 100)], [rec(5, 8, 1)])).values()
    assert events_of(d) == [("", 8, 5, -1)] and [(o.name, o.allocated_bytes) for o in d.ops] == [("", 8)]
    (d,) = memory_stats(Context(tbl(memory=[rec(5, 8, 1, allocated=8, device=None)])))
    assert (d.device, d.capacity_bytes, d.peak_allocated_bytes) == ("", -1, 8)


def test_component_of_string_id_zero():
    # "PTA" interned first has id 0: it is a component like any other (its curve and its peak)
    t = tbl(memory=[rec(1, 0, allocated=5, device="npu:0", component="PTA"),
                    rec(2, 0, allocated=9, device="npu:0", component="GE")], first=["PTA"])
    assert t.strings.find("PTA") == 0
    (d,) = stats(t).values()
    assert list(d.curve_allocated_bytes) == [5]
    assert sorted((c.component, c.peak_allocated_bytes) for c in d.components) == [("GE", 9), ("PTA", 5)]


def test_many_operators_equal_bytes_keep_name_order():
    """20 operators o00 ... o19, one after the other, allocating 8 x (i % 3 + 1) bytes: by bytes down (24, 16, 8),
    equal bytes in the order of the names' first appearance."""
    ev = [(f"o{i:02d}", 10 * i, 10) for i in range(20)]
    mem = [rec(10 * i + 5, 8 * (i % 3 + 1), i + 1) for i in range(20)]
    (d,) = stats(tbl(ev, mem)).values()
    expected = [f"o{i:02d}" for r in (2, 1, 0) for i in range(20) if i % 3 == r]
    assert [o.name for o in d.ops] == expected
    assert [o.allocated_bytes for o in d.ops] == [24] * 6 + [16] * 7 + [8] * 7


def test_operator_memory_edges():
    """One block of 1 byte allocated and freed at 0: an allocation, a free, freed in the window (increase 0).
    m: 300 freed, then 100 not: increase 400 - 300 = 100. big: 500 never freed; by bytes: big, m, one."""
    rows = [opmem("one", 1, 0, 0), opmem("m", 300, 10, 40), opmem("m", 100, 30, -1), opmem("big", 500, 50, -1)]
    (d,) = stats(tbl(side={"operator_memory": rows})).values()
    assert (d.allocations, d.frees, d.allocated_bytes) == (4, 2, 901)
    assert [(o.name, o.allocations, o.allocated_bytes, o.increase_bytes) for o in d.ops] == [
        ("big", 1, 500, 500), ("m", 2, 400, 100), ("one", 1, 1, 0)]


def test_operator_memory_without_device_goes_to_the_first_device():
    # the only records are on npu:2: a row without device is npu:2's, not npu:0's
    t = tbl(memory=[rec(1, 0, allocated=4, device="npu:2")], side={"operator_memory": [opmem("x", 64, 1, 2, device=None)]})
    (d,) = memory_stats(Context(t))
    assert d.device == "npu:2" and events_of(d) == [("x", 64, 1, 2)]


def test_module_peak_of_rows_without_device_first():
    # (None, HCCL) 30 comes first and is npu:0's; (npu:0, HCCL) 10 and 20 after: the peak stays 30
    modules = [{"component": "HCCL", "ts_ns": 1, "reserved_bytes": 30, "device": None},
               {"component": "HCCL", "ts_ns": 2, "reserved_bytes": 10, "device": "npu:0"},
               {"component": "HCCL", "ts_ns": 3, "reserved_bytes": 20, "device": "npu:0"}]
    (d,) = memory_stats(Context(tbl(side={"npu_module_mem": modules})))
    assert (d.device, [(c.component, c.peak_reserved_bytes) for c in d.components]) == ("npu:0", [("HCCL", 30)])
