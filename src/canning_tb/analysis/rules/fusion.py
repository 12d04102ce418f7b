"""Small operators in a recurring order that one fused API replaces (msprof-analyze's affinity
API check, and the same sequences on CUDA), and optimizers that run unfused."""
from __future__ import annotations

import re

import numpy as np

from ..summary import has_device_work
from . import thresholds as th
from .engine import RuleInput, rule
from .events import host_ranges, top_level_ops
from .finding import Finding, evidence, ms
from .sequence import Sequence, sequences

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
     r"(?:matmul|bmm|baddbmm)(?: (?:div|mul|add|masked_fill|masked_fill_|transpose|contiguous))* "
     r"(?:softmax|_softmax)(?: dropout)? (?:matmul|bmm)",
     "torch.nn.functional.scaled_dot_product_attention (flash / memory-efficient kernels)",
     "torch_npu.npu_fusion_attention"),
    ("confusion_transpose", "permute + contiguous + reshape", r"permute contiguous (?:reshape|view)",
     "", "torch_npu.npu_confusion_transpose"),
]
_OPTIMIZER_RE = re.compile(r"^Optimizer\.step#(\w+)\.step$")
FUSED_OPTIMIZERS_NPU = {"SGD": "torch_npu.optim.NpuFusedSGD", "Adam": "torch_npu.optim.NpuFusedAdam",
                        "AdamW": "torch_npu.optim.NpuFusedAdamW", "RMSprop": "torch_npu.optim.NpuFusedRMSprop",
                        "Adadelta": "torch_npu.optim.NpuFusedAdadelta", "Lamb": "torch_npu.optim.NpuFusedLamb"}
_FUSED_KERNEL_RE = re.compile(r"_fused_(adam|sgd|adagrad)", re.I)


def _thread_sequences(inp: RuleInput) -> list[tuple[Sequence, np.ndarray, np.ndarray]]:
    """Per host thread: (its top-level operators' short names as a Sequence, their name ids, their
    times): device time when the window has device work, else host time."""
    found = top_level_ops(inp)
    if not found:
        return []
    values = inp.ctx.table.strings.values
    short = [""] * len(values)  # the short names of the operators only, never the call stacks beside them
    for name_id in np.unique(np.concatenate([name_ids for name_ids, _, _ in found])).tolist():
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
        count, total, first = _matches(inp, threads, regex)
        if count < th.FUSION_MIN_REPEATS:
            continue
        per_step = total // inp.steps
        found.append(Finding(
            f"fusable_{pid}", "", "info", title,
            f"The operator sequence '{regex.replace('(?:', '(')}' runs {count} times in the window "
            f"({count / inp.steps:.1f} per step, {ms(per_step)} per step).",
            why="Each operator is a kernel launch and a round trip of its tensors through device memory; "
                "one fused kernel does the same work once.",
            change_torch=torch_change or "torch.compile the code that issues it", change_npu=npu_change,
            gain_ns=per_step, gain_basis="the time of the matched operators; the fused call still costs part of it",
            value=count, figures={"occurrences": count, "matched_ns_per_step": per_step},
            evidence=[evidence("operators", first, f"{first}: first operator of the sequence", timeline_name=first)]))
    return found


@rule("unfused_optimizer", "time")
def unfused_optimizer(inp: RuleInput):
    ranges = host_ranges(inp, _OPTIMIZER_RE)
    if not ranges or host_ranges(inp, _FUSED_KERNEL_RE):
        return None
    name, (calls, total) = max(ranges.items(), key=lambda kv: kv[1][1])
    kind = _OPTIMIZER_RE.match(name).group(1)
    per_step = total // inp.steps
    return Finding(
        "", "", "info", f"The {kind} optimizer runs unfused",
        f"{name} runs {calls} times, {ms(per_step)} of host time per step, with no fused optimizer kernel.",
        why="An unfused optimizer launches several small kernels per parameter tensor.",
        change_torch=f"torch.optim.{kind}(..., fused=True) (or foreach=True where fused is not offered)",
        change_npu=f"{FUSED_OPTIMIZERS_NPU.get(kind, 'the torch_npu.optim.NpuFused* optimizer of the same kind')}",
        gain_ns=per_step, gain_basis="the optimizer step's host time per step", value=per_step,
        figures={"optimizer_ns_per_step": per_step},
        evidence=[evidence("operators", name, name, timeline_name=name)])
