"""ingest/ascend/merge.py under mutation: kernel_details rows matched to trace_view device events (exact, then
the nearest within 2 µs), the links they take, and the events' one sort; hand-made columns, every answer
worked out by hand in the tables below."""
from __future__ import annotations

import numpy as np

from canning_tb.ingest.ascend.csv.tables import KernelRows
from canning_tb.ingest.ascend.merge import _exact, _run_rank, fill_events, fill_memory, merge_device
from canning_tb.ingest.ascend.trace.kinds import TraceData
from canning_tb.ingest.table import EVENT_COLUMNS, MEMORY_COLUMNS, NONE, EventTable, Kind

N = NONE
K, C = int(Kind.KERNEL), int(Kind.COMM_KERNEL)
FIELDS = ("ts", "name", "kind", "pid", "tid", "external_id", "correlation", "stream", "device", "bytes", "group")


def _cols(rows) -> dict[str, np.ndarray]:
    """Event columns from rows of FIELDS (every other column NONE, ts / dur / kind of their dtype)."""
    n = len(rows)
    out = {k: np.zeros(n, t) if k in ("dur", "kind") else np.full(n, NONE, t) for k, t in EVENT_COLUMNS.items()}
    for i, f in enumerate(FIELDS):
        out[f] = np.array([r[i] for r in rows], EVENT_COLUMNS[f])
    return out


# trace_view events: (ts, name, kind, pid, tid, ext, corr, stream, device, bytes, group), device?
TRACE = [
    ((1000, 1, K, 40, 41, 1, 2, 3, 0, 1, 1), False),  # t0: a host event of k0's key: never a candidate
    ((1000, 1, K, 50, 60, 7, 70, 3, 0, 99, 5), True),  # t1
    ((1000, 1, K, 51, 61, N, 71, N, 1, N, N), True),  # t2
    ((5000, 2, C, 52, 62, 8, 72, 4, 0, 4096, 9), True),  # t3
    ((9000, 3, K, 53, 63, N, N, 5, 0, N, N), True),  # t4: no row: stays
    ((30000, 5, C, 54, 64, N, N, 14, 0, N, N), True),  # t5
    ((3400, 1, K, 55, 65, N, N, N, 0, N, N), True),  # t6
    ((42000, 6, K, 56, 66, N, N, N, 0, N, N), True),  # t7: 2,000 ns after k6: inside
    ((37999, 6, K, 57, 67, N, N, N, 0, N, N), True),  # t8: 2,001 ns before k6: outside
    ((47999, 7, K, 58, 68, N, N, N, 0, N, N), True),  # t9: 2,001 ns before k7: outside
    ((58000, 8, K, 59, 69, N, N, N, 0, N, N), True),  # t10: 2,000 ns before k8: inside
    ((71000, 9, K, 60, 70, N, N, N, 0, N, N), True),  # t11: 1,000 after k9
    ((69000, 9, K, 61, 71, N, N, N, 0, N, N), True),  # t12: 1,000 before k9: a tie, t11 comes first
    ((81500, 10, K, 62, 72, N, N, N, 0, N, N), True),  # t13: 1,500 from k10
    ((80300, 10, K, 63, 73, N, N, N, 0, N, N), True),  # t14: 300 from k10: nearest
    ((90150, 11, K, 64, 74, N, N, N, 0, N, N), True),  # t15: 150 from k11, 50 from k12
    ((91900, 11, K, 65, 75, N, N, N, 0, N, N), True),  # t16: 1,800 from k12
]
# kernel_details rows, and what each is after the merge (the trace event it matched, or None)
KERNELS = [
    ((1000, 1, K, N, N, 100, 200, 10, N, N, N), 1),  # k0: exact, the first of the key's events
    ((1000, 1, K, N, N, 101, 201, N, 2, 5, 6), 2),  # k1: exact, the second
    ((5001, 2, C, N, N, N, N, N, N, N, N), 3),  # k2: 1 ns off: nearest
    ((20000, 4, K, N, N, N, N, 12, N, N, N), None),  # k3: no event of its name: loose
    ((30000, 5, C, N, N, 9, 9, 13, 1, 64, 3), 5),  # k4: exact, a comm row whose event has no bytes/group
    ((1500, 1, K, N, N, N, N, N, N, N, N), 6),  # k5: t1 (500 away) is taken by k0: t6 (1,900 away)
    ((40000, 6, K, N, N, N, N, N, N, N, N), 7),  # k6
    ((50000, 7, K, N, N, N, N, 15, N, N, N), None),  # k7: only t9, 2,001 away: loose
    ((60000, 8, K, N, N, N, N, N, N, N, N), 10),  # k8
    ((70000, 9, K, N, N, N, N, N, N, N, N), 11),  # k9
    ((80000, 10, K, N, N, N, N, N, N, N, N), 14),  # k10
    ((90000, 11, K, N, N, N, N, N, N, N, N), 15),  # k11: first in file order, takes t15
    ((90100, 11, K, N, N, N, N, N, N, N, N), 16),  # k12: t15 taken: t16
]
HARDWARE_PID = 777


