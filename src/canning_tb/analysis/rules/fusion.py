"""Small operators in a recurring order that one fused API replaces (msprof-analyze's affinity
API check, and the same sequences on CUDA), and optimizers that run unfused."""
from __future__ import annotations

import functools
import re

import numpy as np

from canning_tb.util.arrays import distinct

from ...ingest.table import NONE
from ..summary import has_device_work
from . import thresholds as th
from .attention import attention_finding
from .engine import RuleInput, rule
from .events import host_rows, longest, per_step, rows_set, top_level_ops
from .finding import Finding, evidence, ms
from .sequence import Sequence, sequences

# dtype casts and views that may sit between the operators of a written-out attention (an fp32 softmax in a
# bf16 model: `.to()` / `.type_as()` around it; a reshape before the second bmm)
_CASTS = "to|_to_copy|type_as|view|reshape|_unsafe_view|expand|unsqueeze|squeeze|clone|float|half|bfloat16"
# (id, title, regex over the space-joined short names of top-level operators, torch change, torch_npu change)
PATTERNS = [
    ("rms_norm", "RMSNorm written out in operators", r"pow mean add rsqrt mul(?: mul)?",
     "torch.nn.functional.rms_norm / torch.nn.RMSNorm (torch >= 2.4), or torch.compile the norm",
     "torch_npu.npu_rms_norm(x, weight, epsilon)"),
    ("rotary", "Rotary embedding written out in operators", r"neg(?: slice| select| narrow)* cat mul add",
     "torch.compile the rotary function (or a fused rotary kernel such as flash-attn's apply_rotary_emb)",
     "torch_npu.npu_rotary_mul(x, cos, sin)"),
    ("swiglu", "SwiGLU written out in operators", r"silu mul",
     "torch.compile the MLP (silu * mul fuse into one kernel)", "torch_npu.npu_swiglu(x, dim=-1)"),
    ("attention", "Attention written out in operators",
     r"(?:matmul|bmm|baddbmm)(?: (?:div|mul|add|masked_fill|masked_fill_|transpose|contiguous|" + _CASTS + r"))* "
     r"(?:softmax|_softmax)(?: (?:" + _CASTS + r"))*(?: dropout(?: (?:" + _CASTS + r"))*)? (?:matmul|bmm)",
     "torch.nn.functional.scaled_dot_product_attention (flash / memory-efficient kernels)",
     "torch_npu.npu_fusion_attention"),
    ("confusion_transpose", "permute + contiguous + reshape", r"permute contiguous (?:reshape|view)",
     "", "torch_npu.npu_confusion_transpose"),
]
_OPTIMIZER_RE = re.compile(r"^Optimizer\.step#(\w+)\.step$")
FUSED_OPTIMIZERS_NPU = {"SGD": "torch_npu.optim.NpuFusedSGD", "Adam": "torch_npu.optim.NpuFusedAdam",
                        "AdamW": "torch_npu.optim.NpuFusedAdamW", "RMSprop": "torch_npu.optim.NpuFusedRMSprop",
                        "Adadelta": "torch_npu.optim.NpuFusedAdadelta", "Lamb": "torch_npu.optim.NpuFusedLamb"}
# torch 2.x torch.optim classes and the arguments they have (inspect.signature of torch 2.13)
TORCH_FUSED = {"Adam", "AdamW", "SGD", "Adagrad"}  # fused=True (and foreach=True)
TORCH_FOREACH = {"ASGD", "Adadelta", "Adafactor", "Adamax", "NAdam", "RAdam", "RMSprop", "Rprop"}  # foreach only
# classes fused by design: apex FusedAdam / FusedLAMB / FusedSGD / FusedNovoGrad, DeepSpeed FusedAdam,
# Megatron's distributed fused optimizers, torch_npu NpuFused*
FUSED_CLASS_RE = re.compile(r"fused", re.I)
# fused work: torch's _fused_* ops and kernels (fused=True)
FUSED_WORK_RE = re.compile(r"_fused_|fused_?(adam|sgd|adagrad)", re.I)
# multi-tensor work: torch's _foreach_* ops and their multi_tensor_apply kernels (foreach=True), Ascend's
# aclnnForeach* kernels
FOREACH_WORK_RE = re.compile(r"multi_tensor_apply|aten::_foreach_|Foreach", re.I)


def _thread_sequences(inp: RuleInput) -> list[tuple[Sequence, np.ndarray, np.ndarray]]:
    """Per host thread: (its top-level operators' short names as a Sequence, their name ids, their
    times): device time when the window has device work, else host time."""
    found = top_level_ops(inp)
    if not found:
        return []
    values = inp.ctx.table.strings.values
    short = [""] * len(values)  # the short names of the operators only, never the call stacks beside them
    for name_id in distinct(np.concatenate([name_ids for name_ids, _, _ in found])).tolist():
        if 0 <= name_id < len(values):
            short[name_id] = values[name_id].split("::", 1)[-1]
    device = has_device_work(inp.digest)
    seqs = sequences(short, [name_ids for name_ids, _, _ in found])
    return [(seq, name_ids, device_ns if device else host_ns)
            for seq, (name_ids, host_ns, device_ns) in zip(seqs, found)]


