"""The window's dependency graph (analysis/graph/build.py) on windows made by hand (issue 46, mutation testing):
every node, lane, category, dependency and wait listed by hand in each test's docstring (times in ns)."""
import numpy as np

from canning_tb.analysis.context import Context
from canning_tb.analysis.graph.build import (CATS, COINCIDE_NS, CROSS_STREAM, HELD_NS, LANE, LAUNCH, WAKE,
                                             build_graph)
from canning_tb.ingest.table import Kind
from _synthetic import ev, table

NONE = -1
DL = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _nodes(t, g):
    """(start, end, lane label, category, name of the node's row) per node."""
    names = [t.strings[int(t.events["name"][r])] if r >= 0 else "-" for r in g.row.tolist()]
    return [(int(s), int(e), g.lanes[int(l)], CATS[int(c)], x)
            for s, e, l, c, x in zip(g.start, g.end, g.lane, g.cat, names)]


def _deps(g, node):
    """(dependency, lag, kind) of a node, in the order they ended."""
    return [(int(g.dep_src[k]), int(g.dep_lag[k]), int(g.dep_kind[k])) for k in range(g.dep_ptr[node], g.dep_ptr[node + 1])]


def _every_kind(t0=0):
    """One 1000 ns step on thread 1: a DataLoader range 0-100 holding aten::copy_ 20-60; aten::mm 100-300 launching
    gemm (150-170, correlation 1); Python 300-320; c10d::allreduce_ 320-400 launching an NCCL kernel (330-340,
    correlation 2); a copy's launch 400-420 (3), a memset's 420-430 (4); cudaDeviceSynchronize 430-900; aten::add
    900-1000. Device: gemm 180-500, the copy 500-520 and the memset 520-530 on stream 7; NCCL 345-800 on stream 20.
    Every time moved by t0."""
    return table([dict(e, ts=e["ts"] + t0) for e in [
        ev("ProfilerStep#1", Kind.USER_ANNOTATION, 0, 1000),
        ev(DL, Kind.USER_ANNOTATION, 0, 100), ev("aten::copy_", Kind.CPU_OP, 20, 40),
        ev("aten::mm", Kind.CPU_OP, 100, 200), ev("cudaLaunchKernel", Kind.RUNTIME, 150, 20, correlation=1),
        ev("c10d::allreduce_", Kind.CPU_OP, 320, 80), ev("cudaLaunchKernel", Kind.RUNTIME, 330, 10, correlation=2),
        ev("cudaMemcpyAsync", Kind.RUNTIME, 400, 20, correlation=3),
        ev("cudaMemsetAsync", Kind.RUNTIME, 420, 10, correlation=4),
        ev("cudaDeviceSynchronize", Kind.RUNTIME, 430, 470), ev("aten::add", Kind.CPU_OP, 900, 100),
        ev("gemm", Kind.KERNEL, 180, 320, correlation=1),
        ev("ncclKernel_AllReduce", Kind.COMM_KERNEL, 345, 455, correlation=2, stream=20),
        ev("Memcpy HtoD (Pinned -> Device)", Kind.MEMCPY, 500, 20, correlation=3),
        ev("Memset (Device)", Kind.MEMSET, 520, 10, correlation=4),
    ]])


def test_every_kind_of_node_with_its_lane_and_category():
    """Thread 1's atoms: 0-100 the DataLoader's (its range and the copy inside it, one node named by its longest piece,
    the copy's 40 ns, the first of the two 40s); aten::mm 100-150 and 170-300 either side of its launch 150-170;
    Python 300-320; the all-reduce's host call 320-330 and 340-400 either side of its launch; the two launches; the
    synchronize; aten::add. Then stream 7 (gemm, copy, memset) and stream 20 (NCCL)."""
    t = _every_kind()
    g = build_graph(t, Context(t))
    th, s7, s20 = "thread 1 (pid 1)", "stream 7 (device 0)", "stream 20 (device 0)"
    assert _nodes(t, g) == [
        (0, 100, th, "dataloader", "aten::copy_"), (100, 150, th, "host", "aten::mm"),
        (150, 170, th, "runtime", "cudaLaunchKernel"), (170, 300, th, "host", "aten::mm"), (300, 320, th, "python", "-"),
        (320, 330, th, "collective_host", "c10d::allreduce_"), (330, 340, th, "runtime", "cudaLaunchKernel"),
        (340, 400, th, "collective_host", "c10d::allreduce_"), (400, 420, th, "runtime", "cudaMemcpyAsync"),
        (420, 430, th, "runtime", "cudaMemsetAsync"), (430, 900, th, "sync", "cudaDeviceSynchronize"),
        (900, 1000, th, "host", "aten::add"), (180, 500, s7, "kernel", "gemm"),
        (500, 520, s7, "memcpy", "Memcpy HtoD (Pinned -> Device)"), (520, 530, s7, "memset", "Memset (Device)"),
        (345, 800, s20, "communication", "ncclKernel_AllReduce")]
    assert g.lanes == [th, s7, s20] and g.main_lane == 0
    assert g.in_dataloader.tolist() == [True] + [False] * 15
    assert g.on_device.tolist() == [False] * 12 + [True] * 4
    assert g.dur.tolist() == (g.end - g.start).tolist()