def _sources():
    trace = TraceData(events=_cols([r for r, _ in TRACE]), device_mask=np.array([d for _, d in TRACE]),
                      hardware_pid=HARDWARE_PID, metrics={"flops": np.arange(len(TRACE), dtype=float)})
    kernels = KernelRows(_cols([r for r, _ in KERNELS]), {"aic": np.arange(len(KERNELS), dtype=float) + 0.5})
    return trace, kernels


def test_run_rank():
    """Order by (name, start, tiebreak) and each item's rank within its (name, start):
    items (name, ts, tiebreak) = (1,5,0) (1,5,1) (1,3,2) (2,5,3) -> order 2, 0, 1, 3; ranks 0, 0, 1, 0."""
    order, rank = _run_rank(np.array([0, 1, 2, 3]), np.array([5, 5, 3, 5]), np.array([1, 1, 1, 2]))
    assert order.tolist() == [2, 0, 1, 3] and rank.tolist() == [0, 0, 1, 0]
    order, rank = _run_rank(np.array([9, 4, 7]), np.array([5, 5, 5]), np.array([1, 1, 1]))
    assert order.tolist() == [1, 2, 0] and rank.tolist() == [0, 1, 2]  # tiebreak 4 < 7 < 9
    # (name, ts) = (1, 3) (2, 5) (2, 5): the third shares the second's key, not the first's name: rank 1
    order, rank = _run_rank(np.array([0, 1, 2]), np.array([3, 5, 5]), np.array([1, 2, 2]))
    assert order.tolist() == [0, 1, 2] and rank.tolist() == [0, 0, 1]
    order, rank = _run_rank(np.zeros(0, int), np.zeros(0, int), np.zeros(0, int))
    assert order.tolist() == [] and rank.tolist() == []


def _exact_of(kernels, trace, t_idx):
    k_ts, k_name = (np.array(x, np.int64) for x in zip(*kernels))
    t_ts, t_name = (np.array(x, np.int64) for x in zip(*trace))
    return _exact(k_ts, k_name, t_ts, t_name, np.array(t_idx, np.int64)).tolist()


def test_exact_pairs_the_kth_row_with_the_kth_event():
    """Rows (ts, name) k0 (10,1) k1 (10,1) k2 (20,1) k3 (10,2) k4 (30,3); events at trace rows
    6 (5,1) 0 (10,1) 1 (10,1) 2 (10,1) 3 (20,2) 4 (10,2) 5 (30,4). Sorted (name, ts, rank, row before
    event): e6 | k0 e0 k1 e1 e2 | k2 | k3 e4 | e3 | k4 | e5: k0-e0, k1-e1 (both rank 1), k3-e4; k2 has no event
    of its key, k4's neighbour e5 has the same start and rank but another name. A trace event comes first."""
    got = _exact_of([(10, 1), (10, 1), (20, 1), (10, 2), (30, 3)],
                    [(5, 1), (10, 1), (10, 1), (10, 1), (20, 2), (10, 2), (30, 4)], [6, 0, 1, 2, 3, 4, 5])
    assert got == [0, 1, -1, 4, -1]


def test_exact_needs_the_same_start():
    """k0 (50,1) k1 (10,2); events (60,1) (50,2): sorted k0 e0 k1 e1, no pair of the same start: none."""
    assert _exact_of([(50, 1), (10, 2)], [(60, 1), (50, 2)], [0, 1]) == [-1, -1]


