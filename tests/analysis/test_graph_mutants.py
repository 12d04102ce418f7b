"""The graph's edits, replay and critical path on graphs made by hand (issue 46, mutation testing of
analysis/graph/): each node, dependency and wait written out below, each expected time worked out by hand in the
test's docstring or comment (times in ns)."""
import numpy as np

from canning_tb.analysis.build import build_digest
from canning_tb.analysis.context import Context
from canning_tb.analysis.graph.build import CAT, CATS, CROSS_STREAM, LANE, LAUNCH, WAKE, Graph
from canning_tb.analysis.graph.critical import Path, StepSpan, critical_path, mark_untraced, step_spans
from canning_tb.analysis.graph.replay import Edit, replay
from canning_tb.analysis.graph.section import WindowGraph
from canning_tb.analysis.graph.simulate import (_bucketed_lag, _measure_upto, fuse_edit, gain, interval_edit,
                                                 overlap_edit, scale_edit, shrink_edit)
from canning_tb.ingest.table import Kind
from _synthetic import ev, table

NONE = -1


def graph(nodes, deps=(), waits=None, lanes=("thread 1 (pid 1)", "stream 7 (device 0)"), main_lane=0, in_dl=()):
    """nodes: (start, end, lane, category, row); deps: (node, dependency, lag, kind), listed per node in the order
    their dependencies end (the last one binds, as build.py sorts them); waits: {node: (waited node, tail)}."""
    n = len(nodes)
    col = list(zip(*nodes)) if n else [[]] * 5
    deps = sorted(deps, key=lambda d: d[0])  # stable: each node's list keeps its order
    ptr = np.zeros(n + 1, np.int64)
    for d in deps:
        ptr[d[0] + 1] += 1
    ptr = np.cumsum(ptr)
    bind = np.array([ptr[i + 1] - 1 if ptr[i + 1] > ptr[i] else NONE for i in range(n)], np.int64)
    wait_on, tail = np.full(n, NONE, np.int64), np.zeros(n, np.int64)
    for node, (w, t) in (waits or {}).items():
        wait_on[node], tail[node] = w, t
    dl = np.zeros(n, bool)
    dl[list(in_dl)] = True
    return Graph(start=np.array(col[0], np.int64), end=np.array(col[1], np.int64),
                 lane=np.array(col[2], np.int32), cat=np.array([CAT[c] for c in col[3]], np.int8),
                 row=np.array(col[4], np.int64), dep_ptr=ptr, dep_src=np.array([d[1] for d in deps], np.int64),
                 dep_lag=np.array([d[2] for d in deps], np.int64), dep_kind=np.array([d[3] for d in deps], np.int8),
                 bind=bind, wait_on=wait_on, wait_tail=tail, lanes=list(lanes), main_lane=main_lane, in_dataloader=dl)


# --- _measure_upto, _bucketed_lag --------------------------------------------------------------------------------

def test_measure_upto_counts_the_set_before_each_instant():
    """Set [10, 20) and [30, 50): up to 0, 10 nothing; 15: 5; 20, 25, 30: 10; 40: 10 + 10; 50, 60: 10 + 20."""
    got = _measure_upto(np.array([10, 30]), np.array([20, 50]), np.array([0, 10, 15, 20, 25, 30, 40, 50, 60]))
    assert got.tolist() == [0, 0, 5, 10, 10, 10, 20, 30, 30]
    empty = _measure_upto(np.zeros(0, np.int64), np.zeros(0, np.int64), np.array([5, 7]))
    assert empty.tolist() == [0, 0] and empty.dtype == np.int64


def test_a_collectives_buckets_end_as_late_as_the_last_one_allows():
    """k = ceil(size / 25 MiB) buckets, bucket i ready at i/k of the backward (1000 ns), each comm / k long; the lag
    is max(backward + comm/k - comm, backward/k, 0):
    - no size (None, -1): 0, the most overlap could give;
    - 0 bytes and exactly 25 MiB: k = 1, max(1000 + 400 - 400, 1000) = 1000;
    - 25 MiB + 1: k = 2, max(1000 + 200 - 400, 500) = 800;
    - 100 MiB, a collective of 4000 ns: k = 4, max(1000 + 1000 - 4000, 250) = 250;
    - 100 MiB, 1001 ns of backward and 3 ns of transfer: k = 4, max(1001 + 0 - 3, 250) = 998;
    - 100 MiB, 1001 and 4000: max(1001 + 1000 - 4000, 1001 // 4) = 250 (whole ns, not 250.25);
    - 100 MiB, 3 ns of backward: max(3 + 1000 - 4000, 3 // 4 = 0, 0) = 0."""
    mib = 1 << 20
    assert _bucketed_lag(1000, 400, None) == 0 and _bucketed_lag(1000, 400, -1) == 0
    assert _bucketed_lag(1000, 400, 0) == 1000
    assert _bucketed_lag(1000, 400, 25 * mib) == 1000
    assert _bucketed_lag(1000, 400, 25 * mib + 1) == 800
    assert _bucketed_lag(1000, 4000, 100 * mib) == 250
    assert _bucketed_lag(1001, 3, 100 * mib) == 998
    lag = _bucketed_lag(1001, 4000, 100 * mib)
    assert lag == 250 and isinstance(lag, int)
    assert _bucketed_lag(3, 4000, 100 * mib) == 0


# --- interval_edit -----------------------------------------------------------------------------------------------

def _every_category():
    """One node per category, each 0-10 on a lane of its own (row = its number); node 0 (host) and node 2
    (dataloader) inside a data-loading range."""
    return graph([(0, 10, i, c, i) for i, c in enumerate(CATS)], lanes=[f"lane {i}" for i in range(len(CATS))],
                 in_dl=(0, 2))


def _hit(g, what):
    return sorted(CATS[int(g.cat[n])] for n in interval_edit(g, ([0], [10]), what, "w").dur)


