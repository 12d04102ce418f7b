"""analysis/compare/memory.py, side.py, comm.py and legacy.py under mutation (issue 46): devices paired by role,
the step-aligned axis, peaks and ratios; a side's batch size; collectives per step with their statuses and bytes;
the first comparison's fields and units. On digests built here; every expected value worked out by hand."""
import pytest

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.compare import legacy
from canning_tb.analysis.compare.comm import collective_deltas
from canning_tb.analysis.compare.memory import memory_pairs, step_axis
from canning_tb.analysis.compare.side import side_of


def window(memory=(), steps=(), start=0, end=0):
    """memory (device, peak, curve ts, curve bytes); steps (start, dur)."""
    d = pb.Digest()
    d.window.start_ns, d.window.end_ns = start, end
    for i, (s, dur) in enumerate(steps):
        d.steps.add(number=i + 1, start_ns=s, dur_ns=dur)
    for device, peak, ts, values in memory:
        d.memory.add(device=device, peak_allocated_bytes=peak, curve_ts_ns=ts, curve_allocated_bytes=values)
    return d


def pairs(base, target):
    return [(p.device, p.base_device, p.target_device, p.base_peak_bytes, p.target_peak_bytes, p.ratio)
            for p in memory_pairs(side_of(base), side_of(target))]


def test_devices_are_paired_by_role():
    """CPU with CPU (listed last, "cpu" in lower case is the CPU), accelerators by their order among the
    accelerators only: the base's cuda:0 after its CPU row is accelerator 0, with the target's npu:0. A role on
    one side only: the other side's peak -1, its device "", no ratio. The highest peak of a side's windows."""
    base = [window([("CPU", 50, [], []), ("cuda:0", 400, [], []), ("cuda:1", 10, [], [])]),
            window([("cuda:0", 500, [], [])])]
    target = window([("npu:0", 100, [], []), ("cpu", 25, [], [])])
    assert pairs(base, target) == [("cuda:0 / npu:0", "cuda:0", "npu:0", 500, 100, 0.2),
                                   ("cuda:1", "cuda:1", "", 10, -1, None),
                                   ("CPU / cpu", "CPU", "cpu", 50, 25, 0.5)]
    assert pairs(window([("CPU", 8, [], [])]), window([("npu:1", 9, [], [])])) == [
        ("npu:1", "", "npu:1", -1, 9, None), ("CPU", "CPU", "", 8, -1, None)]
    assert pairs(window([("npu:0", 8, [], [])]), window([("npu:0", 4, [], [])])) == [("npu:0", "npu:0", "npu:0", 8, 4, 0.5)]


def test_peak_ratios_at_zero_and_one():
    """No ratio of a base peak of 0; a base of 1 byte gives one; a target of 0 is a ratio of 0 (it freed all)."""
    assert pairs(window([("npu:0", 0, [], [])]), window([("npu:0", 5, [], [])]))[0][5] is None
    assert pairs(window([("npu:0", 1, [], [])]), window([("npu:0", 5, [], [])]))[0][5] == 5.0
    assert pairs(window([("npu:0", 4, [], [])]), window([("npu:0", 0, [], [])]))[0][5] == 0.0


def test_curves_on_the_step_axis():
    """Each side's first window's curve: base steps at 0 (10 ns) and 10 (20 ns): ts 5 -> 0.5, 20 -> 1.5; the
    target's one step at 100 (50 ns): 125 -> 0.5. Bytes as recorded."""
    base = [window([("npu:0", 9, [5, 20], [1, 9])], steps=[(0, 10), (10, 20)]),
            window([("npu:0", 3, [0], [3])], steps=[(0, 5)])]
    target = window([("npu:0", 4, [125], [4])], steps=[(100, 50)])
    (p,) = memory_pairs(side_of(base), side_of(target))
    assert (p.base_x, p.base_bytes, p.target_x, p.target_bytes) == ([0.5, 1.5], [1, 9], [0.5], [4])


def test_step_axis_edges():
    """Steps of 0 ns are not steps (0..5 is; a 1 ns step at 5 is): 5.5 is halfway into the 1 ns step, 1 + 0.5.
    No steps: the window's time, start 100 .. end 300: 200 -> 0.5, 400 -> 1.5; a window of no length counts 1 ns."""
    d = window(steps=[(0, 5), (3, 0), (5, 1)])
    assert step_axis(d, [2.5, 5.5]) == [0.5, 1.5]
    assert step_axis(window(steps=[(0, 4), (4, 0)]), [6]) == [1.5]  # after the last real step, in its lengths
    assert step_axis(window(start=100, end=300), [100, 200, 400]) == [0.0, 0.5, 1.5]
    assert step_axis(window(start=100, end=100), [101]) == [1.0]


