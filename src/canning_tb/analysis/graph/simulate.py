"""A finding's change as an edit of the window's graph, and the gain the replay gives for it.

`interval_edit`: the time a change removes (an interval set over the window, as the rules state it) taken
off the nodes of the categories that time is made of: DataLoader time off the atoms inside data-loading
ranges, a blocking call's wait by letting it return without waiting, device categories off the device
nodes. `scale_edit`: device work shrunk to a share of its time (a kernel at its roofline). The gain per
step is the observed step less the replayed step, on each step the average keeps; its mean is the gain and
its lowest and highest are the range (the variation of the steps it was simulated on).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ...ingest.table import NONE
from .build import CAT, LAUNCH, WAKE, Graph, thread_label
from .critical import StepSpan
from .replay import Edit, replay

# breakdown categories (analysis/steps.py) -> the node categories their time is made of
_NODE_CATS = {
    "compute": {"kernel"}, "overlapped": {"kernel", "communication"}, "communication": {"communication",
                                                                                       "collective_host"},
    "memcpy": {"memcpy"}, "memset": {"memset"}, "device_wait": {"sync"}, "runtime": {"runtime"},
    "host": {"host", "python", "collective_host"}, "send / receive": {"communication", "collective_host"},
    "python": {"python"},
}
HOST_CATS = {"host", "python", "dataloader", "runtime", "sync", "collective_host"}


@dataclass
class Simulated:
    gain_ns: int  # mean over the steps
    low_ns: int
    high_ns: int
    steps: int
    what: str


def _measure_upto(starts: np.ndarray, ends: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Length of the (sorted, disjoint) interval set up to each x."""
    if len(starts) == 0:
        return np.zeros(len(x), np.int64)
    cum = np.concatenate([[0], np.cumsum(ends - starts)])
    i = np.searchsorted(starts, x, side="right")  # intervals starting at or before x
    before = cum[np.maximum(i - 1, 0)]
    partial = np.where(i > 0, np.minimum(x, ends[np.maximum(i - 1, 0)]) - starts[np.maximum(i - 1, 0)], 0)
    return np.where(i > 0, before + np.maximum(partial, 0), 0)


def interval_edit(g: Graph, removes, what: list, words: str) -> Edit:
    starts, ends = (np.asarray(removes[0], np.int64), np.asarray(removes[1], np.int64))
    overlap = _measure_upto(starts, ends, g.end) - _measure_upto(starts, ends, g.start)
    cats = set()
    for w in what:
        cats |= _NODE_CATS.get(w, set())
    if "dataloader" in what:
        target = g.in_dataloader.copy()
    elif cats:
        target = np.isin(g.cat, [CAT[c] for c in cats])
    else:  # event ranges named by the rule (compilation, GC, an optimizer step): the host work inside them
        target = np.isin(g.cat, [CAT[c] for c in HOST_CATS])
    hit = np.flatnonzero(target & (overlap > 0))
    # a blocking call that waited is freed from its wait, and loses the time of it the change removes (the part
    # after the device was done, too: the call is gone); one that waited for nothing the trace shows is time
    sync = hit[(g.cat[hit] == CAT["sync"]) & (g.wait_on[hit] != NONE)]
    dur = (g.end - g.start)[hit] - overlap[hit]
    return Edit(words, dur=dict(zip(hit.tolist(), dur.tolist())), unblock=set(sync.tolist()))


# where the backward pass begins: autograd's own ranges and the backward functions (AddmmBackward0, ...)
BACKWARD_RE = re.compile(r"^autograd::engine::evaluate_function|Backward\d*$|^torch::autograd::")