def test_each_breakdown_category_takes_its_time_off_the_nodes_it_is_made_of():
    """The steps' breakdown (analysis/steps.py) -> the node categories its time is made of (docs/critical_path.md):
    compute is kernels; overlapped kernels and communication; communication the kernels and the host calls;
    device_wait the blocking calls; host the host operators, Python and the collectives' host calls; data loading
    the nodes inside its ranges; a range a rule names by events (compilation) the host's work of every kind."""
    g = _every_category()
    assert _hit(g, ["compute"]) == ["kernel"]
    assert _hit(g, ["overlapped"]) == ["communication", "kernel"]
    assert _hit(g, ["communication"]) == ["collective_host", "communication"]
    assert _hit(g, ["send / receive"]) == ["collective_host", "communication"]
    assert _hit(g, ["memcpy"]) == ["memcpy"]
    assert _hit(g, ["memset"]) == ["memset"]
    assert _hit(g, ["device_wait"]) == ["sync"]
    assert _hit(g, ["runtime"]) == ["runtime"]
    assert _hit(g, ["host"]) == ["collective_host", "host", "python"]
    assert _hit(g, ["python"]) == ["python"]
    assert _hit(g, ["compute", "memcpy"]) == ["kernel", "memcpy"]  # the union of both
    assert _hit(g, ["dataloader", "compute"]) == ["dataloader", "host"]  # data loading: its ranges only
    assert _hit(g, ["compilation"]) == ["collective_host", "dataloader", "host", "python", "runtime", "sync"]
    assert _hit(g, []) == ["collective_host", "dataloader", "host", "python", "runtime", "sync"]


def test_a_node_loses_its_overlap_with_the_set_and_a_blocking_call_that_waited_is_freed():
    """Nodes: 0 host 0-100; 1 sync 100-200 that waited for kernel 3; 2 sync 200-250 that waited for nothing; 3 a
    kernel 50-190. Set [20, 30) + [60, 110) + [240, 260): node 0 loses 10 + 40 = 50 (100 -> 50), node 1 loses 10
    (100 -> 90, and no longer waits), node 2 loses 10 (50 -> 40, nothing to free); kernel 3 is not host work."""
    g = graph([(0, 100, 0, "host", 0), (100, 200, 0, "sync", 1), (200, 250, 0, "sync", 2), (50, 190, 1, "kernel", 3)],
              deps=[(1, 0, 0, LANE), (2, 1, 0, LANE)], waits={1: (3, 10)})
    e = interval_edit(g, ([20, 60, 240], [30, 110, 260]), ["compilation"], "gone")
    assert e.dur == {0: 50, 1: 90, 2: 40}
    assert e.unblock == {1}
    assert e.what == "gone" and not e.cut_from and not e.rewire
    # a node the set does not reach is left out: [300, 400) meets none; [99, 100) takes 1 ns off node 0
    assert interval_edit(g, ([300], [400]), ["host"], "none").empty()
    assert interval_edit(g, ([99], [100]), ["host"], "one").dur == {0: 99}


# --- scale_edit, shrink_edit, fuse_edit ----------------------------------------------------------------------------

def test_scaling_shrinks_the_device_events_of_the_rows_and_truncates():
    """Rows 5 and 6 at half their time: kernel 10-17 (7 -> 3.5 -> 3), memcpy 20-29 (9 -> 4), communication 40-51
    (11 -> 5); the host node and the idle node of row 5 are not device work, the memset's row 7 is not asked."""
    g = graph([(0, 10, 0, "host", 5), (10, 17, 1, "kernel", 5), (20, 29, 1, "memcpy", 6), (30, 35, 1, "memset", 7),
               (40, 51, 1, "communication", 5), (60, 70, 1, "idle", 5)])
    e = scale_edit(g, np.array([5, 6]), 0.5, "half")
    assert e.dur == {1: 3, 2: 4, 4: 5} and e.what == "half"
    # the memset's row: sets are device work too (7 -> 5 * 0.4 = 2)
    assert scale_edit(g, np.array([7]), 0.4, "x").dur == {3: 2}


def _shrinkable():
    """0 host 0-100, 1 Python 100-140, 2 sync 140-160, 3 runtime 160-170, 4 dataloader 170-180 (host rows 0-4, Python
    none); kernel 10-30 (row 3), memcpy 40-55 (row 4), kernel 60-80 (row 9)."""
    return graph([(0, 100, 0, "host", 0), (100, 140, 0, "python", NONE), (140, 160, 0, "sync", 1),
                  (160, 170, 0, "runtime", 2), (170, 180, 0, "dataloader", 5), (10, 30, 1, "kernel", 3),
                  (40, 55, 1, "memcpy", 4), (60, 80, 1, "kernel", 9)])


def test_shrinking_keeps_a_share_of_the_host_time_in_the_set_and_of_the_device_rows():
    """Set [50, 175) at a quarter: host 0-100 keeps 50 + 50 / 4 = 62.5 -> 62; Python 100-140 keeps 40 / 4 = 10;
    the blocking call is not per-call cost (left alone); runtime 160-170 keeps 10 / 4 = 2.5 -> 2; dataloader
    170-180 keeps 5 + 5 / 4 = 6.25 -> 6. Device rows 3, 4 at half: kernel 20 -> 10, memcpy 15 -> 7.5 -> 7."""
    g = _shrinkable()
    e = shrink_edit(g, ([50], [175]), 0.25, np.array([3, 4]), 0.5, "fused")
    assert e.dur == {0: 62, 1: 10, 3: 2, 4: 6, 5: 10, 6: 7} and e.what == "fused"
    # no device rows: the host part alone
    assert shrink_edit(g, ([50], [175]), 0.25, np.zeros(0, np.int64), 0.5, "x").dur == {0: 62, 1: 10, 3: 2, 4: 6}
    # [0, 1) meets only host 0-100, for 1 ns: 100 - 1 x 0.75 = 99.25 -> 99; the others are not in the edit at all
    assert shrink_edit(g, ([0], [1]), 0.25, np.zeros(0, np.int64), 0.5, "x").dur == {0: 99}
    # a set over no host work and no device rows: nothing to replay, no gain stated
    e = shrink_edit(g, ([500], [600]), 0.25, np.zeros(0, np.int64), 0.5, "x")
    assert e.empty() and gain(g, [StepSpan(1, 0, 180, np.arange(8), 0, 4)], e) is None


