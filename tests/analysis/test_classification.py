"""Classification by structure first (issue 39, class 3): blocking calls of every vendor are device wait,
kernels take their family from the operator that launched them, then from the profiler's category, and
only last from whole name tokens; advice fits the device and what already runs.

Expected figures come from a plain reading of the fixture's JSON in the test (gzip + json), never from
the code under test.
"""
import gzip
import json

from conftest import fixture_path

from canning_tb.analysis.build import build_digest
from canning_tb.ingest.kineto.read import read_kineto

AMD = ("hta", "amd_trace", "mi250_minitoy_train_ROCm6_2_kineto.json.gz")


def _overlap(a0, a1, spans):
    return sum(max(0.0, min(a1, b1) - max(a0, b0)) for b0, b1 in spans)


def test_amd_blocking_copy_is_device_wait_not_launch_overhead():
    """ROCm's hipMemcpyWithStream returns when the copy is done (graph/vendors.BLOCKING): its time in the
    steps is Device wait, less the part the copy itself covers on the device (Memcpy comes first in the
    breakdown's order), never Runtime. Before: Device wait 0 and the calls counted as launches."""
    path = fixture_path(*AMD)
    events = json.load(gzip.open(path))["traceEvents"]
    steps = [(e["ts"], e["ts"] + e["dur"]) for e in events
             if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("cat") == "user_annotation"]
    copies = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "gpu_memcpy"]
    calls = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name") == "hipMemcpyWithStream"]
    assert len(calls) == 2 and steps
    # each blocking call lies inside a step; what of it the device copy does not cover is device wait (us)
    inside = [c for c in calls if any(s0 <= c[0] and c[1] <= s1 for s0, s1 in steps)]
    assert len(inside) == 2
    expected_us = sum((c1 - c0) - _overlap(c0, c1, copies) for c0, c1 in inside)
    d = build_digest(read_kineto(str(path)))
    measured_ns = sum(s.breakdown.device_wait_ns for s in d.steps)
    assert abs(measured_ns - expected_us * 1000) <= 2  # ns rounding of two calls
    assert measured_ns > 50_000


def _attention_step(cast: bool):
    """A hand-written attention: bmm, scale, softmax, dropout, then (cast=True) one aten::to to fp32 before
    the second bmm, as models that run the softmax in another precision do."""
    import torch
    q, k, v = (torch.randn(4, 32, 16) for _ in range(3))

    def attention():
        p = torch.nn.functional.dropout(torch.softmax(torch.bmm(q, k.transpose(1, 2)) / 4.0, -1), 0.1)
        if cast:
            p = p.to(torch.float64).to(torch.float32)  # two real casts (a copy each way)
        return torch.bmm(p, v)

    def step():  # two layers: the rule counts from 5 occurrences in the window
        return attention(), attention()
    return step


def test_fusable_attention_tolerates_a_cast_between_dropout_and_bmm(tmp_path):
    """Before: one aten::to between dropout and bmm hid the pattern. By construction the step holds two
    attentions; _rules_workloads records ACTIVE steps; the finding counts two per step, with or without
    the casts."""
    from _rules_workloads import ACTIVE, profiled
    from canning_tb.analysis.rules.runner import candidates
    for cast in (False, True):
        *_, inp = profiled(tmp_path, f"attn{int(cast)}", _attention_step(cast), rule_input=True)
        found = {f.rule: f for f in candidates(inp)}
        assert "fusable_attention" in found, f"cast={cast}"
        assert found["fusable_attention"].figures["occurrences"] == 2 * ACTIVE


# -- kernel families: launcher, category, whole name tokens ------------------------------------------------

import pytest  # noqa: E402

from _synthetic import ev, table  # noqa: E402

from canning_tb.analysis.names import name_map  # noqa: E402
from canning_tb.ingest.table import Kind as K  # noqa: E402

# names as the libraries write them (demangled as Kineto / torch_npu print them) and the family their
# documentation gives (MIOpen's solvers are convolutions; Tensile's Cijk_* are rocBLAS / hipBLASLt GEMMs;
# DeepEP's dispatch / combine move tokens between ranks; CANN's FlashAttentionScore is fused attention)
BY_NAME = [
    ("MIOpenConvUni", "convolution"),
    ("miopenSp3AsmConv_v21_1_3_gfx9_fp32_stride1", "convolution"),
    ("igemm_fwd_gtcx_nchw_fp32_bx0_ex1_bt128x128x16_wt32x32x8", "convolution"),
    ("naive_conv_fwd_nchw_float_double_float", "convolution"),
    ("Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN", "matmul"),
    ("void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3>()", "matmul"),
    ("void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*)", "communication"),
    ("void deep_ep::internode_ll::combine<false, 7168>(void*)", "communication"),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "communication"),
    ("aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore", "attention"),
    ("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>(Flash_fwd_params)", "attention"),
    ("aclnnMm_MatMulCommon_MatMulV2", "matmul"),
    ("Conv2DBackpropFilter10", "convolution"),
    ("volta_scudnn_128x64_relu_interior_nn_v1", "convolution"),
    ("void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, true, true>(int)", "convolution"),
    ("ampere_sgemm_128x64_nn", "matmul"),
]


