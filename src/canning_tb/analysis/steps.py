"""Steps and the step time breakdown.

Steps
-----
A step is a `ProfilerStep#N` event (any kind but GPU_USER_ANNOTATION) on the main thread (the
(pid, tid) holding most of them). torch writes them only under a schedule; without one, the steps
are the training loop's own marks (prof.step() calls: the `step_marks` side table, from the
manifest's step_times_ns or the profile object, ingest/step_marks.py), used exactly as the
ProfilerStep ranges are; the mark after the last prof.step(), closed by stop() with nothing run in
it, is no step and is dropped. Without either, the window is one step numbered 0 spanning the first
start to the last end of all events (step source "window": every surface says so).

Step span (the rule, kept): step i runs from S_i = start of ProfilerStep#i to
E_i = max(host end of ProfilerStep#i, last end of the device events *launched* in it), capped at
S_{i+1} so that steps never overlap; the last step is not capped. A device event is launched in
step i when its RUNTIME launch (joined on `correlation`) starts inside the host range of step i;
device events without a launch record use their own start. So a step is what the user's loop
sees (host step boundaries), with the device work it launched attributed to it. The device work
counted in step i is everything on the device clock inside [S_i, E_i): a kernel that straddles
the cap is split at the boundary, so each instant belongs to exactly one step.

Device-bound steps (the device runs behind the host)
----------------------------------------------------
Where every step of DEVICE_BOUND_STEPS or more launched device work and the device's period (the
first device event of the first step to that of the last, over the steps between) exceeds the
host's (ProfilerStep starts) by more than DEVICE_BOUND_MARGIN, the host's ranges measure how fast the host queues work, not the step:
the steps are measured on the device instead (Digest.step_clock "device"): step i runs from the
first device event launched in it to the first one launched in step i + 1; the last to the end of
the device work launched in it (no backlog of other steps: never distorted).

Work queued before the window (a step that waited for untraced device work)
--------------------------------------------------------------------------------
When the host ran ahead of the device before the profiler started, the device work it had queued runs at the
window's start, but the trace holds none of it (it was launched before the profiler saw it). A blocking call
(device_wait_rows: a synchronize, a blocking copy; a free is left out, as it also takes time of its own; and
pageable_copies: a copy from or to pageable memory, staged behind the stream's earlier work)
that began before the window's first traced device work and blocked over UNTRACED_MIN_NS while no traced
device work ran waited for that work: untraced_waits. (A later such wait is for device work whose records
were lost, the step's own: its time is the step's.) On the host clock such a step is longer by the backlog
it drained, not by its own work. Its waits inside the step (Step.untraced_wait_ns) over UNTRACED_SHARE of
the step leave it out of the average, as the window's end does, while another step remains. The device-bound
test above compares the device's period with the host's less these waits (a backlog drained in the first
step does not hide a device that runs behind); on the device clock the wait lies before the step's first
device event, so it is not in it.

Window's end (the last step)
----------------------------
The device runs behind the host; the work launched in the last step drains after its host range
ends, where no next step caps it, so the last step absorbs the whole device backlog. Its tail
(E - host end) is reported per step; a last step whose tail exceeds TAIL_SHARE of its host
duration is flagged `distorted` and left out of the average (Digest.average_steps lists the
steps used; with one step, that step is used).

Breakdown (the priority rule, kept)
-----------------------------------
Every instant of [S_i, E_i) goes to the first category that covers it, in this order:
  1-3. device work: K = union of KERNEL, C = union of the communication rows
       (communication.comm_rows: communication kernels; on windows without any, the host
       collective ranges that the communication view lists, the same rows):
         compute = K - C, overlapped = K ∩ C, communication = C - K
  4. memcpy (MEMCPY)   5. memset (MEMSET)
  6. device wait: RUNTIME calls that block the host until the device is done (DEVICE_WAIT_RE:
     *Synchronize*, and every call of the vendors' BLOCKING table (graph/vendors.py): cudaFree / hipFree /
     aclrtFree, the synchronous cudaMemcpy / hipMemcpy / hipMemcpyWithStream / aclrtMemcpy...; and their *MemcpyAsync whose copy is device-to-host into memory not stated as
     pinned: `.item()`, `.cpu()`, `.tolist()`)
  7. runtime (the other RUNTIME calls: launch overhead)
  8. dataloader (`enumerate(DataLoader)#...`, `enumerate(DataPipe)#...`, `DataLoader*` ranges)
  9. host (any CPU_OP / USER_ANNOTATION on any host thread, ProfilerStep#N excluded)
 10. idle = the rest.
The categories are disjoint by construction, so they sum exactly to E_i - S_i.

Ascend
------
step_trace_time.csv (the step_trace side table) uses the same device sets: Computing = compute +
overlapped, Communication(Not Overlapped) = communication, Overlapped = overlapped, Free = the
rest of the step (memcpy + memset + device wait + runtime + dataloader + host + idle here). Differences come
only from the step span: CANN measures the step on the device from its own "Step" range, we
from ProfilerStep#N extended to its device work; both are reported, the csv in `scalars`
(`step_trace_computing_ns`, `step_trace_free_ns`, ... : the mean over the csv rows).
"""
from __future__ import annotations

