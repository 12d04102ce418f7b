"""The backward of the written-out attentions (attention.py), as the fused attention's backward changes it.

Autograd runs one backward function per forward operator (`autograd::engine::evaluate_function: X`, X the
function, inside it an operator X whose first input is the gradient it received, shaped as the forward
output). The functions that received a gradient shaped as an attention's scores ([.., L, S]: the softmax,
scale, mask, dropout, cast and view backwards) work on the S x S scores the fused backward never writes:
they go, with their kernels. The attention's two matmul backwards (the values matmul's, the last matmul
backward before the softmax backward, its gradient [.., L, Ev]; the scores matmul's, the first after it, its
gradient [.., L, S]) become the fused backward's matmuls: its FLOPs, 2 x pairs x (3 E + 2 Ev) (the scores
recomputed from Q and K, dV, dP, dQ, dK, as FlashAttention's backward does), at the rate the attention's
forward matmuls reached, 2 x pairs x (E + Ev) in their time: (3 E + 2 Ev) / (E + Ev) x the forward matmuls'
time, shared between the two in proportion to their time. The written-out backward's matmuls write and
read S x S gradients (dP, the transposed probabilities) at a rate of their own; the fused one does not.
"""
from __future__ import annotations

import re

import numpy as np

from ...ingest.table import NONE
from ..efficiency.inputs import parse
from .engine import RuleInput
from .events import top_level_positions

_FUNCTION_RE = re.compile(r"^autograd::engine::evaluate_function: (\w+)$")
MATMUL_BACKWARD_RE = re.compile(r"^(?:Bmm|Mm|Baddbmm|Matmul)Backward\d*$")
SOFTMAX_BACKWARD_RE = re.compile(r"^_?SoftmaxBackward\d*$")


def backward_edit(inp: RuleInput, scores: dict, device: bool) -> tuple[list, list]:
    """(cuts, rescale) of graph/simulate.fuse_edit for the backward of attentions whose scores shapes are the
    keys of `scores` (values: (the forward matmuls' mean time in ns, E, Ev))."""
    ctx = inp.ctx
    ev, rows_of = ctx.ev, ctx.host.rows
    cuts, rescale = [], []
    for pos in top_level_positions(inp):
        last = pending = None  # the last matmul backward; a softmax backward's shape and its values matmul's
        for p, fn, grad in _functions(inp, pos):
            row = int(rows_of[p])
            ts = int(ev["ts"][row])
            stretch = (int(ev["pid"][row]), int(ev["tid"][row]), ts, ts + int(ev["dur"][row]))
            if MATMUL_BACKWARD_RE.match(fn):
                own = int(ctx.device_total[p]) if device else int(ev["dur"][row])
                if pending is not None and grad[-2:] == pending[0][-2:]:
                    forward, e, e_v = scores[pending[0]]
                    factor = forward * (3 * e + 2 * e_v) / (e + e_v) / max(own + pending[2], 1)
                    for s in (pending[1], stretch):  # on the device where there is one, else on the host
                        rescale.append((*s, 1.0 if device else factor, factor))
                    pending = last = None
                else:
                    last = (stretch, own, grad)
            elif grad in scores:
                cuts.append(stretch)
                if SOFTMAX_BACKWARD_RE.match(fn) and last is not None and last[2][-2:] == (grad[-2], scores[grad][2]):
                    pending = (grad, last[0], last[1])
    return cuts, rescale


def _functions(inp: RuleInput, pos: np.ndarray) -> list[tuple[int, str, tuple]]:
    """(position, function, gradient shape) of the thread's top-level backward functions whose operator records
    its input shape, in call order."""
    ctx = inp.ctx
    strings, ev, host = ctx.table.strings, ctx.ev, ctx.host
    fn_of = {}
    for p in pos.tolist():
        m = _FUNCTION_RE.match(strings[int(ev["name"][host.rows[p]])] or "")
        if m:
            fn_of[p] = m.group(1)
    if not fn_of:
        return []
    inner = np.flatnonzero(np.isin(host.parent, np.fromiter(fn_of, np.int64)))
    grads = {}
    for c in inner.tolist():
        parent = int(host.parent[c])
        row = int(host.rows[c])
        if parent in grads or strings[int(ev["name"][row])] != fn_of[parent] or ev["shapes"][row] == NONE:
            continue
        shape = parse(fn_of[parent], strings[int(ev["shapes"][row])], None).shape(0)
        if shape is not None and len(shape) >= 2:
            grads[parent] = tuple(shape)
    return [(p, fn_of[p], grads[p]) for p in pos.tolist() if p in grads]