def test_exact_before_near_whatever_the_file_order():
    """Row r0 (1500, name 1) comes before r1 (1000, name 1) in the file; events e0 (1000) and e1 (3400).
    r1 takes e0 exactly first; then r0, 500 from the taken e0, takes e1 (1,900 away). In file order
    alone r0 would take e0 and leave r1 nothing within 2 µs (e1 is 2,400 from it)."""
    trace = TraceData(events=_cols([(1000, 1, K, 5, 5, N, N, N, 0, N, N), (3400, 1, K, 6, 6, N, N, N, 0, N, N)]),
                      device_mask=np.ones(2, bool), hardware_pid=9)
    kernels = KernelRows(_cols([(1500, 1, K, N, N, N, N, N, N, N, N), (1000, 1, K, N, N, N, N, N, N, N, N)]), {})
    (_, _, keep), (k, _, _) = merge_device(trace, kernels)
    assert k["pid"].tolist() == [6, 5] and keep.tolist() == [False, False]


def test_a_row_matched_exactly_is_not_searched_again():
    """Row (1000, name 1) matches event 0 (1000) exactly; event 1 (1500), free and 500 away, stays an event
    of its own: the row is not moved to it, event 0 is dropped, event 1 kept."""
    trace = TraceData(events=_cols([(1000, 1, K, 5, 5, N, N, N, 0, N, N), (1500, 1, K, 6, 6, N, N, N, 0, N, N)]),
                      device_mask=np.ones(2, bool), hardware_pid=9)
    kernels = KernelRows(_cols([(1000, 1, K, N, N, N, N, N, N, N, N)]), {})
    (_, _, keep), (k, _, _) = merge_device(trace, kernels)
    assert k["pid"].tolist() == [5] and keep.tolist() == [False, True]


def test_merge_then_fill():
    """The merge's sources into fill_events: of the 17 trace events, the 6 no row matched (t0, t4, t8, t9,
    t12, t13) stay, with the 13 rows: 19 events; by start the first are t0 (1000, host), k0 (1000, pid 50),
    k1 (1000, pid 51), k5 (1500, pid 55); the trace's flops land on the kept events only."""
    trace, kernels = _sources()
    t = EventTable()
    fill_events(t, merge_device(trace, kernels))
    assert len(t.events["ts"]) == 19
    assert t.events["ts"][:4].tolist() == [1000, 1000, 1000, 1500]
    assert t.events["pid"][:4].tolist() == [40, 50, 51, 55]
    flops = t.metrics["flops"]
    assert sorted(flops[~np.isnan(flops)].tolist()) == [0.0, 4.0, 8.0, 9.0, 12.0, 13.0]
    assert np.count_nonzero(~np.isnan(t.metrics["aic"])) == 13


def test_near_looks_only_at_its_own_name():
    """Row (160, name 1): its name's event at 100 (60 away), name 2's at 150 (10 away): its own. Row
    (1000, name 3) with name 3's only event 2,001 after it: none (the window is [ts - 2000, ts + 2000]).
    Row (500, name 0): no event of name 0 (the others' events lie after the name's place): none."""
    trace = TraceData(events=_cols([(100, 1, K, 1, 1, N, N, N, 0, N, N), (150, 2, K, 2, 2, N, N, N, 0, N, N),
                                    (3001, 3, K, 3, 3, N, N, N, 0, N, N)]),
                      device_mask=np.ones(3, bool), hardware_pid=9)
    kernels = KernelRows(_cols([(160, 1, K, N, N, N, N, N, N, N, N), (1000, 3, K, N, N, N, N, 7, N, N, N),
                                (500, 0, K, N, N, N, N, 8, N, N, N)]), {})
    (_, _, keep), (k, _, _) = merge_device(trace, kernels)
    assert k["pid"].tolist() == [1, 9, 9] and k["tid"].tolist() == [1, 7, 8]
    assert keep.tolist() == [False, True, True]