import re

import numpy as np

from canning_tb.util.arrays import distinct

from ..ingest.table import NONE, EventTable, Kind
from . import intervals as iv
from .common import (DATALOADER_RE, DEVICE_KINDS, HOST_COMM_RE, HOST_OP_KINDS, STEP_RE, group_rows, id_mask,
                     ids_matching, join_on, kind_mask, name_mask, thread_keys)
from .communication.collectives import comm_rows
from .context import Context
from .graph.vendors import BLOCKING_RE
from .step_note import UNTRACED_SHARE  # one threshold: the notes say why a step was left out

CATEGORIES = ["compute", "overlapped", "communication", "memcpy", "memset", "device_wait", "runtime", "dataloader",
              "host"]
TAIL_SHARE = 0.05  # a last step whose device tail exceeds 5 % of its host duration is distorted
DEVICE_BOUND_MARGIN = 0.05  # the device's period this much over the host's: steps measured on the device
DEVICE_BOUND_STEPS = 3  # ... over two periods at least (one period is one sample: a lag, not a rate)
# a blocking call's own cost when nothing is left to wait for: microseconds on a GPU, up to 0.4 ms on an NPU
# (the fixtures); one that blocked longer with no traced device work running waited for work the trace lacks
UNTRACED_MIN_NS = 1_000_000
FREE_RE = re.compile(r"Free(Host)?$")  # cudaFree, hipHostFree, aclrtFree...: blocking, with a cost of their own
# runtime calls that return only when the device (or a copy from it) is done: any *Synchronize* call, and
# every vendor's blocking calls (graph/vendors.BLOCKING, the one table: hipMemcpyWithStream, aclrtMemcpy, ...)
DEVICE_WAIT_RE = re.compile(r"synchroni[sz]e|" + BLOCKING_RE.pattern, re.I)
ASYNC_COPY_RE = re.compile(r"^(cuda|hip|aclrt)Memcpy(2D|3D)?Async$")
# the device copy of a D2H transfer, unless its name says the host memory was pinned
D2H_UNPINNED_RE = re.compile(r"DtoH|Device\s*->\s*(Pageable|Host)|D2H", re.I)
PINNED_RE = re.compile(r"pinned", re.I)
PAGEABLE_RE = re.compile(r"pageable", re.I)  # "Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pageable)"


def step_rows(table: EventTable) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the ProfilerStep#N events on the main thread, by start, and their numbers."""
    ev = table.events
    ids = ids_matching(table, STEP_RE)
    if not len(ids):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    rows = np.flatnonzero(id_mask(ev["name"], ids, len(table.strings)) & (ev["kind"] != int(Kind.GPU_USER_ANNOTATION))
                          & (ev["device"] == NONE))
    if len(rows) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    pairs = np.stack([ev["pid"][rows], ev["tid"][rows]], axis=1)
    uniq, inv = group_rows(pairs)
    cnt = np.bincount(inv)
    main = np.argmax(cnt)
    rows = rows[inv.reshape(-1) == main]
    rows = rows[np.argsort(ev["ts"][rows], kind="stable")]
    nums = np.array([int(STEP_RE.match(table.strings[int(n)]).group(1)) for n in ev["name"][rows]], np.int64)
    # one event per step number (a reader may emit duplicates)
    _, first = np.unique(nums, return_index=True)
    first = np.sort(first)
    return rows[first], nums[first]


STEP_SOURCE_TRACE, STEP_SOURCE_MARKS, STEP_SOURCE_WINDOW = "trace", "step_marks", "window"


