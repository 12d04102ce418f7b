"""Rules on where the step's time goes: data loading, an idle device, host-bound steps, launch
overhead, synchronisations that stall the device, a dominant operator or kernel family."""
from __future__ import annotations

import numpy as np

from ...ingest.table import NONE
from .. import glossary
from ..graph.build import CAT
from ..common import DATALOADER_RE, HOST_COMM_RE, collective_kind
from ..summary import has_device_work, slowest_op, window_figures
from . import thresholds as th
from .engine import RuleInput, rule
from .events import host_rows, longest, sync_calls
from .finding import Finding, evidence, ms, pct
from .roofline_rules import at_roof
from .workload import LOW_PRECISION

# breakdown field -> the name the views show it under (the glossary's label, docs/glossary.md)
CATEGORY_LABELS = {f"{key}_ns": glossary.entries()[key]["label"] for key in (
    "compute", "overlapped", "communication", "memcpy", "memset", "device_wait", "runtime", "dataloader", "host",
    "idle")}
_NOT_DEVICE = ("device_wait_ns", "runtime_ns", "dataloader_ns", "host_ns", "idle_ns")


def _share(inp: RuleInput, field: str) -> float:
    total = inp.digest.average.total_ns
    return getattr(inp.digest.average, field) / total if total > 0 else 0.0


def _columns(inp: RuleInput, fields) -> str:
    """'Runtime 12.0 %, Host 30.1 %': the named columns' shares of the average step."""
    return ", ".join(f"{CATEGORY_LABELS[f]} {pct(_share(inp, f))}" for f in fields)


@rule("dataloader_share", "time")
def dataloader_share(inp: RuleInput):
    share = window_figures(inp.digest)["dataloader_share"]
    if share is None or share <= th.DATALOADER_SHARE:
        return None
    a = inp.digest.average
    rows = host_rows(inp, DATALOADER_RE)
    shown = longest(inp, rows)
    return Finding(
        "", "", "warning", "Data loading takes a large share of the step",
        f"Data loading takes {pct(share)} of the average step (DataLoader): {ms(a.dataloader_ns)} of {ms(a.total_ns)}.",
        why="While the training loop waits for the next batch, the device and the host run nothing else.",
        change_torch="load in background workers: DataLoader(num_workers=N, pin_memory=True, persistent_workers=True, "
                     "prefetch_factor=2); move decoding / augmentation out of __getitem__ or onto the device.",
        gain_ns=a.dataloader_ns, gain_basis="the DataLoader time of the average step, if workers hide it all",
        value=share, figures={"dataloader_share": share, "dataloader_ns": a.dataloader_ns, "step_ns": a.total_ns},
        evidence=[evidence("overview", "DataLoader", "Average step breakdown: DataLoader")] + ([shown] if shown else []),
        figure="dataloader_share", figure_value=share, view="overview", threshold=th.DATALOADER_SHARE,
        removes=inp.category("dataloader"), removes_what=["dataloader"])


@rule("device_idle", "time")
def device_idle(inp: RuleInput):
    """The device idle time that no other finding explains (claims.settle: a residual claim)."""
    idle = window_figures(inp.digest)["device_idle_share"]  # the Overview's "Device idle" (docs/glossary.md)
    if idle is None or idle <= th.DEVICE_IDLE_SHARE:
        return None
    a = inp.digest.average
    named = [f for f in _NOT_DEVICE if getattr(a, f) > 0]
    return Finding(
        "", "", "warning", "The device has no work most of the step",
        f"{glossary.entries()['device_idle_share']['label']} {pct(idle)} of the average step; the step "
        f"meanwhile: {_columns(inp, named)}.",
        why="A device that waits is throughput lost; the columns named say what the step does instead.",
        change_torch="remove the bottleneck the largest column names (see its own finding); with the device idle "
                     "and nothing else large, raise the batch size.",
        gain_ns=int(idle * a.total_ns), gain_basis="the Device idle time of the average step that no other finding "
        "here claims", value=idle,
        figures={"device_idle_share": idle, **{f: getattr(a, f) for f in named}},
        evidence=[evidence("overview", CATEGORY_LABELS[f], f"Average step breakdown: {CATEGORY_LABELS[f]}")
                  for f in named],
        figure="device_idle_share", figure_value=idle, view="overview", threshold=th.DEVICE_IDLE_SHARE,
        removes=inp.categories(f.removesuffix("_ns") for f in _NOT_DEVICE),
        removes_what=[f.removesuffix("_ns") for f in _NOT_DEVICE], residual=True)


