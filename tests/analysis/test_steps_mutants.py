"""analysis/steps.py called directly on tables made by hand (issue 46's mutation round): which ranges are the
steps, where they end, which calls are device waits or waits for work queued before the window, and the
priority rule that splits the time. Every expected number is worked out in the test's comments from the rules
in steps.py's docstring; no digest is built, so the file stays fast."""
import numpy as np

from _synthetic import ev, table

from canning_tb.analysis import steps as st
from canning_tb.analysis.context import Context
from canning_tb.ingest.table import EventTable, Kind as K

MS = 1_000_000


def ps(n, ts, dur, kind=K.USER_ANNOTATION, **kw):
    return ev(f"ProfilerStep#{n}", kind, ts, dur, **kw)


def launch(t, corr, name="cudaLaunchKernel"):
    return ev(name, K.RUNTIME, t, 5, correlation=corr)


def pairs(iset):
    return list(zip(iset[0].tolist(), iset[1].tolist()))


def ts_of(t, rows):
    return t.events["ts"][rows].tolist()


def with_marks(events, marks):
    t = table(events)
    t.side = {"step_marks": [{"step": n, "start_ns": s, "end_ns": e} for n, s, e in marks]}
    return t


# -- which ranges are the steps ------------------------------------------------------------------------------


def test_step_rows_are_the_main_threads_host_ranges_in_time_order_first_of_each_number():
    """Thread (1, 5) holds four ProfilerStep ranges, (1, 2) and (2, 5) two each: (1, 5) is the main thread (a
    reading by pid only or by tid only would merge it with one of the others: six ranges). Its #2 at 150 repeats
    the number of the #2 at 0 (dropped); the numbers are not in time order, the steps are. A device-side range
    (GPU_USER_ANNOTATION) and a range on a device are no step, though on the main thread."""
    t = table([
        ps(2, 0, 50, tid=5), ps(1, 100, 50, tid=5), ps(2, 150, 10, tid=5), ps(3, 200, 50, tid=5),
        ps(8, 300, 10, tid=2), ps(9, 310, 10, tid=2),
        ps(5, 400, 10, pid=2, tid=5), ps(6, 410, 10, pid=2, tid=5),
        ps(4, 500, 10, kind=K.GPU_USER_ANNOTATION, tid=5), ps(7, 600, 10, device=0, tid=5),
        ev("ProfilerStep#x", K.USER_ANNOTATION, 700, 10, tid=5), ev("aten::add", K.CPU_OP, 20, 5, tid=5),
    ])
    rows, nums = st.step_rows(t)
    assert nums.tolist() == [2, 1, 3]
    assert ts_of(t, rows) == [0, 100, 200]


def test_step_rows_of_a_window_without_any():
    t = table([ev("aten::add", K.CPU_OP, 0, 5), ps(4, 10, 10, kind=K.GPU_USER_ANNOTATION)])
    for got in st.step_rows(t) + st.step_rows(table([ev("aten::add", K.CPU_OP, 0, 5)])):
        assert got.dtype == np.int64 and got.tolist() == []


def test_step_marks_drop_an_empty_first_and_last_mark_by_host_event_starts_only():
    """Marks (given unsorted) 5 [0,100), 6 [100,200), 7 [200,300), 8 [300,400). Host starts: 100, 250, 400; kernels
    at 50 and 350 are device events, no host work. Mark 5 holds no host start (100 is its end, outside), mark 8
    neither (400 is its end): both dropped; 6 holds 100 (its own start, inside), 7 holds 250."""
    t = with_marks([ev("aten::a", K.CPU_OP, 100, 10), ev("aten::b", K.CPU_OP, 250, 10),
                    ev("aten::c", K.CPU_OP, 400, 5), ev("k", K.KERNEL, 50, 10), ev("k", K.KERNEL, 350, 10)],
                   [(8, 300, 400), (5, 0, 100), (6, 100, 200), (7, 200, 300)])
    nums, starts, ends = st.mark_steps(t)
    assert (nums.tolist(), starts.tolist(), ends.tolist()) == ([6, 7], [100, 200], [200, 300])


def test_a_host_event_at_a_marks_start_holds_it():
    """Marks 0 [0,100), 1 [100,200), 2 [200,300); host starts at 0 and 200, each a mark's own start: kept."""
    t = with_marks([ev("aten::a", K.CPU_OP, 0, 10), ev("aten::b", K.CPU_OP, 200, 10)],
                   [(0, 0, 100), (1, 100, 200), (2, 200, 300)])
    assert st.mark_steps(t)[0].tolist() == [0, 1, 2]