def mark_steps(table: EventTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(numbers, starts, ends) of the loop's step marks. A first or last mark holding no host event
    start is no step and is dropped (while another remains): the stop() right after the last
    prof.step(), or the start() right before a loop that calls prof.step() first."""
    from ..ingest import side_tables as side
    marks = sorted((int(r["step"]), int(r["start_ns"]), int(r["end_ns"])) for r in side.rows(table.side, "step_marks"))
    if not marks:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    nums, starts, ends = (np.array(c, np.int64) for c in zip(*marks))
    ts = np.sort(table.events["ts"][table.events["device"] == NONE])
    held = np.searchsorted(ts, ends, side="left") > np.searchsorted(ts, starts, side="left")  # an event starts inside
    keep = np.ones(len(nums), bool)
    for end in (-1, 0):
        if keep.sum() > 1 and not held[end]:
            keep[end] = False
    return nums[keep], starts[keep], ends[keep]


def host_steps(table: EventTable) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """(numbers, starts, host ends, source) of the steps the loop marked: ProfilerStep ranges, else
    the step marks; empty (source "window") when the window has neither."""
    rows, nums = step_rows(table)
    if len(rows):
        ev = table.events
        starts = ev["ts"][rows].astype(np.int64)
        return nums, starts, starts + ev["dur"][rows], STEP_SOURCE_TRACE
    nums, starts, ends = mark_steps(table)
    return nums, starts, ends, STEP_SOURCE_MARKS if len(nums) else STEP_SOURCE_WINDOW


def has_steps(table: EventTable) -> bool:
    """The loop marked its steps (ProfilerStep ranges or step marks): training steps are measured."""
    return host_steps(table)[3] != STEP_SOURCE_WINDOW


def device_rows(table: EventTable) -> np.ndarray:
    return np.flatnonzero(kind_mask(table, DEVICE_KINDS))


def launch_times(table: EventTable, dev: np.ndarray) -> np.ndarray:
    """Start of the RUNTIME event that launched each device row (own start when unknown)."""
    ev = table.events
    rt = np.flatnonzero(ev["kind"] == int(Kind.RUNTIME))
    rt = rt[ev["correlation"][rt] != NONE]
    hit = join_on(ev["correlation"][dev], ev["correlation"][rt])
    lt = ev["ts"][dev].copy()
    ok = hit != NONE
    lt[ok] = ev["ts"][rt[hit[ok]]]
    return lt


def step_spans(table: EventTable):
    """(numbers, starts, ends, host ends, clock) of the steps, per the rules in the module docstring."""
    ev = table.events
    nums, starts, host_end, _source = host_steps(table)
    if len(nums) == 0:
        if len(table) == 0:
            zero = np.zeros(1, np.int64)
            return zero, zero, zero, zero, "host"
        lo = np.array([int(ev["ts"].min())])
        hi = np.array([int((ev["ts"] + ev["dur"]).max())])
        return np.zeros(1, np.int64), lo, hi, hi, "host"
    ends = host_end.copy()
    first = np.full(len(starts), np.iinfo(np.int64).max)
    dev = device_rows(table)
    if len(dev):
        launched = launch_times(table, dev)
        step = np.searchsorted(starts, launched, side="right") - 1
        inside = (step >= 0) & (launched < host_end[np.maximum(step, 0)])
        np.maximum.at(ends, step[inside], (ev["ts"][dev] + ev["dur"][dev])[inside])
        np.minimum.at(first, step[inside], ev["ts"][dev][inside])
    if _device_bound(starts, first, untraced_waits(table)):
        last_end = max(int(ends[-1]), int(first[-1]))
        starts, ends = first.copy(), np.append(first[1:], last_end)
        return nums, starts, ends, ends.copy(), "device"
    ends[:-1] = np.minimum(ends[:-1], starts[1:])
    ends = np.maximum(ends, starts)
    return nums, starts, ends, np.minimum(host_end, ends), "host"


def _device_bound(starts: np.ndarray, first: np.ndarray, untraced) -> bool:
    """The device runs behind the host: every step launched device work, and the device's period
    (first device event of the first step to that of the last) exceeds the host's (less its waits for
    untraced work: a backlog from before the window is no period of the loop) by DEVICE_BOUND_MARGIN."""
    if len(starts) < DEVICE_BOUND_STEPS or (first == np.iinfo(np.int64).max).any():
        return False
    drained = iv.total(iv.clip(untraced, int(starts[0]), int(starts[-1])))
    host, device = int(starts[-1] - starts[0]) - drained, int(first[-1] - first[0])
    return host > 0 and device > host * (1 + DEVICE_BOUND_MARGIN) and bool((np.diff(first) > 0).all())


def untraced_waits(table: EventTable) -> tuple[np.ndarray, np.ndarray]:
    """The time blocking calls waited for device work queued before the window (module docstring), as an
    interval set: each call that began before the window's first traced device event, from its start to that
    event's start (or its own end): the backlog runs first, as it was queued first; only stretches over
    UNTRACED_MIN_NS. A later call had the window's own work on the device: a wait with nothing traced running
    then is for lost records of the step's own work, its time the step's. Empty without device work."""
    ev = table.events
    dev = device_rows(table)
    if len(dev) == 0:
        return iv.EMPTY
    waits = device_wait_rows(table)
    waits = np.union1d(waits[~id_mask(ev["name"][waits], ids_matching(table, FREE_RE), len(table.strings))],
                       pageable_copies(table))
    lo = ev["ts"][waits].astype(np.int64)
    until = np.minimum(lo + ev["dur"][waits], int(ev["ts"][dev].min()))
    keep = until - lo > UNTRACED_MIN_NS
    return iv.union(lo[keep], until[keep])


def pageable_copies(table: EventTable) -> np.ndarray:
    """RUNTIME rows of the async copies whose device copy names pageable host memory: the runtime stages such
    a copy through its own buffer, and a copy to the device waits for the stream's earlier work to do so (a
    first step's batch copy behind the backlog: resnet50_num_workers_4 blocks 36 ms); not Device wait, as
    its staging is the call's own time once the stream is free."""
    ev = table.events
    copies = np.flatnonzero((ev["kind"] == int(Kind.RUNTIME)) & name_mask(table, ASYNC_COPY_RE))
    memcpy = np.flatnonzero((ev["kind"] == int(Kind.MEMCPY)) & name_mask(table, PAGEABLE_RE))
    memcpy = memcpy[ev["correlation"][memcpy] != NONE]
    return copies[np.isin(ev["correlation"][copies], ev["correlation"][memcpy])]