def _fusable():
    """Thread 1 (lane 0): 0 host 0-10, 1 launch 10-12 (of kernel 5), 2 host 12-30, 3 launch 30-32 (of kernel 6),
    4 sync 32-50 that waited for kernel 6; stream 7 (lane 1): 5 kernel 15-25, 6 kernel 35-45; thread 2 of the same
    process (lane 2): 7 host 0-40."""
    return graph([(0, 10, 0, "host", 0), (10, 12, 0, "runtime", 1), (12, 30, 0, "host", 2), (30, 32, 0, "runtime", 3),
                  (32, 50, 0, "sync", 4), (15, 25, 1, "kernel", 5), (35, 45, 1, "kernel", 6), (0, 40, 2, "host", 7)],
                 deps=[(1, 0, 0, LANE), (2, 1, 0, LANE), (3, 2, 0, LANE), (4, 3, 0, LANE), (5, 1, 3, LAUNCH),
                       (6, 3, 3, LAUNCH)], waits={4: (6, 5)},
                 lanes=("thread 1 (pid 1)", "stream 7 (device 0)", "thread 2 (pid 1)"))


def test_fusing_cuts_the_threads_stretches_and_the_work_launched_from_what_goes():
    """Stretch 10-31 of thread 1: the launch 10-12 and host 12-30 go whole (0), launch 30-32 loses 1 (2 -> 1);
    kernel 5, launched from the launch that went, goes (0); kernel 6 stays; thread 2 (7) overlaps the time but is
    another thread. A stretch of an unknown thread (pid 9) or of no length changes nothing."""
    g = _fusable()
    e = fuse_edit(g, [(1, 1, 10, 31), (9, 9, 0, 100), (1, 1, 40, 40)], "fused")
    assert e.dur == {1: 0, 2: 0, 3: 1, 5: 0} and e.unblock == set() and e.what == "fused"
    # stretch 30-50: the launch and the synchronize go, so does kernel 6; the synchronize waits no more
    e = fuse_edit(g, [(1, 1, 30, 50)], "fused")
    assert e.dur == {3: 0, 4: 0, 6: 0} and e.unblock == {4}
    # two stretches on one thread, given out of order: 30-31 and 0-5 (0 keeps 5, 3 keeps 1)
    assert fuse_edit(g, [(1, 1, 30, 31), (1, 1, 0, 5)], "x").dur == {0: 5, 3: 1}


def test_rescaling_a_stretch_stretches_the_thread_and_the_work_launched_inside_it():
    """Rescale 10-12 of thread 1 (the launch of kernel 5) by host x3, device x0.5: the launch lasts 2 + 2 x 2 = 6,
    kernel 5 (10) lasts 5. Cut 12-20 and rescale 12-30 by x2, x1: host 12-30 keeps 10 after the cut, then gains its
    18 ns in the stretch once more: 28 (what the cut left, not its observed 18, is what the rescale adds to)."""
    g = _fusable()
    assert fuse_edit(g, [], "x", [(1, 1, 10, 12, 3.0, 0.5)]).dur == {1: 6, 5: 5}
    assert fuse_edit(g, [(1, 1, 12, 20)], "x", [(1, 1, 12, 30, 2.0, 1.0)]).dur == {2: 28}
    # a stretch partly over the launch (11-12 of 10-12) rescales only that part of the thread and no device work
    assert fuse_edit(g, [], "x", [(1, 1, 11, 12, 3.0, 0.5)]).dur == {1: 4}
    # the launch cut whole and rescaled: it stays 0 (0 + 2 x 0), and so does kernel 5 (0 x 0.5, not its 10 x 0.5)
    assert fuse_edit(g, [(1, 1, 10, 12)], "x", [(1, 1, 10, 12, 1.0, 0.5)]).dur == {1: 0, 5: 0}


def test_a_stretch_that_ends_before_it_starts_is_no_stretch():
    """Stretches 5-2 (reversed) and 8-12 of thread 1: only 8-12 counts: host 0-10 loses 2 (keeps 8), the launch 10-12
    goes whole, and kernel 5 with it. (Kept, the reversed one would count as -3 ns before 8-12.)"""
    assert fuse_edit(_fusable(), [(1, 1, 5, 2), (1, 1, 8, 12)], "x").dur == {0: 8, 1: 0, 5: 0}


# --- gain ----------------------------------------------------------------------------------------------------------

def _two_steps():
    """Thread 1 in a chain: step 1 holds 0 (0-50) and 1 (50-100), step 2 holds 2 (100-130) and 3 (130-200)."""
    g = graph([(0, 50, 0, "host", 0), (50, 100, 0, "host", 1), (100, 130, 0, "host", 2), (130, 200, 0, "host", 3)],
              deps=[(1, 0, 0, LANE), (2, 1, 0, LANE), (3, 2, 0, LANE)])
    spans = [StepSpan(1, 0, 100, np.array([0, 1]), 0, 1), StepSpan(2, 100, 200, np.array([2, 3]), 2, 3)]
    return g, spans


def test_the_gain_is_the_mean_lowest_and_highest_over_the_steps_kept():
    """Node 1 from 50 to 29 ns: step 1 ends at 79 (gain 21); step 2 starts there and still lasts 100 (gain 0): the
    mean 10.5 is taken down to 10, lowest 0, highest 21, over 2 steps. Only step 1 kept: 21; only step 2: 0; a kept
    set naming no step: all steps."""
    g, spans = _two_steps()
    e = Edit("shorter", dur={1: 29})
    s = gain(g, spans, e)
    assert (s.gain_ns, s.low_ns, s.high_ns, s.steps, s.what) == (10, 0, 21, 2, "shorter")
    assert (gain(g, spans, e, {1}).gain_ns, gain(g, spans, e, {1}).steps) == (21, 1)
    assert (gain(g, spans, e, {2}).gain_ns, gain(g, spans, e, {2}).high_ns) == (0, 0)
    assert gain(g, spans, e, {7}).steps == 2
    # step 2 alone shortened (node 3 from 70 to 50): it runs 100-180, 20 gained, measured from its own start
    assert gain(g, spans, Edit("step 2", dur={3: 50}), {2}).gain_ns == 20
    # a step made longer gains nothing (not a negative gain): node 3 from 70 to 90
    assert gain(g, spans, Edit("longer", dur={3: 90})).high_ns == 0
    assert gain(g, spans, Edit("nothing")) is None and gain(g, [], e) is None