def test_merge_device_matches_and_links():
    """Each kernel row's match (KERNELS' second column), the trace events kept (those no row matched) and
    the links each row took (worked out row by row in the comments)."""
    trace, kernels = _sources()
    before = {c: v.copy() for c, v in kernels.events.items()}
    (t, tm, keep), (k, km, rows) = merge_device(trace, kernels)
    assert t is trace.events and tm is trace.metrics and km is kernels.metrics and rows is None
    matched = {m for _, m in KERNELS if m is not None}
    assert keep.tolist() == [i not in matched for i in range(len(TRACE))]
    for c, v in before.items():  # the rows are copied, never changed in place
        assert kernels.events[c].tolist() == v.tolist(), c
    # pid / tid: the matched event's; loose rows: the hardware pid and their stream
    want_pid = [TRACE[m][0][3] if m is not None else HARDWARE_PID for _, m in KERNELS]
    want_tid = [TRACE[m][0][4] if m is not None else r[7] for r, m in KERNELS]
    assert k["pid"].tolist() == want_pid
    assert k["tid"].tolist() == want_tid
    # external id / correlation: the event's unless NONE (k1 keeps its 101; k4 keeps 9, 9)
    assert k["external_id"][:6].tolist() == [7, 101, 8, N, 9, N]
    assert k["correlation"][:6].tolist() == [70, 71, 72, N, 9, N]
    # stream: the row's own unless NONE and the event has one (k0 keeps 10, k1: both NONE, k2: 4, k4 keeps 13)
    assert k["stream"][:6].tolist() == [10, N, 4, 12, 13, N]
    # device: the row's own unless NONE (k1 keeps 2; k0, k2, k5 take 0; k3 loose stays NONE)
    assert k["device"][:6].tolist() == [0, 2, 0, N, 1, 0]
    # bytes / group: only comm rows take them, only when the event has them (k2 takes 4096 / 9; k4 keeps
    # 64 / 3; k0, a compute row, does not take t1's 99 / 5; k1 keeps its 5 / 6)
    assert k["bytes"][:6].tolist() == [N, 5, 4096, N, 64, N]
    assert k["group"][:6].tolist() == [N, 6, 9, N, 3, N]


def test_merge_device_without_trace_or_kernels():
    """No trace: the kernel rows alone, their tid their stream (the rows' own tid column untouched);
    no kernel rows (None or empty): the trace alone, as it is."""
    trace, kernels = _sources()
    [(k, km, rows)] = merge_device(None, kernels)
    assert rows is None and km is kernels.metrics
    assert k["tid"].tolist() == [r[7] for r, _ in KERNELS]
    assert kernels.events["tid"].tolist() == [N] * len(KERNELS)
    assert k["ts"] is kernels.events["ts"]
    assert merge_device(trace, None) == [(trace.events, trace.metrics, None)]
    empty = KernelRows(_cols([]), {})
    [(t, tm, rows)] = merge_device(trace, empty)
    assert t is trace.events and tm is trace.metrics and rows is None


def test_merge_device_with_no_device_event():
    """A trace with host events only: every kernel row is loose (pid 777, tid its stream), every event kept."""
    trace, kernels = _sources()
    trace.device_mask = np.zeros(len(TRACE), bool)
    (t, _, keep), (k, _, _) = merge_device(trace, kernels)
    assert keep.tolist() == [True] * len(TRACE)
    assert k["pid"].tolist() == [HARDWARE_PID] * len(KERNELS)
    assert k["tid"].tolist() == [r[7] for r, _ in KERNELS]


def test_near_match_skips_events_of_other_names():
    """A row 10 ns from an event of another name, 1,500 ns from one of its own: its own. Names sort as
    ints: name 2 between 1 and 10 (as strings '10' < '2')."""
    trace = TraceData(events=_cols([(100, 1, K, 1, 1, N, N, N, 0, N, N), (1510, 2, K, 2, 2, N, N, N, 0, N, N),
                                    (100, 10, K, 3, 3, N, N, N, 0, N, N), (3000, 2, K, 4, 4, N, N, N, 0, N, N)]),
                      device_mask=np.ones(4, bool), hardware_pid=9)
    kernels = KernelRows(_cols([(110, 2, K, N, N, N, N, N, N, N, N)]), {})
    (_, _, keep), (k, _, _) = merge_device(trace, kernels)
    assert k["pid"].tolist() == [2] and keep.tolist() == [True, False, True, True]


def _plain(names, ts):
    rows = [(t, n, K, N, N, N, N, N, N, N, N) for t, n in zip(ts, names)]
    return _cols(rows)