def test_the_launches_bind_their_kernels_and_keep_the_windows_launch_latency():
    """gemm (12) starts 10 after its launch (2) ends, the NCCL kernel (15) 5 after its launch (6): both bound by their
    launch, the window's launch latency the median of 10 and 5, 7 (7.5 taken down). The copy (13) waits for gemm on
    its stream (ends 500, it starts at 500: bound, lag 0); its launch (8, ends 420) keeps the latency, 7, not its 80
    ns gap. The memset (14) after the copy likewise (its launch 9 ended at 430: min(90, 7)). Thread 1's atoms each
    depend on the one before, lag 0. The synchronize (10) waited for the NCCL kernel, the last device work to end
    before it returned (800), and took 100 more."""
    t = _every_kind()
    g = build_graph(t, Context(t))
    assert _deps(g, 12) == [(2, 10, LAUNCH)]
    assert _deps(g, 15) == [(6, 5, LAUNCH)]
    assert _deps(g, 13) == [(8, 7, LAUNCH), (12, 0, LANE)]
    assert _deps(g, 14) == [(9, 7, LAUNCH), (13, 0, LANE)]
    assert [_deps(g, n) for n in range(1, 12)] == [[(n - 1, 0, LANE)] for n in range(1, 12)]
    assert _deps(g, 0) == []
    assert [int(g.dep_src[b]) if b >= 0 else NONE for b in g.bind.tolist()] == [NONE] + list(range(11)) + [2, 12, 13, 6]
    assert g.wait_on.tolist() == [NONE] * 10 + [15] + [NONE] * 5
    assert g.wait_tail.tolist() == [0] * 10 + [100] + [0] * 5


def _held(gap, coincide, other_device=0, other_dur=None):
    """A kernel on stream 7 launched at 0-1 (correlation 1) starting `gap` after its launch, and an event on stream 20
    (launched at 2-3, correlation 2) starting at 3 and ending `coincide` before that kernel starts (or lasting
    `other_dur` from the kernel's start: it cannot have held it)."""
    k_start = 1 + gap
    other = ((3, k_start - coincide - 3) if other_dur is None else (k_start, other_dur))
    return table([
        ev("ProfilerStep#1", Kind.USER_ANNOTATION, 0, 100_000),
        ev("cudaLaunchKernel", Kind.RUNTIME, 0, 1, correlation=1),
        ev("cudaLaunchKernel", Kind.RUNTIME, 2, 1, correlation=2),
        ev("ncclKernel", Kind.COMM_KERNEL, other[0], other[1], correlation=2, stream=20, device=other_device),
        ev("gemm", Kind.KERNEL, k_start, 10, correlation=1),
    ])


def _cross(t):
    g = build_graph(t, Context(t))
    gemm = int(np.flatnonzero(g.cat == CATS.index("kernel"))[0])
    return [(int(g.dep_src[k]), int(g.dep_kind[k])) for k in range(g.dep_ptr[gemm], g.dep_ptr[gemm + 1])
            if g.dep_kind[k] == CROSS_STREAM]


def test_a_kernel_held_past_its_launch_waits_for_the_event_that_ended_just_before_it():
    """Held: started more than HELD_NS (2000) after its launch; by an event on another stream of its device ending at
    most COINCIDE_NS (10000) before it. At exactly 2000 it was not held; at 2001 it was, by the NCCL kernel ending
    10000 before (an edge) but not 10001 before; an event on another device holds nothing, nor one of 0 ns at the
    kernel's own start (it ends as the kernel starts, but began with it)."""
    assert _cross(_held(HELD_NS, 5)) == []
    assert len(_cross(_held(HELD_NS + 1, 5))) == 1
    assert len(_cross(_held(50_000, COINCIDE_NS))) == 1
    assert _cross(_held(50_000, COINCIDE_NS + 1)) == []
    assert _cross(_held(50_000, 5, other_device=1)) == []
    assert _cross(_held(50_000, 0, other_dur=0)) == []


MS = 1_000_000


