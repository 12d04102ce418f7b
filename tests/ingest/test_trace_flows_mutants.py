"""torch_to_npu flows over columns (ingest/ascend/trace/flows.py: `bind`, `innermost`, `_tasks_at`) on small
hand-made columns: the last `s` and the last `f` of an id count, the innermost enclosing host op of the start's
thread among the 64 starting just before it (ties: the later row, as the plain reading's sort of (ts, -dur, row)
scanned backwards), every device task starting on the end's thread at the end's time, host ids in the order
their flows first appear, a task bound twice keeping the later flow's (the mutation round of issue 46).
Every expected id is worked out by hand in the docstrings."""
import numpy as np

from canning_tb.ingest.ascend.trace.flows import bind, innermost
from canning_tb.ingest.table import NONE


def _ev(rows):
    """rows: (kind 'H' or 'D', pid, tid, ts, dur) -> (ev columns, host mask, device mask)."""
    ev = {k: np.array([r[i] for r in rows], np.int64) for i, k in enumerate(("pid", "tid", "ts", "dur"), 1)}
    ev["pid"], ev["tid"] = ev["pid"].astype(np.int32), ev["tid"].astype(np.int32)
    return ev, np.array([r[0] == "H" for r in rows]), np.array([r[0] == "D" for r in rows])


def _flows(rows):
    """rows: (ph, id, pid, tid, ts, ts usable) in file order."""
    return {"ph": np.array([r[0] for r in rows], object), "id": np.array([r[1] for r in rows], np.int32),
            "pid": np.array([r[2] for r in rows], np.int32), "tid": np.array([r[3] for r in rows], np.int32),
            "ts": np.array([r[4] for r in rows], np.int64), "ts_ok": np.array([r[5] for r in rows], bool),
            "seq": np.arange(len(rows))}


EVENTS = [("H", 1, 1, 100, 100),  # 0: 100..200
          ("H", 1, 1, 110, 50),   # 1: 110..160, inside 0
          ("H", 1, 1, 120, 5),    # 2: 120..125
          ("D", 2, 7, 300, 10),   # 3
          ("D", 2, 7, 300, 20),   # 4: a second task at 300 on the same thread
          ("D", 2, 7, 310, 1),    # 5
          ("H", 1, 2, 0, 1000),   # 6: thread (1, 2)
          ("D", 2, 8, 300, 1),    # 7: another device thread at 300
          ("H", 2, 1, 499, 2),    # 8: thread (2, 1), 499..501 (pid + tid would make it (1, 2)'s)
          ("H", 2, 1, 129, 2),    # 9: thread (2, 1), 129..131 (the tid alone would make it (1, 1)'s)
          ("D", 2, 5, 1, 1)]      # 10: device thread (2, 5), sorted before (2, 7)


def test_nested_ops_and_tasks_at_one_time_bind_in_first_appearance_order():
    """Flow 9 first (its s at 500 on (1, 2): only row 6 encloses it, row 8 is another thread), then flow 5 (its s
    at 130 on (1, 1): rows 0 (100..200) and 1 (110..160) enclose it, row 2 (120..125) does not, row 9 is on
    (2, 1): the innermost is row 1), then flow 2 (s at 121 on (1, 1): row 2, the innermost). Host ids by first
    appearance: row 6 -> 1, row 1 -> 2, row 2 -> 3. Flow 5 ends at 300 on (2, 7): rows 3 and 4 (not 7, another
    thread) -> 2; flow 9 ends at 310 on (2, 7): row 5 -> 1; flow 2 ends at 300 on (2, 8): row 7 -> 3 (its thread's
    tasks start after (2, 5)'s and (2, 7)'s in the sorted device rows)."""
    ev, host, device = _ev(EVENTS)
    flows = _flows([("s", 9, 1, 2, 500, True), ("s", 5, 1, 1, 130, True), ("f", 5, 2, 7, 300, True),
                    ("f", 9, 2, 7, 310, True), ("s", 2, 1, 1, 121, True), ("f", 2, 2, 8, 300, True)])
    ext, unbound = bind(flows, ev, host, device)
    assert ext.tolist() == [NONE, 2, 3, 2, 2, 1, 1, 3, NONE, NONE, NONE] and unbound == 0


