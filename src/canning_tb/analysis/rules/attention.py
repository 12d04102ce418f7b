"""A written-out attention (scores = Q K^T by a matmul, a softmax over them, the result by a matmul with V),
told by what its operators do, and its fusion as an edit of the window's graph.

Names find candidates (fusion.PATTERNS "attention", top-level operators only: the operators a fused
attention runs inside itself, such as SDPA's math fallback, are never top level); the recorded input shapes
decide: the first matmul's [.., L, E] x [.., E, S] gives the scores' [.., L, S], the softmax runs over a
tensor ending in [L, S], and the second matmul takes [.., L, S] x [.., S, Ev]. Without shapes nothing can be
checked: the pattern stays an observation.

The fused call (scaled_dot_product_attention, npu_fusion_attention) does the two matmuls' FLOPs at the rate
they ran in this trace and never writes or reads the S x S scores: so the matmuls are kept as they ran, and
everything between them goes (scale, mask, softmax, dropout, casts, their kernels, the Python between them).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from canning_tb.util.arrays import distinct

from ...ingest.table import NONE
from ..efficiency.inputs import parse
from ..summary import has_device_work
from . import thresholds as th
from .attention_backward import backward_edit
from .engine import RuleInput
from .events import per_step, top_level_positions
from .finding import Finding, evidence, ms
from .sequence import sequences

_SOFTMAX = ("softmax", "_softmax")


@dataclass
class Occurrence:
    pid: int
    tid: int
    cut_start: int  # the first matmul's end ...
    cut_end: int  # ... the second matmul's start: the time the fusion takes away on the thread
    verified: bool | None  # the shapes say it is an attention (True), say it is not (False), are absent (None)
    row: int  # the first matmul's table row
    scores: tuple  # the scores' shape (the softmax's input), () unknown
    matmuls_ns: int  # the two matmuls' time (device time with device work, else host time)
    dims: tuple  # (E, Ev): the queries' and the values' head dims, () unknown


def occurrences(inp: RuleInput, regex: str) -> list[Occurrence]:
    """Every match of `regex` over the threads' top-level operators, judged by its shapes."""
    ctx = inp.ctx
    if ctx is None:
        return []
    ev, rows_of, strings = ctx.ev, ctx.host.rows, ctx.table.strings
    threads = top_level_positions(inp)
    if not threads:
        return []
    ids = [ev["name"][rows_of[p]] for p in threads]
    short = [""] * len(strings.values)  # the operators' short names only, never the call stacks beside them
    for name_id in distinct(np.concatenate(ids)).tolist():
        if 0 <= name_id < len(short):
            short[name_id] = (strings.values[name_id] or "").split("::", 1)[-1]
    out = []
    device = has_device_work(inp.digest)
    for seq, pos in zip(sequences(short, ids), threads):
        for lo, hi in seq.spans(regex).tolist():
            rows = rows_of[pos[lo:hi]]
            first, last = int(rows[0]), int(rows[-1])
            verdict, scores, dims = _flow(inp, rows, short)
            both = [pos[lo], pos[hi - 1]]
            matmuls_ns = int(ctx.device_total[both].sum()) if device else int(ev["dur"][[first, last]].sum())
            out.append(Occurrence(int(ev["pid"][first]), int(ev["tid"][first]),
                                  int(ev["ts"][first] + ev["dur"][first]), int(ev["ts"][last]),
                                  verdict, first, scores, matmuls_ns, dims))
    return out


def _inputs(inp: RuleInput, row: int):
    t = inp.ctx.table
    return parse(t.name(row) or "", t.strings[int(t.events["shapes"][row])], t.strings[int(t.events["args"][row])])


def _flow(inp: RuleInput, rows: np.ndarray, short: list) -> tuple[bool | None, tuple, tuple]:
    """(the operators are one attention by their input shapes (module doc), None where a shape is missing;
    the scores' shape; (E, Ev))."""
    ev = inp.ctx.ev
    names = [short[int(ev["name"][r])] for r in rows.tolist()]
    scores = _inputs(inp, int(rows[0]))
    a, b = (scores.shape(1), scores.shape(2)) if names[0] == "baddbmm" else (scores.shape(0), scores.shape(1))
    soft = _inputs(inp, int(rows[names.index(next(n for n in names if n in _SOFTMAX))])).shape(0)
    out = _inputs(inp, int(rows[-1]))
    p, v = out.shape(0), out.shape(1)
    if any(x is None or len(x) < 2 for x in (a, b, soft, p, v)):
        return None, (), ()
    L, S = a[-2], b[-1]
    ok = a[-1] == b[-2] and tuple(soft[-2:]) == (L, S) and tuple(p[-2:]) == (L, S) and v[-2] == S
    return ok, tuple(soft), (a[-1], v[-1])