def test_of_two_empty_marks_the_first_stays():
    """Two marks and no host start in either: the last is dropped first, then one remains, which stays."""
    t = with_marks([ev("aten::a", K.CPU_OP, 30, 10)], [(0, 0, 10), (1, 10, 20)])
    nums, starts, ends = st.mark_steps(t)
    assert (nums.tolist(), starts.tolist(), ends.tolist()) == ([0], [0], [10])


def test_no_marks_no_steps():
    for got in st.mark_steps(table([ev("aten::a", K.CPU_OP, 30, 10)])):
        assert got.dtype == np.int64 and got.tolist() == []


def test_host_steps_say_where_the_steps_come_from():
    marks = [(0, 0, 100), (1, 100, 200)]
    host = [ev("aten::a", K.CPU_OP, 10, 10), ev("aten::b", K.CPU_OP, 110, 10)]
    trace = with_marks(host + [ps(1, 0, 100), ps(2, 100, 150)], marks)  # the ProfilerStep ranges win
    nums, starts, ends, source = st.host_steps(trace)
    assert (nums.tolist(), starts.tolist(), ends.tolist(), source) == ([1, 2], [0, 100], [100, 250], "trace")
    nums, starts, ends, source = st.host_steps(with_marks(host, marks))
    assert (nums.tolist(), starts.tolist(), ends.tolist(), source) == ([0, 1], [0, 100], [100, 200], "step_marks")
    assert st.host_steps(table(host))[3] == "window"
    assert st.has_steps(trace) and st.has_steps(with_marks(host, marks)) and not st.has_steps(table(host))


def test_step_times_stay_exact_past_a_floats_53_bits():
    """Kineto writes ns since the epoch (about 2**60): the steps' starts and ends keep every ns."""
    t0 = 2**60 + 1
    nums, starts, ends, _ = st.host_steps(table([ps(1, t0, 10), ps(2, t0 + 11, 10)]))
    assert starts.dtype == np.int64 and ends.dtype == np.int64
    assert (starts.tolist(), ends.tolist()) == ([t0, t0 + 11], [t0 + 10, t0 + 21])


# -- where they end ------------------------------------------------------------------------------------------


def spans(t):
    nums, starts, ends, host_ends, clock = st.step_spans(t)
    assert all(a.dtype == np.int64 for a in (nums, starts, ends, host_ends))
    return nums.tolist(), starts.tolist(), ends.tolist(), host_ends.tolist(), clock


def test_a_window_without_steps_is_one_step_from_the_first_start_to_the_last_end():
    """aten::a [10,15), a kernel [30,40), aten::b [20,25): one step 0 over [10,40)."""
    t = table([ev("aten::a", K.CPU_OP, 10, 5), ev("k", K.KERNEL, 30, 10), ev("aten::b", K.CPU_OP, 20, 5)])
    assert spans(t) == ([0], [10], [40], [40], "host")
    assert spans(EventTable()) == ([0], [0], [0], [0], "host")


def device_bound(*firsts):
    """Steps [0,50), [100,150), [200,250) (host period 200 ns), each launching one 5 ns kernel 10 ns after its
    start; the kernels start at `firsts`."""
    events = []
    for i, first in enumerate(firsts):
        events += [ps(i + 1, 100 * i, 50), launch(100 * i + 10, i + 1), ev("k", K.KERNEL, first, 5, correlation=i + 1)]
    return table(events)


def test_steps_are_measured_on_the_device_when_its_period_is_over_five_percent_longer():
    """Device period 1211 - 1000 = 211 > 200 x 1.05 = 210: device clock. Step i runs from its first kernel to the
    next one's; the last to max(its host end 250, its kernel's end 1216, its first kernel 1211) = 1216."""
    ends = [1200, 1211, 1216]
    assert spans(device_bound(1000, 1200, 1211)) == ([1, 2, 3], [1000, 1200, 1211], ends, ends, "device")


def test_steps_stay_on_the_host_at_exactly_five_percent():
    """Device period 210 = 200 x 1.05 exactly: host clock. Step ends: max(host end, kernel end) capped at the next
    start: max(50, 1005) -> 100, max(150, 1205) -> 200, the last max(250, 1215) = 1215, not capped. Host ends:
    each host end, within the step."""
    assert spans(device_bound(1000, 1200, 1210)) == ([1, 2, 3], [0, 100, 200], [100, 200, 1215], [50, 150, 250], "host")


