"""NPU efficiency per device: AI Core utilisation, time per core type, the PMU ratios.

Over a span S of step time (build.py: the steps the average keeps; a window whose steps have no place
on the clock has no span, and every figure of it is unknown, -1), per NPU (device -1: the files name
no device index), over its compute
tasks (KERNEL events; communication tasks are not AI Core work):
- AI Core utilisation = |union of the intervals of the tasks not on the AI CPU, inside S| / |S|;
- cube / vector / mix / AI CPU time = the tasks' time inside S by their accelerator core
  (AI_CORE is the cube unit, AI_VECTOR_CORE the vector unit, MIX_AIC / MIX_AIV both), each task
  once; cube share = cube / (cube + vector + mix).
PMU ratios (kernel_details.csv / TASK_PMU_INFO, collected with aic_metrics), over all tasks of the
window that carry them: a ratio of the cube core (aic_*) is a share of the task's cube time, so
the window's ratio is sum(ratio x cube time) / sum(cube time) (= total mac time / total cube time
for aic_mac_ratio); aiv_* the same over vector time; any other (cube_utilization_pct) is weighted
by the task's duration. `pmu_means` applies the same rule per group of tasks (the Kernels view).
"""
from __future__ import annotations

import numpy as np

from canning_tb.util.arrays import distinct

from ..ingest.table import (METRIC_AIC_TIME, METRIC_AIV_TIME, METRIC_BLOCKS_PER_SM, METRIC_FLOPS, METRIC_MIX_BLOCK_DIM,
                            METRIC_OCCUPANCY, METRIC_REGISTERS, METRIC_SHARED_MEMORY, EventTable, Kind)
from . import digest_pb2 as pb
from . import intervals as iv

CUBE, VECTOR, AI_CPU = "AI_CORE", "AI_VECTOR_CORE", "AI_CPU"
MIX = ("MIX_AIC", "MIX_AIV")
_NOT_PMU = {METRIC_AIC_TIME, METRIC_AIV_TIME, METRIC_MIX_BLOCK_DIM, METRIC_BLOCKS_PER_SM, METRIC_OCCUPANCY,
            METRIC_REGISTERS, METRIC_SHARED_MEMORY, METRIC_FLOPS}
_BASE = {"aic_": METRIC_AIC_TIME, "aiv_": METRIC_AIV_TIME}


def pmu_names(table: EventTable) -> list[str]:
    return sorted(n for n in table.metrics if n not in _NOT_PMU)


def _weights(table: EventTable, name: str, rows: np.ndarray) -> np.ndarray:
    base = _BASE.get(name[:4])
    if base is None:
        return table.events["dur"][rows].astype(np.float64)
    col = table.metrics.get(base)
    return np.zeros(len(rows)) if col is None else np.nan_to_num(col[rows], nan=0.0)


def pmu_means(table: EventTable, rows: np.ndarray, groups: np.ndarray, n_groups: int) -> dict[str, np.ndarray]:
    """{PMU metric: value per group (NaN where no task of the group carries it)} over the rows,
    groups[i] the group of rows[i]; the weighting of the module doc."""
    out = {}
    for name in pmu_names(table):
        values = table.metrics[name][rows]
        weight = _weights(table, name, rows)
        ok = ~np.isnan(values) & (weight > 0)
        num = np.bincount(groups[ok], weights=values[ok] * weight[ok], minlength=n_groups)
        den = np.bincount(groups[ok], weights=weight[ok], minlength=n_groups)
        out[name] = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return out


def _is_npu_window(table: EventTable) -> bool:
    kinds = {str(dv.get("kind", "")).lower() for dv in table.meta.devices}
    return table.meta.format == "ascend" or "npu" in kinds


def _device_name(table: EventTable, device: int) -> str:
    for dv in table.meta.devices:
        if int(dv.get("index", -1) or 0) == device and dv.get("name"):
            return str(dv["name"])
    return f"NPU {device}" if device >= 0 else "NPU (index not in the files)"


def _core_times(table: EventTable, rows: np.ndarray, inside: np.ndarray) -> dict[str, int]:
    core = np.array([table.strings[int(c)] or "" for c in table.events["core"][rows]], dtype=object)
    return {"cube_ns": int(inside[core == CUBE].sum()), "vector_ns": int(inside[core == VECTOR].sum()),
            "mix_ns": int(inside[np.isin(core, MIX)].sum()), "ai_cpu_ns": int(inside[core == AI_CPU].sum())}


def _one_device(table: EventTable, rows: np.ndarray, device: int, span) -> pb.NpuEfficiency:
    ev = table.events
    starts, ends = ev["ts"][rows], ev["ts"][rows] + ev["dur"][rows]
    inside = iv.measure(span, starts, ends)
    out = pb.NpuEfficiency(device=device, name=_device_name(table, device), span_ns=iv.total(span),
                           ai_core_utilization=-1.0, cube_share=-1.0, **_core_times(table, rows, inside))
    ai_cpu = table.strings.find(AI_CPU)
    core_rows = rows[ev["core"][rows] != ai_cpu] if ai_cpu >= 0 else rows
    busy = iv.union(ev["ts"][core_rows], ev["ts"][core_rows] + ev["dur"][core_rows])
    out.ai_core_busy_ns = iv.total(iv.intersect(busy, span))
    if out.span_ns > 0:
        out.ai_core_utilization = out.ai_core_busy_ns / out.span_ns
    else:  # no span: nothing is known "inside" it
        out.ai_core_busy_ns = out.cube_ns = out.vector_ns = out.mix_ns = out.ai_cpu_ns = -1
    cores = out.cube_ns + out.vector_ns + out.mix_ns
    if cores > 0 and out.span_ns > 0:
        out.cube_share = out.cube_ns / cores
    for name, value in pmu_means(table, rows, np.zeros(len(rows), np.int64), 1).items():
        carried = int(np.count_nonzero(~np.isnan(table.metrics[name][rows])))
        if carried and not np.isnan(value[0]):
            out.pmu.add(name=name, value=float(value[0]), tasks=carried)
    return out


def npu_efficiency(table: EventTable, span_starts, span_ends) -> list[pb.NpuEfficiency]:
    """One NpuEfficiency per NPU that ran compute tasks, over the span (any intervals)."""
    if not _is_npu_window(table):
        return []
    rows = np.flatnonzero(table.events["kind"] == int(Kind.KERNEL))
    placed = np.asarray(span_starts) >= 0  # a step with no place on the clock has no span
    span = iv.union(np.asarray(span_starts)[placed], np.asarray(span_ends)[placed])
    device = table.events["device"][rows]
    known = [int(d) for d in distinct(device) if d >= 0]
    if not known and len(rows):  # the files name no device (kernel_details.csv without Device_id): the window's NPU
        return [_one_device(table, rows, -1, span)]
    return [_one_device(table, rows[device == d], d, span) for d in known]
