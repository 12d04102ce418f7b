"""rules/workload.py (whose advice applies: the vendor, training or inference, what already runs) and
rules/engine.py's device label, on digests made by hand (issue 46, mutation testing). Each expectation by hand
from docs/rules.md "Classification"."""
import pytest

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.rules import workload as wl
from canning_tb.analysis.rules.engine import RuleInput


def digest(devices=(), fmt="kineto", ops=(), kernels=()):
    d = pb.Digest()
    d.window.format = fmt
    for kind, name, cc in devices:
        d.window.devices.add(kind=kind, name=name, compute_capability=cc)
    for name in ops:
        d.ops_by_name.add(name=name)
    for name, total, family in kernels:
        d.kernels_by_name.add(name=name, total_ns=total, family=family)
    return d


@pytest.mark.parametrize("devices, fmt, kernels, label, vendor", [
    ([("cuda", "A100", "8.0")], "kineto", (), "cuda cc 8.0 A100", "nvidia"),
    ([("cpu", "x86", ""), ("rocm", "MI300X", "")], "kineto", (), "rocm MI300X", "amd"),  # the cpu is not judged
    ([("npu", "Ascend910B", "")], "ascend", (), "npu Ascend910B", "ascend"),
    ([("cuda", "", "")], "kineto", (), "cuda", "nvidia"),  # no name, no cc: no trailing space
    ([], "ascend", (), "npu", "ascend"),  # torch_npu's files without a device row
    ([], "kineto", (), "cpu", "cpu"),
    ([], "kineto", [("k", 5, "")], "cpu", "gpu"),  # kernels on a device the trace does not describe
    ([("cuda", "V100", "7.0"), ("npu", "910", "")], "kineto", (), "cuda cc 7.0 V100", "nvidia"),  # the first
])
def test_device_label_and_vendor(devices, fmt, kernels, label, vendor):
    inp = RuleInput(digest(devices, fmt, kernels=kernels))
    assert inp.device_label() == label and wl.vendor(inp) == vendor


@pytest.mark.parametrize("ops, kernels, inference", [
    (["aten::mm"], (), True),
    (["aten::conv2d", "aten::relu"], (), True),
    (["aten::_scaled_dot_product_flash_attention"], (), True),
    (["aten::relu"], (), False),  # no forward of a model: unknown is not inference
    (["aten::mm", "autograd::engine::evaluate_function: MmBackward0"], (), False),
    (["aten::mm", "MmBackward0"], (), False),
    (["aten::mm", "aten::convolution_backward"], (), False),  # also a launcher, but a backward one
    (["aten::mm", "Optimizer.step#SGD.step"], (), False),
    (["aten::mm", "optimizer.zero_grad#AdamW.zero_grad"], (), False),  # case-insensitive
    (["aten::mm"], [("multi_tensor_apply_kernel", 5, "optimizer")], False),
    (["aten::mm"], [("gemm", 5, "matmul")], True),
])
def test_inference_or_training(ops, kernels, inference):
    assert wl.is_inference(RuleInput(digest(ops=ops, kernels=kernels))) is inference


@pytest.mark.parametrize("name, low", [
    ("ampere_bf16_s16816gemm_bf16_128x64", True), ("volta_h884gemm_64x64", True),
    ("cutlass_80_tensorop_s1688gemm_fp16", True), ("MatMulV2_int8", True), ("ampere_sgemm_128x64_nn", False),
    ("void at::native::vectorized_elementwise_kernel<float>", False), ("kernel_half_t", True),
    ("nvjet_tst_e4m3_gemm", True), ("halfway_kernel", False),  # a token holding "half" is not half
])
def test_low_precision_kernel_names(name, low):
    assert wl.low_precision_kernel(name) is low


def test_low_precision_share_by_names_and_by_the_operators_dtypes():
    """Kernels: bf16 gemm 30 ns of 30 + 70 = 0.3 by name. Matrix ops: bf16 600 of 600 + 400 (fp32) = 0.6: the larger
    stands. Without operators, 0.3; without kernels or operators' time, 0."""
    d = digest(kernels=[("ampere_bf16_gemm", 30, ""), ("ampere_sgemm", 70, "")])
    ks = list(d.kernels_by_name)
    assert wl.low_precision_share(RuleInput(d), ks) == pytest.approx(0.3, abs=1e-15)
    for name, dtype, ns, matrix in (("aten::mm", "bf16", 600, True), ("aten::addmm", "fp32", 400, True),
                                    ("aten::add", "bf16", 5_000, False), ("aten::bmm", "", 9_000, True),
                                    ("aten::matmul", "fp16", 0, True)):
        o = d.ops_by_name.add(name=name)
        o.work.dtype, o.work.time_ns, o.work.matrix = dtype, ns, matrix
    assert wl.low_precision_share(RuleInput(d), ks) == pytest.approx(0.6, abs=1e-15)
    assert wl.low_precision_share(RuleInput(d), [ks[0]]) == 1.0  # the names say all of these
    assert wl.low_precision_share(RuleInput(pb.Digest()), []) == 0.0


def test_fused_attention_kernels_by_whole_tokens():
    d = digest(kernels=[("flash_fwd_kernel", 1, ""), ("FlashAttentionScore_bf16", 1, ""), ("fmha_cutlassF", 1, ""),
                        ("splash_kernel", 1, ""), ("ampere_sgemm", 1, ""), ("paged_attention_v2_kernel", 1, "")])
    assert [k.name for k in wl.fused_attention(d.kernels_by_name)] == [
        "flash_fwd_kernel", "FlashAttentionScore_bf16", "fmha_cutlassF", "paged_attention_v2_kernel"]


def test_one_nanosecond_counts():
    """A 1 ns bf16 kernel is all of the kernels' time (share 1.0, not the 0 of no time); a 1 ns bf16 matrix
    operator beside 0 ns of others is all of the operators' (1.0 over the names' 0.0 of an fp32 kernel)."""
    d = digest(kernels=[("ampere_bf16_gemm", 1, "")])
    assert wl.low_precision_share(RuleInput(d), list(d.kernels_by_name)) == 1.0
    d = digest(kernels=[("ampere_sgemm", 5, "")])
    o = d.ops_by_name.add(name="aten::mm")
    o.work.dtype, o.work.time_ns, o.work.matrix = "bf16", 1, True
    assert wl.low_precision_share(RuleInput(d), list(d.kernels_by_name)) == 1.0


def test_categories_unknown_without_the_events_split():
    """Without events (ctx None), or with events whose steps were not split (a Context before steps.breakdowns
    ran: no `categories`), a category is unknown (None), and so is any union holding it."""
    from _synthetic import ev, table

    from canning_tb.analysis.context import Context
    from canning_tb.ingest.table import Kind as K
    assert RuleInput(pb.Digest()).category("host") is None
    assert RuleInput(pb.Digest()).categories(["host", "idle"]) is None
    ctx = Context(table([ev("aten::mm", K.CPU_OP, 0, 10)]))
    d = pb.Digest(step_source="ProfilerStep")
    assert RuleInput(d, ctx).category("host") is None


def test_rule_registers_its_id_category_and_function(monkeypatch):
    from canning_tb.analysis.rules import engine
    monkeypatch.setattr(engine, "RULES", {})

    def fn(inp):
        return None
    assert engine.rule("some_id", "memory")(fn) is fn
    assert engine.RULES == {"some_id": ("memory", fn)}
