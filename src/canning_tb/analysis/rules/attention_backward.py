"""The backward of the written-out attentions (attention.py), as the fused attention's backward changes it.

Autograd runs one backward function per forward operator (`autograd::engine::evaluate_function: X`, X the
function, inside it an operator X whose first input is the gradient it received, shaped as the forward
output). The functions that received a gradient shaped as an attention's scores ([.., L, S]: the softmax,
scale, mask, dropout, cast and view backwards) work on the S x S scores the fused backward never writes:
they go, with their kernels. The fused backward recomputes the scores from Q and K (flash attention keeps
only the softmax's statistics): the matmul backward that follows a softmax backward on the thread and
received its [.., L, S] gradient (the scores' matmul, two matmuls: dQ and dK) does one forward scores matmul
more, at the time that matmul took in the forward.
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
    """(cuts, grows) of graph/simulate.fuse_edit for the backward of attentions whose scores shapes are the
    keys of `scores` (values: the forward scores matmul's time, ns)."""
    ctx = inp.ctx
    ev, rows_of = ctx.ev, ctx.host.rows
    cuts, grows = [], []
    for pos in top_level_positions(inp):
        functions = _functions(inp, pos)
        pending = None  # the scores shape of a softmax backward whose matmul backward has not run yet
        for p, fn, grad in functions:
            row = int(rows_of[p])
            pid, tid, ts = int(ev["pid"][row]), int(ev["tid"][row]), int(ev["ts"][row])
            end = ts + int(ev["dur"][row])
            if MATMUL_BACKWARD_RE.match(fn):
                own = int(ctx.device_total[p]) if device else int(ev["dur"][row])
                if pending is not None and grad[-2:] == pending[-2:] and own > 0:
                    factor = 1 + scores[pending] / own  # on the device where there is one, else on the host
                    grows.append((pid, tid, ts, end, 1.0 if device else factor, factor))
                    pending = None
            elif grad in scores:
                cuts.append((pid, tid, ts, end))
                pending = grad if SOFTMAX_BACKWARD_RE.match(fn) else pending
    return cuts, grows


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