# --- replay: the dependencies an edit cuts or rewires ---------------------------------------------------------------

def test_a_cut_or_rewired_dependency_starts_the_node_from_what_is_left():
    """Communication 0 (0-100) on stream 20 (lane 1); launch 1 (1-2) on thread 1; kernel 2 (105-155) on stream 7
    (lane 2), launched by 1 (lag 3) and held by the communication (cross-stream, lag 5, the one that bound it); 3, a
    synchronize 2-170 on thread 1 after the launch, that waited for kernel 2 and returned 170 - 155 = 15 after it."""
    g = graph([(0, 100, 1, "communication", 0), (1, 2, 0, "runtime", 1), (105, 155, 2, "kernel", 2),
               (2, 170, 0, "sync", 3)],
              deps=[(2, 1, 3, LAUNCH), (2, 0, 5, CROSS_STREAM), (3, 1, 0, LANE)], waits={3: (2, 15)},
              lanes=("thread 1 (pid 1)", "stream 20 (device 0)", "stream 7 (device 0)"))
    s, e = replay(g)
    assert s.tolist() == g.start.tolist() and e.tolist() == g.end.tolist()
    # freed from the communication, the kernel starts its launch lag after the launch: 2 + 3 = 5, ends 55; the
    # synchronize returns its 15 after: 70
    s, e = replay(g, Edit("cut", cut_from={0}))
    assert (s[2], e[2], s[3], e[3]) == (5, 55, 2, 70)
    # its launch rewired to 1 + 10: the communication still holds it at 105
    s, e = replay(g, Edit("rewire", rewire={2: (1, 10)}))
    assert (s[2], e[2]) == (105, 155)
    # both: 2 + 10 = 12, ends 62; the synchronize 77
    s, e = replay(g, Edit("both", cut_from={0}, rewire={2: (1, 10)}))
    assert (s[2], e[2], e[3]) == (12, 62, 77)


# --- the critical path ----------------------------------------------------------------------------------------------

def _synced(lo=-5):
    """Thread 1 (lane 0): 0 Python 0-10, 1 launch 10-12, 2 host 12-20, 3 synchronize 20-62 that waited for kernel 5
    (a tail of 2), 4 host 65-90 after a 3 ns gap; stream 7 (lane 1): 5 kernel 14-60, launched by 1 (lag 2). The step
    runs from `lo` to 100."""
    g = graph([(0, 10, 0, "python", NONE), (10, 12, 0, "runtime", 1), (12, 20, 0, "host", 2), (20, 62, 0, "sync", 3),
               (65, 90, 0, "host", 4), (14, 60, 1, "kernel", 5)],
              deps=[(1, 0, 0, LANE), (2, 1, 0, LANE), (3, 2, 0, LANE), (4, 3, 3, LANE), (5, 1, 2, LAUNCH)],
              waits={3: (5, 2)})
    return g, StepSpan(1, lo, 100, np.arange(6), 0, 4)


def test_the_path_walks_back_through_the_wait_the_launch_and_the_gaps():
    """From the step's end: idle 90-100 (the thread had ended), host 65-90, idle 62-65 (the thread stood still), the
    synchronize's tail 60-62, the kernel it waited for 14-60, the launch's latency 12-14 (between lanes), the launch
    10-12, Python 0-10, and the step's 5 ns before any node (-5-0) untraced: 10 + 25 + 3 + 2 + 46 + 2 + 2 + 10 + 5 =
    105, the step. Categories in the order the walk meets them (from the end); segments in time order."""
    g, span = _synced()
    p = critical_path(g, span)
    assert list(p.by_cat.items()) == [("idle", 13), ("host", 25), ("sync", 2), ("kernel", 46), ("latency", 2),
                                      ("runtime", 2), ("python", 10), ("untraced", 5)]
    c = CAT
    assert p.segments == [(NONE, -5, 0, c["untraced"]), (0, 0, 10, c["python"]), (1, 10, 12, c["runtime"]),
                          (NONE, 12, 14, c["latency"]), (5, 14, 60, c["kernel"]), (3, 60, 62, c["sync"]),
                          (NONE, 62, 65, c["idle"]), (4, 65, 90, c["host"]), (NONE, 90, 100, c["idle"])]
    assert (p.number, p.start, p.end) == (1, -5, 100)
    # a step starting inside node 0 (at 5): the path stops there, Python 5-10, nothing untraced
    g, span = _synced(lo=5)
    p = critical_path(g, span)
    assert p.by_cat["python"] == 5 and "untraced" not in p.by_cat and sum(p.by_cat.values()) == 95


def test_a_blocking_call_that_waited_for_work_done_before_it_began_did_not_wait():
    """The synchronize 20-62 waits for kernel 5 which now runs 4-9 (over before the call began): the call is held by
    the host work before it, and is on the path whole (42), its 3 ns gap after it idle, then the host before."""
    g, span = _synced()
    g.start[5], g.end[5] = 4, 9
    p = critical_path(g, span)
    assert p.by_cat["sync"] == 42 and "kernel" not in p.by_cat
    assert p.by_cat == {"idle": 13, "host": 33, "sync": 42, "runtime": 2, "python": 10, "untraced": 5}


