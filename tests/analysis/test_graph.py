"""The dependency graph, its replay and the critical path, on hand-made windows whose answers are worked out
by hand in each test (times in µs below; the tables hold ns), and on every real fixture for the properties that
hold on any trace: a replay with nothing changed gives the observed times back, a step's path sums to it."""
import glob

import numpy as np
import pytest

from canning_tb.analysis.build import build_digest
from canning_tb.analysis.context import Context
from canning_tb.analysis.graph.build import build_graph
from canning_tb.analysis.graph.critical import critical_path, step_spans
from canning_tb.analysis.graph.replay import Edit, replay
from canning_tb.analysis.graph.section import WindowGraph
from canning_tb.analysis.graph.simulate import gain, interval_edit
from canning_tb.ingest.table import Kind
from _synthetic import ev, table

US = 1_000
FIXTURES = "tests/fixtures"


def _window_with_sync():
    """One step of 100 µs on thread 1: launch a 50 µs kernel at 10-12, host work 12-20, a synchronize 20-62
    that returns 2 µs after the kernel (14-60) ends, then 38 µs of host work to the step's end."""
    return table([
        ev("ProfilerStep#1", Kind.USER_ANNOTATION, 0, 100 * US),
        ev("aten::mm", Kind.CPU_OP, 5 * US, 8 * US, external_id=1),
        ev("cudaLaunchKernel", Kind.RUNTIME, 10 * US, 2 * US, correlation=11),
        ev("gemm", Kind.KERNEL, 14 * US, 46 * US, correlation=11, external_id=1),
        ev("aten::relu", Kind.CPU_OP, 13 * US, 7 * US),
        ev("cudaDeviceSynchronize", Kind.RUNTIME, 20 * US, 42 * US),
        ev("aten::add", Kind.CPU_OP, 62 * US, 38 * US),
    ])


def test_a_blocking_call_waits_for_the_kernel_and_the_path_goes_through_it():
    t = _window_with_sync()
    d = build_digest(t)
    g = build_graph(t, Context(t))
    (span,) = step_spans(g, d.steps)
    path = critical_path(g, span)
    # by hand: 0-10 host/python before the launch, 10-12 launch (runtime), 12-14 launch latency, 14-60 kernel,
    # 60-62 the synchronize's return (sync), 62-100 aten::add (host); 5-10 inside aten::mm is host, 0-5 python
    assert path.by_cat["kernel"] == 46 * US
    assert path.by_cat["sync"] == 2 * US
    assert path.by_cat["runtime"] == 2 * US
    assert path.by_cat["latency"] == 2 * US
    assert sum(path.by_cat.values()) == 100 * US
    assert path.by_cat["host"] == (38 + 5) * US and path.by_cat["python"] == 5 * US


def test_taking_the_wait_away_gives_the_hand_worked_gain():
    t = _window_with_sync()
    d = build_digest(t)
    wg = WindowGraph(Context(t), d)
    g = wg.graph
    sync = int(np.flatnonzero(g.wait_on != -1)[0])
    sim = gain(g, wg.spans, Edit("no sync", unblock={sync}), None)
    # by hand: without waiting, the synchronize lasts its 2 µs tail (20-22) and aten::add runs 22-60; the step
    # then ends with the kernel at 60: 100 - 60 = 40 µs
    assert sim.gain_ns == 40 * US


def test_shrinking_host_work_the_device_still_needs_gains_nothing_past_the_device():
    t = _window_with_sync()
    d = build_digest(t)
    wg = WindowGraph(Context(t), d)
    g = wg.graph
    relu = [n for n in range(len(g)) if g.row[n] >= 0 and t.strings[int(t.events["name"][g.row[n]])] == "aten::relu"]
    sim = gain(g, wg.spans, Edit("relu free", dur={n: 0 for n in relu}), None)
    # aten::relu (12-20) runs while the kernel does: the synchronize still returns at 62, nothing is gained
    assert sim.gain_ns == 0


