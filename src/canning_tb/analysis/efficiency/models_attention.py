"""Attention (docs/efficiency.md#attention): with B batches, Hq query heads, L queries, S keys, head
dims E (query / key) and Ev (value), and P the (query, key) pairs the mask keeps (B x Hq x L x S
without a mask; causal as torch's is_causal: query i sees keys 0 .. min(i, S - 1), see `_pairs`):
- forward FLOPs = 2 x P x (E + Ev): Q K^T and P V;
- backward FLOPs = 2 x P x (3 E + 2 Ev): Q K^T recomputed, dV, dP, dQ, dK (as flash attention does);
- bytes: q, k, v (and the output gradient, the output and its log-sum-exp backward) read once, the
  output (gradients) written once; the L x S scores never reach memory.
GQA: key / value have fewer heads than the query; the FLOPs follow the query heads.
The causal flag must be recorded (Kineto's Concrete Inputs); an attention mask tensor, a NPU
kernel's atten_mask or sparse mode not recorded: not modelled.
"""
from __future__ import annotations

from . import dtypes
from .inputs import OpInputs, Shape, flag
from .work import Work, inputs_bytes, out_bytes, total

MODEL = "attention"


def _pairs(b: int, h: int, lq: int, s: int, causal: bool) -> int:
    """(query, key) pairs computed. Causal as torch's is_causal: the mask is the lower triangle
    aligned to the top left (query i sees keys 0..i), so a query sees min(i + 1, S) keys."""
    if not causal:
        return b * h * lq * s
    full = min(lq, s)
    seen = full * (full + 1) // 2 + max(lq - s, 0) * s
    return b * h * seen


def _bhle(q: Shape | None, k: Shape | None, v: Shape | None):
    """(B, Hq, L, E), (S, Ev) of [..., H, L, E] tensors (torch's SDPA layout); None if they do not fit."""
    if q is None or k is None or v is None or len(q) < 3 or not len(q) == len(k) == len(v):
        return None
    lead = 1
    for d in q[:-3]:
        lead *= d
    h, hk = q[-3], k[-3]
    if hk == 0 or h % hk or k[-1] != q[-1] or v[-2] != k[-2] or v[-3] != hk:
        return None
    return (lead, h, q[-2], q[-1]), (k[-2], v[-1])


# operator -> (index of q, index of is_causal in Concrete Inputs, index of an attn mask / bias or -1, backward)
_OPS = {
    "aten::scaled_dot_product_attention": (0, 5, 3, False),
    "aten::_scaled_dot_product_flash_attention": (0, 4, -1, False),
    "aten::_scaled_dot_product_flash_attention_for_cpu": (0, 4, 5, False),
    "aten::_scaled_dot_product_efficient_attention": (0, 6, 3, False),
    "aten::_scaled_dot_product_cudnn_attention": (0, 6, 3, False),
    "aten::_scaled_dot_product_flash_attention_backward": (1, 11, -1, True),
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": (1, 7, 8, True),
    "aten::_scaled_dot_product_efficient_attention_backward": (1, 11, 4, True),
    "aten::_scaled_dot_product_cudnn_attention_backward": (1, 14, 8, True),
}


def sdpa(x: OpInputs) -> Work | None:
    q_at, causal_at, mask_at, backward = _OPS[x.name]
    dims = _bhle(x.shape(q_at), x.shape(q_at + 1), x.shape(q_at + 2))
    causal = flag(x.value(causal_at))
    if dims is None or causal is None or (mask_at >= 0 and x.tensor(mask_at) and x.shape(mask_at)):
        return None
    (b, h, lq, e), (s, ev) = dims
    pairs = _pairs(b, h, lq, s, causal)
    out = float(b * h * lq * ev)
    size = dtypes.size(x.dtype(q_at))
    if backward:  # read grad_out, q, k, v, out, lse; write dq, dk, dv (the sizes of q, k, v)
        flops = 2.0 * pairs * (3 * e + 2 * ev)
        qkv = inputs_bytes(x, (q_at, q_at + 1, q_at + 2))
        moved = total([qkv, qkv, None if size is None else 2 * out * size, float(b * h * lq * 4)])
    else:
        flops = 2.0 * pairs * (e + ev)
        moved = total([inputs_bytes(x, (q_at, q_at + 1, q_at + 2)), None if size is None else out * size])
    return Work(flops, moved, dtypes.peak_class(x.dtype(q_at)), MODEL, matrix=True)


