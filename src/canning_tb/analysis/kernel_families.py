"""The family of each kernel, by structure first (docs/rules.md "Classification"):

1. the operator that launched it (Context.device_owner), or the nearest operator around that one with a
   family: aten::conv* -> convolution, aten::mm / addmm / bmm / linear / matmul -> matmul,
   scaled_dot_product_attention / npu_fusion_attention -> attention, c10d / collectives -> communication,
   an optimizer step range (Optimizer.step#...) -> optimizer (the only way a kernel is "optimizer": an
   inference run has none); the innermost of these wins (an aten::mm inside an optimizer step is a matmul);
   a layout kernel (its name's tokens say copy / layout: TransData, a transpose, a cast) that a convolution,
   matmul or attention launched stays copy / layout, so that the advice on layouts still applies;
2. the profiler's category: a communication kernel (Kind.COMM_KERNEL) is communication;
3. the kernel's name, by whole tokens (names.VENDOR_TOKENS).

A kernel name launched under several operators takes the family of most of its time.
"""
from __future__ import annotations

import re

import numpy as np

from ..ingest.table import NONE, Kind
from .common import HOST_COMM_RE
from .context import Context
from .names import OTHER_FAMILY, name_map

OPTIMIZER = "optimizer"
# operator names -> family of the kernels they launch; torch_npu's fused operators beside aten's
LAUNCHERS = [
    ("attention", re.compile(
        r"^(?:aten::_?scaled_dot_product\w*|aten::_flash_attention\w*|aten::_efficient_attention\w*|"
        r"aten::_cudnn_attention\w*|npu::npu_fusion_attention\w*|npu::npu_prompt_flash_attention|"
        r"npu::npu_incre_flash_attention|npu::npu_fused_infer_attention_score\w*|flash_attn::\w+)$")),
    ("convolution", re.compile(
        r"^(?:aten::(?:conv\d?d|convolution|_convolution|convolution_backward\w*|conv_transpose\d?d|"
        r"cudnn_convolution\w*|miopen_convolution\w*|miopen_depthwise_convolution\w*|mkldnn_convolution\w*|"
        r"_conv_depthwise2d\w*|slow_conv\w*|thnn_conv\w*|conv_depthwise3d\w*)|npu::npu_conv\w*)$")),
    ("matmul", re.compile(
        r"^(?:aten::(?:mm|addmm|bmm|baddbmm|addbmm|matmul|linear|_addmm_activation|_scaled_mm|_scaled_grouped_mm|"
        r"_grouped_mm|_int_mm|_weight_int4pack_mm|_weight_int8pack_mm)|npu::npu_linear|npu::npu_grouped_matmul\w*|"
        r"npu::npu_quant_matmul\w*|npu::npu_weight_quant_batchmatmul)$")),
    ("communication", HOST_COMM_RE),
    (OPTIMIZER, re.compile(r"^Optimizer\.step#")),
]
LAYOUT = "copy / layout"
# launchers whose layout kernels (TransData, transposes, copies, casts: names.VENDOR_TOKENS) stay copy / layout
COMPUTE_LAUNCHERS = ("attention", "convolution", "matmul")
FAMILIES = [OTHER_FAMILY] + [family for family, _ in LAUNCHERS]  # code -> family; 0 is "none yet"


def launcher_families(ctx: Context) -> np.ndarray:
    """Per host position (ctx.host.rows): the code (FAMILIES) of the nearest operator at or around it that
    names a family, 0 where none does."""
    h, t = ctx.host, ctx.table
    names = ctx.ev["name"][h.rows].astype(np.int64)
    lut = np.zeros(len(t.strings), np.int8)
    for nid in np.unique(names).tolist():
        text = t.strings[nid] or ""
        for code, (_, rx) in enumerate(LAUNCHERS, start=1):
            if rx.search(text):
                lut[nid] = code
                break
    nearest = lut[names]
    nearest[ctx.host_kind == int(Kind.RUNTIME)] = 0  # a runtime call names no family
    depth = h.depth
    for d in range(1, int(depth.max(initial=0)) + 1):  # parents before children: the innermost one wins
        sel = np.flatnonzero((depth == d) & (nearest == 0))
        par = h.parent[sel]
        ok = par != NONE
        nearest[sel[ok]] = nearest[par[ok]]
    return nearest


def kernel_families(ctx: Context, rows: np.ndarray, dpos: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Per kernel row (rows: table rows, dpos: their positions in ctx.device_rows): the code of its family in
    the returned labels. Column work over the rows; names are looked at once per distinct name."""
    ev, t = ctx.ev, ctx.table
    labels = list(FAMILIES)
    code = np.zeros(len(rows), np.int64)
    if len(ctx.host.rows):
        owner = ctx.device_owner[dpos]
        has = owner != NONE
        code[has] = launcher_families(ctx)[owner[has]]
    names = name_map()
    ids, at = np.unique(ev["name"][rows].astype(np.int64), return_inverse=True)
    by_name = np.zeros(len(ids), np.int64)
    for i, nid in enumerate(ids.tolist()):
        family = names.family(t.strings[nid] or "")
        if family not in labels:
            labels.append(family)
        by_name[i] = labels.index(family)
    named = by_name[at.reshape(-1)]
    if LAYOUT not in labels:
        labels.append(LAYOUT)
    layout, comm_code = labels.index(LAYOUT), labels.index("communication")
    compute = np.isin(code, [labels.index(f) for f in COMPUTE_LAUNCHERS])
    code[compute & (named == layout)] = layout  # a TransData / copy a convolution or matmul launched
    none = code == 0
    comm = ev["kind"][rows] == int(Kind.COMM_KERNEL)
    code[none & comm] = comm_code
    code[none & ~comm] = named[none & ~comm]
    return code, labels


def group_family(code: np.ndarray, labels: list[str], dur: np.ndarray, inv: np.ndarray, groups: int) -> list[str]:
    """Per group (inv: each row's group): the family that holds most of the group's time (a tie: the first
    family in alphabetical order)."""
    if groups == 0:
        return []
    key = inv.astype(np.int64) * len(labels) + code
    time = np.bincount(key, weights=dur.astype(np.float64), minlength=groups * len(labels)).reshape(groups, -1)
    order = sorted(range(len(labels)), key=lambda i: labels[i])
    return [labels[order[i]] for i in time[:, order].argmax(axis=1).tolist()]
