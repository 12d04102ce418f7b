"""Figures that mean what their label says: device wait, the window's last step, Tensor Core
eligibility, and the percentages a suggestion quotes.

Real traces where they exist (V100 ResNet-50, the HTA V100 nanosecond trace); where no real file
has the shape (a blocking device-to-host copy in a GPU step), the V100 trace is changed by
inserting exactly the events a real one carries (see `_insert_wait`). Expected numbers are worked
out from the raw JSON here, by hand, or by plain interval arithmetic in this file.
"""
import gzip
import json
import re
from decimal import Decimal

import pytest

from conftest import fixture_path

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.build import build_digest
from canning_tb.analysis.kernels import CORE_ELIGIBLE
from canning_tb.analysis.rules import CATEGORY_LABELS, rule_hits
from canning_tb.ingest.kineto.read import read_kineto
from canning_tb.ingest.table import EVENT_COLUMNS, ColumnBuilder, EventTable, Kind, sort_by_time

RESNET = ("kineto", "resnet50_v100", "worker0.1623143089861.pt.trace.json.gz")
NS_TRACE = ("hta", "ns_resolution_trace", "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")
DEVICE_CATS = ("Kernel", "Memcpy", "Memset", "kernel", "gpu_memcpy", "gpu_memset")


def load(*parts, exact=False):
    """The raw trace; exact: floats kept as their decimal text (µs values beyond 2**43 lose ns in float64)."""
    with gzip.open(fixture_path(*parts), "rt", encoding="utf-8") as f:
        return json.load(f, parse_float=Decimal if exact else float)


def ns(v) -> int:
    return int(((v if isinstance(v, Decimal) else Decimal(repr(v))) * 1000).to_integral_value())


def merge(ivs):
    out = []
    for s, e in sorted(ivs):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def covered(ivs, lo, hi) -> int:
    return sum(max(0, min(e, hi) - max(s, lo)) for s, e in merge(ivs))


def steps_of(events):
    """ProfilerStep#N host ranges (start, end, number), by start."""
    out = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), int(e["name"].split("#")[1]))
           for e in events if e.get("ph") == "X" and re.fullmatch(r"ProfilerStep#\d+", e.get("name", ""))]
    return sorted(out)


# ------------------------------------------------------------------------------ device wait

def _insert_wait(trace, step_no: int, api: str, copy_name: str | None, wait_us: int):
    """Make room for a blocking call of `wait_us` just before ProfilerStep#step_no ends, as a real
    `.item()` / `.cpu()` / synchronize writes it: everything the host does later moves later by
    wait_us; host ranges open at that instant grow by wait_us; device work already queued runs on
    (it is what the host waits for). The call is a runtime event on the main thread; a copy, when
    given, is its device copy of 2 us (same correlation), when the stream is free."""
    events = trace["traceEvents"]
    step = next(e for e in events if e.get("name") == f"ProfilerStep#{step_no}")
    at = step["ts"] + step["dur"] - 1
    # device work launched after the wait starts after it; work queued before it runs on (what is waited for)
    later = {e["args"].get("correlation") for e in events if e.get("cat") in ("Runtime", "cuda_runtime")
             and e.get("ts", 0) >= at and "args" in e}
    for e in events:
        if "ts" not in e or e.get("cat") in DEVICE_CATS or (e.get("ph") == "f" and isinstance(e.get("tid"), str)):
            if e.get("cat") in DEVICE_CATS and e["ts"] >= at and e.get("args", {}).get("correlation") in later:
                e["ts"] += wait_us
            continue
        if e["ts"] >= at:
            e["ts"] += wait_us
        elif e.get("ph") == "X" and e["ts"] + e["dur"] > at:
            e["dur"] += wait_us
    corr = 10 ** 9
    events.append({"ph": "X", "cat": "Runtime", "name": api, "pid": step["pid"], "tid": step["tid"], "ts": at,
                   "dur": wait_us, "args": {"correlation": corr, "external id": 0}})
    if copy_name:
        # its copy runs when the stream is free: after the device work queued before the call (a copy that
        # waited 140 ms with the stream idle would be a trace no device writes)
        dev = next(e for e in events if e.get("cat") == "Memcpy")
        queued = max((e["ts"] + e["dur"] for e in events if e.get("cat") in DEVICE_CATS and e.get("ts", at) < at
                      and e.get("args", {}).get("stream") == 7), default=at)
        events.append({"ph": "X", "cat": "Memcpy", "name": copy_name, "pid": dev["pid"], "tid": dev["tid"],
                       "ts": max(at, queued) + 1, "dur": 2, "args": {"device": 0, "stream": 7, "correlation": corr,
                                                                     "bytes": 4}})
    return at