def test_device_bound_needs_three_steps_that_all_launched_in_time_order():
    """Two steps (one period): host clock, though the device's period, 200 ns, is the host's 100 x 2. A third
    kernel before the second (the device's firsts not increasing) or a step without device work: host clock
    too."""
    assert spans(device_bound(1000, 1200))[4] == "host"
    assert spans(device_bound(1000, 1300, 1250))[4] == "host"  # period 250 > 210, but 1250 < 1300
    no_work = table([ps(1, 0, 50), launch(10, 1), ev("k", K.KERNEL, 1000, 5, correlation=1), ps(2, 100, 50),
                     launch(110, 2), ev("k", K.KERNEL, 5000, 5, correlation=2), ps(3, 200, 50)])
    assert spans(no_work)[4] == "host"


def test_device_bound_by_the_function_itself():
    """Host steps start at 1000, 1100, 1200 (period 200); the device's firsts are given."""
    big = np.iinfo(np.int64).max
    starts = np.array([1000, 1100, 1200])

    def bound(firsts, waits=st.iv.EMPTY, at=starts):
        return st._device_bound(at, np.array(firsts), waits)

    assert bound([5000, 5200, 5211]) and not bound([5000, 5200, 5210])  # 211 > 200 x 1.05 = 210; 210 is not
    assert not bound([5000, big, 5500]) and not bound([5000, 5500], at=starts[:2])
    assert not bound([5000, 5000, 5300])  # two steps' device work starts at once: no period of its own
    assert bound([5000, 5001, 5300])      # 1 ns apart is increasing
    # 20 ns of the host's 200 waited for untraced work (clipped to [1000, 1200)): host 180, x 1.05 = 189
    waits = (np.array([950, 1150]), np.array([1010, 1160]))  # [950,1010) clipped to [1000,1010), and [1150,1160)
    assert bound([5000, 5100, 5190], waits) and not bound([5000, 5100, 5189], waits)
    # all three steps start at once: no host period; a host period of 1 ns, a device one of 2 ns (over 1.05)
    assert not bound([5000, 5100, 5300], at=np.array([7, 7, 7]))
    assert bound([5000, 5001, 5002], at=np.array([7, 7, 8]))


# -- blocking calls ------------------------------------------------------------------------------------------


def test_device_wait_rows_by_name_and_by_the_copy_they_launched():
    """Device waits: any *Synchronize* call and the vendors' blocking calls (cudaMemcpy, cudaFree), and async
    copies whose device copy goes to the host into memory not stated as pinned. Not: a launch, a copy to pinned
    memory, a copy to the device, a copy without a correlation, a host operator named like a sync."""
    t = table([
        ev("cudaDeviceSynchronize", K.RUNTIME, 0, 5), ev("aclrtSynchronizeStream", K.RUNTIME, 10, 5),
        ev("cudaMemcpy", K.RUNTIME, 20, 5), ev("cudaFree", K.RUNTIME, 30, 5), launch(40, 9),
        launch(50, 1, "cudaMemcpyAsync"), ev("Memcpy DtoH (Device -> Pageable)", K.MEMCPY, 1050, 5, correlation=1),
        launch(60, 2, "cudaMemcpyAsync"), ev("Memcpy DtoH (Device -> Pinned)", K.MEMCPY, 1060, 5, correlation=2),
        launch(70, 3, "cudaMemcpyAsync"), ev("Memcpy HtoD (Pageable -> Device)", K.MEMCPY, 1070, 5, correlation=3),
        launch(80, 4, "aclrtMemcpyAsync"), ev("Memcpy D2H", K.MEMCPY, 1080, 5, correlation=4),
        ev("cudaMemcpyAsync", K.RUNTIME, 90, 5), ev("Memcpy DtoH (Device -> Pageable)", K.MEMCPY, 1090, 5),
        ev("cudaDeviceSynchronize", K.CPU_OP, 100, 5),
    ])
    assert ts_of(t, st.device_wait_rows(t)) == [0, 10, 20, 30, 50, 80]
    assert st.device_wait_rows(table([ev("aten::a", K.CPU_OP, 0, 5)])).tolist() == []


