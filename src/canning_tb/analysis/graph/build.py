"""The dependency graph of one window: who waits for whom, read from the trace's own structure.

Nodes
-----
- Host atoms: each host thread's busy time cut at every start and end of its events (operators,
  annotations, runtime calls; ProfilerStep ranges only mark steps), so that an atom lies inside one
  innermost event (`row`), or in none (untraced host time: Python between operators, on the thread
  that holds the steps). On that thread the atoms tile the window; on the others a gap is idle time.
- Device nodes: every kernel, copy, set and communication kernel, on its stream.

Dependencies (`deps`: a node starts `lag` ns after its dependency ends)
-----------------------------------------------------------------------
- lane order: an atom after the one before it on its thread, a device event after the one before it
  on its stream;
- launch: a device event after the runtime call that launched it (joined on `correlation`);
- cross-stream: a device event that was held (it started later than its stream and its launch allowed)
  and started when an event on another stream of the device ended (an event wait, a collective the
  compute stream waits for): inferred from the times, as nothing in a trace names it;
- blocking (`wait_on`): a runtime call that returns only when the device is done (steps.device_wait_rows,
  the vendor table of analysis/graph/vendors.py) ends when the last device event it waited for ends,
  plus the tail it took to return.

The dependency that bound a node (the one that ended last) keeps the gap it showed; the others keep only
their intrinsic lag (0 for lane order and cross-stream; the launch latency seen where the launch bound the
kernel), so that a replay with nothing changed gives back the observed times exactly (replay.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...ingest.table import NONE, EventTable, Kind
from ..common import (DATALOADER_RE, DEVICE_KINDS, HOST_COMM_RE, STEP_RE, _start_order, ids_matching, id_mask,
                      kind_mask, nest, thread_keys)
from ..context import Context
from ..steps import device_wait_rows
from .vendors import HOST_WAIT_RE

# node categories (the critical path's breakdown: docs/critical_path.md)
CATS = ("host", "python", "dataloader", "runtime", "sync", "collective_host", "kernel", "communication", "memcpy",
        "memset", "latency", "idle", "untraced")
CAT = {name: i for i, name in enumerate(CATS)}
LANE, LAUNCH, CROSS_STREAM, WAKE = 0, 1, 2, 3  # dependency kinds
HELD_NS = 2_000  # a device event that starts this long after its stream and launch allowed was held ...
COINCIDE_NS = 10_000  # ... by an event on another stream ending this close before it (NPUs: about 2 us)
BURST_GAP_NS = 1_000_000  # another thread's work after this much idle time is a burst something started ...
THREAD_WAIT_NS = 1_000_000  # ... and the step's thread waited for it when it went on this close to its end
_WAITING_CATS = ("python", "host", "sync", "collective_host")


@dataclass
class Graph:
    start: np.ndarray  # observed start / end per node, ns
    end: np.ndarray
    lane: np.ndarray  # lane index (lanes: labels)
    cat: np.ndarray  # CAT code
    row: np.ndarray  # the innermost table row (host atoms) or the event's row (device); NONE: untraced
    dep_ptr: np.ndarray  # CSR: node n's dependencies are dep_src[dep_ptr[n]:dep_ptr[n + 1]]
    dep_src: np.ndarray
    dep_lag: np.ndarray
    dep_kind: np.ndarray  # per dependency: LANE, LAUNCH, CROSS_STREAM, WAKE
    bind: np.ndarray  # per node: position in dep_src of the dependency that bound it, NONE: none
    wait_on: np.ndarray  # per node: the device node a blocking call waited for, NONE: none
    wait_tail: np.ndarray  # ... and the time it took to return after that node ended
    lanes: list = field(default_factory=list)  # lane labels: "thread 123", "stream 7 (device 0)"
    main_lane: int = NONE  # the lane of the thread holding the steps
    in_dataloader: np.ndarray | None = None  # per node: inside a data-loading range

    def __len__(self) -> int:
        return len(self.start)

    def lists(self) -> dict:
        """The columns the path walk reads element by element, made once: numpy scalars make that ten times
        slower. Those of large values are memoryviews over int64 arrays (each read gives a Python int; a list
        would keep one, ~40 bytes a node), the others lists (their values are shared small ints)."""
        cached = self.__dict__.get("_lists")
        if cached is None:
            held = self.wait_on != NONE
            # the node each one was held by: what it waited for where it returned after that ended, else the
            # dependency that bound its start
            by_dep = (np.where(self.bind != NONE, self.dep_src[np.maximum(self.bind, 0)], NONE) if len(self.dep_src)
                      else np.full(len(self.start), NONE, np.int64))
            waited = held & (self.end[np.maximum(self.wait_on, 0)] > self.start)
            cached = {"start": view(self.start), "end": view(self.end), "lane": self.lane.tolist(),
                      "cat": self.cat.tolist(), "held_by": view(np.where(waited, self.wait_on, by_dep)),
                      "waited": waited.tolist()}
            self.__dict__["_lists"] = cached
        return cached

    @property
    def on_device(self) -> np.ndarray:
        return (self.cat >= CAT["kernel"]) & (self.cat <= CAT["memset"])

    @property
    def dur(self) -> np.ndarray:
        return self.end - self.start


def view(a: np.ndarray) -> memoryview:
    """An int64 array read element by element as Python ints, without a list of them."""
    return memoryview(np.ascontiguousarray(a, np.int64))


def build_graph(table: EventTable, ctx: Context | None = None) -> Graph:
    ctx = ctx or Context(table)
    ev = table.events
    host = _host_atoms(table, ctx)
    dev = np.flatnonzero(kind_mask(table, DEVICE_KINDS) & (ev["dur"] >= 0))
    dev = dev[np.lexsort((ev["ts"][dev], ev["stream"][dev], ev["device"][dev]))]
    n_host = len(host["start"])
    start = np.concatenate([host["start"], ev["ts"][dev]])
    end = np.concatenate([host["end"], ev["ts"][dev] + ev["dur"][dev]])
    dev_lane_key = ev["device"][dev].astype(np.int64) * (1 << 40) + ev["stream"][dev]
    dev_keys, first_of, dev_lane = np.unique(dev_lane_key, return_index=True, return_inverse=True)
    lanes = list(host["lanes"]) + [_stream_label(int(ev["device"][dev[i]]), int(ev["stream"][dev[i]])) for i in first_of]
    lane = np.concatenate([host["lane"], dev_lane.reshape(-1) + len(host["lanes"])]).astype(np.int32)
    row = np.concatenate([host["row"], dev])
    cat = np.concatenate([host["cat"], _device_cats(table, dev)]).astype(np.int8)
    n = len(start)
    src, dst, kind = [], [], []  # dependency edges; kind 0 lane, 1 launch, 2 cross-stream
    # lane order (host atoms come sorted by lane then time; device nodes by device, stream, time)
    same = np.flatnonzero(lane[1:] == lane[:-1])
    src.append(same), dst.append(same + 1), kind.append(np.zeros(len(same), np.int8))
    # launches: the atom that starts the runtime call with the device event's correlation id
    if len(dev):
        launch_atom = _launch_atoms(table, host, dev)
        # a blocking call that issues its own copy (cudaMemcpy, .item()) waits for it: the copy depends on the call's
        # start (the atom before it on its thread), else the two would wait for each other
        if n_host:
            own = (launch_atom > 0) & (host["cat"][np.maximum(launch_atom, 0)] == CAT["sync"])
            own &= host["lane"][np.maximum(launch_atom - 1, 0)] == host["lane"][np.maximum(launch_atom, 0)]
            launch_atom[own] -= 1
        ok = launch_atom != NONE
        src.append(launch_atom[ok]), dst.append(n_host + np.flatnonzero(ok)), kind.append(np.ones(ok.sum(), np.int8))
    src_a, dst_a, kind_a = (np.concatenate(x) if x else np.zeros(0, np.int64) for x in (src, dst, kind))
    src_a, dst_a = src_a.astype(np.int64), dst_a.astype(np.int64)
    cross_src, cross_dst = _cross_stream(start, end, lane, n_host, src_a, dst_a, ev["device"][dev])
    bursts = _bursts(start, end, lane, host, n_host, table)
    wake_src, wake_dst = _wakes(start, end, lane, host["main_lane"], bursts)
    src_a = np.concatenate([src_a, cross_src, wake_src])
    dst_a = np.concatenate([dst_a, cross_dst, wake_dst])
    kind_a = np.concatenate([kind_a, np.full(len(cross_src), 2, np.int8), np.full(len(wake_src), 3, np.int8)])
    # CSR by destination; the binding dependency is the one that ended last
    order = np.lexsort((end[src_a], dst_a))
    src_a, dst_a, kind_a = src_a[order], dst_a[order], kind_a[order]
    ptr = np.zeros(n + 1, np.int64)
    np.add.at(ptr, dst_a + 1, 1)
    ptr = np.cumsum(ptr)
    has = ptr[1:] > ptr[:-1]
    bind = np.full(n, NONE, np.int64)
    bind[has] = ptr[1:][has] - 1  # sorted by the dependency's end: the last one ended last
    gap = start[dst_a] - end[src_a]
    launch_lag = _launch_latency(gap, kind_a, bind, ptr)
    intrinsic = np.where(kind_a == 1, launch_lag, 0)
    lag = np.minimum(gap, intrinsic)
    lag[bind[has]] = gap[bind[has]]
    wait_on, wait_tail = _blocking(table, host, start, end, lane, n_host, dev)
    _thread_waits(start, end, lane, cat, host["main_lane"], bursts, wait_on, wait_tail)
    in_dl = np.concatenate([host["in_dataloader"], np.zeros(len(dev), bool)])
    return Graph(start=start, end=end, lane=lane, cat=cat, row=row, dep_ptr=ptr, dep_src=src_a, dep_lag=lag,
                 dep_kind=kind_a, bind=bind, wait_on=wait_on, wait_tail=wait_tail, lanes=lanes, main_lane=host["main_lane"],
                 in_dataloader=in_dl)


def _bursts(start, end, lane, host, n_host, table) -> list[np.ndarray]:
    """(first atoms, last atoms) of the bursts of work of the other threads of the steps' process: runs of atoms
    on one thread with no idle gap over BURST_GAP_NS (the autograd engine's backward, a collective's worker)."""
    main = host["main_lane"]
    if main == NONE:
        return [np.zeros(0, np.int64), np.zeros(0, np.int64)]
    ev = table.events
    rows = host["row"]
    pid = np.where(rows != NONE, ev["pid"][np.maximum(rows, 0)], NONE)
    hl = host["lane"]
    main_pids = _distinct(pid[(hl == main) & (rows != NONE)])
    ours = _distinct(hl[(rows != NONE) & np.isin(pid, main_pids)])  # threads of the steps' process
    other = np.flatnonzero((lane[:n_host] != main) & (rows != NONE) & np.isin(lane[:n_host], ours))
    if not len(other):
        return [np.zeros(0, np.int64), np.zeros(0, np.int64)]
    new = np.ones(len(other), bool)
    new[1:] = (lane[other][1:] != lane[other][:-1]) | (start[other][1:] - end[other][:-1] > BURST_GAP_NS)
    firsts = other[new]
    lasts = other[np.append(new[1:], True)]
    return [firsts, lasts]


def _wakes(start, end, lane, main, bursts) -> tuple[np.ndarray, np.ndarray]:
    """Each burst starts after the atom of the steps' thread that ended last before it (what started it)."""
    firsts = bursts[0]
    m = np.flatnonzero(lane == main) if main != NONE else np.zeros(0, np.int64)
    if not len(firsts) or not len(m):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    m = m[np.argsort(end[m], kind="stable")]
    j = np.searchsorted(end[m], start[firsts], side="right") - 1
    ok = j >= 0
    return m[j[ok]].astype(np.int64), firsts[ok].astype(np.int64)


