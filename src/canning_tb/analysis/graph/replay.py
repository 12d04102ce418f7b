"""Re-play a window's dependency graph with an edit: the step times the change would give.

Each node starts when its dependencies allow (their new ends plus the lag build.py kept) and lasts its
new duration; a blocking call returns when what it waited for ends, plus its tail, unless the edit takes
the wait away (then it lasts its tail alone). Nodes are taken in the order of their observed ends, which
is an order of the graph (a dependency always ends before its dependent starts, a waited node before the
call returns). With no edit the replay gives back the observed times exactly.
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
    later is a dependency of one of those), the others keep their observed times."""
    n = len(g)
    start = g.start.copy()
    end = g.end.copy()
    if edit is None or edit.empty() or n == 0:
        return start, end
    dur = g.end - g.start
    for node, d in edit.dur.items():
        dur[node] = max(int(d), 0)
    waiting = g.wait_on != NONE
    # a blocking call's own part: what it took after the waited-for work ended (its tail)
    base = np.where(waiting, np.clip(g.wait_tail, 0, dur), dur)
    changed = set(edit.dur) | set(edit.unblock) | set(edit.cut_from) | set(edit.rewire)
    first = min(int(g.end[x]) for x in changed)
    order = np.lexsort((g.start, g.end))
    # nodes that end before the first changed node ends cannot move (their inputs all ended earlier)
    ends = g.end[order]
    order = order[np.searchsorted(ends, first, side="left"):np.searchsorted(ends, until, side="right")
                  if until is not None else len(order)]
    L = g.lists()
    ptr_l, src_l, lag_l, wait_on, tail = L["ptr"], L["src"], L["lag"], L["wait_on"], L["tail"]
    kind_l, rewire = L["kind"], edit.rewire
    base_l, dur_l = base.tolist(), dur.tolist()
    s_l, e_l = list(L["start"]), list(L["end"])
    cut, unblock = edit.cut_from, edit.unblock
    for node in order.tolist():
        lo, hi = ptr_l[node], ptr_l[node + 1]
        if hi > lo or node in rewire:
            t = None
            moved = rewire.get(node)
            for k in range(lo, hi):
                d = src_l[k]
                if d in cut or (moved is not None and kind_l[k] in _STARTERS):
                    continue
                v = e_l[d] + lag_l[k]
                if t is None or v > t:
                    t = v
            if moved is not None:
                v = e_l[moved[0]] + moved[1]
                t = v if t is None or v > t else t
            s = s_l[node] if t is None else t
        else:
            s = s_l[node]
        w = wait_on[node]
        if w != NONE and node not in unblock:
            e = max(s + base_l[node], e_l[w] + tail[node])
        elif w != NONE:
            e = s + base_l[node]
        else:
            e = s + dur_l[node]
        s_l[node], e_l[node] = s, e
    return np.array(s_l, np.int64), np.array(e_l, np.int64)
