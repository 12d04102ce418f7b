"""How the host schedules the work: SyncBatchNorm, garbage-collection pauses, a CPU
communication backend on GPUs (msprof-analyze advisor's schedule checks, torch-tb-profiler's
backend check)."""
from __future__ import annotations

import re

from . import thresholds as th
from .engine import RuleInput, rule
from .. import intervals as iv
from .events import host_ranges, host_rows, longest, rows_set
from .finding import Finding, evidence, ms

SYNC_BN_RE = re.compile(r"SyncBatchNorm|batch_norm_gather_stats|batch_norm_elemt_backward")
GC_RE = re.compile(r"^(GC|gc|gc_collect|GarbageCollection)$")
GLOO_RE = re.compile(r"^gloo:")


@rule("sync_batchnorm", "time")
def sync_batchnorm(inp: RuleInput):
    found = host_ranges(inp, SYNC_BN_RE)
    calls = sum(c for c, _ in found.values())
    if calls < th.SYNC_BATCHNORM_CALLS:
        return None
    name = max(found, key=lambda n: found[n][0])
    return Finding(
        "", "", "info", "SyncBatchNorm synchronises every layer",
        f"{calls} SyncBatchNorm operators in the window ({calls / inp.steps:.0f} per step, e.g. {name}).",
        why="Each one is a collective across all ranks inside forward and backward.",
        change_torch="keep plain BatchNorm (per device statistics) where the per-device batch is large enough; "
                     "or sync only the layers that need it.",
        gain_basis="its collectives are in the communication time", value=calls,
        figures={"sync_batchnorm_calls": calls}, figure="op_calls", figure_value=float(found[name][0]),
        view="operators", threshold=th.SYNC_BATCHNORM_CALLS,
        evidence=[evidence("operators", name, name, timeline_name=name)])


@rule("gc_pauses", "time")
def gc_pauses(inp: RuleInput):
    rows = host_rows(inp, GC_RE)
    removes = rows_set(inp, rows)
    total = int(iv.measure(removes, [inp.digest.window.start_ns], [inp.digest.window.end_ns])[0]) if removes else 0
    calls = len(rows)
    if not calls or total / calls <= th.GC_NS:
        return None
    shown = longest(inp, rows)
    return Finding(
        "", "", "warning", "Python garbage collection pauses the step",
        f"{calls} garbage-collection pauses take {ms(total)} in the window (mean {ms(total / calls)}).",
        why="A collection stops the Python thread that launches the work: the device idles meanwhile.",
        change_torch="gc.freeze() after building the model and data, and gc.collect() at a quiet point "
                     "(e.g. every N steps) with automatic collection off (gc.disable()).",
        gain_ns=total // inp.steps, gain_basis="the pauses' time per step", value=total,
        figures={"gc_calls": calls, "gc_ns": total},
        evidence=[shown] if shown else [evidence("timeline", "", "GC pauses")],
        figure="gc_pause", figure_value=float(total / calls), view="trace", threshold=th.GC_NS,
        removes=removes, removes_what=["GC pauses"])


@rule("gloo_on_gpu", "communication")
def gloo_on_gpu(inp: RuleInput):
    if not any(d.kind == "cuda" for d in inp.digest.window.devices):
        return None
    found = host_ranges(inp, GLOO_RE)
    if not found:
        return None
    calls, total = sum(c for c, _ in found.values()), sum(ns for _, ns in found.values())
    return Finding(
        "", "", "warning", "GPU job communicates over gloo",
        f"{calls} gloo collectives ({', '.join(sorted(found)[:3])}) take {ms(total)} on a GPU job.",
        why="gloo moves GPU tensors through host memory; NCCL uses NVLink / GPUDirect.",
        change_torch="torch.distributed.init_process_group(backend='nccl') for GPU tensors.",
        gain_basis="depends on the links", value=calls, figures={"gloo_calls": calls},
        figure="comm_total", figure_value=float(total), view="communication",
        evidence=[evidence("communication", "", "collectives")])
