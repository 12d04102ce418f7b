"""The peer rank of each point-to-point call (analysis/communication/peers.py), by hand (issue 46, mutation round).

A hand-made table: c10d::send / c10d::recv_ operators with their "Concrete Inputs" (tensors, process group, peer,
tag) in the args column, and the backend's ranges (gloo:send / gloo:recv) that start inside them on the same
thread. Each expected peer is read off the table in the comment beside its range.
"""
from __future__ import annotations

import json

import numpy as np

from canning_tb.analysis.communication.peers import p2p_peers
from canning_tb.analysis.context import Context
from canning_tb.ingest.table import EVENT_COLUMNS, ColumnBuilder, EventTable, Kind, sort_by_time


def _args(*concrete) -> str:
    return json.dumps({"concrete": list(concrete)})


# (name, ts, dur, pid, tid, args text or None): the operators
OPS = [
    ("c10d::send", 100, 50, 1, 1, _args("", "", "3", "0")),  # peer 3, 100-150; its args are string id 0
    ("c10d::recv_", 200, 10, 1, 1, _args("", "", "0", "7")),  # peer 0, 200-210
    ("c10d::send", 300, 20, 1, 1, _args("", "")),  # no peer given: -1
    ("c10d::send", 400, 20, 1, 1, _args("", "", "x", "")),  # not a number: -1
    ("c10d::send", 500, 20, 1, 1, _args("", "", None, "")),  # null: -1
    ("c10d::send", 600, 20, 1, 1, None),  # no args at all: -1
    ("c10d::recv_any_source_", 700, 20, 1, 1, _args("", "", "5")),  # peer 5, 700-720 (three inputs: the peer is the last)
    ("c10d::send_x", 800, 100, 1, 1, _args("", "", "9", "")),  # not a p2p operator
    ("xc10d::send", 800, 100, 1, 1, _args("", "", "9", "")),  # nor this
    ("c10d::send", 105, 10, 2, 1, _args("", "", "6", "")),  # pid 2, thread 1: peer 6, 105-115
]
# (name, ts, dur, pid, tid, is p2p, expected peer): the backend ranges asked about
CALLS = [
    ("gloo:send", 100, 5, 1, 1, True, 3),  # starts with the operator
    ("gloo:send", 150, 5, 1, 1, True, 3),  # at the operator's end: still inside
    ("gloo:send", 151, 5, 1, 1, True, -1),  # after it ended, before the next one
    ("gloo:recv", 205, 100, 1, 1, True, 0),  # a receive outliving its operator: peer 0
    ("gloo:send", 310, 5, 1, 1, True, -1),
    ("gloo:send", 410, 5, 1, 1, True, -1),
    ("gloo:send", 510, 5, 1, 1, True, -1),
    ("gloo:send", 610, 5, 1, 1, True, -1),
    ("gloo:recv", 705, 5, 1, 1, True, 5),
    ("gloo:send", 810, 5, 1, 1, True, -1),  # the last p2p operator (700-720) ended; the decoys are none
    ("gloo:send", 50, 5, 1, 1, True, -1),  # before any operator of its thread
    ("gloo:send", 110, 5, 1, 2, True, -1),  # thread 2 of pid 1: no operator there
    ("gloo:send", 110, 5, 2, 1, True, 6),  # pid 2's thread 1: its own operator, not pid 1's
    ("gloo:all_reduce", 120, 5, 1, 1, False, -1),  # not point-to-point: not asked
]


def _table(ops, calls) -> EventTable:
    """Args texts interned first (the first is string id 0), then the names; events sorted by start."""
    t = EventTable()
    args = [t.strings.id(a) for *_, a in ops]
    cols = ColumnBuilder(EVENT_COLUMNS)
    for (name, ts, dur, pid, tid, _), a in zip(ops, args):
        cols.add(name=t.strings.id(name), kind=int(Kind.CPU_OP), ts=ts, dur=dur, pid=pid, tid=tid, args=a)
    for name, ts, dur, pid, tid, *_ in calls:
        cols.add(name=t.strings.id(name), kind=int(Kind.USER_ANNOTATION), ts=ts, dur=dur, pid=pid, tid=tid)
    t.events = sort_by_time(cols.freeze())
    t.check()
    return t


def _rows(t: EventTable, calls) -> np.ndarray:
    ev = t.events
    found = []
    for name, ts, _, pid, tid, *_ in calls:
        (i,) = np.flatnonzero((ev["name"] == t.strings.find(name)) & (ev["ts"] == ts) & (ev["pid"] == pid)
                              & (ev["tid"] == tid))
        found.append(i)
    return np.array(found, np.int64)


def test_each_calls_peer_is_that_of_the_p2p_operator_it_started_in():
    t = _table(OPS, CALLS)
    assert t.strings[0] == OPS[0][5]  # the peer 3 case reads string id 0
    rows = _rows(t, CALLS)
    p2p = np.array([c[5] for c in CALLS])
    out = p2p_peers(Context(t), rows, p2p)
    assert out.dtype == np.int64
    assert out.tolist() == [c[6] for c in CALLS]


def test_no_p2p_call_or_no_p2p_operator_gives_no_peer():
    t = _table(OPS, CALLS)
    rows = _rows(t, CALLS)
    assert p2p_peers(Context(t), rows, np.zeros(len(rows), bool)).tolist() == [-1] * len(rows)
    bare = _table([op for op in OPS if op[0] in ("c10d::send_x", "xc10d::send")], CALLS)
    assert p2p_peers(Context(bare), _rows(bare, CALLS), np.ones(len(CALLS), bool)).tolist() == [-1] * len(CALLS)
