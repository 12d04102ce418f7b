"""A big trace_view.json read by two processes that share its elements as they go: the array is cut
in CHUNKS byte ranges of whole elements; a forked child takes chunks from the end, this process takes
them from the front once it has read the rank's other files, each claiming the next under one lock,
until they meet; so the two finish together however long the other files take. The child's chunks
(each in its own reader-local ids, joined in file order) are appended to ours with their ids mapped
(`absorb`). Anything unexpected (no fork, a child that fails) reads the child's chunks here instead."""
from __future__ import annotations

import multiprocessing as mp
import os
import threading

import numpy as np

from . import trace_decode as dec
from ..kineto.parallel import _finish_child  # the same child protocol: one answer, or None if it died
from .trace_parse import TEXT_ARGS, _Parse

PARALLEL_BYTES = 32 << 20  # files this big are read in two processes
CHUNKS = 32  # the grain of the sharing: the later of the two waits at most about one chunk for the other
LOCK_WAIT_S = 10.0  # the claims' lock is held for microseconds: a longer wait means its holder died
_WORKERS_ENV = "CANNING_READ_WORKERS"  # 1: read in this process only (the digest at the source sets it)


def workers() -> int:
    try:
        return max(1, int(os.environ.get(_WORKERS_ENV, "2")))
    except ValueError:
        return 2


def _can_fork() -> bool:
    """Fork only where it is safe: a POSIX process with no other thread, not a daemonic worker."""
    return ("fork" in mp.get_all_start_methods() and threading.active_count() == 1
            and not mp.current_process().daemon and (os.cpu_count() or 1) > 1 and workers() > 1)


def _read_span(plan, parse, span, on_utf8) -> None:
    for got in dec.iter_pieces(plan, span, on_utf8):
        parse.piece(got)


class Claims:
    """Which chunks are taken: the front ones [0, front) by this process, the back ones [back, count) by
    the child; shared memory under one lock, so each chunk is read once and the two parts stay contiguous."""

    def __init__(self, count: int):
        ctx = mp.get_context("fork")
        self.ends = ctx.RawArray("q", [0, count])  # raw: read without the lock once the child is gone
        self.lock = ctx.Lock()

    def front(self) -> int | None:
        return self._take(0, 1)

    def back(self) -> int | None:
        return self._take(1, -1)

    def _take(self, end: int, step: int) -> int | None:
        """The next chunk from one end; None once the ends have met, or when the lock cannot be had (the
        other process died holding it: nothing more is claimed from here)."""
        if not self.lock.acquire(timeout=LOCK_WAIT_S):
            return None
        try:
            front, back = self.ends[0], self.ends[1]
            if front >= back:
                return None
            self.ends[end] += step
            return front if step > 0 else back - 1
        finally:
            self.lock.release()

    def unread_from(self) -> int:
        """The first chunk this process has not read (read once the child is gone: no lock needed)."""
        return self.ends[0]


class Ranges:
    """The read of a planned file's elements, begun: a big file's chunks are already being taken from the
    end by a forked child (so this process may read other files meanwhile); `read` takes the rest from the
    front here and joins the child's columns, in file order."""

    def __init__(self, plan):
        self.plan = plan
        size = plan.end - plan.start
        whole = [(plan.start + 1, plan.end - 1)]
        self.cuts = plan.split(CHUNKS) if size >= PARALLEL_BYTES and _can_fork() else whole
        self.claims = Claims(len(self.cuts)) if len(self.cuts) > 1 else None
        self.child = _start_child(plan, self.cuts, self.claims) if self.claims else None

    def read(self, parse, on_utf8) -> None:
        if self.child is None:
            _read_span(self.plan, parse, (self.cuts[0][0], self.cuts[-1][1]), on_utf8)
            return
        try:
            while (k := self.claims.front()) is not None:
                _read_span(self.plan, parse, self.cuts[k], on_utf8)
        except BaseException:
            self.close()
            raise
        theirs = _finish_child(self.child)
        self.child = None
        if theirs is None:  # the child failed: every chunk not read here yet, its own among them, is read here
            first = self.claims.unread_from()
            if first < len(self.cuts):
                _read_span(self.plan, parse, (self.cuts[first][0], self.cuts[-1][1]), on_utf8)
        else:
            absorb(parse, theirs)

    def close(self) -> None:
        """Stop waiting for the child (the read was abandoned)."""
        if self.child is not None:
            child, self.child = self.child, None
            child[0].kill()
            _finish_child(child)


def read_ranges(plan, parse, on_utf8) -> None:
    """Feed every element of the planned file to parse, in file order."""
    Ranges(plan).read(parse, on_utf8)


def _child(conn, plan, cuts, claims) -> None:
    try:
        taken = []  # one reader per chunk, last chunk first
        while (k := claims.back()) is not None:
            parse = _Parse()

            def on_utf8(parse=parse):
                parse.utf8 += 1
            _read_span(plan, parse, cuts[k], on_utf8)
            taken.append(parse)
        joined = taken.pop() if taken else _Parse()
        while taken:
            absorb(joined, taken.pop())
        conn.send(joined)
    except BaseException:  # the parent reads the chunks itself and reports what is wrong there
        conn.send(None)
    finally:
        conn.close()


def _start_child(plan, cuts, claims):
    ours, theirs = mp.get_context("fork").Pipe(duplex=False)
    proc = mp.get_context("fork").Process(target=_child, args=(theirs, plan, cuts, claims), daemon=True)
    proc.start()
    theirs.close()
    return proc, ours


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
