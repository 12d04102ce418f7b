"""The snapshot's findings in bytes (analysis/memory_snapshot/findings.device_findings) written out whole, each
field by hand, and their thresholds at the byte (issue 46: the survivors of a mutation run over device_findings).
The device dicts are the few keys device_findings reads, made by the helpers of test_memory_snapshot_mutants."""
from test_memory_snapshot_mutants import MIB, device, release, rules_of

from canning_tb.analysis.memory_snapshot import findings


def test_a_leak_finding_whole_with_three_steps():
    # 1, 2, 4 KiB in steps 2, 3, 4: 7 KiB in all; the last step's 4 KiB is the figure (not the second's 2 KiB)
    leak = {"frame": "F", "bytes_per_step": [1024, 2048, 4096], "steps": [2, 3, 4], "bytes": 7168, "stack": ["a"]}
    assert findings.device_findings(device(leaks=[leak])) == [{
        "rule": "snapshot_leak", "severity": "warning", "title": "Memory grows every step at F",
        "detail": "Allocations from F stay alive: 1.0 KiB, 2.0 KiB, 4.0 KiB more in steps 2, 3, 4, never freed in "
                  "the history.",
        "why": "Something keeps a reference to a tensor made each step (a list of losses kept with their graph, a "
               "cache keyed by step): memory grows until the job runs out.",
        "change_torch": "keep a Python number (loss.item()) or a detached tensor (t.detach()) instead of the tensor; "
                        "clear caches each step.",
        "change_npu": "the same (torch_npu tensors are kept alike).",
        "gain_bytes": 7168, "gain": "7.0 KiB over 3 steps (4.0 KiB a step), bytes",
        "figure": "leak_bytes_per_step", "figure_value": 4096.0, "threshold": 0.0, "stack": ["a"]}]


def test_a_fragmentation_finding_whole_with_its_largest_free_block_unknown():
    # 768 MiB reserved for 512 MiB: 1.5x, 256 MiB over; no largest free block given: "-"
    at = {"reserved": 768 * MIB, "requested": 512 * MIB}
    assert findings.device_findings(device(at)) == [{
        "rule": "snapshot_fragmentation", "severity": "info",
        "title": "Reserved memory far above what tensors ask for at the peak",
        "detail": "At the peak 768.0 MiB is reserved for 512.0 MiB requested (1.5x); largest free block at most -.",
        "why": "The caching allocator holds segments it cannot reuse for the sizes asked: fragmentation.",
        "change_torch": "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        "change_npu": "PYTORCH_NPU_ALLOC_CONF=expandable_segments:True",
        "gain_bytes": 256 * MIB, "gain": "up to 256.0 MiB of reserved memory, bytes",
        "figure": "reserved_over_requested", "figure_value": 1.5, "threshold": 1.5, "stack": []}]


def test_fragmentation_needs_both_figures_known_and_both_thresholds():
    assert rules_of(device({"requested": 512 * MIB})) == []  # reserved unknown
    assert rules_of(device({"reserved": 768 * MIB})) == []  # requested unknown: no ratio
    # 1 B requested, 257 MiB reserved: far above 1.5x and 257 MiB - 1 B over 256 MiB
    assert rules_of(device({"reserved": 257 * MIB, "requested": 1})) == ["snapshot_fragmentation"]
    # 1300 MiB for 1024 MiB: 276 MiB over, but 1.27x, under 1.5x
    assert rules_of(device({"reserved": 1300 * MIB, "requested": 1024 * MIB})) == []


def test_an_empty_cache_finding_whole_after_a_place_called_once():
    # "z" called once (no finding) comes first; the place a/b/c/d twice, 100 + 300 B
    same = ["a", "b", "c", "d"]
    rel = [release("empty_cache", ["z"], 50), release("empty_cache", same, 100, "first"),
           release("empty_cache", same, 300)]
    assert findings.device_findings(device(releases=rel)) == [{
        "rule": "snapshot_empty_cache_in_loop", "severity": "warning",
        "title": "empty_cache() called 2 times from first",
        "detail": "empty_cache() released 400 B in 2 calls from the same place; the allocator reserves it again in "
                  "the following steps. Peaks of reserved memory read across the calls are not the job's real need.",
        "why": "Each call gives the cache back to the driver; the next step asks for it again (slow), and the memory "
               "curve no longer shows what the job needs.",
        "change_torch": "remove torch.cuda.empty_cache() from the loop (call it only when memory must go to another "
                        "process)",
        "change_npu": "remove torch.npu.empty_cache() from the loop",
        "gain_bytes": 0, "gain": "none in bytes: 400 B released and reserved again",
        "figure": "empty_cache_calls", "figure_value": 2.0, "threshold": 2.0, "stack": same}]


def test_an_activations_finding_whole_at_60_percent():
    # 600 B of a 1000 B peak: 60 %, 0.6 of it
    tr = {"step": 3, "bytes": 600, "by_frame": [{"frame": "f", "bytes": 600}]}
    assert findings.device_findings(device(transient=tr, peak_requested=1000)) == [{
        "rule": "snapshot_activations_peak", "severity": "info",
        "title": "What the step makes and drops dominates the peak",
        "detail": "At the peak 600 B of 1000 B (60 %) was allocated in step 3 and freed before it ends (activations, "
                  "temporaries): f 600 B.",
        "why": "Activations kept for the backward pass set the peak; recomputing them costs time, saves memory.",
        "change_torch": "activation checkpointing (torch.utils.checkpoint) of the modules named; a smaller "
                        "micro-batch with gradient accumulation; torch.autocast",
        "change_npu": "the same on torch_npu",
        "gain_bytes": 600, "gain": "up to 600 B of the peak (what checkpointing can recompute), bytes",
        "figure": "transient_share_of_peak", "figure_value": 0.6, "threshold": 0.5, "stack": []}]


def test_activations_of_one_byte():
    # 1 B of a 2 B peak is half of it; 1 B of a 1 B peak all of it: both findings
    tr = {"step": 1, "bytes": 1, "by_frame": []}
    assert rules_of(device(transient=tr, peak_requested=2)) == ["snapshot_activations_peak"]
    assert rules_of(device(transient=tr, peak_requested=1)) == ["snapshot_activations_peak"]
