"""Compute efficiency: matmul / conv shapes and dtypes that keep Tensor Cores or cube units idle,
judged for the device that ran them; tiny kernels; AI_CPU operators; compilation."""
from __future__ import annotations

import json
import re

from ..kernels import CORE_ELIGIBLE, CORE_TENSOR
from ..names import name_map
from ..summary import has_device_work
from . import thresholds as th
from .engine import RuleInput, rule
from .. import intervals as iv
from .events import COMPILE_RE, OP_COMPILE_RE, host_rows, longest, rows_set
from .finding import Finding, evidence, ms, pct
from .workload import fused_attention, low_precision_share, vendor

# fp32 GEMMs on TF32 Tensor Cores (Ampere on): cutlass / cuBLAS name them *s1688gemm* / *s16816* / *tf32*
TF32_KERNEL_RE = re.compile(r"tf32|s1688|s16816", re.I)
# GEMM kernels picked for operands not aligned to 16 bytes (cutlass / cuBLAS template suffix)
ALIGN_KERNEL_RE = re.compile(r"_align[12]\b|_align[12]>")
MATMUL_RE = re.compile(r"^aten::(mm|addmm|bmm|baddbmm|matmul|linear|conv\d?d|convolution|_convolution|einsum)$")


def _cc(text: str) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return 0.0


def _max_cc(inp: RuleInput) -> float:
    return max((_cc(d.compute_capability) for d in inp.digest.window.devices if d.kind == "cuda"), default=0.0)


def _fp32_to_tensor_ratio(inp: RuleInput) -> float:
    """fp32 / fp16 Tensor-Core peak of the window's GPU (the lowest over its devices), 0 when unknown."""
    ratios = [p.tflops["fp32"] / p.tflops["fp16"] for p in inp.digest.roofline.peaks
              if p.kind == "cuda" and p.tflops.get("fp32", 0) > 0 and p.tflops.get("fp16", 0) > p.tflops["fp32"]]
    return min(ratios, default=0.0)