def _backward_events(gap=1000, end=9 * MS, other_pid=1, sum_end=MS, burst_end=8_500_000, step=10 * MS, t0=0):
    """The steps' thread 1: ProfilerStep#1 0-`step` (10 ms), aten::sum 0-`sum_end` (1 ms), then nothing traced until
    aten::add `end`-`step`. Thread 2 (process `other_pid`): MmBackward0 1.5-5 ms and, `gap` after it, AddBackward0
    until `burst_end` (8.5 ms) (apart, so two nodes: touching host work of one thread is one node). All moved by t0."""
    return [
        ev("ProfilerStep#1", Kind.USER_ANNOTATION, t0, step), ev("aten::sum", Kind.CPU_OP, t0, sum_end),
        ev("aten::add", Kind.CPU_OP, t0 + end, step - end),
        ev("MmBackward0", Kind.CPU_OP, t0 + 1_500_000, 3_500_000, tid=2, pid=other_pid),
        ev("AddBackward0", Kind.CPU_OP, t0 + 5 * MS + gap, burst_end - 5 * MS - gap, tid=2, pid=other_pid),
    ]


def _backward_thread(**kw):
    return table(_backward_events(**kw))


def test_another_threads_burst_is_woken_by_the_steps_thread_which_waits_for_it():
    """Thread 1's nodes: aten::sum 0-1 ms (0), Python 1-9 ms (1), aten::add 9-10 ms (2); thread 2's: MmBackward0 (3),
    AddBackward0 (4), 1 µs apart: one burst. The burst starts after the atom of thread 1 that ended last before 1.5
    ms: aten::sum (a wake-up, lag 0.5 ms: it bound it). Python 1-9 ms stood beside it (7 ms of its 8, all the
    burst's 7) and went on 0.5 ms after it ended: it waited for its last node, with a tail of 0.5 ms."""
    t = _backward_thread()
    g = build_graph(t, Context(t))
    assert [(x[0], x[1], x[2], x[4]) for x in _nodes(t, g)] == [
        (0, MS, "thread 1 (pid 1)", "aten::sum"), (MS, 9 * MS, "thread 1 (pid 1)", "-"),
        (9 * MS, 10 * MS, "thread 1 (pid 1)", "aten::add"), (1_500_000, 5 * MS, "thread 2 (pid 1)", "MmBackward0"),
        (5 * MS + 1000, 8_500_000, "thread 2 (pid 1)", "AddBackward0")]
    assert _deps(g, 3) == [(0, 500_000, WAKE)]
    assert _deps(g, 4) == [(3, 1000, LANE)]
    assert (int(g.wait_on[1]), int(g.wait_tail[1])) == (4, 500_000)
    assert g.wait_on[[0, 2, 3, 4]].tolist() == [NONE] * 4


def test_bursts_split_past_a_millisecond_of_idle_time_and_stay_in_the_steps_process():
    """A gap of exactly 1 ms keeps one burst (Python still waits for its last node). 1 ms + 1 ns splits it: the
    second burst (6 ms + 1 to 8.5 ms) is woken by aten::sum too (the last thread 1 node to end before it: lag 0, as
    the thread's order bound it); Python (8 ms) overlaps it whole but 2.5 ms is under half its own time, and the
    first burst ended 4 ms before Python did (beyond the 1 ms reach): no wait. A thread of another process is no
    burst: no wake-up, no wait."""
    t = _backward_thread(gap=MS)
    g = build_graph(t, Context(t))
    assert _deps(g, 4) == [(3, MS, LANE)] and int(g.wait_on[1]) == 4
    t = _backward_thread(gap=MS + 1)
    g = build_graph(t, Context(t))
    assert _deps(g, 4) == [(0, 0, WAKE), (3, MS + 1, LANE)]
    assert int(g.wait_on[1]) == NONE
    t = _backward_thread(other_pid=2)
    g = build_graph(t, Context(t))
    assert _deps(g, 3) == [] and int(g.wait_on[1]) == NONE


def test_a_blocking_copy_depends_on_the_work_before_its_call_and_the_call_waits_for_it():
    """aten::item 0-100 holds cudaMemcpy 10-90 (correlation 5), a blocking call that issues its own copy, DtoH 20-80:
    the copy depends on aten::item's atom before the call (0-10, lag 10: it bound it), not on the call (else each would
    wait for the other); the call waited for it and returned 10 after it ended."""
    t = table([
        ev("ProfilerStep#1", Kind.USER_ANNOTATION, 0, 100), ev("aten::item", Kind.CPU_OP, 0, 100),
        ev("cudaMemcpy", Kind.RUNTIME, 10, 80, correlation=5),
        ev("Memcpy DtoH (Device -> Pageable)", Kind.MEMCPY, 20, 60, correlation=5),
    ])
    g = build_graph(t, Context(t))
    assert [(x[0], x[1], x[3], x[4]) for x in _nodes(t, g)] == [
        (0, 10, "host", "aten::item"), (10, 90, "sync", "cudaMemcpy"), (90, 100, "host", "aten::item"),
        (20, 80, "memcpy", "Memcpy DtoH (Device -> Pageable)")]
    assert _deps(g, 3) == [(0, 10, LAUNCH)]
    assert (int(g.wait_on[1]), int(g.wait_tail[1])) == (3, 10)


