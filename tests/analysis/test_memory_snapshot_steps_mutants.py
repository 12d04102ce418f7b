"""Growth per step, leaks and the transient bytes at the peak (analysis/memory_snapshot/steps.growth, leaks,
transient_at) and the bounds summarize() puts on its lists, on snapshots of a few entries written here; every
figure counted by hand in the comments (issue 46: the survivors of a mutation run over these functions)."""
from test_memory_snapshot_mutants import e, fr, seg, snap, step_history

from canning_tb.analysis.memory_snapshot import steps, summary
from canning_tb.analysis.memory_snapshot.replay import replay


def six_and_six():
    """One step [0, 18) at 100 ... 117 µs: k0 ... k5 (100 ... 600 B) kept; then t0 ... t5 (1 ... 6 B), the peak
    after the last of them (entry 11: 2100 + 21 B), each freed before the step ends."""
    trace = [e("alloc", 1024 * k, 100 * (k + 1), t=100 + k, frames=[fr(f"k{k}")]) for k in range(6)]
    trace += [e("alloc", 8192 + 16 * k, k + 1, t=106 + k, frames=[fr(f"t{k}")]) for k in range(6)]
    trace += [e("free_completed", 8192 + 16 * k, k + 1, t=112 + k) for k in range(6)]
    kept = [(1024 * k, 1024, 100 * (k + 1), "active_allocated") for k in range(6)]
    return snap(trace, [seg(0, 8192, kept), seg(8192, 1024, [])])


def test_growth_and_the_transient_bytes_name_5_frames_by_default():
    s = six_and_six()
    r = replay(s, 0)
    (g,) = steps.growth(s, r, [(1, 0, 18)])
    # kept: k5 600, k4 500, ..., k0 100 B: the five largest, largest first
    assert [(x["frame"], x["bytes"]) for x in g["by_frame"]] == [
        (f"k{k} (/job/train.py:1)", 100 * (k + 1)) for k in (5, 4, 3, 2, 1)]
    assert (g["grown"], g["grown_blocks"]) == (2100, 6)
    tr = steps.transient_at(s, r, [(1, 0, 18)], 11)
    # alive after entry 11 and freed before 18: t0 ... t5, 21 B; t5 6 B first (the most bytes, not the first frame)
    assert tr["bytes"] == 21
    assert [(x["frame"], x["bytes"]) for x in tr["by_frame"]] == [
        (f"t{k} (/job/train.py:1)", k + 1) for k in (5, 4, 3, 2, 1)]


def test_a_summary_names_5_frames_a_step_whatever_its_limit():
    # the one window step [0, 1 ms) holds all 18 entries; the peak is after entry 11
    dev = summary.summarize(six_and_six(), limit=20, window_steps=[(1, 0, 1_000_000)], base_ns=0)["devices"][0]
    assert dev["steps_source"] == steps.SOURCE_TIME and dev["peak"]["entry"] == 11
    assert len(dev["growth"][0]["by_frame"]) == len(dev["growth_last"]["by_frame"]) == 5
    assert [x["bytes"] for x in dev["transient_at_peak"]["by_frame"]] == [6, 5, 4, 3, 2]


def test_a_0_byte_block_is_a_block_of_0_bytes():
    # one step: a 0 B block kept, a 0 B block made at 1 and freed at 3 (alive at the peak entry 2, 5 B)
    s = snap([e("alloc", 0, 0, frames=[fr("z")]), e("alloc", 16, 0, frames=[fr("y")]),
              e("alloc", 32, 5, frames=[fr("x")]), e("free_completed", 16, 0), e("free_completed", 32, 5)],
             [seg(0, 64, [(0, 16, 0, "active_allocated")])])
    r = replay(s, 0)
    (g,) = steps.growth(s, r, [(1, 0, 5)])
    assert (g["grown"], g["grown_blocks"]) == (0, 1)
    assert steps.transient_at(s, r, [(1, 0, 5)], 2)["bytes"] == 5  # y's 0 B and x's 5 B


def test_a_step_starting_at_entry_1_starts_from_the_live_bytes_after_entry_0():
    s = step_history()
    # live after entry 0: 10 B (X's first block); before the history 0
    (g,) = steps.growth(s, replay(s, 0), [(1, 1, 4)])
    assert (g["live_start"], g["grown"]) == (10, 7)  # U 7 B, alive at 4; T freed at 2