@rule("device_wait", "time")
def device_wait(inp: RuleInput):
    """The host blocked until the device was done: synchronisations, not launch overhead."""
    share = _share(inp, "device_wait_ns")
    if share <= th.DEVICE_WAIT_SHARE:
        return None
    a = inp.digest.average
    calls = sync_calls(inp)
    named = "; ".join(f"{c['name']} under {c['op']} ({c['calls']} calls, {ms(c['ns'])})" for c in calls[:4])
    return Finding(
        "", "", "warning", "The host waits for the device (synchronisations)",
        f"Calls that block the host until the device is done take {pct(share)} of the average step "
        f"(Device wait), {ms(a.device_wait_ns)}" + (f": {named}." if named else "."),
        why="Each blocking call drains the device's queue: the host cannot launch ahead, so the device idles "
            "while the host catches up after every call. This is not launch overhead: capturing the step in a graph would not remove it.",
        change_torch="keep values on the device (accumulate the loss as a tensor, call .item() / .cpu() / .tolist() "
                     "every N steps); copy with .to('cpu', non_blocking=True) into pin_memory() buffers; drop "
                     "torch.cuda.synchronize() from the loop; avoid freeing and reallocating device memory each step.",
        change_npu="the same with torch.npu.synchronize(); and leave ASCEND_LAUNCH_BLOCKING unset (=0).",
        gain_ns=a.device_wait_ns, gain_basis="the Device wait of the average step", value=share,
        figures={"device_wait_share": share, "device_wait_ns": a.device_wait_ns},
        evidence=[evidence("overview", "Device wait", "Average step breakdown: Device wait")] +
        [evidence("operators", c["op"], f"{c['op']}: {c['calls']} blocking calls", timeline_name=c["name"])
         for c in calls[:3]],
        figure="device_wait", figure_value=share, view="overview", threshold=th.DEVICE_WAIT_SHARE,
        removes=inp.category("device_wait"), removes_what=["device_wait"])


@rule("sync_calls", "time")
def sync_calls_rule(inp: RuleInput):
    """Synchronising calls each step where the Device wait rule did not fire (e.g. a CPU run)."""
    if _share(inp, "device_wait_ns") > th.DEVICE_WAIT_SHARE:
        return None
    if not has_device_work(inp.digest):
        return None  # on the CPU they wait for nothing; needs_device says what would let this judge
    calls = [c for c in sync_calls(inp) if c["calls"] / inp.steps >= th.SYNC_CALLS_PER_STEP]
    if not calls:
        return None
    per_step = sum(c["calls"] for c in calls) / inp.steps
    names = ", ".join(f"{c['name'] + ' under ' if c['name'] != c['op'] else ''}{c['op']} "
                      f"({c['calls'] / inp.steps:.1f} per step)" for c in calls[:4])
    share = _share(inp, "device_wait_ns")
    return Finding(
        "", "", "info", "Synchronising calls in every step",
        f"{per_step:.1f} calls per step that make the host wait for the device's result: {names}; the host "
        f"waits with the device idle {pct(share)} of the average step (Device wait).",
        why="A host that waits for the device cannot queue the next kernels: the device idles after each call.",
        change_torch="keep the value on the device and read it every N steps; for copies use "
                     ".to('cpu', non_blocking=True) into a pin_memory() buffer.",
        change_npu="the same; leave ASCEND_LAUNCH_BLOCKING unset.",
        gain_ns=a_wait(inp), gain_basis="the Device wait of the average step",  # the device idle while blocked
        value=per_step, figures={"sync_calls_per_step": per_step},
        evidence=[evidence("operators", c["op"], f"{c['op']}: {c['calls']} calls", timeline_name=c["op"])
                  for c in calls[:3]],
        figure="device_wait", view="overview", figure_value=share,
        removes=inp.category("device_wait"), removes_what=["device_wait"])


def a_wait(inp: RuleInput) -> int:
    return int(inp.digest.average.device_wait_ns)