def test_device_work_without_a_stream_or_a_device_is_named_so():
    """Kernels on stream 3 of no known device, and on no known stream of device 0 (the thread holding only the step
    has no atom: no lane)."""
    t = table([ev("ProfilerStep#1", Kind.USER_ANNOTATION, 0, 100), ev("k1", Kind.KERNEL, 10, 5, device=NONE, stream=3),
               ev("k2", Kind.KERNEL, 20, 5, stream=NONE)])
    g = build_graph(t, Context(t))
    assert g.lanes == ["stream 3 (device unknown)", "device work, stream unknown (device 0)"]


def _npu_sync(fmt):
    """torch_npu's layout: aten::_local_scalar_dense 0-100 on thread 5 of process 1, the CANN call
    AscendCL@aclrtSynchronizeStream 10-90 under process 2 with the same thread id; a kernel 20-80 on stream 7."""
    return table([
        ev("ProfilerStep#1", Kind.USER_ANNOTATION, 0, 100, tid=5),
        ev("aten::_local_scalar_dense", Kind.CPU_OP, 0, 100, tid=5),
        ev("AscendCL@aclrtSynchronizeStream", Kind.RUNTIME, 10, 80, tid=5, pid=2),
        ev("kernel", Kind.KERNEL, 20, 60),
    ], fmt=fmt)


def test_on_torch_npu_a_thread_is_its_tid_so_the_cann_call_nests_in_its_operator():
    """Ascend: one thread (tid 5), the synchronize inside the operator: 0-10, 10-90 (a wait for the kernel, tail 10),
    90-100, labelled by the first event's process. Kineto keeps the two processes' threads apart: the operator's
    0-100 has the call's time in it, and the call is alone on thread 5 of process 2."""
    t = _npu_sync("ascend")
    g = build_graph(t, Context(t))
    assert [(x[0], x[1], x[2], x[3]) for x in _nodes(t, g)][:3] == [
        (0, 10, "thread 5 (pid 1)", "host"), (10, 90, "thread 5 (pid 1)", "sync"), (90, 100, "thread 5 (pid 1)", "host")]
    assert (int(g.wait_on[1]), int(g.wait_tail[1])) == (3, 10)
    t = _npu_sync("kineto")
    g = build_graph(t, Context(t))
    assert [(x[0], x[1], x[2]) for x in _nodes(t, g)][:2] == [(0, 100, "thread 5 (pid 1)"), (10, 90, "thread 5 (pid 2)")]


def test_the_digest_keeps_each_steps_path_by_category_and_its_pieces():
    """The step of _every_kind walked back: aten::add 900-1000, the synchronize's tail 800-900, the NCCL kernel it
    waited for 345-800, the launch's latency 340-345, the launch 330-340, the all-reduce's call 320-330, Python
    300-320, aten::mm 170-300, its launch 150-170, aten::mm 100-150, the DataLoader 0-100. By category: host 100 + 130
    + 50 = 280, sync 100, communication 455, latency 5, runtime 10 + 20 = 30, collective_host 10, python 20,
    dataloader 100 (1000 in all); every piece kept (fewer than 64), in time order, with its lane and event."""
    from canning_tb.analysis.build import build_digest
    d = build_digest(_every_kind())
    (p,) = d.critical_path
    assert (p.number, p.start_ns, p.dur_ns, p.segments_total) == (1, 0, 1000, 11)
    assert dict(p.by_category) == {"host": 280, "sync": 100, "communication": 455, "latency": 5, "runtime": 30,
                                   "collective_host": 10, "python": 20, "dataloader": 100}
    th = "thread 1 (pid 1)"
    assert [(s.lane, s.category, s.ts_ns, s.dur_ns, s.name) for s in p.segments] == [
        (th, "dataloader", 0, 100, "aten::copy_"), (th, "host", 100, 50, "aten::mm"),
        (th, "runtime", 150, 20, "cudaLaunchKernel"), (th, "host", 170, 130, "aten::mm"), (th, "python", 300, 20, ""),
        (th, "collective_host", 320, 10, "c10d::allreduce_"), (th, "runtime", 330, 10, "cudaLaunchKernel"),
        ("", "latency", 340, 5, ""), ("stream 20 (device 0)", "communication", 345, 455, "ncclKernel_AllReduce"),
        (th, "sync", 800, 100, "cudaDeviceSynchronize"), (th, "host", 900, 100, "aten::add")]


