"""Step-boundary edges that no fixture reaches, by hand, against the rule stated in analysis/steps.py:
step i runs over [S_i, E_i), E_i = max(host end, end of the device work launched in its host
range) capped at S_{i+1} (the last step is not capped); intervals are half-open, so an event
that ends exactly at a step's end takes nothing of the next step, and one that starts exactly at
a step's start belongs to that step. Nested host collectives are one collective (communication.py).
"""
from _synthetic import ev, table

from canning_tb.analysis.build import build_digest
from canning_tb.ingest.table import Kind as K

CATS = ("compute", "overlapped", "communication", "memcpy", "memset", "device_wait", "runtime", "dataloader", "host",
        "idle")


def steps(*spans):
    return [ev(f"ProfilerStep#{i + 1}", K.USER_ANNOTATION, s, e - s) for i, (s, e) in enumerate(spans)]


def launch(t, corr):
    return ev("cudaLaunchKernel", K.RUNTIME, t, 10, correlation=corr)


def rows(d):
    """[(number, start, dur, {category: ns, nonzero only})] of the digest's steps."""
    out = []
    for s in d.steps:
        b = {c: getattr(s.breakdown, f"{c}_ns") for c in CATS}
        assert sum(b.values()) == s.dur_ns == s.breakdown.total_ns
        out.append((s.number, s.start_ns, s.dur_ns, {c: v for c, v in b.items() if v}))
    return out


def test_events_ending_exactly_at_a_step_end():
    d = build_digest(table(steps((0, 1000), (1000, 2000), (2000, 3000)) + [
        launch(100, 1), ev("k1", K.KERNEL, 200, 800, correlation=1),  # ends exactly at S_2
        ev("aten::mul", K.CPU_OP, 1900, 100),                          # ends exactly at step 2's host end
        launch(2100, 3), ev("k3", K.KERNEL, 2500, 501, correlation=3),  # last step: 1 ns past its host end
    ]))
    assert rows(d) == [
        (1, 0, 1000, {"compute": 800, "runtime": 10, "idle": 190}),
        (2, 1000, 1000, {"host": 100, "idle": 900}),
        (3, 2000, 1001, {"compute": 501, "runtime": 10, "idle": 490}),
    ]


def test_launch_exactly_at_a_host_end_is_not_in_the_step():
    """Host ranges are half-open: a launch at the host end of step 1 does not extend it, one a
    nanosecond before step 2's host end does (up to its kernel's end)."""
    d = build_digest(table(steps((0, 1000), (2000, 3000), (4000, 5000)) + [
        launch(1000, 1), ev("k1", K.KERNEL, 1100, 400, correlation=1),
        launch(2999, 2), ev("k2", K.KERNEL, 3100, 400, correlation=2),
        launch(4000, 3), ev("k3", K.KERNEL, 4500, 700, correlation=3),   # launched at step 3's start
        launch(-50, 4), ev("k0", K.KERNEL, 5300, 100, correlation=4),    # launched before the first step
    ]))
    assert rows(d) == [
        (1, 0, 1000, {"idle": 1000}),
        (2, 2000, 1500, {"compute": 400, "runtime": 10, "idle": 1090}),
        (3, 4000, 1200, {"compute": 700, "runtime": 10, "idle": 490}),
    ]


def test_kernel_past_the_next_step_start_is_split_at_the_cap():
    d = build_digest(table(steps((0, 1000), (1000, 2000)) + [launch(100, 1), ev("k1", K.KERNEL, 800, 500, correlation=1)]))
    assert rows(d) == [
        (1, 0, 1000, {"compute": 200, "runtime": 10, "idle": 790}),
        (2, 1000, 1000, {"compute": 300, "idle": 700}),
    ]


def test_device_collective_starting_exactly_at_a_step_start():
    d = build_digest(table(steps((0, 1000), (1000, 2000)) + [
        ev("k1", K.KERNEL, 500, 500),
        launch(400, 2), ev("ncclDevKernel_AllReduce_Sum_f32_RING_LL", K.COMM_KERNEL, 1000, 200, correlation=2),
    ]))
    assert rows(d) == [
        (1, 0, 1000, {"compute": 500, "runtime": 10, "idle": 490}),
        (2, 1000, 1000, {"communication": 200, "idle": 800}),
    ]
    (call,) = d.communication.calls
    assert (call.step, call.start_ns, call.dur_ns, call.kind) == (2, 1000, 200, "AllReduce")
    assert d.communication.not_overlapped_ns == 200 and d.communication.overlapped_ns == 0