@pytest.mark.parametrize("api,copy_name,waits", [
    ("cudaMemcpyAsync", "Memcpy DtoH (Device -> Pageable)", True),  # .item() / .cpu()
    ("cudaStreamSynchronize", None, True),
    ("cudaDeviceSynchronize", None, True),
    ("cudaFree", None, True),
    ("cudaMemcpyAsync", "Memcpy DtoH (Device -> Pinned)", False),  # non_blocking into pinned: no wait
])
def test_blocking_call_is_device_wait_not_runtime(tmp_path, api, copy_name, waits):
    trace = load(*RESNET)
    wait_us = 140_000
    at = _insert_wait(trace, 7, api, copy_name, wait_us)
    path = tmp_path / "wait.pt.trace.json"
    path.write_text(json.dumps(trace), encoding="utf-8")
    d = build_digest(read_kineto(path))
    step = next(s for s in d.steps if s.number == 7)
    raw = trace["traceEvents"]
    lo, hi = ns(at), ns(at) + wait_us * 1000
    device = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in raw if e.get("cat") in DEVICE_CATS]
    free = (hi - lo) - covered(device, lo, hi)  # the inserted wait with the device idle
    assert free > 100_000_000
    # the step's other blocking calls, as the trace has them (cudaStreamSynchronize after a copy)
    calls = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in raw if e.get("cat") == "Runtime"
             and e["name"] in ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaFree") and ns(e["ts"]) != lo]
    s0, s1 = step.start_ns, step.start_ns + step.dur_ns
    before = covered(calls + device, s0, s1) - covered(device, s0, s1)
    b = step.breakdown
    rules = {h.rule: h for h in d.rule_hits}
    if waits:
        assert b.device_wait_ns == free + before
        assert b.runtime_ns < 10_000_000  # the launches only
        assert "device_wait" in rules and "launch_bound" not in rules
        assert "CUDA graphs" not in rules["device_wait"].detail
        share = d.average.device_wait_ns / d.average.total_ns
        assert f"{100 * share:.1f}% of the average step (Device wait)" in rules["device_wait"].detail
    else:
        assert b.device_wait_ns == before and b.runtime_ns >= free


# ------------------------------------------------------------------------------ the window's end

def _hand_tail(raw):
    """Tail of the last step: the last end of the device events launched (runtime call joined on
    correlation) inside its host range, past its host end."""
    steps = steps_of(raw)
    s, e, _ = steps[-1]
    launch = {e2["args"]["correlation"]: ns(e2["ts"]) for e2 in raw
              if e2.get("cat") in ("cuda_runtime", "Runtime") and "correlation" in e2.get("args", {})}
    ends = [ns(x["ts"]) + ns(x["dur"]) for x in raw if x.get("cat") in DEVICE_CATS
            and s <= launch.get(x.get("args", {}).get("correlation"), -1) < e]
    return max(max(ends, default=e) - e, 0), steps


@pytest.mark.parametrize("fixture", [RESNET])
def test_last_step_distorted_by_the_window_end_is_left_out_of_the_average(fixture):
    raw = load(*fixture, exact=True)["traceEvents"]
    tail, steps = _hand_tail(raw)
    d = build_digest(read_kineto(fixture_path(*fixture)))
    last = d.steps[-1]
    assert last.tail_ns == tail
    # the rule (analysis/steps.py, docs/cli-json.md): a last step whose device tail is over 5 % of its host range
    host = steps[-1][1] - steps[-1][0]
    assert tail > 0.05 * host and last.distorted is True
    assert not any(s.distorted for s in d.steps[:-1])
    assert list(d.average_steps) == [n for _, _, n in steps[:-1]]
    kept = [s.dur_ns for s in d.steps[:-1]]
    assert d.average.total_ns == round(sum(kept) / len(kept))
    # the distorted step is still shown: host range plus its tail
    assert last.dur_ns == steps[-1][1] - steps[-1][0] + tail
    assert d.step_clock == "host"