def test_the_digest_keeps_the_64_longest_pieces_ties_first_in_time():
    """40 operators of 10 ns, each after 5 ns of Python (0-5 Python, 5-15 op, 15-20 Python, ...): 80 pieces. Kept: the
    40 operators and, of the 40 Python pieces of 5 ns, the first 24 (ties in path order), listed in time order."""
    from canning_tb.analysis.build import build_digest
    t = table([ev("ProfilerStep#1", Kind.USER_ANNOTATION, 0, 600)]
              + [ev(f"op{i}", Kind.CPU_OP, 15 * i + 5, 10) for i in range(40)])
    (p,) = build_digest(t).critical_path
    assert p.segments_total == 80 and len(p.segments) == 64
    python = [s.ts_ns for s in p.segments if s.category == "python"]
    assert python == [15 * i for i in range(24)]
    assert [s.name for s in p.segments if s.category == "host"] == [f"op{i}" for i in range(40)]
    assert [s.ts_ns for s in p.segments] == sorted(s.ts_ns for s in p.segments)


def test_a_range_marks_everything_nested_in_it_at_any_depth():
    """DataLoader 0-50 > aten::to 10-40 > aten::copy_ 20-30: all data loading (two levels down), one node of five
    10 ns pieces named by the first (the DataLoader's). c10d::allreduce_ 50-90 > aten::empty 60-70: the host call of a
    collective, one node named by its longest piece (70-90, the collective's own). Python 90-100."""
    t = table([ev("ProfilerStep#1", Kind.USER_ANNOTATION, 0, 100), ev(DL, Kind.USER_ANNOTATION, 0, 50),
               ev("aten::to", Kind.CPU_OP, 10, 30), ev("aten::copy_", Kind.CPU_OP, 20, 10),
               ev("c10d::allreduce_", Kind.CPU_OP, 50, 40), ev("aten::empty", Kind.CPU_OP, 60, 10)])
    g = build_graph(t, Context(t))
    assert [(x[0], x[1], x[3], x[4]) for x in _nodes(t, g)] == [
        (0, 50, "dataloader", DL), (50, 90, "collective_host", "c10d::allreduce_"), (90, 100, "python", "-")]
    assert g.in_dataloader.tolist() == [True, False, False]


def test_launches_are_joined_to_their_kernels_by_correlation_in_any_order():
    """Launch A 10-12 (correlation 5), launch B 20-22 (3), and one without a correlation 24-26; kernel X 30-40 (3)
    after B, kernel Y 50-60 (5) after A and after X on its stream, kernel Z 70-80 (99) launched by nothing the trace
    holds: after Y on the stream only."""
    t = table([ev("ProfilerStep#1", Kind.USER_ANNOTATION, 0, 100),
               ev("cudaLaunchKernel", Kind.RUNTIME, 10, 2, correlation=5),
               ev("cudaLaunchKernel", Kind.RUNTIME, 20, 2, correlation=3), ev("cudaLaunchKernel", Kind.RUNTIME, 24, 2),
               ev("X", Kind.KERNEL, 30, 10, correlation=3), ev("Y", Kind.KERNEL, 50, 10, correlation=5),
               ev("Z", Kind.KERNEL, 70, 10, correlation=99)])
    g = build_graph(t, Context(t))
    names = [x[4] for x in _nodes(t, g)]
    launch_a, launch_b = names.index("cudaLaunchKernel"), names.index("cudaLaunchKernel") + 2
    assert [(x[0], x[1]) for x in _nodes(t, g)][launch_a] == (10, 12)
    assert [(x[0], x[1]) for x in _nodes(t, g)][launch_b] == (20, 22)
    x, y, z = names.index("X"), names.index("Y"), names.index("Z")
    assert [(s, k) for s, _, k in _deps(g, x)] == [(launch_b, LAUNCH)]
    assert [(s, k) for s, _, k in _deps(g, y)] == [(launch_a, LAUNCH), (x, LANE)]
    assert [(s, k) for s, _, k in _deps(g, z)] == [(y, LANE)]


def test_the_thread_waits_for_a_burst_only_when_it_goes_on_within_a_millisecond_of_its_end():
    """The burst 1.5-8.5 ms (7 ms: its reach is max(0.7 ms, 1 ms) = 1 ms either side of its end). Python 1-9.5 ms (7
    of its 8.5 ms beside the burst) went on exactly 1 ms after: it waited (tail 1 ms); 1 ns later it did not. Python
    1-7.5 ms (6 of its 6.5 ms, 6 of the burst's 7) went on 1 ms before the burst's range closed: it waited, with a tail
    of -1 ms (the worker signalled before its range closed); 1 ns earlier it did not."""
    for end, wait, tail in ((9_500_000, 4, MS), (9_500_001, NONE, 0), (7_500_000, 4, -MS), (7_499_999, NONE, 0)):
        t = _backward_thread(end=end)
        g = build_graph(t, Context(t))
        assert (int(g.end[1]), int(g.wait_on[1]), int(g.wait_tail[1])) == (end, wait, tail)