def test_pageable_copies_are_async_copies_whose_device_copy_names_pageable_memory():
    t = table([
        launch(0, 1, "cudaMemcpyAsync"), ev("Memcpy HtoD (Pageable -> Device)", K.MEMCPY, 1000, 5, correlation=1),
        launch(10, 2, "cudaMemcpyAsync"), ev("Memcpy HtoD (Pinned -> Device)", K.MEMCPY, 1010, 5, correlation=2),
        launch(20, 3, "cudaMemcpy2DAsync"), ev("Memcpy DtoH (Device -> Pageable)", K.MEMCPY, 1020, 5, correlation=3),
        launch(30, 4), ev("Memcpy HtoD (Pageable -> Device)", K.MEMCPY, 1030, 5, correlation=4),  # a launch
        ev("cudaMemcpyAsync", K.RUNTIME, 40, 5), ev("Memcpy HtoD (Pageable -> Device)", K.MEMCPY, 1040, 5),
        ev("cudaMemcpyAsync", K.CPU_OP, 50, 5, correlation=6),  # a host operator
        ev("Memcpy HtoD (Pageable -> Device)", K.MEMCPY, 1050, 5, correlation=6),
        launch(55, 8, "cudaMemcpyAsync"), ev("Memcpy HtoD (Pageable -> Device)", K.MEMSET, 1055, 5, correlation=8),
        launch(60, 7, "cudaMemcpyAsyncX"), ev("Memcpy HtoD (Pageable -> Device)", K.MEMCPY, 1060, 5, correlation=7),
    ])
    assert ts_of(t, st.pageable_copies(t)) == [0, 20]


def untraced(events):
    return pairs(st.untraced_waits(table(events)))


def test_a_wait_before_the_first_device_work_counts_only_past_a_millisecond():
    """cudaStreamSynchronize from 0 for 5 ms; the first device event at 1 ms + 1 ns: a wait of 1,000,001 ns
    (over UNTRACED_MIN_NS, kept, up to that event); at 1 ms exactly: not over, none."""
    sync = ev("cudaStreamSynchronize", K.RUNTIME, 0, 5 * MS)
    assert untraced([sync, ev("k", K.KERNEL, MS + 1, 10)]) == [(0, MS + 1)]
    assert untraced([sync, ev("k", K.KERNEL, MS, 10)]) == []
    # it ends before the device work: up to its own end
    short = ev("cudaStreamSynchronize", K.RUNTIME, 0, 2 * MS)
    assert untraced([short, ev("k", K.KERNEL, 3 * MS, 10)]) == [(0, 2 * MS)]
    # after the first device work: the window's own (none); without device work: none
    assert untraced([ev("k", K.KERNEL, 0, 10), ev("cudaStreamSynchronize", K.RUNTIME, 20, 5 * MS)]) == []
    assert untraced([sync]) == []
    # at 2**60 ns (times since the epoch), to the ns
    t0 = 2**60 + 1
    at = ev("cudaStreamSynchronize", K.RUNTIME, t0, 5 * MS)
    assert untraced([at, ev("k", K.KERNEL, t0 + MS + 1, 10)]) == [(t0, t0 + MS + 1)]
    assert untraced([at, ev("k", K.KERNEL, t0 + MS, 10)]) == []


def test_a_free_is_no_wait_for_untraced_work_but_a_pageable_copy_is():
    """cudaFree / hipHostFree block, but at a cost of their own: left out. A cudaMemcpyAsync whose device copy
    names pageable memory waits for the stream's earlier work: [0, 3 ms) up to the first device event (its own
    copy at 3 ms). Two waits that overlap are one stretch."""
    kernel = ev("k", K.KERNEL, 3 * MS, 10)
    assert untraced([ev("cudaFree", K.RUNTIME, 0, 5 * MS), kernel]) == []
    assert untraced([ev("hipHostFree", K.RUNTIME, 0, 5 * MS), kernel]) == []
    copy = [ev("cudaMemcpyAsync", K.RUNTIME, 0, 4 * MS, correlation=1),
            ev("Memcpy HtoD (Pageable -> Device)", K.MEMCPY, 3 * MS, 10, correlation=1)]
    assert untraced(copy) == [(0, 3 * MS)]
    assert untraced(copy[:1] + [ev("cudaStreamSynchronize", K.RUNTIME, MS, 4 * MS), copy[1]]) == [(0, 3 * MS)]


# -- the window's end and queued work ------------------------------------------------------------------------


def distorted(starts, ends, host_ends, waits):
    tail, flags = st.distorted_steps(*(np.array(a, np.int64) for a in (starts, ends, host_ends, waits)))
    return tail.tolist(), flags.tolist()