@rule("launch_bound", "time")
def launch_bound(inp: RuleInput):
    share = _share(inp, "runtime_ns")
    if not has_device_work(inp.digest) or share <= th.RUNTIME_SHARE:
        return None
    a = inp.digest.average
    return Finding(
        "", "", "warning", "Kernel launches dominate",
        f"Launch / runtime calls with the device idle take {pct(share)} of the average step "
        f"(Runtime, {ms(a.runtime_ns)}); blocking calls are counted apart (Device wait {pct(_share(inp, 'device_wait_ns'))}).",
        why="The device finishes each kernel before the host has launched the next one.",
        change_torch="capture the step in a CUDA graph (torch.compile(mode='reduce-overhead') or torch.cuda.graphs), "
                     "fuse small operators with torch.compile, or raise the batch size.",
        change_npu="enable the task queue (TASK_QUEUE_ENABLE=2), use graph mode (torchair) or "
                   "torch.npu.NPUGraph, fuse operators.",
        gain_ns=a.runtime_ns, gain_basis="the Runtime time of the average step", value=share,
        figures={"runtime_share": share, "runtime_ns": a.runtime_ns},
        evidence=[evidence("overview", "Runtime", "Average step breakdown: Runtime")],
        figure="runtime", figure_value=share, view="overview", threshold=th.RUNTIME_SHARE,
        removes=inp.category("runtime"), removes_what=["runtime"])


@rule("host_bound", "time")
def host_bound(inp: RuleInput):
    if not has_device_work(inp.digest) or inp.step_ns <= 0:
        return None
    host = _share(inp, "host_ns") + _share(inp, "runtime_ns")
    if host <= th.HOST_SHARE or (window_figures(inp.digest)["device_idle_share"] or 0.0) <= th.DEVICE_IDLE_SHARE:
        return None
    a = inp.digest.average
    return Finding(
        "", "", "warning", "The step is host-bound",
        f"Host operators and launches run while the device has no work: {_columns(inp, ['host_ns', 'runtime_ns'])} "
        f"of the average step.",
        why="The Python / operator dispatch path, not the device, sets the pace.",
        change_torch="torch.compile the model (fewer, larger kernels and less Python), move host work out of the "
                     "step, use larger batches.",
        change_npu="the same; TASK_QUEUE_ENABLE=2 and graph mode (torchair) lower dispatch cost.",
        gain_ns=a.host_ns + a.runtime_ns, gain_basis="Host + Runtime of the average step", value=host,
        figures={"host_share": _share(inp, "host_ns"), "runtime_share": _share(inp, "runtime_ns")},
        evidence=[evidence("overview", "Host", "Average step breakdown: Host"),
                  evidence("operators", "", "Operators by Host Self Duration")],
        figure="host", figure_value=_share(inp, "host_ns"), view="overview",
        removes=inp.categories(("host", "runtime")), removes_what=["host", "runtime"])


@rule("dominant_op", "time")
def dominant_op(inp: RuleInput):
    top = slowest_op(inp.digest)
    # a collective on top (c10d::*, record_param_comms, nccl:*, hcom_*) is the communication rules'
    # finding, not an operator to make faster
    if top is None or top["share"] <= th.DOMINANT_SHARE or is_communication(top["name"]):
        return None
    roof = _roof_share(inp.digest, top["name"])
    if roof >= th.NEAR_ROOF:  # near its roof already: nothing much to gain in the operator itself
        return None
    column = "Device Self Duration" if top["metric"] == "device_self_ns" else "Host Self Duration"
    per_step = top["ns"] // inp.steps  # the Operators view's figure, per step
    above_roof = int(per_step * (1 - roof)) if roof >= 0 else per_step  # what its roof leaves to gain
    edit = at_roof(inp, top["name"], roof) if roof >= 0 and top["metric"] == "device_self_ns" else {}
    return Finding(
        "", "", "info", f"{top['name']} dominates",
        f"{top['name']} takes {pct(top['share'])} of the operators' {column} ({ms(per_step)} per step"
        + (f"; at its roof it would take {ms(per_step - above_roof)}" if roof >= 0 else "") + ").",
        why="The step is as fast as this operator: any gain elsewhere is bounded by what remains.",
        change_torch="look at its rows by input shape and by call stack (Operators view): fewer or larger calls, "
                     + ("" if _low_precision(inp.digest, top["name"]) else "lower precision (torch.autocast) or ")
                     + "a fused / better implementation of this operator.",
        gain_basis=f"depends on how efficient {top['name']} already is",
        value=top["share"], figures={"op_share": top["share"], "op_ns": top["ns"]},
        evidence=[evidence("operators", top["name"], f"{top['name']}: {column}", timeline_name=top["name"])],
        figure="slowest_op", figure_value=top["share"], view="overview", threshold=th.DOMINANT_SHARE,
        at_most_ns=above_roof, gain_ns=above_roof if edit else -1, **edit)