def overlap_edit(g: Graph, table, spans: list[StepSpan], words: str) -> Edit:
    """"Overlap the collectives with the backward": each collective that starts after the step's backward began
    (on the host: a collective worker's burst woken by the step's thread; on the device: a communication kernel)
    is split into DDP's default buckets, each ready as its part of the backward is done (`_bucketed_lag`); it
    still runs after the collectives before it on its lane. The step then waits only for what the buckets leave
    after the backward."""
    ev = table.events
    host_rows = np.flatnonzero((ev["device"] == NONE))
    names = ev["name"][host_rows]
    wanted = [i for i, v in enumerate(table.strings.values) if v is not None and BACKWARD_RE.search(v)]
    bw = host_rows[np.isin(names, wanted)] if wanted else np.zeros(0, np.int64)
    bw_ts = np.sort(ev["ts"][bw])
    main = np.flatnonzero(g.lane == g.main_lane)
    main = main[np.argsort(g.end[main], kind="stable")]
    comm = np.flatnonzero(((g.cat == CAT["collective_host"]) & (g.lane != g.main_lane)) | (g.cat == CAT["communication"]))
    rewire = {}
    sizeless = False
    for span in spans:
        i = np.searchsorted(bw_ts, span.start, side="left")
        if i >= len(bw_ts) or bw_ts[i] >= span.end:
            continue
        begin = int(bw_ts[i])
        j = int(np.searchsorted(g.end[main], begin, side="right")) - 1  # the step's thread, as backward begins
        if j < 0:
            continue
        anchor = int(main[j])
        mine = comm[(g.start[comm] >= begin) & (g.start[comm] < span.end)]
        for node in mine.tolist():
            lo, hi = g.dep_ptr[node], g.dep_ptr[node + 1]
            starters = [k for k in range(lo, hi) if g.dep_kind[k] in (LAUNCH, WAKE)]
            if not starters:
                continue
            issued = max(int(g.end[g.dep_src[k]]) for k in starters)  # when the step issued it: its data ready
            backward = issued - int(g.end[anchor])
            if backward <= 0:
                continue
            size = int(ev["bytes"][g.row[node]]) if g.row[node] >= 0 else NONE
            sizeless |= size < 0
            lag = _bucketed_lag(backward, int(g.end[node] - g.start[node]), size)
            if int(g.end[anchor]) + lag < int(g.start[node]):
                rewire[node] = (anchor, lag)
    if sizeless and rewire:
        words += (" (the trace gives no collective sizes, so no buckets are placed: all of it overlapped, the most "
                  "overlap could give; record_shapes=True records them)")
    return Edit(words, rewire=rewire)


BUCKET_BYTES = 25 << 20  # DDP's default bucket_cap_mb (the change advised keeps it)