def test_the_thread_waits_for_a_burst_only_when_it_stood_beside_half_of_it():
    """Python 5-9 ms beside the burst 1.5-8.5 ms: 3.5 ms of the burst's 7, exactly half: it waited. From 5 ms + 1 ns:
    1 ns under half: it did not."""
    t = _backward_thread(sum_end=5 * MS)
    g = build_graph(t, Context(t))
    assert (int(g.start[1]), int(g.wait_on[1])) == (5 * MS, 4)
    t = _backward_thread(sum_end=5 * MS + 1)
    g = build_graph(t, Context(t))
    assert (int(g.start[1]), int(g.wait_on[1])) == (5 * MS + 1, NONE)


def test_the_digest_keeps_the_longest_pieces_first_in_time_among_many_ties():
    """200 operators of 10 ns, each after 5 ns of Python, in a step from 1000 to 4000 (the last ends at 4000): of the
    400 pieces the 64 kept are operators 0 to 63, the first in time of the 200 equally long (an unstable sort would
    keep others); the step's start and length as the step's."""
    from canning_tb.analysis.build import build_digest
    t = table([ev("ProfilerStep#1", Kind.USER_ANNOTATION, 1000, 3000)]
              + [ev(f"op{i}", Kind.CPU_OP, 1000 + 15 * i + 5, 10) for i in range(200)])
    (p,) = build_digest(t).critical_path
    assert (p.start_ns, p.dur_ns, p.segments_total) == (1000, 3000, 400)
    assert [s.name for s in p.segments] == [f"op{i}" for i in range(64)]


def test_the_window_graph_keeps_the_steps_the_average_keeps():
    """A digest whose average keeps steps 2 and 3 (made by hand): the replays' steps are those two."""
    from canning_tb.analysis import digest_pb2 as pb
    from canning_tb.analysis.graph.section import WindowGraph
    t = _every_kind()
    d = pb.Digest()
    d.average_steps.extend([2, 3])
    assert WindowGraph(Context(t), d).kept == {2, 3}


def test_the_digests_pieces_name_the_windows_first_event_and_leave_a_nameless_one_blank():
    """aten::first 0-50 (the table's first row) starts before the step (10-100), then a runtime call with no name
    50-100: the step's path is aten::first 10-50 (cut at the step's start) and the nameless call, named ""."""
    from canning_tb.analysis.build import build_digest
    t = table([ev("aten::first", Kind.CPU_OP, 0, 50), ev("ProfilerStep#1", Kind.USER_ANNOTATION, 10, 90),
               ev("", Kind.RUNTIME, 50, 50)])
    assert t.strings[int(t.events["name"][0])] == "aten::first"
    (p,) = build_digest(t).critical_path
    assert [(s.ts_ns, s.dur_ns, s.name) for s in p.segments] == [(10, 40, "aten::first"), (50, 50, "")]


def _copy_call(first_thread_op=False, tail=True):
    """aten::item 0-100 (0-90 without `tail`, the step too) on thread 1 holding cudaMemcpy 10-90 (correlation 5), which issues the
    copy DtoH 20-80; with `first_thread_op`, thread 0 runs aten::zero_ 0-5 (its atoms come first)."""
    end = 100 if tail else 90  # the step ends with aten::item: nothing after the call on its thread
    return table([ev("ProfilerStep#1", Kind.USER_ANNOTATION, 0, end), ev("aten::item", Kind.CPU_OP, 0, end),
                   ev("cudaMemcpy", Kind.RUNTIME, 10, 80, correlation=5),
                   ev("Memcpy DtoH (Device -> Pageable)", Kind.MEMCPY, 20, 60, correlation=5)]
                  + ([ev("aten::zero_", Kind.CPU_OP, 0, 5, tid=0)] if first_thread_op else []))


def test_a_blocking_copy_depends_on_the_atom_before_its_call_on_the_calls_own_thread():
    """As above, with another thread's atom first (node 0), or the call ending its thread (nothing after it): the copy
    still depends on aten::item's 0-10 on thread 1."""
    for t in (_copy_call(first_thread_op=True), _copy_call(tail=False)):
        g = build_graph(t, Context(t))
        nodes = _nodes(t, g)
        item = nodes.index((0, 10, "thread 1 (pid 1)", "host", "aten::item"))
        copy = [x[3] for x in nodes].index("memcpy")
        assert [(s, k) for s, _, k in _deps(g, copy)] == [(item, LAUNCH)]


def test_a_kernel_of_no_length_is_a_node_and_a_graph_needs_no_context_given():
    """A kernel of 0 ns at 10 on stream 7 is a node of its own; build_graph without a Context makes its own."""
    t = table([ev("ProfilerStep#1", Kind.USER_ANNOTATION, 0, 100), ev("aten::add", Kind.CPU_OP, 0, 100),
               ev("k0", Kind.KERNEL, 10, 0)])
    g = build_graph(t)
    assert _nodes(t, g) == [(0, 100, "thread 1 (pid 1)", "host", "aten::add"), (10, 10, "stream 7 (device 0)", "kernel", "k0")]


