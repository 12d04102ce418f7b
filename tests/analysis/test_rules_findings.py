"""Each rule's finding whole, on a hand-made window: the words with their numbers, the figures, the evidence and
the claim (figure, value, threshold, the time it removes), before the claims are settled (runner.candidates).

test_numbers_rules.py holds each rule at its threshold; this file checks what the rule says once it fires (issue
46: the rules' bodies had never been mutated, docs/mutants.md "What was run on the rules' bodies"). Every
expected value is worked out by hand from the events below (times in ns; a step of 1 ms unless said).
"""
import copy

import pytest

from _synthetic import ev, table

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.build import build_digest
from canning_tb.analysis.rules import runner
from canning_tb.analysis.rules.engine import RuleInput
from canning_tb.analysis.rules.time_rules import dominant_op
from canning_tb.ingest.table import Kind as K

MS = 1_000_000
CUDA = [{"kind": "cuda", "index": 0, "compute_capability": "8.0", "name": "A100"}]


def step(n=1, ts=0, dur=MS):
    return ev(f"ProfilerStep#{n}", K.USER_ANNOTATION, ts, dur)


def found(t, monkeypatch) -> dict:
    """{rule: [Finding]} as the rules made them, copied before claims.settle fills in gains and floors."""
    seen = []
    real = runner.settle

    def spy(findings, *args, **kw):
        seen.extend(copy.deepcopy(findings))
        return real(findings, *args, **kw)
    monkeypatch.setattr(runner, "settle", spy)
    build_digest(t)
    out = {}
    for f in seen:
        out.setdefault(f.rule, []).append(f)
    return out


def one(t, monkeypatch, rule):
    """The rule's one finding; its category the one it registered with (runner.candidates fills it in)."""
    from canning_tb.analysis.rules import RULES
    (f,) = found(t, monkeypatch)[rule]
    assert f.category == RULES[rule if rule in RULES else "fusable_ops"][0]
    return f


def direct(fn, d):
    """A rule called on a digest alone: it leaves its id and category to the runner."""
    f = fn(RuleInput(d))
    for x in (f if isinstance(f, list) else [f] if f is not None else []):
        assert (x.rule, x.category) == ("", "")
    return f


def rows(f) -> list:
    return [(e.view, e.row, e.label, e.timeline_name, e.ts_ns, e.dur_ns) for e in f.evidence]


def removes(f):
    return None if f.removes is None else ([int(x) for x in f.removes[0]], [int(x) for x in f.removes[1]])


def claim(f) -> tuple:
    return f.figure, pytest.approx(f.figure_value), f.view, f.threshold, f.removes_what


# -- time_rules ----------------------------------------------------------------------------------------------------

DATALOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def test_dataloader_share_names_its_time_and_the_longest_call(monkeypatch):
    """60 µs of DataLoader in a 1 ms step: 6.0 %, above 5 %."""
    f = one(table([step(), ev(DATALOADER, K.USER_ANNOTATION, 0, 60_000)]), monkeypatch, "dataloader_share")
    assert (f.severity, f.title) == ("warning", "Data loading takes a large share of the step")
    assert f.gain_basis == "the DataLoader time of the average step, if workers hide it all"
    assert f.seen == "Data loading takes 6.0% of the average step (DataLoader): 0.060 ms of 1.000 ms."
    assert (f.value, f.gain_ns, f.figures) == (pytest.approx(0.06), 60_000,
                                               {"dataloader_share": pytest.approx(0.06), "dataloader_ns": 60_000,
                                                "step_ns": MS})
    assert rows(f) == [("overview", "DataLoader", "Average step breakdown: DataLoader", "", -1, -1),
                       ("timeline", DATALOADER, f"the longest {DATALOADER}", DATALOADER, 0, 60_000)]
    assert claim(f) == ("dataloader_share", 0.06, "overview", 0.05, ["dataloader"])
    assert removes(f) == ([0], [60_000])


def test_device_idle_names_the_columns_that_fill_the_step(monkeypatch):
    """A kernel 0-400 µs, a host operator 500-700 µs with the device idle: 60 % idle, of it Host 20 %, Idle 40 %
    (the rest); the change removes every not-device column, 400 µs to the step's end."""
    t = table([step(), ev("gemm", K.KERNEL, 0, 400_000), ev("aten::index", K.CPU_OP, 500_000, 200_000)])
    f = one(t, monkeypatch, "device_idle")
    assert (f.severity, f.title) == ("warning", "The device has no work most of the step")
    assert f.gain_basis == "the Device idle time of the average step that no other finding here claims"
    assert f.seen == "Device idle 60.0% of the average step; the step meanwhile: Host 20.0%, Idle 40.0%."
    assert (f.value, f.gain_ns, f.residual) == (pytest.approx(0.6), 600_000, True)
    assert f.figures == {"device_idle_share": pytest.approx(0.6), "host_ns": 200_000, "idle_ns": 400_000}
    assert rows(f) == [("overview", "Host", "Average step breakdown: Host", "", -1, -1),
                       ("overview", "Idle", "Average step breakdown: Idle", "", -1, -1)]
    assert claim(f) == ("device_idle_share", 0.6, "overview", 0.5,
                        ["device_wait", "runtime", "dataloader", "host", "idle"])
    assert removes(f) == ([400_000], [MS])


