"""Findings from a snapshot, in bytes (issue 41): each with the figure it rests on, the threshold, and the bytes
it would save, stated as bytes, never as time. Computed over one device's summary (summary.py); not rules of the
digest's engine (the snapshot is not in the digest), but in its shape: rule, severity, title, detail, why, the
changes for torch and torch_npu, gain_bytes and gain (text).

- snapshot_leak: a stack that grows in every step after the first and is never freed (steps.leaks);
- snapshot_fragmentation: reserved far above requested at the peak, without expandable segments (the thresholds
  of the trace's fragmentation rule, rules/thresholds.py);
- snapshot_empty_cache_in_loop: empty_cache() called from the same place more than once;
- snapshot_activations_peak: what the peak's step makes and drops (activations, temporaries) is most of the peak;
- snapshot_rank_peak (across ranks, `rank_findings`): one rank's peak far above the ranks' median.
"""
from __future__ import annotations

from .text import size

ACTIVATIONS_SHARE = 0.5  # of the peak's requested bytes, above


def _thresholds():
    from canning_tb.analysis.rules import thresholds
    return thresholds


def _finding(rule: str, severity: str, title: str, detail: str, why: str, torch: str, npu: str, gain_bytes: int,
             gain: str, figure: str, value: float, threshold: float, stack=None) -> dict:
    return {"rule": rule, "severity": severity, "title": title, "detail": detail, "why": why,
            "change_torch": torch, "change_npu": npu, "gain_bytes": int(gain_bytes), "gain": gain,
            "figure": figure, "figure_value": value, "threshold": threshold, "stack": list(stack or [])}


def device_findings(dev: dict) -> list[dict]:
    found = []
    for leak in dev["leaks"]:
        per_step = leak["bytes_per_step"]
        found.append(_finding(
            "snapshot_leak", "warning", f"Memory grows every step at {leak['frame']}",
            f"Allocations from {leak['frame']} stay alive: {', '.join(size(b) for b in per_step)} more in steps "
            f"{', '.join(map(str, leak['steps']))}, never freed in the history.",
            "Something keeps a reference to a tensor made each step (a list of losses kept with their graph, a "
            "cache keyed by step): memory grows until the job runs out.",
            "keep a Python number (loss.item()) or a detached tensor (t.detach()) instead of the tensor; clear "
            "caches each step.", "the same (torch_npu tensors are kept alike).",
            leak["bytes"], f"{size(leak['bytes'])} over {len(per_step)} steps ({size(per_step[-1])} a step), bytes",
            "leak_bytes_per_step", float(per_step[-1]), 0.0, leak["stack"]))
    th = _thresholds()
    at = dev.get("at_peak") or {}
    reserved, requested = at.get("reserved", -1), at.get("requested", -1)
    expandable = dev["at_snapshot"]["expandable_segments"] > 0
    if (requested > 0 and reserved >= th.FRAGMENTATION_RATIO * requested
            and reserved - requested >= th.FRAGMENTATION_MIN_BYTES and not expandable):
        found.append(_finding(
            "snapshot_fragmentation", "info", "Reserved memory far above what tensors ask for at the peak",
            f"At the peak {size(reserved)} is reserved for {size(requested)} requested ({reserved / requested:.1f}x); "
            f"largest free block at most {size(at.get('largest_free_block_at_most', -1))}.",
            "The caching allocator holds segments it cannot reuse for the sizes asked: fragmentation.",
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "PYTORCH_NPU_ALLOC_CONF=expandable_segments:True",
            reserved - requested, f"up to {size(reserved - requested)} of reserved memory, bytes",
            "reserved_over_requested", reserved / requested, th.FRAGMENTATION_RATIO))
    ec = dev["empty_cache"]
    calls = [x for x in ec["releases"] if x["kind"] == "empty_cache"]
    by_place: dict[str, list] = {}
    for x in calls:
        by_place.setdefault(" / ".join(x["stack"][:4]), []).append(x)
    for place, same in by_place.items():
        if len(same) < 2:
            continue
        released = sum(x["bytes"] for x in same)
        found.append(_finding(
            "snapshot_empty_cache_in_loop", "warning", f"empty_cache() called {len(same)} times from {same[0]['frame']}",
            f"empty_cache() released {size(released)} in {len(same)} calls from the same place; the allocator "
            "reserves it again in the following steps. Peaks of reserved memory read across the calls are not the "
            "job's real need.",
            "Each call gives the cache back to the driver; the next step asks for it again (slow), and the memory "
            "curve no longer shows what the job needs.",
            "remove torch.cuda.empty_cache() from the loop (call it only when memory must go to another process)",
            "remove torch.npu.empty_cache() from the loop", 0,
            f"none in bytes: {size(released)} released and reserved again", "empty_cache_calls", float(len(same)), 2.0,
            same[0]["stack"]))
    tr = dev.get("transient_at_peak") or {}
    peak_bytes = dev["peak"]["requested"]
    if tr.get("bytes", -1) > 0 and peak_bytes > 0 and tr["bytes"] >= ACTIVATIONS_SHARE * peak_bytes:
        top = ", ".join(f"{g['frame']} {size(g['bytes'])}" for g in tr["by_frame"][:3])
        found.append(_finding(
            "snapshot_activations_peak", "info", "What the step makes and drops dominates the peak",
            f"At the peak {size(tr['bytes'])} of {size(peak_bytes)} ({100 * tr['bytes'] / peak_bytes:.0f} %) was "
            f"allocated in step {tr['step']} and freed before it ends (activations, temporaries): {top}.",
            "Activations kept for the backward pass set the peak; recomputing them costs time, saves memory.",
            "activation checkpointing (torch.utils.checkpoint) of the modules named; a smaller micro-batch with "
            "gradient accumulation; torch.autocast", "the same on torch_npu",
            tr["bytes"], f"up to {size(tr['bytes'])} of the peak (what checkpointing can recompute), bytes",
            "transient_share_of_peak", tr["bytes"] / peak_bytes, ACTIVATIONS_SHARE))
    return found


RANK_PEAK_RATIO = 1.2  # a rank's peak above this times the median of the ranks' peaks ...
RANK_PEAK_MIN_BYTES = 256 * 2 ** 20  # ... and at least this much above it


def rank_findings(rows: list[dict]) -> list[dict]:
    """One rank's peak far above the others' (rows: {worker, rank, peak_requested}, -1 unknown); the bytes it
    would save are its excess over the median of the ranks' peaks."""
    known = sorted(r["peak_requested"] for r in rows if r["peak_requested"] >= 0)
    if len(known) < 2:
        return []
    mid = len(known) // 2
    median = known[mid] if len(known) % 2 else (known[mid - 1] + known[mid]) // 2
    found = []
    for r in rows:
        peak = r["peak_requested"]
        if median > 0 and peak >= RANK_PEAK_RATIO * median and peak - median >= RANK_PEAK_MIN_BYTES:
            found.append(_finding(
                "snapshot_rank_peak", "warning", f"Rank {r['rank']} ({r['worker']}) peaks far above the others",
                f"Its peak of requested memory is {size(peak)}, {peak / median:.2f}x the ranks' median {size(median)}.",
                "One rank holds more: an uneven split of the batch, of pipeline stages or of parameters, or work "
                "only rank 0 does (logging, evaluation, checkpoint gathering); the job's memory limit is that rank's.",
                "balance the split; move rank-0-only work out of the step or onto the CPU",
                "the same on torch_npu", peak - median, f"{size(peak - median)} on that rank, bytes",
                "peak_over_median", peak / median, RANK_PEAK_RATIO))
    return found