def test_a_side_s_batch_size_and_its_windows():
    """Windows saying the same batch size: that size; different sizes or one not a number: unknown. No window:
    refused, saying why."""
    def with_batch(*sizes):
        out = []
        for size in sizes:
            d = pb.Digest()
            d.window.environment["batch_size"] = size
            out.append(d)
        return out
    assert side_of(with_batch("8", "8.0")).batch_size == 8.0
    assert side_of(with_batch("8", "16")).batch_size is None
    assert side_of(with_batch("8", "x")).batch_size is None
    assert side_of(pb.Digest()).batch_size is None
    with pytest.raises(ValueError, match=r"^a side of a comparison needs at least one window$"):
        side_of([])


def comm(steps, *stats):
    d = pb.Digest()
    for i in range(steps):
        d.steps.add(number=i + 1, dur_ns=1)
    for kind, group, calls, total, size in stats:
        d.communication.collectives.add(kind=kind, group=group, calls=calls, total_ns=total, bytes=size)
    return d


def test_collectives_per_step_with_their_statuses():
    """Base 2 steps, target 1. AllReduce g1: 4 calls, 8 ns, 400 B -> 2, 4, 200 per step; target 2 calls, 4 ns,
    0 B (a known 0): same time, "same". Broadcast g1: 4 ns over 2 steps, 2 -> 5 ns, "changed". AllGather g2 only
    in the base: removed, the target's side 0 calls, 0 ns, -1 bytes; Send g3 only in the target: added. Largest
    |delta| first (Send 7, AllGather -6, Broadcast +3, AllReduce 0)."""
    base = comm(2, ("AllReduce", "g1", 4, 8, 400), ("Broadcast", "g1", 2, 4, 6), ("AllGather", "g2", 2, 12, 10))
    target = comm(1, ("AllReduce", "g1", 2, 4, 0), ("Broadcast", "g1", 1, 5, 6), ("Send", "g3", 3, 7, 5))
    rows = [(r.kind, r.group, r.base_calls, r.target_calls, r.base_ns, r.target_ns, r.base_bytes, r.target_bytes,
             r.delta_ns, r.status) for r in collective_deltas(side_of(base), side_of(target))]
    assert rows == [("Send", "g3", 0, 3, 0, 7, -1, 5, 7, "added"),
                    ("AllGather", "g2", 1, 0, 6, 0, 5, -1, -6, "removed"),
                    ("Broadcast", "g1", 1, 1, 2, 5, 3, 6, 3, "changed"),
                    ("AllReduce", "g1", 2, 2, 4, 4, 200, 0, 0, "same")]


def test_legacy_fields_and_units():
    """One step a side. Base "mm" 2 calls, host 2 000 001 ns, device 3 000 001 ns; target "mm" 1 call, host
    1 000 001, device 2 000 001, and "add" (target only) 4 ns host; "gone" (base only) 1 call 5 ns host, 1 ns device;
    "both" 100 -> 101 ns. ms are ns / 1e6 (2.000001, not 2.0). Rows by |host delta|: mm (-1 ms), gone (-5 ns),
    add (+4 ns), both (+1 ns: its sum 201 does not count).
    The step 10 000 001 -> 4 000 001 ns: -6 ms, -60 % (6 / 10.000001)."""
    def d(step_ns, ops):
        out = pb.Digest()
        out.steps.add(number=1, dur_ns=step_ns)
        for name, calls, host, device in ops:
            out.ops_by_name.add(name=name, calls=calls, host_total_ns=host, device_total_ns=device)
        return out
    base = legacy.per_step([d(10_000_001, [("mm", 2, 2_000_001, 3_000_001), ("gone", 1, 5, 1),
                                           ("both", 1, 100, 0)])])
    exp = legacy.per_step([d(4_000_001, [("mm", 1, 1_000_001, 2_000_001), ("add", 1, 4, 0), ("both", 1, 101, 0)])])
    assert base["ops"]["gone"] == [1, 5, 1] and exp["ops"]["add"] == [1, 4, 0]
    summary, rows = legacy.compare(base, exp)
    assert summary == {"base_step_ms": 10.000001, "exp_step_ms": 4.000001, "delta_step_ms": -6.0,
                       "delta_step_pct": pytest.approx(-600 / 10.000001), "base_windows": 1, "exp_windows": 1}
    assert [r["name"] for r in rows] == ["mm", "gone", "add", "both"]
    assert rows[0] == {"name": "mm", "base_calls_per_step": 2, "exp_calls_per_step": 1,
                       "base_host_ms_per_step": 2.000001, "exp_host_ms_per_step": 1.000001,
                       "delta_host_ms_per_step": -1.0, "base_device_ms_per_step": 3.000001,
                       "exp_device_ms_per_step": 2.000001}
    assert rows[1] == {"name": "gone", "base_calls_per_step": 1, "exp_calls_per_step": 0,
                       "base_host_ms_per_step": 5e-06, "exp_host_ms_per_step": 0.0, "delta_host_ms_per_step": -5e-06,
                       "base_device_ms_per_step": 1e-06, "exp_device_ms_per_step": 0.0}
    assert (rows[2]["base_calls_per_step"], rows[2]["base_host_ms_per_step"], rows[2]["base_device_ms_per_step"]) == \
        (0, 0.0, 0.0)