def test_host_time_removed_off_the_path_shortens_the_step_by_that_much():
    t = _window_with_sync()
    d = build_digest(t)
    wg = WindowGraph(Context(t), d)
    # aten::add's 62-100: taken away entirely, the step ends at 62
    sim = gain(wg.graph, wg.spans, interval_edit(wg.graph, (np.array([62 * US]), np.array([100 * US])), ["host"],
                                                 "add gone"), None)
    assert sim.gain_ns == 38 * US


def test_a_kernel_held_by_another_stream_depends_on_it():
    t = table([
        ev("ProfilerStep#1", Kind.USER_ANNOTATION, 0, 200 * US),
        ev("cudaLaunchKernel", Kind.RUNTIME, 1 * US, 1 * US, correlation=1),
        ev("cudaLaunchKernel", Kind.RUNTIME, 3 * US, 1 * US, correlation=2),
        ev("ncclKernel_AllReduce", Kind.COMM_KERNEL, 5 * US, 100 * US, correlation=1, stream=20),
        # launched at 3-4, its stream idle, yet it starts only when the all-reduce ends (an event wait)
        ev("gemm", Kind.KERNEL, 105 * US + 500, 50 * US, correlation=2, stream=7),
        ev("cudaDeviceSynchronize", Kind.RUNTIME, 10 * US, 146 * US),
    ])
    d = build_digest(t)
    wg = WindowGraph(Context(t), d)
    g = wg.graph
    comm = int(np.flatnonzero(g.cat == 7)[0])
    sim = gain(g, wg.spans, Edit("overlap", cut_from={comm}), None)
    # by hand: the step is the 200 µs ProfilerStep (the synchronize returns at 156, python to 200). Freed from the
    # all-reduce, gemm starts the window's launch latency (3 µs: the all-reduce's launch 1-2 to its start at 5)
    # after its launch returns at 4: it runs 7-57; the synchronize returns its 0.5 µs tail after: 57.5; the 44 µs
    # of python after it end at 101.5; the all-reduce still runs to 105, which ends the step: 200 - 105 = 95 µs
    path = critical_path(g, wg.spans[0])
    assert path.by_cat["communication"] == 100 * US  # the all-reduce holds the gemm, which holds the sync
    assert sim.gain_ns == (200 - 105) * US


@pytest.mark.parametrize("path", sorted(glob.glob(f"{FIXTURES}/kineto/*/*.json.gz")
                                        + glob.glob(f"{FIXTURES}/hta/*/*.json.gz")
                                        + glob.glob(f"{FIXTURES}/param/dlrm_8ranks/worker0*.json.gz")))
def test_on_real_traces_a_replay_without_change_is_the_trace_and_paths_sum_to_steps(path):
    from canning_tb.ingest.kineto.read import read_kineto
    try:
        t = read_kineto(path)
    except Exception as e:  # a fixture that is no Kineto window (HTA's parser inputs)
        pytest.skip(f"not a window: {e}")
    d = build_digest(t)
    g = build_graph(t, Context(t))
    s, e = replay(g, Edit("nothing", dur={0: int(g.end[0] - g.start[0])}) if len(g) else None)
    assert (s == g.start).all() and (e == g.end).all()
    for span, sp in zip(step_spans(g, d.steps), d.critical_path):
        assert sum(sp.by_category.values()) == span.end - span.start


def _node_of(t, g, name):
    (node,) = [n for n in range(len(g)) if g.row[n] >= 0 and t.strings[int(t.events["name"][g.row[n]])] == name]
    return node


def test_host_work_grown_past_the_kernel_moves_the_calls_after_it_by_the_excess():
    t = _window_with_sync()
    g = build_graph(t, Context(t))
    relu, sync, add = (_node_of(t, g, x) for x in ("aten::relu", "cudaDeviceSynchronize", "aten::add"))
    # aten::relu's node is 12-20 (the launch returns at 12: the µs before relu starts is merged into it)
    assert (g.start[relu], g.end[relu]) == (12 * US, 20 * US)
    s, e = replay(g, Edit("relu +50 us", dur={relu: 58 * US}))
    # by hand: aten::relu 12-70; the synchronize, next on the thread, starts at 70, the kernel is done (60): it takes
    # its own 2 µs tail, 70-72; aten::add 72-110 (its 38 µs); the kernel keeps its 14-60
    assert (s[relu], e[relu]) == (12 * US, 70 * US)
    assert (s[sync], e[sync]) == (70 * US, 72 * US)
    assert (s[add], e[add]) == (72 * US, 110 * US)
    kernel = _node_of(t, g, "gemm")
    assert (s[kernel], e[kernel]) == (14 * US, 60 * US)
    # +10 µs instead: aten::relu 12-30, the synchronize 30 until the kernel's end plus its tail, 62; add 62-100
    s, e = replay(g, Edit("relu +10 us", dur={relu: 18 * US}))
    assert (e[relu], s[sync], e[sync], s[add], e[add]) == (30 * US, 30 * US, 62 * US, 62 * US, 100 * US)


