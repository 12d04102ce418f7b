"""analysis/compare/verdict.py: on small digests built here (every expected number worked out by hand), and
on real before/after pairs whose direction is known in advance (tests/_compare_pairs.py, real
torch.profiler on the CPU), the two windows of the V100 fixture, the HTA trace_diff pair and
Ascend level1 vs level2, checked against a second reading of the raw files (json / csv here)."""
import csv
import gzip
import json
import statistics
from collections import Counter, defaultdict

import pytest

from _compare_pairs import ACTIVE, SLEEP_S, write_all
from _raw_kineto import Trace
from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.compare.verdict import change_text, compare
from canning_tb.analysis.compare.memory import step_axis
from canning_tb.analysis.names import NameMap, NameMapError, name_map
from canning_tb.store import Store
from conftest import fixture_path

MS = 1_000_000


def window(step_durations, ops=(), kernels=(), stacks=(), breakdown=None):
    d = pb.Digest()
    for i, dur in enumerate(step_durations):
        step = d.steps.add(number=i + 1, start_ns=i * 100 * MS, dur_ns=dur)
        step.breakdown.total_ns = dur
        for key, value in (breakdown or {"host": dur}).items():
            setattr(step.breakdown, f"{key}_ns", value)
    if step_durations:  # the mean step, as analysis/steps.py makes it
        for field in ("total_ns", *(f"{k}_ns" for k in (breakdown or {"host": 0}))):
            setattr(d.average, field, sum(getattr(s.breakdown, field) for s in d.steps) // len(d.steps))
    for name, calls, host_self, device_self in ops:
        d.ops_by_name.add(name=name, calls=calls, host_self_ns=host_self, host_total_ns=host_self,
                          device_self_ns=device_self, device_total_ns=device_self)
    for name, calls, total in kernels:
        d.kernels_by_name.add(name=name, calls=calls, total_ns=total)
    for name, stack, calls, host_self in stacks:
        d.ops_by_stack.add(name=name, call_stack=stack, has_call_stack=bool(stack), calls=calls,
                           host_self_ns=host_self, host_total_ns=host_self)
    return d


def by_key(rows):
    return {r["key"]: r for r in rows}


def test_per_step_rows_by_hand():
    # base: two windows of 2 and 1 steps (3 steps); target: one window of 2 steps
    base = [window([10 * MS, 10 * MS], [("aten::mm", 4, 6 * MS, 0)]),
            window([10 * MS], [("aten::mm", 2, 3 * MS, 0), ("aten::add", 3, 300_000, 0)])]
    target = [window([5 * MS, 7 * MS], [("aten::mm", 2, 2 * MS, 0), ("aten::relu", 2, 4 * MS, 0)])]
    c = compare(base, target).as_dict()
    assert (c["base"]["steps"], c["target"]["steps"]) == (3, 2)
    assert c["base"]["step_ns"] == 10 * MS and c["target"]["step_ns"] == 6 * MS
    # the step 40 % shorter (6 / 10), the speed 10 / 6 = 1.67x
    assert c["verdict"]["step_time"]["text"] == "step 40 % shorter (1.67x faster)"
    rows = by_key(c["operators"])
    # host self ms/step: mm 9/3 = 3 -> 2/2 = 1 (-2), relu 0 -> 2 (+2), add 0.1 -> 0 (-0.1)
    assert rows["aten::mm"]["base_ns"] == 3 * MS and rows["aten::mm"]["target_ns"] == 1 * MS
    assert (rows["aten::mm"]["base_calls"], rows["aten::mm"]["target_calls"]) == (2, 1)
    assert rows["aten::mm"]["delta_pct"] == pytest.approx(-100 * 2 / 3)
    assert rows["aten::relu"]["status"] == "added" and rows["aten::relu"]["delta_pct"] is None
    assert rows["aten::add"]["status"] == "removed" and rows["aten::add"]["delta_ns"] == pytest.approx(-100_000)
    assert [r["key"] for r in c["operators"]][2] == "aten::add"  # |2| = |2| > |0.1|
    # the step went 10 -> 6 ms; mm -2, relu +2, add -0.1 explain -0.1 ms; 3.9 ms left unexplained
    contrib = c["contributors"]
    assert contrib["step_delta_ns"] == -4 * MS
    assert contrib["explained_ns"] == pytest.approx(-100_000)
    assert contrib["unexplained_ns"] == pytest.approx(-3.9 * MS)


def test_throughput_is_samples_per_second_by_hand():
    """batch 32 per step: a 40 ms step is 32 / 0.040 = 800 samples/s, a 20 ms step 1600 (a unit slip to
    samples per ms would say 0.8 and 1.6). A side without a batch size has no throughput."""
    base, target = window([40 * MS, 40 * MS]), window([20 * MS])
    for d in (base, target):
        d.window.environment["batch_size"] = "32"
    v = compare(base, target).as_dict()["verdict"]["throughput"]
    assert (v["base"], v["target"]) == (pytest.approx(800.0), pytest.approx(1600.0))
    assert v["text"] == "2.0x higher"
    del target.window.environment["batch_size"]
    v = compare(base, target).as_dict()["verdict"]["throughput"]
    assert v["target"] is None and v["text"] == "n/a"


def test_change_text():
    assert change_text(10, 6, "faster", "slower") == "1.7x faster"
    assert change_text(100, 112, "faster", "slower") == "12 % slower"
    assert change_text(100, 88, "faster", "slower") == "12 % faster"
    assert change_text(100, 200, "lower", "higher") == "2.0x higher"
    assert change_text(100, 100.5, "faster", "slower") == "about the same"
    assert change_text(0, 5, "faster", "slower") == change_text(None, 5, "faster", "slower") == "n/a"


def test_breakdown_deltas_sum_to_the_step_change():
    base = window([10 * MS], breakdown={"compute": 6 * MS, "dataloader": 3 * MS, "idle": 1 * MS})
    target = window([7 * MS], breakdown={"compute": 6 * MS, "dataloader": 0, "host": 1 * MS})
    c = compare(base, target).as_dict()
    deltas = {b["category"]: b["delta_ns"] for b in c["breakdown"]}
    assert deltas["dataloader"] == -3 * MS and deltas["host"] == 1 * MS and deltas["idle"] == -1 * MS
    assert sum(deltas.values()) == -3 * MS == c["contributors"]["step_delta_ns"]
    # the dataloader is a contributor of its own (a category, not an operator)
    (loader,) = c["contributors"]["operators"]
    assert (loader["name"], loader["kind"], loader["delta_ns"]) == ("dataloader", "category", -3 * MS)


def test_name_map_matches_npu_and_cuda_names():
    cuda = window([10 * MS], [("aten::_scaled_dot_product_flash_attention", 2, 0, 4 * MS), ("aten::mm", 1, 0, 1 * MS)],
                  kernels=[("ampere_sgemm_128x64_tn", 3, 2 * MS), ("flash_fwd_kernel", 2, 4 * MS)])
    npu = window([8 * MS], [("npu::npu_fusion_attention", 2, 0, 3 * MS), ("aten::mm", 1, 0, 1 * MS)],
                 kernels=[("MatMulV2", 3, 1 * MS), ("FlashAttentionScore", 2, 3 * MS)])
    c = compare(cuda, npu).as_dict()
    att = by_key(c["operators"])["aten::_scaled_dot_product_flash_attention"]
    assert att["status"] == "changed" and att["target_names"] == ["npu::npu_fusion_attention"]
    assert att["delta_ns"] == -1 * MS
    families = by_key(c["kernel_families"])
    assert families["matmul"]["base_ns"] == 2 * MS and families["matmul"]["target_ns"] == 1 * MS
    assert families["attention"]["target_names"] == ["FlashAttentionScore"]
    # kernels by name do not match across vendors: removed and added
    assert {r["status"] for r in c["kernels"]} == {"added", "removed"}
    # a user map: the kernel names equal, a family of its own first
    user = name_map({"version": 1, "kernels": {"MatMulV2": "ampere_sgemm_128x64_tn"},
                     "kernel_families": [["^flash|^FlashAttention", "my attention"]]})
    c = compare(cuda, npu, user).as_dict()
    assert by_key(c["kernels"])["ampere_sgemm_128x64_tn"]["status"] == "changed"
    assert "my attention" in by_key(c["kernel_families"])


def test_bad_name_maps():
    with pytest.raises(NameMapError, match="unknown keys: operater"):
        name_map({"operater": {}})
    with pytest.raises(NameMapError, match="bad regular expression"):
        name_map({"operator_patterns": [["(", "x"]]})
    with pytest.raises(NameMapError, match="string -> string"):
        name_map({"operators": {"a": 1}})


def test_operator_tree_by_hand():
    # innermost frame first, as the digest stores it; line numbers differ between the sides
    base = window([10 * MS], stacks=[("aten::mm", "model.py(10): forward;train.py(5): <module>", 2, 4 * MS),
                                     ("aten::add", "model.py(11): forward;train.py(5): <module>", 1, 1 * MS),
                                     ("aten::copy_", "", 1, 2 * MS)])
    target = window([10 * MS], stacks=[("aten::mm", "model.py(12): forward;train.py(6): <module>", 2, 3 * MS),
                                       ("aten::relu", "model.py(13): forward;train.py(6): <module>", 1, 2 * MS)])
    tree = compare(base, target).as_dict()["tree"]
    assert (tree["base_ns"], tree["target_ns"]) == (7 * MS, 5 * MS)
    top = {n["name"]: n for n in tree["children"]}
    assert set(top) == {"train.py: <module>", "(no call stack)"}
    module = top["train.py: <module>"]
    (forward,) = module["children"]
    assert forward["name"] == "model.py: forward" and (forward["base_ns"], forward["target_ns"]) == (5 * MS, 5 * MS)
    leaves = {n["name"]: n for n in forward["children"]}
    assert leaves["aten::mm"]["delta_ns"] == -1 * MS and leaves["aten::mm"]["status"] == "changed"
    assert leaves["aten::relu"]["status"] == "added" and leaves["aten::add"]["status"] == "removed"
    assert top["(no call stack)"]["status"] == "removed"


def test_step_axis_and_memory_by_hand():
    d = window([10 * MS, 20 * MS])  # steps at 0 and 100 ms (window() places them 100 ms apart)
    assert step_axis(d, [0, 5 * MS, 100 * MS, 110 * MS, 130 * MS, -5 * MS]) == [0, 0.5, 1, 1.5, 2.5, -0.5]
    a, b = window([10 * MS]), window([10 * MS])
    for digest, device, peak in ((a, "cuda:0", 400), (b, "npu:0", 100)):
        digest.memory.add(device=device, peak_allocated_bytes=peak, curve_ts_ns=[0, 5 * MS],
                          curve_allocated_bytes=[peak // 2, peak])
        digest.memory.add(device="CPU", peak_allocated_bytes=10)
    c = compare(a, b).as_dict()
    acc = c["memory"][0]
    assert acc["device"] == "cuda:0 / npu:0" and acc["ratio"] == 0.25 and acc["target_x"] == [0, 0.5]
    assert c["verdict"]["memory_peak"]["text"] == "4.0x lower" and c["verdict"]["memory_device"] == "npu:0"


def test_communication_deltas_by_hand():
    a, b = window([10 * MS, 10 * MS]), window([10 * MS])
    a.communication.collectives.add(kind="AllReduce", group="g1", calls=4, total_ns=8 * MS, bytes=400)
    a.communication.collectives.add(kind="AllReduce", group="g2", calls=2, total_ns=2 * MS, bytes=-1)
    b.communication.collectives.add(kind="AllReduce", group="g9", calls=2, total_ns=3 * MS, bytes=100)
    c = compare(a, b).as_dict()
    kinds = c["communication_by_kind"]
    assert len(kinds) == 1 and kinds[0]["base_calls"] == 3 and kinds[0]["base_ns"] == 5 * MS
    assert kinds[0]["base_bytes"] == -1 and kinds[0]["target_bytes"] == 100 and kinds[0]["delta_ns"] == -2 * MS
    groups = {r["group"]: r["status"] for r in c["communication"]}
    assert groups == {"g1": "removed", "g2": "removed", "g9": "added"}


# -- real pairs ---------------------------------------------------------------------------------------

def raw_events(path):
    with gzip.open(path, "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    root = tmp_path_factory.mktemp("pairs")
    write_all(root)
    return root


def run_digest(store, run, position=0):
    worker = store.workers(run)[0].name
    return store.digest(run, worker, store.windows(run, worker)[position].id)


def only_trace(folder):
    (path,) = folder.glob("*.pt.trace.json.gz")
    return raw_events(path)


def self_time_by_name(events, category="cpu_op"):
    """Host self time per operator name from the raw events: duration minus direct children on
    the same thread (operators of `category` only), computed here independently of the analysis."""
    ops = sorted((e for e in events if e.get("cat") == category), key=lambda e: (e["tid"], e["ts"], -e["dur"]))
    self_us, stack = defaultdict(float), []
    for e in ops:
        while stack and (stack[-1]["tid"] != e["tid"] or stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]):
            stack.pop()
        if stack:
            self_us[stack[-1]["name"]] -= e["dur"]
        self_us[e["name"]] += e["dur"]
        stack.append(e)
    return self_us


def test_fused_gelu_is_faster(pairs, tmp_path):
    store = Store(str(pairs), cache_dir=str(tmp_path))
    c = compare(run_digest(store, "gelu_unfused"), run_digest(store, "gelu_fused")).as_dict()
    for side, run in (("base", "gelu_unfused"), ("target", "gelu_fused")):
        events = only_trace(pairs / run)
        steps = [e["dur"] for e in events if e["name"].startswith("ProfilerStep#")]
        assert len(steps) == ACTIVE
        assert c[side]["step_ns"] == pytest.approx(1000 * sum(steps) / len(steps), abs=1000)
    # fused is faster on a quiet machine; a loaded runner can turn the raw steps around, and the
    # verdict follows the steps (their means checked above) either way
    faster = c["target"]["step_ns"] < c["base"]["step_ns"]
    if abs(c["verdict"]["step_time"]["delta_pct"]) >= 2:  # 'about the same' below 1 %
        assert c["verdict"]["step_time"]["text"].endswith("faster)" if faster else "slower)")
    rows = by_key(c["operators"])
    raw_base, raw_target = only_trace(pairs / "gelu_unfused"), only_trace(pairs / "gelu_fused")
    gelu_calls = sum(e["name"] == "aten::gelu" for e in raw_target) / ACTIVE
    assert rows["aten::gelu"]["status"] == "added" and rows["aten::gelu"]["target_calls"] == gelu_calls == 1
    assert rows["aten::tanh"]["status"] == "removed" and rows["aten::pow"]["status"] == "removed"
    truth = self_time_by_name(raw_base)
    for name in ("aten::tanh", "aten::mul", "aten::add"):
        assert rows[name]["base_ns"] == pytest.approx(1000 * truth[name] / ACTIVE, abs=2000)
    contrib = c["contributors"]
    # each operator's change by hand: its raw self time per step in the target less in the base; the step's
    # change: the raw ProfilerStep# means' difference; unexplained: what the listed operators leave of it
    means = {side: 1000 * statistics.mean(e["dur"] for e in only_trace(pairs / run) if e["name"].startswith("ProfilerStep#"))
             for side, run in (("base", "gelu_unfused"), ("target", "gelu_fused"))}
    truth_target = self_time_by_name(raw_target)
    hand = {o["name"]: 1000 * (truth_target[o["name"]] - truth[o["name"]]) / ACTIVE for o in contrib["operators"]}
    for o in contrib["operators"]:
        assert o["kind"] == "operator" and o["delta_ns"] == pytest.approx(hand[o["name"]], abs=2000)
    step_delta = means["target"] - means["base"]
    assert contrib["step_delta_ns"] == pytest.approx(step_delta, abs=1000)
    assert contrib["explained_ns"] == pytest.approx(sum(hand.values()), abs=2000 * len(hand))
    assert contrib["unexplained_ns"] == pytest.approx(step_delta - sum(hand.values()), abs=1000 + 2000 * len(hand))
    deltas = {o["name"]: o["delta_ns"] for o in contrib["operators"]}
    assert all(deltas[n] < 0 for n in ("aten::tanh", "aten::mul", "aten::add")) and deltas["aten::gelu"] > 0
    # the fused form allocates no temporaries: a lower CPU memory peak
    assert c["verdict"]["memory_peak"]["text"].endswith("lower")


def test_dataloader_sleep_is_the_cause(pairs, tmp_path):
    store = Store(str(pairs), cache_dir=str(tmp_path))
    c = compare(run_digest(store, "loader_sleep"), run_digest(store, "loader_fast")).as_dict()
    assert c["verdict"]["step_time"]["text"].endswith("x faster)")
    loaders = [e["dur"] for e in only_trace(pairs / "loader_sleep") if e["name"].startswith("enumerate(DataLoader)")]
    assert len(loaders) == ACTIVE and min(loaders) >= 1e6 * SLEEP_S  # the sleep is in the raw ranges
    breakdown = {b["category"]: b for b in c["breakdown"]}
    assert breakdown["dataloader"]["base_ns"] == pytest.approx(1000 * sum(loaders) / ACTIVE, rel=0.01)
    top = c["contributors"]["operators"][0]
    assert (top["name"], top["kind"]) == ("dataloader", "category")
    assert -top["delta_ns"] >= 1e9 * SLEEP_S
    assert abs(c["contributors"]["unexplained_ns"]) < 0.1 * abs(c["contributors"]["step_delta_ns"])


def test_resnet_windows(tmp_path):
    folder = fixture_path("kineto", "resnet50_v100")
    store = Store(str(folder), cache_dir=str(tmp_path))
    c = compare(run_digest(store, ".", 0), run_digest(store, ".", 1)).as_dict()
    raws = [raw_events(p) for p in sorted(folder.glob("*.pt.trace.json.gz"))]
    for side, events in zip(("base", "target"), raws):
        steps = sum(e["name"].startswith("ProfilerStep#") and e.get("cat") == "Operator" for e in events)
        assert c[side]["steps"] == steps == 6
        kernel_us = sum(e["dur"] for e in events if e.get("cat") == "Kernel")
        assert sum(r[f"{side}_ns"] for r in c["kernels"]) == pytest.approx(1000 * kernel_us / steps, abs=10)
        convs = Counter(e["name"] for e in events if e.get("cat") == "Operator")["aten::cudnn_convolution"]
        assert by_key(c["operators"])["aten::cudnn_convolution"][f"{side}_calls"] == convs / steps
    # window 2 spent less time in its DataLoader (an operator in this 2021 trace, its self time
    # without the collate operators): the top contributor
    name = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    loader = [self_time_by_name(events, "Operator")[name] / 6 for events in raws]
    assert loader[1] < loader[0] and c["target"]["step_ns"] < c["base"]["step_ns"]
    top = c["contributors"]["operators"][0]
    assert (top["name"], top["kind"]) == (name, "operator")
    assert top["delta_ns"] == pytest.approx(1000 * (loader[1] - loader[0]), abs=1000)
    assert "dataloader" not in [o["name"] for o in c["contributors"]["operators"]]  # counted once
    assert {r["status"] for r in c["kernels"]} <= {"changed", "same"}  # the same model: every kernel matches


def test_hta_trace_diff_pair(tmp_path):
    folder = fixture_path("hta", "trace_diff")
    store = Store(str(folder), cache_dir=str(tmp_path))
    # names as recorded (an empty map): the counts below are of the raw names
    c = compare(run_digest(store, "control"), run_digest(store, "test"), NameMap()).as_dict()
    files = {side: next((folder / run).glob("*.json.gz")) for side, run in (("base", "control"), ("target", "test"))}
    raws = {side: raw_events(path) for side, path in files.items()}
    rows = by_key(c["operators"])
    for side, events in raws.items():
        steps = sum(e["name"].startswith("ProfilerStep#") and e.get("cat") in ("cpu_op", "user_annotation")
                    for e in events)
        assert c[side]["steps"] == steps
        # calls per name by hand, a redispatched call counted in its parent (tests/_raw_kineto.py)
        counts = {name: row["calls"] for name, row in Trace(files[side]).op_rows().items()}
        for name, calls in counts.items():
            if not name.startswith("ProfilerStep#"):
                assert rows[name][f"{side}_calls"] == pytest.approx(calls / steps)
    only_base = {n for n, r in rows.items() if r["status"] == "removed"}
    base_names = {e["name"] for e in raws["base"] if e.get("cat") == "cpu_op"}
    target_names = {e["name"] for e in raws["target"] if e.get("cat") == "cpu_op"}
    assert only_base == base_names - target_names


def kernel_csv(rank_dir):
    """({kernel name: ns} of the computing kernels, HCCL ns, steps) from kernel_details.csv; the
    digest names HCCL tasks by their type, so those are summed apart."""
    with open(rank_dir / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    steps = {r["Step Id"] for r in rows}
    out, hccl = defaultdict(float), 0.0
    for r in rows:
        if r["Accelerator Core"] == "HCCL":
            hccl += float(r["Duration(us)"]) * 1000
        else:
            out[r["Name"]] += float(r["Duration(us)"]) * 1000
    return out, hccl, len(steps)


def test_ascend_level1_vs_level2(tmp_path):
    level1, level2 = fixture_path("ascend", "level1"), fixture_path("ascend", "level2")
    a = Store(str(level1), cache_dir=str(tmp_path / "1"))
    b = Store(str(level2), cache_dir=str(tmp_path / "2"))
    c = compare(run_digest(a, ".", 0), run_digest(b, ".", 0)).as_dict()
    kernels, families = by_key(c["kernels"]), by_key(c["kernel_families"])
    for side, folder in (("base", level1), ("target", level2)):
        truth, hccl, steps = kernel_csv(folder / "rank0_ascend_pt")
        assert c[side]["steps"] == steps == 1
        for name, ns in truth.items():
            assert kernels[name][f"{side}_ns"] == pytest.approx(ns, abs=1)
        assert families["communication"][f"{side}_ns"] == pytest.approx(hccl, abs=1)
    both = set(kernel_csv(level1 / "rank0_ascend_pt")[0]) & set(kernel_csv(level2 / "rank0_ascend_pt")[0])
    assert both <= {n for n, r in kernels.items() if r["status"] in ("changed", "same")}
    assert c["communication_by_kind"] and all(r["base_calls"] > 0 for r in c["communication_by_kind"])


def test_gpu_against_npu(tmp_path):
    """ResNet-50 on a V100 against the Ascend AlexNet-style job: nothing matches by kernel name, the
    default kernel families match across vendors; the NPU's HCCL kernels (by their csv core) are
    its communication family."""
    gpu = Store(str(fixture_path("kineto", "resnet50_v100")), cache_dir=str(tmp_path / "g"))
    npu_dir = fixture_path("ascend", "level1")
    npu = Store(str(npu_dir), cache_dir=str(tmp_path / "n"))
    c = compare(run_digest(gpu, "."), run_digest(npu, ".")).as_dict()
    families = by_key(c["kernel_families"])
    assert families["matmul"]["status"] == families["convolution"]["status"] == "changed"
    with open(npu_dir / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", newline="") as f:
        hccl = [r for r in csv.DictReader(f) if r["Accelerator Core"] == "HCCL"]
    names = {r["Name"] for r in hccl} | {r["Type"] for r in hccl}  # the digest names HCCL tasks by type
    assert set(families["communication"]["target_names"]) <= names and families["communication"]["status"] == "added"
    assert families["communication"]["target_ns"] == pytest.approx(1000 * sum(float(r["Duration(us)"]) for r in hccl), abs=1)
    assert [m["device"] for m in c["memory"]][0] == "cuda:0 / npu:0"
    assert "communication not hidden 0.000 -> " in c["verdict"]["text"]


def test_a_near_zero_base_is_new_and_a_near_zero_target_gone():
    """issue 27: two runs that nest events differently gave +9766 %: a side under 1 % of the other has no
    percentage (by hand: 0.5 -> 100 is 199x). Issue 42: "new" / "gone" only for an operator that really
    appears / disappears (its calls), never for one called as often on both sides."""
    from canning_tb.analysis.compare.ops import percent_change
    assert percent_change(0.5, 100.0) == (None, "") and percent_change(0.5, 100.0, "changed") == (None, "")
    assert percent_change(0.0, 3.0, "added") == (None, "new") and percent_change(100.0, 0.0, "removed") == (None, "gone")
    assert percent_change(100.0, 0.5) == (None, "")
    assert percent_change(100.0, 150.0) == (50.0, "") and percent_change(100.0, 2.0) == (-98.0, "")
    assert percent_change(0.0, 0.0) == (None, "")
