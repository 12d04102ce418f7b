"""Every rule of analysis/rules.py just above and just below its threshold.

Each case builds one window (a hand-made EventTable, one ProfilerStep of STEP ns) whose rule
figure is the threshold plus or minus a small margin, and checks that the rule fires only above
(below, for the "under" rules). The thresholds are written once, in THRESHOLDS: when a rule's
threshold changes on purpose, change it there.
"""
import pytest

from _synthetic import ev, table

from canning_tb.analysis.build import build_digest
from canning_tb.ingest.table import Kind as K

THRESHOLDS = {
    "dataloader_share": 0.05,                # DataLoader time / step time, above
    "device_idle": 0.50,                     # 1 - device busy / step time, above
    "launch_bound": 0.10,                    # runtime (device idle) / step time, above
    "device_wait": 0.10,                     # blocking calls (device idle) / step time, above
    "host_bound": 0.50,                      # (host + runtime) / step time, above (and device idle above 0.5)
    "communication_not_overlapped": 0.10,    # not overlapped communication / step time, above
    "tiny_kernels": (10_000, 1000),          # mean kernel ns below, over at least this many kernels
    "peak_memory": 0.90,                     # max(peak allocated, peak reserved) / capacity, above
    "empty_cache": 0,                        # empty_cache calls, above
    "ai_cpu": 20_000,                        # longest AI_CPU task ns, at least
    "tensor_cores_unused": (0.10, 7.0),      # eligible ops' device time / kernel time above, compute capability at least
    "fragmentation": (1.5, 256 * 2 ** 20),   # peak reserved / peak allocated above, and reserved - allocated at least
    "small_packets": (0.20, 2 ** 20, 5),     # time share of calls under 1 MiB above, over at least 5 such calls
    "gc_pauses": 1_000_000,                  # mean garbage-collection pause ns, above
}
STAGE_IMBALANCE = 0.05  # pipeline stages' computing (max - min) / mean, above (a cluster rule: analyse_ranks)
STEP = 1_000_000
MARGIN = 0.01  # of the step: 10 µs


def step(dur=STEP):
    return ev("ProfilerStep#1", K.USER_ANNOTATION, 0, dur)


def fired(t, rule):
    return rule in {h.rule for h in build_digest(t).rule_hits}


def share(rule, side):
    return THRESHOLDS[rule] + (MARGIN if side == "above" else -MARGIN)


SIDES = [("above", True), ("below", False)]


@pytest.mark.parametrize("side,fires", SIDES)
def test_dataloader_share(side, fires):
    dl = int(share("dataloader_share", side) * STEP)
    t = table([step(), ev("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", K.USER_ANNOTATION, 0, dl)])
    assert fired(t, "dataloader_share") is fires


@pytest.mark.parametrize("side,fires", SIDES)
def test_device_idle(side, fires):
    busy = STEP - int(share("device_idle", side) * STEP)
    t = table([step(), ev("gemm", K.KERNEL, 0, busy)])
    assert fired(t, "device_idle") is fires


