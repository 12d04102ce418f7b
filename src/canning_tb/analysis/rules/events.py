"""What the rules read from the window's events, beyond the digest: which calls block the host
and under which operator, the order of the operators (fusable sequences), runtime API time,
compilation events, and how the trace is made up. Each returns an empty answer without events."""
from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from ...ingest.table import NONE, Kind
from .. import intervals as iv
from ..common import join_on, name_mask
from ..steps import device_wait_rows
from .engine import RuleInput
from .finding import evidence

# operators that return a device value to the host (so they wait for it): .item(), .tolist(),
# data-dependent shapes (nonzero, masked_select); the outermost of each is counted
SYNC_OPS = ("aten::item", "aten::_local_scalar_dense", "aten::nonzero", "aten::masked_select", "aten::tolist")
_NESTED_SYNC = {"aten::_local_scalar_dense": "aten::item"}  # counted only without its caller
MEMORY_CALL_RE = re.compile(r"^(cuda|hip)(Malloc|Free)(Async|Host)?$|^(AscendCL@)?aclrt(Malloc|Free)\w*$"
                            r"|aclMallocMemInner|aclrtFreePhysical", re.I)
# compilation: torch.compile's dynamo_timed ranges (a recompile inside the window), CANN op compiles
COMPILE_RE = re.compile(r"aclopCompile|OpCompile|entire_frame_compile|dynamo_timed|^_compile\.|compile_inner|"
                        r"GraphCompile|compile_fx", re.I)
OP_COMPILE_RE = re.compile(r"aclopCompile|OpCompile", re.I)
# CUDA / HIP graph capture: kernels launched between these run nothing on the device (recorded only)
CAPTURE_BEGIN_RE = re.compile(r"^(cuda|hip)StreamBeginCapture")
CAPTURE_END_RE = re.compile(r"^(cuda|hip)(StreamEndCapture|GraphInstantiate)")
# process start-up: device runtime initialisation (the first runtime call of a process takes it, in
# CUDA lazily, often cudaDeviceGetStreamPriorityRange / cudaGetDeviceCount / cudaFree(0)), handle creation
STARTUP_RE = re.compile(r"^(cuda|hip)(DeviceGetStreamPriorityRange|GetDeviceCount|SetDevice|StreamCreate\w*"
                        r"|DeviceSetLimit|InitDevice)$|^cuInit$|^cuDevicePrimaryCtxRetain$|^(cudnn|cublas|cublasLt|miopen"
                        r"|rocblas|hipblas)Create$|^(AscendCL@)?acl(Init|rtSetDevice|rtCreateContext)$")


def host_ranges(inp: RuleInput, rx: re.Pattern) -> dict[str, tuple[int, int]]:
    """{name: (calls, summed duration)} of the host events (operators, annotations) named by `rx`:
    from the events, else from the digest's operator rows."""
    if inp.ctx is None:
        return {o.name: (int(o.calls), int(o.host_total_ns)) for o in inp.digest.ops_by_name if rx.search(o.name)}
    table = inp.ctx.table
    rows = np.flatnonzero(name_mask(table, rx) & (table.events["device"] == NONE))
    out: dict = defaultdict(lambda: (0, 0))
    for name_id, dur in zip(table.events["name"][rows], table.events["dur"][rows]):
        calls, total = out[table.strings[int(name_id)] or ""]
        out[table.strings[int(name_id)] or ""] = (calls + 1, total + int(dur))
    return dict(out)


def host_rows(inp: RuleInput, rx: re.Pattern) -> np.ndarray:
    """Rows of the host events (operators, annotations, runtime calls) named by `rx`."""
    if inp.ctx is None:
        return np.zeros(0, np.int64)
    table = inp.ctx.table
    return np.flatnonzero(name_mask(table, rx) & (table.events["device"] == NONE))


def rows_set(inp: RuleInput, rows: np.ndarray) -> tuple | None:
    """The union of the rows' time ranges (an interval set: nested or parallel ranges once), None
    without events."""
    if inp.ctx is None:
        return None
    ev = inp.ctx.ev
    return iv.union(ev["ts"][rows], ev["ts"][rows] + ev["dur"][rows])