def test_the_last_step_is_distorted_past_five_percent_of_its_host_range():
    """Host ranges of 100 ns: a tail of 5 ns is 5 % exactly (kept), 6 ns is over; a single step is never left
    out for its tail."""
    assert distorted([0, 100, 200], [100, 200, 305], [100, 200, 300], [0, 0, 0]) == ([0, 0, 5], [False] * 3)
    assert distorted([0, 100, 200], [100, 200, 306], [100, 200, 300], [0, 0, 0]) == ([0, 0, 6], [False, False, True])
    assert distorted([0], [1000], [100], [0]) == ([900], [False])


def test_a_step_that_waited_over_five_percent_for_queued_work_is_left_out_while_another_remains():
    """Steps of 100 ns: 6 ns of waits is over 5 % (left out), 5 ns is not. When every step would be left out,
    none is for its waits (the last may still be, for its tail)."""
    steps = [1000, 1100, 1200], [1100, 1200, 1300], [1100, 1200, 1300]
    assert distorted(*steps, [6, 5, 0])[1] == [True, False, False]
    assert distorted([0, 100, 200], [100, 200, 300], [100, 200, 300], [6, 6, 6])[1] == [False] * 3
    # the last step distorted by its tail (100 > 5), the first queued: every step would be out, so only the tail
    assert distorted([0, 100], [100, 300], [100, 200], [6, 0]) == ([0, 100], [False, True])
    # one step queued: nothing else remains
    assert distorted([0], [100], [100], [50])[1] == [False]


# -- the priority rule ---------------------------------------------------------------------------------------


def part(sets, hidden_only=False):
    sets = [(np.array([s for s, _ in x], np.int64), np.array([e for _, e in x], np.int64)) for x in sets]
    got = st.partition(sets, hidden_only=True) if hidden_only else st.partition(sets)  # False by default
    return {c: pairs(v) for c, v in got.items() if len(v[0])}


def test_the_lowest_category_wins_each_instant():
    """memcpy [30,40), memset [35,45), device wait [38,50), runtime [40,55), dataloader [50,60), host [30,70):
    each instant goes to the first that covers it: memcpy to 40, memset to 45, device wait to 50, runtime to 55,
    dataloader to 60, host to 70."""
    sets = [[], [], [(30, 40)], [(35, 45)], [(38, 50)], [(40, 55)], [(50, 60)], [(30, 70)]]
    assert part(sets) == {"memcpy": [(30, 40)], "memset": [(40, 45)], "device_wait": [(45, 50)],
                          "runtime": [(50, 55)], "dataloader": [(55, 60)], "host": [(60, 70)]}


def test_kernels_and_communication_split_into_compute_overlapped_and_communication():
    """Kernels [0,10), communication [5,15), runtime [0,20): compute [0,5), overlapped [5,10), communication
    [10,15), runtime [15,20). On a window without device work (hidden_only) bit 0 is host compute: it hides
    communication ([5,10) overlapped) but is otherwise no category of its own ([0,5) goes to runtime below)."""
    sets = [[(0, 10)], [(5, 15)], [], [], [], [(0, 20)], [], []]
    assert part(sets) == {"compute": [(0, 5)], "overlapped": [(5, 10)], "communication": [(10, 15)],
                          "runtime": [(15, 20)]}
    assert part(sets, hidden_only=True) == {"overlapped": [(5, 10)], "communication": [(10, 15)],
                                            "runtime": [(0, 5), (15, 20)]}
    assert part([[(0, 10)]] + [[]] * 7) == {"compute": [(0, 10)]}  # one interval: two points
    assert part([[]] * 8) == {} and sorted(st.partition([])) == sorted(st.CATEGORIES)
    assert not any(len(s) for v in st.partition([]).values() for s in v)


def test_host_compute_is_the_operators_off_the_communication_threads_less_the_collectives():
    """CPU-only window: gloo's worker range [100,400) on thread 2 is the communication. Host compute: the CPU_OPs
    of thread 1 (aten::mm [0,100) and [150,300)) less the collective op c10d::allreduce_ [50,150) = [0,50) and
    [150,300); aten::add [0,100) runs on thread 2, the communication's thread: not compute; a range
    (USER_ANNOTATION) is no operator."""
    t = table([ev("aten::mm", K.CPU_OP, 0, 100), ev("c10d::allreduce_", K.CPU_OP, 50, 100),
               ev("aten::mm", K.CPU_OP, 150, 150), ev("aten::add", K.CPU_OP, 300, 50, tid=2),
               ev("gloo:all_reduce", K.USER_ANNOTATION, 100, 300, tid=2), ev("my_range", K.USER_ANNOTATION, 0, 500)])
    names = [t.strings.values[i] for i in t.events["name"]]
    comm = np.array([n == "gloo:all_reduce" for n in names])
    assert pairs(st.host_compute(t, comm)) == [(0, 50), (150, 300)]
    # without communication every thread's operators count, the collective op still not
    assert pairs(st.host_compute(t, np.zeros(len(t), bool))) == [(0, 50), (150, 350)]


