"""The compute rules' findings where mutation showed them unread (issue 46, docs/mutants.md "What was run on the rules'
bodies": compute_rules): the dominant family's advice per family and vendor, and the branches of the six rules that
test_rules_findings.py does not reach. Each digest is made by hand; every expected value is worked out in the
docstring from the numbers written in the test (times in ns, two steps of 1 ms unless said).
"""

import numpy as np
import pytest

from _synthetic import ev, table
from test_rules_findings import found as found_all

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.kernels import CORE_ELIGIBLE, CORE_TENSOR
from canning_tb.analysis.rules import compute_rules
from canning_tb.analysis.rules.engine import RuleInput
from canning_tb.ingest.table import Kind as K

MS = 1_000_000
AUTOCAST_CUDA = "torch.autocast('cuda', dtype=torch.bfloat16 / float16)"
AUTOCAST_ANY = "torch.autocast(device_type, dtype=torch.bfloat16 / float16)"
AUTOCAST_NPU = "torch.autocast('npu', dtype=torch.float16 / bfloat16)"
TF32 = "TF32 for the fp32 matmuls (torch.backends.cuda.matmul.allow_tf32 = True)"
TUNABLEOP = "PYTORCH_TUNABLEOP_ENABLED=1, so that PyTorch picks the fastest rocBLAS / hipBLASLt GEMM"
DIMS = "dimensions that are multiples of 8 (16 for fp8 / int8)"
CHANNELS_LAST = "channels_last memory format (model.to(memory_format=torch.channels_last))"


def digest(*kernels, kind="cuda", cc="8.0", steps=2) -> pb.Digest:
    """Kernels: (name, total_ns, family), one call each; `kind` "" for a window that names no device."""
    d = pb.Digest()
    for n in range(steps):
        d.steps.add(number=n + 1, start_ns=n * MS, dur_ns=MS)
    d.average.total_ns = MS
    if kind:
        d.window.devices.add(kind=kind, compute_capability=cc, name="dev")
    for name, total, family in kernels:
        d.kernels_by_name.add(name=name, calls=1, total_ns=total, max_ns=total, family=family)
    return d


def call(name, d):
    out = getattr(compute_rules, name)(RuleInput(d))
    assert out is None or (out.rule, out.category) == ("", "")  # the runner fills them in
    return out


def advice(*kernels, **kw) -> tuple[str, str]:
    f = call("dominant_kernel_family", digest(*kernels, **kw))
    return f.change_torch, f.change_npu


# -- dominant_kernel_family: the advice per family and vendor (docs/rules.md "Classification", "Advice withheld") ---

def test_fp32_matmuls_on_an_ampere_get_autocast_tf32_and_the_dims():
    """sgemm 600 of 1000 µs (60 %, above 30 %) on cc 8.0, the first with TF32: autocast, TF32, the dims."""
    assert advice(("sgemm_128x64_nn", 600_000, "matmul"), ("relu", 400_000, "elementwise")) == (
        f"lower precision ({AUTOCAST_CUDA}); {TF32}; {DIMS}", f"{AUTOCAST_NPU}; dimensions that are multiples of 16")


@pytest.mark.parametrize("cc,tf32_kernel", [("7.5", ""), ("8.0", "cutlass_80_tensorop_s1688gemm_64x64"),
                                            ("9.0", "ampere_tf32_gemm")])
def test_no_tf32_before_ampere_or_where_a_tf32_kernel_runs(cc, tf32_kernel):
    """Turing (7.5) has no TF32; an s1688gemm or tf32 kernel anywhere in the window says TF32 runs already (it is
    40 µs, 4 % of the kernels, so the matmuls stay the family at 600 / 1040 µs)."""
    extra = [(tf32_kernel, 40_000, "elementwise")] if tf32_kernel else []
    assert advice(("sgemm_128x64_nn", 600_000, "matmul"), ("relu", 400_000, "elementwise"), *extra, cc=cc)[0] == (
        f"lower precision ({AUTOCAST_CUDA}); {DIMS}")