def _low_precision(digest, name: str) -> bool:
    """The operator's inputs are below fp32 already (OpStat.work.dtype from its recorded input types)."""
    row = next((o for o in digest.ops_by_name if o.name == name), None)
    return row is not None and row.work.dtype in LOW_PRECISION


def _roof_share(digest, name: str) -> float:
    """The operator's share of its roof (OpStat.work, analysis/efficiency), -1 unknown."""
    row = next((o for o in digest.ops_by_name if o.name == name), None)
    return row.work.roof_share if row is not None and row.work.model else -1.0


def is_communication(name: str) -> bool:
    """An operator that is a collective: its host op (HOST_COMM_RE) or a name that says which."""
    return bool(HOST_COMM_RE.search(name)) or collective_kind(name) != "Other"


@rule("python_on_path", "time")
def python_on_path(inp: RuleInput):
    """Python between operators on the step's thread (no operator, annotation or runtime call running) that holds
    the steps: their critical path (analysis/graph) runs through it. Needs the events (the graph)."""
    wg = inp.wg
    kept = set(inp.digest.average_steps)
    paths = [p for p in inp.digest.critical_path if p.number in kept]
    total = sum(p.dur_ns for p in paths)
    if wg is None or not total:
        return None
    on_path = sum(p.by_category.get("python", 0) for p in paths)
    share = on_path / total
    if share <= th.PYTHON_PATH_SHARE:
        return None
    g = wg.graph
    mine = (g.cat == CAT["python"]) & (g.lane == g.main_lane) & (g.wait_on == NONE)
    # the change: the longest stretch of Python in each step taken out (a loop, a sleep, a check, a log: one
    # piece of code); the rest of the step's Python stays, as it may be the loop itself
    stretches = []
    for span in wg.spans:
        if span.number in kept:
            nodes = span.nodes[mine[span.nodes]]
            if len(nodes):
                stretches.append(int(nodes[np.argmax(g.end[nodes] - g.start[nodes])]))
    if not stretches:
        return None
    stretches = np.array(stretches, np.int64)
    longest_one = int(stretches[np.argmax(g.end[stretches] - g.start[stretches])])
    stretch_ns = int((g.end[stretches] - g.start[stretches]).mean())
    return Finding(
        "", "", "warning", "Python between operators holds the step",
        f"Python with no operator running on the step's thread takes {pct(share)} of the steps' critical path "
        f"(Critical path: python), {ms(on_path / len(paths))} of the average step; its longest stretch in each step "
        f"takes {ms(stretch_ns)} on average.",
        why="Nothing else runs meanwhile on the path: the device (if any) waits for the next launch, the other ranks "
            "for this one.",
        change_torch="find the lines with with_stack=True (Python frames in the trace); move per-step Python work "
                     "(logging, metrics, checks, Python loops over tensors or batches) out of the step, do it every "
                     "N steps, or into a background thread.",
        gain_ns=int(on_path / len(paths)), gain_basis="the Python time on the path",
        value=share, figures={"path_python_share": share, "python_ns": on_path / len(paths)},
        evidence=[evidence("overview", "Critical path", "Critical path: python", ts_ns=int(g.start[longest_one]),
                           dur_ns=int(g.end[longest_one] - g.start[longest_one]))],
        figure="path_python_share", figure_value=share, view="overview", threshold=th.PYTHON_PATH_SHARE,
        removes=(np.sort(g.start[stretches]), np.sort(g.end[stretches])), removes_what=["python"],
        edit="the longest stretch of Python of each step taken out")