def test_the_reach_of_a_burst_holds_at_epoch_ns_and_grows_with_a_long_burst():
    """The boundary cases above with every time 1.7e18 ns later (a Unix epoch in ns: float64 keeps multiples of 256
    there): Python ending 1 ms after the burst still waited, 1 ms + 1 ns did not. A burst of 30 ms (1.5-31.5 ms,
    reach 3 ms): Python 1-34.5 ms (30 of its 33.5 ms beside it) went on exactly 3 ms after it: it waited."""
    t0 = 1_700_000_000_000_000_000
    for end, wait in ((9_500_000, 4), (9_500_001, NONE)):
        t = _backward_thread(end=end, t0=t0)
        g = build_graph(t, Context(t))
        assert (int(g.end[1]) - t0, int(g.wait_on[1])) == (end, wait)
    t = _backward_thread(end=34_500_000, burst_end=31_500_000, step=40 * MS)
    g = build_graph(t, Context(t))
    assert (int(g.end[1]), int(g.wait_on[1]), int(g.wait_tail[1])) == (34_500_000, 4, 3 * MS)


def test_a_burst_that_starts_as_the_threads_node_ends_is_woken_by_that_node():
    """aten::sum 0-1.5 ms ends exactly as the burst starts: it woke it (lag 0)."""
    t = _backward_thread(sum_end=1_500_000)
    g = build_graph(t, Context(t))
    assert _deps(g, 3) == [(0, 0, WAKE)]


def test_each_other_thread_has_its_own_bursts_and_another_process_none():
    """Thread 2 as before (one burst); thread 3 runs aten::a 7-7.5 ms and aten::b 1 µs later, 7.501-8 ms: one burst
    of its own, woken once (its first node), its second node after its first only. A thread of another process
    whose first event is the table's first row (X at -0.2 ms, then Y at 3 ms) is no burst: no wake-up."""
    extra = [ev("aten::a", Kind.CPU_OP, 7 * MS, 500_000, tid=3), ev("aten::b", Kind.CPU_OP, 7_501_000, 499_000, tid=3)]
    t = table(_backward_events() + extra)
    g = build_graph(t, Context(t))
    names = [x[4] for x in _nodes(t, g)]
    a, b = names.index("aten::a"), names.index("aten::b")
    assert [k for _, _, k in _deps(g, a)] == [WAKE] and _deps(g, b) == [(a, 1000, LANE)]
    x = [ev("X", Kind.CPU_OP, -200_000, 100_000, tid=5, pid=2), ev("Y", Kind.CPU_OP, 3 * MS, 100_000, tid=5, pid=2)]
    t = table(x + _backward_events(other_pid=2))
    assert t.strings[int(t.events["name"][0])] == "X"
    g = build_graph(t, Context(t))
    assert WAKE not in g.dep_kind.tolist()


def test_every_kind_of_node_at_epoch_ns():
    """_every_kind 1.7e18 ns later (a float64 keeps only multiples of 256 there, more than most atoms last): the same
    nodes, moved."""
    t0 = 1_700_000_000_000_000_000
    t, u = _every_kind(), _every_kind(t0)
    g, h = build_graph(t, Context(t)), build_graph(u, Context(u))
    assert [(a + t0, b + t0, *x) for a, b, *x in _nodes(t, g)] == _nodes(u, h)


def test_windows_without_steps_without_host_work_or_with_a_thread_of_steps_only():
    """No ProfilerStep: the thread holding the most event time (thread 1, 100 ns in a DataLoader range, against thread
    2's 20 ns in two operators) holds the steps. Only device work: one node, no host node. The steps on thread 1 alone and an
    operator on thread 2 (50-1050) across the two steps' boundary at 100: thread 2's operator is one node; the
    thread holding the steps has no node of its own (no lane holds the steps)."""
    t = table([ev(DL, Kind.CPU_OP, 0, 100), ev("aten::b", Kind.CPU_OP, 5, 10, tid=2),
               ev("aten::c", Kind.CPU_OP, 20, 10, tid=2)])
    g = build_graph(t, Context(t))
    assert g.lanes[g.main_lane] == "thread 1 (pid 1)"
    # the DataLoader range is the table's first row: its node is named and marked by it
    assert _nodes(t, g) == [(0, 100, "thread 1 (pid 1)", "dataloader", DL), (5, 15, "thread 2 (pid 1)", "host", "aten::b"),
                            (20, 30, "thread 2 (pid 1)", "host", "aten::c")]
    t = table([ev("k", Kind.KERNEL, 10, 5)])
    g = build_graph(t, Context(t))
    assert _nodes(t, g) == [(10, 15, "stream 7 (device 0)", "kernel", "k")]
    t = table([ev("ProfilerStep#1", Kind.USER_ANNOTATION, 0, 100), ev("ProfilerStep#2", Kind.USER_ANNOTATION, 100, 100),
               ev("aten::long", Kind.CPU_OP, 50, 1000, tid=2)])
    g = build_graph(t, Context(t))
    assert _nodes(t, g) == [(50, 1050, "thread 2 (pid 1)", "host", "aten::long")] and g.main_lane == NONE