@pytest.mark.parametrize("bf16_ns,low", [(300_000, True), (299_999, False)])
def test_matmuls_half_in_bf16_get_no_autocast(bf16_ns, low):
    """bf16 kernels 300 of the family's 600 µs: exactly half runs below fp32 (LOW_PRECISION_SHARE 0.5, "at least"):
    no autocast and no TF32; 1 ns less and both come back."""
    f32_ns = 600_000 - bf16_ns
    torch, npu = advice(("ampere_bf16_gemm_128x128", bf16_ns, "matmul"), ("sgemm_128x64_nn", f32_ns, "matmul"),
                        ("relu", 400_000, "elementwise"))
    if low:
        assert (torch, npu) == (DIMS, "dimensions that are multiples of 16")
    else:
        assert (torch, npu) == (f"lower precision ({AUTOCAST_CUDA}); {TF32}; {DIMS}",
                                f"{AUTOCAST_NPU}; dimensions that are multiples of 16")


def test_matmuls_on_amd_get_tunableop_and_no_tf32():
    """A ROCm device: autocast on 'cuda' (HIP's device type), TunableOp, the dims; no NVIDIA setting."""
    assert advice(("Cijk_Alik_Bljk_SB_MT128x128", 600_000, "matmul"), ("relu", 400_000, "elementwise"),
                  kind="rocm", cc="")[0] == f"lower precision ({AUTOCAST_CUDA}); {TUNABLEOP}; {DIMS}"


@pytest.mark.parametrize("kind", ["", "npu"])
def test_matmuls_on_another_device_get_the_generic_autocast(kind):
    """No device described (a sampled trace: vendor "gpu"), or the NPU: torch.autocast(device_type, ...)."""
    assert advice(("gemm", 600_000, "matmul"), ("relu", 400_000, "elementwise"), kind=kind)[0] == (
        f"lower precision ({AUTOCAST_ANY}); {DIMS}")


@pytest.mark.parametrize("kind,bench,cast", [
    ("cuda", "torch.backends.cudnn.benchmark = True", AUTOCAST_CUDA),
    ("rocm", "torch.backends.cudnn.benchmark = True (MIOpen then searches its solvers)", AUTOCAST_CUDA),
])
def test_convolutions_get_channels_last_the_benchmark_and_autocast(kind, bench, cast):
    assert advice(("implicit_convolve_sgemm", 600_000, "convolution"), ("relu", 400_000, "elementwise"), kind=kind) == (
        f"{CHANNELS_LAST}, {bench}, {cast}", f"{AUTOCAST_NPU}; keep the NC1HWC0 format (no TransData)")


def test_convolutions_elsewhere_and_in_half_precision():
    """No device described: no cuDNN benchmark; fp16 convolutions (all of the family): no autocast on either side."""
    assert advice(("conv2d_kernel", 600_000, "convolution"), ("relu", 400_000, "elementwise"), kind="")[0] == (
        f"{CHANNELS_LAST}, {AUTOCAST_ANY}")
    assert advice(("conv_fp16_kernel", 600_000, "convolution"), ("relu", 400_000, "elementwise")) == (
        f"{CHANNELS_LAST}, torch.backends.cudnn.benchmark = True", "keep the NC1HWC0 format (no TransData)")


def test_a_fused_attention_is_named_by_its_longest_fused_kernel():
    """flash_fwd 300 µs and fmha 200 µs are fused; the unfused softmax_kernel (350 µs) is the family's largest but
    not fused. Named: the 300 µs one, cut at its "(" and to 80 characters (its name before "(" is 90)."""
    long_name = "flash_fwd_kernel_" + "x" * 73  # 17 + 73 = 90 characters
    torch, npu = advice((long_name + "(Params)", 300_000, "attention"), ("fmha_cutlassF_f16", 200_000, "attention"),
                        ("softmax_kernel", 350_000, "attention"), ("relu", 150_000, "elementwise"))
    assert torch == (f"the attention runs fused kernels already ({long_name[:80]}): pack variable-length sequences so "
                     "that no padding is computed, and use a causal / sliding-window mask where the model allows")
    assert npu == ""
    short, _ = advice(("flash_fwd_kernel(Params)", 600_000, "attention"), ("relu", 400_000, "elementwise"))
    assert short.startswith("the attention runs fused kernels already (flash_fwd_kernel): ")


def test_a_written_out_attention_is_told_to_use_the_fused_apis():
    assert advice(("softmax_kernel", 600_000, "attention"), ("relu", 400_000, "elementwise")) == (
        "torch.nn.functional.scaled_dot_product_attention with a flash / memory-efficient kernel",
        "torch_npu.npu_fusion_attention")


