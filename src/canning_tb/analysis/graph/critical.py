"""The critical path of each step through the window's dependency graph, and the steps' spans in it.

Walked backwards from the step's end: the node that ended last, then what held it (for a blocking call
that waited, the device work it waited for; else the dependency that bound its start), until the step's
start. Each piece of the path is a segment of one node (or of the gap before it: launch latency, idle
time of a thread) with the node's category, so the path's categories sum to the step exactly.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...ingest.table import NONE
from .build import CAT, CATS, Graph


@dataclass
class StepSpan:
    number: int
    start: int
    end: int
    nodes: np.ndarray  # the nodes of this step (observed start inside it)
    first: int  # the node whose start is the step's start
    last: int  # the node whose end is the step's end


@dataclass
class Path:
    number: int
    start: int
    end: int
    by_cat: dict = field(default_factory=dict)  # category -> ns on the path
    segments: list = field(default_factory=list)  # (node, start, end, category code: CATS[code] names it)


def step_spans(g: Graph, steps) -> list[StepSpan]:
    """Each step (digest Step: number, start_ns, dur_ns) as the nodes it holds and its boundary nodes."""
    out = []
    if len(g) == 0:
        return out
    order = np.argsort(g.start, kind="stable")
    starts = g.start[order]
    on_device = g.on_device  # once: a property over every node
    for s in steps:
        lo, hi = int(s.start_ns), int(s.start_ns + s.dur_ns)
        a, b = np.searchsorted(starts, lo, side="left"), np.searchsorted(starts, hi, side="left")
        nodes = order[a:b]
        if not len(nodes):
            continue
        # the step ends with the thread that holds the steps or with the device work: another thread's work
        # (a data-loading worker, a logger) holds the step only through what waits for it
        nodes = nodes[(g.lane[nodes] == g.main_lane) | on_device[nodes]] if g.main_lane != NONE else nodes
        if not len(nodes):
            continue
        inside = nodes[g.end[nodes] <= hi] if (g.end[nodes] <= hi).any() else nodes
        last = int(inside[np.argmax(g.end[inside])])
        at_start = nodes[g.start[nodes] == g.start[nodes].min()]
        main = at_start[g.lane[at_start] == g.main_lane]
        first = int(main[0]) if len(main) else int(at_start[np.argmax(g.end[at_start])])
        out.append(StepSpan(int(s.number), lo, hi, nodes, first, last))
    return out


def critical_path(g: Graph, span: StepSpan) -> Path:
    path = Path(span.number, span.start, span.end)
    lo = span.start
    L = g.lists()
    start, end, lane, cat, held_by, waited = L["start"], L["end"], L["lane"], L["cat"], L["held_by"], L["waited"]
    idle, latency = CAT["idle"], CAT["latency"]
    cur, t = span.last, min(end[span.last], span.end)
    segs = []
    if span.end > t:
        segs.append((NONE, t, span.end, idle))
    guard = len(g) + 1
    while cur != NONE and t > lo and guard > 0:
        guard -= 1
        nxt = held_by[cur]
        if waited[cur]:  # the call returned when the work it waited for ended: its tail, then that work
            we = end[nxt]
            if t > we:
                segs.append((cur, max(we, lo), t, cat[cur]))
            t, cur = min(t, we), nxt
            continue
        s = start[cur]
        segs.append((cur, max(s, lo), t, cat[cur]))
        t = s
        if nxt == NONE:
            break
        de = end[nxt]
        if de < t:
            # a gap on one lane is the lane standing still; between lanes, the time a launch or a hand-over took
            segs.append((NONE, max(de, lo), t, idle if lane[nxt] == lane[cur] else latency))
        t, cur = min(t, de), nxt
    if t > lo:
        segs.append((NONE, lo, t, CAT["untraced"]))
    kept = [x for x in segs if x[2] > x[1]]
    tot = [0] * len(CATS)
    for _, a, b, c in kept:
        tot[c] += b - a
    path.by_cat = {CATS[c]: tot[c] for c in dict.fromkeys(x[3] for x in kept)}  # in the order first met
    kept.reverse()
    path.segments = kept
    return path


# what the walk calls the time a blocking call spent on work it cannot see: the call's own time (a sync, a copy's
# runtime call), a launch's latency, a lane standing still (category codes: a path's segments carry codes)
_HIDING = frozenset(CAT[name] for name in ("sync", "runtime", "latency", "idle"))


def mark_untraced(path: Path, waits) -> Path:
    """The pieces of `path` inside a wait for work queued before the window (steps.untraced_waits: an interval
    set) become `untraced`: the profiler saw nothing that held them, whatever the walk called them."""
    lo, hi = (np.asarray(x, np.int64) for x in waits)
    segs = path.segments
    if not len(lo) or not segs:
        return path
    a = np.fromiter((x[1] for x in segs), np.int64, len(segs))
    b = np.fromiter((x[2] for x in segs), np.int64, len(segs))
    cat = np.fromiter((x[3] for x in segs), np.int64, len(segs))
    # the waits each hiding segment overlaps: lo[i:j] (the set is sorted and disjoint); looked up for all at once,
    # as a step's path has thousands of segments and few of them meet a wait
    i, j = np.searchsorted(hi, a, side="right"), np.searchsorted(lo, b, side="left")
    cut = np.flatnonzero(_HIDING_MASK[cat] & (j > i)).tolist()
    if not cut:  # most steps: the waits before the window are over by then, and the walk's totals stand
        codes, first = np.unique(cat, return_index=True)  # ... in the order of time, as _by_cat gives them
        path.by_cat = {CATS[c]: path.by_cat[CATS[c]] for c in codes[np.argsort(first)].tolist()}
        return path
    out = []
    at = 0
    for k in cut:
        out.extend(segs[at:k])
        out.extend(_split(segs[k], lo[i[k]:j[k]].tolist(), hi[i[k]:j[k]].tolist()))
        at = k + 1
    out.extend(segs[at:])
    path.segments = [x for x in out if x[2] > x[1]]
    path.by_cat = _by_cat(path.segments)
    return path


_HIDING_MASK = np.isin(np.arange(len(CATS)), list(_HIDING))


def _split(seg: tuple, los: list, his: list) -> list:
    """One segment cut by the waits it overlaps (sorted, disjoint): the pieces inside them `untraced`."""
    node, a, b, cat = seg
    out, t = [], a
    for x, y in zip(los, his):
        x, y = max(a, x), min(b, y)
        if x > t:
            out.append((node, t, x, cat))
        out.append((node, x, y, CAT["untraced"]))
        t = y
    if b > t:
        out.append((node, t, b, cat))
    return out


def _by_cat(segs: list) -> dict:
    """Nanoseconds per category, the categories in the order first met on the path."""
    out: dict = {}
    for _, a, b, cat in segs:
        out[CATS[cat]] = out.get(CATS[cat], 0) + (b - a)
    return out