def longest(inp: RuleInput, rows: np.ndarray, view: str = "timeline", row: str = "", label: str = "",
            rank: int = -1):
    """Evidence for the longest of `rows`: its name, start and duration (the event that shows it)."""
    if inp.ctx is None or len(rows) == 0:
        return None
    ev = inp.ctx.ev
    top = int(rows[np.argmax(ev["dur"][rows])])
    name = inp.ctx.table.strings[int(ev["name"][top])] or ""
    return evidence(view, row or name, label or f"the longest {name}", timeline_name=name,
                    ts_ns=int(ev["ts"][top]), dur_ns=int(ev["dur"][top]), rank=rank)


def _enclosing_op(inp: RuleInput, pos: int) -> str:
    """The innermost CPU operator around host position `pos` ("" at the top)."""
    ctx = inp.ctx
    ev, host = ctx.ev, ctx.host
    parent = host.parent[pos]
    while parent != NONE:
        row = host.rows[parent]
        if ev["kind"][row] == int(Kind.CPU_OP):
            return inp.ctx.table.strings[int(ev["name"][row])] or ""
        parent = host.parent[parent]
    return ""


def sync_calls(inp: RuleInput) -> list[dict]:
    """[{name, op, calls, ns}] of the calls that block the host for the device, most time first:
    the blocking runtime calls (steps.device_wait_rows) by (call, enclosing operator); without
    any, the operators that return a device value to the host (SYNC_OPS, digest rows)."""
    found: dict = defaultdict(lambda: [0, 0])
    if inp.ctx is not None:
        rows = device_wait_rows(inp.ctx.table)
        if len(rows):
            positions = join_on(np.asarray(rows, np.int64), np.asarray(inp.ctx.host.rows, np.int64)).tolist()
            ev, strings = inp.ctx.ev, inp.ctx.table.strings
            for row, pos in zip(rows, positions):
                key = (strings[int(ev["name"][row])] or "", _enclosing_op(inp, pos) if pos != NONE else "")
                found[key][0] += 1
                found[key][1] += int(ev["dur"][row])
    if not found:
        ops = {o.name: o for o in inp.digest.ops_by_name if o.name in SYNC_OPS}
        for name, op in ops.items():
            if _NESTED_SYNC.get(name) in ops:
                continue
            found[(name, name)] = [int(op.calls), int(op.host_total_ns)]
    out = [{"name": k[0], "op": k[1] or k[0], "calls": v[0], "ns": v[1]} for k, v in found.items()]
    return sorted(out, key=lambda c: (-c["ns"], c["name"]))


def event_mix(inp: RuleInput) -> dict:
    """{events, python_function, with_shapes}: how the window's trace is made up."""
    if inp.ctx is None:
        return {"events": 0, "python_function": 0, "with_shapes": 0}
    ev = inp.ctx.ev
    return {"events": int(len(ev["ts"])), "python_function": int((ev["kind"] == int(Kind.PYTHON_FUNCTION)).sum()),
            "with_shapes": int((ev["shapes"] != NONE).sum())}


