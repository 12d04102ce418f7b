"""GPU efficiency figures (analysis/gpu_metrics.py) against independent readings:
- the old TensorBoard plugin's GPU summary on the V100 fixture (SOURCES.md: its printed figures);
- the old plugin's own test data, the counter tracks of kineto/tbp_gpu_metrics;
- the formulas applied by hand here to the raw JSON of an A100 trace (hta/nccl_parser_config);
- the MI250 (ROCm) trace, which carries none of the kernel estimates: unknown, not 0.
"""
import json
from collections import Counter, defaultdict

import pytest

from _raw_kineto import Trace, step_spans
from canning_tb.analysis.build import build_digest
from canning_tb.analysis.gpu_metrics import gpu_efficiency
from canning_tb.analysis.tensor_cores import uses_tensor_cores
from canning_tb.ingest.kineto.read import read_kineto
from conftest import fixture_path


@pytest.mark.parametrize("window,util,sm_eff,occupancy", [("1623143089861", 55.51, 54.68, 49.13),
                                                           ("1623143566756", 63.61, 62.65, 49.14)])
def test_v100_the_old_plugins_gpu_summary(window, util, sm_eff, occupancy):
    """The old plugin takes its figures over all steps (the first step's start to the last one's end);
    given that span our functions print its figures to the digit. The digest's own figures are over
    the steps the average keeps (the last one here is distorted by the window's end)."""
    table = read_kineto(str(fixture_path("kineto", "resnet50_v100", f"worker0.{window}.pt.trace.json.gz")))
    d = build_digest(table)
    first, last = d.steps[0], d.steps[-1]
    (g,) = gpu_efficiency(table, [first.start_ns], [last.start_ns + last.dur_ns])
    assert (round(100 * g.utilization, 2), round(100 * g.sm_efficiency, 2), round(g.achieved_occupancy_pct, 2)) == (
        util, sm_eff, occupancy)
    assert g.tensor_core_share == 0.0 and g.name == "Tesla V100-DGXS-32GB"
    kept = [s for s in d.steps if s.number in d.average_steps]
    assert len(kept) == 5
    (own,) = d.gpu_efficiency
    assert own.span_ns == sum(s.dur_ns for s in kept)
    (again,) = gpu_efficiency(table, [s.start_ns for s in kept], [s.start_ns + s.dur_ns for s in kept])
    assert own == again


def _counter_track(events, name, key, scale):
    """[(ts µs, value)] of a counter track, the last value written at each instant, times scale."""
    last = {}
    for e in events:
        if e.get("ph") == "C" and e["name"] == name:
            last[e["ts"]] = e["args"][key] * scale
    return sorted(last.items())


def test_the_old_plugins_counter_tracks():
    """gpu_metrics_expected.json holds the counter tracks the old plugin wrote for this trace, with
    the values its test scaled up "for easy to see in UI" (its comments: real utilization values are
    1/100 of these, SM efficiency 1/10). Utilization per bucket and the SM efficiency over the whole
    track are our figures over the same spans."""
    folder = fixture_path("kineto", "tbp_gpu_metrics")
    table = read_kineto(str(folder / "gpu_metrics_input.json"))
    expected = json.loads((folder / "gpu_metrics_expected.json").read_text())["traceEvents"]
    buckets = _counter_track(expected, "GPU 0 Utilization", "GPU Utilization", 1 / 100)
    assert len(buckets) == 14  # 13 buckets of 1 ms (the last one longer) and the end
    for (lo, value), (hi, _) in zip(buckets, buckets[1:]):
        (g,) = gpu_efficiency(table, [lo * 1000], [hi * 1000])
        assert g.utilization == pytest.approx(value, abs=1e-12), (lo, hi)
    track = _counter_track(expected, "GPU 0 Est. SM Efficiency", "Est. SM Efficiency", 1 / 10)
    lo, hi = track[0][0], buckets[-1][0]
    integral = sum(v * (b - a) for (a, v), (b, _) in zip(track, track[1:]))
    (g,) = gpu_efficiency(table, [lo * 1000], [hi * 1000])
    assert g.sm_efficiency == pytest.approx(integral / (hi - lo), rel=1e-12)
    assert g.kernels == g.kernels_with_blocks_per_sm == 30
    # the 2021 trace names the occupancy "theoretical occupancy %": read as the same estimate
    assert g.kernels_with_occupancy == 30


def _by_hand(trace, span):
    """The four figures per device from the raw kernels, with plain loops (span: [(start, end)] ns)."""
    per_dev = defaultdict(list)
    for d in trace.device:
        if d.cat == "kernel":
            per_dev[d.args["device"]].append(d)
    span_ns = sum(b - a for a, b in span)

    def inside(a, b):
        return sum(max(0, min(b, hi) - max(a, lo)) for lo, hi in span)

    out = {}
    for dev, ks in per_dev.items():
        # utilization: walk the kernels by start, merging
        busy, cur = 0, None
        for k in sorted(ks, key=lambda k: k.start):
            if cur and k.start <= cur[1]:
                cur[1] = max(cur[1], k.end)
            else:
                if cur:
                    busy += inside(*cur)
                cur = [k.start, k.end]
        busy += inside(*cur)
        # SM efficiency: at every boundary, the sum of blocks per SM of the kernels running
        points = sorted({t for k in ks for t in (k.start, k.end)})
        sm = 0.0
        for a, b in zip(points, points[1:]):
            level = sum(float(k.args["blocks per SM"]) for k in ks
                        if k.start <= a and k.end >= b and float(k.args["blocks per SM"]) > 0)
            sm += min(level, 1.0) * inside(a, b)
        weight = sum(inside(k.start, k.end) for k in ks)
        occ = sum(float(k.args["est. achieved occupancy %"]) * inside(k.start, k.end) for k in ks) / weight
        tc = sum(inside(k.start, k.end) for k in ks if uses_tensor_cores(k.name)) / weight
        out[dev] = (busy / span_ns, sm / span_ns, occ, tc)
    return out


