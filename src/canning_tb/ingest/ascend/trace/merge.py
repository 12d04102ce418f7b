"""A big trace_view.json read by two processes: the array's elements cut in two byte ranges, this
process reads the first and a forked child the second (each a block at a time), and the child's
columns, in its own local ids, are joined to ours with its ids mapped (`absorb`). Anything
unexpected (no fork, a child that fails) reads the second range here instead."""
from __future__ import annotations

import os

import numpy as np

from canning_tb.ingest import forked
from canning_tb.ingest.ascend.csv import arrow as csv_arrow

from . import decode as dec
from . import scan as trace_scan
from .parse import TEXT_ARGS, _Parse

PARALLEL_BYTES = 32 << 20  # files this big are read in two processes
_WORKERS_ENV = "CANNING_READ_WORKERS"  # 1: read in this process only (the digest at the source sets it)


def workers() -> int:
    try:
        return max(1, int(os.environ.get(_WORKERS_ENV, "2")))
    except ValueError:
        return 2


def _can_fork() -> bool:
    return forked.can_fork() and workers() > 1


# What a byte of the files this process reads before its part of the trace (read._BESIDE_TRACE: the CSVs and
# JSONs, 29 MB of the 362 MB benchmark rank, 83 MB of the 1 GB one) weighs against a byte of trace, so that both
# processes finish together; by which parts are on (the trace scanner; pyarrow.csv for the CSVs, or the csv module
# with CANNING_CSV_ARROW=0). Measured on the 362 MB rank with the CSVs' former C number cells, seconds per byte in
# each process: with both, 26 ns a byte of CSVs and JSONs and 9 ns a byte of trace (then 7/20 here); with the
# scanner alone 46 ns (5/20; cold runs of the 1 GB rank: 11.7 / 12.3 s at 5/20, 12.7 / 14.4 s at 4/20, 13.0 / 14.4
# s at 7/20). Without the scanner a byte of trace costs 1.6x more (msgspec per event; 8/20 was best at 362 MB
# without either). The files beside the trace of that rank (level2 x 128) then took 0.37-0.39 s of CPU with the C
# cells, and take 0.22-0.23 s through pyarrow.csv and 0.94-0.99 s through the csv module (2026-12-05): the costs
# below are the C cells' (2.9 with the scanner, 1.1 without) times 0.6 and 2.55.
_CSV_COST = {(True, True): 1.7, (True, False): 7.4, (False, True): 0.66, (False, False): 2.8}


def _ours(size: int, besides: int) -> int:
    """Twentieths of the array read here, the rest by the child, when this process also reads `besides` bytes."""
    cost = _CSV_COST[trace_scan.enabled(), csv_arrow.enabled()]
    share = 0.5 - cost * besides / (2 * max(size, 1))
    return min(10, max(1, round(20 * share)))


def _two_spans(plan, besides: int) -> list[tuple[int, int]]:
    cuts = plan.split(20)
    if len(cuts) < 20:
        return [(cuts[0][0], cuts[-1][1])]
    ours = _ours(plan.end - plan.start, besides)
    return [(cuts[0][0], cuts[ours - 1][1]), (cuts[ours][0], cuts[-1][1])]


def _read_span(plan, parse, span, on_utf8) -> None:
    for got in dec.iter_pieces(plan, span, on_utf8, trace_scan.decode):
        parse.piece(got)


class Ranges:
    """The read of a planned file's elements, begun: a big file's second part is already being read by a
    forked child (so this process may read other files meanwhile); `read` reads the first part here and
    joins the child's columns, in file order."""

    def __init__(self, plan, besides: int = 0):
        self.plan = plan
        size = plan.end - plan.start
        self.spans = _two_spans(plan, besides) if size >= PARALLEL_BYTES and _can_fork() \
            else [(plan.start + 1, plan.end - 1)]
        self.child = _start_child(plan, self.spans[1]) if len(self.spans) > 1 else None

    def read(self, parse, on_utf8) -> None:
        try:
            _read_span(self.plan, parse, self.spans[0], on_utf8)
        except BaseException:
            self.close()
            raise
        if self.child is None:
            return
        theirs = self.child.result()
        self.child = None
        if theirs is None:
            _read_span(self.plan, parse, self.spans[1], on_utf8)
        else:
            absorb(parse, theirs)

    def close(self) -> None:
        """Stop waiting for the child (the read was abandoned)."""
        if self.child is not None:
            child, self.child = self.child, None
            child.kill()


def _read_part(plan, span) -> _Parse:
    parse = _Parse()

    def on_utf8():
        parse.utf8 += 1
    _read_span(plan, parse, span, on_utf8)
    return parse


def _start_child(plan, span) -> forked.Forked:
    return forked.Forked(_read_part, plan, span)


def _remap(ours: dict, theirs: dict) -> np.ndarray:
    """Their local id -> ours (the extra last slot maps their NONE to NONE)."""
    return np.array([ours[v] for v in theirs.values_in_order()] + [-1], np.int64)


def absorb(parse, other) -> None:
    """Append another reader's columns (the range after ours) to parse, its ids mapped to parse's."""
    maps = {k: _remap(parse.ids[k], other.ids[k]) for k in parse.ids}
    combos = np.array([parse.combos[key] for key in other.combos], np.int32)  # their keys in their id order
    for part in other.parts:
        part["combo"] = combos[part["combo"]]
        parse.parts.append(part)
    for part in other.sparse:
        fixed = {}
        for attr, (rows, vals) in part.items():
            space = TEXT_ARGS.get(attr)
            fixed[attr] = (rows + parse.n, maps[space][vals].astype(np.int32) if space else vals)
        parse.sparse.append(fixed)
    for f in other.flows:
        f["id"] = maps["flow"][f["id"]].astype(np.int32)
        f["combo"] = combos[f["combo"]]
        f["seq"] = f["seq"] + parse.seq
        parse.flows.append(f)
    parse.counters.absorb(other.counters, maps["pid"], parse.seq)
    for pid, name in other.pnames.items():
        parse.pnames[int(maps["pid"][pid])] = name
    for (pid, tid), name in other.tnames.items():
        parse.tnames[(int(maps["pid"][pid]), int(maps["tid"][tid]))] = name
    parse.n += other.n
    parse.seq += other.seq
    parse.bad += other.bad
    parse.utf8 += other.utf8