def test_device_bound_steps_are_measured_on_the_device():
    """The ns-resolution trace's device runs behind its host (the first kernel of each step starts later
    and later after its ProfilerStep): the host's ranges (74.6 ms apart) time how fast work is queued;
    the steps are the device's own, each from the first device event launched in it to the next one's."""
    raw = load(*NS_TRACE, exact=True)["traceEvents"]
    steps = steps_of(raw)
    launch = {e["args"]["correlation"]: ns(e["ts"]) for e in raw
              if e.get("cat") in ("cuda_runtime", "Runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    firsts, last_end = [], 0
    for s, e, _ in steps:
        mine = [(ns(x["ts"]), ns(x["ts"]) + ns(x["dur"])) for x in raw if x.get("cat") in DEVICE_CATS
                and s <= launch.get(x.get("args", {}).get("correlation"), -1) < e]
        firsts.append(min(a for a, _ in mine))
        last_end = max(b for _, b in mine)
    host_period = (steps[-1][0] - steps[0][0]) / (len(steps) - 1)
    device_period = (firsts[-1] - firsts[0]) / (len(steps) - 1)
    assert device_period > 1.05 * host_period  # the premise: 96.2 vs 74.6 ms
    d = build_digest(read_kineto(fixture_path(*NS_TRACE)))
    assert d.step_clock == "device"
    want = [b - a for a, b in zip(firsts, firsts[1:] + [last_end])]
    assert [s.dur_ns for s in d.steps] == want and [s.start_ns for s in d.steps] == firsts
    assert not any(s.distorted for s in d.steps)
    assert d.average.total_ns == round(sum(want) / len(want))


def test_last_step_without_tail_is_averaged_in():
    fixture = ("hta", "trace_diff", "control", "control.json.gz")
    raw = load(*fixture)["traceEvents"]
    tail, steps = _hand_tail(raw)
    assert tail == 0
    d = build_digest(read_kineto(fixture_path(*fixture)))
    assert not any(s.distorted for s in d.steps)
    assert list(d.average_steps) == [n for _, _, n in steps]


# ------------------------------------------------------------------------------ Tensor Cores

def _nested_conv(cc: str) -> EventTable:
    """conv2d > convolution > _convolution > cudnn_convolution launches a 50 ns kernel; aten::relu
    launches another 50 ns kernel. Eligible kernel time = 50 of 100 (each kernel once), where
    adding up the nested eligible ops would give 200."""
    t = EventTable()
    b = ColumnBuilder(EVENT_COLUMNS)
    rows = [
        (0, 100, Kind.USER_ANNOTATION, "ProfilerStep#1", -1, -1),
        (1, 40, Kind.CPU_OP, "aten::conv2d", 1, -1),
        (2, 38, Kind.CPU_OP, "aten::convolution", 2, -1),
        (3, 36, Kind.CPU_OP, "aten::_convolution", 3, -1),
        (4, 34, Kind.CPU_OP, "aten::cudnn_convolution", 4, -1),
        (5, 1, Kind.RUNTIME, "cudaLaunchKernel", 4, 11),
        (50, 10, Kind.CPU_OP, "aten::relu", 5, -1),
        (51, 1, Kind.RUNTIME, "cudaLaunchKernel", 5, 12),
    ]
    for ts, dur, kind, name, ext, corr in rows:
        b.add(ts=ts, dur=dur, kind=int(kind), name=t.strings.id(name), pid=1, tid=1, external_id=ext, correlation=corr)
    for ts, name, ext, corr in ((10, "implicit_convolve_sgemm", 4, 11), (60, "elementwise_kernel", 5, 12)):
        b.add(ts=ts, dur=50, kind=int(Kind.KERNEL), name=t.strings.id(name), pid=0, tid=7, device=0, stream=7,
              external_id=ext, correlation=corr)
    t.events = sort_by_time(b.freeze())
    t.meta.devices = [{"kind": "cuda", "index": 0, "name": "GPU", "memory": -1, "compute_capability": cc}]
    t.check()
    return t


@pytest.mark.parametrize("cc,tf32", [("8.0", True), ("7.0", False)])
def test_tensor_core_eligibility_counts_each_kernel_once(cc, tf32):
    d = build_digest(_nested_conv(cc))
    cores = {c.core: c.total_ns for c in d.cores}
    assert cores == {"Tensor Cores": 0, CORE_ELIGIBLE: 50, "Other": 50}
    (hit,) = [h for h in d.rule_hits if h.rule == "tensor_cores_unused"]
    assert hit.value == pytest.approx(0.5)
    assert "50.0% of the kernel time" in hit.detail and CORE_ELIGIBLE in hit.detail
    assert ("TF32" in hit.detail) is tf32


def test_no_tensor_core_advice_before_volta():
    assert not [h for h in build_digest(_nested_conv("6.1")).rule_hits if h.rule == "tensor_cores_unused"]


def test_tensor_core_partition_covers_each_kernel_once_on_a_real_trace():
    raw = load(*RESNET)["traceEvents"]
    kernels = sum(ns(e["dur"]) for e in raw if e.get("cat") == "Kernel")
    d = build_digest(read_kineto(fixture_path(*RESNET)))
    assert sum(c.total_ns for c in d.cores) == kernels
    # eligible kernels are 2/3 of the kernel time, yet the host launches them no faster than they run: in each step
    # the average keeps, the device finishes within 5 % of the step after the step's last launch returns (raw
    # trace, read here), so kernels at the Tensor Cores' rate could take at most that tail off the step, under the
    # 5 % floor: no finding (the graph's replay gives it no gain)
    eligible = next(c.total_ns for c in d.cores if c.core == CORE_ELIGIBLE)
    assert eligible > 0.5 * kernels
    launches = [ns(e["ts"]) + ns(e["dur"]) for e in raw if e.get("cat") == "Runtime" and "Launch" in e["name"]]
    for s in (s for s in d.steps if s.number in set(d.average_steps)):
        last = max(x for x in launches if s.start_ns <= x < s.start_ns + s.dur_ns)
        assert s.start_ns + s.dur_ns - last < 0.05 * s.dur_ns
    assert "tensor_cores_unused" not in {h.rule for h in d.rule_hits}


# ------------------------------------------------------------------------------ quoted percentages

def _quoted(detail):
    """(label, percent) pairs a suggestion quotes: 'Runtime 12.3%' and '12.3% of ... (Runtime)'."""
    labels = "|".join(re.escape(v) for v in CATEGORY_LABELS.values())
    pairs = [(m.group(1), m.group(2)) for m in re.finditer(rf"({labels}) (\d+\.\d)%", detail)]
    pairs += [(m.group(2), m.group(1)) for m in re.finditer(rf"(\d+\.\d)% of the average step \(({labels})\)", detail)]
    return pairs


# (the alexnet trace once quoted 8 shares, of findings on a window that records only the process start-up:
# they are gone, rules/profiling_rules.py "startup"; the old plugin's GPU metrics trace quotes as many)
@pytest.mark.parametrize("parts,quotes", [(RESNET, 1), (NS_TRACE, 0),
                                          (("kineto", "tbp_gpu_metrics", "gpu_metrics_input.json"), 8)])
def test_every_quoted_share_is_the_breakdown_column_of_that_name(parts, quotes):
    d = build_digest(read_kineto(fixture_path(*parts)))
    a = d.average
    field = {v: k for k, v in CATEGORY_LABELS.items()}
    seen = 0
    for h in d.rule_hits:
        for label, text in _quoted(h.detail):
            assert text == f"{100 * getattr(a, field[label]) / a.total_ns:.1f}", (h.rule, label)
            seen += 1
    assert seen == quotes


def test_device_idle_quotes_the_idle_column_not_the_device_free_time():
    a = pb.Breakdown(total_ns=1000, compute_ns=200, runtime_ns=100, host_ns=693, idle_ns=7)
    d = pb.Digest(average=a)
    d.kernels_by_name.add(name="k", calls=1, total_ns=200)
    (hit,) = [h for h in rule_hits(d) if h.rule == "device_idle"]
    assert "Idle 0.7%" in hit.detail and "Runtime 10.0%" in hit.detail and "Host 69.3%" in hit.detail
    assert hit.value == pytest.approx(0.8)


def test_cpu_loop_with_item_has_no_device_figures(tmp_path):
    """A real torch.profiler CPU run of a loop that reads a value with .item() each step: on the
    CPU that is no wait for a device, so no device wait, no device rule, and no step distorted
    (nothing is left to drain when the window ends)."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, schedule

    path = tmp_path / "item.pt.trace.json"
    x = torch.randn(256, 256)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=4),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as prof:
        for _ in range(5):
            (x @ x).sum().item()
            prof.step()
    raw = json.loads(path.read_text(encoding="utf-8"))["traceEvents"]
    steps = steps_of(raw)
    assert any(e.get("name") == "aten::item" for e in raw) and len(steps) == 4
    d = build_digest(read_kineto(path))
    assert [s.number for s in d.steps] == [n for _, _, n in steps]
    assert not any(s.distorted or s.tail_ns for s in d.steps)
    assert list(d.average_steps) == [n for _, _, n in steps]
    assert all(s.breakdown.device_wait_ns == 0 for s in d.steps)
    assert not {h.rule for h in d.rule_hits} & {"device_wait", "device_idle", "launch_bound", "tensor_cores_unused"}