def kept_in_steps(frames_per_step):
    """Each step allocates 1 B from each listed frame, all kept; the steps [(k + 1, first, end)] of those
    entries."""
    trace, out = [], []
    for k, names in enumerate(frames_per_step):
        out.append((k + 1, len(trace), len(trace) + len(names)))
        trace += [e("alloc", 16 * (len(trace) + i), 1, frames=[fr(n)])
                  for i, n in enumerate(names)]
    return snap(trace), out


def test_leaks_are_bounded_by_10_by_default():
    names = [f"s{k}" for k in range(11)]
    s, st = kept_in_steps([names] * 3)
    got = steps.leaks(s, replay(s, 0), st)
    # each grows 1 B in steps 2 and 3: 2 B each, ties by stack id (read in order s0 ... s10): s10 left out
    assert [x["frame"] for x in got] == [f"s{k} (/job/train.py:1)" for k in range(10)]


def test_a_leak_over_65_later_steps_lists_64_of_them():
    s, st = kept_in_steps([["x"]] * 66)
    (leak,) = steps.leaks(s, replay(s, 0), st)
    # 1 B in each of steps 2 ... 66: 65 B in all, the first 64 steps listed
    assert leak["bytes_per_step"] == [1] * 64 and leak["steps"] == list(range(2, 66)) and leak["bytes"] == 65
    assert all(type(b) is int for b in leak["bytes_per_step"])  # bytes, not floats


def test_a_step_that_keeps_0_bytes_breaks_a_leak():
    # z: 10 B in step 1, 0 B in step 2, 10 B in step 3, all kept: it does not grow in step 2
    s = snap([e("alloc", 0, 10, frames=[fr("z")]), e("alloc", 16, 0, frames=[fr("z")]),
              e("alloc", 32, 10, frames=[fr("z")])])
    assert steps.leaks(s, replay(s, 0), [(1, 0, 1), (2, 1, 2), (3, 2, 3)]) == []


def test_blocks_freed_in_their_step_are_no_leak():
    # t: 10 B made and freed in each of three steps
    s = snap([e("alloc", 0, 10, frames=[fr("t")]), e("free_completed", 0, 10)] * 3)
    assert steps.leaks(s, replay(s, 0), [(1, 0, 2), (2, 2, 4), (3, 4, 6)]) == []


def leaking_history():
    """Window steps 1, 2, 3 at 1, 2, 3 ms: in each a (100 B) and b (50 B), kept; in steps 1 and 2 an OOM and a
    release of 10 B after it."""
    trace = []
    for k in (1, 2, 3):
        t = 1000 * k
        trace += [e("alloc", 4096 * k, 100, t=t, frames=[fr("a")]), e("alloc", 4096 * k + 1024, 50, t=t + 1,
                                                                         frames=[fr("b")])]
        if k < 3:
            trace += [e("oom", size=1 << 30, t=t + 2), e("segment_free", 65536 * k, 10, t=t + 3)]
    kept = [(4096 * k + d, 1024, n, "active_allocated") for k in (1, 2, 3) for d, n in ((0, 100), (1024, 50))]
    return snap(trace, [seg(4096, 3 * 4096, kept)])


def test_a_summary_bounds_its_lists_by_its_limit():
    window = [(k, k * 1_000_000, (k + 1) * 1_000_000) for k in (1, 2, 3)]
    dev = summary.summarize(leaking_history(), limit=1, window_steps=window, base_ns=0)["devices"][0]
    assert dev["steps"] == 3 and len(dev["growth"]) == 1
    # later steps 2 and 3: a grows 100 + 100, b 50 + 50: two leaks, a first; two OOMs; two releases
    assert [x["frame"] for x in dev["leaks"]] == ["a (/job/train.py:1)"]
    assert [x["entry"] for x in dev["ooms"]] == [2]
    assert dev["empty_cache"]["release_count"] == 2 and [x["entry"] for x in dev["empty_cache"]["releases"]] == [3]
    assert dev["growth_last"]["step"] == 3  # the last step's growth, not the second's


def test_a_peak_at_the_first_entry_has_its_state_and_transient_bytes():
    # 100 B made at entry 0 and freed at 1: the peak is entry 0; no steps, so the transient bytes are unknown
    s = snap([e("alloc", 0, 100, frames=[fr("a")]), e("free_completed", 0, 100)], [seg(0, 1024, [])])
    dev = summary.summarize(s)["devices"][0]
    assert dev["peak"]["entry"] == 0
    assert (dev["at_peak"]["entry"], dev["at_peak"]["requested"], dev["at_peak"]["reserved"]) == (0, 100, 1024)
    assert dev["transient_at_peak"] == {"step": None, "bytes": -1, "by_frame": []}