def distorted_steps(starts: np.ndarray, ends: np.ndarray, host_ends: np.ndarray,
                    untraced: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(tail ns, distorted) per step: the last of several steps by its tail (the window's end), any step
    by its waits for untraced work (`untraced`: ns per step) while another step remains undistorted."""
    tail = ends - host_ends
    distorted = np.zeros(len(starts), bool)
    if len(starts) > 1:
        distorted[-1] = tail[-1] > TAIL_SHARE * (host_ends[-1] - starts[-1])
    queued = untraced > UNTRACED_SHARE * (ends - starts)
    if (~(distorted | queued)).any():
        distorted |= queued
    return tail, distorted


def device_wait_rows(table: EventTable) -> np.ndarray:
    """RUNTIME rows that block the host until the device is done (module docstring, category 6)."""
    ev = table.events
    runtime = np.flatnonzero(ev["kind"] == int(Kind.RUNTIME))
    if len(runtime) == 0:
        return runtime
    texts = table.strings.values
    waits = id_mask(ev["name"][runtime], ids_matching(table, DEVICE_WAIT_RE), len(texts))
    copies = runtime[id_mask(ev["name"][runtime], ids_matching(table, ASYNC_COPY_RE), len(texts))]
    if len(copies):
        memcpy = np.flatnonzero(ev["kind"] == int(Kind.MEMCPY))
        d2h = np.setdiff1d(ids_matching(table, D2H_UNPINNED_RE), ids_matching(table, PINNED_RE))
        memcpy = memcpy[id_mask(ev["name"][memcpy], d2h, len(texts)) & (ev["correlation"][memcpy] != NONE)]
        blocking = copies[np.isin(ev["correlation"][copies], ev["correlation"][memcpy])]
        waits |= np.isin(runtime, blocking)
    return runtime[waits]


def category_sets(table: EventTable, ctx: Context | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Exclusive interval sets per category over the whole window (priority applied)."""
    ev = table.events
    kind = ev["kind"]
    ts, end = ev["ts"], ev["ts"] + ev["dur"]

    def union(mask):
        return iv.union(ts[mask], end[mask])

    host_ops = kind_mask(table, HOST_OP_KINDS) & (ev["device"] == NONE)
    comm = np.zeros(len(table), bool)
    comm[comm_rows(ctx or Context(table))] = True
    wait = np.zeros(len(table), bool)
    wait[device_wait_rows(table)] = True
    runtime = kind == int(Kind.RUNTIME)
    on_host = not kind_mask(table, DEVICE_KINDS).any()
    sets = [
        host_compute(table, comm) if on_host else union(kind == int(Kind.KERNEL)),
        union(comm),
        union(kind == int(Kind.MEMCPY)),
        union(kind == int(Kind.MEMSET)),
        union(wait),
        union(runtime & ~wait),
        union(host_ops & name_mask(table, DATALOADER_RE)),
        union(host_ops & ~name_mask(table, STEP_RE)),
    ]
    return partition(sets, hidden_only=on_host)


def host_compute(table: EventTable, comm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What hides communication on a window without device work: the host operators (CPU_OP) on
    the threads that run no communication (gloo runs its collectives in the process group's worker
    threads, the `gloo:*` ranges), less the collective ops themselves (`c10d::allreduce_` enqueues an
    async collective: it is neither its communication nor compute)."""
    ev = table.events
    ops = (ev["kind"] == int(Kind.CPU_OP)) & (ev["device"] == NONE) & ~comm
    if comm.any():
        keys = thread_keys(table, np.arange(len(table)))
        ops &= ~np.isin(keys, distinct(keys[comm]))
    collective = name_mask(table, HOST_COMM_RE) & ops
    ts, end = ev["ts"], ev["ts"] + ev["dur"]
    return iv.subtract(iv.union(ts[ops & ~collective], end[ops & ~collective]), iv.union(ts[collective], end[collective]))


def partition(sets, hidden_only: bool = False):
    """Split into the exclusive CATEGORIES: bits 0 (kernels) and 1 (communication) give
    compute / overlapped / communication, then the lowest remaining bit wins. `hidden_only`: bit 0
    is host compute (a window without device work), which hides communication (overlapped) but is
    otherwise counted by the host categories below, as before."""
    pos, delta = [], []
    for i, (lo, hi) in enumerate(sets):
        pos += [lo, hi]
        delta += [np.full(len(lo), 1 << i, np.int64), np.full(len(hi), -(1 << i), np.int64)]
    points = np.concatenate(pos) if pos else np.zeros(0, np.int64)
    out = {c: iv.EMPTY for c in CATEGORIES}
    if len(points) < 2:
        return out
    order = np.argsort(points, kind="stable")
    points, masks = points[order], np.cumsum(np.concatenate(delta)[order])
    last_at = np.r_[points[1:] != points[:-1], True]
    bounds, seg_mask = points[last_at], masks[last_at][:-1]
    device = seg_mask & 3
    if hidden_only:
        device = np.where(device == 1, 0, device)
    rest = seg_mask >> 2
    lowest = rest & -rest
    cat = np.full(len(seg_mask), -1, np.int64)
    cat[device == 1] = 0
    cat[device == 3] = 1
    cat[device == 2] = 2
    for j in range(len(CATEGORIES) - 3):  # memcpy .. host
        cat[(device == 0) & (lowest == (1 << j))] = 3 + j
    for c, name in enumerate(CATEGORIES):
        sel = cat == c
        out[name] = iv.union(bounds[:-1][sel], bounds[1:][sel])
    return out


def breakdowns(table: EventTable, ctx: Context | None = None):
    """(numbers, starts, durations, {category: ns per step, 'idle': ..., 'untraced_wait': ...}, tails,
    distorted, clock); 'untraced_wait' is no category: the step's waits for work the trace lacks."""
    nums, starts, ends, host_ends, clock = step_spans(table)
    cats = category_sets(table, ctx)
    untraced = untraced_waits(table)
    if ctx is not None:
        # the rules' claims: the time a change removes, as interval sets; a wait for work queued before the
        # window is held apart, claimed by no finding (no change to the step removes a backlog it inherited)
        held = {c: iv.intersect(cats[c], untraced) for c in ("device_wait", "runtime")}
        ctx.categories = {**cats, **{c: iv.subtract(cats[c], held[c]) for c in held},
                          "untraced_wait": iv.union_sets(*held.values())}
    res = {c: iv.measure(cats[c], starts, ends) for c in CATEGORIES}
    dur = ends - starts
    used = np.zeros(len(starts), np.int64)
    for c in CATEGORIES:
        used += res[c]
    res["idle"] = dur - used
    res["untraced_wait"] = iv.measure(untraced, starts, ends)
    tail, distorted = distorted_steps(starts, ends, host_ends, res["untraced_wait"])
    return nums, starts, dur, res, tail, distorted, clock