@pytest.mark.parametrize("name,family", BY_NAME)
def test_family_by_whole_name_tokens(name, family):
    assert name_map().family(name) == family


@pytest.mark.parametrize("name", [
    # torch's elementwise kernels name their lambdas: "lamb" is not a token of "{lambda(int)#1}"
    "void at::native::vectorized_elementwise_kernel<4, at::native::mse_kernel_cuda(at::TensorIteratorBase&)::"
    "{lambda()#1}::operator()() const::{lambda(float, float)#1}, at::detail::Array<char*, 3> >(int)",
    "void adamant_reduce_kernel<float>(float*)", "sgd_like_but_not_fused_adamw_helper",
])
def test_no_name_makes_an_optimizer_kernel(name):
    assert name_map().family(name) != "optimizer"


def _launched(op, kernel, kind=K.KERNEL, t=0, corr=1, parent=None):
    """A host op at t with one launch and its kernel (and an optional enclosing range)."""
    out = [] if parent is None else [ev(parent, K.USER_ANNOTATION, t, 60)]
    return out + [ev(op, K.CPU_OP, t + 1, 50, external_id=corr),
                  ev("cudaLaunchKernel", K.RUNTIME, t + 2, 3, correlation=corr, external_id=corr),
                  ev(kernel, kind, t + 100, 10, correlation=corr, external_id=corr)]


def _families(events):
    d = build_digest(table(events))
    return {k.name: k.family for k in d.kernels_by_name}


def test_the_launching_operator_decides_before_the_name():
    fam = _families(
        _launched("aten::conv2d", "Cijk_Ailk_Bjlk_SB_MT64x16x16", t=0, corr=1)  # MIOpen runs a conv as GEMM
        + _launched("aten::addmm", "some_vendor_kernel_xyz", t=1000, corr=2)
        + _launched("aten::scaled_dot_product_attention", "void at::native::softmax_warp_forward<float>()",
                    t=2000, corr=3)
        + _launched("aten::_foreach_add_", "void multi_tensor_apply_kernel<AdamFunctor<float>>()", t=3000, corr=4,
                    parent="Optimizer.step#AdamW.step")
        + _launched("aten::mm", "ampere_sgemm_64x64_nn", t=4000, corr=5, parent="Optimizer.step#Shampoo.step"))
    assert fam["Cijk_Ailk_Bjlk_SB_MT64x16x16"] == "convolution"
    assert fam["some_vendor_kernel_xyz"] == "matmul"
    assert fam["void at::native::softmax_warp_forward<float>()"] == "attention"
    assert fam["void multi_tensor_apply_kernel<AdamFunctor<float>>()"] == "optimizer"
    assert fam["ampere_sgemm_64x64_nn"] == "matmul"  # the innermost launcher wins over the optimizer range


def test_category_before_name_and_no_optimizer_without_a_step_range():
    lam = "void at::native::vectorized_elementwise_kernel<4, at::native::{lambda(int)#1}>(int)"
    fam = _families(
        _launched("deep_ep::dispatch", "moe_token_exchange_v2", kind=K.COMM_KERNEL, t=0, corr=1)
        + _launched("aten::add", lam, t=1000, corr=2)
        + _launched("aten::clamp_", "void fused_lamb_helper<float>()", t=2000, corr=3))
    assert fam["moe_token_exchange_v2"] == "communication"  # the profiler's category
    assert fam[lam] == "elementwise"
    assert "optimizer" not in fam.values()  # inference: no optimizer step range, no optimizer kernels