def _matches(inp: RuleInput, threads, regex: str) -> tuple[int, int, str]:
    """(occurrences, summed time of the matched operators, first operator name) over all threads."""
    count, total, first = 0, 0, ""
    for seq, name_ids, times in threads:
        spans = seq.spans(regex)
        if len(spans) == 0:
            continue
        lo, hi = spans[:, 0], spans[:, 1]
        summed = np.r_[0, np.cumsum(times, dtype=np.int64)]
        count += len(spans)
        total += int((summed[hi] - summed[lo]).sum())
        first = first or _first_name(inp.ctx.table.strings, name_ids[lo[lo < len(name_ids)]])
    return count, total, first


def _first_name(strings, name_ids: np.ndarray) -> str:
    """The first non-empty name among the ids ("" when none)."""
    for name_id in name_ids:
        if strings[int(name_id)]:
            return strings[int(name_id)]
    return ""


@rule("fusable_ops", "time")
def fusable_ops(inp: RuleInput):
    npu = inp.device_label().startswith("npu")
    found = []
    threads = _thread_sequences(inp)
    for pid, title, regex, torch_change, npu_change in PATTERNS:
        if not torch_change and not npu:
            continue
        if pid == "attention":  # told by its shapes, and fused as an edit of the graph (attention.py)
            hit = attention_finding(inp, regex, title, torch_change, npu_change)
            found += [hit] if hit else []
            continue
        count, total, first = _matches(inp, threads, regex)
        if count < th.FUSION_MIN_REPEATS:
            continue
        matched = total // inp.steps
        found.append(Finding(
            f"fusable_{pid}", "", "info", title,
            f"The operator sequence '{regex.replace('(?:', '(')}' runs {count} times in the window "
            f"({count / inp.steps:.1f} per step, {ms(matched)} per step).",
            why="Each operator is a kernel launch and a round trip of its tensors through device memory; "
                "one fused kernel does the same work once.",
            change_torch=torch_change or "torch.compile the code that issues it", change_npu=npu_change,
            gain_ns=matched, gain_basis="the time of the matched operators; the fused call still costs part of it",
            value=count, figures={"occurrences": count, "matched_ns_matched": matched},
            evidence=[evidence("operators", first, f"{first}: first operator of the sequence", timeline_name=first)]))
    return found


def _inside(inp: RuleInput, ranges: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Per candidate row: it starts inside one of the `ranges` rows on the same thread. Per thread, the
    ranges' union as disjoint intervals and one search per candidate (a window of many optimizer steps
    has thousands of ranges against a million host rows)."""
    ev = inp.ctx.ev
    out = np.zeros(len(candidates), bool)
    ranges = np.asarray(ranges, np.int64)
    if not len(ranges) or not len(candidates):
        return out
    ts = ev["ts"][candidates]
    for pid, tid in set(zip(ev["pid"][ranges].tolist(), ev["tid"][ranges].tolist())):
        mine = ranges[(ev["pid"][ranges] == pid) & (ev["tid"][ranges] == tid)]
        starts, ends = _union(ev["ts"][mine], ev["ts"][mine] + ev["dur"][mine])
        here = (ev["pid"][candidates] == pid) & (ev["tid"][candidates] == tid)
        at = np.searchsorted(starts, ts[here], side="right") - 1
        out[here] = (at >= 0) & (ts[here] < ends[np.maximum(at, 0)])
    return out


def _union(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[lo, hi) intervals merged into sorted disjoint ones (touching intervals stay apart: a start at
    one's end is outside it and inside the next)."""
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], np.maximum.accumulate(hi[order])
    new = np.ones(len(lo), bool)
    new[1:] = lo[1:] >= hi[:-1]
    starts = lo[new]
    ends = np.maximum.reduceat(hi, np.flatnonzero(new))
    return starts, ends


def _optimizer_work(inp: RuleInput, ranges: np.ndarray) -> list[str]:
    """Names of the operators and kernels the optimizer ranges run: host ops inside them, and the
    device kernels those ops (or the ranges) launched."""
    ctx = inp.ctx
    host = ctx.host.rows
    inner = _inside(inp, ranges, host)
    names = set(distinct(ctx.ev["name"][host[inner]]).tolist())
    owner = ctx.device_owner
    ok = owner != NONE
    if ok.any():
        launched = np.zeros(len(owner), bool)
        launched[ok] = inner[owner[ok]]
        names |= set(ctx.ev["name"][ctx.device_rows[launched]].tolist())
    strings = ctx.table.strings
    return [strings[i] or "" for i in names]