def removed(inp: RuleInput, cuts: list) -> tuple:
    """The interval set the fusion takes away: each cut (pid, tid, start, end), and the device events launched
    from inside it."""
    ctx = inp.ctx
    lo = [c[2] for c in cuts]
    hi = [c[3] for c in cuts]
    owner = ctx.device_owner
    ok = np.flatnonzero(owner != NONE)
    if len(ok):
        host = ctx.host.rows[owner[ok]]
        ts, pid, tid = ctx.ev["ts"][host], ctx.ev["pid"][host], ctx.ev["tid"][host]
        for thread in {c[:2] for c in cuts}:
            starts, ends = (np.asarray(x, np.int64) for x in zip(*sorted(c[2:4] for c in cuts if c[:2] == thread)))
            at = np.searchsorted(starts, ts, side="right") - 1
            inside = (pid == thread[0]) & (tid == thread[1]) & (at >= 0) & (ts < ends[np.maximum(at, 0)])
            dev = ctx.device_rows[ok[inside]]
            lo += ctx.ev["ts"][dev].tolist()
            hi += (ctx.ev["ts"][dev] + ctx.ev["dur"][dev]).tolist()
    return np.array(lo, np.int64), np.array(hi, np.int64)


def attention_finding(inp: RuleInput, regex: str, title: str, torch_change: str, npu_change: str) -> Finding | None:
    """fusable_attention: verified attentions with the fusion as an edit; without shapes, an observation."""
    found = occurrences(inp, regex)
    verified = [o for o in found if o.verified]
    unknown = [o for o in found if o.verified is None]
    use = verified if len(verified) >= th.FUSION_MIN_REPEATS else unknown
    if len(use) < th.FUSION_MIN_REPEATS:
        return None
    checked = use is verified
    cuts = [(o.pid, o.tid, o.cut_start, o.cut_end) for o in use]
    back_cuts, rescale = backward_edit(inp, _scores(use), has_device_work(inp.digest)) if checked else ([], [])
    removes = removed(inp, cuts + back_cuts)
    step_ns = per_step(inp, removes)
    count, per = len(use), len(use) / inp.steps
    first = inp.ctx.table.name(use[0].row) or ""
    back = (f"; in the backward, the backward of what ran between them gone and the two matmul backwards doing the "
            f"fused backward's matmul FLOPs at the forward matmuls' rate" if rescale else "")
    seen = (f"{count} attentions written out in operators ({per:.1f} per step): a matmul of queries by keys, a "
            f"softmax over its scores, a matmul by the values (by their input shapes); {ms(step_ns)} per step "
            f"between the two matmuls{' and in their backward' if back_cuts else ''}." if checked else
            f"The operator sequence of an attention (matmul, softmax, matmul) runs {count} times ({per:.1f} per "
            f"step, {ms(step_ns)} per step between the matmuls); the trace records no input shapes, so that they "
            f"are one attention cannot be checked (record_shapes=True).")
    return Finding(
        "fusable_attention", "", "warning" if checked else "info", title, seen,
        why="Written out, the attention writes the S x S scores to memory and reads them back in each operator "
            "(scale, mask, softmax, dropout), one call and kernel launch each; a fused attention keeps them on "
            "chip and does only the matmuls' work.",
        change_torch=torch_change, change_npu=npu_change, gain_ns=step_ns,
        gain_basis="the time between the two matmuls of each attention", value=count,
        figures={"occurrences": count, "matched_ns_matched": step_ns, "shapes_checked": int(checked),
                 "backward_matmuls": len(rescale) // 2},
        evidence=[evidence("operators", first, f"{first}: first operator of the sequence", timeline_name=first)],
        removes=removes if checked else None, removes_what=["scale / mask / softmax / dropout of the attention"],
        fuse=(cuts + back_cuts, rescale) if checked else None,
        edit=(f"the {per:.1f} attentions per step fused: what ran between each one's two matmuls (scale, mask, "
              f"softmax, dropout, casts, their kernels) gone, the matmuls kept as they ran{back}"))


def _scores(found: list[Occurrence]) -> dict:
    """{scores shape: (the mean time of its two matmuls, E, Ev)}."""
    times: dict = {}
    for o in found:
        times.setdefault((o.scores, o.dims), []).append(o.matmuls_ns)
    return {shape: (float(np.mean(ns)), *dims) for (shape, dims), ns in times.items()}
