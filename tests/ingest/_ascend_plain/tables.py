"""Per-file readers of the text export (CSV and JSON summaries) of a torch_npu folder.

Each function takes a path, the name to report in Problems and the Problems list, and returns rows
of a declared side table (side_tables.py) or event rows, already in int ns / bytes. The units of each
file and why (decimal MB in the communication files, MiB in the memory CSVs) are in
docs/formats/ascend.md.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from canning_tb.ingest import op_args
from canning_tb.ingest import side_tables as side
from .csv_io import (step_value, device_index, device_name, kb_to_bytes, mb_to_bytes, ms_to_ns, none_to, norm_shapes,
                         norm_stack, read_csv, to_float, to_int, unreadable, us_float_to_ns, us_to_ns)
from canning_tb.ingest.table import (METRIC_AIC_TIME, METRIC_AIV_TIME, METRIC_MIX_BLOCK_DIM, NONE, Kind, Problem,
                    is_comm_kernel_name)

MB_DECIMAL = 1_000_000


# -- kernel_details.csv ---------------------------------------------------------------------------
# the PMU columns kept as event metrics (table.METRIC_*): ratios under CANN's names, the core times
# they are ratios of, the MIX tasks' vector block dim; (header, metric name, scale to our units)
_PMU_FIXED = ((("aicore_time(us)", "aic_total_time(us)"), METRIC_AIC_TIME, 1000.0),
              (("aiv_time(us)", "aiv_total_time(us)"), METRIC_AIV_TIME, 1000.0),
              (("Mix Block Dim", "Mix Block Num"), METRIC_MIX_BLOCK_DIM, 1.0),
              (("cube_utilization(%)",), "cube_utilization_pct", 1.0))


def _pmu_getters(f) -> dict:
    """{metric: (getter, scale)} of the PMU columns the file has (they depend on aic_metrics)."""
    out = {name: (f.getter(*headers), scale) for headers, name, scale in _PMU_FIXED if f.has(*headers)}
    for header in f.header:
        name = header.strip()
        if name.startswith(("aic_", "aiv_")) and name.endswith(("_ratio", "_rate")):
            out[name] = (f.getter(header), 1.0)
    return out


_ARG_COLUMNS = {"types": "Input Data Types", "formats": "Input Formats", "out_shapes": "Output Shapes",
                "out_types": "Output Data Types", "out_formats": "Output Formats"}


def _arg_getters(f) -> dict:
    return {key: f.getter(column) for key, column in _ARG_COLUMNS.items() if f.has(column)}


def _kernel_args(getters: dict, r, op_type: str) -> str | None:
    """The kernel's `args` (ingest/op_args.py): its type, dtypes, formats and output shapes."""
    parts = {key: op_args.split_list(get(r)) for key, get in getters.items() if key != "out_shapes"}
    if "out_shapes" in getters:
        shapes = norm_shapes(getters["out_shapes"](r))
        parts["out_shapes"] = json.loads(shapes) if shapes else None
    return op_args.encode(op_type=op_type or None, **parts)


def read_kernel_details(path: str, display: str, problems: list[Problem], device_hint: int) -> list[dict] | None:
    """Rows of kernel_details.csv as event rows (KERNEL / COMM_KERNEL); None if unreadable."""
    f = read_csv(path, display, problems)
    if f is None:
        return None
    need = [("Name",), ("Start Time(us)", "Task Start Time(us)"), ("Duration(us)", "Task Duration(us)")]
    missing = [n[0] for n in need if not f.has(*n)]
    if missing:
        problems.append(Problem(display, f"missing column(s) {', '.join(missing)}"))
        return None
    g_name = f.getter("Name", "Op Name")
    g_type = f.getter("Type", "OP Type")
    g_core = f.getter("Accelerator Core", "Task Type")
    g_ts = f.getter("Start Time(us)", "Task Start Time(us)")
    g_dur = f.getter("Duration(us)", "Task Duration(us)")
    g_blk = f.getter("Block Dim", "Block Num")
    g_dev = f.getter("Device_id", "Device ID", "Device Id")
    g_stream = f.getter("Stream ID", "Stream Id")
    g_shapes = f.getter("Input Shapes")
    g_args = _arg_getters(f)
    pmu = _pmu_getters(f)
    out = []
    bad_ts = bad_dur = 0
    for r in f.rows:
        ts = us_to_ns(g_ts(r))
        if ts is None:
            bad_ts += 1
            continue
        dur = us_to_ns(g_dur(r))
        if dur is None and unreadable(g_dur(r)):  # inf, 1e400: the row, not a silent 0
            bad_dur += 1
            continue
        name = (g_name(r) or "").strip()
        typ = (g_type(r) or "").strip()
        core = (g_core(r) or "").strip()
        comm = core.upper() in ("HCCL", "COMMUNICATION") or is_comm_kernel_name(name) or typ.startswith("hcom")
        dev = device_index(g_dev(r)) if f.has("Device_id", "Device ID", "Device Id") else NONE
        if dev == NONE:
            dev = device_hint
        stream = to_int(g_stream(r))
        row = {"ts": ts, "dur": max(dur or 0, 0), "name": name, "cat": "kernel_details",
               "kind": int(Kind.COMM_KERNEL if comm else Kind.KERNEL), "device": dev,
               "stream": none_to(stream),
               "core": core or None, "blocks": to_int(g_blk(r)), "op_type": typ or None}
        sh = norm_shapes(g_shapes(r))
        if sh is not None:
            row["shapes"] = sh
        if row["blocks"] is None:
            del row["blocks"]
        extra = _kernel_args(g_args, r, typ)
        if extra is not None:
            row["args"] = extra
        metrics = {name: v for name, (get, _) in pmu.items() if (v := to_float(get(r))) is not None and math.isfinite(v)}
        if metrics:
            row["metrics"] = {name: v * pmu[name][1] for name, v in metrics.items()}
        out.append(row)
    if bad_ts:
        problems.append(Problem(display, f"{bad_ts} row(s) without a start time skipped", "warning"))
    if bad_dur:
        problems.append(Problem(display, f"{bad_dur} row(s) with a duration that is no number in range skipped",
                                "warning"))
    return out


