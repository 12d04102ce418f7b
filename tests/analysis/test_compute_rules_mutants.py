"""The compute rules' findings where mutation showed them unread (issue 46, docs/mutants.md "What was run on the rules'
bodies": compute_rules): the dominant family's advice per family and vendor, and the branches of the six rules that
test_rules_findings.py does not reach. Each digest is made by hand; every expected value is worked out in the
docstring from the numbers written in the test (times in ns, two steps of 1 ms unless said).
"""
import pytest

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.rules import compute_rules
from canning_tb.analysis.rules.engine import RuleInput

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