def top_level_ops(inp: RuleInput) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per host thread: (name ids, host ns, device ns) of the CPU operators called from outside any
    other operator, in call order: the sequence a fused API would replace."""
    if inp.ctx is None:
        return []
    ev, rows, device_total = inp.ctx.ev, inp.ctx.host.rows, inp.ctx.device_total
    return [(ev["name"][rows[pos]], ev["dur"][rows[pos]], device_total[pos]) for pos in top_level_positions(inp)]


def top_level_positions(inp: RuleInput) -> list[np.ndarray]:
    """Per host thread (ascending tid): the positions in ctx.host.rows of its top-level CPU operators (called
    from outside any other operator), in call order."""
    if inp.ctx is None:
        return []
    ctx = inp.ctx
    ev, host = ctx.ev, ctx.host
    is_op = ev["kind"][host.rows] == int(Kind.CPU_OP)
    parent_is_op = np.zeros(len(host.rows), bool)
    has_parent = host.parent != NONE
    parent_is_op[has_parent] = is_op[host.parent[has_parent]]
    top = np.flatnonzero(is_op & ~parent_is_op)
    if len(top) == 0:
        return []
    rows = host.rows[top]
    tids = ev["tid"][rows]
    by_thread = np.lexsort((ev["ts"][rows], tids))  # per thread (ascending tid), then in call order
    bounds = np.flatnonzero(np.r_[True, tids[by_thread][1:] != tids[by_thread][:-1], True])
    return [top[by_thread[lo:hi]] for lo, hi in zip(bounds[:-1], bounds[1:])]


def capture_ranges(inp: RuleInput) -> tuple | None:
    """The windows of CUDA / HIP graph capture: from each *StreamBeginCapture to the last
    *StreamEndCapture / *GraphInstantiate after it on the same thread (the window's end without one),
    as an interval set; None when the window captures nothing."""
    begins = host_rows(inp, CAPTURE_BEGIN_RE)
    if not len(begins):
        return None
    ev = inp.ctx.ev
    ends = host_rows(inp, CAPTURE_END_RE)
    end_at = ev["ts"][ends] + ev["dur"][ends]
    starts = ev["ts"][begins]
    lo, hi = [], []
    order = np.argsort(starts)
    for i, b in enumerate(begins[order].tolist()):
        nxt = int(starts[order][i + 1]) if i + 1 < len(order) else None
        mine = (ev["tid"][ends] == ev["tid"][b]) & (ev["ts"][ends] >= ev["ts"][b])
        if nxt is not None:
            mine &= ev["ts"][ends] < nxt
        lo.append(int(ev["ts"][b]))
        hi.append(int(end_at[mine].max()) if mine.any() else int(inp.digest.window.end_ns))
    return iv.union(lo, hi)


def startup_ranges(inp: RuleInput) -> tuple | None:
    """Runtime initialisation calls of the process start (STARTUP_RE) when they take at least
    MIN_GAIN_SHARE of the window: an interval set, else None."""
    from . import thresholds as th
    rows = host_rows(inp, STARTUP_RE)
    if not len(rows):
        return None
    found = rows_set(inp, rows)
    window = inp.digest.window.end_ns - inp.digest.window.start_ns
    total = int(iv.measure(found, [inp.digest.window.start_ns], [inp.digest.window.end_ns])[0])
    return found if window > 0 and total >= th.MIN_GAIN_SHARE * window else None


def not_steps(inp: RuleInput) -> list:
    """Interval sets of time that is no training step's: graph capture, process start-up (once per input)."""
    if inp.ctx is None:
        return []
    if inp._not_steps is None:
        inp._not_steps = [x for x in (capture_ranges(inp), startup_ranges(inp)) if x is not None]
    return inp._not_steps


def per_step(inp: RuleInput, interval_set) -> int:
    """The length per step of an interval set inside the steps the average keeps (what claims.settle
    makes a gain of), graph capture and start-up left out."""
    from .claims import kept_steps
    starts, ends = kept_steps(inp.digest)
    window = iv.union(starts, ends)
    for skip in not_steps(inp):
        window = iv.subtract(window, skip)
    return int(iv.measure(iv.intersect(iv.union(*interval_set), window), starts, ends).sum()) // max(len(starts), 1)


def device_rows_of_op(inp: RuleInput, name: str) -> np.ndarray | None:
    """Table rows of the device events the operators named `name` launched (the Operators view's attribution:
    Context.op_owner); None without events."""
    if inp.ctx is None:
        return None
    ctx = inp.ctx
    own = ctx.op_owner
    ok = own != NONE
    names = ctx.table.events["name"][ctx.host.rows[own[ok]]]
    want = ctx.table.strings.find(name)
    return ctx.device_rows[ok][names == want] if want != NONE else np.zeros(0, np.int64)
