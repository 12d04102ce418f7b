"""Re-play a window's dependency graph with an edit: the step times the change would give.

Each node starts when its dependencies allow (their new ends plus the lag build.py kept) and lasts its
new duration; a blocking call returns when what it waited for ends, plus its tail, unless the edit takes
the wait away (then it lasts its tail alone). Nodes are taken in the order of their observed ends, which
is an order of the graph (a dependency always ends before its dependent starts, a waited node before the
call returns). With no edit the replay gives back the observed times exactly. Only the joins are taken one by one
in Python (replay()): on a 362 MB torch_npu rank about one node in ten.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...ingest.table import NONE
from .build import LAUNCH, WAKE, Graph

_STARTERS = (LAUNCH, WAKE)  # the dependencies a rewire replaces


@dataclass
class Edit:
    """A change, as the graph sees it: new durations for some nodes, waits taken away, dependencies cut."""

    what: str  # the change in words ("DataLoader time hidden by workers")
    dur: dict = field(default_factory=dict)  # node -> new duration (ns)
    unblock: set = field(default_factory=set)  # blocking calls that no longer wait
    cut_from: set = field(default_factory=set)  # nodes whose dependents no longer wait for them (overlap)
    # node -> (new source, lag): what started it (its launch or wake-up) replaced by an earlier point (overlap)
    rewire: dict = field(default_factory=dict)

    def empty(self) -> bool:
        return not (self.dur or self.unblock or self.cut_from or self.rewire)


def replay(g: Graph, edit: Edit | None = None, until: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """New (start, end) per node; `until`: only the nodes that end by then observed are replayed (no node ending
    later is a dependency of one of those), the others keep their observed times.

    A node with one dependency and no wait starts as that dependency ends plus the gap it showed, so it moves as
    that one moves (its end also by what the edit adds to its duration): only the joins (several dependencies, a
    wait, dependencies the edit changes) are replayed one by one; every other node takes the shift of the join its
    chain of single dependencies starts from, plus what the edit added to the durations along that chain."""
    n = len(g)
    if edit is None or edit.empty() or n == 0:
        return g.start.copy(), g.end.copy()
    R = _order(g)
    edited = np.fromiter(edit.dur, np.int64, len(edit.dur))  # (tens of thousands of nodes: no set of them)
    others = np.fromiter(set(edit.unblock) | set(edit.cut_from) | set(edit.rewire), np.int64)
    # nodes that end before the first changed node ends cannot move (their inputs all ended earlier)
    lo = int(np.searchsorted(R["ends"], g.end[np.concatenate([edited, others])].min(), side="left"))
    hi = int(np.searchsorted(R["ends"], until, side="right")) if until is not None else n
    special = _special_deps(g, edit)
    is_join = R["join"].copy()
    is_join[np.fromiter(special, np.int64, len(special))] = True
    new = np.maximum(np.array(list(edit.dur.values())).astype(np.int64), 0)  # astype truncates as int() does
    grow = np.zeros(n, np.int64)  # what the edit adds to each node's duration
    grow[edited] = new - R["dur_a"][edited]
    root, acc = _chains(R, is_join, grow, special)
    ranked = R["order"][lo:hi]
    joins = ranked[is_join[ranked]]
    mine = is_join[edited]  # the edited joins' new durations (the other nodes' are in `grow`)
    s_new, e_new = _replay_joins(g, R, edit, special, (edited[mine], new[mine]), joins, root, acc)
    moved = np.zeros(n + 1, np.int64)  # per join: how far its end moved; the last: a chain with no join
    moved[joins] = np.array(e_new, np.int64) - g.end[joins]
    replayed = (R["pos"] >= lo) & (R["pos"] < hi)  # the others as observed
    shift = np.where(replayed, moved[root] + acc, 0)
    start, end = g.start + np.where(replayed, shift - grow, 0), g.end + shift
    start[joins], end[joins] = s_new, e_new
    return start, end


def _replay_joins(g: Graph, R: dict, edit: Edit, special: dict, new_dur: tuple, joins: np.ndarray, root: np.ndarray,
                  acc: np.ndarray) -> tuple[list, list]:
    """The joins in the order of their observed ends: each starts when its dependencies allow, each dependency's
    end read as the replay has it so far (its chain's join's shift, once that join is replayed before it). What
    does not depend on the order (each dependency's observed end, lag and chain growth; each join's own part) is
    laid out by _join_edges / _join_own first, so that the loop only adds the shifts of joins replayed before."""
    ptr, const, via = _join_edges(g, R, special, joins, root, acc)
    start0, own, waits, w_const, w_via = _join_own(g, R, edit, new_dur, joins, root, acc)
    delta = [0] * (len(g) + 1)  # per join once replayed: how far its end moved; delta[-1]: no join
    end0, out_s, out_e = g.end[joins].tolist(), [], []
    for i, node in enumerate(joins.tolist()):
        t = None
        for k in range(ptr[i], ptr[i + 1]):  # a dependency not replayed yet (later in the order) has via -1
            v = const[k] + delta[via[k]]
            if t is None or v > t:
                t = v
        s = start0[i] if t is None else t
        e = s + own[i]
        if waits[i]:  # a blocking call returns when the work it waited for ends, plus its tail
            e = max(e, w_const[i] + delta[w_via[i]])
        delta[node] = e - end0[i]
        out_s.append(s)
        out_e.append(e)
    return out_s, out_e


def _join_edges(g: Graph, R: dict, special: dict, joins: np.ndarray, root: np.ndarray,
                acc: np.ndarray) -> tuple[list, list, list]:
    """The joins' dependencies laid out in a row (CSR by join): per dependency d at lag l, what its end is read as
    in the replay: end[d] + l + acc[d] + the shift of join `via` (root[d]) where d comes before the join in the
    order, else end[d] + l as observed (via -1: the shift list's last entry, always 0). A node whose dependencies
    the edit changes takes its list from `special`."""
    ptr_a, src_a, lag_a = g.dep_ptr[joins], g.dep_src, g.dep_lag
    count = g.dep_ptr[joins + 1] - ptr_a
    if special:  # their dependencies appended after the graph's, each node's span pointing there
        extra = [dep for node in joins.tolist() if node in special for dep in special[node]]
        src_a = np.concatenate([src_a, np.array([d for d, _ in extra], np.int64)])
        lag_a = np.concatenate([lag_a, np.array([lag for _, lag in extra], np.int64)])
        at = np.flatnonzero(np.isin(joins, np.fromiter(special, np.int64, len(special))))
        count[at] = [len(special[int(node)]) for node in joins[at]]
        ptr_a = ptr_a.copy()
        ptr_a[at] = len(g.dep_src) + np.concatenate([[0], np.cumsum(count[at])[:-1]])
    ptr = np.concatenate([[0], np.cumsum(count)])
    edge = np.arange(ptr[-1]) - np.repeat(ptr[:-1] - ptr_a, count)
    src = src_a[edge]
    earlier = R["pos"][src] < np.repeat(R["pos"][joins], count)
    const = g.end[src] + lag_a[edge] + np.where(earlier, acc[src], 0)
    return ptr.tolist(), const.tolist(), np.where(earlier, root[src], NONE).tolist()


def _join_own(g: Graph, R: dict, edit: Edit, new_dur: tuple, joins: np.ndarray, root: np.ndarray,
              acc: np.ndarray) -> tuple[list, list, list, list, list]:
    """Per join: its observed start (where it has no dependency), its own part (its duration, new where edited; a
    blocking call's tail), whether it waits (a blocking call the edit does not unblock), and what it waited for
    read as the edges are (_join_edges): the waited node's end plus the tail, and the join whose shift it takes."""
    w = g.wait_on[joins]
    blocking = w != NONE
    tail = g.wait_tail[joins]
    new = np.full(len(g) + 1, -1, np.int64)  # per node: its new duration, -1 none (a new one is >= 0)
    new[new_dur[0]] = new_dur[1]  # new_dur: (the edited joins, their new durations)
    new = new[joins]
    edited = new >= 0
    dur = np.where(edited, new, R["dur_a"][joins])
    own = np.where(blocking, np.where(edited, np.minimum(np.maximum(tail, 0), new), R["base_a"][joins]), dur)
    unblocked = np.zeros(len(g) + 1, bool)
    unblocked[np.fromiter(edit.unblock, np.int64, len(edit.unblock))] = True
    waits = blocking & ~unblocked[joins]
    wn = np.maximum(w, 0)
    earlier = R["pos"][wn] < R["pos"][joins]
    w_const = g.end[wn] + tail + np.where(earlier, acc[wn], 0)
    w_via = np.where(earlier & blocking, root[wn], NONE)
    return g.start[joins].tolist(), own.tolist(), waits.tolist(), w_const.tolist(), w_via.tolist()


def _chains(R: dict, is_join: np.ndarray, grow: np.ndarray, special: dict) -> tuple[np.ndarray, np.ndarray]:
    """Per node: the join its chain of single dependencies starts from (itself for a join; -1 where the chain
    starts at none: a node with no dependency, or one whose dependency comes later in the order), and the growth
    of the chain's nodes after that join up to it, its own included (0 for a join): sums over the segments of
    _segments."""
    if special:  # the edit makes joins of its own: segments of its own
        seg, first, root = _segments(R, is_join)
    else:  # the graph's joins alone: the same segments for every edit
        seg, first, root = R.get("segments") or R.setdefault("segments", _segments(R, is_join))
    co = R["paths"]
    own = np.where(is_join, 0, grow)[co]
    total = np.cumsum(own)
    acc = np.empty(len(co), np.int64)
    acc[co] = total - (total[first] - own[first])[seg]
    return root, acc


def _segments(R: dict, is_join: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each chain is a path (_order made it so) laid out in a row of R["paths"], cut at every join: per place in
    that row its segment, each segment's first place, and per node its segment's join (NONE: none)."""
    co, head = R["paths"], R["head"]
    cut = is_join[co]
    cut[1:] |= head[1:] != head[:-1]
    cut[0] = True
    seg = np.cumsum(cut) - 1
    first = np.flatnonzero(cut)
    lead = co[first]
    root = np.empty(len(co), np.int64)
    root[co] = np.where(is_join[lead], lead, NONE)[seg]
    return seg, first, root


def _heads(link: np.ndarray, stop: np.ndarray) -> np.ndarray:
    """Per node: the first node of its chain (a stop, or a node with no earlier single dependency), by pointer
    jumping: each round doubles the length of chain followed."""
    head = np.where(stop | (link < 0), np.arange(len(link)), link)
    done = np.append(stop | (link < 0), True)
    todo = np.flatnonzero(~done[head])
    while len(todo):
        head[todo] = head[head[todo]]
        todo = todo[~done[head[todo]]]
    return head


def _order(g: Graph) -> dict:
    """Made once per graph: the nodes in the order of their observed ends (then starts) and each one's rank in it,
    the ends in that order, each node's observed duration and own part (a blocking call's tail), the joins (more
    than one dependency, or a wait) and each other node's single dependency where it comes earlier (else -1)."""
    cached = g.__dict__.get("_replay_order")
    if cached is None:
        n = len(g)
        order = np.lexsort((g.start, g.end))
        pos = np.empty(n, np.int64)
        pos[order] = np.arange(n)
        dur = g.end - g.start
        base = np.where(g.wait_on != NONE, np.clip(g.wait_tail, 0, dur), dur)
        deg = np.diff(g.dep_ptr)
        one = np.flatnonzero(deg == 1)
        link = np.full(n, NONE, np.int64)
        src = g.dep_src[g.dep_ptr[one]]
        link[one] = np.where(pos[src] < pos[one], src, NONE)
        join = (deg > 1) | (g.wait_on != NONE)
        # a node two chains go on from is their join point: its followers become joins, so chains are paths
        fork = np.bincount(link[~join & (link >= 0)], minlength=n) > 1
        join |= (link >= 0) & fork[np.maximum(link, 0)]
        head = _heads(link, join)
        # each chain in a row, in its order (a link always goes forward): by head, then rank
        paths = order[np.argsort(head[order], kind="stable")]
        cached = {"order": order, "pos": pos, "ends": g.end[order], "dur_a": dur, "base_a": base, "join": join,
                  "link": link, "paths": paths, "head": head[paths]}
        g.__dict__["_replay_order"] = cached
    return cached


def _special_deps(g: Graph, edit: Edit) -> dict:
    """node -> [(dependency, lag)] for the nodes whose dependencies the edit changes: those that waited for a cut
    node no longer do; a rewired node starts from its new source instead of its launch or wake-up."""
    if not edit.cut_from and not edit.rewire:
        return {}
    cut = edit.cut_from
    ptr, src = g.dep_ptr, g.dep_src
    hit = np.flatnonzero(np.isin(src, np.fromiter(cut, np.int64))) if cut else np.zeros(0, np.int64)
    nodes = set(np.searchsorted(ptr, hit, side="right").astype(np.int64) - 1) | set(edit.rewire)
    out = {}
    for node in map(int, nodes):
        moved = edit.rewire.get(node)
        deps = [(int(src[k]), int(g.dep_lag[k])) for k in range(int(ptr[node]), int(ptr[node + 1]))
                if int(src[k]) not in cut and (moved is None or int(g.dep_kind[k]) not in _STARTERS)]
        if moved is not None:
            deps.append((int(moved[0]), int(moved[1])))
        out[node] = deps
    return out