@pytest.mark.parametrize("side,fires", SIDES)
def test_launch_bound(side, fires):
    rt = int(share("launch_bound", side) * STEP)
    t = table([step(), ev("gemm", K.KERNEL, 0, STEP // 2), ev("cudaLaunchKernel", K.RUNTIME, 600_000, rt)])
    assert fired(t, "launch_bound") is fires


@pytest.mark.parametrize("side,fires", SIDES)
def test_device_wait(side, fires):
    wait = int(share("device_wait", side) * STEP)
    t = table([step(), ev("gemm", K.KERNEL, 0, STEP // 2), ev("cudaStreamSynchronize", K.RUNTIME, 600_000, wait)])
    assert fired(t, "device_wait") is fires
    assert not fired(t, "launch_bound")  # a wait for the device is not launch overhead


@pytest.mark.parametrize("side,fires", SIDES)
def test_host_bound(side, fires):
    host = int(share("host_bound", side) * STEP)
    t = table([step(), ev("gemm", K.KERNEL, 0, STEP // 20), ev("aten::index", K.CPU_OP, STEP // 10, host)])
    assert fired(t, "host_bound") is fires


@pytest.mark.parametrize("side,fires", SIDES)
def test_communication_not_overlapped(side, fires):
    comm = int(share("communication_not_overlapped", side) * STEP)
    t = table([step(), ev("gemm", K.KERNEL, 0, STEP // 2),
               ev("ncclDevKernel_AllReduce_Sum_f32_RING_LL", K.COMM_KERNEL, 600_000, comm)])
    assert fired(t, "communication_not_overlapped") is fires


def tiny_kernels(n, mean):
    return table([step(n * mean + 1000)] + [ev("elementwise", K.KERNEL, i * mean, mean) for i in range(n)])


@pytest.mark.parametrize("n,mean,fires", [
    (THRESHOLDS["tiny_kernels"][1], THRESHOLDS["tiny_kernels"][0] - 100, True),
    (THRESHOLDS["tiny_kernels"][1], THRESHOLDS["tiny_kernels"][0] + 100, False),   # kernels not tiny enough
    (THRESHOLDS["tiny_kernels"][1] - 1, THRESHOLDS["tiny_kernels"][0] - 100, False),  # too few
])
def test_tiny_kernels(n, mean, fires):
    assert fired(tiny_kernels(n, mean), "tiny_kernels") is fires


@pytest.mark.parametrize("side,fires", SIDES)
def test_peak_memory(side, fires):
    cap = 1_000_000
    peak = int(share("peak_memory", side) * cap)
    mem = [dict(ts=10, device="cuda:0", bytes=peak, addr=1, allocated=peak, reserved=peak),
           dict(ts=20, device="cuda:0", bytes=-peak, addr=1, allocated=0, reserved=peak)]
    t = table([step(), ev("aten::empty", K.CPU_OP, 0, 100)], memory=mem,
              devices=[{"kind": "cuda", "index": 0, "memory": cap}])
    assert fired(t, "peak_memory") is fires


@pytest.mark.parametrize("calls", [THRESHOLDS["empty_cache"], THRESHOLDS["empty_cache"] + 1])
def test_empty_cache(calls):
    mem = [dict(ts=10, device="cuda:0", bytes=64, addr=1, allocated=64, reserved=64)]
    t = table([step()] + [ev("torch.cuda.empty_cache", K.CPU_OP, 100 * (i + 1), 10) for i in range(calls)], memory=mem)
    assert fired(t, "empty_cache") is (calls > THRESHOLDS["empty_cache"])


@pytest.mark.parametrize("delta,fires", [(+500, True), (0, True), (-500, False)])
def test_ai_cpu(delta, fires):
    # a step of 350 µs: the AI_CPU task is above the significance floor (5 % of the step) at the threshold
    t = table([step(350_000), ev("aclnnNonzero_NonZeroAiCpu", K.KERNEL, 0, THRESHOLDS["ai_cpu"] + delta,
                                 core="AI_CPU"), ev("MatMul", K.KERNEL, 30_000, 300_000, core="AI_CORE")], fmt="ascend")
    assert fired(t, "ai_cpu") is fires


def tensor_core_table(eligible_share, capability):
    elig = int(eligible_share * STEP)
    return table([step(), ev("aten::mm", K.CPU_OP, 0, 10_000, external_id=1),
                  ev("aten::relu", K.CPU_OP, 20_000, 10_000, external_id=2),
                  ev("sgemm_128x64_nn", K.KERNEL, 0, elig, external_id=1),
                  ev("relu_kernel", K.KERNEL, elig, STEP - elig, external_id=2)],
                 devices=[{"kind": "cuda", "index": 0, "compute_capability": str(capability)}])


@pytest.mark.parametrize("side,fires", SIDES)
def test_tensor_cores_unused_share(side, fires):
    rule = "tensor_cores_unused"
    t = tensor_core_table(THRESHOLDS[rule][0] + (MARGIN if side == "above" else -MARGIN), THRESHOLDS[rule][1])
    assert fired(t, rule) is fires


@pytest.mark.parametrize("capability,fires", [(THRESHOLDS["tensor_cores_unused"][1], True),
                                              (THRESHOLDS["tensor_cores_unused"][1] - 0.1, False)])
def test_tensor_cores_unused_needs_volta(capability, fires):
    t = tensor_core_table(0.5, capability)
    assert fired(t, "tensor_cores_unused") is fires


def test_every_threshold_here_is_a_registered_rule():
    """A rule renamed or dropped from the engine (analysis/rules) fails here; the rules without a
    boundary case in this file are covered by the real workloads of tests/test_rules_*.py."""
    from canning_tb.analysis.rules import RULES
    assert set(THRESHOLDS) <= set(RULES)


# The four below were inverted by mutation testing (`<` for `>`) with no test at either side (docs/mutants.md).
GIB = 2 ** 30


@pytest.mark.parametrize("alloc,reserved,fires", [
    (GIB, int(1.6 * GIB), True),                        # 1.6x the peak allocated, 614 MiB more
    (GIB, int(1.4 * GIB), False),                       # 1.4x: under the ratio
    (100 * 2 ** 20, 300 * 2 ** 20, False),              # 3x, but only 200 MiB more
])
def test_fragmentation(alloc, reserved, fires):
    mem = [dict(ts=10, device="cuda:0", bytes=alloc, addr=1, allocated=alloc, reserved=reserved),
           dict(ts=20, device="cuda:0", bytes=-alloc, addr=1, allocated=0, reserved=reserved)]
    t = table([step(), ev("aten::empty", K.CPU_OP, 0, 100)], memory=mem,
              devices=[{"kind": "cuda", "index": 0, "memory": 80 * GIB}])
    ratio, more = reserved / alloc, reserved - alloc
    assert fires is (ratio > THRESHOLDS["fragmentation"][0] and more >= THRESHOLDS["fragmentation"][1])
    assert fired(t, "fragmentation") is fires


def packets_table(small_calls: int, small_share: float):
    """Small all-reduces of 4 KiB, 30 µs each, then one of 4 MiB whose time makes the small calls'
    share of the communication time `small_share`; nothing overlaps them (all of it is not hidden)."""
    small_ns = 30_000
    big_ns = int(small_calls * small_ns * (1 - small_share) / small_share)
    nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    calls = [ev(nccl, K.COMM_KERNEL, 10_000 + 40_000 * i, small_ns, bytes=4096) for i in range(small_calls)]
    calls.append(ev(nccl, K.COMM_KERNEL, 10_000 + 40_000 * small_calls, big_ns, bytes=4 * 2 ** 20))
    return table([step()] + calls)


@pytest.mark.parametrize("small_calls,side,fires", [(5, "above", True), (5, "below", False), (4, "above", False)])
def test_small_packets(small_calls, side, fires):
    threshold, _, repeats = THRESHOLDS["small_packets"]
    t = packets_table(small_calls, threshold + (MARGIN if side == "above" else -MARGIN))
    assert fires is (small_calls >= repeats and side == "above")
    assert fired(t, "small_packets") is fires


@pytest.mark.parametrize("side,fires", SIDES)
def test_gc_pauses(side, fires):
    """Two pauses of the same length, their mean 10 µs above or below 1 ms, in a 10 ms step."""
    pause = THRESHOLDS["gc_pauses"] + (MARGIN if side == "above" else -MARGIN) * STEP
    t = table([step(10 * STEP), ev("GC", K.USER_ANNOTATION, STEP, int(pause)),
               ev("GC", K.USER_ANNOTATION, 5 * STEP, int(pause)), ev("gemm", K.KERNEL, 0, 9 * STEP)])
    assert fired(t, "gc_pauses") is fires


@pytest.mark.parametrize("computing,fires", [
    ((100e6, 160e6), True),   # (160 - 100) / 130 = 46 %; the slow stage 30 ms above the mean, over 5 % of 200 ms
    ((100e6, 104e6), False),  # (104 - 100) / 102 = 3.9 %
])
def test_stage_imbalance(computing, fires):
    """Two pipeline stages of one rank each (CANN's figures: no per-step rows, so no noise floor)."""
    from types import SimpleNamespace

    from canning_tb.analysis.rules.cluster_rules import stage_imbalance
    ranks = [{"rank": r, "computing_ns": c, "p2p_wait_ns": 1e6, "step_ns": 200e6, "source": "step_trace_time.csv"}
             for r, c in enumerate(computing)]
    par = SimpleNamespace(pipeline=True, stages=[[0], [1]], source="send / receive calls")
    assert fires is ((max(computing) - min(computing)) / (sum(computing) / 2) > STAGE_IMBALANCE)
    found = stage_imbalance({"ranks": ranks}, par)
    assert [f.rule for f in found] == (["stage_imbalance"] if fires else [])
    if fires:
        assert found[0].gain_ns == 30e6 and found[0].evidence[0].rank == 1


def matmul_window(shapes: str, device: str = "cuda"):
    """aten::mm, 90 % of the operators' device self time, its 10 calls of one input shape (Kineto's
    "Input Dims" text); one kernel, so the window has device work."""
    from canning_tb.analysis import digest_pb2 as pb
    d = pb.Digest()
    d.window.devices.add(kind=device, index=0)
    d.window.format = "ascend" if device == "npu" else "kineto"
    d.average.total_ns = d.average.compute_ns = 1000
    d.kernels_by_name.add(name="gemm", calls=10, total_ns=900)
    d.ops_by_name.add(name="aten::mm", calls=10, device_self_ns=900)
    d.ops_by_name.add(name="aten::relu", calls=10, device_self_ns=100)
    d.ops_by_shape.add(name="aten::mm", calls=10, device_self_ns=900, input_shapes=shapes)
    return d


# written after mutation testing (docs/mutants.md): which dims make a matmul unaligned, by hand. A dim is
# unaligned when it is one of the last two of a matrix (2 or more dims) input, above 1, not a multiple of 8
# (GPU; 16 on the NPU's cube units)
@pytest.mark.parametrize("shapes,device,unaligned", [
    ("[[64, 128], [128, 256]]", "cuda", False),
    ("[[64, 100], [100, 256]]", "cuda", True),
    ("[[3, 64, 128], [3, 128, 64]]", "cuda", False),   # a batch dim of 3 is no matrix dim
    ("[[1, 128], [128, 256]]", "cuda", False),         # a dim of 1: a vector, nothing to align
    ("[[2, 128], [128, 256]]", "cuda", True),          # 2 is not a multiple of 8
    ("[[100], [64, 128]]", "cuda", False),             # a 1-D input (bias) is no matrix
    ("[]", "cuda", False),                             # no shapes recorded
    ("[[64, 24], [24, 64]]", "cuda", False),           # 24 = 3 x 8
    ("[[64, 24], [24, 64]]", "npu", True),             # but not a multiple of 16
])
def test_matmul_alignment_dims(shapes, device, unaligned):
    from canning_tb.analysis.rules.compute_rules import matmul_alignment
    from canning_tb.analysis.rules.engine import RuleInput
    f = matmul_alignment(RuleInput(matmul_window(shapes, device)))
    assert (f is not None) is unaligned
    if unaligned:
        assert f.figures["align"] == (16 if device == "npu" else 8) and f.figures["unaligned_call_share"] == 1.0


def test_fusion_time_is_the_matched_operators_device_total():
    """fusable_ops on a window with device work times the matched operators by their device total: their
    own kernels and those of the operators inside them (here a copy_ inside each mul), by hand. One step of
    20 us; 5 times silu (a 100 ns kernel) then mul (its own 200 ns kernel and its copy_'s 300 ns one):
    5 x (100 + 200 + 300) = 3000 ns per step. Over the device self time it would be 5 x 300 = 1500 ns."""
    events = [ev("ProfilerStep#1", K.USER_ANNOTATION, 0, 20_000)]
    corr = 0
    for i in range(5):
        t0 = 1000 + i * 3000
        for name, start, dur, kernel, at, kdur in (("aten::silu", t0, 1000, "silu_kernel", t0 + 300, 100),
                                                   ("aten::mul", t0 + 1000, 1500, "mul_kernel", t0 + 1200, 200),
                                                   ("aten::copy_", t0 + 1500, 500, "copy_kernel", t0 + 1700, 300)):
            corr += 1
            events += [ev(name, K.CPU_OP, start, dur),
                       ev("cudaLaunchKernel", K.RUNTIME, start + 50, 20, correlation=corr),
                       ev(kernel, K.KERNEL, at, kdur, correlation=corr)]
    (hit,) = [h for h in build_digest(table(events)).rule_hits if h.rule == "fusable_swiglu"]
    assert hit.figures["occurrences"] == 5
    assert hit.figures["matched_ns_matched"] == 5 * (100 + 200 + 300)