def _optimizer_classes(inp: RuleInput) -> dict[str, np.ndarray]:
    """{optimizer class: its Optimizer.step rows}, wrappers (a step range holding another class's
    step, e.g. torchrec's CombinedOptimizer) left out: their inner optimizers are judged."""
    rows = host_rows(inp, _OPTIMIZER_RE)
    strings, ev = inp.ctx.table.strings, inp.ctx.ev
    by_class: dict[str, list] = {}
    for r in rows.tolist():
        by_class.setdefault(_OPTIMIZER_RE.match(strings[int(ev["name"][r])]).group(1), []).append(r)
    out = {}
    for kind, own in by_class.items():
        others = np.array([r for k, rs in by_class.items() if k != kind for r in rs], np.int64)
        if len(others) and _inside(inp, np.array(own, np.int64), others).any():
            continue  # a wrapper
        out[kind] = np.array(own, np.int64)
    return out


def _advice(kind: str) -> str:
    """What to change, with the arguments the class has (torch 2.x signatures), never others."""
    if kind in TORCH_FUSED:
        return f"torch.optim.{kind}(..., fused=True) (or foreach=True)"
    if kind in TORCH_FOREACH:
        return f"torch.optim.{kind}(..., foreach=True): the multi-tensor implementation (it has no fused one)"
    return (f"{kind} is not a torch.optim optimizer: use a fused or multi-tensor implementation of it if its "
            f"library has one (its own documentation says which argument)")


@rule("unfused_optimizer", "time")
def unfused_optimizer(inp: RuleInput):
    if inp.ctx is None:
        return None

    @functools.cache
    def call_cost() -> float:  # read once for all the window's optimizer classes, and only where one needs it
        return _dispatch_gap(inp)
    found = []
    for kind, rows in _optimizer_classes(inp).items():
        if FUSED_CLASS_RE.search(kind):
            continue  # apex / DeepSpeed / Megatron FusedAdam, FusedLAMB ...: fused by design
        work = _optimizer_work(inp, rows)
        if any(FUSED_WORK_RE.search(name) for name in work):
            continue  # fused kernels / ops run inside it
        foreach = any(FOREACH_WORK_RE.search(name) for name in work)
        if foreach and kind not in TORCH_FUSED:
            continue  # multi-tensor already, and the class has nothing fused beyond that
        removes = rows_set(inp, rows)
        name = inp.ctx.table.strings[int(inp.ctx.ev["name"][rows[0]])]
        shown = longest(inp, rows, view="operators", row=name, label=name)
        step_ns = per_step(inp, removes)
        found.append(Finding(
            "", "", "info", f"The {kind} optimizer runs " + ("multi-tensor, not fused" if foreach else "unfused"),
            f"{name} runs {len(rows)} times, {ms(step_ns)} per step, "
            + ("with multi-tensor (foreach) kernels and no fused one." if foreach else
               "one small operator per parameter tensor (no fused or multi-tensor kernel inside it)."),
            why="An unfused optimizer launches several small kernels per parameter tensor; a multi-tensor one "
                "still a few per group of tensors, where the fused one launches one.",
            change_torch=f"torch.optim.{kind}(..., fused=True)" if foreach else _advice(kind),
            change_npu=f"{FUSED_OPTIMIZERS_NPU.get(kind, 'the torch_npu.optim.NpuFused* optimizer of the same kind')}",
            gain_ns=step_ns, gain_basis="the optimizer step's time per step", value=step_ns,
            figures={"optimizer_ns_per_step": step_ns},
            evidence=[shown] if shown else [evidence("operators", name, name, timeline_name=name)],
            figure="host_total", figure_value=_host_total(inp, name), view="operators",
            removes=removes, removes_what=[name], shrink=_fused(inp, rows, removes, call_cost),
            edit="each operator kind of the optimizer called once per step instead of once per tensor (its "
                 "arithmetic kept, the per-call cost of the others gone)"))
    return found