def test_a100_formulas_by_hand():
    path = fixture_path("hta", "nccl_parser_config", "nccl_data.json.gz")
    table = read_kineto(str(path))
    d = build_digest(table)
    trace = Trace(path)
    steps = step_spans(trace)
    kept = [(a, b) for n, a, b in steps if n in d.average_steps]
    assert kept and [(s.start_ns, s.start_ns + s.dur_ns) for s in d.steps if s.number in d.average_steps] == kept
    expect = _by_hand(trace, kept)
    assert [g.device for g in d.gpu_efficiency] == sorted(expect)
    for g in d.gpu_efficiency:
        util, sm, occ, tc = expect[g.device]
        assert g.utilization == pytest.approx(util, rel=1e-9)
        assert g.sm_efficiency == pytest.approx(sm, rel=1e-9)
        assert g.achieved_occupancy_pct == pytest.approx(occ, rel=1e-9)
        assert g.tensor_core_share == pytest.approx(tc, rel=1e-9)
        assert 0 < g.utilization <= 1 and 0 < g.sm_efficiency <= g.utilization
        assert g.name.startswith("NVIDIA A100")
    assert any(g.tensor_core_share > 0 for g in d.gpu_efficiency)


def test_rocm_trace_without_estimates_is_unknown():
    """The MI250 trace's kernels carry no blocks per SM / occupancy, and Tensor Core names are NVIDIA's."""
    path = fixture_path("hta", "amd_trace", "mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    d = build_digest(read_kineto(str(path)))
    assert d.gpu_efficiency
    for g in d.gpu_efficiency:
        assert g.sm_efficiency == g.achieved_occupancy_pct == g.tensor_core_share == -1
        assert g.kernels_with_blocks_per_sm == g.kernels_with_occupancy == 0
        assert 0 <= g.utilization <= 1


def test_cpu_only_trace_has_no_gpu_figures():
    d = build_digest(read_kineto(str(fixture_path("hta", "cpu_only", "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"))))
    assert len(d.gpu_efficiency) == 0


def test_kernel_columns_by_hand():
    """Kernels view: blocks per SM and occupancy weighted by each call's duration (as the old plugin's
    kernel table), the most frequent registers per thread and shared memory, from the raw JSON."""
    path = fixture_path("kineto", "resnet50_v100", "worker0.1623143089861.pt.trace.json.gz")
    d = build_digest(read_kineto(str(path)))
    calls = defaultdict(list)
    for k in Trace(path).device:
        if k.cat == "kernel":
            calls[k.name].append(k)
    for stat in d.kernels_by_name[:40]:
        ks = calls[stat.name]
        weight = sum(k.dur for k in ks)
        assert stat.mean_blocks_per_sm == pytest.approx(sum(float(k.args["blocks per SM"]) * k.dur for k in ks) / weight)
        assert stat.mean_occupancy_pct == pytest.approx(
            sum(float(k.args["est. achieved occupancy %"]) * k.dur for k in ks) / weight)
        for field, arg in (("registers_per_thread", "registers per thread"), ("shared_memory_bytes", "shared memory")):
            counts = Counter(int(k.args[arg]) for k in ks)
            top = max(counts.values())
            assert int(getattr(stat, field)) in {v for v, c in counts.items() if c == top}


def test_operator_tensor_core_shares_by_hand():
    """Operators view: the Tensor Core share of each operator's kernel time, self and total (a kernel
    under two nested calls of the same operator counted once), by a walk up the raw trace's op tree.
    The launching op is the stated one (analysis/context.py): the host op with the kernel's external
    id (NCCL kernels name record_param_comms so), else the op around its runtime launch."""
    path = fixture_path("hta", "nccl_parser_config", "nccl_data.json.gz")
    d = build_digest(read_kineto(str(path)))
    trace = Trace(path)
    by_ext = defaultdict(list)
    for op in trace.ops:
        if op.ext is not None:
            by_ext[op.ext].append(op)
    self_t, self_tc = defaultdict(int), defaultdict(int)
    total_t, total_tc = defaultdict(int), defaultdict(int)
    for k in trace.device:
        same_ext = by_ext.get(k.ext, [])
        op = same_ext[0] if len(same_ext) == 1 else trace.owner.get(k)
        if k.cat != "kernel" or op is None:
            continue
        tc = uses_tensor_cores(k.name)
        if op.cat == "cpu_op":
            self_t[op.name] += k.dur
            self_tc[op.name] += k.dur if tc else 0
        names, cur = set(), op
        while cur is not None:
            if cur.cat == "cpu_op":
                names.add(cur.name)
            cur = cur.parent
        for name in names:
            total_t[name] += k.dur
            total_tc[name] += k.dur if tc else 0
    checked = 0
    for o in d.ops_by_name:
        if o.name not in total_t:
            assert o.tc_total_share == -1
            continue
        assert o.tc_total_share == pytest.approx(total_tc[o.name] / total_t[o.name], abs=1e-12)
        assert o.tc_self_share == (pytest.approx(self_tc[o.name] / self_t[o.name], abs=1e-12) if self_t[o.name] else -1)
        checked += 1
    assert checked > 20
    conv = next(o for o in d.ops_by_name if o.name == "aten::cudnn_convolution")
    assert conv.tc_eligible and conv.tc_total_share > 0.5