def test_waits_for_work_queued_before_the_window_make_the_hiding_pieces_untraced():
    """Waits [11, 13) and [55, 63) over the path above: the launch 10-12 keeps 10-11 (11-12 untraced), the latency
    12-14 keeps 13-14, the kernel is work the trace shows (kept whole), the synchronize's tail 60-62 is all inside,
    the idle 62-65 keeps 63-65. Untraced: 5 + 1 + 1 + 2 + 1 = 10; categories now in time order."""
    g, span = _synced()
    p = mark_untraced(critical_path(g, span), ([11, 55], [13, 63]))
    assert list(p.by_cat.items()) == [("untraced", 10), ("python", 10), ("runtime", 1), ("latency", 1),
                                      ("kernel", 46), ("idle", 12), ("host", 25)]
    c = CAT
    assert p.segments[:7] == [(NONE, -5, 0, c["untraced"]), (0, 0, 10, c["python"]), (1, 10, 11, c["runtime"]),
                              (1, 11, 12, c["untraced"]), (NONE, 12, 13, c["untraced"]), (NONE, 13, 14, c["latency"]),
                              (5, 14, 60, c["kernel"])]
    assert p.segments[7:9] == [(3, 60, 62, c["untraced"]), (NONE, 62, 63, c["untraced"])]


def test_waits_that_meet_no_hiding_piece_only_put_the_categories_in_time_order():
    """A wait [20, 50) lies over the kernel only (work the trace shows): nothing is cut; the categories are listed
    as the path meets them in time, the figures unchanged. No wait at all leaves the path as walked."""
    g, span = _synced()
    p = mark_untraced(critical_path(g, span), ([20], [50]))
    assert list(p.by_cat.items()) == [("untraced", 5), ("python", 10), ("runtime", 2), ("latency", 2),
                                      ("kernel", 46), ("sync", 2), ("idle", 13), ("host", 25)]
    assert len(p.segments) == 9
    walked = critical_path(g, span)
    assert list(mark_untraced(walked, ([], [])).by_cat) == ["idle", "host", "sync", "kernel", "latency", "runtime",
                                                            "python", "untraced"]
    assert mark_untraced(Path(1, 0, 10), ([1], [2])).segments == []


class _Step:
    def __init__(self, number, start_ns, dur_ns):
        self.number, self.start_ns, self.dur_ns = number, start_ns, dur_ns


def _stepped(main_lane=0):
    """Lanes: 0 the steps' thread, 1 a stream, 2 another thread. Nodes: 0 (0-40) and 1 (40-100) on 0; kernel 2 (10-105)
    on 1; 3 (100-150) on 0; 4 (120-190) on 2; kernel 5 (150-210); 6 (400-450) on 0; kernels 7 (500-520) and 8
    (500-540); 9 (510-590) on 0."""
    return graph([(0, 40, 0, "host", 0), (40, 100, 0, "host", 1), (10, 105, 1, "kernel", 2), (100, 150, 0, "host", 3),
                  (120, 190, 2, "host", 4), (150, 210, 1, "kernel", 5), (400, 450, 0, "host", 6),
                  (500, 520, 1, "kernel", 7), (500, 540, 1, "kernel", 8), (510, 590, 0, "host", 9)],
                 lanes=("thread 1 (pid 1)", "stream 7 (device 0)", "thread 2 (pid 1)"), main_lane=main_lane)


def test_a_steps_span_holds_what_starts_in_it_and_ends_with_the_last_node_inside_it():
    """Step 1 (0-100): nodes 0, 2, 1 (by start); the kernel runs past 100, so the step's last node is 1 (ends at 100);
    first 0. Step 2 (100-200): 3, 4, 5; the other thread's 4 is left out; the kernel 5 runs past 200: last 3. Step 3
    (300-350) holds nothing: no span. Step 4 (400-410): only 6, which ends past it: last 6 anyway. Step 5 (500-600):
    two kernels start it, no thread node: first the one that ends later (8); last 9."""
    g = _stepped()
    spans = step_spans(g, [_Step(1, 0, 100), _Step(2, 100, 100), _Step(3, 300, 50), _Step(4, 400, 10),
                           _Step(5, 500, 100)])
    got = [(s.number, s.start, s.end, s.nodes.tolist(), s.first, s.last) for s in spans]
    assert got == [(1, 0, 100, [0, 2, 1], 0, 1), (2, 100, 200, [3, 5], 3, 3), (4, 400, 410, [6], 6, 6),
                   (5, 500, 600, [7, 8, 9], 8, 9)]
    # without a thread holding the steps every node counts: step 2 holds 4, which ends last inside it (190)
    (s,) = step_spans(_stepped(main_lane=NONE), [_Step(2, 100, 100)])
    assert (s.nodes.tolist(), s.first, s.last) == ([3, 4, 5], 3, 4)
    # a step whose only node is another thread's holds nothing
    assert step_spans(g, [_Step(9, 120, 10)]) == []
    assert step_spans(graph([]), [_Step(1, 0, 10)]) == []


def test_a_step_started_by_its_thread_and_a_kernel_together_starts_with_the_thread():
    """Kernel 0 (0-90, listed first) and thread node 1 (0-50) both start at 0: the thread's node is the step's
    first even though the kernel ends later; the kernel's 90 is the last end inside 0-100."""
    g = graph([(0, 90, 1, "kernel", 0), (0, 50, 0, "host", 1)])
    (s,) = step_spans(g, [_Step(1, 0, 100)])
    assert (s.first, s.last) == (1, 0)


# --- overlap_edit ----------------------------------------------------------------------------------------------------

def _ddp(size=-1, nccl_start=320, nccl_end=880, backward="autograd::engine::evaluate_function: MmBackward0",
         more=(), mm=True):
    """A 1000 ns step on thread 1: aten::mm 0-90 (forward), Python 90-100; the backward 100-400 (MmBackward0's autograd range), which
    launches an all-reduce at 300-310 (correlation 1, `size` bytes); cudaDeviceSynchronize 400-900 waits for it;
    aten::add 900-1000. The all-reduce runs `nccl_start`-880 on stream 20."""
    return table([
        ev("ProfilerStep#1", Kind.USER_ANNOTATION, 0, 1000), *([ev("aten::mm", Kind.CPU_OP, 0, 90)] if mm else []),
        ev(backward, Kind.CPU_OP, 100, 300), *more,
        ev("cudaLaunchKernel", Kind.RUNTIME, 300, 10, correlation=1),
        ev("cudaDeviceSynchronize", Kind.RUNTIME, 400, 500), ev("aten::add", Kind.CPU_OP, 900, 100),
        ev("ncclKernel_AllReduce", Kind.COMM_KERNEL, nccl_start, nccl_end - nccl_start, correlation=1, stream=20,
           bytes=size),
    ])