@pytest.mark.parametrize("family,torch", [
    ("copy / layout", "fewer copies: avoid .contiguous() / .to() in the loop, keep one memory format"),
    ("optimizer", "a fused or multi-tensor optimizer: torch.optim.AdamW(..., fused=True) or foreach=True"),
    ("elementwise", "fuse the small operators (torch.compile)"),
])
def test_the_other_families_get_their_own_advice(family, torch):
    assert advice(("k", 600_000, family), ("gemm", 400_000, "matmul"))[0] == torch


# -- tensor_cores_unused: which datasheet peaks bound its gain, and its edit of the graph -------------------------------

def eligible_digest(*peaks) -> pb.Digest:
    """Eligible kernels 600 of 1000 µs on a cc 8.0 GPU, none on Tensor Cores, two steps: 300 µs a step (under the 400
    µs the device computed); `peaks`: (kind, {precision: TFLOP/s})."""
    d = digest()
    d.average.compute_ns = 400_000
    for core, ns in ((CORE_ELIGIBLE, 600_000), (CORE_TENSOR, 0), ("Other", 400_000)):
        d.cores.add(core=core, total_ns=ns)
    for kind, tflops in peaks:
        p = d.roofline.peaks.add(kind=kind)
        for k, v in tflops.items():
            p.tflops[k] = v
    return d


A100 = ("cuda", {"fp32": 19.5, "fp16": 312.0})


def test_only_a_cuda_peak_with_both_figures_and_fp16_above_fp32_bounds_the_gain():
    """The A100's 19.5 / 312 keeps 6.25 %: 300 µs x 0.9375 = 281.25 -> 281 µs a step. Left out: a ROCm peak (1 / 100),
    a CUDA peak without fp32, one without fp16 (40, and 0.5), one whose fp16 is no faster (10 / 10)."""
    others = [("rocm", {"fp32": 1.0, "fp16": 100.0}), ("cuda", {"fp16": 100.0}), ("cuda", {"fp32": 40.0}),
              ("cuda", {"fp32": 0.5}), ("cuda", {"fp32": 10.0, "fp16": 10.0})]
    f = call("tensor_cores_unused", eligible_digest(A100, *others))
    assert f.gain_ns == 281_250
    assert "less the 6.2% of it that remains" in f.gain_basis
    alone = call("tensor_cores_unused", eligible_digest(*others))  # none usable: the whole 300 µs, said so
    assert (alone.gain_ns, alone.gain_basis) == (300_000, "the eligible kernels' time per step, of which Tensor "
                                                          "Cores would save a large part")


def test_a_small_gpus_peaks_under_one_tflops_still_count():
    """fp32 0.5 / fp16 16 TFLOP/s keeps 3.125 %, the lower ratio: 300 µs x 0.96875 = 290.625 -> 290 µs a step."""
    assert call("tensor_cores_unused", eligible_digest(A100, ("cuda", {"fp32": 0.5, "fp16": 16.0}))).gain_ns == 290_625


A100_DEVICE = [{"kind": "cuda", "index": 0, "compute_capability": "8.0", "name": "NVIDIA A100-SXM4-80GB",
                "memory": 80 * 2**30}]


def found(t, monkeypatch) -> dict:
    """{rule: Finding} as the rules made them, before claims.settle: test_rules_findings' reading, the last of each."""
    return {rule: made[-1] for rule, made in found_all(t, monkeypatch).items()}