def _thread_waits(start, end, lane, cat, main, bursts, wait_on, tail) -> None:
    """An atom of the steps' thread with nothing traced in it (or a waiting call) that spent most of its time
    beside another thread's burst and went on as that burst ended (up to THREAD_WAIT_NS after it, or inside its
    last part: a worker signals completion before its own range closes) waited for it: backward on the autograd
    thread, a gloo collective's worker. The burst that overlaps it most is the one."""
    firsts, lasts = bursts
    m = np.flatnonzero(lane == main) if main != NONE else np.zeros(0, np.int64)
    if not len(lasts) or not len(m):
        return
    m = m[np.isin(cat[m], [CAT[c] for c in _WAITING_CATS])]
    m = m[np.argsort(end[m], kind="stable")]
    ends = end[m]
    best: dict = {}
    b_start, b_end = start[firsts], end[lasts]
    # its last part, or a wake-up that late on a busy machine
    near = np.maximum((b_end - b_start) // 10, THREAD_WAIT_NS)
    los = np.searchsorted(ends, b_end - near, side="left").tolist()
    his = np.searchsorted(ends, b_end + near, side="right").tolist()
    for b, bs, be, lo, hi in zip(lasts.tolist(), b_start.tolist(), b_end.tolist(), los, his):
        for a in m[lo:hi].tolist():
            overlap = min(int(end[a]), be) - max(int(start[a]), bs)
            # it stood still beside the burst: most of its own time and at least half of the burst's
            still = 2 * overlap >= int(end[a] - start[a]) > 0 and 2 * overlap >= be - bs
            if wait_on[a] == NONE and still and overlap > best.get(a, (0, 0))[0]:
                best[a] = (overlap, b)
    for a, (_, b) in best.items():
        wait_on[a], tail[a] = b, int(end[a]) - int(end[b])  # negative: it went on before the range closed


def _stream_label(device: int, stream: int) -> str:
    where = f"device {device}" if device != NONE else "device unknown"
    return f"stream {stream} ({where})" if stream != NONE else f"device work, stream unknown ({where})"


def _launch_latency(gap: np.ndarray, kind: np.ndarray, bind: np.ndarray, ptr: np.ndarray) -> int:
    """The launch latency of the window: the median gap from a launch to its kernel where the launch bound it."""
    bound = bind[bind != NONE]
    lat = gap[bound[kind[bound] == 1]]
    return int(np.median(lat)) if len(lat) else 0


class _ThreadsByTid:
    """The table's host events seen with one process id: torch_npu writes the CANN API calls of a thread under
    a process of their own ("CANN", same tid), so a blocking aclrtSynchronizeStream is nested in the
    aten::_local_scalar_dense that made it only when threads are keyed by tid alone."""

    def __init__(self, table: EventTable):
        self.events = dict(table.events)
        self.events["pid"] = np.zeros(len(table), np.int64)
        self.strings = table.strings


def host_nesting(table: EventTable, ctx: Context):
    """The host nesting the graph cuts threads with: the context's, or by tid alone on torch_npu's layout."""
    rows = ctx.host.rows
    ev = table.events
    if table.meta.format != "ascend" or not len(rows):
        return ctx.host, _threads(ctx.host, table)
    pairs = _distinct(ev["pid"][rows] * (1 << 32) + (ev["tid"][rows] & 0xFFFFFFFF))
    if len(_distinct(pairs & 0xFFFFFFFF)) == len(pairs):  # no tid under two processes
        return ctx.host, _threads(ctx.host, table)
    view = _ThreadsByTid(table)
    by_tid = nest(view, rows)
    return by_tid, _threads(by_tid, view)


def _threads(h, table) -> np.ndarray:
    """Per row of a nesting: its thread's key, as the nesting made it (a Nesting made by hand has none)."""
    return h.threads if h.threads is not None else thread_keys(table, h.rows)


def thread_label(pid: int, tid: int) -> str:
    """A host thread's lane label (edits name a thread's lane by it)."""
    return f"thread {tid} (pid {pid})"


def _host_atoms(table: EventTable, ctx: Context) -> dict:
    ev = table.events
    h, keys = host_nesting(table, ctx)
    rows = h.rows
    step_ids = ids_matching(table, STEP_RE)
    is_step = id_mask(ev["name"][rows], step_ids, len(table.strings)) if len(step_ids) else np.zeros(len(rows), bool)
    main_key = int(np.bincount(keys[is_step]).argmax()) if is_step.any() else (
        int(np.bincount(keys, weights=ev["dur"][rows]).argmax()) if len(rows) else NONE)
    dl_ids = ids_matching(table, DATALOADER_RE)
    comm_ids = ids_matching(table, HOST_COMM_RE)
    wait = set(device_wait_rows(table).tolist())
    out = {k: [] for k in ("start", "end", "lane", "inner")}
    lanes, main_lane = [], NONE
    for key in _distinct(keys):
        pos = np.flatnonzero((keys == key) & ~is_step)
        if not len(pos):
            continue
        r = rows[pos]
        s, e = ev["ts"][r], ev["ts"][r] + ev["dur"][r]
        cuts = _distinct(np.concatenate([s, e]))
        if key == main_key and is_step.any():  # the step ranges bound the thread's untraced time too
            st = rows[is_step & (keys == key)]
            cuts = _distinct(np.concatenate([cuts, ev["ts"][st], ev["ts"][st] + ev["dur"][st]]))
        a0, a1 = cuts[:-1], cuts[1:]
        inner = _innermost(s, e, h.parent[pos], pos, h.depth[pos], (a0 + a1) // 2)
        keep = (inner != NONE) | (key == main_key)
        a0, a1, inner = a0[keep], a1[keep], inner[keep]
        if key == main_key:
            main_lane = len(lanes)
        lanes.append(thread_label(int(ev["pid"][r[0]]), int(ev["tid"][r[0]])))
        out["start"].append(a0), out["end"].append(a1), out["inner"].append(inner)
        out["lane"].append(np.full(len(a0), len(lanes) - 1, np.int32))
    a = {k: (np.concatenate(v) if v else np.zeros(0, np.int64)) for k, v in out.items()}
    a["row"] = np.where(a["inner"] != NONE, rows[np.maximum(a["inner"], 0)], NONE)
    a["cat"], a["in_dataloader"] = _host_cats(table, h, a["inner"], dl_ids, comm_ids, wait)
    steps = rows[is_step]
    a = _merged(a, np.concatenate([ev["ts"][steps], ev["ts"][steps] + ev["dur"][steps]]))
    a["lanes"], a["main_lane"] = lanes, main_lane
    return a


# atoms of these categories next to each other on a thread are one node (nothing depends on the cut between
# them); launches and blocking calls stay one node each, as they are what other nodes depend on
_MERGEABLE = ("host", "python", "dataloader", "collective_host")


def _distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (np.unique hashes int64 keys, several times slower than a sort here)."""
    v = np.sort(values, kind="stable")
    return v[np.concatenate([[True], v[1:] != v[:-1]])] if len(v) else v


def _merged(a: dict, step_cuts: np.ndarray) -> dict:
    """Runs of touching atoms of one thread, one mergeable category and one data-loading state, never across a
    step's start or end, as one atom named by its longest piece."""
    n = len(a["start"])
    if n < 2:
        return a
    cat, lane, dl = a["cat"], a["lane"], a["in_dataloader"]
    joins = np.zeros(n, bool)
    row = a["row"]
    same_call = (row[1:] == row[:-1]) & (row[1:] != NONE)  # one event cut by another's boundary: one node
    mergeable = np.zeros(len(CATS), bool)
    mergeable[[CAT[c] for c in _MERGEABLE]] = True
    cuts = np.sort(step_cuts)
    at = np.minimum(np.searchsorted(cuts, a["start"][1:]), max(len(cuts) - 1, 0))
    on_cut = (cuts[at] == a["start"][1:]) if len(cuts) else np.zeros(n - 1, bool)
    joins[1:] = ((lane[1:] == lane[:-1]) & (cat[1:] == cat[:-1]) & (dl[1:] == dl[:-1])
                 & (a["start"][1:] == a["end"][:-1]) & (mergeable[cat[1:]] | same_call) & ~on_cut)
    first = np.flatnonzero(~joins)
    last = np.append(first[1:] - 1, n - 1)
    dur = a["end"] - a["start"]
    # the longest piece of each run names it (the first such piece)
    run = np.cumsum(~joins) - 1
    is_longest = np.flatnonzero(dur == np.maximum.reduceat(dur, first)[run])
    longest = is_longest[np.concatenate([[True], run[is_longest][1:] != run[is_longest][:-1]])]
    out = {k: v[first] for k, v in a.items()}
    out["end"] = a["end"][last]
    out["row"], out["inner"] = a["row"][longest], a["inner"][longest]
    return out


def _innermost(s, e, parent_pos, pos, depth, t) -> np.ndarray:
    """Per instant t (sorted), the position (in ctx.host.rows) of the innermost event of this thread holding it:
    the last event starting at or before t, then up its parents (a level at a time, all instants at once) until
    one still runs at t."""
    order = _start_order(s, e)  # np.lexsort((-(e - s), s)), cheaper on rows nearly sorted by start
    ss = s[order]
    j = np.searchsorted(ss, t, side="right") - 1
    local = np.full(int(pos.max()) + 1 if len(pos) else 0, NONE, np.int64)  # host position -> index in pos
    local[pos] = np.arange(len(pos))
    cand = np.where(j >= 0, order[np.maximum(j, 0)], NONE)  # index into this thread's arrays
    par_local = np.where(parent_pos != NONE, local[np.maximum(parent_pos, 0)], NONE)
    bad = np.flatnonzero(cand != NONE)  # an instant whose candidate still runs at it stays settled
    for _ in range(int(depth.max()) + 2 if len(depth) else 0):
        bad = bad[e[cand[bad]] <= t[bad]]
        if not len(bad):
            break
        cand[bad] = par_local[cand[bad]]
        bad = bad[cand[bad] != NONE]
    return np.where(cand != NONE, pos[np.maximum(cand, 0)], NONE)


def _host_cats(table, h, inner, dl_ids, comm_ids, wait) -> tuple[np.ndarray, np.ndarray]:
    """Per atom: its category, and whether a data-loading range holds it (the atom's event or an ancestor).
    Both are the innermost event's: worked out once per host event, then read per atom (there are about two
    atoms an event)."""
    ev = table.events
    size = len(table.strings)
    names = ev["name"][h.rows]
    dl_mask = id_mask(names, dl_ids, size) if len(dl_ids) else np.zeros(len(h.rows), bool)
    comm_mask = id_mask(names, comm_ids, size) if len(comm_ids) else np.zeros(len(h.rows), bool)
    # ancestors' marks, pushed down the tree once (parents come before children in depth order)
    by_depth = np.argsort(h.depth, kind="stable")
    bounds = np.searchsorted(h.depth[by_depth], np.arange(int(h.depth.max()) + 2 if len(h.depth) else 0))
    for depth in range(1, len(bounds) - 1):
        sel = by_depth[bounds[depth]:bounds[depth + 1]]
        sel = sel[h.parent[sel] != NONE]
        for m in (dl_mask, comm_mask):
            m[sel] |= m[h.parent[sel]]
    c = np.full(len(h.rows), CAT["host"], np.int8)  # per host event
    c[ev["kind"][h.rows] == int(Kind.RUNTIME)] = CAT["runtime"]
    c[np.isin(h.rows, list(wait))] = CAT["sync"]
    wait_ids = ids_matching(table, HOST_WAIT_RE)
    if len(wait_ids):
        c[id_mask(names, wait_ids, size)] = CAT["sync"]
    c[comm_mask & (c == CAT["host"])] = CAT["collective_host"]
    c[dl_mask & (c == CAT["host"])] = CAT["dataloader"]
    has = inner != NONE
    ip = np.maximum(inner, 0)
    return np.where(has, c[ip], CAT["python"]).astype(np.int8), has & dl_mask[ip]


def _device_cats(table: EventTable, dev: np.ndarray) -> np.ndarray:
    k = table.events["kind"][dev]
    out = np.full(len(dev), CAT["kernel"], np.int8)
    out[k == int(Kind.COMM_KERNEL)] = CAT["communication"]
    out[k == int(Kind.MEMCPY)] = CAT["memcpy"]
    out[k == int(Kind.MEMSET)] = CAT["memset"]
    return out


def _launch_atoms(table: EventTable, host: dict, dev: np.ndarray) -> np.ndarray:
    """Per device node: the host atom where its runtime launch starts (NONE: no launch record)."""
    ev = table.events
    out = np.full(len(dev), NONE, np.int64)
    hrow = host["row"]
    rt = np.flatnonzero((hrow != NONE) & (ev["kind"][np.maximum(hrow, 0)] == int(Kind.RUNTIME)))
    if not len(rt):
        return out
    corr = ev["correlation"][hrow[rt]]
    # the first atom of each runtime call (a call cut by nested calls has several)
    first = rt[np.concatenate([[True], hrow[rt][1:] != hrow[rt][:-1]])] if len(rt) else rt
    corr = ev["correlation"][hrow[first]]
    keep = corr != NONE
    first, corr = first[keep], corr[keep]
    order = np.argsort(corr, kind="stable")
    sc = corr[order]
    want = ev["correlation"][dev]
    p = np.searchsorted(sc, want)
    pc = np.minimum(p, max(len(sc) - 1, 0))
    hit = (p < len(sc)) & (want != NONE) & (len(sc) > 0)
    hit[hit] = sc[pc[hit]] == want[hit]
    out[hit] = first[order[pc[hit]]]
    return out


def _cross_stream(start, end, lane, n_host, src, dst, device) -> tuple[np.ndarray, np.ndarray]:
    """Edges from an event on another stream to a device event that was held until that event ended."""
    n = len(start)
    if n == n_host:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    ready = np.full(n, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(ready, dst, end[src])
    devn = np.arange(n_host, n)
    held = devn[(start[devn] - ready[devn] > HELD_NS)]
    if not len(held):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.argsort(end[devn], kind="stable")
    ends, who = end[devn][order], devn[order]
    j = np.searchsorted(ends, start[held], side="right") - 1
    out_s, out_d = [], []
    for k, jj in zip(held.tolist(), j.tolist()):
        while jj >= 0 and start[k] - ends[jj] <= COINCIDE_NS:
            c = int(who[jj])
            if lane[c] != lane[k] and device[c - n_host] == device[k - n_host] and start[c] < start[k]:
                out_s.append(c), out_d.append(k)
                break
            jj -= 1
    return np.array(out_s, np.int64), np.array(out_d, np.int64)


def _blocking(table, host, start, end, lane, n_host, dev) -> tuple[np.ndarray, np.ndarray]:
    """Per node: the device node a blocking host call waited for (of the device work still running when the call
    began, the one that ended last before it returned) and the tail it took to return after it (its own cost:
    microseconds on a GPU, up to milliseconds on an NPU); NONE where no device work ran during the call."""
    n = len(start)
    wait_on = np.full(n, NONE, np.int64)
    tail = np.zeros(n, np.int64)
    if n == n_host:
        return wait_on, tail
    hcat = host["cat"]
    calls = np.flatnonzero(hcat == CAT["sync"])
    # the last atom of each blocking call: it is the one that returns
    last = calls[np.append(host["row"][calls][1:] != host["row"][calls][:-1], True)] if len(calls) else calls
    devn = np.arange(n_host, n)
    order = np.argsort(end[devn], kind="stable")
    ends, who = end[devn][order], devn[order]
    j = np.searchsorted(ends, end[last], side="right") - 1  # the device work that ended last before it returned
    began = table.events["ts"][host["row"][last]]  # the call's own start (a call cut by other events has atoms)
    ok = (j >= 0) & (ends[np.maximum(j, 0)] > began)  # ... and was still running when the call began
    wait_on[last[ok]] = who[j[ok]]
    tail[last[ok]] = end[last[ok]] - ends[j[ok]]
    return wait_on, tail