@rule("tensor_cores_unused", "compute")
def tensor_cores_unused(inp: RuleInput):
    """Kernels under Tensor-Core-eligible operators, none on Tensor Cores (GPU, Volta on)."""
    cores = {c.core: c.total_ns for c in inp.digest.cores}
    kernel_total = sum(cores.values())
    cc = _max_cc(inp)
    if CORE_TENSOR not in cores or cores[CORE_TENSOR] > 0 or kernel_total <= 0 or cc < th.TENSOR_CORE_CC:
        return None
    share = cores.get(CORE_ELIGIBLE, 0) / kernel_total
    if share <= th.TC_ELIGIBLE_SHARE:
        return None
    how = "mixed precision: with torch.autocast('cuda', dtype=torch.float16" + \
          (" or torch.bfloat16)" if cc >= th.BF16_CC else ")")
    if cc >= th.TF32_CC:
        how += "; or TF32 for fp32 matmuls: torch.backends.cuda.matmul.allow_tf32 = True (cudnn.allow_tf32 for conv)"
    else:
        how += f" (compute capability {cc:.1f}: fp16 Tensor Cores only)"
    a = inp.digest.average
    # the eligible kernels' time, never more than the device computed in the step (streams run in parallel)
    per_step = min(cores.get(CORE_ELIGIBLE, 0) // inp.steps, a.compute_ns + a.overlapped_ns)
    # on Tensor Cores that time shrinks at most by the ratio of the device's fp32 and fp16 peaks
    # (V100: 15.7 / 125 TFLOP/s): the rest of it stays
    kept = _fp32_to_tensor_ratio(inp)
    basis = "the eligible kernels' time per step, " + (
        f"less the {pct(kept)} of it that remains at the Tensor Cores' fp16 peak (device datasheet)" if kept > 0
        else "of which Tensor Cores would save a large part")
    per_step = int(per_step * (1 - kept))
    return Finding(
        "", "", "warning", "Tensor Cores are not used",
        f"Kernels of Tensor-Core-eligible operators take {pct(share)} of the kernel time ({CORE_ELIGIBLE}), "
        f"yet no kernel runs on Tensor Cores (Kernels: Tensor Cores 0 %).",
        why="fp32 matmuls / convolutions run on the CUDA cores at a fraction of the Tensor Cores' rate.",
        change_torch=how, gain_ns=per_step,
        gain_basis=basis, **_at_tensor_core_rate(inp, kept),
        value=share, figures={"tc_eligible_share": share, "compute_capability": cc},
        evidence=[evidence("kernels", CORE_ELIGIBLE, "Kernels by core")],
        figure="tc_eligible", figure_value=share, view="kernels", threshold=th.TC_ELIGIBLE_SHARE)


def _dims(shapes: str) -> list[list[int]]:
    try:
        parsed = json.loads(shapes)
    except ValueError:
        return []
    return [s for s in parsed if isinstance(s, list) and len(s) >= 2 and all(isinstance(x, int) for x in s)]


def _unaligned(shapes: str, align: int) -> bool:
    """Any of the last two dims of a matrix input not a multiple of `align` (conv: channels)."""
    return any(x % align for s in _dims(shapes) for x in s[-2:] if x > 1) if _dims(shapes) else False


def tf32_kernels(inp: RuleInput) -> list:
    """Kernels whose names say they run fp32 matmuls on TF32 Tensor Cores (cutlass *_s1688gemm*, *tf32*)."""
    return [k for k in inp.digest.kernels_by_name if TF32_KERNEL_RE.search(k.name)]


def tensor_core_share(inp: RuleInput) -> float | None:
    """The Overview's Tensor Core share of kernel time (the first GPU's), None where unknown."""
    shares = [g.tensor_core_share for g in inp.digest.gpu_efficiency if g.tensor_core_share >= 0]
    return max(shares) if shares else None


def _unaligned_kernels(inp: RuleInput) -> list:
    """GEMM kernels that the library chose for unaligned operands (cutlass / cuBLAS *_align1 / _align2)."""
    return [k for k in inp.digest.kernels_by_name if ALIGN_KERNEL_RE.search(k.name)]


@rule("matmul_alignment", "compute")
def matmul_alignment(inp: RuleInput):
    d = inp.digest
    metric = "device_self_ns" if has_device_work(d) else "host_self_ns"
    total = sum(getattr(o, metric) for o in d.ops_by_name if not o.name.startswith("ProfilerStep#"))
    mm = [o for o in d.ops_by_shape if MATMUL_RE.match(o.name) and o.input_shapes]
    mm_time = sum(getattr(o, metric) for o in d.ops_by_name if MATMUL_RE.match(o.name))
    if total <= 0 or mm_time / total <= th.MATMUL_SHARE:
        return None
    if not mm or not has_device_work(d):  # no shapes: needs_shapes; the CPU: needs_device says what would judge
        return None
    label = inp.device_label()
    npu = label.startswith("npu")
    align = th.CUBE_ALIGN_ELEMENTS if npu else th.ALIGN_ELEMENTS
    calls = sum(o.calls for o in mm)
    bad = [o for o in mm if _unaligned(o.input_shapes, align)]
    bad_calls = sum(o.calls for o in bad)
    if not calls or bad_calls / calls <= th.UNALIGNED_CALL_SHARE:
        return None
    tc = tensor_core_share(inp)
    narrow = _unaligned_kernels(inp)
    who = vendor(inp)
    matrix = [k for k in d.kernels_by_name if name_map().family_of(k) in ("matmul", "convolution")]
    low = low_precision_share(inp, matrix) >= th.LOW_PRECISION_SHARE  # autocast would change nothing
    if npu:
        judged = "cube units work on 16 x 16 fractals"
    elif who != "nvidia":  # AMD's Matrix Cores (MFMA), the CPU's vector units: no Tensor Core / TF32 wording
        judged = "the matrix units' tiles want dims that are multiples of 8 (16 for int8)"
    elif tc:  # Tensor Cores run (the Overview says so): the unaligned ones run with narrow loads, not off them
        judged = (f"Tensor Core kernels run ({pct(tc)} of the kernel time, Overview), but unaligned operands get "
                  f"kernels with narrow memory access" + (f" ({narrow[0].name.split('(')[0][:80]}...)" if narrow else ""))
    else:
        judged = "Tensor Cores want dims that are multiples of 8 (fp16 / bf16; 16 for int8)"
    bad.sort(key=lambda o: -getattr(o, metric))
    share = bad_calls / calls
    return Finding(
        "", "", "info", f"Matmul / convolution dimensions not divisible by {align}",
        f"Matmul / convolution operators take {pct(mm_time / total)} of the operators' self time; "
        f"{pct(share)} of their calls have a dimension not divisible by {align} "
        f"(e.g. {bad[0].name} {bad[0].input_shapes}, {bad[0].calls} calls).",
        why=f"Unaligned dimensions fall back to slower kernels or padding: {judged}."
            + ("" if tc or low or who != "nvidia" else
               " Input dtypes are not in the trace; fp32 inputs need TF32 / autocast for Tensor Cores."),
        change_torch=f"pad hidden sizes, vocabulary and batch to multiples of {align} (64 is safer)"
                     + ("" if tc or low or tf32_kernels(inp) else ", and run matmuls under torch.autocast (float16 / bfloat16)") + ".",
        change_npu="pad to multiples of 16 (the inner axis to 256 for cube affinity)"
                   + ("." if low else " and use torch.autocast('npu', dtype=torch.float16 / bfloat16)."),
        gain_ns=-1, gain_basis=f"at most the matmul time, {ms(mm_time // inp.steps)} per step",
        value=share, figures={"matmul_share": mm_time / total, "unaligned_call_share": share, "align": align},
        evidence=[evidence("operators", o.name, f"{o.name} {o.input_shapes}", timeline_name=o.name) for o in bad[:3]]
        + [evidence("kernels", k.name, "a kernel for unaligned operands", timeline_name=k.name) for k in narrow[:1]],
        figure="op_calls", figure_value=float(next((o.calls for o in d.ops_by_name if o.name == bad[0].name), 0)),
        view="operators", at_most_ns=mm_time // inp.steps)


# what to do about a family of kernels that dominates the device time: (torch, torch_npu) per family, fitted to
# the device's vendor and to what already runs by _family_advice (docs/rules.md "Classification")
FAMILY_ADVICE = {
    "copy / layout": ("fewer copies: avoid .contiguous() / .to() in the loop, keep one memory format",
                      "avoid TransData / Cast: torch_npu.npu.config.allow_internal_format, consistent dtypes"),
    "optimizer": ("a fused or multi-tensor optimizer: torch.optim.AdamW(..., fused=True) or foreach=True",
                  "the torch_npu.optim.NpuFused* optimizer of the same kind"),
    "embedding": ("batch the lookups of many tables into one kernel (fbgemm_gpu's table-batched embeddings, "
                  "torchrec's EmbeddingBagCollection); keep the indices on the device", ""),
}
_FUSE = ("fuse the small operators (torch.compile)", "the torch_npu.npu_* fused operators, graph mode")
_AUTOCAST = {"nvidia": "torch.autocast('cuda', dtype=torch.bfloat16 / float16)",
             "amd": "torch.autocast('cuda', dtype=torch.bfloat16 / float16)",
             "cpu": "torch.autocast('cpu', dtype=torch.bfloat16) where the CPU computes bf16 natively"}


def _family_advice(inp: RuleInput, family: str, members: list) -> tuple[str, str]:
    """(torch change, torch_npu change) for a dominant family: NVIDIA's settings (TF32, compute capability)
    only on NVIDIA, autocast only where the kernels do not run a lower precision already, the fused attention
    APIs only where no fused attention kernel runs."""
    who = vendor(inp)
    low = low_precision_share(inp, members) >= th.LOW_PRECISION_SHARE
    cast = "" if low else _AUTOCAST.get(who, "torch.autocast(device_type, dtype=torch.bfloat16 / float16)")
    cast_npu = "" if low else "torch.autocast('npu', dtype=torch.float16 / bfloat16)"
    if family == "matmul":
        parts = [f"lower precision ({cast})"] if cast else []
        if who == "nvidia" and not low and _max_cc(inp) >= th.TF32_CC and not tf32_kernels(inp):
            parts.append("TF32 for the fp32 matmuls (torch.backends.cuda.matmul.allow_tf32 = True)")
        if who == "amd":
            parts.append("PYTORCH_TUNABLEOP_ENABLED=1, so that PyTorch picks the fastest rocBLAS / hipBLASLt GEMM")
        parts.append("dimensions that are multiples of 8" + (" (16 for fp8 / int8)" if who != "cpu" else ""))
        return "; ".join(parts), "; ".join(([cast_npu] if cast_npu else []) + ["dimensions that are multiples of 16"])
    if family == "convolution":
        bench = {"nvidia": "torch.backends.cudnn.benchmark = True",
                 "amd": "torch.backends.cudnn.benchmark = True (MIOpen then searches its solvers)"}.get(who, "")
        parts = ["channels_last memory format (model.to(memory_format=torch.channels_last))"]
        parts += [bench] if bench else []
        parts += [cast] if cast else []
        return ", ".join(parts), "; ".join(([cast_npu] if cast_npu else []) + ["keep the NC1HWC0 format (no TransData)"])
    if family == "attention":
        fused = fused_attention(members)
        if fused:  # it runs fused already: what is left is the work it is given
            name = max(fused, key=lambda k: k.total_ns).name.split("(")[0][:80]
            return (f"the attention runs fused kernels already ({name}): pack variable-length sequences so that "
                    "no padding is computed, and use a causal / sliding-window mask where the model allows", "")
        return ("torch.nn.functional.scaled_dot_product_attention with a flash / memory-efficient kernel",
                "torch_npu.npu_fusion_attention")
    return FAMILY_ADVICE.get(family, _FUSE)


@rule("dominant_kernel_family", "compute")
def dominant_kernel_family(inp: RuleInput):
    kernels = [k for k in inp.digest.kernels_by_name if not k.communication and k.total_ns > 0]
    total = sum(k.total_ns for k in kernels)
    if total <= 0:
        return None
    names = name_map()
    by_family: dict = {}
    for k in kernels:  # the digest's family (launcher, category, name tokens: analysis/kernel_families.py)
        by_family.setdefault(names.family_of(k), []).append(k)
    family, members = max(by_family.items(), key=lambda kv: sum(k.total_ns for k in kv[1]))
    share = sum(k.total_ns for k in members) / total
    if share <= th.DOMINANT_SHARE or family in ("other", "communication"):
        return None
    torch_advice, npu_advice = _family_advice(inp, family, members)
    top = max(members, key=lambda k: k.total_ns)
    return Finding(
        "", "", "info", f"{family} kernels dominate the device time",
        f"{family} kernels take {pct(share)} of the kernel time ({len(members)} kernels; largest {top.name}).",
        why="The device time is as short as this family's kernels can be made.",
        change_torch=torch_advice, change_npu=npu_advice,
        gain_basis=f"depends on their efficiency; at most {ms(sum(k.total_ns for k in members) // inp.steps)} per step",
        value=share, figures={"family_share": share},
        evidence=[evidence("kernels", top.name, top.name, timeline_name=top.name)],
        figure="kernel_share", figure_value=share, view="kernels", threshold=th.DOMINANT_SHARE,
        at_most_ns=sum(k.total_ns for k in members) // inp.steps)


@rule("tiny_kernels", "compute")
def tiny_kernels(inp: RuleInput):
    kernels = [k for k in inp.digest.kernels_by_name if not k.communication]
    calls, total = sum(k.calls for k in kernels), sum(k.total_ns for k in kernels)
    if calls < th.TINY_KERNEL_MIN_CALLS or total / calls >= th.TINY_KERNEL_NS:
        return None
    mean = total / calls
    return Finding(
        "", "", "info", "Many tiny kernels",
        f"{calls} kernels with a mean of {mean / 1000:.1f} us each (Kernels: Mean Duration).",
        why="Below ~10 us a kernel costs about as much to launch as to run.",
        change_torch="fuse operators (torch.compile), use larger batches or CUDA graphs.",
        change_npu="fuse operators (the torch_npu.npu_* fused APIs), graph mode, TASK_QUEUE_ENABLE=2.",
        gain_basis="the launch overhead is in the Runtime column, see its finding", value=mean,
        figures={"kernels": calls, "mean_kernel_ns": mean},
        evidence=[evidence("kernels", "", "Kernels by Mean Duration")],
        figure="kernel_mean", figure_value=mean, view="kernels", threshold=th.TINY_KERNEL_NS)


@rule("ai_cpu", "compute")
def ai_cpu(inp: RuleInput):
    slow = [k for k in inp.digest.kernels_by_name if k.core.upper() == "AI_CPU" and k.max_ns >= th.AI_CPU_NS]
    if not slow:
        return None
    slow.sort(key=lambda k: -k.total_ns)
    worst = max(slow, key=lambda k: k.max_ns)
    total = sum(k.total_ns for k in slow)
    return Finding(
        "", "", "warning", "Operators run on AI_CPU",
        f"{len(slow)} operators run as AI_CPU tasks of at least {th.AI_CPU_NS // 1000} us (longest "
        f"{worst.name}, {worst.max_ns / 1000:.1f} us): {', '.join(k.name for k in slow[:5])}.",
        why="AI_CPU runs on the NPU's control CPU, far slower than AI Core, and breaks the pipeline of tasks.",
        change_npu="change their data types (double -> float, int64 -> int32) or shapes so they run on AI Core; "
                   "move data-dependent ops (nonzero, unique) off the hot path.",
        gain_ns=total // inp.steps, gain_basis="these AI_CPU tasks' time per step", value=worst.max_ns,
        figures={"ai_cpu_ops": len(slow), "ai_cpu_max_ns": worst.max_ns},
        evidence=[evidence("kernels", k.name, f"{k.name} ({k.core})", timeline_name=k.name) for k in slow[:3]],
        figure="kernel_max", figure_value=float(worst.max_ns), view="kernels", threshold=th.AI_CPU_NS)


@rule("compilation", "time")
def compilation(inp: RuleInput):
    rows = host_rows(inp, COMPILE_RE)
    removes = rows_set(inp, rows)
    total = int(iv.measure(removes, [inp.digest.window.start_ns], [inp.digest.window.end_ns])[0]) if removes else 0
    window = inp.digest.window.end_ns - inp.digest.window.start_ns
    share = total / window if window > 0 else 0.0
    op_compile = len(host_rows(inp, OP_COMPILE_RE)) >= th.OP_COMPILE_CALLS
    if share <= th.COMPILE_SHARE and not op_compile:
        return None
    shown = longest(inp, rows)
    return Finding(
        "", "", "warning", "Graph / operator compilation inside the window",
        f"{len(rows)} compilation events take {ms(total)}, {pct(share)} of the window.",
        why="Compiling in the measured steps means shapes change from step to step (recompilation) or the "
            "window starts too early; every compile stalls the step.",
        change_torch="keep shapes static (pad / bucket sequence lengths), mark dynamic dims "
                     "(torch._dynamo.mark_dynamic), check TORCH_LOGS=recompiles; start the profiler after warm-up "
                     "(schedule wait / warmup).",
        change_npu="torch_npu.npu.set_compile_mode(jit_compile=False) and "
                   "torch_npu.npu.config.allow_internal_format = False for dynamic shapes (binary kernels, no compile).",
        gain_ns=total // inp.steps, gain_is_bound=False, value=share,
        gain_basis="the compilation ranges per step; guard checks and cache misses around them come on top",
        figures={"compile_events": len(rows), "compile_ns": total, "compile_share": share},
        evidence=[shown] if shown else [evidence("timeline", "", "compilation events")],
        figure="compile_time", figure_value=float(total), view="trace",
        removes=removes, removes_what=["compilation ranges"])


def _at_tensor_core_rate(inp: RuleInput, kept: float) -> dict:
    """The change as an edit of the graph: the eligible kernels shrunk to the share the fp16 Tensor-Core peak
    leaves of their time (the device's datasheet peaks); {} where the peaks or the events are unknown."""
    if inp.ctx is None or kept <= 0:
        return {}
    from ..kernels import eligible_rows
    rows = eligible_rows(inp.ctx)
    if not len(rows):
        return {}
    return {"scale": (rows, kept), "edit": f"the eligible kernels at the Tensor Cores' rate ({pct(kept)} of their time)"}