def test_the_eligible_kernels_are_replayed_at_the_tensor_core_rate(monkeypatch):
    """Two steps, each an aten::mm launching a 300 µs sgemm (fp32, no Tensor Core); an A100 80GB SXM4 (datasheet fp32
    19.5, fp16 312 TFLOP/s): the edit scales the two sgemm rows to 6.25 % of their time."""
    t = table([ev("ProfilerStep#1", K.USER_ANNOTATION, 0, MS), ev("ProfilerStep#2", K.USER_ANNOTATION, MS, MS),
               ev("aten::mm", K.CPU_OP, 0, 100_000, external_id=1),
               ev("sgemm_128x64_nn", K.KERNEL, 100_000, 300_000, external_id=1),
               ev("aten::mm", K.CPU_OP, MS, 100_000, external_id=2),
               ev("sgemm_128x64_nn", K.KERNEL, MS + 100_000, 300_000, external_id=2),
               ev("aten::relu", K.CPU_OP, 500_000, 10_000, external_id=3),
               ev("relu_kernel", K.KERNEL, 500_000, 100_000, external_id=3)], devices=A100_DEVICE)
    f = found(t, monkeypatch)["tensor_cores_unused"]
    sgemm = np.flatnonzero(t.events["name"] == t.strings.find("sgemm_128x64_nn"))  # the table's own rows
    assert len(sgemm) == 2
    assert ([int(r) for r in f.scale[0]], f.scale[1]) == (sgemm.tolist(), pytest.approx(19.5 / 312))
    assert f.edit == "the eligible kernels at the Tensor Cores' rate (6.2% of their time)"
    assert f.gain_ns == 281_250  # 300 µs a step x (1 - 0.0625)


# -- compilation ------------------------------------------------------------------------------------------------------

COMPILE = "torch/_dynamo/convert_frame.py: compile_inner"


def compile_window(*events, start=10 * MS):
    """Two steps of 1 ms from `start` (the window starts there, not at 0), a kernel over both."""
    return table([ev("ProfilerStep#1", K.USER_ANNOTATION, start, MS), ev("ProfilerStep#2", K.USER_ANNOTATION,
                                                                           start + MS, MS),
                  ev("gemm", K.KERNEL, start, 2 * MS), *events])


def test_compilation_in_a_window_that_starts_later_in_whole_ns(monkeypatch):
    """Window 10-12 ms; compile ranges of 100 µs and 200.001 µs: 300.001 µs, 15.00005 % of 2 ms, 150.000 µs a step
    (whole ns, rounded down)."""
    f = found(compile_window(ev(COMPILE, K.USER_ANNOTATION, 10_100_000, 100_000),
                             ev(COMPILE, K.USER_ANNOTATION, 11 * MS, 200_001)), monkeypatch)["compilation"]
    assert (f.value, f.gain_ns, f.figures["compile_ns"]) == (pytest.approx(300_001 / 2 / MS), 150_000, 300_001)
    assert type(f.gain_ns) is int


def test_compilation_of_exactly_five_percent_is_quiet_and_above_it_fires(monkeypatch):
    """100 µs of a 2 ms window is 5 % exactly (COMPILE_SHARE, "above"): quiet; 1 ns more fires."""
    at = compile_window(ev(COMPILE, K.USER_ANNOTATION, 10_100_000, 100_000))
    assert "compilation" not in found(at, monkeypatch)
    above = compile_window(ev(COMPILE, K.USER_ANNOTATION, 10_100_000, 100_001))
    assert found(above, monkeypatch)["compilation"].value == pytest.approx(100_001 / 2 / MS)


@pytest.mark.parametrize("calls,fires", [(20, True), (19, False)])
def test_twenty_operator_compiles_fire_under_five_percent(monkeypatch, calls, fires):
    """aclopCompile calls of 1 µs each (20 µs at most, 1 % of the window): 20 of them fire (OP_COMPILE_CALLS, "at
    least"), 19 do not."""
    t = compile_window(*[ev("aclopCompileAndExecute", K.RUNTIME, 10_100_000 + i * 10_000, 1_000) for i in range(calls)])
    f = found(t, monkeypatch).get("compilation")
    assert (f is not None) == fires
    if fires:
        assert (f.figures["compile_events"], f.figures["compile_ns"]) == (20, 20_000)


@pytest.mark.parametrize("start,end", [(0, 0), (0, 10), (5 * MS, 5 * MS)])
def test_compilation_on_a_digest_alone_finds_nothing(start, end):
    """No events, no compilation, whatever the window (even one of 0 or 10 ns)."""
    d = digest()
    d.window.start_ns, d.window.end_ns = start, end
    assert call("compilation", d) is None


# -- dominant_kernel_family: which kernels count, the family that wins, its threshold -----------------------------------