def test_host_collective_starting_exactly_at_a_step_start():
    d = build_digest(table(steps((0, 1000), (1000, 2000)) + [
        ev("aten::add", K.CPU_OP, 400, 600),              # ends where the collective starts
        ev("c10d::allreduce_", K.CPU_OP, 1000, 100),
    ]))
    assert rows(d) == [
        (1, 0, 1000, {"host": 600, "idle": 400}),
        (2, 1000, 1000, {"communication": 100, "idle": 900}),
    ]
    (call,) = d.communication.calls
    assert (call.step, call.dur_ns) == (2, 100)


def test_nested_host_collectives_count_once():
    d = build_digest(table(steps((0, 1000)) + [
        ev("c10d::allreduce_", K.CPU_OP, 100, 300),
        ev("record_param_comms", K.USER_ANNOTATION, 110, 280),
        ev("c10d::allreduce_", K.CPU_OP, 120, 200),  # a nested re-dispatch of the same collective
    ]))
    assert rows(d) == [(1, 0, 1000, {"communication": 300, "idle": 700})]
    (c,) = d.communication.collectives
    assert (c.kind, c.calls, c.total_ns) == ("AllReduce", 1, 300)
    assert [(x.start_ns, x.dur_ns) for x in d.communication.calls] == [(100, 300)]
    assert d.communication.total_ns == 300


def test_gloo_worker_range_and_its_c10d_op_count_once():
    d = build_digest(table(steps((0, 1000)) + [
        ev("c10d::allreduce_", K.CPU_OP, 100, 50),
        ev("record_param_comms", K.USER_ANNOTATION, 105, 40),
        ev("gloo:all_reduce", K.USER_ANNOTATION, 120, 280, tid=2),  # gloo's worker thread
    ]))
    # one classification for the table and the breakdown: the worker range [120,400) is the
    # communication; the c10d op's own time before it, [100,120), is host work
    assert rows(d) == [(1, 0, 1000, {"communication": 280, "host": 20, "idle": 700})]
    (c,) = d.communication.collectives
    assert (c.kind, c.calls, c.total_ns) == ("AllReduce", 1, 280)


def test_steps_of_the_main_thread_only():
    """ProfilerStep ranges on two threads: the thread holding most of them makes the steps."""
    d = build_digest(table(steps((0, 1000), (1000, 2000), (2000, 3000))
                           + [ev("ProfilerStep#7", K.USER_ANNOTATION, 500, 100, tid=2)]))
    assert [(s.number, s.start_ns, s.dur_ns) for s in d.steps] == [(1, 0, 1000), (2, 1000, 1000), (3, 2000, 1000)]


def test_device_side_step_ranges_only_make_one_window_step():
    d = build_digest(table([ev("ProfilerStep#4", K.GPU_USER_ANNOTATION, 0, 900, device=0, pid=0),
                            ev("aten::add", K.CPU_OP, 100, 1000)]))
    assert [(s.number, s.start_ns, s.dur_ns) for s in d.steps] == [(0, 0, 1100)]


def test_the_last_step_is_distorted_only_past_five_percent_of_its_host_range():
    """The window's end (analysis/steps.py): the last step's tail is its device work's end past its host end;
    over 5 % of its host range (1000 ns here: more than 50 ns) the step is shown but left out of the average."""
    def last(tail):
        d = build_digest(table(steps((0, 1000), (1000, 2000)) + [
            launch(1500, 1), ev("k", K.KERNEL, 1600, 400 + tail, correlation=1),  # ends at 2000 + tail
        ]))
        s = d.steps[-1]
        return s.tail_ns, s.dur_ns, s.distorted, list(d.average_steps)

    assert last(50) == (50, 1050, False, [1, 2])  # 5 % exactly: kept
    assert last(51) == (51, 1051, True, [1])      # 1 ns more: distorted, the average over step 1 only
    assert last(0) == (0, 1000, False, [1, 2])
