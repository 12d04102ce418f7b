"""What the window runs, as the rules fit their advice to it (docs/rules.md "Classification"): the device's
vendor, training or inference, and what already runs (a lower precision, fused attention). Advice never
proposes what already runs, nor a vendor's setting on another vendor's device."""
from __future__ import annotations

import re

from ..kernel_families import LAUNCHERS
from ..names import name_tokens
from .engine import RuleInput

LOW_PRECISION = ("bf16", "fp16", "fp8", "int8", "fp4", "int4")  # WorkRates.dtype classes below fp32 / tf32
# dtype tokens of kernel names (whole tokens, names.name_tokens): cuBLAS / CUTLASS / CK / Triton / CANN spellings
_LOW_TOKEN_RE = re.compile(
    r"\w*?(?:bf16|fp16|bfloat16|float16|fp8|mxfp4|mxfp6|mxfp8|nvfp4|fp4|int8|int4|e4m3\w*|e5m2\w*|w4a\d+|w8a\d+)\w*|"
    r"half|half_t|f16|i8|s8|u8|h\d{3,5}gemm\w*|hgemm\w*|bgemm\w*|dt_bf16|float8\w*", re.I)
# fused attention kernels: FlashAttention 2 / 3, xFormers / PyTorch mem-efficient (fmha), cuDNN SDPA, CK / aiter
# fmha, CANN's FlashAttentionScore and its inference variants, vLLM / FlashInfer paged attention
_FUSED_ATTENTION_RE = re.compile(
    r"flash\w*|fmha\w*|flashattentionscore\w*|promptflashattention\w*|increflashattention\w*|"
    r"fusedinferattentionscore\w*|paged_attention\w*|pagedattention\w*|flashinfer\w*|cudnn_sdpa\w*|"
    r"batched_gemm_softmax_gemm\w*", re.I)
# an operator of a backward pass or of an optimizer step: a window with none of them is inference
_TRAINING_OP_RE = re.compile(r"^autograd::engine::|Backward\d*$|_backward(?:_\w+)?$|^Optimizer\.(?:step|zero_grad)#",
                             re.I)


def vendor(inp: RuleInput) -> str:
    """"nvidia" | "amd" | "ascend" | "mtia" | "cpu" | "gpu": whose advice applies to the window's device; "gpu"
    where kernels ran on a device the trace does not describe (a sampled trace): no vendor's advice then."""
    label = inp.device_label()
    for prefix, name in (("cuda", "nvidia"), ("rocm", "amd"), ("npu", "ascend"), ("mtia", "mtia")):
        if label.startswith(prefix):
            return name
    return "gpu" if inp.digest.kernels_by_name else "cpu"


def is_inference(inp: RuleInput) -> bool:
    """A model's forward ran (a matmul, convolution or attention operator: kernel_families.LAUNCHERS) with no
    backward operator, no optimizer step and no kernel an optimizer step launched (KernelStat.family). False
    where the operators say too little (a window of aten::empty): unknown is not inference."""
    names = [o.name for o in inp.digest.ops_by_name]
    forward = any(rx.search(n) for family, rx in LAUNCHERS if family in ("matmul", "convolution", "attention")
                  for n in names)
    return forward and not any(_TRAINING_OP_RE.search(n) for n in names) \
        and not any(k.family == "optimizer" for k in inp.digest.kernels_by_name)


def low_precision_kernel(name: str) -> bool:
    """The kernel's name carries a dtype below fp32 (fp16, bf16, fp8, MXFP4, int8 ...) as a whole token."""
    return any(_LOW_TOKEN_RE.fullmatch(t) for t in name_tokens(name))


def low_precision_share(inp: RuleInput, kernels) -> float:
    """The share of these kernels' time that already runs below fp32: by their names' dtype tokens, or by
    the input dtypes of the matrix operators (OpStat.work.dtype, from the operators' recorded input types)
    where the names say nothing."""
    total = sum(k.total_ns for k in kernels)
    by_name = sum(k.total_ns for k in kernels if low_precision_kernel(k.name))
    share = by_name / total if total > 0 else 0.0
    ops = [o for o in inp.digest.ops_by_name if o.work.matrix and o.work.dtype and o.work.time_ns > 0]
    op_total = sum(o.work.time_ns for o in ops)
    if op_total > 0:
        share = max(share, sum(o.work.time_ns for o in ops if o.work.dtype in LOW_PRECISION) / op_total)
    return share


def fused_attention(kernels) -> list:
    """The kernels among these that are fused attention (by whole name tokens)."""
    return [k for k in kernels if any(_FUSED_ATTENTION_RE.fullmatch(t) for t in name_tokens(k.name))]