def test_kernels_of_no_time_are_not_members_and_a_kernel_of_one_ns_is():
    """matmul: 400 µs, 200 µs + 1 ns, and a 0 ns kernel left out: 3 kernels, 600.001 of 1000.001 µs; per step
    600,001 // 2 = 300,500 ns, written 0.300 ms (300,500.5 would be 0.301 ms)."""
    f = call("dominant_kernel_family", digest(("sm80_gemm", 400_000, "matmul"), ("cutlass_gemm", 200_000, "matmul"),
                                              ("gemv", 1, "matmul"), ("empty_gemm", 0, "matmul"),
                                              ("relu", 400_000, "elementwise")))
    assert f.seen == "matmul kernels take 60.0% of the kernel time (3 kernels; largest sm80_gemm)."
    assert (f.value, f.at_most_ns) == (pytest.approx(600_001 / 1_000_001), 300_000)
    assert f.gain_basis == "depends on their efficiency; at most 0.300 ms per step"
    odd = call("dominant_kernel_family", digest(("gemm", 601_001, "matmul"), ("relu", 399_000, "elementwise")))
    assert (odd.at_most_ns, odd.gain_basis) == (300_500, "depends on their efficiency; at most 0.300 ms per step")


def test_one_kernel_of_one_ns_is_all_of_the_kernel_time():
    """The only kernel, 1 ns: its family is 100 % of the kernel time."""
    f = call("dominant_kernel_family", digest(("gemm", 1, "matmul")))
    assert (f.title, f.value) == ("matmul kernels dominate the device time", 1.0)


def test_the_family_with_the_most_time_wins_whatever_its_name():
    """attention 600 µs, matmul 400 µs: attention (60 %), though "matmul" sorts after it."""
    f = call("dominant_kernel_family", digest(("softmax_attn", 600_000, "attention"), ("gemm", 400_000, "matmul")))
    assert (f.title, f.value) == ("attention kernels dominate the device time", pytest.approx(0.6))


@pytest.mark.parametrize("kernels", [
    [("gemm", 300_000, "matmul"), ("relu", 250_000, "elementwise"), ("copy", 250_000, "copy / layout"),
     ("norm", 200_000, "normalization")],  # matmul 300 of 1000 µs: exactly 30 %, "above" the threshold
    [("mystery", 600_000, "other"), ("gemm", 400_000, "matmul")],  # "other" wins at 60 %: nothing to advise
    [("allreduce", 600_000, "communication"), ("gemm", 400_000, "matmul")],  # communication not flagged as such
])
def test_no_finding_at_the_threshold_or_for_other_or_communication(kernels):
    assert call("dominant_kernel_family", digest(*kernels)) is None


# -- tiny_kernels and ai_cpu: their words with their numbers, their gain in whole ns -------------------------------------

def test_tiny_kernels_writes_the_mean_in_microseconds():
    """1000 calls of 9.05 µs on average (9.05 ms): written 9.1 us (9.05 / 1.001 would be 9.0)."""
    d = digest()
    d.kernels_by_name.add(name="relu", calls=1000, total_ns=9_050_000)
    f = call("tiny_kernels", d)
    assert f.seen == "1000 kernels with a mean of 9.1 us each (Kernels: Mean Duration)."
    assert (f.severity, f.title, f.view, f.figure) == ("info", "Many tiny kernels", "kernels", "kernel_mean")


def test_ai_cpu_writes_the_longest_task_and_a_whole_ns_gain():
    """One AI_CPU operator, 3 calls, 75,001 ns in all, the longest 25.05 µs (written 25.1 us), over two steps:
    37,500 ns a step (whole ns, rounded down)."""
    d = digest()
    d.kernels_by_name.add(name="Unique", calls=3, total_ns=75_001, max_ns=25_050, core="AI_CPU")
    f = call("ai_cpu", d)
    assert f.seen == "1 operators run as AI_CPU tasks of at least 20 us (longest Unique, 25.1 us): Unique."
    assert f.gain_ns == 37_500 and type(f.gain_ns) is int


def test_no_eligible_row_is_no_eligible_time():
    """Kernels by core: Tensor Cores 0 and Other 1000 µs, no eligible row: nothing to say."""
    d = digest()
    d.cores.add(core=CORE_TENSOR, total_ns=0)
    d.cores.add(core="Other", total_ns=MS)
    assert call("tensor_cores_unused", d) is None