def _bucketed_lag(backward: int, comm: int, size: int) -> int:
    """When, after the backward begins, one collective of `size` bytes split into DDP's buckets ends as late as
    its buckets allow: k buckets, bucket i ready at i/k of the backward, each taking comm/k, one after the other;
    the last ends at max(backward + comm/k, backward/k + comm) after the backward began. The collective as one
    node starts `comm` before that. Without its size (a file with no bytes) it may start as the backward begins:
    the most overlap could give."""
    if size is None or size < 0:
        return 0
    k = max(1, -(-size // BUCKET_BYTES))
    return max(backward + comm // k - comm, backward // k, 0)


def scale_edit(g: Graph, rows: np.ndarray, factor: float, words: str) -> Edit:
    """Device events (table rows) shrunk to `factor` of their time."""
    dev = np.flatnonzero(np.isin(g.row, rows) & (g.cat >= CAT["kernel"]) & (g.cat <= CAT["memset"]))
    dur = ((g.end - g.start)[dev] * factor).astype(np.int64)
    return Edit(words, dur=dict(zip(dev.tolist(), dur.tolist())))


def shrink_edit(g: Graph, host_set, host_factor: float, device_rows: np.ndarray, device_factor: float,
                words: str) -> Edit:
    """Host work inside an interval set and device events (table rows) brought to a share of their time: a change
    that keeps the arithmetic and removes a per-call cost (a fused optimizer)."""
    starts, ends = (np.asarray(host_set[0], np.int64), np.asarray(host_set[1], np.int64))
    overlap = _measure_upto(starts, ends, g.end) - _measure_upto(starts, ends, g.start)
    host = np.flatnonzero(np.isin(g.cat, [CAT[c] for c in HOST_CATS if c != "sync"]) & (overlap > 0))
    dur = (g.end - g.start)
    # astype truncates toward zero, as int() does
    new = dict(zip(host.tolist(), (dur[host] - overlap[host] * (1 - host_factor)).astype(np.int64).tolist()))
    dev = np.flatnonzero(np.isin(g.row, device_rows) & g.on_device) if len(device_rows) else np.zeros(0, np.int64)
    new.update(zip(dev.tolist(), (dur[dev] * device_factor).astype(np.int64).tolist()))
    return Edit(words, dur=new)


def fuse_edit(g: Graph, cuts: list, words: str, rescale: list = ()) -> Edit:
    """Operators replaced by one fused call that keeps part of their work. `cuts`, (pid, tid, start, end) per
    stretch of a host thread, is the time that goes on that thread (the operators between the kept ones, the
    Python between them): each node of the thread loses its overlap with its stretches, and the device work
    launched from a node that goes entirely goes with it (the kernels of the operators the fusion removes).
    `rescale`, (pid, tid, start, end, host factor, device factor): work the fused call does in another time (a
    fused backward's matmuls): the thread's time in the stretch lasts host factor x as long, the device work
    launched from inside it device factor x (where the device does the work, the host only launches it)."""
    dur = g.end - g.start
    new: dict[int, int] = {}
    nodes, cut = _lane_overlap(g, [c[:4] for c in cuts])
    new.update(zip(nodes.tolist(), (dur[nodes] - cut).tolist()))
    gone = np.zeros(len(g), bool)
    gone[nodes[cut >= dur[nodes]]] = True
    new.update((n, 0) for n in _launched(g, gone).tolist())
    for pid, tid, lo, hi, host_factor, device_factor in rescale:
        nodes, more = _lane_overlap(g, [(pid, tid, lo, hi)])
        new.update((n, int(new.get(n, dur[n]) + m * (host_factor - 1))) for n, m in zip(nodes.tolist(), more.tolist()))
        inside = np.zeros(len(g), bool)
        inside[nodes[more >= dur[nodes]]] = True
        new.update((n, int(new.get(n, dur[n]) * device_factor)) for n in _launched(g, inside).tolist())
    unblock = set(np.flatnonzero(gone & (g.wait_on != NONE)).tolist())  # a blocking call that goes waits no more
    return Edit(words, dur=new, unblock=unblock)


def _lane_overlap(g: Graph, spans: list) -> tuple[np.ndarray, np.ndarray]:
    """(host nodes, their overlap with the stretches) for stretches (pid, tid, start, end) of host threads,
    each on its own thread's lane; nodes with no overlap left out."""
    labels = {label: i for i, label in enumerate(g.lanes)}
    by_lane: dict[int, list] = {}
    for pid, tid, lo, hi in spans:
        lane = labels.get(thread_label(int(pid), int(tid)))
        if lane is not None and hi > lo:
            by_lane.setdefault(lane, []).append((int(lo), int(hi)))
    nodes, overlaps = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for lane, mine_spans in by_lane.items():
        starts, ends = (np.asarray(x, np.int64) for x in zip(*sorted(mine_spans)))
        mine = np.flatnonzero((g.lane == lane) & ~g.on_device)
        cut = _measure_upto(starts, ends, g.end[mine]) - _measure_upto(starts, ends, g.start[mine])
        nodes.append(mine[cut > 0]), overlaps.append(cut[cut > 0])
    return np.concatenate(nodes), np.concatenate(overlaps)


def _launched(g: Graph, by: np.ndarray) -> np.ndarray:
    """The device nodes launched from the nodes marked in `by`."""
    launch = np.flatnonzero(g.dep_kind == LAUNCH)
    dst = np.searchsorted(g.dep_ptr, launch, side="right") - 1  # the node each launch dependency belongs to
    return np.unique(dst[by[g.dep_src[launch]]])


def gain(g: Graph, spans: list[StepSpan], edit: Edit, kept: set | None = None) -> Simulated | None:
    """The replayed gain per step of the steps in `kept` (all when None); None without steps."""
    use = [s for s in spans if kept is None or s.number in kept] or spans
    if not use or edit.empty():
        return None
    start, end = replay(g, edit, until=max(int(g.end[s.nodes].max()) for s in use))
    gains = []
    for s in use:
        old = int(g.end[s.last]) - int(g.start[s.first])
        new = int(end[s.nodes].max()) - int(start[s.first])
        gains.append(max(old - new, 0))
    arr = np.array(gains, np.int64)
    return Simulated(int(arr.mean()), int(arr.min()), int(arr.max()), len(arr), edit.what)