def test_amd_optimizer_time_is_the_optimizer_steps_kernels():
    """On the MI250 trace the "optimizer" family is the kernels whose launch lies inside an
    Optimizer.step# range, read from the JSON (ranges on the host, launches joined to kernels by their
    correlation id); before, 41 us of loss and copy kernels matched "lamb" in "{lambda(...)}"."""
    path = fixture_path(*AMD)
    events = json.load(gzip.open(path))["traceEvents"]
    steps = [(e["ts"], e["ts"] + e["dur"], e.get("tid")) for e in events
             if str(e.get("name", "")).startswith("Optimizer.step#")]
    assert steps
    launches = {e["args"]["correlation"] for e in events if e.get("cat") == "cuda_runtime"
                and any(s0 <= e["ts"] <= s1 and e.get("tid") == tid for s0, s1, tid in steps)}
    expected_us = sum(e["dur"] for e in events if e.get("cat") == "kernel"
                      and e.get("args", {}).get("correlation") in launches)
    assert expected_us > 0
    d = build_digest(read_kineto(str(path)))
    by_family = {}
    for k in d.kernels_by_name:
        by_family[k.family] = by_family.get(k.family, 0) + k.total_ns
    assert by_family.get("optimizer", 0) == pytest.approx(expected_us * 1000, abs=2)
    # Tensile's Cijk_* GEMMs are matmul (before: "other")
    assert all(k.family == "matmul" for k in d.kernels_by_name if k.name.startswith("Cijk_"))


# -- advice that fits the device and what runs ---------------------------------------------------------------

from canning_tb.analysis.rules.engine import RuleInput  # noqa: E402
from canning_tb.analysis.rules.runner import candidates  # noqa: E402
from canning_tb.analysis.rules.workload import is_inference  # noqa: E402