def _full_pass(g, edit, until=None):
    """The replay's definition taken literally, the oracle: every node in the order of its observed end (then
    start, then number) from the first changed node's end to `until`, each from its dependencies as replayed."""
    start, end, ptr = g.start.tolist(), g.end.tolist(), g.dep_ptr.tolist()
    new_s, new_e = list(start), list(end)
    changed = set(edit.dur) | set(edit.unblock) | set(edit.cut_from) | set(edit.rewire)
    first = min(end[x] for x in changed)
    for node in sorted(range(len(g)), key=lambda x: (end[x], start[x], x)):
        if end[node] < first or (until is not None and end[node] > until):
            continue
        moved = edit.rewire.get(node)
        ready = [new_e[int(g.dep_src[k])] + int(g.dep_lag[k]) for k in range(ptr[node], ptr[node + 1])
                 if int(g.dep_src[k]) not in edit.cut_from and (moved is None or int(g.dep_kind[k]) not in (1, 3))]
        ready += [new_e[moved[0]] + moved[1]] if moved is not None else []
        s = max(ready) if ready else start[node]
        dur = max(int(edit.dur[node]), 0) if node in edit.dur else end[node] - start[node]
        w = int(g.wait_on[node])
        if w == -1:
            e = s + dur
        else:
            own = min(max(int(g.wait_tail[node]), 0), dur)
            e = s + own if node in edit.unblock else max(s + own, new_e[w] + int(g.wait_tail[node]))
        new_s[node], new_e[node] = s, e
    return np.array(new_s), np.array(new_e)


@pytest.mark.parametrize("path", sorted(glob.glob(f"{FIXTURES}/kineto/*/*.json.gz"))[:6]
                         + [f"{FIXTURES}/ascend/level2/rank0_ascend_pt", f"{FIXTURES}/ascend/level1/rank1_ascend_pt"])
def test_on_real_traces_the_replay_is_the_node_by_node_pass_for_findings_and_random_edits(path, monkeypatch):
    from canning_tb.analysis.graph import simulate
    from canning_tb.ingest.ascend.read import read_ascend
    from canning_tb.ingest.kineto.read import read_kineto
    t = read_ascend(path) if path.endswith("_ascend_pt") else read_kineto(path)
    seen = []
    monkeypatch.setattr(simulate, "replay",
                        lambda g, edit, until=None: seen.append((g, edit, until)) or replay(g, edit, until))
    build_digest(t)  # the findings' own edits
    g = build_graph(t, Context(t))
    rng = np.random.default_rng(len(g))
    for _ in range(6):  # random ones: durations shrunk or grown, waits taken away, dependencies cut, a rewire
        nodes = rng.choice(len(g), size=min(len(g), 16), replace=False).tolist()
        dur = {x: int((g.end[x] - g.start[x]) * rng.uniform(0, 2)) + int(rng.integers(0, 2)) * 5 * US
               for x in nodes[:8]}
        a, b = nodes[13], nodes[14]
        seen.append((g, Edit("random", dur=dur, unblock=set(np.flatnonzero(g.wait_on != -1)[:4].tolist()),
                             cut_from=set(nodes[8:12]), rewire={a: (b, US)} if g.end[b] < g.start[a] else {}), None))
    for graph, edit, until in seen:
        s, e = replay(graph, edit, until)
        want_s, want_e = _full_pass(graph, edit, until)
        assert (s == want_s).all() and (e == want_e).all(), edit.what