# -- memory_record.csv -> memory columns ---------------------------------------------------------
def read_memory_record(path: str, display: str, problems: list[Problem]) -> list[tuple] | None:
    """(ts, device, allocated, reserved, active, component) per row, bytes; None if unreadable."""
    f = read_csv(path, display, problems)
    if f is None:
        return None
    if not f.has("Timestamp(us)"):
        problems.append(Problem(display, "missing column Timestamp(us)"))
        return None
    g_c, g_ts = f.getter("Component"), f.getter("Timestamp(us)")
    g_a, g_r, g_ac = f.getter("Total Allocated(MB)"), f.getter("Total Reserved(MB)"), f.getter("Total Active(MB)")
    g_d = f.getter("Device Type", "Device")
    out = []
    bad = 0
    for r in f.rows:
        ts = us_to_ns(g_ts(r))
        if ts is None:
            bad += unreadable(g_ts(r))
            continue
        out.append((ts, device_name(g_d(r)), mb_to_bytes(g_a(r)), mb_to_bytes(g_r(r)), mb_to_bytes(g_ac(r)),
                    (g_c(r) or "").strip() or None))
    if bad:
        problems.append(Problem(display, f"{bad} row(s) with a timestamp that is no number in range skipped",
                                "warning"))
    return out


def read_operator_memory(path: str, display: str, problems: list[Problem]) -> list[dict] | None:
    f = read_csv(path, display, problems)
    if f is None:
        return None
    g_n, g_s = f.getter("Name"), f.getter("Size(KB)")
    g_a, g_f = f.getter("Allocation Time(us)"), f.getter("Release Time(us)")
    g_d = f.getter("Device Type", "Device")
    return [side.row("operator_memory", name=g_n(r) or "", bytes=kb_to_bytes(g_s(r)),
                     alloc_ns=none_to(us_to_ns(g_a(r))), free_ns=none_to(us_to_ns(g_f(r))),
                     device=device_name(g_d(r))) for r in f.rows]


def read_npu_module_mem(path: str, display: str, problems: list[Problem]) -> list[dict] | None:
    f = read_csv(path, display, problems)
    if f is None:
        return None
    g_c, g_t = f.getter("Component"), f.getter("Timestamp(us)")
    g_r, g_d = f.getter("Total Reserved(MB)"), f.getter("Device", "Device Type")
    return [side.row("npu_module_mem", component=g_c(r) or "", ts_ns=us_to_ns(g_t(r)),
                     reserved_bytes=mb_to_bytes(g_r(r)), device=device_name(g_d(r))) for r in f.rows]


# -- step_trace_time.csv ------------------------------------------------------------------------------
STEP_FIELDS = [("computing_ns", "Computing"), ("communication_not_overlapped_ns", "Communication(Not Overlapped)"),
               ("overlapped_ns", "Overlapped"), ("communication_ns", "Communication"), ("free_ns", "Free"),
               ("stage_ns", "Stage"), ("bubble_ns", "Bubble"),
               ("communication_not_overlapped_exclude_receive_ns", "Communication(Not Overlapped and Exclude Receive)"),
               ("preparing_ns", "Preparing")]


def read_step_trace(path: str, display: str, problems: list[Problem]) -> list[dict] | None:
    f = read_csv(path, display, problems)
    if f is None:
        return None
    g_step = f.getter("Step")
    getters = [(k, f.getter(c)) for k, c in STEP_FIELDS]
    return [side.row("step_trace", step=step_value(g_step(r)), **{k: us_to_ns(g(r)) for k, g in getters})
            for r in f.rows]


# -- op_statistic.csv / operator_details.csv ------------------------------------------------------------
def read_op_statistic(path: str, display: str, problems: list[Problem]) -> list[dict] | None:
    f = read_csv(path, display, problems)
    if f is None:
        return None
    g = {k: f.getter(*c) for k, c in {"op_type": ("OP Type", "Op Type"), "core_type": ("Core Type",),
                                         "count": ("Count",), "total": ("Total Time(us)",), "min": ("Min Time(us)",),
                                         "avg": ("Avg Time(us)",), "max": ("Max Time(us)",)}.items()}
    return [side.row("op_statistic", op_type=g["op_type"](r) or "", core_type=g["core_type"](r) or "",
                     count=to_int(g["count"](r)), total_ns=us_to_ns(g["total"](r)), min_ns=us_to_ns(g["min"](r)),
                     avg_ns=us_to_ns(g["avg"](r)), max_ns=us_to_ns(g["max"](r))) for r in f.rows]


def read_operator_details(path: str, display: str, problems: list[Problem]) -> list[dict] | None:
    f = read_csv(path, display, problems)
    if f is None:
        return None
    cols = {"host_self_ns": "Host Self Duration(us)", "host_total_ns": "Host Total Duration(us)",
            "device_self_ns": "Device Self Duration(us)", "device_total_ns": "Device Total Duration(us)"}
    g = {k: f.getter(c) for k, c in cols.items()}
    g_n, g_s, g_c = f.getter("Name"), f.getter("Input Shapes"), f.getter("Call Stack")
    return [side.row("operator_details", name=g_n(r) or "", input_shapes=norm_shapes(g_s(r)),
                     call_stack=norm_stack(g_c(r)), **{k: us_to_ns(gg(r)) for k, gg in g.items()}) for r in f.rows]