def test_the_last_start_and_end_of_an_id_count_and_unusable_ones_do_not_bind():
    """id 1: starts at 5 (nothing encloses it) then at 130 (row 1), ends at 999 then at 300: the last of each
    binds row 1 to rows 3 and 4 (id 1). id 2 has only a start (no pair: not counted). id 3's start time is not
    usable (130 as written, ts_ok False), id 4 ends at 305 where no task starts, id 6's end time is not usable
    (310, where row 5 starts); id 11 ends on (1, 1), a thread with no device task, and id 12 at 999 on (2, 5),
    whose one task starts at 1 (both threads sorted before (2, 7)): five unbound."""
    ev, host, device = _ev(EVENTS)
    flows = _flows([("s", 1, 1, 1, 5, True), ("s", 1, 1, 1, 130, True), ("f", 1, 2, 7, 999, True),
                    ("f", 1, 2, 7, 300, True), ("s", 2, 1, 1, 130, True),
                    ("s", 3, 1, 1, 130, False), ("f", 3, 2, 7, 310, True),
                    ("s", 4, 1, 1, 130, True), ("f", 4, 2, 7, 305, True),
                    ("s", 6, 1, 1, 130, True), ("f", 6, 2, 7, 310, False),
                    ("s", 11, 1, 1, 130, True), ("f", 11, 1, 1, 130, True),
                    ("s", 12, 1, 1, 130, True), ("f", 12, 2, 5, 999, True)])
    ext, unbound = bind(flows, ev, host, device)
    assert ext.tolist() == [NONE, 1, NONE, 1, 1, NONE, NONE, NONE, NONE, NONE, NONE] and unbound == 5


def test_a_task_bound_twice_keeps_the_later_flow_and_a_host_op_keeps_one_id():
    """Ids 20, 10, 30 in that order of first appearance. 20: s at 10 -> row 0 (0..100), f at 50 -> row 2: host
    id 1. 10: s at 250 -> row 1 (200..300), f at 50 -> row 2 again: host id 2, and row 2 keeps the later flow's
    (10's: 2). 30: s at 20 -> row 0 again (id 1), f at 60 -> row 3: 1. (Sorted ids 10, 20, 30 would give row 1
    id 1.)"""
    ev, host, device = _ev([("H", 1, 1, 0, 100), ("H", 1, 1, 200, 100), ("D", 2, 7, 50, 1), ("D", 2, 7, 60, 1)])
    flows = _flows([("s", 20, 1, 1, 10, True), ("f", 20, 2, 7, 50, True), ("s", 10, 1, 1, 250, True),
                    ("f", 10, 2, 7, 50, True), ("s", 30, 1, 1, 20, True), ("f", 30, 2, 7, 60, True)])
    ext, unbound = bind(flows, ev, host, device)
    assert ext.tolist() == [1, 2, 2, 1] and unbound == 0


def test_the_bounds_of_a_host_op_are_inclusive_and_equal_ops_give_the_later_row():
    """Rows 0 and 1 both 100..110. id 7 starts at 100 (= ts), id 3 at 110 (= ts + dur): both enclosed by
    either, and the later row (1) wins the tie; id 8 starts at 111: enclosed by none (unbound). Row 1 -> 1;
    tasks 2 (id 7's end at 5) and 3 (id 3's end at 6) -> 1; task 4 (id 8's end at 7) stays NONE."""
    ev, host, device = _ev([("H", 1, 1, 100, 10), ("H", 1, 1, 100, 10), ("D", 2, 7, 5, 1), ("D", 2, 7, 6, 1),
                            ("D", 2, 7, 7, 1)])
    flows = _flows([("s", 7, 1, 1, 100, True), ("f", 7, 2, 7, 5, True), ("s", 3, 1, 1, 110, True),
                    ("f", 3, 2, 7, 6, True), ("s", 8, 1, 1, 111, True), ("f", 8, 2, 7, 7, True)])
    ext, unbound = bind(flows, ev, host, device)
    assert ext.tolist() == [NONE, 1, 1, 1, NONE] and unbound == 1


