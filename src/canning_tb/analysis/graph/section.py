"""The digest's critical path section, and the window's graph kept for the rules' replays."""
from __future__ import annotations

import numpy as np

from .. import digest_pb2 as pb
from ..context import Context
from ..steps import untraced_waits
from .build import CATS, Graph, build_graph
from .critical import StepSpan, critical_path, mark_untraced, step_spans

PATH_SEGMENTS = 64  # the longest pieces of each step's path kept in the digest (the timeline draws them)


class WindowGraph:
    """The graph of a window and its steps' spans, built once (the section and the rules share it)."""

    def __init__(self, ctx: Context, digest: pb.Digest):
        self.table = ctx.table
        self.graph: Graph = build_graph(ctx.table, ctx)
        self.spans: list[StepSpan] = step_spans(self.graph, digest.steps)
        self.kept = set(int(x) for x in digest.average_steps)


def critical_path_section(wg: WindowGraph, ctx: Context, d: pb.Digest) -> None:
    g, strings, ev = wg.graph, ctx.table.strings, ctx.table.events
    waits = untraced_waits(ctx.table)
    for span in wg.spans:
        path = mark_untraced(critical_path(g, span), waits)
        sp = d.critical_path.add(number=path.number, start_ns=path.start, dur_ns=path.end - path.start,
                                 segments_total=len(path.segments))
        for cat, ns in path.by_cat.items():
            sp.by_category[cat] = int(ns)
        segs = path.segments
        length = np.fromiter((b - a for _, a, b, _ in segs), np.int64, len(segs))
        # the longest, ties in path order (a stable sort, as sorted() was), then in time order
        longest = [segs[i] for i in np.sort(np.argsort(-length, kind="stable")[:PATH_SEGMENTS])]
        for node, a, b, cat in longest:
            row = int(g.row[node]) if node >= 0 else -1
            sp.segments.add(lane=g.lanes[int(g.lane[node])] if node >= 0 else "", category=CATS[cat], ts_ns=int(a),
                            dur_ns=int(b - a), name=(strings[int(ev["name"][row])] or "") if row >= 0 else "")