def _overlap(t):
    wg = WindowGraph(Context(t), build_digest(t))
    g = wg.graph
    nccl = int(np.flatnonzero(g.cat == CAT["communication"])[0])
    mm = int(np.flatnonzero((g.end == 100) & (g.lane == g.main_lane))[0])
    return wg, nccl, mm, overlap_edit(g, t, wg.spans, "overlapped")


def test_a_collective_issued_in_the_backward_starts_as_its_buckets_allow():
    """The backward begins at 100, where the Python after aten::mm (the anchor) ends; the all-reduce was issued at 310, 210 into the
    backward, and lasts 560. Without its size it may start as the backward begins (lag 0; the words say no sizes were
    given): replayed 100-660, the synchronize returns its 20 tail after (680), aten::add 680-780: 220 gained. Of 50
    MiB (2 buckets): lag max(210 + 280 - 560, 105) = 105: 205-765, 785, 885: 115 gained. Of 0 bytes (1 bucket): lag
    210, 310 < 320, still moved: 310-870, 890, 990: 10 gained."""
    wg, nccl, mm, e = _overlap(_ddp())
    assert e.rewire == {nccl: (mm, 0)} and e.what.startswith("overlapped (the trace gives no collective sizes")
    assert gain(wg.graph, wg.spans, e).gain_ns == 220
    wg, nccl, mm, e = _overlap(_ddp(50 << 20))
    assert e.rewire == {nccl: (mm, 105)} and e.what == "overlapped"
    assert gain(wg.graph, wg.spans, e).gain_ns == 115
    wg, nccl, mm, e = _overlap(_ddp(0))
    assert e.rewire == {nccl: (mm, 210)} and gain(wg.graph, wg.spans, e).gain_ns == 10
    assert e.what == "overlapped"  # 0 bytes is a size
    # a collective of 100 ns (320-420) of 50 MiB: 2 buckets, lag max(210 + 50 - 100, 105) = 160
    wg, nccl, mm, e = _overlap(_ddp(50 << 20, nccl_end=420))
    assert e.rewire == {nccl: (mm, 160)}


def test_a_collective_that_already_starts_as_its_buckets_allow_is_left_alone():
    """Of 0 bytes and starting at 310 (100 + its lag of 210): nothing to move, and no words about sizes."""
    wg, nccl, mm, e = _overlap(_ddp(0, nccl_start=310))
    assert e.rewire == {} and e.what == "overlapped"
    wg, nccl, mm, e = _overlap(_ddp(-1, nccl_start=311))
    assert e.rewire == {nccl: (mm, 0)}


def test_a_piece_of_no_length_is_not_on_the_path():
    """Host 0-50, a runtime call of 0 ns at 50, host 50-100, one after the other: the path is the two host nodes
    (100), no runtime category, two pieces."""
    g = graph([(0, 50, 0, "host", 0), (50, 50, 0, "runtime", 1), (50, 100, 0, "host", 2)],
              deps=[(1, 0, 0, LANE), (2, 1, 0, LANE)])
    p = critical_path(g, StepSpan(1, 0, 100, np.arange(3), 0, 2))
    assert p.by_cat == {"host": 100} and [s[:3] for s in p.segments] == [(0, 0, 50), (2, 50, 100)]


def test_a_path_through_every_node_of_the_graph_is_walked_whole():
    """Four host nodes in a chain, 0-10-20-30-40, the step 0-40: every node on the path, nothing untraced."""
    g = graph([(10 * i, 10 * i + 10, 0, "host", i) for i in range(4)], deps=[(i, i - 1, 0, LANE) for i in (1, 2, 3)])
    p = critical_path(g, StepSpan(1, 0, 40, np.arange(4), 0, 3))
    assert p.by_cat == {"host": 40} and [s[0] for s in p.segments] == [0, 1, 2, 3]


def test_untraced_waits_cut_the_path_at_epoch_nanoseconds():
    """The path and waits of test_waits_for_work_queued_..., every time moved by 1.7e18 ns (a Unix epoch in ns, where
    a float64 keeps only multiples of 256): the same cuts, moved."""
    t0 = 1_700_000_000_000_000_000
    g, span = _synced()
    g.start += t0
    g.end += t0
    span = StepSpan(1, t0 - 5, t0 + 100, span.nodes, span.first, span.last)
    p = mark_untraced(critical_path(g, span), ([t0 + 11, t0 + 55], [t0 + 13, t0 + 63]))
    assert list(p.by_cat.items()) == [("untraced", 10), ("python", 10), ("runtime", 1), ("latency", 1),
                                      ("kernel", 46), ("idle", 12), ("host", 25)]
    assert [(a - t0, b - t0) for _, a, b, _ in p.segments][:4] == [(-5, 0), (0, 10), (10, 11), (11, 12)]


def test_a_one_node_graph_has_its_step_and_a_step_of_another_thread_skips_to_the_next():
    """One node 0-10: step 0-10 holds it. Steps 120-130 (only the other thread's node 4) then 400-410 (node 6): the
    first has no span, the second has."""
    one = graph([(0, 10, 0, "host", 0)])
    (s,) = step_spans(one, [_Step(1, 0, 10)])
    assert (s.first, s.last, s.nodes.tolist()) == (0, 0, [0])
    assert critical_path(one, s).by_cat == {"host": 10}  # a graph with no dependency at all
    assert [x.number for x in step_spans(_stepped(), [_Step(9, 120, 10), _Step(4, 400, 10)])] == [4]


def test_a_step_ends_with_the_node_that_ends_at_its_end_not_one_running_past_it():
    """Host 0-100 and a kernel 50-120 in the step 0-100: the host node ends exactly at the step's end, so it is the
    step's last node, not the kernel that runs past it."""
    g = graph([(0, 100, 0, "host", 0), (50, 120, 1, "kernel", 1)])
    (s,) = step_spans(g, [_Step(1, 0, 100)])
    assert (s.first, s.last) == (0, 0)