MI300X = [{"kind": "rocm", "index": 0, "name": "AMD Instinct MI300X", "compute_capability": "9.4"}]
A100 = [{"kind": "cuda", "index": 0, "name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0"}]
H100 = [{"kind": "cuda", "index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}]
NVIDIA_ONLY = ("compute capability", "cuBLASLt", "TF32", "allow_tf32")


def _family_hit(launches, devices, fmt="kineto"):
    events = []
    for i, (op, kernel) in enumerate(launches):
        events += _launched(op, kernel, t=1000 * i, corr=i + 1)
    d = build_digest(table(events, devices=devices, fmt=fmt))
    found = {f.rule: f for f in candidates(RuleInput(d))}
    return found.get("dominant_kernel_family")


def test_miopen_convolutions_on_amd_get_no_nvidia_advice():
    hit = _family_hit([("aten::convolution", "MIOpenConvUni"), ("aten::convolution", "naive_conv_fwd_nchw_float"),
                       ("aten::mm", "Cijk_Alik_Bljk_SB_MT64x16x32")], MI300X)
    assert hit.title.startswith("convolution")  # before: MIOpen's GEMM-like names could make it matmul
    assert "channels_last" in hit.change_torch and "MIOpen" in hit.change_torch
    assert not any(word in hit.change_torch for word in NVIDIA_ONLY)


def test_matmul_advice_by_vendor():
    gemm = [("aten::mm", "Cijk_Alik_Bljk_SB_MT64x16x32")] * 3
    amd = _family_hit(gemm, MI300X)
    assert amd.title.startswith("matmul") and "PYTORCH_TUNABLEOP_ENABLED" in amd.change_torch
    assert not any(word in amd.change_torch for word in NVIDIA_ONLY)
    nvidia = _family_hit([("aten::mm", "ampere_sgemm_128x64_nn")] * 3, A100)  # fp32 on an A100: TF32 applies
    assert "allow_tf32" in nvidia.change_torch and "autocast" in nvidia.change_torch


@pytest.mark.parametrize("kernel", [
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel",
    "_matmul_ogs_NNT_bf16xbf16xmxfp4_128x256x128x1_swiglu",  # an MXFP4 MoE GEMM (Triton, as vLLM runs it)
    "void deep_gemm::fp8_gemm_kernel<4096u, 7168u, 128u>(float*, int*)",
])
def test_no_autocast_or_tf32_where_a_lower_precision_runs(kernel):
    hit = _family_hit([("aten::mm", kernel)] * 3, H100)
    assert hit.title.startswith("matmul")
    assert "autocast" not in hit.change_torch and "tf32" not in hit.change_torch.lower()
    assert "autocast" not in hit.change_npu


def test_no_fused_attention_api_where_fused_attention_runs():
    fused = _family_hit([("npu::npu_fusion_attention",
                          "aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore")] * 3, None, fmt="ascend")
    assert fused.title.startswith("attention")
    assert "npu_fusion_attention" not in fused.change_npu + fused.change_torch
    assert "scaled_dot_product_attention" not in fused.change_torch
    assert "FlashAttentionScore" in fused.change_torch  # says what runs
    unfused = _family_hit([("aten::scaled_dot_product_attention", "void at::native::softmax_warp_forward<float>()"),
                           ("aten::scaled_dot_product_attention", "ampere_sgemm_64x64_nn")], A100)
    assert "scaled_dot_product_attention" in unfused.change_torch  # the math path: the fused kernels would help


def test_inference_is_no_backward_and_no_optimizer_step():
    forward = build_digest(table(_launched("aten::mm", "ampere_sgemm_64x64_nn")))
    assert is_inference(RuleInput(forward))
    training = build_digest(table(_launched("aten::mm", "ampere_sgemm_64x64_nn")
                                  + _launched("autograd::engine::evaluate_function: MmBackward0",
                                              "ampere_sgemm_64x64_tn", t=1000, corr=2)))
    assert not is_inference(RuleInput(training))
    stepped = build_digest(table(_launched("aten::_foreach_add_", "multi_tensor_apply_kernel", corr=3,
                                           parent="Optimizer.step#SGD.step")))
    assert not is_inference(RuleInput(stepped))
    # operators that say nothing of a model (the HTA CPU-only rank: aten::empty beside gloo) are not inference
    bare = build_digest(table([ev("aten::empty", K.CPU_OP, 0, 5), ev("aten::add", K.CPU_OP, 10, 5)]))
    assert not is_inference(RuleInput(bare))


@pytest.mark.parametrize("call,blocks", [
    ("hipMemcpyWithStream", True), ("AscendCL@aclrtMemcpy", True), ("cudaStreamSynchronize", True),
    ("hipMemcpyDtoH", True), ("cuMemcpyDtoH", True), ("aclrtSynchronizeStream", True),
    ("hipMemcpyAsync", False), ("cudaLaunchKernel", False), ("hipLaunchKernel", False),
    ("AscendCL@aclrtMemcpyAsync", False), ("cudaMemcpyToSymbolAsync", False),
])
def test_device_wait_calls_are_the_vendors_blocking_calls(call, blocks):
    """The runtimes' documentation: these return only when the copy / the device is done (the *Async ones
    return at once and are judged by their copy's direction, steps.ASYNC_COPY_RE)."""
    from canning_tb.analysis.steps import DEVICE_WAIT_RE
    assert bool(DEVICE_WAIT_RE.search(call)) == blocks


@pytest.mark.parametrize("who", ["amd", "cpu", "ascend"])
def test_below_roof_advice_names_no_nvidia_library_off_nvidia(who):
    from canning_tb.analysis import digest_pb2 as pb
    from canning_tb.analysis.rules.roofline_rules import _change
    torch_change, _ = _change(pb.WorkRates(bound="compute", dtype="fp32"), who)
    assert "cuBLASLt" not in torch_change and "TF32" not in torch_change
    assert "cuBLASLt" in _change(pb.WorkRates(bound="compute", dtype="fp32"), "nvidia")[0]


@pytest.mark.parametrize("bound", ["compute", "memory"])
def test_below_roof_advice_proposes_no_lower_precision_where_it_runs(bound):
    from canning_tb.analysis import digest_pb2 as pb
    from canning_tb.analysis.rules.roofline_rules import _change
    torch_change, npu_change = _change(pb.WorkRates(bound=bound, dtype="bf16"), "nvidia")
    assert "bf16" not in torch_change and "autocast" not in torch_change and "bf16" not in npu_change
    assert "bf16" in _change(pb.WorkRates(bound=bound, dtype="fp32"), "nvidia")[0]


@pytest.mark.parametrize("backward", [False, True])
def test_inference_gets_no_ddp_advice_for_unhidden_communication(backward):
    """One step: a forward GEMM, (training) its backward GEMM, then an NCCL all-reduce of 3 us alone: the
    communication is not hidden either way; only a training window is told about DDP buckets."""
    events = [ev("ProfilerStep#1", K.USER_ANNOTATION, 0, 5000)] + _launched("aten::mm", "ampere_sgemm_64x64_nn")
    if backward:
        events += _launched("autograd::engine::evaluate_function: MmBackward0", "ampere_sgemm_64x64_tn",
                            t=400, corr=2)
    events += [ev("c10d::allreduce_", K.CPU_OP, 1001, 50, external_id=3),
               ev("cudaLaunchKernel", K.RUNTIME, 1002, 3, correlation=3, external_id=3),
               ev("ncclDevKernel_AllReduce_Sum_f32_RING_LL", K.COMM_KERNEL, 1100, 3000, correlation=3, external_id=3)]
    d = build_digest(table(events, devices=A100))
    hit = {f.rule: f for f in candidates(RuleInput(d))}["communication_not_overlapped"]
    assert ("DDP" in hit.change_torch) == backward and ("bucket" in hit.change_npu) == backward