def test_device_wait_names_the_four_longest_blocking_calls(monkeypatch):
    """Five operators after a 500 µs kernel, each with one cudaStreamSynchronize of 30, 31, ... 34 µs: Device wait
    160 µs, 16.0 %; the words name the four longest (op4 down to op1), the evidence the three longest."""
    syncs = [ev(f"aten::op{i}", K.CPU_OP, 550_000 + i * 80_000, 70_000) for i in range(5)]
    syncs += [ev("cudaStreamSynchronize", K.RUNTIME, 560_000 + i * 80_000, 30_000 + i * 1000) for i in range(5)]
    f = one(table([step(), ev("gemm", K.KERNEL, 0, MS // 2)] + syncs), monkeypatch, "device_wait")
    assert (f.severity, f.title) == ("warning", "The host waits for the device (synchronisations)")
    assert f.gain_basis == "the Device wait of the average step"
    named = "; ".join(f"cudaStreamSynchronize under aten::op{i} (1 calls, 0.0{30 + i} ms)" for i in (4, 3, 2, 1))
    assert f.seen == ("Calls that block the host until the device is done take 16.0% of the average step "
                      f"(Device wait), 0.160 ms: {named}.")
    assert (f.value, f.gain_ns) == (pytest.approx(0.16), 160_000)
    assert f.figures == {"device_wait_share": pytest.approx(0.16), "device_wait_ns": 160_000}
    assert rows(f) == [("overview", "Device wait", "Average step breakdown: Device wait", "", -1, -1)] + [
        ("operators", f"aten::op{i}", f"aten::op{i}: 1 blocking calls", "cudaStreamSynchronize", -1, -1)
        for i in (4, 3, 2)]
    assert claim(f) == ("device_wait", 0.16, "overview", 0.1, ["device_wait"])
    assert removes(f) == ([560_000 + i * 80_000 for i in range(5)], [590_000 + i * 81_000 for i in range(5)])


def test_sync_calls_counts_per_step_where_the_device_does_not_wait(monkeypatch):
    """Two steps, each a 900 µs kernel and two aten::item with a 10 µs synchronise inside while the kernel runs:
    4 calls, 2.0 per step, no Device wait (the device is busy)."""
    events = []
    for s in range(2):
        events += [step(s + 1, s * MS), ev("gemm", K.KERNEL, s * MS, 900_000)]
        for i in range(2):
            events += [ev("aten::item", K.CPU_OP, s * MS + 100_000 * (i + 1), 20_000),
                       ev("cudaStreamSynchronize", K.RUNTIME, s * MS + 100_000 * (i + 1) + 5_000, 10_000)]
    f = one(table(events), monkeypatch, "sync_calls")
    assert (f.severity, f.title) == ("info", "Synchronising calls in every step")
    assert f.gain_basis == "the Device wait of the average step"
    assert f.seen == ("2.0 calls per step that make the host wait for the device's result: cudaStreamSynchronize "
                      "under aten::item (2.0 per step); the host waits with the device idle 0.0% of the average step "
                      "(Device wait).")
    assert (f.value, f.gain_ns, f.figures) == (2.0, 0, {"sync_calls_per_step": 2.0})
    assert rows(f) == [("operators", "aten::item", "aten::item: 4 calls", "aten::item", -1, -1)]
    assert claim(f) == ("device_wait", 0.0, "overview", pytest.approx(float("nan"), nan_ok=True), ["device_wait"])


def test_sync_calls_is_left_to_device_wait_above_its_threshold(monkeypatch):
    """The same calls with the device idle: 11 % Device wait is device_wait's finding, not this one's."""
    t = table([step(), ev("gemm", K.KERNEL, 0, MS // 2), ev("aten::item", K.CPU_OP, 590_000, 130_000),
               ev("cudaStreamSynchronize", K.RUNTIME, 600_000, 110_000)])
    out = found(t, monkeypatch)
    assert "device_wait" in out and "sync_calls" not in out


def test_launch_bound_counts_blocking_calls_apart(monkeypatch):
    """A 500 µs kernel, then 110 µs of cudaLaunchKernel (Runtime 11 %) and 50 µs of synchronise (Device wait 5 %)."""
    t = table([step(), ev("gemm", K.KERNEL, 0, MS // 2), ev("cudaLaunchKernel", K.RUNTIME, 600_000, 110_000),
               ev("cudaStreamSynchronize", K.RUNTIME, 800_000, 50_000)])
    f = one(t, monkeypatch, "launch_bound")
    assert (f.severity, f.title) == ("warning", "Kernel launches dominate")
    assert f.gain_basis == "the Runtime time of the average step"
    assert f.seen == ("Launch / runtime calls with the device idle take 11.0% of the average step (Runtime, 0.110 ms); "
                      "blocking calls are counted apart (Device wait 5.0%).")
    assert (f.value, f.gain_ns) == (pytest.approx(0.11), 110_000)
    assert f.figures == {"runtime_share": pytest.approx(0.11), "runtime_ns": 110_000}
    assert rows(f) == [("overview", "Runtime", "Average step breakdown: Runtime", "", -1, -1)]
    assert claim(f) == ("runtime", 0.11, "overview", 0.1, ["runtime"])
    assert removes(f) == ([600_000], [710_000])


def test_host_bound_adds_host_and_runtime(monkeypatch):
    """A 50 µs kernel, a host operator 100-510 µs (Host 41 %), a launch 600-700 µs (Runtime 10 %): 51 % > 50 %,
    with the device idle 95 %."""
    t = table([step(), ev("gemm", K.KERNEL, 0, 50_000), ev("aten::index", K.CPU_OP, 100_000, 410_000),
               ev("cudaLaunchKernel", K.RUNTIME, 600_000, 100_000)])
    f = one(t, monkeypatch, "host_bound")
    assert (f.severity, f.title) == ("warning", "The step is host-bound")
    assert f.gain_basis == "Host + Runtime of the average step"
    assert f.seen == ("Host operators and launches run while the device has no work: Host 41.0%, Runtime 10.0% of "
                      "the average step.")
    assert (f.value, f.gain_ns) == (pytest.approx(0.51), 510_000)
    assert f.figures == {"host_share": pytest.approx(0.41), "runtime_share": pytest.approx(0.1)}
    assert rows(f) == [("overview", "Host", "Average step breakdown: Host", "", -1, -1),
                       ("operators", "", "Operators by Host Self Duration", "", -1, -1)]
    assert claim(f) == ("host", 0.41, "overview", pytest.approx(float("nan"), nan_ok=True), ["host", "runtime"])
    assert removes(f) == ([100_000, 600_000], [510_000, 700_000])


def test_python_on_path_takes_the_longest_stretch_of_each_step(monkeypatch):
    """Two steps of 1 ms with no device. Step 1: operators at 0-100 and 700-800 µs, Python 100-700 and 800-1000 µs
    (600 + 200 µs); step 2: operators at 1000-1050 and 1900-1950 µs, Python 1050-1900 and 1950-2000 µs (850 + 50
    µs). On the path: 1.7 ms of 2 ms, 85 %, 0.85 ms a step; the longest stretches 600 and 850 µs (each step's first,
    not its last), 725 µs on average; the longest of all in step 2, at 1050 µs."""
    t = table([step(1, 0), step(2, MS), ev("aten::mm", K.CPU_OP, 0, 100_000),
               ev("aten::mm", K.CPU_OP, 700_000, 100_000), ev("aten::mm", K.CPU_OP, MS, 50_000),
               ev("aten::mm", K.CPU_OP, 1_900_000, 50_000)])
    f = one(t, monkeypatch, "python_on_path")
    assert (f.severity, f.title) == ("warning", "Python between operators holds the step")
    assert f.gain_basis == "the Python time on the path"
    assert f.seen == ("Python with no operator running on the step's thread takes 85.0% of the steps' critical path "
                      "(Critical path: python), 0.850 ms of the average step; its longest stretch in each step takes "
                      "0.725 ms on average.")
    assert (f.value, f.gain_ns) == (pytest.approx(0.85), 850_000)
    assert f.figures == {"path_python_share": pytest.approx(0.85), "python_ns": 850_000}
    assert rows(f) == [("overview", "Critical path", "Critical path: python", "", 1_050_000, 850_000)]
    assert claim(f) == ("path_python_share", 0.85, "overview", 0.1, ["python"])
    assert removes(f) == ([100_000, 1_050_000], [700_000, 1_900_000])
    assert f.edit == "the longest stretch of Python of each step taken out"


def dominant_window(roof_share=None, dtype="", metric="device"):
    """Two steps; aten::mm 70 µs of the operators' 100 µs self time (35 µs a step), aten::add 30 µs."""
    d = pb.Digest()
    d.steps.add(number=1, start_ns=0, dur_ns=MS)
    d.steps.add(number=2, start_ns=MS, dur_ns=MS)
    d.average.total_ns = MS
    if metric == "device":
        d.average.compute_ns = 100_000
    mm = d.ops_by_name.add(name="aten::mm", calls=2, **{f"{metric}_self_ns": 70_000, f"{metric}_total_ns": 70_000})
    d.ops_by_name.add(name="aten::add", calls=2, **{f"{metric}_self_ns": 30_000, f"{metric}_total_ns": 30_000})
    if roof_share is not None:
        mm.work.model, mm.work.roof_share = "matmul", roof_share
    mm.work.dtype = dtype
    return d


def test_dominant_op_says_what_its_roof_leaves(monkeypatch):
    """At 40 % of its roof, 35 µs a step would take 14 µs: 21 µs to gain at most; no events, so no edit."""
    f = direct(dominant_op, dominant_window(0.4))
    assert (f.severity, f.title) == ("info", "aten::mm dominates")
    assert f.gain_basis == "depends on how efficient aten::mm already is"
    assert f.seen == ("aten::mm takes 70.0% of the operators' Device Self Duration (0.035 ms per step; at its roof it "
                      "would take 0.014 ms).")
    assert (f.value, f.at_most_ns, f.gain_ns) == (pytest.approx(0.7), 21_000, -1)
    assert f.figures == {"op_share": pytest.approx(0.7), "op_ns": 70_000}
    assert rows(f) == [("operators", "aten::mm", "aten::mm: Device Self Duration", "aten::mm", -1, -1)]
    assert claim(f) == ("slowest_op", 0.7, "overview", 0.3, [])
    assert "lower precision (torch.autocast)" in f.change_torch


def test_dominant_op_without_a_roof_or_on_the_host(monkeypatch):
    """No roof: the whole 35 µs a step; bf16 inputs get no autocast advice; host self time names its column."""
    f = direct(dominant_op, dominant_window(None, "bf16"))
    assert f.seen == "aten::mm takes 70.0% of the operators' Device Self Duration (0.035 ms per step)."
    assert f.at_most_ns == 35_000 and "autocast" not in f.change_torch
    h = direct(dominant_op, dominant_window(None, metric="host"))
    assert h.seen == "aten::mm takes 70.0% of the operators' Host Self Duration (0.035 ms per step)."
    assert rows(h) == [("operators", "aten::mm", "aten::mm: Host Self Duration", "aten::mm", -1, -1)]


# -- memory_rules --------------------------------------------------------------------------------------------------

GIB = 2 ** 30
MIB = 2 ** 20


def memory_digest(*devices, ops=("aten::mm", "MmBackward0")) -> pb.Digest:
    """A digest with only its memory rows: (device, peak allocated, peak reserved, capacity, empty_cache calls)."""
    d = pb.Digest()
    for name in ops:
        d.ops_by_name.add(name=name, calls=1)
    for device, alloc, reserved, cap, empties in devices:
        d.memory.add(device=device, peak_allocated_bytes=alloc, peak_reserved_bytes=reserved, capacity_bytes=cap,
                     peak_ts_ns=5_000, empty_cache_calls=empties)
    return d


def rule_of(module, name, d):
    from canning_tb.analysis.rules import memory_rules, schedule_rules  # noqa: F401 (registered)
    return direct(getattr({"memory": memory_rules, "schedule": schedule_rules}[module], name), d)


def test_peak_memory_is_the_larger_of_allocated_and_reserved():
    """70 GiB allocated, 74 GiB reserved of 80 GiB: 92.5 % (allocated alone would be 87.5 %, under 90 %); a device
    with no capacity or nothing allocated is not judged."""
    d = memory_digest(("cuda:0", 70 * GIB, 74 * GIB, 80 * GIB, 0), ("cuda:1", 79 * GIB, 79 * GIB, -1, 0),
                      ("cuda:2", 0, 79 * GIB, 80 * GIB, 0))
    (f,) = rule_of("memory", "peak_memory", d)
    assert (f.severity, f.title) == ("warning", "Memory of cuda:0 is nearly full")
    assert f.gain_basis == "memory, not time"
    assert f.seen == ("Peak memory on cuda:0 is 70.00 GiB allocated, 74.00 GiB reserved, of 80.00 GiB (92.5%; "
                      "Memory: Peak memory).")
    assert (f.value, f.figures) == (pytest.approx(0.925), {"peak_share": pytest.approx(0.925)})
    assert rows(f) == [("memory", "cuda:0", "peak", "", 5_000, 1_000_000)]
    assert claim(f) == ("memory_peak", 74 * GIB, "memory", pytest.approx(72 * GIB), [])
    assert "activation checkpointing" in f.change_torch  # a backward ran: training advice
    (g,) = rule_of("memory", "peak_memory", memory_digest(("cuda:0", 74 * GIB, 0, 80 * GIB, 0), ops=("aten::mm",)))
    assert g.value == pytest.approx(0.925) and "torch.inference_mode()" in g.change_torch  # forward only


def test_peak_memory_at_exactly_its_threshold_is_not_full():
    assert rule_of("memory", "peak_memory", memory_digest(("cuda:0", 72 * GIB, 72 * GIB, 80 * GIB, 0))) == []


@pytest.mark.parametrize("alloc,reserved,fires", [
    (GIB, int(1.5 * GIB), True),        # exactly 1.5x, 512 MiB more: the ratio is "at least"
    (256 * MIB, 512 * MIB, True),       # 2x, exactly 256 MiB more: the floor is "at least"
    (256 * MIB, 512 * MIB - 1, False),  # a byte under the floor
    (0, GIB, False),                    # nothing allocated: no ratio
])
def test_fragmentation_bounds(alloc, reserved, fires):
    assert bool(rule_of("memory", "fragmentation", memory_digest(("cuda:0", alloc, reserved, 80 * GIB, 0)))) is fires


def test_fragmentation_finding():
    """1 GiB allocated, 1.6 GiB reserved: 1.6x; the threshold is 1.5 x the allocated bytes."""
    (f,) = rule_of("memory", "fragmentation", memory_digest(("cuda:0", GIB, int(1.6 * GIB), 80 * GIB, 0)))
    assert (f.severity, f.title) == ("info", "Reserved memory far above allocated on cuda:0")
    assert f.gain_basis == "memory, not time"
    assert f.seen == "Peak reserved 1.60 GiB is 1.6x the peak allocated 1.00 GiB (Memory: Peak reserved)."
    assert (f.value, f.figures) == (pytest.approx(1.6), {"reserved_over_allocated": pytest.approx(1.6)})
    assert rows(f) == [("memory", "cuda:0", "Peak reserved", "", -1, -1)]
    assert claim(f) == ("peak_reserved", int(1.6 * GIB), "memory", 1.5 * GIB, [])


def test_empty_cache_takes_the_most_calls_of_any_device():
    d = memory_digest(("cuda:0", GIB, GIB, 80 * GIB, 2), ("cuda:1", GIB, GIB, 80 * GIB, 3))
    f = rule_of("memory", "empty_cache", d)
    assert (f.severity, f.title) == ("warning", "empty_cache is called")
    assert f.gain_basis == "its cost shows as malloc time in the following steps"
    assert f.seen == "empty_cache was called 3 times in the window."
    assert (f.value, f.figures) == (3, {"empty_cache_calls": 3})
    assert rows(f) == [("memory", "", "empty_cache calls", "", -1, -1)]
    assert claim(f) == ("empty_cache_calls", 3.0, "memory", 0.0, [])
    assert rule_of("memory", "empty_cache", memory_digest(("cuda:0", GIB, GIB, 80 * GIB, 0))) is None


def test_allocator_churn_counts_the_calls_in_the_window(monkeypatch):
    """Two steps of 10 ms; cudaMalloc of 3 and 5 ms (and 1 ns) at 1 and 11 ms, a cudaFree of 4 ms at 5 ms: 12 ms and
    1 ns in the window, above 10 ms; 6 ms a step in whole ns; the longest the last. Memory records on the CPU and
    on cuda:0: the device's is the one shown."""
    mem = [dict(ts=10, device="CPU", bytes=64, addr=1, allocated=64, reserved=64),
           dict(ts=10, device="cuda:0", bytes=64, addr=2, allocated=64, reserved=64)]
    t = table([step(1, 0, 10 * MS), step(2, 10 * MS, 10 * MS), ev("gemm", K.KERNEL, 0, 20 * MS),
               ev("cudaMalloc", K.RUNTIME, MS, 3 * MS), ev("cudaFree", K.RUNTIME, 5 * MS, 4 * MS),
               ev("cudaMalloc", K.RUNTIME, 11 * MS, 5 * MS + 1)], memory=mem, devices=CUDA)
    f = one(t, monkeypatch, "allocator_churn")
    assert (f.severity, f.title) == ("warning", "Frequent device memory allocation")
    assert f.gain_basis == "the malloc / free calls' host time per step"
    assert f.seen == "3 device malloc / free calls take 12.000 ms of host time in the window."
    assert (f.value, f.gain_ns, f.figures) == (12 * MS + 1, 6 * MS, {"memory_calls": 3, "memory_calls_ns": 12 * MS + 1})
    assert isinstance(f.gain_ns, int)
    assert rows(f) == [("memory", "cuda:0", "Allocations", "", -1, -1),
                       ("timeline", "cudaMalloc", "the longest cudaMalloc", "cudaMalloc", 11 * MS, 5 * MS + 1)]
    assert claim(f) == ("malloc_time", 12 * MS + 1, "trace", 10 * MS, ["malloc / free calls"])
    assert removes(f) == ([MS, 5 * MS, 11 * MS], [4 * MS, 9 * MS, 16 * MS + 1])


def test_allocator_churn_without_device_memory_names_no_device(monkeypatch):
    t = table([step(1, 0, 20 * MS), ev("gemm", K.KERNEL, 0, 20 * MS), ev("cudaMalloc", K.RUNTIME, MS, 11 * MS)],
              devices=CUDA)
    assert rows(one(t, monkeypatch, "allocator_churn"))[0] == ("memory", "", "Allocations", "", -1, -1)


def test_the_memory_rules_judge_each_device_in_turn():
    """A device with no capacity, one at capacity 0, one not full and not fragmented come before the full and
    fragmented one: it is still judged."""
    d = memory_digest(("cuda:0", 79 * GIB, 79 * GIB, -1, 0), ("cuda:1", 79 * GIB, 79 * GIB, 0, 0),
                      ("cuda:2", GIB, GIB, 80 * GIB, 0), ("cuda:3", 70 * GIB, 74 * GIB, 80 * GIB, 0))
    assert [f.title for f in rule_of("memory", "peak_memory", d)] == ["Memory of cuda:3 is nearly full"]
    d = memory_digest(("cuda:0", GIB, GIB, 80 * GIB, 0), ("cuda:1", GIB, 2 * GIB, 80 * GIB, 0))
    assert [f.title for f in rule_of("memory", "fragmentation", d)] == ["Reserved memory far above allocated on cuda:1"]


def test_the_memory_rules_on_an_empty_digest_find_nothing():
    from canning_tb.analysis.rules import memory_rules as mr
    for fn in (mr.peak_memory, mr.fragmentation, mr.allocator_churn, mr.empty_cache):
        assert not fn(RuleInput(pb.Digest())), fn.__name__


def test_allocator_churn_at_its_threshold_is_quiet(monkeypatch):
    t = table([step(1, 0, 20 * MS), ev("gemm", K.KERNEL, 0, 20 * MS), ev("cudaMalloc", K.RUNTIME, MS, 10 * MS)],
              devices=CUDA)
    assert "allocator_churn" not in found(t, monkeypatch)


# -- schedule_rules ------------------------------------------------------------------------------------------------

def test_sync_batchnorm_names_the_most_called(monkeypatch):
    """Two steps; SyncBatchNorm 12 times (60 µs), batch_norm_gather_stats 8 (80 µs): 20 in the window, 10 a step;
    the example is the one called most, not the longest."""
    ops = [ev("SyncBatchNorm", K.CPU_OP, 10_000 * i, 5_000) for i in range(12)]
    ops += [ev("aten::batch_norm_gather_stats", K.CPU_OP, MS + 20_000 * i, 10_000) for i in range(8)]
    f = one(table([step(1, 0), step(2, MS)] + ops), monkeypatch, "sync_batchnorm")
    assert (f.severity, f.title) == ("info", "SyncBatchNorm synchronises every layer")
    assert f.gain_basis == "its collectives are in the communication time"
    assert f.seen == "20 SyncBatchNorm operators in the window (10 per step, e.g. SyncBatchNorm)."
    assert (f.value, f.figures) == (20, {"sync_batchnorm_calls": 20})
    assert rows(f) == [("operators", "SyncBatchNorm", "SyncBatchNorm", "SyncBatchNorm", -1, -1)]
    assert claim(f) == ("op_calls", 12.0, "operators", 20, [])
    fewer = table([step()] + [ev("SyncBatchNorm", K.CPU_OP, 10_000 * i, 5_000) for i in range(19)])
    assert "sync_batchnorm" not in found(fewer, monkeypatch)


def test_gc_pauses_finding(monkeypatch):
    """Two steps of 10 ms, GC pauses of 1.2 and 1.6 ms (and 1 ns): 2.8 ms, mean 1.4 ms (above 1 ms), 1.4 ms a step in
    whole ns."""
    t = table([step(1, 0, 10 * MS), step(2, 10 * MS, 10 * MS), ev("gemm", K.KERNEL, 0, 20 * MS),
               ev("GC", K.USER_ANNOTATION, 2 * MS, 1_200_000), ev("GC", K.USER_ANNOTATION, 12 * MS, 1_600_001)])
    f = one(t, monkeypatch, "gc_pauses")
    assert (f.severity, f.title) == ("warning", "Python garbage collection pauses the step")
    assert f.gain_basis == "the pauses' time per step"
    assert f.seen == "2 garbage-collection pauses take 2.800 ms in the window (mean 1.400 ms)."
    assert (f.value, f.gain_ns, f.figures) == (2_800_001, 1_400_000, {"gc_calls": 2, "gc_ns": 2_800_001})
    assert isinstance(f.gain_ns, int)
    assert rows(f) == [("timeline", "GC", "the longest GC", "GC", 12 * MS, 1_600_001)]
    assert claim(f) == ("gc_pause", 1_400_000.5, "trace", 1_000_000, ["GC pauses"])
    assert removes(f) == ([2 * MS, 12 * MS], [3_200_000, 13_600_001])


def test_the_schedule_rules_on_an_empty_digest_find_nothing():
    from canning_tb.analysis.rules import schedule_rules as sr
    for fn in (sr.sync_batchnorm, sr.gc_pauses, sr.gloo_on_gpu):
        assert fn(RuleInput(pb.Digest())) is None, fn.__name__


def test_gloo_on_gpu_names_three_collectives(monkeypatch):
    """Four gloo collectives of 100 µs on a GPU job: 0.400 ms, the first three names in order; none on a CPU job."""
    calls = [ev(f"gloo:{n}", K.CPU_OP, 100_000 * i, 100_000) for i, n in enumerate(("send", "all_reduce", "recv",
                                                                                      "broadcast"))]
    f = one(table([step(), ev("gemm", K.KERNEL, 0, MS)] + calls, devices=CUDA), monkeypatch, "gloo_on_gpu")
    assert (f.severity, f.title) == ("warning", "GPU job communicates over gloo")
    assert f.gain_basis == "depends on the links"
    assert f.seen == "4 gloo collectives (gloo:all_reduce, gloo:broadcast, gloo:recv) take 0.400 ms on a GPU job."
    assert (f.value, f.figures) == (4, {"gloo_calls": 4})
    assert rows(f) == [("communication", "", "collectives", "", -1, -1)]
    assert claim(f) == ("comm_total", 400_000, "communication", pytest.approx(float("nan"), nan_ok=True), [])
    assert "gloo_on_gpu" not in found(table([step()] + calls), monkeypatch)


# -- roofline_rules ------------------------------------------------------------------------------------------------

def roof_digest(*ops, kernel_ns=1_000_000) -> pb.Digest:
    """Two steps, 1 ms of kernels; ops: (name, time_ns, roof_share, flops)."""
    d = pb.Digest()
    d.steps.add(number=1, start_ns=0, dur_ns=MS)
    d.steps.add(number=2, start_ns=MS, dur_ns=MS)
    d.average.total_ns = MS
    d.kernels_by_name.add(name="k", total_ns=kernel_ns)
    d.kernels_by_name.add(name="unknown", total_ns=-1)  # not counted
    d.window.devices.add(kind="cuda", compute_capability="8.0", name="A100")
    for name, time_ns, roof_share, flops in ops:
        o = d.ops_by_name.add(name=name, calls=2)
        o.work.model, o.work.time_ns, o.work.roof_share, o.work.flops = "matmul", time_ns, roof_share, flops
        o.work.tflops, o.work.gbps, o.work.intensity, o.work.roof_tflops = 31.2, 208.0, 150.0, 156.0
        o.work.dtype, o.work.bound = "fp32", "compute"
    return d


def test_below_roof_takes_the_operator_with_the_most_to_gain():
    """aten::mm 400 µs at 20 % of its roof (320 µs to gain) beats aten::bmm 500 µs at 40 % (300 µs); aten::add is
    at its half exactly (not below), aten::conv under 5 % of the kernel time. 160 µs a step to gain."""
    from canning_tb.analysis.rules.roofline_rules import below_roof
    d = roof_digest(("aten::bmm", 500_000, 0.4, 1e9), ("aten::mm", 400_000, 0.2, 1e9), ("aten::add", 900_000, 0.5, 1e9),
                    ("aten::conv", 49_000, 0.0, 1e9))
    f = direct(below_roof, d)
    assert (f.severity, f.title) == ("info", "aten::mm at 20.0% of its roof")
    assert f.seen == ("aten::mm reaches 31.2 TFLOP/s and 208 GB/s at 150 FLOP/byte: 20.0% of its roof (156 TFLOP/s, "
                      "fp32), compute-bound at its shapes; it takes 40.0% of the kernel time (0.200 ms per step).")
    assert (f.value, f.gain_ns, f.at_most_ns) == (pytest.approx(0.2), 160_000, 160_000)
    assert f.figures == {"roof_share": pytest.approx(0.2), "tflops": pytest.approx(31.2), "intensity": 150.0,
                         "op_ns": 400_000}
    assert rows(f) == [("operators", "aten::mm", "aten::mm: share of roof", "aten::mm", -1, -1)]
    assert claim(f) == ("roof_share", 0.2, "operators", 0.5, [])
    assert f.gain_basis == "its device time if it ran at its roof (20.0% of it now)"
    d5 = roof_digest(("aten::conv", 50_000, 0.0, 1e9))  # exactly 5 % of the kernel time: judged
    assert direct(below_roof, d5).title == "aten::conv at 0.0% of its roof"


@pytest.mark.parametrize("flops,words", [(0.0, "computes nothing"), (-1.0, "its FLOPs not modelled")])
def test_below_roof_on_bytes_only_work(flops, words):
    from canning_tb.analysis.rules.roofline_rules import below_roof
    f = direct(below_roof, roof_digest(("aten::copy_", 400_000, 0.25, flops)))
    assert f.seen.startswith(f"aten::copy_ moves 208 GB/s ({words}): 25.0% of the HBM bandwidth, compute-bound")


# -- profiling_rules -----------------------------------------------------------------------------------------------

def test_trace_inflated_counts_python_function_events(monkeypatch):
    """Five events, two of them Python functions: 40 %, above a quarter; one of four (25 %) is not above."""
    base = [step(), ev("aten::mm", K.CPU_OP, 0, 100_000), ev("gemm", K.KERNEL, 0, 900_000)]
    t = table(base + [ev("f", K.PYTHON_FUNCTION, 0, 50_000), ev("g", K.PYTHON_FUNCTION, 60_000, 50_000)])
    f = one(t, monkeypatch, "trace_inflated")
    assert (f.severity, f.title) == ("info", "with_stack inflates the trace")
    assert f.gain_basis == "profiling overhead, not the model's time"
    assert f.seen == ("2 of the window's 5 events (40.0%) are Python function events recorded by with_stack=True / "
                      "with_modules=True.")
    assert (f.value, f.figures) == (pytest.approx(0.4), {"python_function_share": pytest.approx(0.4), "events": 5})
    assert claim(f) == ("trace_events", 5.0, "trace", pytest.approx(float("nan"), nan_ok=True), [])
    quarter = table(base + [ev("f", K.PYTHON_FUNCTION, 0, 50_000)])
    assert "trace_inflated" not in found(quarter, monkeypatch)


def test_window_too_long_above_the_viewers_limit(monkeypatch):
    """The limit lowered to 4 events for the test: five events are above it, four are not."""
    from canning_tb.analysis.rules import thresholds
    monkeypatch.setattr(thresholds, "VIEWER_EVENTS", 4)
    base = [step(), ev("aten::mm", K.CPU_OP, 0, 100_000), ev("gemm", K.KERNEL, 0, 900_000), ev("relu", K.KERNEL, 0, 10)]
    f = one(table(base + [ev("add", K.KERNEL, 20, 10)]), monkeypatch, "window_too_long")
    assert (f.severity, f.title) == ("info", "The window is too big for trace viewers")
    assert f.gain_basis == "profiling, not the model's time"
    assert f.seen == "The window holds 5 events; chrome://tracing and Perfetto's web UI fail around 4."
    assert (f.value, f.figures) == (5, {"events": 5})
    assert claim(f) == ("trace_events", 5.0, "trace", 4, [])
    assert "window_too_long" not in found(table(base), monkeypatch)


def test_graph_capture_covers_begin_to_instantiate(monkeypatch):
    """Capture from 100 µs (begin) to 350 µs (instantiate's end): 250 µs of a 1 ms step, 25 %; the host operator
    100 µs with the device idle: Host 10 %."""
    t = table([step(), ev("gemm", K.KERNEL, 0, 50_000), ev("cudaStreamBeginCapture", K.RUNTIME, 100_000, 10_000),
               ev("cudaGraphInstantiate", K.RUNTIME, 300_000, 50_000), ev("aten::mm", K.CPU_OP, 120_000, 100_000)])
    f = one(t, monkeypatch, "graph_capture")
    assert (f.severity, f.title) == ("info", "The window records a CUDA / HIP graph capture")
    assert f.gain_basis == "capture is not the training step's cost"
    assert f.seen == ("Graph capture (stream begin capture ... graph instantiate) covers 0.250 ms of the average step "
                      "(25.0%): kernels launched meanwhile are recorded into the graph and run nothing on the device, "
                      "so the device is idle there by design.")
    assert (f.value, f.figures) == (pytest.approx(0.25), {"captured_ns_per_step": 250_000})
    assert rows(f) == [("timeline", "cudaStreamBeginCapture", "the longest cudaStreamBeginCapture",
                        "cudaStreamBeginCapture", 100_000, 10_000)]
    assert claim(f) == ("host", 0.1, "overview", pytest.approx(float("nan"), nan_ok=True), [])


def test_graph_capture_per_step_in_whole_ns(monkeypatch):
    """Two steps; capture 100-350.001 µs in the first: 250 001 ns over two steps, 125 000 ns a step."""
    t = table([step(1, 0), step(2, MS), ev("gemm", K.KERNEL, 0, 50_000),
               ev("cudaStreamBeginCapture", K.RUNTIME, 100_000, 10_000),
               ev("cudaGraphInstantiate", K.RUNTIME, 300_000, 50_001)])
    f = one(t, monkeypatch, "graph_capture")
    assert f.figures == {"captured_ns_per_step": 125_000} and isinstance(f.figures["captured_ns_per_step"], int)


def test_graph_capture_under_five_percent_is_quiet(monkeypatch):
    """Capture 100-150 µs: exactly 5 % of the step, not above."""
    t = table([step(), ev("gemm", K.KERNEL, 0, 50_000), ev("cudaStreamBeginCapture", K.RUNTIME, 100_000, 10_000),
               ev("cudaGraphInstantiate", K.RUNTIME, 140_000, 10_000)])
    assert "graph_capture" not in found(t, monkeypatch)


STARTUP = [ev("cudaGetDeviceCount", K.RUNTIME, 0, 50_000), ev("cudaSetDevice", K.RUNTIME, 50_000, 150_000)]


def test_startup_names_the_longest_call_and_the_runtime_share(monkeypatch):
    """200 µs of initialisation before a 1 ms step whose only Runtime is a 20 µs launch after the kernel: 2.0 %."""
    t = table(STARTUP + [step(ts=300_000), ev("gemm", K.KERNEL, 300_000, 900_000),
                         ev("cudaLaunchKernel", K.RUNTIME, 1_250_000, 20_000)])
    f = one(t, monkeypatch, "startup")
    assert (f.severity, f.title) == ("info", "The window records the process start-up")
    assert f.gain_basis == "start-up is not a per-step cost"
    assert f.seen == ("Device runtime initialisation (2 calls such as cudaSetDevice) takes 0.200 ms of the window "
                      "(Runtime 2.0% of the average step).")
    assert (f.value, f.figures) == (200_000, {"startup_ns": 200_000})
    assert rows(f) == [("timeline", "cudaSetDevice", "the longest cudaSetDevice", "cudaSetDevice", 50_000, 150_000)]
    assert claim(f) == ("runtime", 0.02, "overview", pytest.approx(float("nan"), nan_ok=True), [])


def test_startup_without_a_step_says_so(monkeypatch):
    """No ProfilerStep: the window (0-1.2 ms) is the step; its Runtime is the 200 µs of initialisation, 16.7 %."""
    f = one(table(STARTUP + [ev("gemm", K.KERNEL, 300_000, 900_000)]), monkeypatch, "startup")
    assert f.seen == ("Device runtime initialisation (2 calls such as cudaSetDevice) takes 0.200 ms of the window "
                      "(Runtime 16.7% of the average step), which has no ProfilerStep range: no training step is "
                      "measured.")


def test_needs_rules_say_what_to_record(monkeypatch):
    """Operators with no shapes, no memory records and no kernels: the three needs findings; with shapes, memory
    and a kernel, none."""
    out = found(table([step(), ev("aten::mm", K.CPU_OP, 0, 100_000)]), monkeypatch)
    for rule in ("needs_device", "needs_shapes", "needs_memory"):
        assert [(f.severity, f.category) for f in out[rule]] == [("info", "profiling")]
    assert [(f.title, f.seen, f.needs) for f in out["needs_device"]] == [(
        "No device events: the device rules cannot judge",
        "The window has no kernels or device copies, so host-bound steps, launch overhead, device stalls, Tensor "
        "Core / cube use and overlap cannot be judged.",
        "run on the GPU / NPU and profile with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] (torch_npu: "
        "ProfilerActivity.NPU)")]
    assert [(f.title, f.seen, f.needs) for f in out["needs_shapes"]] == [(
        "No input shapes: matmul / conv shapes cannot be judged", "The operators carry no input shapes.",
        "profile with record_shapes=True")]
    assert [(f.title, f.seen, f.needs) for f in out["needs_memory"]] == [(
        "No memory records: peak, fragmentation and allocator rules cannot judge", "The window has no memory events.",
        "profile with profile_memory=True")]
    mem = [dict(ts=10, device="cuda:0", bytes=64, addr=1, allocated=64, reserved=64)]
    full = table([step(), ev("aten::mm", K.CPU_OP, 0, 100_000, shapes="[[8, 8], [8, 8]]"),
                  ev("gemm", K.KERNEL, 0, 900_000)], memory=mem, devices=CUDA)
    assert not {"needs_device", "needs_shapes", "needs_memory"} & set(found(full, monkeypatch))


# -- comm_rules (on digests made by hand: no events, so no interval sets) -----------------------------------------

def comm_digest(comm_ns=200_000, calls=(), fmt="kineto") -> pb.Digest:
    """Two steps of 1 ms, `comm_ns` of communication not hidden in the average step; calls: (kind, group, start,
    dur, bytes, step, op, comm_type); the collectives' rows summed from them."""
    d = pb.Digest()
    d.window.format = fmt
    d.steps.add(number=1, start_ns=0, dur_ns=MS)
    d.steps.add(number=2, start_ns=MS, dur_ns=MS)
    d.average.total_ns, d.average.communication_ns = MS, comm_ns
    rows = {}
    for kind, group, start, dur, nbytes, number, op, comm_type in calls:
        d.communication.calls.add(kind=kind, group=group, start_ns=start, dur_ns=dur, bytes=nbytes, step=number, op=op,
                                  comm_type=comm_type)
        if (kind, group) not in rows:
            rows[kind, group] = d.communication.collectives.add(kind=kind, group=group, comm_type=comm_type)
        c = rows[kind, group]
        c.calls, c.total_ns = c.calls + 1, c.total_ns + dur
    return d


def comm_rule(name, d):
    from canning_tb.analysis.rules import comm_rules
    return direct(getattr(comm_rules, name), d)


DP_CALLS = [("AllReduce", "0", 100_000, 50_000, 4 * MIB, 1, "nccl:all_reduce", "collective"),
            ("AllReduce", "0", 300_000, 100_000, 4 * MIB, 1, "nccl:all_reduce", "collective"),
            ("AllReduce", "0", 1_100_000, 50_000, 4 * MIB, 2, "nccl:all_reduce", "collective"),
            ("AllReduce", "0", 1_300_000, 100_000, 4 * MIB, 2, "nccl:all_reduce", "collective"),
            ("AllGather", "0", 500_000, 50_000, MIB, 1, "nccl:all_gather", "collective"),
            ("AllGather", "0", 1_500_000, 60_000, MIB, 2, "nccl:all_gather", "collective"),
            ("ReduceScatter", "0", 600_000, 50_000, MIB, 1, "nccl:reduce_scatter", "collective"),
            ("Barrier", "0", 700_000, 10_000, 4, 1, "nccl:barrier", "collective")]


def test_communication_not_overlapped_names_the_three_longest_collectives():
    """20 % of the step not hidden; AllReduce 300 µs in 4 calls (150 µs a step), AllGather 110 µs (55 µs a step),
    ReduceScatter 50 µs (25 µs a step); Barrier, the fourth, is not named."""
    f = comm_rule("communication_not_overlapped", comm_digest(200_000, DP_CALLS))
    assert (f.severity, f.title) == ("warning", "Communication is not hidden by compute")
    assert f.gain_basis == "the communication not hidden in the average step"
    assert f.seen == ("Communication not hidden by compute takes 20.0% of the average step (Communication, 0.200 ms); "
                      "the collectives: AllReduce (4 calls, running 0.150 ms per step), AllGather (2 calls, running "
                      "0.055 ms per step), ReduceScatter (1 calls, running 0.025 ms per step).")
    assert (f.value, f.gain_ns) == (pytest.approx(0.2), 200_000)
    assert f.figures == {"comm_not_hidden_share": pytest.approx(0.2), "communication_ns": 200_000}
    assert rows(f) == [("overview", "Communication", "Average step breakdown: Communication", "", -1, -1),
                       ("communication", "AllReduce", "AllReduce 0", "nccl:all_reduce", 300_000, 100_000),
                       ("communication", "AllGather", "AllGather 0", "nccl:all_gather", 1_500_000, 60_000),
                       ("communication", "ReduceScatter", "ReduceScatter 0", "nccl:reduce_scatter", 600_000, 50_000)]
    assert claim(f) == ("comm_not_hidden_share", 0.2, "overview", 0.1, ["communication"])
    assert f.overlap and f.removes is None and "bucket_cap_mb" in f.change_torch and "pipeline" not in f.why
    assert comm_rule("communication_not_overlapped", comm_digest(100_000, DP_CALLS)) is None  # 10 %: not above


def test_a_first_step_broadcast_is_its_own_finding():
    """Two Broadcasts in step 1 only (0-100 and 50-200 µs: 200 µs once), beside the data-parallel calls: the
    overlap finding leaves them out and says so; the broadcast finding counts them."""
    casts = [("Broadcast", "0", 0, 100_000, MIB, 1, "nccl:broadcast", "collective"),
             ("Broadcast", "0", 50_000, 150_000, MIB, 1, "nccl:broadcast", "collective")]
    d = comm_digest(200_000, DP_CALLS + casts)
    f = comm_rule("first_step_broadcast", d)
    assert (f.severity, f.title) == ("info", "A one-off broadcast in the first profiled step")
    assert f.gain_basis == "a one-off, not a per-step cost"
    assert f.seen.startswith("2 Broadcast calls take 0.200 ms from step 1, the first step of the window, and in no "
                             "step after the next:")
    assert (f.value, f.figures) == (200_000, {"broadcast_calls": 2, "broadcast_ns": 200_000})
    assert rows(f) == [("communication", "Broadcast", "Broadcast 0", "nccl:broadcast", 50_000, 150_000)]
    assert claim(f) == ("comm_total", 200_000, "communication", pytest.approx(float("nan"), nan_ok=True), ["Broadcast"])
    g = comm_rule("communication_not_overlapped", d)
    assert "Broadcast" not in g.seen.split(";")[1].split(".")[0]
    assert g.seen.endswith(" The one-off broadcast of the first step is left out (its own finding).")
    later = comm_digest(200_000, DP_CALLS + [casts[0], casts[1][:5] + (2,) + casts[1][6:]])  # one in step 2
    assert comm_rule("first_step_broadcast", later) is None


def test_pipeline_wait_where_send_and_receive_are_most_of_it():
    """Send 400 µs and Recv 300 µs of 1 ms of communication (70 %, above half): the pipeline's finding."""
    p2p = [("Send", "1", 800_000, 200_000, MIB, 1, "nccl:send", "p2p"),
           ("Send", "1", 1_800_000, 200_000, MIB, 2, "nccl:send", "p2p"),
           ("Recv", "1", 0, 300_000, MIB, 1, "nccl:recv", "p2p")]
    d = comm_digest(200_000, DP_CALLS[:4] + p2p)
    assert comm_rule("communication_not_overlapped", d) is None
    f = comm_rule("pipeline_wait", d)
    assert (f.severity, f.title) == ("warning", "Pipeline stages wait in send / receive")
    assert f.gain_basis == "the send / receive time not hidden in the average step"
    assert f.seen == ("Communication not hidden by compute takes 20.0% of the average step (Communication), and 70.0% "
                      "of the communication time is pipeline send / receive (Send (2 calls, running 0.200 ms per "
                      "step), Recv (1 calls, running 0.150 ms per step)).")
    assert (f.value, f.gain_ns) == (pytest.approx(0.7), 200_000)
    assert f.figures == {"comm_not_hidden_share": pytest.approx(0.2), "p2p_share": pytest.approx(0.7)}
    assert rows(f) == [("communication", "Send", "Send 1", "nccl:send", 800_000, 200_000),
                       ("communication", "Recv", "Recv 1", "nccl:recv", 0, 300_000)]
    assert claim(f) == ("comm_not_hidden_share", 0.2, "overview", 0.1, ["communication", "send / receive"])
    assert f.removes is None


def test_small_packets_finding():
    """Five small calls of 30 µs (4 KiB, the first a broadcast of group 1, one of a single byte) and one 4 MiB call of
    100 µs: 150 of 250 µs, 60 %; a call of unknown size (0 bytes) is left out."""
    calls = [("Broadcast", "1", 0, 30_000, 4096, 1, "nccl:broadcast", "collective")]
    calls += [("AllReduce", "0", 40_000 * i, 30_000, 1 if i == 2 else 4096, 1, "nccl:all_reduce", "collective")
              for i in range(1, 5)]
    calls.append(("AllGather", "0", 300_000, 100_000, 4 * MIB, 1, "nccl:all_gather", "collective"))
    calls.append(("AllGather", "0", 500_000, 30_000, 0, 1, "nccl:all_gather", "collective"))
    f = comm_rule("small_packets", comm_digest(200_000, calls))
    assert (f.severity, f.title) == ("info", "Communication in small packets")
    assert f.gain_basis == "at most the not hidden part of these calls"
    assert f.seen == ("5 of 6 communication calls move less than 1 MB and take 60.0% of the communication time "
                      "(Communication view, Bytes).")
    assert (f.value, f.gain_ns, f.figures) == (pytest.approx(0.6), -1, {"small_calls": 5, "small_time_share":
                                                                           pytest.approx(0.6)})
    assert rows(f) == [("communication", "Broadcast", "Broadcast 1", "nccl:broadcast", 0, 30_000)]
    assert claim(f) == ("comm_total", 150_000, "communication", pytest.approx(float("nan"), nan_ok=True),
                        ["communication", "small calls"])


def test_byte_alignment_on_ascend_names_the_three_longest():
    """Four calls of at least 1 MiB not a multiple of 512 B (one aligned, one small); the longest three named."""
    calls = [("AllReduce", "0", 0, 10_000 * (i + 1), MIB + 4 * (i + 1), 1, f"hcom_allReduce_{i}", "collective")
             for i in range(4)]
    calls += [("AllReduce", "0", 0, 90_000, MIB + 512, 1, "hcom_allReduce_aligned", "collective"),
              ("AllReduce", "0", 0, 90_000, 1000, 1, "hcom_allReduce_small", "collective")]
    f = comm_rule("byte_alignment", comm_digest(200_000, calls, fmt="ascend"))
    assert (f.severity, f.title) == ("info", "Communication sizes not aligned to 512 bytes")
    assert f.gain_basis == "the cost of the unaligned tail is not in the trace"
    named = ", ".join(f"hcom_allReduce_{i} ({MIB + 4 * (i + 1)} B)" for i in (3, 2, 1))
    assert f.seen == f"4 communication calls move a size that is not a multiple of 512 B: {named}."
    assert (f.value, f.figures) == (4, {"unaligned_calls": 4})
    assert rows(f) == [("communication", "AllReduce", f"hcom_allReduce_{i}", f"hcom_allReduce_{i}", 0, 10_000 * (i + 1))
                       for i in (3, 2, 1)]
    assert claim(f) == ("bytes", MIB + 16, "communication", pytest.approx(float("nan"), nan_ok=True), [])
    assert comm_rule("byte_alignment", comm_digest(200_000, calls)) is None  # not Ascend


def test_low_bandwidth_names_the_slowest_link_against_its_capacity():
    """HCCS at 10 of 56 GB/s (18 %) and PCIe at 5 of 32 GB/s (16 %, the slowest) on 32 MiB; a small transfer, an
    unknown transport and a PCIe link at 30 % exactly are not judged."""
    d = pb.Digest()
    for src, dst, transport, nbytes, gbps, op in [(0, 1, "HCCS", 32 * MIB, 10.0, ""), (0, 2, "pcie", 32 * MIB, 5.0,
                                                   "hcom_send"), (0, 3, "HCCS", 8 * MIB, 1.0, ""),
                                                  (0, 4, "UB", 32 * MIB, 1.0, ""), (0, 5, "PCIE", 32 * MIB, 9.6, "")]:
        d.communication.links.add(src=src, dst=dst, transport=transport, bytes=nbytes, bandwidth_gbps=gbps, op=op)
    f = comm_rule("low_bandwidth", d)
    assert (f.severity, f.title) == ("warning", "Bandwidth far below the link's capacity")
    assert f.gain_basis == "the time at full bandwidth is not a bound the data gives"
    assert f.seen == ("2 transfers of at least 16 MiB run under 30.0% of their link's nominal capacity; slowest: "
                      "0 -> 2 over pcie at 5.0 GB/s of 32 GB/s (32.0 MiB in hcom_send).")
    assert (f.value, f.figures) == (pytest.approx(5 / 32), {"bandwidth_gbps": 5.0, "capacity_gbps": 32.0})
    assert rows(f) == [("communication", "0->2", "pcie link", "", -1, -1)]
    assert claim(f) == ("bandwidth", 5.0, "communication", pytest.approx(0.3 * 32), [])


# -- compute_rules (digests made by hand, unless said) -----------------------------------------------------------

def kernel_digest(*kernels, steps=2, cc="8.0") -> pb.Digest:
    """Kernels: (name, calls, total_ns, max_ns, core, family); `steps` steps of 1 ms."""
    d = pb.Digest()
    for n in range(steps):
        d.steps.add(number=n + 1, start_ns=n * MS, dur_ns=MS)
    d.average.total_ns = MS
    d.window.devices.add(kind="cuda", compute_capability=cc, name="A100")
    for name, calls, total, mx, core, family in kernels:
        d.kernels_by_name.add(name=name, calls=calls, total_ns=total, max_ns=mx, core=core, family=family)
    return d


def compute_rule(name, d):
    from canning_tb.analysis.rules import compute_rules
    return direct(getattr(compute_rules, name), d)


def test_tiny_kernels_finding():
    """1000 calls of 9.5 µs on average (800 + 200 calls, 9.5 ms in all); a communication kernel is not counted."""
    d = kernel_digest(("relu", 800, 7_000_000, 20_000, "", ""), ("add", 200, 2_500_000, 20_000, "", ""))
    d.kernels_by_name.add(name="ncclKernel", calls=5000, total_ns=1, communication=True)
    f = compute_rule("tiny_kernels", d)
    assert (f.severity, f.title) == ("info", "Many tiny kernels")
    assert f.gain_basis == "the launch overhead is in the Runtime column, see its finding"
    assert f.seen == "1000 kernels with a mean of 9.5 us each (Kernels: Mean Duration)."
    assert (f.value, f.figures) == (9_500, {"kernels": 1000, "mean_kernel_ns": 9_500})
    assert rows(f) == [("kernels", "", "Kernels by Mean Duration", "", -1, -1)]
    assert claim(f) == ("kernel_mean", 9_500, "kernels", 10_000, [])
    at = kernel_digest(("relu", 1000, 10_000_000, 20_000, "", ""))  # a mean of exactly 10 µs: not tiny
    assert compute_rule("tiny_kernels", at) is None


def test_ai_cpu_names_the_longest_task_and_the_operators_by_time():
    """AI_CPU tasks of at least 20 µs: six operators; the longest task 50 µs; named by total time, five of them;
    2.1 ms of them in two steps."""
    ks = [(f"op{i}", 2, 100_000 * (i + 1), 20_000 + 5_000 * i, "AI_CPU", "") for i in range(6)]
    d = kernel_digest(*ks, ("short", 2, 900_000, 19_999, "ai_cpu", ""), ("MatMul", 2, 900_000, 90_000, "AI_CORE", ""))
    f = compute_rule("ai_cpu", d)
    assert (f.severity, f.title) == ("warning", "Operators run on AI_CPU")
    assert f.gain_basis == "these AI_CPU tasks' time per step"
    assert f.seen == ("6 operators run as AI_CPU tasks of at least 20 us (longest op5, 45.0 us): op5, op4, op3, op2, "
                      "op1.")
    assert (f.value, f.gain_ns, f.figures) == (45_000, 1_050_000, {"ai_cpu_ops": 6, "ai_cpu_max_ns": 45_000})
    assert rows(f) == [("kernels", f"op{i}", f"op{i} (AI_CPU)", f"op{i}", -1, -1) for i in (5, 4, 3)]
    assert claim(f) == ("kernel_max", 45_000, "kernels", 20_000, [])


def test_dominant_kernel_family_names_its_largest_kernel():
    """matmul kernels 600 of 1000 µs (60 %), in two kernels, the largest sm80_gemm; 300 µs a step at most."""
    d = kernel_digest(("sm80_gemm", 10, 400_000, 1, "", "matmul"), ("cutlass_gemm", 10, 200_000, 1, "", "matmul"),
                      ("relu", 10, 400_000, 1, "", "elementwise"))
    d.kernels_by_name.add(name="ncclKernel", calls=1, total_ns=5 * MS, communication=True, family="communication")
    f = compute_rule("dominant_kernel_family", d)
    assert (f.severity, f.title) == ("info", "matmul kernels dominate the device time")
    assert f.seen == "matmul kernels take 60.0% of the kernel time (2 kernels; largest sm80_gemm)."
    assert (f.value, f.at_most_ns, f.figures) == (pytest.approx(0.6), 300_000, {"family_share": pytest.approx(0.6)})
    assert f.gain_basis == "depends on their efficiency; at most 0.300 ms per step"
    assert rows(f) == [("kernels", "sm80_gemm", "sm80_gemm", "sm80_gemm", -1, -1)]
    assert claim(f) == ("kernel_share", 0.6, "kernels", 0.3, [])


def test_tensor_cores_unused_bounds_its_gain_by_the_peaks():
    """Eligible kernels 600 of 1000 µs on a cc 8.0 GPU with no Tensor Core kernel (60 %); two steps: 300 µs a step,
    under the 400 µs the device computed; fp32 19.5 / fp16 312 TFLOP/s keep 6.25 % of it: 281.25 -> 281 µs."""
    from canning_tb.analysis.kernels import CORE_ELIGIBLE, CORE_TENSOR
    d = kernel_digest()
    d.average.compute_ns = 400_000
    d.cores.add(core=CORE_ELIGIBLE, total_ns=600_000)
    d.cores.add(core=CORE_TENSOR, total_ns=0)
    d.cores.add(core="Other", total_ns=400_000)
    peak = d.roofline.peaks.add(kind="cuda")
    peak.tflops["fp32"], peak.tflops["fp16"] = 19.5, 312.0
    f = compute_rule("tensor_cores_unused", d)
    assert (f.severity, f.title) == ("warning", "Tensor Cores are not used")
    assert f.seen == (f"Kernels of Tensor-Core-eligible operators take 60.0% of the kernel time ({CORE_ELIGIBLE}), yet "
                      "no kernel runs on Tensor Cores (Kernels: Tensor Cores 0 %).")
    assert (f.value, f.gain_ns) == (pytest.approx(0.6), 281_250)
    assert f.figures == {"tc_eligible_share": pytest.approx(0.6), "compute_capability": 8.0}
    assert f.gain_basis == ("the eligible kernels' time per step, less the 6.2% of it that remains at the Tensor "
                            "Cores' fp16 peak (device datasheet)")
    assert rows(f) == [("kernels", CORE_ELIGIBLE, "Kernels by core", "", -1, -1)]
    assert claim(f) == ("tc_eligible", 0.6, "kernels", 0.1, [])
    assert f.change_torch == ("mixed precision: with torch.autocast('cuda', dtype=torch.float16 or torch.bfloat16); or "
                              "TF32 for fp32 matmuls: torch.backends.cuda.matmul.allow_tf32 = True (cudnn.allow_tf32 "
                              "for conv)")
    d.average.compute_ns = 200_000  # the device computed 200 µs a step: the bound is that
    assert compute_rule("tensor_cores_unused", d).gain_ns == int(200_000 * (1 - 19.5 / 312))
    v100 = kernel_digest(cc="7.0")
    v100.CopyFrom(d)
    v100.window.devices[0].compute_capability = "7.0"
    assert compute_rule("tensor_cores_unused", v100).change_torch == (
        "mixed precision: with torch.autocast('cuda', dtype=torch.float16) (compute capability 7.0: fp16 Tensor Cores "
        "only)")


def test_compilation_counts_its_share_of_the_window(monkeypatch):
    """Two steps of 1 ms; compile ranges 100-200 µs and 1000-1200 µs: 300 µs, 15 % of the 2 ms window, 150 µs a
    step; the longest the second."""
    t = table([step(1, 0), step(2, MS), ev("gemm", K.KERNEL, 0, 2 * MS),
               ev("torch/_dynamo/convert_frame.py: compile_inner", K.USER_ANNOTATION, 100_000, 100_000),
               ev("torch/_dynamo/convert_frame.py: compile_inner", K.USER_ANNOTATION, MS, 200_000)])
    f = one(t, monkeypatch, "compilation")
    assert (f.severity, f.title) == ("warning", "Graph / operator compilation inside the window")
    assert f.gain_basis == "the compilation ranges per step; guard checks and cache misses around them come on top"
    assert f.seen == "2 compilation events take 0.300 ms, 15.0% of the window."
    assert (f.value, f.gain_ns, f.gain_is_bound) == (pytest.approx(0.15), 150_000, False)
    assert f.figures == {"compile_events": 2, "compile_ns": 300_000, "compile_share": pytest.approx(0.15)}
    name = "torch/_dynamo/convert_frame.py: compile_inner"
    assert rows(f) == [("timeline", name, f"the longest {name}", name, MS, 200_000)]
    assert claim(f) == ("compile_time", 300_000, "trace", pytest.approx(float("nan"), nan_ok=True),
                        ["compilation ranges"])
    assert removes(f) == ([100_000, MS], [200_000, 1_200_000])


# -- fusion --------------------------------------------------------------------------------------------------------

RMS = ["pow", "mean", "add", "rsqrt", "mul", "mul"]


def rms_window(repeats, names=RMS):
    """`repeats` times the written-out RMSNorm on the host, its six operators 5, 10, ... 30 µs (105 µs)."""
    return table([step()] + [ev(f"aten::{n}", K.CPU_OP, r * 100_000 + j * 10_000, 5_000 * (j + 1))
                             for r in range(repeats) for j, n in enumerate(names)])


def test_fusable_ops_counts_the_sequence_and_its_time(monkeypatch):
    """Five RMSNorms of 105 µs: 525 µs in the one step; four are not enough."""
    f = one(rms_window(5), monkeypatch, "fusable_rms_norm")
    assert (f.severity, f.title) == ("info", "RMSNorm written out in operators")
    assert f.gain_basis == "the time of the matched operators; the fused call still costs part of it"
    assert f.seen == ("The operator sequence 'pow mean add rsqrt mul( mul)?' runs 5 times in the window (5.0 per step, "
                      "0.525 ms per step).")
    assert (f.value, f.gain_ns, f.figures) == (5, 525_000, {"occurrences": 5, "matched_ns_matched": 525_000})
    assert rows(f) == [("operators", "aten::pow", "aten::pow: first operator of the sequence", "aten::pow", -1, -1)]
    assert f.change_npu == "torch_npu.npu_rms_norm(x, weight, epsilon)"
    assert "fusable_rms_norm" not in found(rms_window(4), monkeypatch)


def test_a_pattern_with_no_torch_change_is_judged_on_the_npu_only(monkeypatch):
    t = rms_window(5, ["permute", "contiguous", "reshape"])
    assert "fusable_confusion_transpose" not in found(t, monkeypatch)


def adamw_step(last: int = 10_000) -> list:
    """A step holding AdamW's step 500-700 µs with four aten::add_ at 510, 550, 590, 630 µs, 10 µs each (the last one
    `last` ns), no device."""
    return ([step(), ev("Optimizer.step#AdamW.step", K.USER_ANNOTATION, 500_000, 200_000)] +
            [ev("aten::add_", K.CPU_OP, 510_000 + 40_000 * i, last if i == 3 else 10_000) for i in range(4)])


def test_unfused_optimizer_finding_and_its_edit(monkeypatch):
    """AdamW's step 500-700 µs with four aten::add_ of 10 µs inside (at 510, 550, 590, 630 µs), no device: 200 µs a
    step. The edit keeps the calls' 40 µs, the step's edges (10 µs before the first call, 60 after the last: its
    set-up) and a quarter of the 90 µs of glue between the calls (one operator kind for four calls); no operator
    calls two others, so a call from C++ costs nothing more: 40 + 70 + 22.5 = 132.5 of 200 µs, 0.6625."""
    name = "Optimizer.step#AdamW.step"
    t = table(adamw_step())
    f = one(t, monkeypatch, "unfused_optimizer")
    assert (f.severity, f.title) == ("info", "The AdamW optimizer runs unfused")
    assert f.gain_basis == "the optimizer step's time per step"
    assert f.seen == (f"{name} runs 1 times, 0.200 ms per step, one small operator per parameter tensor (no fused or "
                      "multi-tensor kernel inside it).")
    assert (f.change_torch, f.change_npu) == ("torch.optim.AdamW(..., fused=True) (or foreach=True)",
                                              "torch_npu.optim.NpuFusedAdamW")
    assert (f.value, f.gain_ns, f.figures) == (200_000, 200_000, {"optimizer_ns_per_step": 200_000})
    assert rows(f) == [("operators", name, name, name, 500_000, 200_000)]
    assert claim(f)[0::2] == ("host_total", "operators", [name])
    assert removes(f) == ([500_000], [700_000])
    (lo, hi), host_factor, dev, dev_factor = f.shrink
    assert (list(lo), list(hi), host_factor, len(dev), dev_factor) == ([500_000], [700_000], pytest.approx(0.6625), 0,
                                                                        1.0)


US = 1_000


@pytest.mark.parametrize("parents,factor", [
    # three aten::to, each calling two operators: gaps 2, 7, 3 µs, median 3 (mean 4): 4 calls keep 12 µs:
    # 40 + 70 + 22.5 + 12 = 144.5 of 200
    ([[(0, 10), (12, 10)], [(0, 10), (17, 10)], [(0, 10), (13, 10)]], 0.7225),
    ([[(0, 10), (13, 10)]], 0.7225),  # one operator calling two: its gap alone, 3 µs
    # 4 x 30 µs above the 90 of glue: none goes
    ([[(0, 10), (30, 10)], [(0, 10), (40, 10)], [(0, 10), (30, 10)]], 1.0),
    ([[(0, 10)], [(0, 10)]], 0.6625),  # one call each: no gap between two calls of one operator, 0 µs
    ([[(0, 10), (10, 10)], [(0, 10), (10, 10)], [(0, 10), (15, 10)]], 0.6625),  # gaps 0, 0, 5: median 0
    # an annotation (no operator) between the two calls: the gap is the operators', 5 µs (not 2 and 1):
    # 40 + 70 + 22.5 + 20 = 152.5 of 200
    ([[(0, 10), (15, 10), ("annotation", 12, 2)]], 0.7625),
])
def test_on_the_cpu_each_call_keeps_the_cost_of_a_call_from_cpp(monkeypatch, parents, factor):
    """The AdamW step of test_unfused_optimizer_finding_and_its_edit; before it, aten::to at 100, 200, 300 µs, each
    calling the operators listed ((start, length) in µs from its own start): the median gap between two operators
    one operator calls is what a call made from C++ costs beyond its own time; the multi-tensor loop pays it once
    per tensor, at most the glue."""
    events = adamw_step()
    for i, children in enumerate(parents):
        t0 = 100_000 * (i + 1)
        events.append(ev("aten::to", K.CPU_OP, t0, 60 * US))
        for child in children:
            if child[0] == "annotation":
                events.append(ev("inner", K.USER_ANNOTATION, t0 + child[1] * US, child[2] * US))
            else:
                events.append(ev("aten::copy_", K.CPU_OP, t0 + child[0] * US, child[1] * US))
    assert one(table(events), monkeypatch, "unfused_optimizer").shrink[1] == pytest.approx(factor)


def test_operators_called_by_no_operator_are_not_a_call_from_cpp(monkeypatch):
    """No ProfilerStep: the window's first host event is an aten::to at 0-60 µs calling two aten::copy_ 3 µs apart;
    two aten::mm at 100-110 and 140-150 µs are called by no operator (30 µs apart, Python between them); then the
    AdamW step of test_unfused_optimizer_finding_and_its_edit. A call from C++ costs 3 µs: 40 + 70 + 22.5 + 4 x 3 =
    144.5 of 200 µs (the mm's 30 µs taken for one would keep all 200)."""
    events = [ev("aten::to", K.CPU_OP, 0, 60 * US), ev("aten::copy_", K.CPU_OP, 0, 10 * US),
              ev("aten::copy_", K.CPU_OP, 13 * US, 10 * US), ev("aten::mm", K.CPU_OP, 100 * US, 10 * US),
              ev("aten::mm", K.CPU_OP, 140 * US, 10 * US)] + adamw_step()[1:]
    assert one(table(events), monkeypatch, "unfused_optimizer").shrink[1] == pytest.approx(144.5 / 200)


def test_a_call_ending_at_its_steps_end_leaves_no_tail(monkeypatch):
    """AdamW's step 500-700 µs, four aten::add_ at 510, 550, 590, 630 µs, the last 70 µs long (ending at 700, the
    step's end): edges 10 + 0, glue 3 x 30 = 90 µs, calls 100 µs: 100 + 10 + 22.5 = 132.5 of 200 µs."""
    events = adamw_step(last=70_000)
    assert one(table(events), monkeypatch, "unfused_optimizer").shrink[1] == pytest.approx(132.5 / 200)


def test_an_optimizer_step_with_one_call_has_its_edges(monkeypatch):
    """Two AdamW steps: 500-700 µs as in test_unfused_optimizer_finding_and_its_edit and 800-900 µs with one
    aten::add_ at 820-830 µs (edges 20 + 70, no glue). One kind over 2 ranges: 2 of 5 calls. Calls 50 µs, edges
    70 + 90, glue 90 x 0.4 = 36: 246 of 300 µs (a step without its edges would keep 252)."""
    events = adamw_step() + [ev("Optimizer.step#AdamW.step", K.USER_ANNOTATION, 800_000, 100_000),
                             ev("aten::add_", K.CPU_OP, 820_000, 10_000)]
    assert one(table(events), monkeypatch, "unfused_optimizer").shrink[1] == pytest.approx(246 / 300)


def test_an_optimizer_step_without_a_call_is_kept_whole(monkeypatch):
    """Two AdamW steps: 500-700 µs as in test_unfused_optimizer_finding_and_its_edit (132.5 of its 200 µs kept) and
    800-900 µs with no operator inside (all Python; the change has no call to fold there, kept whole)."""
    events = adamw_step() + [ev("Optimizer.step#AdamW.step", K.USER_ANNOTATION, 800_000, 100_000)]
    # one kind over 2 ranges: 2 of 4 calls, a half of the glue (90 µs) kept: 40 + 70 + 45 + 100 = 255 of 300
    assert one(table(events), monkeypatch, "unfused_optimizer").shrink[1] == pytest.approx(255 / 300)


def optimizer_window(ranges, device=False) -> list:
    """One 30 ms step; AdamW's step ranges 5 ms apart, each (length, [(start, length) of an aten::add_ inside it]) in
    µs from the range's start. With device, each call launches a 5 µs kernel."""
    events, corr = [step(1, 0, 30 * MS)], 0
    for k, (length, calls) in enumerate(ranges):
        t0 = (k + 1) * 5 * MS
        events.append(ev("Optimizer.step#AdamW.step", K.USER_ANNOTATION, t0, length * US))
        for start, dur in calls:
            ts = t0 + start * US
            events.append(ev("aten::add_", K.CPU_OP, ts, dur * US))
            if device:
                corr += 1
                events += [ev("cudaLaunchKernel", K.RUNTIME, ts + 2 * US, 2 * US, correlation=corr),
                           ev("add_kernel", K.KERNEL, ts + 20 * US, 5 * US, correlation=corr, stream=8)]
    return events


FOUR = [(10, 10), (50, 10), (90, 10), (130, 10)]  # four calls 30 µs apart: 130 µs from the first to the last's end


def stalled_steps(n: int, device: bool) -> list:
    """n AdamW steps of test_unfused_optimizer_finding_and_its_edit (200 µs, FOUR), the last one stalled 3 ms: on the
    CPU in the glue after the second call, on the device inside the second call (3,010 µs long)."""
    stalled = [(10, 10), (50, 3010 if device else 10), (3090, 10), (3130, 10)]
    return optimizer_window([(200, FOUR)] * (n - 1) + [(3200, stalled)], device)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_a_stall_in_one_optimizer_step_is_not_gained_by_fusing(monkeypatch, n):
    """stalled_steps on the CPU: per gap between two calls, 30 µs of glue in each step and 1,030 in the stalled one;
    the lower median is 30 (with two steps, the quicker): 90 µs of glue a step, a quarter of it kept (1 kind, 4
    calls), the stall kept: 200n + 3000 µs, of which 0.75 x 90n go: (132.5n + 3000) / (200n + 3000). The stall read
    as glue would have gone too: (132.5n + 750) / (200n + 3000)."""
    f = one(table(stalled_steps(n, device=False)), monkeypatch, "unfused_optimizer")
    assert f.shrink[1] == pytest.approx((132.5 * n + 3000) / (200 * n + 3000))


@pytest.mark.parametrize("n", [2, 3, 4])
def test_a_stall_in_one_optimizer_call_is_not_gained_by_fusing_on_the_device(monkeypatch, n):
    """stalled_steps with device work: from the first call to the last, 130 µs a step (32.5 a call) and 3,130 µs in
    the stalled one (782.5 a call); the lower median is 32.5: 130 µs a step, a quarter kept: 200n + 3000 µs, of which
    0.75 x 130n go: (102.5n + 3000) / (200n + 3000)."""
    f = one(table(stalled_steps(n, device=True)), monkeypatch, "unfused_optimizer")
    assert f.shrink[1] == pytest.approx((102.5 * n + 3000) / (200 * n + 3000))


@pytest.mark.parametrize("ranges,device,factor", [
    # glue per gap 30 (3 gaps), 40 (2), 50 (1): lower median 40 x 6 gaps = 240, more than the 220 µs they took:
    # 220; 9 calls, 1 kind x 3 ranges: a third kept: 520 - 220 + 73.33 = 373.33 of 520 µs
    ([(200, FOUR), (180, [(10, 10), (60, 10), (110, 10)]), (140, [(10, 10), (70, 10)])], False, (300 + 220 / 3) / 520),
    # glue per gap 50 (3 gaps), 40 (2), 30 (1): 40 x 6 = 240 of the 260 µs they took; a third kept:
    # 560 - 240 + 80 = 400 of 560 µs
    ([(260, [(10, 10), (70, 10), (130, 10), (190, 10)]), (180, [(10, 10), (60, 10), (110, 10)]),
      (120, [(10, 10), (50, 10)])], False, 400 / 560),
    # the last range without a call (kept whole): 30 x 6 gaps = 180 µs, 3 of 8 kept: 500 - 180 + 67.5 of 500
    ([(200, FOUR), (200, FOUR), (100, [])], False, 387.5 / 500),
    # stalled_steps(3) and two ranges of one call (no gap): per gap 30, 30, 1,030: 30 x 9 gaps = 270 µs; 14 calls,
    # 1 kind x 5 ranges: 3800 - 270 + 270 x 5 / 14 of 3800 µs
    ([(200, FOUR), (200, FOUR), (3200, [(10, 10), (50, 10), (3090, 10), (3130, 10)]), (100, [(20, 10)]),
      (100, [(20, 10)])], False, (3530 + 270 * 5 / 14) / 3800),
    # with device work, per call from the first to the last: 10, 10, 10 (one call each) and 32.5: lower median 10 x 7
    # calls = 70 µs; 1 kind x 4 ranges of 7 calls kept: 500 - 70 x 3 / 7 = 470 of 500 µs
    ([(100, [(20, 10)])] * 3 + [(200, FOUR)], True, 470 / 500),
    # with device work and a range without a call (kept whole, nothing of it in the sum): 32.5 x 8 calls = 260 µs,
    # 3 of 8 kept: 500 - 260 x 5 / 8 = 337.5 of 500 µs
    ([(200, FOUR), (200, FOUR), (100, [])], True, 337.5 / 500),
])
def test_the_time_fusing_removes_is_the_typical_ranges(monkeypatch, ranges, device, factor):
    """Glue per gap between two calls (CPU) or host time per call (device), the lower median over the optimizer's
    ranges with one, times all the gaps (calls), never more than they took."""
    f = one(table(optimizer_window(ranges, device)), monkeypatch, "unfused_optimizer")
    assert f.shrink[1] == pytest.approx(factor, rel=1e-12)


def test_a_multi_tensor_optimizer_is_told_to_fuse(monkeypatch):
    name = "Optimizer.step#Adam.step"
    t = table([step(), ev(name, K.USER_ANNOTATION, 500_000, 200_000),
               ev("aten::_foreach_add_", K.CPU_OP, 510_000, 10_000)])
    f = one(t, monkeypatch, "unfused_optimizer")
    assert f.title == "The Adam optimizer runs multi-tensor, not fused"
    assert f.seen.endswith("0.200 ms per step, with multi-tensor (foreach) kernels and no fused one.")
    assert f.change_torch == "torch.optim.Adam(..., fused=True)"


# -- time_rules: at the thresholds, and what the digest alone gives -------------------------------------------------

@pytest.mark.parametrize("rule,events", [
    ("dataloader_share", [ev(DATALOADER, K.USER_ANNOTATION, 0, 50_000)]),                  # 5 % exactly
    ("device_idle", [ev("gemm", K.KERNEL, 0, 500_000)]),                                     # 50 % idle exactly
    ("device_wait", [ev("gemm", K.KERNEL, 0, 500_000),
                     ev("cudaStreamSynchronize", K.RUNTIME, 600_000, 100_000)]),            # 10 % exactly
    ("launch_bound", [ev("gemm", K.KERNEL, 0, 500_000), ev("cudaLaunchKernel", K.RUNTIME, 600_000, 100_000)]),
    ("host_bound", [ev("gemm", K.KERNEL, 0, 50_000), ev("aten::index", K.CPU_OP, 100_000, 500_000)]),  # 50 %
    ("python_on_path", [ev("aten::mm", K.CPU_OP, 0, 900_000)]),                               # 10 % exactly
    ("dataloader_share", [ev(DATALOADER, K.USER_ANNOTATION, 0, 40_000)]),                   # below: never a candidate
])
def test_at_the_threshold_no_rule_is_a_candidate(monkeypatch, rule, events):
    assert rule not in found(table([step()] + events), monkeypatch)


def test_sync_calls_at_one_per_step_and_at_the_device_wait_threshold(monkeypatch):
    """Device wait 10 % exactly (device_wait stays quiet) and one synchronise per step: sync_calls speaks. Five call
    sites after the kernel (20 µs each inside aten::op0 ... op3, one with no operator around it): four named."""
    events = [step(), ev("gemm", K.KERNEL, 0, 500_000)]
    for i in range(4):
        events += [ev(f"aten::op{i}", K.CPU_OP, 550_000 + i * 80_000, 50_000),
                   ev("cudaStreamSynchronize", K.RUNTIME, 560_000 + i * 80_000, 20_000 - i)]
    events.append(ev("cudaDeviceSynchronize", K.RUNTIME, 900_000, 20_006))  # 100 µs in all
    out = found(table(events), monkeypatch)
    assert "device_wait" not in out
    (f,) = out["sync_calls"]
    assert f.seen.startswith("5.0 calls per step that make the host wait for the device's result: "
                             "cudaDeviceSynchronize "
                             "(1.0 per step), cudaStreamSynchronize under aten::op0 (1.0 per step), "
                             "cudaStreamSynchronize under aten::op1 (1.0 per step), cudaStreamSynchronize under "
                             "aten::op2 (1.0 per step); the host waits with the device idle 10.0% of the average step")
    assert [e.row for e in f.evidence] == ["cudaDeviceSynchronize", "aten::op0", "aten::op1"]
    assert removes(f) == ([560_000 + i * 80_000 for i in range(4)] + [900_000],
                          [580_000 + i * 79_999 for i in range(4)] + [920_006])


def test_sync_calls_under_one_per_step_is_quiet(monkeypatch):
    """One synchronise in two steps: 0.5 a step."""
    events = [step(1, 0), step(2, MS), ev("gemm", K.KERNEL, 0, 1_900_000), ev("aten::item", K.CPU_OP, 100_000, 20_000),
              ev("cudaStreamSynchronize", K.RUNTIME, 105_000, 10_000)]
    assert "sync_calls" not in found(table(events), monkeypatch)


def test_sync_calls_in_a_cpu_window_are_left_to_needs_device(monkeypatch):
    events = [step(), ev("aten::item", K.CPU_OP, 100_000, 20_000), ev("cudaStreamSynchronize", K.RUNTIME, 105_000, 10)]
    assert "sync_calls" not in found(table(events), monkeypatch)


def test_the_time_rules_on_an_empty_digest_find_nothing():
    from canning_tb.analysis.rules import time_rules as tr
    for fn in (tr.dataloader_share, tr.device_idle, tr.device_wait, tr.sync_calls_rule, tr.launch_bound, tr.host_bound,
               tr.dominant_op, tr.python_on_path):
        assert fn(RuleInput(pb.Digest())) is None, fn.__name__


def test_a_one_ns_step_of_device_wait_is_all_device_wait():
    """The share is of any step above 0 ns."""
    from canning_tb.analysis.rules.time_rules import device_wait
    d = pb.Digest()
    d.average.total_ns, d.average.device_wait_ns = 1, 1
    assert direct(device_wait, d).value == 1.0


def test_time_findings_from_the_digest_alone():
    """No events: the DataLoader finding has no longest call to show, the Device wait names no call."""
    from canning_tb.analysis.rules.time_rules import dataloader_share, device_wait
    d = pb.Digest()
    d.steps.add(number=1, start_ns=0, dur_ns=MS)
    d.average.total_ns, d.average.dataloader_ns, d.average.device_wait_ns = MS, 60_000, 110_000
    d.average.compute_ns = 400_000
    assert rows(direct(dataloader_share, d)) == [("overview", "DataLoader", "Average step breakdown: DataLoader", "",
                                                  -1, -1)]
    assert direct(device_wait, d).seen == ("Calls that block the host until the device is done take 11.0% of the "
                                           "average step (Device wait), 0.110 ms.")


def test_dominant_op_replays_its_roof_only_on_device_time(monkeypatch):
    """at_roof stood in for: asked with the operator and its share of roof where the operator's device time is known
    (also at 0 % of its roof), never for host time or an unknown roof; its edit makes the gain the roof's."""
    from canning_tb.analysis.rules import time_rules
    asked = []

    def at_roof(inp, name, roof):
        asked.append((name, roof))
        return {"edit": f"{name} at {roof}"}
    monkeypatch.setattr(time_rules, "at_roof", at_roof)
    f = direct(dominant_op, dominant_window(0.4))
    assert (asked, f.edit, f.gain_ns, f.at_most_ns) == ([("aten::mm", 0.4)], "aten::mm at 0.4", 21_000, 21_000)
    asked.clear()
    z = direct(dominant_op, dominant_window(0.0))
    assert (asked, z.at_most_ns) == ([("aten::mm", 0.0)], 35_000)
    assert z.seen.endswith("(0.035 ms per step; at its roof it would take 0.000 ms).")
    asked.clear()
    for d in (dominant_window(0.4, metric="host"), dominant_window(None)):
        assert direct(dominant_op, d).edit == "" and asked == []


def test_dominant_op_per_step_in_whole_ns_and_its_advice():
    """70 001 ns over two steps: 35 000 ns a step (the Operators view's whole ns)."""
    d = dominant_window(None)
    d.ops_by_name[0].device_self_ns = 70_001
    f = direct(dominant_op, d)
    assert f.at_most_ns == 35_000 and isinstance(f.at_most_ns, int)
    assert f.change_torch == ("look at its rows by input shape and by call stack (Operators view): fewer or larger "
                              "calls, lower precision (torch.autocast) or a fused / better implementation of this "
                              "operator.")
    assert direct(dominant_op, dominant_window(None, "bf16")).change_torch == (
        "look at its rows by input shape and by call stack (Operators view): fewer or larger calls, a fused / better "
        "implementation of this operator.")


def test_dominant_op_at_exactly_its_threshold_is_quiet():
    """aten::mm 30 % exactly of the operators' device self time."""
    d = dominant_window(None)
    d.ops_by_name[0].device_self_ns = 30_000
    d.ops_by_name[1].device_self_ns = 25_000
    for name in ("aten::mul", "aten::div"):
        d.ops_by_name.add(name=name, calls=2, device_self_ns=22_500, device_total_ns=22_500)
    assert direct(dominant_op, d) is None


# -- the other rules at exactly their thresholds -------------------------------------------------------------------

def test_gc_pauses_of_exactly_one_ms_on_average_are_quiet(monkeypatch):
    t = table([step(1, 0, 10 * MS), ev("gemm", K.KERNEL, 0, 10 * MS), ev("GC", K.USER_ANNOTATION, 2 * MS, 800_000),
               ev("GC", K.USER_ANNOTATION, 5 * MS, 1_200_000)])
    assert "gc_pauses" not in found(t, monkeypatch)


def test_send_and_receive_at_exactly_half_are_not_yet_the_pipelines():
    """Send 300 µs of 600 µs of communication: 50 %, not above half: the overlap finding, not the pipeline's."""
    p2p = [("Send", "1", 800_000, 300_000, MIB, 1, "nccl:send", "p2p")]
    d = comm_digest(200_000, DP_CALLS[:4] + p2p)
    assert comm_rule("pipeline_wait", d) is None
    assert comm_rule("communication_not_overlapped", d).title == "Communication is not hidden by compute"


@pytest.mark.parametrize("small_bytes,small_ns,fires", [
    (4096, 25_000, False),     # 5 x 25 µs of 625 µs: 20 % exactly, not above
    (MIB, 30_000, False),      # 1 MiB is not under 1 MiB
    (MIB - 1, 30_000, True),
])
def test_small_packets_bounds(small_bytes, small_ns, fires):
    calls = [("AllReduce", "0", 40_000 * i, small_ns, small_bytes, 1, "nccl:all_reduce", "collective")
             for i in range(5)]
    calls.append(("AllGather", "0", 300_000, 500_000, 4 * MIB, 1, "nccl:all_gather", "collective"))
    assert (comm_rule("small_packets", comm_digest(200_000, calls)) is not None) is fires


def test_a_broadcast_of_exactly_five_percent_of_the_step_is_quiet():
    casts = [("Broadcast", "0", 0, 50_000, MIB, 1, "nccl:broadcast", "collective")]
    assert comm_rule("first_step_broadcast", comm_digest(200_000, DP_CALLS + casts)) is None


def test_a_transfer_of_exactly_16_mib_is_judged():
    d = pb.Digest()
    d.communication.links.add(src=0, dst=1, transport="HCCS", bytes=16 * MIB, bandwidth_gbps=10.0)
    assert comm_rule("low_bandwidth", d).seen.startswith("1 transfers of at least 16 MiB")


# -- comm_rules: what the events give (the time removed), and the branches of the digest's rows -------------------

NCCL_AR, NCCL_BC, NCCL_P2P = ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclDevKernel_Broadcast_RING_LL",
                              "ncclDevKernel_SendRecv")


def test_not_overlapped_removes_the_collectives_but_the_one_off_broadcast(monkeypatch):
    """A 500 µs kernel, then an all-reduce 600-710 µs and a broadcast 750-800 µs (one step, numbered 1: the job's
    first): 160 µs not hidden, 16 %; the change removes the all-reduce's time only."""
    t = table([step(), ev("gemm", K.KERNEL, 0, 500_000), ev(NCCL_AR, K.COMM_KERNEL, 600_000, 110_000),
               ev(NCCL_BC, K.COMM_KERNEL, 750_000, 50_000)])
    f = one(t, monkeypatch, "communication_not_overlapped")
    assert f.seen == ("Communication not hidden by compute takes 16.0% of the average step (Communication, 0.160 ms); "
                      "the collectives: AllReduce (1 calls, running 0.110 ms per step). The one-off broadcast of the "
                      "first step is left out (its own finding).")
    assert removes(f) == ([600_000], [710_000])
    assert f.edit == "each collective started as the step's backward begins (DDP buckets / FSDP prefetch)"


def test_pipeline_wait_removes_the_send_and_receive_time_only(monkeypatch):
    """Send / receive 600-710 and 750-800 µs, an all-reduce 850-950 µs (its group unknown, as the send's: the
    pipeline's): 160 of 260 µs in send / receive, 61.5 %; the change removes the send / receive time."""
    t = table([step(), ev("gemm", K.KERNEL, 0, 500_000), ev(NCCL_P2P, K.COMM_KERNEL, 600_000, 110_000),
               ev(NCCL_P2P, K.COMM_KERNEL, 750_000, 50_000), ev(NCCL_AR, K.COMM_KERNEL, 850_000, 100_000)])
    f = one(t, monkeypatch, "pipeline_wait")
    assert f.value == pytest.approx(160 / 260)
    assert removes(f) == ([600_000, 750_000], [710_000, 800_000])


def test_small_packets_removes_the_small_calls_not_hidden(monkeypatch):
    """Five 4 KiB all-reduces of 30 µs after the kernel and one of 4 MiB for 100 µs: 150 of 250 µs small, 60 %."""
    calls = [ev(NCCL_AR, K.COMM_KERNEL, 600_000 + 40_000 * i, 30_000, bytes=4096) for i in range(5)]
    calls.append(ev(NCCL_AR, K.COMM_KERNEL, 800_000, 100_000, bytes=4 * MIB))
    f = one(table([step(), ev("gemm", K.KERNEL, 0, 500_000)] + calls), monkeypatch, "small_packets")
    assert (f.value, f.gain_ns) == (pytest.approx(0.6), 0)
    # the evidence is a small call (the first of the longest), never the 4 MiB one of the same collective
    assert rows(f) == [("communication", "AllReduce", "AllReduce", NCCL_AR, 600_000, 30_000)]
    assert removes(f) == ([600_000 + 40_000 * i for i in range(5)], [630_000 + 40_000 * i for i in range(5)])


def test_send_and_receive_are_told_by_their_kind_or_their_type():
    """Rows whose type is not given but whose kind says Send / Recv, and a p2p row of an unknown kind: all the
    pipeline's (600 of 700 µs)."""
    calls = [("Send", "1", 0, 200_000, MIB, 1, "send", ""), ("Recv", "1", 300_000, 200_000, MIB, 1, "recv", ""),
             ("Other", "1", 600_000, 200_000, MIB, 1, "hcom_x", "p2p"),
             ("AllReduce", "0", 900_000, 100_000, MIB, 1, "nccl:all_reduce", "collective")]
    f = comm_rule("pipeline_wait", comm_digest(200_000, calls))
    assert f.value == pytest.approx(6 / 7) and [e.row for e in f.evidence] == ["Send", "Recv", "Other"]


def test_the_pipeline_groups_all_reduce_is_left_out_and_said_so():
    """An all-reduce in the group of the pipeline's send (group 1) and one in a group labelled embd are left out; the
    data-parallel one (group 0) is named; send / receive 200 of 700 µs (not above half)."""
    calls = [("AllReduce", "0", 0, 200_000, MIB, 1, "ar0", "collective"),
             ("AllReduce", "1", 250_000, 100_000, MIB, 1, "ar1", "collective"),
             ("AllReduce", "2", 400_000, 200_000, MIB, 1, "ar2", "collective"),
             ("Send", "1", 700_000, 200_000, MIB, 1, "send", "p2p")]
    d = comm_digest(200_000, calls)
    d.communication.groups.add(group="2", name="embd", label="")
    f = comm_rule("communication_not_overlapped", d)
    assert f.seen.split("; the collectives: ")[1] == "AllReduce (1 calls, running 0.100 ms per step)."
    assert [e.timeline_name for e in f.evidence[1:]] == ["ar0"]
    assert f.why.endswith(" This rank is also a pipeline stage: its send / receive and the pipeline group's all-reduce "
                          "are left out here (pipeline_wait, the cross-rank findings).")


def test_a_collective_row_with_no_calls_names_no_time():
    d = comm_digest(200_000)
    d.communication.collectives.add(kind="AllReduce", group="0", calls=3, total_ns=300_000, comm_type="collective")
    f = comm_rule("communication_not_overlapped", d)
    assert f.seen.endswith("the collectives: AllReduce (3 calls).")
    assert rows(f)[1] == ("communication", "AllReduce", "AllReduce 0", "", -1, -1)


@pytest.mark.parametrize("steps,cast_steps,gather_steps,one_off", [
    ((1, 2, 3), (1, 2), (1,), True),       # DDP: construction, then the bucket rebuild; its AllGather in step 1 only
    ((1, 2, 3), (1, 3), (1,), False),      # a broadcast in the third step: not a one-off
    ((4, 5), (4,), (4,), True),            # two steps: the first only
    ((4, 5), (5,), (5,), False),
    ((1,), (1,), (1,), True),              # one step, the job's first
    ((2,), (2,), (2,), False),             # one step, not the first
])
def test_one_off_broadcasts(steps, cast_steps, gather_steps, one_off):
    from canning_tb.analysis.rules.comm_rules import one_off_broadcast
    d = pb.Digest()
    for n in steps:
        d.steps.add(number=n, start_ns=(n - 1) * MS, dur_ns=MS)
    for n in cast_steps:
        d.communication.calls.add(kind="Broadcast", step=n, start_ns=(n - 1) * MS, dur_ns=10)
    for n in gather_steps:
        d.communication.calls.add(kind="AllGather", step=n, start_ns=(n - 1) * MS + 100, dur_ns=10)
    d.communication.calls.add(kind="AllReduce", step=steps[-1], start_ns=(steps[-1] - 1) * MS + 200, dur_ns=10)
    got = [(c.kind, c.step) for c in one_off_broadcast(RuleInput(d))]
    want = [("Broadcast", n) for n in cast_steps] + [("AllGather", n) for n in gather_steps]
    assert got == (want if one_off else [])


def test_an_all_gather_of_later_steps_too_is_not_part_of_the_one_off():
    from canning_tb.analysis.rules.comm_rules import one_off_broadcast
    d = pb.Digest()
    for n in (1, 2):
        d.steps.add(number=n, start_ns=(n - 1) * MS, dur_ns=MS)
        d.communication.calls.add(kind="AllGather", step=n, start_ns=(n - 1) * MS, dur_ns=10)
    d.communication.calls.add(kind="Broadcast", step=1, start_ns=500, dur_ns=10)
    assert [(c.kind, c.step) for c in one_off_broadcast(RuleInput(d))] == [("Broadcast", 1)]
    assert one_off_broadcast(RuleInput(pb.Digest())) == []


# -- roofline_rules: the advice by bound, dtype and vendor; the edit ------------------------------------------------

@pytest.mark.parametrize("bound,dtype,who,torch_change,npu_change", [
    ("memory", "bf16", "nvidia", "fuse it with the operators around it (torch.compile), avoid the copies around it "
     "(contiguous, dtype casts)", "the fused torch_npu.npu_* operators"),
    ("memory", "fp32", "nvidia", "fuse it with the operators around it (torch.compile), run it in bf16 / fp16 "
     "(torch.autocast), avoid the copies around it (contiguous, dtype casts)",
     "the fused torch_npu.npu_* operators, bf16 / fp16 (torch.autocast('npu'))"),
    ("compute", "fp32", "nvidia", "a dtype the matrix units are fastest in (bf16 / fp16 / TF32), dimensions multiples "
     "of 8 (64 is safer), a better kernel (cuBLASLt, flash attention)",
     "bf16 / fp16 and dimensions multiples of 16 for the cube, the fused torch_npu.npu_* kernels"),
    ("compute", "fp32", "amd", "a dtype the matrix units are fastest in (bf16 / fp16), dimensions multiples of 8 (64 "
     "is safer), a better kernel (PYTORCH_TUNABLEOP_ENABLED=1 for rocBLAS / hipBLASLt, CK flash attention)",
     "bf16 / fp16 and dimensions multiples of 16 for the cube, the fused torch_npu.npu_* kernels"),
    ("compute", "fp16", "ascend", "dimensions multiples of 8 (64 is safer), a better kernel (torch.compile)",
     "dimensions multiples of 16 for the cube, the fused torch_npu.npu_* kernels"),
    ("latency", "fp32", "nvidia", "fewer, larger calls: batch the work, CUDA graphs, torch.compile",
     "fewer, larger calls: larger batches, graph mode (torchair), TASK_QUEUE_ENABLE=2"),
    ("link", "fp32", "nvidia", "", ""),
])
def test_below_roof_advice(bound, dtype, who, torch_change, npu_change):
    from canning_tb.analysis.rules.roofline_rules import _change
    assert _change(pb.WorkRates(bound=bound, dtype=dtype), who) == (torch_change, npu_change)


def test_below_roof_on_nvidia_gets_nvidias_advice_and_its_edit(monkeypatch):
    """at_roof stood in for: asked with the operator and its share of roof, its edit carried."""
    from canning_tb.analysis.rules import roofline_rules
    monkeypatch.setattr(roofline_rules, "at_roof", lambda inp, name, share: {"edit": f"{name} at {share}"})
    f = direct(roofline_rules.below_roof, roof_digest(("aten::mm", 400_000, 0.2, 1e9)))
    assert f.edit == "aten::mm at 0.2" and "cuBLASLt" in f.change_torch


def test_below_roof_judges_nothing_without_kernel_time_or_under_five_percent():
    from canning_tb.analysis.rules.roofline_rules import below_roof
    assert direct(below_roof, roof_digest(("aten::mm", 400_000, 0.2, 1e9), kernel_ns=0)) is None
    assert direct(below_roof, roof_digest(("aten::conv", 49_000, 0.0, 1e9))) is None


def test_at_roof_scales_the_operators_own_kernels():
    """aten::mm launched the gemm kernel (row 2 of the table: step, mm, gemm by time); aten::add launched none."""
    from canning_tb.analysis.context import Context
    from canning_tb.analysis.rules.roofline_rules import at_roof
    t = table([step(), ev("aten::mm", K.CPU_OP, 0, 10_000, external_id=1),
               ev("gemm", K.KERNEL, 20_000, 50_000, external_id=1), ev("aten::add", K.CPU_OP, 100_000, 10_000)])
    inp = RuleInput(pb.Digest(), Context(t))
    got = at_roof(inp, "aten::mm", 0.25)
    assert (list(got["scale"][0]), got["scale"][1]) == ([2], 0.25)
    assert got["edit"] == "aten::mm's device work at its roof (25.0% of its time)"
    assert at_roof(inp, "aten::add", 0.25) == {} and at_roof(inp, "aten::nothing", 0.25) == {}
    assert at_roof(RuleInput(pb.Digest()), "aten::mm", 0.25) == {}


def test_low_bandwidth_ranks_links_by_their_share_of_capacity():
    """HCCS at 5 of 56 GB/s (8.9 %) is slower for its link than PCIe at 8 of 32 (25 %); a link at 0.5 GB/s counts,
    one at 0 GB/s (unknown) does not; a link with no operator names none."""
    d = pb.Digest()
    for dst, transport, gbps in [(1, "PCIE", 8.0), (2, "HCCS", 5.0), (3, "HCCS", 0.5), (4, "HCCS", 0.0)]:
        d.communication.links.add(src=0, dst=dst, transport=transport, bytes=16 * MIB, bandwidth_gbps=gbps)
    f = comm_rule("low_bandwidth", d)
    assert f.seen.startswith("3 transfers of at least 16 MiB")
    d.communication.links[2].bandwidth_gbps = 7.0  # the 0.5 GB/s link now at 7 of 56 (12.5 %)
    g = comm_rule("low_bandwidth", d)
    assert g.seen.endswith("slowest: 0 -> 2 over HCCS at 5.0 GB/s of 56 GB/s (16.0 MiB).")


def test_pipeline_wait_names_three_kinds_and_needs_both_thresholds():
    """Four send / receive kinds (the fourth, shortest, not named); with communication at 10 % exactly, nothing."""
    calls = [(kind, "1", 100_000 * i, 90_000 - 10_000 * i, MIB, 1, kind.lower(), "p2p")
             for i, kind in enumerate(("Send", "Recv", "SendRecv", "BatchSendRecv"))]
    f = comm_rule("pipeline_wait", comm_digest(200_000, calls))
    assert [e.row for e in f.evidence] == ["Send", "Recv", "SendRecv"]
    assert "BatchSendRecv" not in f.seen
    assert comm_rule("pipeline_wait", comm_digest(100_000, calls)) is None
    assert comm_rule("pipeline_wait", comm_digest(200_000)) is None  # no collectives: no send / receive share


def test_a_p2p_row_of_another_kind_marks_its_group_as_the_pipelines():
    """A row typed p2p whose kind is not a send / receive name: its group's all-reduce is the pipeline's, the row is
    not named as a collective, and the why says this rank is a pipeline stage."""
    calls = [("AllReduce", "0", 0, 200_000, MIB, 1, "ar0", "collective"),
             ("AllReduce", "1", 250_000, 100_000, MIB, 1, "ar1", "collective"),
             ("hcom_p2p", "1", 700_000, 100_000, MIB, 1, "p2p", "p2p")]
    f = comm_rule("communication_not_overlapped", comm_digest(200_000, calls))
    assert f.seen.split("; the collectives: ")[1] == "AllReduce (1 calls, running 0.100 ms per step)."
    assert "This rank is also a pipeline stage" in f.why


def test_calls_outside_the_kept_steps_run_no_time_in_them():
    d = comm_digest(200_000, [("AllReduce", "0", 5 * MS, 100_000, MIB, 9, "ar", "collective")])
    f = comm_rule("communication_not_overlapped", d)
    assert f.seen.endswith("the collectives: AllReduce (1 calls, running 0.000 ms per step).")


def test_broadcasts_with_no_steps_or_no_step_time_are_not_judged():
    from canning_tb.analysis.rules.comm_rules import one_off_broadcast
    d = pb.Digest()
    d.communication.calls.add(kind="Broadcast", step=1, start_ns=0, dur_ns=100_000)
    assert one_off_broadcast(RuleInput(d)) == []
    d.steps.add(number=1, start_ns=0, dur_ns=MS)  # a step, but no average step time
    assert comm_rule("first_step_broadcast", d) is None


# -- matmul_alignment and the attention finding (docs/mutants.md: compute_rules and fusion) -------------------------

NARROW = "cutlass_80_tensorop_gemm_128x128_align1"


def alignment_digest(kind="cuda", tc=0.25, narrow=True, shapes=("[[30, 64], [64, 64]]", "[[64, 100], [100, 64]]")):
    """aten::mm 600 µs of the operators' 1000 µs of device self time (the step's own 5 ms left out), two steps;
    by shape: 1 call of the first, 2 of the second (100 and 300 µs), 7 aligned calls [[64, 64], [64, 64]]."""
    d = kernel_digest(*([(NARROW, 10, 600_000, 80_000, "", "matmul")] if narrow else
                        [("gemm", 10, 600_000, 80_000, "", "matmul")]))
    d.window.devices[0].kind = kind
    d.gpu_efficiency.add(tensor_core_share=tc)
    for name, self_ns, calls in (("ProfilerStep#1", 5 * MS, 1), ("aten::mm", 600_000, 10), ("aten::relu", 400_000, 4)):
        d.ops_by_name.add(name=name, device_self_ns=self_ns, calls=calls)
    for shape, calls, self_ns in ((shapes[0], 1, 100_000), (shapes[1], 2, 300_000),
                                  ("[[64, 64], [64, 64]]", 7, 200_000)):
        d.ops_by_shape.add(name="aten::mm", input_shapes=shape, calls=calls, device_self_ns=self_ns)
    return d


def test_matmul_alignment_names_the_unaligned_shapes_by_time():
    """Matmuls 600 of 1000 µs (60 %); 3 of 10 calls unaligned (30 %, above 20 %), the 300 µs shape first; Tensor
    Cores run 25 % of the kernel time, so the narrow-load wording with the align1 kernel; 300 µs a step at most."""
    f = compute_rule("matmul_alignment", alignment_digest())
    assert (f.severity, f.title) == ("info", "Matmul / convolution dimensions not divisible by 8")
    assert f.seen == ("Matmul / convolution operators take 60.0% of the operators' self time; 30.0% of their calls "
                      "have a dimension not divisible by 8 (e.g. aten::mm [[64, 100], [100, 64]], 2 calls).")
    assert f.why == ("Unaligned dimensions fall back to slower kernels or padding: Tensor Core kernels run (25.0% of "
                     "the kernel time, Overview), but unaligned operands get kernels with narrow memory access "
                     f"({NARROW}...).")
    assert f.change_torch == "pad hidden sizes, vocabulary and batch to multiples of 8 (64 is safer)."
    assert f.change_npu == ("pad to multiples of 16 (the inner axis to 256 for cube affinity) and use "
                            "torch.autocast('npu', dtype=torch.float16 / bfloat16).")
    assert (f.gain_ns, f.at_most_ns, f.gain_basis) == (-1, 300_000, "at most the matmul time, 0.300 ms per step")
    assert (f.value, f.figures) == (pytest.approx(0.3), {"matmul_share": pytest.approx(0.6),
                                                         "unaligned_call_share": pytest.approx(0.3), "align": 8})
    assert rows(f) == [("operators", "aten::mm", "aten::mm [[64, 100], [100, 64]]", "aten::mm", -1, -1),
                       ("operators", "aten::mm", "aten::mm [[30, 64], [64, 64]]", "aten::mm", -1, -1),
                       ("kernels", NARROW, "a kernel for unaligned operands", NARROW, -1, -1)]
    assert claim(f)[:3] == ("op_calls", 10, "operators")


def test_matmul_alignment_without_tensor_cores_asks_for_autocast():
    """No Tensor Core share known (-1), no narrow kernel, no dtype: the Tensor Cores' wording, and autocast."""
    f = compute_rule("matmul_alignment", alignment_digest(tc=-1, narrow=False))
    assert f.why == ("Unaligned dimensions fall back to slower kernels or padding: Tensor Cores want dims that are "
                     "multiples of 8 (fp16 / bf16; 16 for int8). Input dtypes are not in the trace; fp32 inputs need "
                     "TF32 / autocast for Tensor Cores.")
    assert f.change_torch == ("pad hidden sizes, vocabulary and batch to multiples of 8 (64 is safer), and run matmuls "
                              "under torch.autocast (float16 / bfloat16).")
    assert [r[0] for r in rows(f)] == ["operators", "operators"]


@pytest.mark.parametrize("kind,align,judged", [
    ("npu", 16, "cube units work on 16 x 16 fractals"),
    ("rocm", 8, "the matrix units' tiles want dims that are multiples of 8 (16 for int8)"),
])
def test_matmul_alignment_by_the_devices_units(kind, align, judged):
    """On the NPU dims are judged by 16 (100 and 30 are not multiples of it; 64 is); AMD gets no Tensor Core words."""
    f = compute_rule("matmul_alignment", alignment_digest(kind=kind))
    assert f.title == f"Matmul / convolution dimensions not divisible by {align}"
    assert f.why == f"Unaligned dimensions fall back to slower kernels or padding: {judged}."
    assert f.figures["align"] == align


def test_matmul_alignment_on_the_npu_takes_multiples_of_8_as_unaligned():
    """[[24, 64]] and [[64, 40]]: multiples of 8, not of 16: unaligned on the NPU only (3 of 10 calls)."""
    shapes = ("[[24, 64], [64, 64]]", "[[64, 40], [40, 64]]")
    assert compute_rule("matmul_alignment", alignment_digest(shapes=shapes)) is None
    assert compute_rule("matmul_alignment", alignment_digest(kind="npu", shapes=shapes)).value == pytest.approx(0.3)


def attention_window(repeats=5, shapes=True, second_v="[[2, 6, 8]]", with_step=True):
    """`repeats` attentions on the host, one a 100 µs slot of the 1 ms step: matmul 0-10 µs (queries [2, 4, 8] by
    keys^T [2, 8, 6]: L = 4, E = 8, S = 6), softmax over [2, 4, 6] 15-35 µs, matmul by the values 40-50 µs."""
    def op(name, ts, dur, dims):
        return ev(name, K.CPU_OP, ts, dur, **({"shapes": dims} if shapes else {}))
    events = [step()] if with_step else []
    for r in range(repeats):
        t0 = r * 100_000
        events += [op("aten::matmul", t0, 10_000, "[[2, 4, 8], [2, 8, 6]]"),
                   op("aten::softmax", t0 + 15_000, 20_000, "[[2, 4, 6], []]"),
                   op("aten::matmul", t0 + 40_000, 10_000, "[[2, 4, 6], " + second_v[1:])]
    return table(events)


def test_fusable_attention_checked_by_its_shapes_removes_what_runs_between_the_matmuls(monkeypatch):
    """Five attentions: each first matmul ends at 10 µs of its slot, the second starts at 40: 30 µs each, 150 µs in
    the one step."""
    f = one(attention_window(), monkeypatch, "fusable_attention")
    assert (f.severity, f.title) == ("warning", "Attention written out in operators")
    assert f.seen == ("5 attentions written out in operators (5.0 per step): a matmul of queries by keys, a softmax "
                      "over its scores, a matmul by the values (by their input shapes); 0.150 ms per step between the "
                      "two matmuls.")
    assert (f.change_torch, f.change_npu) == (
        "torch.nn.functional.scaled_dot_product_attention (flash / memory-efficient kernels)",
        "torch_npu.npu_fusion_attention")
    assert (f.value, f.gain_ns, f.gain_basis) == (5, 150_000, "the time between the two matmuls of each attention")
    assert f.figures == {"occurrences": 5, "matched_ns_matched": 150_000, "shapes_checked": 1, "backward_matmuls": 0}
    assert rows(f) == [("operators", "aten::matmul", "aten::matmul: first operator of the sequence", "aten::matmul",
                        -1, -1)]
    cuts = [(1, 1, r * 100_000 + 10_000, r * 100_000 + 40_000) for r in range(5)]
    assert removes(f) == ([c[2] for c in cuts], [c[3] for c in cuts])
    assert f.removes_what == ["scale / mask / softmax / dropout of the attention"]
    assert f.fuse == (cuts, [])
    assert f.edit == ("the 5.0 attentions per step fused: what ran between each one's two matmuls (scale, mask, "
                      "softmax, dropout, casts, their kernels) gone, the matmuls kept as they ran")


def test_fusable_attention_without_shapes_is_an_observation(monkeypatch):
    f = one(attention_window(shapes=False), monkeypatch, "fusable_attention")
    assert (f.severity, f.removes, f.fuse) == ("info", None, None)
    assert f.seen == ("The operator sequence of an attention (matmul, softmax, matmul) runs 5 times (5.0 per step, "
                      "0.150 ms per step between the matmuls); the trace records no input shapes, so that they are one "
                      "attention cannot be checked (record_shapes=True).")
    assert (f.gain_ns, f.figures["shapes_checked"]) == (150_000, 0)


@pytest.mark.parametrize("repeats,second_v", [
    (4, "[[2, 6, 8]]"),   # four attentions: under the five that count
    (5, "[[2, 5, 8]]"),   # the values' S (5) is not the scores' S (6): no attention
])
def test_fusable_attention_needs_five_that_the_shapes_confirm(monkeypatch, repeats, second_v):
    assert "fusable_attention" not in found(attention_window(repeats, second_v=second_v), monkeypatch)


def test_fusable_ops_adds_the_matches_of_every_thread(monkeypatch):
    """Thread 1 runs no RMSNorm (a relu first), thread 2 four, thread 3 one: five in all, 525 µs; the first operator
    named from thread 2."""
    ops = [ev("aten::relu", K.CPU_OP, 0, 5_000)]
    ops += [ev(f"aten::{n}", K.CPU_OP, r * 100_000 + 10_000 + j * 10_000, 5_000 * (j + 1), tid=2 if r < 4 else 3)
            for r in range(5) for j, n in enumerate(RMS)]
    f = one(table([step()] + ops), monkeypatch, "fusable_rms_norm")
    assert (f.value, f.gain_ns) == (5, 525_000)
    assert rows(f)[0][1] == "aten::pow"


def test_fusable_ops_per_step_in_whole_ns_over_two_steps(monkeypatch):
    """Five RMSNorms (the first operator 5001 ns: 105,001 ns each) in the first of two steps: 525,005 ns, 2.5 per
    step, 262,502 ns a step (whole ns)."""
    ops = [ev(f"aten::{n}", K.CPU_OP, r * 100_000 + j * 10_000, 5_000 * (j + 1) + (j == 0))
           for r in range(5) for j, n in enumerate(RMS)]
    f = one(table([step(1, 0), step(2, MS)] + ops), monkeypatch, "fusable_rms_norm")
    assert f.seen == ("The operator sequence 'pow mean add rsqrt mul( mul)?' runs 5 times in the window (2.5 per step, "
                      "0.263 ms per step).")
    assert (f.gain_ns, f.figures["matched_ns_matched"]) == (262_502, 262_502)
    assert type(f.gain_ns) is int
    assert f.change_torch == "torch.nn.functional.rms_norm / torch.nn.RMSNorm (torch >= 2.4), or torch.compile the norm"


def test_a_pattern_with_no_torch_change_fires_on_the_npu(monkeypatch):
    """permute, contiguous, reshape five times on an NPU: its torch advice is the generic one."""
    names = ["permute", "contiguous", "reshape"]
    t = table([step()] + [ev(f"aten::{n}", K.CPU_OP, r * 100_000 + j * 10_000, 5_000) for r in range(5)
                          for j, n in enumerate(names)], devices=[{"kind": "npu", "index": 0, "name": "Ascend910B"}])
    f = one(t, monkeypatch, "fusable_confusion_transpose")
    assert (f.value, f.gain_ns) == (5, 75_000)
    assert (f.change_torch, f.change_npu) == ("torch.compile the code that issues it",
                                              "torch_npu.npu_confusion_transpose")


def optimizer_ranges(kind, ts, dur=100_000, tid=1, inner="aten::add_", as_op=False):
    """An optimizer step range (an annotation, or an operator as older traces record it) and one 10 µs operator
    starting with it."""
    return [ev(f"Optimizer.step#{kind}.step", K.CPU_OP if as_op else K.USER_ANNOTATION, ts, dur, tid=tid),
            ev(inner, K.CPU_OP, ts, 10_000, tid=tid)]


def test_each_optimizer_class_is_judged_whatever_came_before(monkeypatch):
    """In time order: FusedLAMB (fused by name), Adam running torch's _fused_adam_ (fused work), RMSprop running
    _foreach_add_ (multi-tensor, no fused one in torch), Shampoo unfused: only Shampoo is told, with the advice for
    a class torch does not have; its step recorded as an operator (older traces): its host total 100 µs."""
    t = table([step()] + optimizer_ranges("FusedLAMB", 0)
              + optimizer_ranges("Adam", 200_000, inner="aten::_fused_adam_")
              + optimizer_ranges("RMSprop", 400_000, inner="aten::_foreach_add_")
              + optimizer_ranges("Shampoo", 600_000, as_op=True))
    f = one(t, monkeypatch, "unfused_optimizer")
    assert f.title == "The Shampoo optimizer runs unfused"
    assert f.change_torch == ("Shampoo is not a torch.optim optimizer: use a fused or multi-tensor implementation of "
                              "it if its library has one (its own documentation says which argument)")
    assert f.change_npu == "the torch_npu.optim.NpuFused* optimizer of the same kind"
    assert claim(f) == ("host_total", 100_000, "operators", pytest.approx(float("nan"), nan_ok=True),
                        ["Optimizer.step#Shampoo.step"])
    assert f.edit == ("each operator kind of the optimizer called once per step instead of once per tensor (its "
                      "arithmetic kept, the per-call cost of the others gone)")


def test_operators_inside_an_optimizer_step_are_those_of_its_own_thread(monkeypatch):
    """AdamW steps at 100-200, 300-400 and 500-600 µs on thread 1 and 700-800 µs on thread 2 (same process), each
    starting with an aten::add_. Multi-tensor operators run outside them: thread 1 at 250 µs (between two of its
    steps) and 750 µs (in thread 2's), thread 2 at 150 µs (in thread 1's). None is inside: unfused, 4 steps,
    400 µs."""
    t = table([step()] + optimizer_ranges("AdamW", 100_000) + optimizer_ranges("AdamW", 300_000)
              + optimizer_ranges("AdamW", 500_000) + optimizer_ranges("AdamW", 700_000, tid=2)
              + [ev("aten::_foreach_add_", K.CPU_OP, ts, 10_000, tid=tid)
                 for ts, tid in ((250_000, 1), (750_000, 1), (150_000, 2))])
    f = one(t, monkeypatch, "unfused_optimizer")
    assert f.title == "The AdamW optimizer runs unfused"
    assert f.seen.startswith("Optimizer.step#AdamW.step runs 4 times, 0.400 ms per step, one small operator")
    assert removes(f) == ([100_000, 300_000, 500_000, 700_000], [200_000, 400_000, 600_000, 800_000])


@pytest.mark.parametrize("op,kernel,title", [
    ("aten::add_", "multi_tensor_apply_kernel", "The AdamW optimizer runs multi-tensor, not fused"),
    ("aten::add_", "fused_adamw_kernel", None),
    ("aten::_foreach_add_", "elementwise_kernel", "The AdamW optimizer runs multi-tensor, not fused"),
])
def test_the_kernels_an_optimizer_step_launches_say_how_it_runs(monkeypatch, op, kernel, title):
    """An operator inside AdamW's step launches the kernel: the operator's name or the kernel's says multi-tensor or
    fused."""
    t = table([step(), ev("Optimizer.step#AdamW.step", K.USER_ANNOTATION, 100_000, 100_000),
               ev(op, K.CPU_OP, 110_000, 10_000),
               ev("cudaLaunchKernel", K.RUNTIME, 112_000, 2_000, correlation=1),
               ev(kernel, K.KERNEL, 120_000, 10_000, correlation=1)])
    assert [f.title for f in found(t, monkeypatch).get("unfused_optimizer", [])] == ([title] if title else [])


def test_unfused_optimizer_on_the_device_keeps_each_kernels_arithmetic(monkeypatch):
    """Two AdamW steps, 300-500 and 600-800 µs, each with four aten::add_ of 10 µs (the first at the step's start,
    one with an aten::empty inside it: not a call of the step's code) each launching an add_kernel of 10, 20, 30, 40
    µs; twelve 50 µs gemms elsewhere. Host: 400 µs, 80 µs of calls, 140 of edges (70 µs after each step's last
    call, kept), 180 of glue between the calls; 1 kind x 2 steps = 2 of 8 calls: with device work the calls go the
    glue's way too, (80 + 180) x 0.25 + 140 = 205 of 400 µs, 0.5125. Device: the 10th
    percentile of the 20 kernels (10, 10, 20, 20, ... 50): 10 + 0.9 x 10 = 19 µs; arithmetic 2 x (0 + 1 + 11 + 21)
    = 66 µs, plus 19 µs for each of the 2 kinds: 104 of 200 µs, 0.52."""
    events, corr = [step()], 0
    for start in (300_000, 600_000):
        events.append(ev("Optimizer.step#AdamW.step", K.USER_ANNOTATION, start, 200_000))
        for i in range(4):
            corr += 1
            ts = start + 40_000 * i
            events += [ev("aten::add_", K.CPU_OP, ts, 10_000),
                       ev("cudaLaunchKernel", K.RUNTIME, ts + 5_000, 2_000, correlation=corr),
                       ev("add_kernel", K.KERNEL, ts + 10_000, 10_000 * (i + 1), correlation=corr, stream=8)]
    events.append(ev("aten::empty", K.CPU_OP, 301_000, 1_000))
    events += [ev("gemm", K.KERNEL, 50_000 * i, 50_000) for i in range(12)]
    f = one(table(events), monkeypatch, "unfused_optimizer")
    (lo, hi), host_factor, dev, dev_factor = f.shrink
    assert (list(lo), list(hi)) == ([300_000, 600_000], [500_000, 800_000])
    assert host_factor == pytest.approx(0.5125)
    assert (len(dev), dev_factor) == (8, pytest.approx(0.52))


def test_an_attention_of_baddbmm_or_2d_matrices_is_checked_by_its_shapes(monkeypatch):
    """The first attention's scores by baddbmm (bias [2, 4, 6], then [2, 4, 8] x [2, 8, 6]: its inputs 1 and 2), the
    other four 2-D ([4, 8] x [8, 6], softmax [4, 6], [4, 6] x [6, 8]): all five confirmed; named by the first."""
    events = [step(), ev("aten::baddbmm", K.CPU_OP, 0, 10_000, shapes="[[2, 4, 6], [2, 4, 8], [2, 8, 6]]"),
              ev("aten::softmax", K.CPU_OP, 15_000, 20_000, shapes="[[2, 4, 6], []]"),
              ev("aten::bmm", K.CPU_OP, 40_000, 10_000, shapes="[[2, 4, 6], [2, 6, 8]]")]
    for r in range(1, 5):
        t0 = r * 100_000
        events += [ev("aten::matmul", K.CPU_OP, t0, 10_000, shapes="[[4, 8], [8, 6]]"),
                   ev("aten::softmax", K.CPU_OP, t0 + 15_000, 20_000, shapes="[[4, 6], []]"),
                   ev("aten::matmul", K.CPU_OP, t0 + 40_000, 10_000, shapes="[[4, 6], [6, 8]]")]
    f = one(table(events), monkeypatch, "fusable_attention")
    assert (f.severity, f.value, f.gain_ns) == ("warning", 5, 150_000)
    assert rows(f)[0][1] == "aten::baddbmm"


def test_fusable_attention_on_the_device_takes_the_kernels_launched_between_the_matmuls(monkeypatch):
    """Two steps; on thread 3, five attentions in the first as above but each softmax at 10-30 µs of its slot,
    launching at its first ns (the cut's first) a 30 µs kernel at 60 µs, and each second matmul launching at its first
    ns (the cut's end: not in it) a gemm at 92 µs; thread 2 launches a kernel at 20 µs, not between matmuls of its
    own. Removed: the five host cuts (10-40 µs) and the five softmax kernels (60-90 µs): 300 µs over two steps, 150
    µs a step, 2.5 attentions a step."""
    events = [step(1, 0), step(2, MS), ev("aten::relu", K.CPU_OP, 15_000, 10_000, tid=2),
              ev("cudaLaunchKernel", K.RUNTIME, 20_000, 2_000, tid=2, correlation=99),
              ev("relu_kernel", K.KERNEL, 30_000, 5_000, correlation=99, stream=8)]
    for r in range(5):
        t0 = r * 100_000
        events += [ev("aten::matmul", K.CPU_OP, t0, 10_000, shapes="[[2, 4, 8], [2, 8, 6]]", tid=3),
                   ev("aten::softmax", K.CPU_OP, t0 + 10_000, 20_000, shapes="[[2, 4, 6], []]", tid=3),
                   ev("cudaLaunchKernel", K.RUNTIME, t0 + 10_000, 2_000, correlation=r + 1, tid=3),
                   ev("softmax_kernel", K.KERNEL, t0 + 60_000, 30_000, correlation=r + 1),
                   ev("aten::matmul", K.CPU_OP, t0 + 40_000, 10_000, shapes="[[2, 4, 6], [2, 6, 8]]", tid=3),
                   ev("cudaLaunchKernel", K.RUNTIME, t0 + 40_000, 2_000, correlation=r + 11, tid=3),
                   ev("gemm", K.KERNEL, t0 + 92_000, 5_000, correlation=r + 11)]
    f = one(table(events), monkeypatch, "fusable_attention")
    cuts = [r * 100_000 for r in range(5)]
    assert removes(f) == ([t + 10_000 for t in cuts] + [t + 60_000 for t in cuts],
                          [t + 40_000 for t in cuts] + [t + 90_000 for t in cuts])
    assert (f.gain_ns, f.figures["occurrences"]) == (150_000, 5)
    assert f.seen.startswith("5 attentions written out in operators (2.5 per step)")


def test_an_optimizer_step_first_in_the_window_still_has_its_calls(monkeypatch):
    """No ProfilerStep: the step's range is the first host event; its four aten::add_ are still its calls (the edit of
    test_unfused_optimizer_finding_and_its_edit: 132.5 of 200 µs, 0.6625)."""
    t = table([ev("Optimizer.step#AdamW.step", K.USER_ANNOTATION, 0, 200_000)] +
              [ev("aten::add_", K.CPU_OP, 10_000 + 40_000 * i, 10_000) for i in range(4)])
    assert one(t, monkeypatch, "unfused_optimizer").shrink[1] == pytest.approx(0.6625)


def test_kernels_shorter_than_the_floor_are_kept_whole(monkeypatch):
    """The step's one kernel lasts 1 µs; nine gemms of 50 µs: the window's 10th percentile is 1 + 0.9 x 49 = 45.1 µs;
    one kind keeps one floor, more than the kernel itself: the kernel stays as it is (factor 1)."""
    t = table([step(), ev("Optimizer.step#AdamW.step", K.USER_ANNOTATION, 500_000, 200_000),
               ev("aten::add_", K.CPU_OP, 510_000, 10_000),
               ev("cudaLaunchKernel", K.RUNTIME, 512_000, 2_000, correlation=1),
               ev("add_kernel", K.KERNEL, 520_000, 1_000, correlation=1, stream=8)] +
              [ev("gemm", K.KERNEL, 50_000 * i, 50_000) for i in range(9)])
    _, _, dev, dev_factor = one(t, monkeypatch, "unfused_optimizer").shrink
    assert (len(dev), dev_factor) == (1, 1.0)


def test_the_first_name_of_the_window_is_an_operator_name_like_any(monkeypatch):
    """No ProfilerStep: the first event's name is the first string of the table (id 0); the RMSNorm and the attention
    starting with it are still found (five each, as above)."""
    rms = table([ev(f"aten::{n}", K.CPU_OP, r * 100_000 + j * 10_000, 5_000 * (j + 1))
                 for r in range(5) for j, n in enumerate(RMS)])
    assert rms.strings.values[0] == "aten::pow"
    assert one(rms, monkeypatch, "fusable_rms_norm").value == 5
    attention = attention_window(with_step=False)
    assert attention.strings.values[0] == "aten::matmul"
    assert one(attention, monkeypatch, "fusable_attention").value == 5