def test_category_sets_of_a_gpu_window_by_hand():
    """Kernel [10,40) and NCCL kernel [30,50); cudaLaunchKernel [0,5); cudaStreamSynchronize [50,60); memcpy
    [60,65), memset [62,70); enumerate(DataLoader)#_Iter [70,80) and aten::add [75,90) on the host; the step
    range [0,100) is no host work, nor is a Python function [92,97)."""
    t = table([ps(1, 0, 100), launch(0, 1), ev("k", K.KERNEL, 10, 30, correlation=1),
               ev("ncclDevKernel_AllReduce", K.COMM_KERNEL, 30, 20),
               ev("cudaStreamSynchronize", K.RUNTIME, 50, 10), ev("Memcpy HtoD", K.MEMCPY, 60, 5),
               ev("Memset", K.MEMSET, 62, 8), ev("enumerate(DataLoader)#_Iter", K.USER_ANNOTATION, 70, 10),
               ev("aten::add", K.CPU_OP, 75, 15), ev("nn.Module: M", K.PYTHON_FUNCTION, 92, 5)])
    got = {c: pairs(v) for c, v in st.category_sets(t).items() if len(v[0])}
    assert got == {"compute": [(10, 30)], "overlapped": [(30, 40)], "communication": [(40, 50)],
                   "device_wait": [(50, 60)], "memcpy": [(60, 65)], "memset": [(65, 70)], "runtime": [(0, 5)],
                   "dataloader": [(70, 80)], "host": [(80, 90)]}


def test_category_sets_of_a_window_without_device_work():
    """CPU-only: aten::mm [0,100) on thread 1 is host compute, gloo:all_reduce [50,150) on thread 2 the
    communication. Host compute hides it over [50,100) (overlapped); [0,50) is host time; [100,150) not hidden."""
    t = table([ev("aten::mm", K.CPU_OP, 0, 100), ev("gloo:all_reduce", K.USER_ANNOTATION, 50, 100, tid=2)])
    got = {c: pairs(v) for c, v in st.category_sets(t).items() if len(v[0])}
    assert got == {"host": [(0, 50)], "overlapped": [(50, 100)], "communication": [(100, 150)]}


def test_breakdowns_hold_the_wait_for_queued_work_apart_for_the_claims():
    """Step [0,5 ms); cudaStreamSynchronize [0,3 ms) with no traced device work yet (the first kernel, launched at
    3.1 ms, runs [3.2,4) ms): a wait for work queued before the window, 3 ms, over 5 % of the step, but the only
    step, so kept. The breakdown: device wait 3 ms, runtime 5 ns, compute 0.8 ms, idle the rest (5 - 3 - 0.8 ms
    - 5 ns). For the claims the 3 ms are no device wait but `untraced_wait`."""
    t = table([ps(1, 0, 5 * MS), ev("cudaStreamSynchronize", K.RUNTIME, 0, 3 * MS), launch(3_100_000, 1),
               ev("k", K.KERNEL, 3_200_000, 800_000, correlation=1)])
    ctx = Context(t)
    nums, starts, dur, res, tail, flags, clock = st.breakdowns(t, ctx)
    assert (nums.tolist(), starts.tolist(), dur.tolist(), tail.tolist(), flags.tolist(), clock) == \
        ([1], [0], [5 * MS], [0], [False], "host")
    assert all(v.dtype == np.int64 for v in res.values())
    assert {c: v.tolist() for c, v in res.items() if v.any()} == {
        "device_wait": [3 * MS], "runtime": [5], "compute": [800_000], "idle": [5 * MS - 3 * MS - 800_000 - 5],
        "untraced_wait": [3 * MS]}
    cats = {c: pairs(v) for c, v in ctx.categories.items() if len(v[0])}
    assert cats == {"compute": [(3_200_000, 4_000_000)], "runtime": [(3_100_000, 3_100_005)],
                    "untraced_wait": [(0, 3 * MS)]}
