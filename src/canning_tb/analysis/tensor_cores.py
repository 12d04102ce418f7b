"""Tensor Cores (CUDA GPUs): which kernels ran on them, which operators can use them, and the share
of each operator's kernel time on them.

- A kernel ran on Tensor Cores when its name contains one of TC_KERNEL_SUBSTRINGS (case-sensitive
  substrings of the kernel naming of every architecture and library that runs on them: the cuBLAS /
  cuDNN mma shape codes 884 / 1688 / 16816 / 8816, hmma / imma, NVIDIA's xmma kernels, cuBLASLt's
  nvjet, CUTLASS tensorop and sm90 / sm100 mainloops (wgmma, tcgen05), DeepGEMM's FP8 and grouped
  GEMMs, Marlin, FlashAttention 2 / 3, mem-efficient attention, cuDNN SDPA, FlashInfer prefill, and
  Triton's mm templates and matmul / MoE kernels), as the old TensorBoard plugin's allowlist does for
  the Volta / Turing names.
- An operator is Tensor-Core eligible when its name is in TC_ELIGIBLE_OPS (the matmul / convolution
  / attention-like ops autocast runs in fp16 / bf16, their backward ops of 2021 and now
  (aten::cudnn_convolution_backward_input / _weight), which cuBLAS / cuDNN can run on Tensor Cores).
- op_tc_shares: per group of operator calls, the Tensor Core kernel time over all kernel time
  (KERNEL and COMM_KERNEL), of the kernels its calls launched themselves (self) and of those launched
  by them or any op inside them (total). A kernel under two nested calls of the same group counts
  once. -1 where the group launched no kernel, or off CUDA.
"""
from __future__ import annotations

import numpy as np

from canning_tb.util.arrays import distinct

from ..ingest.table import NONE, EventTable, Kind
from .common import sum_up_tree
from .context import Context

TC_KERNEL_SUBSTRINGS = (
    # cuBLAS / cuDNN mma shape codes (Volta 884, Turing / Ampere 1688, 16816, 8816) and instructions
    "h884", "s884", "h1688", "s1688", "i8816", "16816", "884gemm", "1688gemm", "hmma", "imma", "HMMA",
    "gemm_tf32", "tf32gemm", "wmma",
    # NVIDIA's xmma library (cuBLAS / cuDNN gemm and implicit-gemm conv, sm70 .. sm100), cuBLASLt's nvjet
    # (Hopper / Blackwell), CUTLASS tensorop and its sm90 / sm100 mainloops (wgmma, tcgen05 / UMMA)
    "xmma", "nvjet", "_tensorop_", "tensorop", "wgmma", "gmma", "Gmma", "GMMA", "MainloopSm90", "MainloopSm100",
    "tcgen05", "Umma", "UMMA",
    # DeepGEMM (FP8 / grouped GEMMs), Marlin (4-bit GEMMs), grouped GEMM libraries
    "deep_gemm", "fp8_gemm", "Marlin", "marlin_", "grouped_gemm", "GroupedGemm",
    # attention: FlashAttention 2 (flash_fwd / flash_bwd) and 3 (FlashAttnFwdSm90 ...), xformers / PyTorch
    # mem-efficient (fmha), cuDNN's fused SDPA, FlashInfer prefill
    "flash_fwd", "flash_bwd", "FlashAttn", "flash_attn", "fmha", "_sdpa_", "flash_fprop", "flash_bprop",
    "BatchPrefill", "SinglePrefill", "PrefillWithKVCache",
    # Triton: Inductor's mm / bmm / conv templates (tl.dot) and the matmul / MoE kernels named for it
    "triton_tem_", "triton_mm", "matmul_kernel", "fused_moe_kernel",
)