def test_fill_events_order_rows_and_metrics():
    """Source A: ts 30, 10, 20 (names 100, 101, 102), its row 1 dropped; source B: ts 20, 5 (names 200, 201).
    Concatenated 30(100) 20(102) 20(200) 5(201); by start, stable: 5(201) 20(102) 20(200) 30(100).
    Metric m1 (A: 1, 2, 3) lands 3 at row 1 and 1 at row 3; m0 (B: 7, 8) lands 8 at row 0 and 7 at row 2."""
    a, b = _plain([100, 101, 102], [30, 10, 20]), _plain([200, 201], [20, 5])
    for c in a:
        a[c], b[c] = a[c].astype(np.int64), b[c].astype(np.int64)  # the dtypes are set on the way out
    sources = [(a, {"m1": np.array([1.0, 2.0, 3.0])}, np.array([True, False, True])),
               (b, {"m0": np.array([7.0, 8.0])}, None)]
    t = EventTable()
    fill_events(t, sources)
    assert t.events["ts"].tolist() == [5, 20, 20, 30]
    assert t.events["name"].tolist() == [201, 102, 200, 100]
    assert {c: v.dtype for c, v in t.events.items()} == {c: np.dtype(d) for c, d in EVENT_COLUMNS.items()}
    assert list(t.metrics) == ["m0", "m1"]
    np.testing.assert_array_equal(t.metrics["m0"], [8.0, np.nan, 7.0, np.nan])
    np.testing.assert_array_equal(t.metrics["m1"], [np.nan, 3.0, np.nan, 1.0])
    assert a == {} and b == {}  # each column released once used


def test_fill_events_of_three_sources():
    """Three sources of 2, 1 and 3 events (ts A: 5, 1; B: 3; C: 0, 4, 2) each with its own metric:
    by start C0 A1 C2 B0 C1 A0 (0, 1, 2, 3, 4, 5); metric c (10, 11, 12) at rows 0, 4, 2."""
    a, b, c = _plain([1, 2], [5, 1]), _plain([3], [3]), _plain([4, 5, 6], [0, 4, 2])
    t = EventTable()
    fill_events(t, [(a, {"a": np.array([1.0, 2.0])}, None), (b, {"b": np.array([3.0])}, None),
                    (c, {"c": np.array([10.0, 11.0, 12.0])}, None)])
    assert t.events["name"].tolist() == [4, 2, 6, 3, 5, 1]
    np.testing.assert_array_equal(t.metrics["c"], [10.0, np.nan, 12.0, np.nan, 11.0, np.nan])
    np.testing.assert_array_equal(t.metrics["b"], [np.nan, np.nan, np.nan, 3.0, np.nan, np.nan])
    np.testing.assert_array_equal(t.metrics["a"], [np.nan, 2.0, np.nan, np.nan, np.nan, 1.0])


def test_fill_events_is_stable_over_many_ties():
    """200 events at 4 starts (0, 1, 0, 1, ...) in two sources: by start, each start's events in
    concatenation order (names 0..99 of A then 100..199 of B), none reordered; a shared metric."""
    ts = [i % 2 for i in range(100)]
    a, b = _plain(list(range(100)), ts), _plain(list(range(100, 200)), ts)
    t = EventTable()
    fill_events(t, [(a, {"m": np.ones(100)}, None), (b, {"m": np.full(100, 2.0)}, None)])
    evens = [n for n in range(200) if n % 2 == 0]
    odds = [n for n in range(200) if n % 2 == 1]
    assert t.events["name"].tolist() == evens + odds
    assert t.metrics["m"].tolist() == [1.0] * 50 + [2.0] * 50 + [1.0] * 50 + [2.0] * 50


def test_fill_memory():
    """Memory records by time, stable (ts 3, 1, 2, 1 -> rows 1, 3, 2, 0), each column of its dtype; 200
    records at starts 0, 1, 0, 1, ...: each start's records in their order (stable over many ties)."""
    cols = {c: np.arange(4, dtype=np.int64) * 10 for c in MEMORY_COLUMNS}
    cols["ts"] = np.array([3, 1, 2, 1], np.int64)
    t = EventTable()
    fill_memory(t, cols)
    assert t.memory["ts"].tolist() == [1, 1, 2, 3]
    assert t.memory["bytes"].tolist() == [10, 30, 20, 0]
    assert {c: v.dtype for c, v in t.memory.items()} == {c: np.dtype(d) for c, d in MEMORY_COLUMNS.items()}
    many = {c: np.arange(200, dtype=np.int64) for c in MEMORY_COLUMNS}
    many["ts"] = np.arange(200, dtype=np.int64) % 2
    fill_memory(t, many)
    assert t.memory["bytes"].tolist() == list(range(0, 200, 2)) + list(range(1, 200, 2))