def test_the_eligible_time_per_step_is_whole_ns_and_bounded_by_compute_and_overlap():
    """600,003 ns over two steps: 300,001 a step (not 300,001.5); x 0.9375 = 281,250.94 -> 281,250 (281,251 from the
    half ns). The device computed 150 µs and overlapped 100 µs a step: 250 µs bound, x 0.9375 = 234,375."""
    d = eligible_digest(A100)
    d.cores[0].total_ns = 600_003
    assert call("tensor_cores_unused", d).gain_ns == 281_250
    d = eligible_digest(A100)
    d.average.compute_ns, d.average.overlapped_ns = 150_000, 100_000
    assert call("tensor_cores_unused", d).gain_ns == 234_375


# -- matmul_alignment: what it judges, its thresholds, its words -----------------------------------------------------

ALIGN_ROWS = (("aten::mm", "[[30, 64], [64, 64]]", 1), ("aten::mm", "[[64, 100], [100, 64]]", 2),
              ("aten::mm", "[[64, 64], [64, 64]]", 7))


def align_digest(rows=ALIGN_ROWS, mm_ns=600_000, other_ns=400_000, kernels=(("gemm", 600_000, "matmul"),), tc=-1.0,
                 device=True):
    """aten::mm `mm_ns` and aten::relu `other_ns` of self time (device, or host where `device` is False: then no kernel
    and no device time at all); by shape `rows` (name, shapes, calls), each call 10 µs."""
    d = digest(*(kernels if device else ()), kind="cuda" if device else "")
    d.gpu_efficiency.add(tensor_core_share=tc)
    metric = "device_self_ns" if device else "host_self_ns"
    for name, ns in (("aten::mm", mm_ns), ("aten::relu", other_ns)):
        d.ops_by_name.add(name=name, calls=10, **{metric: ns})
    for name, shapes, calls in rows:
        d.ops_by_shape.add(name=name, input_shapes=shapes, calls=calls, **{metric: 10_000 * calls})
    return d


def test_only_matmul_rows_with_shapes_are_counted():
    """3 of the 10 shaped aten::mm calls are unaligned (30 %); a relu's [[3, 5]] (10 calls) and an aten::mm row with
    no shapes (10 calls) are not matmul calls with shapes: still 30 %."""
    rows = ALIGN_ROWS + (("aten::relu", "[[3, 5]]", 10), ("aten::mm", "", 10))
    assert call("matmul_alignment", align_digest(rows)).value == pytest.approx(0.3)


@pytest.mark.parametrize("mm_ns,other_ns,fires", [(100_000, 900_000, False), (100_001, 900_000, True)])
def test_matmuls_of_exactly_ten_percent_are_not_judged(mm_ns, other_ns, fires):
    """100 of 1000 µs of self time is 10 % (MATMUL_SHARE, "above"): quiet; 1 ns more is judged."""
    assert (call("matmul_alignment", align_digest(mm_ns=mm_ns, other_ns=other_ns)) is not None) == fires


def test_a_window_without_device_work_is_left_to_needs_device():
    """The same shapes and shares on the host only (no kernel, no device time): not judged here."""
    assert call("matmul_alignment", align_digest(device=False)) is None


@pytest.mark.parametrize("unaligned,fires", [(2, False), (3, True)])
def test_unaligned_calls_of_exactly_twenty_percent_are_quiet(unaligned, fires):
    """2 of 10 calls unaligned is 20 % (UNALIGNED_CALL_SHARE, "above"): quiet; 3 of 10 fire."""
    rows = (("aten::mm", "[[30, 64], [64, 64]]", unaligned), ("aten::mm", "[[64, 64], [64, 64]]", 10 - unaligned))
    assert (call("matmul_alignment", align_digest(rows)) is not None) == fires


PAD = "pad hidden sizes, vocabulary and batch to multiples of 8 (64 is safer)"
PAD_NPU = "pad to multiples of 16 (the inner axis to 256 for cube affinity)"