TC_ELIGIBLE_OPS = frozenset(
    "aten::" + n for n in (
        "conv1d conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d conv_transpose3d convolution _convolution "
        "cudnn_convolution cudnn_convolution_transpose convolution_backward convolution_backward_overrideable "
        "cudnn_convolution_backward cudnn_convolution_backward_input cudnn_convolution_backward_weight "
        "cudnn_convolution_transpose_backward cudnn_convolution_transpose_backward_input "
        "cudnn_convolution_transpose_backward_weight cudnn_convolution_relu cudnn_convolution_add_relu "
        "addmm addmm_ addbmm baddbmm bmm mm matmul linear _addmm_activation chain_matmul addmv addr "
        "einsum tensordot prelu lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell _thnn_fused_lstm_cell "
        "scaled_dot_product_attention _scaled_dot_product_efficient_attention _scaled_dot_product_flash_attention "
        "_scaled_dot_product_cudnn_attention _flash_attention_forward _efficient_attention_forward "
        "mm_backward bmm_backward _scaled_mm _scaled_grouped_mm _grouped_mm _int_mm "
        "_flash_attention_backward _efficient_attention_backward _scaled_dot_product_flash_attention_backward "
        "_scaled_dot_product_efficient_attention_backward _scaled_dot_product_cudnn_attention_backward"
    ).split())


def uses_tensor_cores(name: str) -> bool:
    return any(s in name for s in TC_KERNEL_SUBSTRINGS)


def is_cuda_window(table: EventTable) -> bool:
    """The window's GPUs are NVIDIA's (deviceProperties without AMD names, or only labelled "GPU N")."""
    kinds = {str(dv.get("kind", "")).lower() for dv in table.meta.devices}
    return table.meta.format != "ascend" and bool(kinds) and not kinds - {"cuda", "gpu"}


def _kernel_time(ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    """(all kernels, Tensor Core kernels) time launched by each host position itself (a redispatched
    call's kernels in the call it folds into, Context.op_owner, as the operator rows count them)."""
    dev = ctx.device_rows
    kind = ctx.ev["kind"][dev]
    owner = ctx.op_owner
    sel = np.flatnonzero(((kind == int(Kind.KERNEL)) | (kind == int(Kind.COMM_KERNEL))) & (owner != NONE))
    names = ctx.ev["name"][dev[sel]]
    uniq = distinct(names)
    tc = np.isin(names, uniq[[uses_tensor_cores(ctx.table.strings[int(n)] or "") for n in uniq]])
    dur = ctx.ev["dur"][dev[sel]].astype(np.float64)
    n = len(ctx.host.rows)
    return (np.bincount(owner[sel], weights=dur, minlength=n),
            np.bincount(owner[sel][tc], weights=dur[tc], minlength=n))


def _outermost(ctx: Context, group_of: np.ndarray) -> np.ndarray:
    """Per host position: a call of a group with no call of the same group around it."""
    parent = ctx.host.parent
    nested = np.zeros(len(parent), bool)
    up = parent.copy()
    while True:
        alive = np.flatnonzero(up != NONE)
        if len(alive) == 0:
            break
        nested[alive] |= group_of[up[alive]] == group_of[alive]
        up[alive] = parent[up[alive]]
    return (group_of >= 0) & ~nested


def _ratio(part: np.ndarray, whole: np.ndarray) -> np.ndarray:
    return np.where(whole > 0, part / np.where(whole > 0, whole, 1.0), -1.0)


def op_tc_shares(ctx: Context, pos: np.ndarray, inv: np.ndarray, ng: int) -> tuple[np.ndarray, np.ndarray]:
    """(self share, total share) per group; pos: host positions of the calls, inv: their groups.
    Total: each call's kernels and its descendants' (sum_up_tree), over the calls with no call of the
    same group around them, so a kernel under nested calls of one group counts once."""
    unknown = np.full(ng, -1.0)
    if ng == 0 or len(ctx.host.rows) == 0 or not is_cuda_window(ctx.table):
        return unknown, unknown.copy()
    own_all, own_tc = _kernel_time(ctx)
    group_of = np.full(len(ctx.host.rows), -1, np.int64)
    group_of[pos] = inv
    self_all = np.bincount(inv, weights=own_all[pos], minlength=ng)
    self_tc = np.bincount(inv, weights=own_tc[pos], minlength=ng)
    top = np.flatnonzero(_outermost(ctx, group_of))
    sub_all, sub_tc = sum_up_tree(own_all, ctx.host), sum_up_tree(own_tc, ctx.host)
    total_all = np.bincount(group_of[top], weights=sub_all[top], minlength=ng)
    total_tc = np.bincount(group_of[top], weights=sub_tc[top], minlength=ng)
    return _ratio(self_tc, self_all), _ratio(total_tc, total_all)
