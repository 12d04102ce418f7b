"""Memory: peak near capacity, fragmentation, allocator churn, empty_cache calls."""
from __future__ import annotations

from . import thresholds as th
from .engine import RuleInput, rule
from .. import intervals as iv
from .events import MEMORY_CALL_RE, host_rows, longest, rows_set
from .finding import Finding, evidence, ms, pct
from .workload import is_inference


def _gib(b: float) -> str:
    return f"{b / 2 ** 30:.2f} GiB"


@rule("peak_memory", "memory")
def peak_memory(inp: RuleInput):
    found = []
    for m in inp.digest.memory:
        if m.capacity_bytes <= 0 or m.peak_allocated_bytes <= 0:
            continue
        ratio = max(m.peak_allocated_bytes, m.peak_reserved_bytes) / m.capacity_bytes
        if ratio <= th.PEAK_MEMORY_SHARE:
            continue
        found.append(Finding(
            "", "", "warning", f"Memory of {m.device} is nearly full",
            f"Peak memory on {m.device} is {_gib(m.peak_allocated_bytes)} allocated, {_gib(m.peak_reserved_bytes)} "
            f"reserved, of {_gib(m.capacity_bytes)} ({pct(ratio)}; Memory: Peak memory).",
            why="Near the limit the allocator frees and retries (slow) and the next larger batch fails.",
            change_torch=("run under torch.inference_mode(), lower-precision weights (bf16 / fp8), a smaller "
                          "batch, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True." if is_inference(inp) else
                          "activation checkpointing (torch.utils.checkpoint), mixed precision (torch.autocast), a "
                          "smaller micro-batch with gradient accumulation, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True."),
            change_npu="the same; PYTORCH_NPU_ALLOC_CONF=expandable_segments:True.",
            gain_basis="memory, not time", value=ratio, figures={"peak_share": ratio},
            evidence=[evidence("memory", m.device, "peak", ts_ns=m.peak_ts_ns, dur_ns=1_000_000)],
            figure="memory_peak", figure_value=float(max(m.peak_allocated_bytes, m.peak_reserved_bytes)),
            view="memory", threshold=th.PEAK_MEMORY_SHARE * m.capacity_bytes))
    return found


@rule("fragmentation", "memory")
def fragmentation(inp: RuleInput):
    found = []
    for m in inp.digest.memory:
        alloc, reserved = m.peak_allocated_bytes, m.peak_reserved_bytes
        if alloc <= 0 or reserved < th.FRAGMENTATION_RATIO * alloc or reserved - alloc < th.FRAGMENTATION_MIN_BYTES:
            continue
        found.append(Finding(
            "", "", "info", f"Reserved memory far above allocated on {m.device}",
            f"Peak reserved {_gib(reserved)} is {reserved / alloc:.1f}x the peak allocated {_gib(alloc)} "
            f"(Memory: Peak reserved).",
            why="The caching allocator holds blocks it cannot reuse for the sizes asked: fragmentation.",
            change_torch="PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; allocate the largest buffers first; "
                         "keep tensor sizes constant between steps.",
            change_npu="PYTORCH_NPU_ALLOC_CONF=expandable_segments:True.",
            gain_basis="memory, not time", value=reserved / alloc,
            figures={"reserved_over_allocated": reserved / alloc},
            evidence=[evidence("memory", m.device, "Peak reserved")],
            figure="peak_reserved", figure_value=float(reserved), view="memory",
            threshold=th.FRAGMENTATION_RATIO * alloc))
    return found


@rule("allocator_churn", "memory")
def allocator_churn(inp: RuleInput):
    rows = host_rows(inp, MEMORY_CALL_RE)
    removes = rows_set(inp, rows)
    total = int(iv.measure(removes, [inp.digest.window.start_ns], [inp.digest.window.end_ns])[0]) if removes else 0
    if total <= th.MEMORY_CALLS_NS:
        return None
    devices = [m for m in inp.digest.memory if m.device.upper() != "CPU"]
    shown = longest(inp, rows)
    return Finding(
        "", "", "warning", "Frequent device memory allocation",
        f"{len(rows)} device malloc / free calls take {ms(total)} of host time in the window.",
        why="cudaMalloc / cudaFree (aclrtMalloc / aclrtFree) synchronise the device: the caching allocator is "
            "giving memory back and asking for it again.",
        change_torch="keep shapes stable so the caching allocator reuses blocks; "
                     "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; do not call torch.cuda.empty_cache() in the loop.",
        change_npu="PYTORCH_NPU_ALLOC_CONF=expandable_segments:True; a smaller batch if memory is short; "
                   "no torch.npu.empty_cache() in the loop.",
        gain_ns=total // inp.steps, gain_basis="the malloc / free calls' host time per step", value=total,
        figures={"memory_calls": len(rows), "memory_calls_ns": total},
        evidence=[evidence("memory", devices[0].device if devices else "", "Allocations")] + ([shown] if shown else []),
        figure="malloc_time", figure_value=float(total), view="trace", threshold=th.MEMORY_CALLS_NS,
        removes=removes, removes_what=["malloc / free calls"])


@rule("empty_cache", "memory")
def empty_cache(inp: RuleInput):
    n = max((m.empty_cache_calls for m in inp.digest.memory), default=0)
    if n <= 0:
        return None
    return Finding(
        "", "", "warning", "empty_cache is called",
        f"empty_cache was called {n} times in the window.",
        why="It returns cached blocks to the device, which the allocator must then get back (slow malloc calls "
            "that synchronise); it also makes the memory curves say less about the model.",
        change_torch="remove torch.cuda.empty_cache() from the training loop.",
        change_npu="remove torch.npu.empty_cache() from the training loop.",
        gain_basis="its cost shows as malloc time in the following steps", value=n,
        figures={"empty_cache_calls": n}, evidence=[evidence("memory", "", "empty_cache calls")],
        figure="empty_cache_calls", figure_value=float(n), view="memory", threshold=0.0)