def test_a_replay_takes_whole_ns_and_replays_a_graph_of_one_node():
    """Node 1 given 29.9 ns lasts 29 (whole ns, toward zero, as int() takes it): step 1 ends at 79. A replay of an
    edit that changes nothing gives the observed times; a graph of one node 0-10 given 4 ns: 0-4."""
    g, spans = _two_steps()
    s, e = replay(g, Edit("x", dur={1: 29.9}))
    assert e.tolist() == [50, 79, 109, 179] and s.tolist() == [0, 50, 79, 109]
    s, e = replay(g, Edit("nothing"))
    assert s.tolist() == g.start.tolist() and e.tolist() == g.end.tolist()
    s, e = replay(graph([(0, 10, 0, "host", 0)]), Edit("x", dur={0: 4}))
    assert (s.tolist(), e.tolist()) == ([0], [4])


def test_a_blocking_call_that_waited_for_node_0_returns_after_its_new_end():
    """Kernel 0 (10-50, stream 7) launched by 2 (runtime 5-8, lag 2); thread 1: host 1 (0-5), the launch, a
    synchronize 3 (8-60) that waited for the kernel (tail 10), host 4 (60-70); kernel 5 (9-12, stream 8) launched by
    the launch (lag 1) and held by host 1 (a join that ends before node 0). The kernel at 20 ns: 10-30; the
    synchronize returns 30 + 10 = 40; host 40-50; kernel 5 as it was."""
    g = graph([(10, 50, 1, "kernel", 0), (0, 5, 0, "host", 1), (5, 8, 0, "runtime", 2), (8, 60, 0, "sync", 3),
               (60, 70, 0, "host", 4), (9, 12, 2, "kernel", 5)],
              deps=[(0, 2, 2, LAUNCH), (2, 1, 0, LANE), (3, 2, 0, LANE), (4, 3, 0, LANE), (5, 1, 0, CROSS_STREAM),
                    (5, 2, 1, LAUNCH)], waits={3: (0, 10)},
              lanes=("thread 1 (pid 1)", "stream 7 (device 0)", "stream 8 (device 0)"))
    s, e = replay(g, Edit("x", dur={0: 20}))
    assert list(zip(s.tolist(), e.tolist())) == [(10, 30), (0, 5), (5, 8), (8, 40), (40, 50), (9, 12)]
    # its path, step 0-70: host 60-70, the synchronize's tail 50-60, kernel 0 10-50, the launch's latency 8-10, the
    # launch 5-8, host 0-5
    p = critical_path(g, StepSpan(1, 0, 70, np.arange(6), 1, 4))
    assert p.by_cat == {"host": 15, "sync": 10, "kernel": 40, "latency": 2, "runtime": 3}


def _thread_wait():
    """Thread 1: host 0 (0-4); host 2 (5-10) after 0 (lag 1) and after host 1 (0-5, thread 3: a join); Python 3 (10-100)
    that waited for thread 2's burst 5 and went on 10 before its range closed (tail -10); host 4 (100-120). Thread 2:
    host 5 (20-110), woken by 2 (lag 10)."""
    lanes = ("thread 1 (pid 1)", "thread 3 (pid 1)", "thread 2 (pid 1)")
    return graph([(0, 4, 0, "host", 0), (0, 5, 1, "host", 1), (5, 10, 0, "host", 2), (10, 100, 0, "python", NONE),
                  (100, 120, 0, "host", 4), (20, 110, 2, "host", 5)],
                 deps=[(2, 0, 1, LANE), (2, 1, 0, WAKE), (3, 2, 0, LANE), (4, 3, 0, LANE), (5, 2, 10, WAKE)],
                 waits={3: (5, -10)}, lanes=lanes)


def test_a_wait_for_work_that_ended_after_it_reads_that_work_as_observed():
    """Host 0 at 9 ns: host 2 then starts at 10 (9 + 1), 10-15; the burst (woken 10 after) 25-115. Python 3 waited for
    the burst, which ends later than Python did (the order of observed ends): the replay reads the burst's observed
    110 less 10, 100, so Python still ends at 100 (the node-by-node pass does the same); host 4 100-120."""
    g = _thread_wait()
    s, e = replay(g, Edit("x", dur={0: 9}))
    assert list(zip(s.tolist(), e.tolist())) == [(0, 9), (0, 5), (10, 15), (15, 100), (100, 120), (25, 115)]


def test_a_call_freed_from_its_wait_lasts_its_own_part_and_a_negative_tail_is_none():
    """Python 3 freed from its wait: its own part is its tail, clipped at 0 (it went on 10 before the burst ended: no
    time of its own): it lasts 0, 10-10, and host 4 runs 10-30. Given 50 ns too, it still lasts only its own part, 0."""
    g = _thread_wait()
    for edit in (Edit("x", unblock={3}), Edit("x", dur={3: 50}, unblock={3})):
        s, e = replay(g, edit)
        assert (s[3], e[3], s[4], e[4]) == (10, 10, 10, 30)


def test_a_node_two_nodes_go_on_from_moves_each_by_its_own_chain():
    """Host 0 (0-10) on thread 1 goes on to host 1 (10-20, then host 3 20-40) and launches kernel 2 (12-30, lag 2): two
    chains from node 0. Host 1 at 5 ns: 10-15, host 3 15-35; the kernel keeps 12-30. Host 0 at 4 ns: everything after
    it moves 6 earlier: 1 at 4-14, kernel 6-24, 3 at 14-34."""
    g = graph([(0, 10, 0, "host", 0), (10, 20, 0, "host", 1), (12, 30, 1, "kernel", 2), (20, 40, 0, "host", 3)],
              deps=[(1, 0, 0, LANE), (2, 0, 2, LAUNCH), (3, 1, 0, LANE)])
    s, e = replay(g, Edit("x", dur={1: 5}))
    assert list(zip(s.tolist(), e.tolist())) == [(0, 10), (10, 15), (12, 30), (15, 35)]
    s, e = replay(g, Edit("x", dur={0: 4}))
    assert list(zip(s.tolist(), e.tolist())) == [(0, 4), (4, 14), (6, 24), (14, 34)]