OPERATORS = {name: sdpa for name in _OPS}


# -- NPU kernels: FlashAttentionScore / FlashAttentionScoreGrad --------------------------------
def _layout(q: Shape, b: int, n: int, sq: int):
    """The layout of query given B, N1, S1 from softmax_max [B, N1, S1, 8]: (name, D)."""
    if len(q) == 4:
        for name, (db, dn, ds) in (("BNSD", (0, 1, 2)), ("BSND", (0, 2, 1))):
            if (q[db], q[dn], q[ds]) == (b, n, sq):
                return name, q[3]
    if len(q) == 3 and q[2] % n == 0:
        for name, (db, ds) in (("BSH", (0, 1)), ("SBH", (1, 0))):
            if (q[db], q[ds]) == (b, sq):
                return name, q[2] // n
    return None


def _kv(k: Shape, layout: str, d: int):
    """(S2, N2) of key under the layout."""
    if layout == "BNSD":
        return (k[2], k[1]) if len(k) == 4 and k[3] == d else None
    if layout == "BSND":
        return (k[1], k[2]) if len(k) == 4 and k[3] == d else None
    if len(k) != 3 or k[2] % d:
        return None
    return (k[1], k[2] // d) if layout == "BSH" else (k[0], k[2] // d)


def _has_mask(x: OpInputs, inputs: range) -> bool:
    """A BOOL / UINT8 input of 2 dims or more: an attention mask (sparse mode not recorded)."""
    return any((x.dtype(i).upper().replace("DT_", "") in ("BOOL", "UINT8")) and x.shape(i) is not None
               and len(x.shape(i)) >= 2 for i in inputs)


def _npu_attention(x: OpInputs, stats: Shape | None, grad: bool) -> Work | None:
    q, k = x.shape(0), x.shape(1)
    if stats is None or len(stats) != 4 or q is None or k is None or _has_mask(x, range(3, len(x.shapes))):
        return None
    b, n, sq, _ = stats
    found = _layout(q, b, n, sq)
    kv = _kv(k, found[0], found[1]) if found else None
    if found is None or kv is None or kv[1] == 0 or n % kv[1]:
        return None
    d = found[1]
    pairs = b * n * sq * kv[0]
    flops = 2.0 * pairs * (5 * d if grad else 2 * d)
    moved = total([inputs_bytes(x, range(len(x.shapes)))] +
                  [out_bytes(shape, x.out_types[i] if i < len(x.out_types) else "") for i, shape in enumerate(x.out_shapes)])
    return Work(flops, moved, dtypes.peak_class(x.dtype(0)), MODEL, matrix=True)


def npu_flash_attention(x: OpInputs) -> Work | None:
    """FlashAttentionScore: B, N1, S1 from softmax_max (its first output, [B, N1, S1, 8]), the layout
    and D from query, S2 and N2 from key; no mask input (full attention)."""
    return _npu_attention(x, x.out_shapes[0] if x.out_shapes else None, grad=False)


def npu_flash_attention_grad(x: OpInputs) -> Work | None:
    """FlashAttentionScoreGrad: the same sizes from its softmax_max input (FLOAT32 [B, N1, S1, 8])."""
    stats = next((s for i, s in enumerate(x.shapes) if i >= 3 and s is not None and len(s) == 4 and s[3] == 8
                  and x.dtype(i).upper() in ("FLOAT", "FLOAT32", "DT_FLOAT")), None)
    return _npu_attention(x, stats, grad=True)


KERNELS = {"FlashAttentionScore": npu_flash_attention, "FlashAttentionScoreGrad": npu_flash_attention_grad}
