"""EventTable -> Digest: every section, from pure functions of the table."""
from __future__ import annotations

import numpy as np

from ..ingest.devices import UNKNOWN_INDEX
from ..ingest.table import EventTable
from . import digest_pb2 as pb
from .cann import cann_steps, ops_from_operator_details, steps_from_cann
from .communication.collectives import communication_stats
from .context import Context
from .coverage import coverage
from .digest import SCHEMA_VERSION, analysis_revision
from .input_pipeline import input_pipeline
from .efficiency.section import roofline_section
from .graph.section import WindowGraph, critical_path_section
from .kernels import kernel_stats, kernel_types
from .gpu_metrics import gpu_efficiency
from .memory import memory_stats
from .modules import module_tree
from .npu_metrics import npu_efficiency
from .ops import op_stats
from .rules import rule_hits
from .steps import STEP_SOURCE_WINDOW, breakdowns, host_steps
from .communication.wait_transfer import fill_own

_FIELDS = {"compute": "compute_ns", "overlapped": "overlapped_ns", "communication": "communication_ns",
           "memcpy": "memcpy_ns", "memset": "memset_ns", "device_wait": "device_wait_ns", "runtime": "runtime_ns",
           "dataloader": "dataloader_ns",
           "host": "host_ns", "idle": "idle_ns"}


def _window(d: pb.Digest, t: EventTable) -> None:
    m = t.meta
    w = d.window
    w.format, w.rank, w.world_size = m.format or "", int(m.rank), int(m.world_size)
    w.worker, w.host, w.pid = m.worker or "", m.host or "", int(m.pid)
    ev = t.events
    start = m.start_ns if m.start_ns not in (None, -1) else (int(ev["ts"].min()) if len(t) else -1)
    end = m.end_ns if m.end_ns not in (None, -1) else (int((ev["ts"] + ev["dur"]).max()) if len(t) else -1)
    w.start_ns, w.end_ns = int(start), int(end)
    for dv in m.devices:
        index = dv.get("index")  # a device no file numbers keeps its index unknown (-1), not device 0
        x = w.devices.add(kind=str(dv.get("kind", "")), index=int(index) if index is not None else UNKNOWN_INDEX,
                          name=str(dv.get("name", "") or ""),
                          memory_bytes=int(dv.get("memory", -1) if dv.get("memory") is not None else -1),
                          compute_capability=str(dv.get("compute_capability", "") or ""))
        for k, v in dv.items():
            if k not in ("kind", "index", "name", "memory", "compute_capability") and v is not None:
                x.properties[str(k)] = str(v)
    for k, v in (m.environment or {}).items():
        w.environment[str(k)] = str(v)
    w.source_files.extend(str(s) for s in m.source_files)


def _steps(d: pb.Digest, t: EventTable, ctx: Context):
    """Steps from, in this order: the trace's ProfilerStep ranges, the loop's step marks, CANN's step
    trace; without any, the window is one step (step_source "window")."""
    source = host_steps(t)[3]
    if source == STEP_SOURCE_WINDOW and len(d.cann_steps):
        nums, starts, durs, res = steps_from_cann(list(d.cann_steps), t)
        tails, distorted = np.zeros(len(nums), np.int64), np.zeros(len(nums), bool)  # CANN's steps are whole
        d.step_source, d.step_clock = d.cann_steps[0].source or "step_trace", "device"
    else:
        nums, starts, durs, res, tails, distorted, d.step_clock = breakdowns(t, ctx)
        d.step_source = source
    waits = res.get("untraced_wait", np.zeros(len(nums), np.int64))
    for i in range(len(nums)):
        s = d.steps.add(number=int(nums[i]), start_ns=int(starts[i]), dur_ns=int(durs[i]), tail_ns=int(tails[i]),
                        distorted=bool(distorted[i]), untraced_wait_ns=int(waits[i]))
        s.breakdown.total_ns = int(durs[i])
        for c, f in _FIELDS.items():
            setattr(s.breakdown, f, int(res[c][i]))
    used = ~distorted if (~distorted).any() else np.ones(len(nums), bool)
    d.average_steps.extend(int(x) for x in nums[used])
    n = max(int(used.sum()), 1)
    a = d.average
    a.total_ns = int(round(float(np.sum(durs[used])) / n))
    total = 0
    for c, f in _FIELDS.items():
        if c == "idle":
            continue
        v = int(round(float(np.sum(res[c][used])) / n))
        setattr(a, f, v)
        total += v
    a.idle_ns = max(a.total_ns - total, 0)
    return nums, starts, starts + durs, res


def build_digest(table: EventTable, graph: bool = True, chip: str | None = None) -> pb.Digest:
    """`graph=False`: no dependency graph (no critical path; findings' gains as the time they touch): the
    benchmarks' baseline only. `chip`: the chip chosen for this view (efficiency/peaks.py), None: the files'."""
    d = pb.Digest(schema_version=SCHEMA_VERSION, analysis_revision=analysis_revision())
    _window(d, table)
    ctx = Context(table)
    d.cann_steps.extend(cann_steps(table))
    nums, starts, ends, res = _steps(d, table, ctx)
    by_name, by_shape, by_stack = op_stats(ctx)
    if not by_name and "operator_details" in table.side:  # no trace: the operator calls torch_npu wrote
        by_name, by_shape, by_stack = ops_from_operator_details(table)
    d.ops_by_name.extend(by_name)
    d.ops_by_shape.extend(by_shape)
    d.ops_by_stack.extend(by_stack)
    kn, ko, cores = kernel_stats(ctx)
    d.kernels_by_name.extend(kn)
    d.kernel_types.extend(kernel_types(table))
    d.kernels_by_op.extend(ko)
    d.cores.extend(cores)
    d.memory.extend(memory_stats(ctx))
    kept = np.isin(nums, list(d.average_steps))  # the device figures are of the steps the average keeps
    d.gpu_efficiency.extend(gpu_efficiency(table, starts[kept], ends[kept]))
    d.npu_efficiency.extend(npu_efficiency(table, starts[kept], ends[kept]))
    d.modules.extend(module_tree(ctx))
    d.input_pipeline.CopyFrom(input_pipeline(table, nums, starts, ends, kept))
    roofline_section(ctx, d, chip)  # FLOPs / bytes per row, peaks, MFU (analysis/efficiency): before the rules
    d.communication.CopyFrom(communication_stats(ctx, starts, ends, nums, res))
    fill_own(d)  # wait / transfer: the one definition (analysis/communication/wait_transfer.py)
    d.coverage.CopyFrom(coverage(table, d))
    for p in table.problems:
        d.problems.add(file=str(p.file), message=str(p.message), severity=str(p.severity))
    wg = WindowGraph(ctx, d) if graph else None  # the dependency graph: critical paths, findings' replayed gains
    if wg is not None:
        critical_path_section(wg, ctx, d)
    d.rule_hits.extend(rule_hits(d, ctx, wg))
    return d
