"""Rules on how far the work is from the hardware (analysis/efficiency: every operator row's
`work`, the device's roofs; docs/efficiency.md).

`below_roof`: among the operators (by name, all their shapes) whose share of roof is known, the one whose
time at its roof would save the most (its device time x (1 - share of roof)), when it is below
FAR_FROM_ROOF of its roof and takes at least ROOF_TIME_SHARE of the kernel time. The gain is
bounded by the roof: the operator cannot get faster than its roof allows at its intensity.
"""
from __future__ import annotations

from ..summary import kernel_total_ns
from .engine import RuleInput, rule
from .events import device_rows_of_op
from .finding import Finding, evidence, ms, pct
from .workload import LOW_PRECISION, vendor

FAR_FROM_ROOF = 0.5  # ours: below half of its roof
ROOF_TIME_SHARE = 0.05  # ours: at least 5 % of the kernel time

_WHY = {
    "memory": "Below the ridge point its memory roof limits it: only fewer bytes moved (fusing it with its "
              "neighbours, a lower precision) raise that roof; the rest is the kernel's access pattern.",
    "compute": "It has the intensity to keep the matrix / vector units busy; the shortfall is the kernel's "
               "(tile sizes, alignment, dtype, occupancy).",
    "latency": "Its calls are too short to reach either roof: launch, ramp-up and tail effects take most of "
               "their time.",
}
_CHANGE = {
    "memory": ("fuse it with the operators around it (torch.compile), run it in bf16 / fp16 (torch.autocast), "
               "avoid the copies around it (contiguous, dtype casts)",
               "the fused torch_npu.npu_* operators, bf16 / fp16 (torch.autocast('npu'))"),
    "compute": ("a dtype the matrix units are fastest in (bf16 / fp16 / TF32), dimensions multiples of 8 (64 "
                "is safer), a better kernel (cuBLASLt, flash attention)",
                "bf16 / fp16 and dimensions multiples of 16 for the cube, the fused torch_npu.npu_* kernels"),
    "latency": ("fewer, larger calls: batch the work, CUDA graphs, torch.compile",
                "fewer, larger calls: larger batches, graph mode (torchair), TASK_QUEUE_ENABLE=2"),
}


def _change(w, who: str) -> tuple[str, str]:
    """_CHANGE fitted to the device and the dtype that runs (docs/rules.md "Classification"): no bf16 / fp16
    advice where the operator's inputs are below fp32 already, NVIDIA's library names only on NVIDIA."""
    low = w.dtype in LOW_PRECISION
    if w.bound == "memory" and low:
        return ("fuse it with the operators around it (torch.compile), avoid the copies around it (contiguous, "
                "dtype casts)", "the fused torch_npu.npu_* operators")
    if w.bound == "compute":
        dtype = "" if low else "a dtype the matrix units are fastest in (bf16 / fp16" + \
            (" / TF32), " if who == "nvidia" else "), ")
        library = {"nvidia": "a better kernel (cuBLASLt, flash attention)",
                   "amd": "a better kernel (PYTORCH_TUNABLEOP_ENABLED=1 for rocBLAS / hipBLASLt, CK flash attention)"
                   }.get(who, "a better kernel (torch.compile)")
        return (f"{dtype}dimensions multiples of 8 (64 is safer), {library}",
                ("" if low else "bf16 / fp16 and ") + "dimensions multiples of 16 for the cube, the fused "
                "torch_npu.npu_* kernels")
    return _CHANGE.get(w.bound, ("", ""))


def _candidate(inp: RuleInput):
    total = kernel_total_ns(inp.digest)
    rows = [o for o in inp.digest.ops_by_name
            if o.work.model and 0 <= o.work.roof_share < FAR_FROM_ROOF and o.work.time_ns > 0]
    rows = [o for o in rows if total > 0 and o.work.time_ns / total >= ROOF_TIME_SHARE]
    return max(rows, key=lambda o: o.work.time_ns * (1 - o.work.roof_share), default=None), total


@rule("below_roof", "compute")
def below_roof(inp: RuleInput):
    top, total = _candidate(inp)
    if top is None:
        return None
    w = top.work
    gain = int(w.time_ns * (1 - w.roof_share) / inp.steps)
    change_torch, change_npu = _change(w, vendor(inp))
    if w.flops > 0:
        reached = (f"reaches {w.tflops:.3g} TFLOP/s and {w.gbps:.3g} GB/s at {w.intensity:.3g} FLOP/byte: "
                   f"{pct(w.roof_share)} of its roof ({w.roof_tflops:.3g} TFLOP/s, {w.dtype})")
    else:
        work = "computes nothing" if w.flops == 0 else "its FLOPs not modelled"
        reached = f"moves {w.gbps:.3g} GB/s ({work}): {pct(w.roof_share)} of the HBM bandwidth"
    return Finding(
        "", "", "info", f"{top.name} at {pct(w.roof_share)} of its roof",
        f"{top.name} {reached}, {w.bound}-bound at its shapes; it takes {pct(w.time_ns / total)} of the kernel "
        f"time ({ms(w.time_ns / inp.steps)} per step).",
        why=_WHY.get(w.bound, ""), change_torch=change_torch, change_npu=change_npu, gain_ns=gain,
        gain_basis=f"its device time if it ran at its roof ({pct(w.roof_share)} of it now)", value=w.roof_share,
        figures={"roof_share": w.roof_share, "tflops": w.tflops, "intensity": w.intensity, "op_ns": w.time_ns},
        evidence=[evidence("operators", top.name, f"{top.name}: share of roof", timeline_name=top.name)],
        figure="roof_share", figure_value=w.roof_share, view="operators", threshold=FAR_FROM_ROOF,
        at_most_ns=gain, **at_roof(inp, top.name, w.roof_share))


def at_roof(inp: RuleInput, name: str, roof_share: float) -> dict:
    """The change as an edit of the graph: the operator's device work shrunk to its roof's time (share of roof x
    its time), replayed; {} without events (the finding is then an observation)."""
    rows = device_rows_of_op(inp, name)
    if rows is None or not len(rows):
        return {}
    return {"scale": (rows, roof_share), "edit": f"{name}'s device work at its roof ({pct(roof_share)} of its time)"}