@pytest.mark.parametrize("kernels,low", [
    # matmul kernels half in bf16 (300 of 600 µs: LOW_PRECISION_SHARE, "at least"), beside a larger fp32 relu
    ((("ampere_bf16_gemm", 300_000, "matmul"), ("sgemm_nn", 300_000, "matmul"), ("relu", 900_000, "elementwise")), True),
    ((("ampere_bf16_gemm", 299_999, "matmul"), ("sgemm_nn", 300_001, "matmul"), ("relu", 900_000, "elementwise")), False),
    ((("conv_bf16_kernel", 600_000, "convolution"), ("relu", 900_000, "elementwise")), True),
])
def test_matrix_kernels_in_low_precision_get_no_autocast(kernels, low):
    """Tensor Core share unknown, no TF32 kernel: autocast is asked for unless the matmul / convolution kernels run
    below fp32 for at least half their time (the relu's fp32 time is not theirs)."""
    f = call("matmul_alignment", align_digest(kernels=kernels))
    if low:
        assert (f.change_torch, f.change_npu) == (f"{PAD}.", f"{PAD_NPU}.")
        assert f.why == ("Unaligned dimensions fall back to slower kernels or padding: Tensor Cores want dims that are "
                         "multiples of 8 (fp16 / bf16; 16 for int8).")
    else:
        assert (f.change_torch, f.change_npu) == (
            f"{PAD}, and run matmuls under torch.autocast (float16 / bfloat16).",
            f"{PAD_NPU} and use torch.autocast('npu', dtype=torch.float16 / bfloat16).")


def test_tensor_cores_running_without_a_narrow_kernel_name_none():
    """Tensor Cores run 25 % of the kernel time, no *_align1 / _align2 kernel: the narrow-load words, no kernel named."""
    f = call("matmul_alignment", align_digest(tc=0.25))
    assert f.why == ("Unaligned dimensions fall back to slower kernels or padding: Tensor Core kernels run (25.0% of the "
                     "kernel time, Overview), but unaligned operands get kernels with narrow memory access.")


def test_a_narrow_kernel_is_named_before_its_arguments_and_to_80_characters():
    """The kernel's name before "(" is 100 characters (29 + 70 + 1): its first 80 are named."""
    name = "cutlass_tensorop_gemm_align1<" + "y" * 70 + ">"
    f = call("matmul_alignment", align_digest(kernels=((name + "(Params p)", 600_000, "matmul"),), tc=0.25))
    assert f.why.endswith(f"kernels with narrow memory access ({name[:80]}...).")
    assert f.evidence[-1].row == name + "(Params p)"


@pytest.mark.parametrize("cores", [
    {CORE_ELIGIBLE: 600_000, CORE_TENSOR: 100, "Other": 400_000},  # Tensor Cores run (100 ns): nothing to say
    {CORE_ELIGIBLE: 0, CORE_TENSOR: 0, "Other": 0},  # no kernel time at all
    {CORE_ELIGIBLE: 100_000, CORE_TENSOR: 0, "Other": 900_000},  # eligible 10 % exactly (TC_ELIGIBLE_SHARE, "above")
])
def test_tensor_cores_unused_is_quiet_when_they_run_or_nothing_is_eligible_enough(cores):
    d = digest()
    for core, ns in cores.items():
        d.cores.add(core=core, total_ns=ns)
    assert call("tensor_cores_unused", d) is None


def test_tensor_cores_unused_judges_no_device_that_is_not_cuda():
    """The same 60 % eligible kernels with no CUDA device described: no compute capability, nothing judged."""
    d = eligible_digest(A100)
    del d.window.devices[:]
    assert call("tensor_cores_unused", d) is None


def test_matmul_alignment_names_three_shapes_one_narrow_kernel_and_its_time_in_whole_ns():
    """Four unaligned shapes (1 call each) of 10; two *_align1 kernels (cut at "("); matmuls 601,001 ns over two steps:
    300,500 ns a step, written 0.300 ms (300,500.5 would be 0.301)."""
    rows = tuple(("aten::mm", f"[[{n}, 64], [64, 64]]", 1) for n in (30, 31, 33, 35)) + (
        ("aten::mm", "[[64, 64], [64, 64]]", 6),)
    kernels = (("gemm_align1(Params)", 400_000, "matmul"), ("gemm_align2", 201_001, "matmul"))
    f = call("matmul_alignment", align_digest(rows, mm_ns=601_001, kernels=kernels, tc=0.25))
    assert [e.view for e in f.evidence] == ["operators"] * 3 + ["kernels"]
    assert f.why.endswith("kernels with narrow memory access (gemm_align1...).")
    assert (f.at_most_ns, f.gain_basis) == (300_500, "at most the matmul time, 0.300 ms per step")
    assert type(f.at_most_ns) is int