def test_a_launch_that_binds_no_kernel_keeps_no_latency():
    """Kernel A (no launch in the trace) 10-50, then kernel B 50-60 on the same stream, launched at 20-22: B waited
    for A (bound by its stream), so no launch bound a kernel and the window's launch latency is 0: B's launch keeps a
    lag of 0."""
    t = table([ev("ProfilerStep#1", Kind.USER_ANNOTATION, 0, 100), ev("cudaLaunchKernel", Kind.RUNTIME, 20, 2, correlation=2),
               ev("A", Kind.KERNEL, 10, 40), ev("B", Kind.KERNEL, 50, 10, correlation=2)])
    g = build_graph(t, Context(t))
    names = [x[4] for x in _nodes(t, g)]
    assert _deps(g, names.index("B")) == [(names.index("cudaLaunchKernel"), 0, LAUNCH), (names.index("A"), 0, LANE)]
    assert int(g.bind[names.index("A")]) == NONE  # A depends on nothing: nothing bound it


def test_on_torch_npu_without_a_shared_thread_id_the_threads_are_the_contexts():
    """Ascend, the CANN call under the operator's own process (pid 1, tid 5): the context's nesting serves; the call is
    inside the operator."""
    t = table([ev("ProfilerStep#1", Kind.USER_ANNOTATION, 0, 100, tid=5), ev("aten::_local_scalar_dense", Kind.CPU_OP, 0, 100, tid=5),
               ev("AscendCL@aclrtSynchronizeStream", Kind.RUNTIME, 10, 80, tid=5), ev("kernel", Kind.KERNEL, 20, 60)],
              fmt="ascend")
    g = build_graph(t, Context(t))
    assert [(x[0], x[1], x[3]) for x in _nodes(t, g)][:3] == [(0, 10, "host"), (10, 90, "sync"), (90, 100, "host")]


def test_atoms_merge_on_their_thread_but_not_across_a_steps_end():
    """Two touching operators (0-50, 50-100) and nothing else: one node, named by the first of the equally long. The
    step 0-100 and aten::x 50-150 on its thread: Python 0-50, aten::x 50-100 and 100-150 (the step's end cuts it).
    Thread 2's MmBackward0 and AddBackward0 touching (no gap): one node."""
    t = table([ev("aten::p", Kind.CPU_OP, 0, 50), ev("aten::q", Kind.CPU_OP, 50, 50)])
    assert _nodes(t, build_graph(t, Context(t))) == [(0, 100, "thread 1 (pid 1)", "host", "aten::p")]
    t = table([ev("ProfilerStep#1", Kind.USER_ANNOTATION, 0, 100), ev("aten::x", Kind.CPU_OP, 50, 100)])
    assert [(x[0], x[1], x[4]) for x in _nodes(t, build_graph(t, Context(t)))] == [
        (0, 50, "-"), (50, 100, "aten::x"), (100, 150, "aten::x")]
    t = _backward_thread(gap=0)
    assert [(x[0], x[1], x[4]) for x in _nodes(t, build_graph(t, Context(t))) if x[2] == "thread 2 (pid 1)"] == [
        (1_500_000, 8_500_000, "MmBackward0")]


def test_a_range_marks_what_is_nested_in_it_without_steps():
    """The DataLoader > aten::to > aten::copy_ of test_a_range_marks_... without the ProfilerStep (the DataLoader at
    depth 0): all of it data loading, one node."""
    t = table([ev(DL, Kind.USER_ANNOTATION, 0, 50), ev("aten::to", Kind.CPU_OP, 10, 30), ev("aten::copy_", Kind.CPU_OP, 20, 10)])
    assert [(x[0], x[1], x[3]) for x in _nodes(t, build_graph(t, Context(t)))] == [(0, 50, "dataloader")]


def test_an_asynchronous_copy_to_pageable_memory_blocks():
    """cudaMemcpyAsync 10-90 whose copy (20-80) goes from the device to pageable memory: the call blocks until the copy
    is done (it is a wait: tail 10)."""
    t = table([ev("ProfilerStep#1", Kind.USER_ANNOTATION, 0, 100), ev("cudaMemcpyAsync", Kind.RUNTIME, 10, 80, correlation=5),
               ev("Memcpy DtoH (Device -> Pageable)", Kind.MEMCPY, 20, 60, correlation=5)])
    g = build_graph(t, Context(t))
    nodes = _nodes(t, g)
    call = [x[4] for x in nodes].index("cudaMemcpyAsync")
    assert nodes[call][3] == "sync" and int(g.wait_tail[call]) == 10