def _scan_back(n_small, same_start=False):
    """Row 0 spans 0..1000; rows 1..n_small start at 1, 2, ... (or all at 0) with no duration (none encloses
    500); the task (last row) starts at 5000. One flow: s at 500, f at 5000."""
    rows = [("H", 1, 1, 0, 1000)] + [("H", 1, 1, 0 if same_start else k, 0) for k in range(1, n_small + 1)] + \
        [("D", 2, 7, 5000, 1)]
    ev, host, device = _ev(rows)
    return bind(_flows([("s", 4, 1, 1, 500, True), ("f", 4, 2, 7, 5000, True)]), ev, host, device)


def test_the_enclosing_op_is_looked_for_among_the_64_ops_starting_before_the_flow():
    """With 63 ops between: the last op starting at or before 500 is row 63, and the 64 looked at are rows 63
    down to 0: row 0 binds (id 1, and the task too). With 64 between: rows 64 down to 1, none encloses 500:
    unbound, every id NONE."""
    ext, unbound = _scan_back(63)
    assert ext[0] == 1 and ext[-1] == 1 and unbound == 0 and (ext[1:-1] == NONE).all()
    ext, unbound = _scan_back(64)
    assert (ext == NONE).all() and unbound == 1


def test_ops_starting_together_are_looked_at_longest_first():
    """Ops starting at one time sort longest first (the plain reading's (ts, -dur, row)): with 63 empty ops
    starting at 0 beside row 0 (0..1000) the 64 looked at reach row 0 (bound, id 1); with 64 of them they are
    the 64 empty ones (rows 64 down to 1), none enclosing 500: unbound."""
    ext, unbound = _scan_back(63, same_start=True)
    assert ext[0] == 1 and unbound == 0
    ext, unbound = _scan_back(64, same_start=True)
    assert (ext == NONE).all() and unbound == 1


def test_no_flow_no_pair_or_no_task_binds_nothing():
    """No flow: every id NONE, 0 unbound; only starts (no pair): 0 unbound; a pair whose end finds no device
    task at all (no device row): 1 unbound, and its host op keeps NONE."""
    ev, host, device = _ev([("H", 1, 1, 0, 100), ("H", 1, 1, 0, 50)])
    ext, unbound = bind({}, ev, host, device)
    assert ext.tolist() == [NONE, NONE] and ext.dtype == np.int64 and unbound == 0
    ext, unbound = bind(_flows([("s", 1, 1, 1, 10, True), ("s", 2, 1, 1, 20, True)]), ev, host, device)
    assert ext.tolist() == [NONE, NONE] and unbound == 0
    ext, unbound = bind(_flows([("s", 1, 1, 1, 10, True), ("f", 1, 2, 7, 10, True)]), ev, host, device)
    assert ext.tolist() == [NONE, NONE] and unbound == 1


def test_innermost_by_hand():
    """Host ops (thread, ts, dur): 0 (1, 0, 100), 1 (1, 10, 20), 2 (2, 10, 5), 3 (1, 40, 0), then 4..67: 64
    empty ops on thread 4 at 100..163 after op 68 (4, 0, 1000). Queries on thread 1 at 15 -> 1 (10..30 inside
    0..100), at 40 -> 3 (40..40, dur 0 beats 0's 100), at 101 -> -1; on thread 2 at 12 -> 2; on thread 3 and
    thread 0 (no op) -> -1; on thread 4 at 10 -> 68 (the 64 ops after 10 are not looked at)."""
    thread = [1, 1, 2, 1] + [4] * 64 + [4]
    ts = [0, 10, 10, 40] + list(range(100, 164)) + [0]
    dur = [100, 20, 5, 0] + [0] * 64 + [1000]
    got = innermost(np.array(thread), np.array(ts), np.array(dur),
                    np.array([1, 1, 1, 2, 3, 0, 4]), np.array([15, 40, 101, 12, 12, 12, 10]))
    assert got.tolist() == [1, 3, -1, 2, -1, -1, 68]


def test_a_flow_with_no_host_op_at_all_is_unbound():
    """A trace with a torch_to_npu pair and a device task at its end but no host op anywhere (the plain reading:
    no enclosing op, unbound): every id NONE, 1 unbound (the columns' reading once indexed the empty host rows)."""
    ev, host, device = _ev([("D", 2, 7, 50, 1), ("D", 2, 7, 60, 1)])
    ext, unbound = bind(_flows([("s", 1, 1, 1, 10, True), ("f", 1, 2, 7, 50, True)]), ev, host, device)
    assert ext.tolist() == [NONE, NONE] and unbound == 1