def _fused(inp: RuleInput, rows: np.ndarray, removes, call_cost) -> tuple | None:
    """The fused (or multi-tensor) optimizer as an edit of the graph. Its host time is the operator calls, the
    glue between them (the Python loop over parameter tensors, inside the step's range but in no call) and each
    range's edges (before its first call and after its last: the per-step set-up, which every implementation
    runs, kept). The glue is paid once per operator kind instead of once per call. With device work, its calls
    only launch kernels: they go the same way (one launch per kind), and each kernel keeps its time above the
    window's per-kernel floor (the 10th percentile of the kernels' time; the arithmetic) plus one floor per kind.
    On the CPU the multi-tensor implementations still call one operator per tensor, from C++ (a CPU trace of
    foreach=True shows them under each _foreach_ call): the calls stay, each with the cost of a call made from
    C++ (call_cost(): the window's _dispatch_gap), and the Python glue goes. The time that goes is read per call
    (per gap between two calls, for the glue) as its lower median over the ranges (_typical): each range runs the
    same code, and one the machine stalled in (a thread descheduled for milliseconds) would stall the fused step
    as much. None without calls inside it."""
    ctx = inp.ctx
    host = ctx.host
    inner = _inside(inp, rows, host.rows)
    calls = np.flatnonzero(inner & ctx.host_op & ~ctx.op_in_op)  # the calls the step's code makes, not their ops
    if not len(calls):
        return None
    kinds = len(distinct(ctx.ev["name"][host.rows[calls]])) * len(rows)
    per_kind = min(kinds / len(calls), 1.0)
    total = float((np.asarray(removes[1]) - np.asarray(removes[0])).sum())
    loop, in_calls, count = _per_range(inp, host.rows[calls], removes)  # the rest of a range: its edges, kept
    if has_device_work(inp.digest):
        kept = total - _typical(loop, count) * (1 - per_kind)
    else:
        glue = _typical(np.maximum(loop - in_calls, 0.0), np.maximum(count - 1, 0))
        kept = total - glue + min(glue, glue * per_kind + len(calls) * call_cost())
    host_factor = min(kept / total, 1.0) if total > 0 else 1.0
    owner = ctx.device_owner
    launched = np.zeros(len(owner), bool)
    launched[owner != NONE] = inner[owner[owner != NONE]]
    dev = ctx.device_rows[launched]
    dev_factor = 1.0
    if len(dev):
        durs = ctx.ev["dur"][dev].astype(np.float64)
        dev_floor = float(np.percentile(ctx.ev["dur"][ctx.device_rows], 10))
        dev_arith = float(np.maximum(durs - dev_floor, 0).sum())
        dev_kinds = len(distinct(ctx.ev["name"][dev])) * len(rows)
        dev_kept = dev_arith + dev_floor * min(dev_kinds, len(dev))
        dev_factor = min(dev_kept / durs.sum(), 1.0) if durs.sum() > 0 else 1.0
    return removes, host_factor, dev, dev_factor


def _per_range(inp: RuleInput, call_rows: np.ndarray, removes) -> tuple:
    """Per range (removes: disjoint, sorted): the time from its first call's start to its last call's end (the calls
    and the glue between them; 0 without a call; a call may run past the range's end, which stays out), its calls'
    time and their count. Each call starts inside one of them (the calls were chosen so)."""
    lo, hi = np.asarray(removes[0]), np.asarray(removes[1])
    ts = inp.ctx.ev["ts"][call_rows]  # int64 ns, as every time of the table
    dur = inp.ctx.ev["dur"][call_rows]
    at = np.searchsorted(lo, ts, side="right") - 1
    first, last = hi.copy(), lo.copy()
    np.minimum.at(first, at, ts)
    np.maximum.at(last, at, ts + dur)
    count = np.bincount(at, minlength=len(lo))
    loop = np.where(count > 0, np.minimum(last, hi) - first, 0).astype(np.float64)
    return loop, np.bincount(at, weights=dur, minlength=len(lo)), count


def _typical(values: np.ndarray, units: np.ndarray) -> float:
    """The ranges' time (values) as their typical time per unit (a call, a gap between calls) makes it: the lower
    median of value / units over the ranges with units, times all the units; never more than they took."""
    has = units > 0
    if not has.any():
        return float(values.sum())
    per = np.sort(values[has] / units[has])
    return float(min(values.sum(), per[(len(per) - 1) // 2] * units.sum()))


def _dispatch_gap(inp: RuleInput) -> float:
    """The host's cost of one operator call made from C++, with no Python between: the median gap between two
    consecutive operators that one operator calls (a _to_copy's empty_strided then copy_), over the window.
    0 where no operator calls two."""
    ctx = inp.ctx
    parent = ctx.host.parent
    child = np.flatnonzero(ctx.op_in_op)
    rows = ctx.host.rows[child]
    ts = ctx.ev["ts"][rows]
    end = ts + ctx.ev["dur"][rows]
    order = np.lexsort((ts, parent[child]))
    par, ts, end = parent[child][order], ts[order], end[order]
    gaps = (ts[1:] - end[:-1])[par[1:] == par[:-1]]
    gaps = gaps[gaps >= 0]
    return float(np.median(gaps)) if len(gaps) else 0.0


def _host_total(inp: RuleInput, name: str) -> float:
    return next((float(o.host_total_ns) for o in inp.digest.ops_by_name if o.name == name), float("nan"))
