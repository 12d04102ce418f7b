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
    (f,) = found(t, monkeypatch)[rule]
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
    assert f.seen == ("Host operators and launches run while the device has no work: Host 41.0%, Runtime 10.0% of "
                      "the average step.")
    assert (f.value, f.gain_ns) == (pytest.approx(0.51), 510_000)
    assert f.figures == {"host_share": pytest.approx(0.41), "runtime_share": pytest.approx(0.1)}
    assert rows(f) == [("overview", "Host", "Average step breakdown: Host", "", -1, -1),
                       ("operators", "", "Operators by Host Self Duration", "", -1, -1)]
    assert claim(f) == ("host", 0.41, "overview", pytest.approx(float("nan"), nan_ok=True), ["host", "runtime"])
    assert removes(f) == ([100_000, 600_000], [510_000, 700_000])


def test_python_on_path_takes_the_longest_stretch_of_each_step(monkeypatch):
    """Two steps of 1 ms with no device. Step 1: operators at 0-100 and 300-400 µs, Python between and after them
    (200 + 600 µs); step 2: operators at 1000-1500 and 1600-1700 µs (Python 100 + 300 µs). On the path: 1.2 ms of
    2 ms, 60 %, 0.6 ms a step; the longest stretches 600 and 300 µs, 450 µs on average; the longest of all starts
    at 400 µs."""
    t = table([step(1, 0), step(2, MS), ev("aten::mm", K.CPU_OP, 0, 100_000), ev("aten::mm", K.CPU_OP, 300_000, 100_000),
               ev("aten::mm", K.CPU_OP, MS, 500_000), ev("aten::mm", K.CPU_OP, 1_600_000, 100_000)])
    f = one(t, monkeypatch, "python_on_path")
    assert (f.severity, f.title) == ("warning", "Python between operators holds the step")
    assert f.seen == ("Python with no operator running on the step's thread takes 60.0% of the steps' critical path "
                      "(Critical path: python), 0.600 ms of the average step; its longest stretch in each step takes "
                      "0.450 ms on average.")
    assert (f.value, f.gain_ns) == (pytest.approx(0.6), 600_000)
    assert f.figures == {"path_python_share": pytest.approx(0.6), "python_ns": 600_000}
    assert rows(f) == [("overview", "Critical path", "Critical path: python", "", 400_000, 600_000)]
    assert claim(f) == ("path_python_share", 0.6, "overview", 0.1, ["python"])
    assert removes(f) == ([400_000, 1_700_000], [MS, 2 * MS])
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
    f = dominant_op(RuleInput(dominant_window(0.4)))
    assert (f.severity, f.title) == ("info", "aten::mm dominates")
    assert f.seen == ("aten::mm takes 70.0% of the operators' Device Self Duration (0.035 ms per step; at its roof it "
                      "would take 0.014 ms).")
    assert (f.value, f.at_most_ns, f.gain_ns) == (pytest.approx(0.7), 21_000, -1)
    assert f.figures == {"op_share": pytest.approx(0.7), "op_ns": 70_000}
    assert rows(f) == [("operators", "aten::mm", "aten::mm: Device Self Duration", "aten::mm", -1, -1)]
    assert claim(f) == ("slowest_op", 0.7, "overview", 0.3, [])
    assert "lower precision (torch.autocast)" in f.change_torch


def test_dominant_op_without_a_roof_or_on_the_host(monkeypatch):
    """No roof: the whole 35 µs a step; bf16 inputs get no autocast advice; host self time names its column."""
    f = dominant_op(RuleInput(dominant_window(None, "bf16")))
    assert f.seen == "aten::mm takes 70.0% of the operators' Device Self Duration (0.035 ms per step)."
    assert f.at_most_ns == 35_000 and "autocast" not in f.change_torch
    h = dominant_op(RuleInput(dominant_window(None, metric="host")))
    assert h.seen == "aten::mm takes 70.0% of the operators' Host Self Duration (0.035 ms per step)."
    assert rows(h) == [("operators", "aten::mm", "aten::mm: Host Self Duration", "aten::mm", -1, -1)]