def test_the_first_node_of_a_chain_edited_moves_the_chain():
    """_two_steps' node 0 at 25 ns: 0-25, then 25-75, 75-105, 105-175."""
    g, _ = _two_steps()
    s, e = replay(g, Edit("x", dur={0: 25}))
    assert e.tolist() == [25, 75, 105, 175] and s.tolist() == [0, 25, 75, 105]


def test_the_anchor_may_be_the_threads_first_node():
    """Without aten::mm, Python 0-100 is the thread's first node and ends as the backward begins: the all-reduce moves
    to it (lag 0)."""
    wg, nccl, anchor, e = _overlap(_ddp(mm=False))
    assert int(wg.graph.start[anchor]) == 0 and e.rewire == {nccl: (anchor, 0)}


def test_without_a_backward_nothing_is_overlapped():
    """The same window with its autograd range named aten::foo: no backward begins, no collective moves."""
    assert _overlap(_ddp(backward="aten::foo"))[3].rewire == {}


def test_the_collectives_of_the_backward_are_its_communication_and_other_threads_collectives():
    """_ddp(0) with, in the backward, a launch 150-160 of gemm (170-260, stream 7) and one 350-360 of gemm2 (365-380),
    and thread 2 running gloo:all_reduce 305-700 (no size), woken by the backward's atom 160-300. Moved: the NCCL
    kernel (issued at 310, its own launch: lag 210 as before) and the gloo call (issued at 300, no size: lag 0, and
    the words say so); not the compute kernels, nor by the later launch of another kernel."""
    more = (ev("cudaLaunchKernel", Kind.RUNTIME, 150, 10, correlation=2), ev("gemm", Kind.KERNEL, 170, 90, correlation=2),
            ev("cudaLaunchKernel", Kind.RUNTIME, 350, 10, correlation=3),
            ev("gemm2", Kind.KERNEL, 365, 15, correlation=3), ev("gloo:all_reduce", Kind.CPU_OP, 305, 395, tid=2))
    wg, nccl, mm, e = _overlap(_ddp(0, more=more))
    g = wg.graph
    gloo = int(np.flatnonzero(g.cat == CAT["collective_host"])[0])
    assert g.lanes[int(g.lane[gloo])] == "thread 2 (pid 1)"
    assert e.rewire == {nccl: (mm, 210), gloo: (mm, 0)}
    assert "the trace gives no collective sizes" in e.what


def _two_steps_ddp(first):
    """Step 0 (0-100): aten::zero_ (`first` "plain") or an autograd range from the window's first ns ("backward").
    Step 1 (100-1100): _ddp moved by 100 (aten::mm 100-190, Python 190-195, the backward 200-500 launching the
    all-reduce at 400-410, NCCL 420-980 on stream 20, no size), with a broadcast launched at 195-200, just before
    the backward (stream 18, 450-460), and an NCCL kernel with no launch in the trace (stream 19, 430-440)."""
    head = ("aten::zero_" if first == "plain" else "autograd::engine::evaluate_function: X")
    return table([
        ev("ProfilerStep#0", Kind.USER_ANNOTATION, 0, 100), ev(head, Kind.CPU_OP, 0, 100),
        ev("ProfilerStep#1", Kind.USER_ANNOTATION, 100, 1000), ev("aten::mm", Kind.CPU_OP, 100, 90),
        ev("cudaLaunchKernel", Kind.RUNTIME, 195, 5, correlation=5),
        ev("autograd::engine::evaluate_function: MmBackward0", Kind.CPU_OP, 200, 300),
        ev("cudaLaunchKernel", Kind.RUNTIME, 400, 10, correlation=1),
        ev("cudaDeviceSynchronize", Kind.RUNTIME, 500, 500), ev("aten::add", Kind.CPU_OP, 1000, 100),
        ev("ncclKernel_AllReduce", Kind.COMM_KERNEL, 420, 560, correlation=1, stream=20),
        ev("ncclKernel_Broadcast", Kind.COMM_KERNEL, 450, 10, correlation=5, stream=18),
        ev("ncclKernel_Unlaunched", Kind.COMM_KERNEL, 430, 10, stream=19),
    ])


def test_each_steps_backward_moves_its_own_collectives_only():
    """Step 0 has no backward (or one at the window's first ns, with no node of the thread ended before it): nothing
    there. Step 1: its backward begins at 200, where the broadcast's launch ends (the anchor); the broadcast was
    issued then (0 ns into the backward: nothing to overlap), the unlaunched kernel has nothing that started it; the
    all-reduce, issued at 410, is moved to the anchor (no size: lag 0)."""
    for first in ("plain", "backward"):
        t = _two_steps_ddp(first)
        wg = WindowGraph(Context(t), build_digest(t))
        g = wg.graph
        assert [s.number for s in wg.spans] == [0, 1]
        anchor = int(np.flatnonzero((g.end == 200) & (g.lane == g.main_lane))[0])
        lanes = [g.lanes[int(x)] for x in g.lane]
        nccl = lanes.index("stream 20 (device 0)")
        assert overlap_edit(g, t, wg.spans, "x").rewire == {nccl: (anchor, 0)}


def test_of_many_nodes_ending_together_the_first_numbered_ends_the_step():
    """500 nodes ending at 100: node 0 (0-100) on the steps' thread, kernels 1-499 starting at 0 (even) or 50 (odd).
    The step's first node is node 0; its last is node 0 too, the first by number of the nodes in the order of their
    starts (a stable order: ties kept by number) that end last."""
    g = graph([(0, 100, 0, "host", 0)] + [(0 if i % 2 == 0 else 50, 100, 1, "kernel", i) for i in range(1, 500)])
    (s,) = step_spans(g, [_Step(1, 0, 100)])
    assert (s.first, s.last) == (0, 0) and s.nodes.tolist() == list(range(0, 500, 2)) + list(range(1, 500, 2))
