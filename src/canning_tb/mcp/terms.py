"""Which glossary entry (analysis/glossary.json, docs/glossary.md: one definition per figure) defines
each figure field an answer carries, so an answer names its figures as the views' tooltips do."""
from __future__ import annotations

from canning_tb.analysis.glossary import entries

BREAKDOWN = {"total_ns": "step_time", "compute_ns": "compute", "overlapped_ns": "overlapped",
             "communication_ns": "communication", "memcpy_ns": "memcpy", "memset_ns": "memset",
             "device_wait_ns": "device_wait", "runtime_ns": "runtime", "dataloader_ns": "dataloader",
             "host_ns": "host", "idle_ns": "idle"}
FIGURES = {"average_step_ns": "step_time", "total_step_ns": "total_step_time", "compute_share": "compute_share",
           "comm_not_hidden_share": "comm_not_hidden_share", "dataloader_share": "dataloader_share",
           "idle_share": "idle_share", "device_idle_share": "device_idle_share", "memory": "memory_peak",
           "slowest_op": "slowest_op", "world_size": "world_size", "average_shares": "category_share"}
DEVICES = {"utilization": "gpu_utilization", "sm_efficiency": "sm_efficiency",
           "achieved_occupancy_pct": "achieved_occupancy", "tensor_core_share": "tensor_core_share",
           "ai_core_utilization": "ai_core_utilization", "cube_share": "cube_share", "cube_ns": "core_time",
           "pmu": "pmu_ratio"}
OPERATORS = {"host_self_ns": "host_self", "host_total_ns": "host_total", "device_self_ns": "device_self",
             "device_total_ns": "device_total", "tc_eligible": "tc_eligible", "tc_self_share": "tc_self_share",
             "tc_total_share": "tc_total_share"}
KERNELS = {"calls": "kernel_calls", "total_ns": "kernel_total", "min_ns": "kernel_min", "max_ns": "kernel_max",
           "mean_blocks_per_sm": "blocks_per_sm", "mean_occupancy_pct": "kernel_occupancy",
           "registers_per_thread": "registers_per_thread", "shared_memory_bytes": "shared_memory",
           "mean_mix_block_dim": "mix_block_dim"}
MEMORY = {"peak_allocated_bytes": "memory_peak", "peak_reserved_bytes": "peak_reserved"}
COMMUNICATION = {"total_ns": "comm_total", "wait_ns": "wait", "transfer_ns": "transfer", "p2p_wait_ns": "p2p_wait",
                 "bandwidth_gbps": "bandwidth"}
RANKS = {"step_ns": "step_time", "computing_ns": "computing", "free_ns": "free", "wait_ns": "wait",
         "transfer_ns": "transfer", "p2p_wait_ns": "p2p_wait", "communication_total_ns": "comm_total"}
# analysis/efficiency's figures (their entries come with it: a glossary without them names none of these)
EFFICIENCY = {"mfu": "mfu", "flops_per_step": "model_flops", "hbm_gbps": "hbm_bandwidth_used",
              "modelled_share": "modelled_share", "flops": "model_flops", "bytes": "model_bytes",
              "tflops": "achieved_tflops", "gbps": "achieved_gbps", "intensity": "arithmetic_intensity",
              "roof_tflops": "roof", "roof_share": "roof_share", "bound": "bound", "vector_tflops": "peak_flops"}


def glossary(*tables: dict) -> dict:
    """{field: {"term", "name", "definition"}} for the fields of `tables` (the first table naming a field wins;
    a term the glossary does not have is left out)."""
    known = entries()
    out: dict = {}
    for table in tables:
        for field, term in table.items():
            if field not in out and term in known:
                entry = known[term]
                out[field] = {"term": term, "name": entry["label"], "definition": entry["tip"]}
    return out
