"""The tables and their columns, with the glossary's definition (analysis/glossary.json: one definition per
figure, the views' tooltips) of every column that is a figure of the views: what `canning-prof sql --schema`
prints and the MCP tool `schema` answers. Read from the declarations (tables.py, events.py): no data is read."""
from __future__ import annotations

from canning_tb.analysis.glossary import entries

from . import events
from .tables import KEYS, TABLES

KEY_DOCS = {"run": "the run: its folder relative to the logdir (\".\" for the logdir itself)",
            "worker": "the worker (one per rank) as discovery names it", "rank": "the rank (-1 unknown)",
            "window": "the window id within its worker (write it \"window\" in SQL: a keyword)",
            "window_index": "the window's position among its worker's windows (the ranks' views compare the same "
                            "position)",
            "step": "the step number (ProfilerStep#N); NULL in a table of the whole window"}
# column -> glossary key, where the column is a figure the views show (the first table naming it wins)
TERMS = {"dur_ns": "step_time", "compute_ns": "compute", "overlapped_ns": "overlapped",
         "communication_ns": "communication", "memcpy_ns": "memcpy", "memset_ns": "memset",
         "device_wait_ns": "device_wait", "runtime_ns": "runtime", "dataloader_ns": "dataloader", "host_ns": "host",
         "idle_ns": "idle", "average_step_ns": "step_time", "total_step_ns": "total_step_time",
         "compute_share": "compute_share", "comm_not_hidden_share": "comm_not_hidden_share",
         "dataloader_share": "dataloader_share", "idle_share": "idle_share", "device_idle_share": "device_idle_share",
         "world_size": "world_size", "host_self_ns": "host_self", "host_total_ns": "host_total",
         "device_self_ns": "device_self", "device_total_ns": "device_total", "tc_eligible": "tc_eligible",
         "tc_self_share": "tc_self_share", "tc_total_share": "tc_total_share", "peak_allocated_bytes": "memory_peak",
         "peak_reserved_bytes": "peak_reserved", "wait_ns": "wait", "transfer_ns": "transfer",
         "p2p_wait_ns": "p2p_wait", "bandwidth_gbps": "bandwidth", "mean_blocks_per_sm": "blocks_per_sm",
         "mean_occupancy_pct": "kernel_occupancy", "registers_per_thread": "registers_per_thread",
         "shared_memory_bytes": "shared_memory", "mean_mix_block_dim": "mix_block_dim",
         "flops": "model_flops", "bytes": "model_bytes", "tflops": "achieved_tflops", "gbps": "achieved_gbps",
         "intensity": "arithmetic_intensity", "roof_tflops": "roof", "roof_share": "roof_share", "bound": "bound",
         "work_flops": "model_flops", "work_bytes": "model_bytes", "work_tflops": "achieved_tflops",
         "work_gbps": "achieved_gbps", "work_intensity": "arithmetic_intensity", "work_roof_tflops": "roof",
         "work_roof_share": "roof_share", "work_bound": "bound", "empty_cache_calls": "empty_cache_calls"}
# per table where a column means another figure there
TABLE_TERMS = {"kernels": {"calls": "kernel_calls", "total_ns": "kernel_total", "min_ns": "kernel_min",
                           "max_ns": "kernel_max"},
               "kernels_by_op": {"calls": "kernel_calls", "total_ns": "kernel_total", "min_ns": "kernel_min",
                                 "max_ns": "kernel_max"},
               "collectives": {"total_ns": "comm_total", "bytes": "bytes"}, "communication": {"bytes": "bytes"},
               "matrix": {"bytes": "bytes"}, "allocations": {"bytes": None}, "events": {"bytes": None, "dur_ns": None},
               "memory_curve": {}, "windows": {}}
TABLE_DOCS = {**{name: t.doc for name, t in TABLES.items()},
              "events": "one row per event of a window (operators, kernels, copies, collectives ...) with its ids "
                        "and parent, read on demand per window (only the windows a WHERE on rank / window_index "
                        "names, where the query is that simple) and cached as Parquet outside the logdir"}


def _columns(name: str, fields) -> list[dict]:
    known = entries()
    terms = TABLE_TERMS.get(name, {})
    out = []
    for field_name, arrow_type in fields:
        column = {"name": field_name, "type": str(arrow_type)}
        if field_name in KEY_DOCS:
            column["doc"] = KEY_DOCS[field_name]
        term = terms[field_name] if field_name in terms else TERMS.get(field_name)
        if term and term in known:
            column["glossary"] = {"term": term, "name": known[term]["label"], "definition": known[term]["tip"]}
        out.append(column)
    return out


def describe(table: str | None = None) -> list[dict]:
    """[{table, doc, columns: [{name, type, doc?, glossary?}]}] of every table (or the one named)."""
    declared = {name: (*KEYS, *t.columns) for name, t in TABLES.items()}
    declared["events"] = (*KEYS, *events.COLUMNS)
    if table is not None and table not in declared:
        raise KeyError(f"unknown table {table!r}: the tables are {', '.join(declared)}")
    return [{"table": name, "doc": TABLE_DOCS[name], "columns": _columns(name, fields)}
            for name, fields in declared.items() if table in (None, name)]
