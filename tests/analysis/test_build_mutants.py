"""EventTable -> Digest (analysis/build.py): the window's description, the steps and their average, and which
parts the digest takes from where, on hand-made tables (issue 46, mutation testing). The step split itself
(steps.breakdowns, cann.steps_from_cann) is replaced here by fixed arrays, so that build's own copying and
averaging is checked by hand: every mean worked out in the docstrings."""
import numpy as np
import pytest
from _synthetic import ev, table

from canning_tb.analysis import build
from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.build import build_digest
from canning_tb.analysis.digest import SCHEMA_VERSION, analysis_revision
from canning_tb.analysis.steps import STEP_SOURCE_WINDOW
from canning_tb.ingest import side_tables as side
from canning_tb.ingest.table import NONE, Problem
from canning_tb.ingest.table import Kind as K

FIELDS = ("compute", "overlapped", "communication", "memcpy", "memset", "device_wait", "runtime", "dataloader",
          "host", "idle")


def _described():
    """Two host ops, 100-150 and 120-320: the window 100 to 320 when the file gives no times."""
    t = table([ev("a", K.CPU_OP, 100, 50), ev("b", K.CPU_OP, 120, 200)])
    m = t.meta
    m.rank, m.world_size, m.worker, m.host, m.pid = 3, 8, "w", "h", 42
    m.devices = [{"kind": "cuda", "index": 1, "name": "A100", "memory": 80, "compute_capability": "8.0",
                  "uuid": "u", "driver": None, "sms": 108},
                 {"kind": "npu", "index": None, "name": None, "memory": None}]
    m.environment = {"torch": "2.1", "n": 5}
    m.source_files = ["x.json", "y.json"]
    return t


def test_the_window_as_the_table_describes_it():
    """Every field of the meta; a device's unknown index is -1 (not device 0), its unknown name "", its unknown
    memory -1; its other keys with a value are properties (as text), those without (driver) are not."""
    w = build_digest(_described(), graph=False).window
    assert (w.format, w.rank, w.world_size, w.worker, w.host, w.pid) == ("kineto", 3, 8, "w", "h", 42)
    assert (w.start_ns, w.end_ns) == (100, 320)
    cuda, npu = w.devices
    assert (cuda.kind, cuda.index, cuda.name, cuda.memory_bytes, cuda.compute_capability) == \
        ("cuda", 1, "A100", 80, "8.0")
    assert dict(cuda.properties) == {"uuid": "u", "sms": "108"}
    assert (npu.kind, npu.index, npu.name, npu.memory_bytes, npu.compute_capability, dict(npu.properties)) == \
        ("npu", -1, "", -1, "", {})
    assert dict(w.environment) == {"torch": "2.1", "n": "5"} and list(w.source_files) == ["x.json", "y.json"]


def test_the_files_times_stand_before_the_events():
    """The meta's window 10 to 999 (wider than the events, 100 to 320) stands; None reads as unknown too."""
    t = _described()
    t.meta.start_ns, t.meta.end_ns = 10, 999
    assert (build_digest(t, graph=False).window.start_ns, build_digest(t, graph=False).window.end_ns) == (10, 999)
    t.meta.start_ns, t.meta.end_ns = None, None
    w = build_digest(t, graph=False).window
    assert (w.start_ns, w.end_ns) == (100, 320)


def test_an_empty_window_has_unknown_times():
    w = build_digest(table([]), graph=False).window
    assert (w.start_ns, w.end_ns) == (-1, -1)


def test_the_versions_and_the_files_problems():
    t = _described()
    t.problems.append(Problem(file="x.json", message="cut short", severity="warning"))
    d = build_digest(t, graph=False)
    assert (d.schema_version, d.analysis_revision) == (SCHEMA_VERSION, analysis_revision())
    assert [(p.file, p.message, p.severity) for p in d.problems] == [("x.json", "cut short", "warning")]


def _split(monkeypatch, durs, distorted, res, clock="host", source="trace"):
    """steps.breakdowns and host_steps replaced: steps 1.. at 0, 10_000, 20_000 ... of `durs`."""
    n = len(durs)
    nums, starts = np.arange(1, n + 1), np.arange(n, dtype=np.int64) * 10_000
    tails = np.arange(n, dtype=np.int64) * 3
    res = {k: np.asarray(v, np.int64) for k, v in res.items()}
    monkeypatch.setattr(build, "host_steps", lambda t: (None, None, None, source))
    monkeypatch.setattr(build, "breakdowns", lambda t, ctx: (nums, starts, np.asarray(durs, np.int64), res, tails,
                                                             np.asarray(distorted, bool), clock))
    d = pb.Digest()
    return d, build._steps(d, table([]), None)


def _res(**given):
    return {f: given.get(f, [0] * len(next(iter(given.values())))) for f in FIELDS} | \
        {k: v for k, v in given.items() if k not in FIELDS}


def test_each_step_and_the_average_over_the_undistorted_ones(monkeypatch):
    """Steps 1000, 2000, 4000 ns, the last distorted: the average over steps 1 and 2. total 1500 = 3000 / 2;
    compute (300 + 500) / 2 = 400; overlapped (10 + 30) / 2 = 20; communication (1 + 3) / 2 = 2; memcpy
    (5 + 7) / 2 = 6; memset (0 + 2) / 2 = 1; device_wait (2 + 2) / 2 = 2; runtime (100 + 200) / 2 = 150;
    dataloader (0 + 10) / 2 = 5; host (50 + 60) / 2 = 55; idle the rest of the mean step, 1500 - 641 = 859 (not
    the mean of the steps' idle, 7 and 9: 8)."""
    res = _res(compute=[300, 500, 900], overlapped=[10, 30, 50], communication=[1, 3, 5], memcpy=[5, 7, 9],
               memset=[0, 2, 4], device_wait=[2, 2, 2], runtime=[100, 200, 300], dataloader=[0, 10, 20],
               host=[50, 60, 70], idle=[7, 9, 11], untraced_wait=[0, 70, 0])
    d, (nums, starts, ends, got) = _split(monkeypatch, [1000, 2000, 4000], [False, False, True], res)
    assert [(s.number, s.start_ns, s.dur_ns, s.tail_ns, s.distorted, s.untraced_wait_ns, s.breakdown.total_ns)
            for s in d.steps] == [(1, 0, 1000, 0, False, 0, 1000), (2, 10_000, 2000, 3, False, 70, 2000),
                                  (3, 20_000, 4000, 6, True, 0, 4000)]
    for f in FIELDS:
        assert [getattr(s.breakdown, f"{f}_ns") for s in d.steps] == list(res[f]), f
    assert list(d.average_steps) == [1, 2] and (d.step_source, d.step_clock) == ("trace", "host")
    a = d.average
    assert [a.total_ns] + [getattr(a, f"{f}_ns") for f in FIELDS] == [1500, 400, 20, 2, 6, 1, 2, 150, 5, 55, 859]
    assert list(nums) == [1, 2, 3] and list(starts) == [0, 10_000, 20_000] and list(ends) == [1000, 12_000, 24_000]
    assert sorted(got) == sorted(res) and all(list(got[k]) == list(res[k]) for k in res)  # the split, as given


def test_every_step_distorted_averages_them_all(monkeypatch):
    """Both steps distorted: the average keeps both. total (1000 + 2000) / 2 = 1500, compute (301 + 500) / 2 = 400.5,
    rounded to the even 400; idle 1500 - 400 = 1100. No untraced wait given: 0 in each step."""
    d, _ = _split(monkeypatch, [1000, 2000], [True, True], _res(compute=[301, 500]))
    assert list(d.average_steps) == [1, 2]
    assert (d.average.total_ns, d.average.compute_ns, d.average.idle_ns) == (1500, 400, 1100)
    assert [s.untraced_wait_ns for s in d.steps] == [0, 0]


def test_one_kept_step_is_the_average(monkeypatch):
    """Steps 1 (kept) and 2 (distorted): the average is step 1, total 999, compute 333, host 111, idle 555."""
    d, _ = _split(monkeypatch, [999, 5000], [False, True], _res(compute=[333, 4000], host=[111, 1]))
    assert (d.average.total_ns, d.average.compute_ns, d.average.host_ns, d.average.idle_ns) == (999, 333, 111, 555)


def test_idle_is_never_negative(monkeypatch):
    """One step of 100 whose categories add to 150 (they overlap in the given arrays): idle 0, not -50."""
    d, _ = _split(monkeypatch, [100], [False], _res(compute=[150]))
    assert (d.average.total_ns, d.average.idle_ns) == (100, 0)


def test_cann_steps_when_the_trace_has_none(monkeypatch):
    """No ProfilerStep range (source "window") and CANN's step trace present: CANN's steps, whole (no tail, none
    distorted), named by the first CANN step's source, on the device's clock; the average over both."""
    res = {f: np.zeros(2, np.int64) for f in FIELDS} | {"compute": np.array([40, 60], np.int64)}
    monkeypatch.setattr(build, "host_steps", lambda t: (None, None, None, STEP_SOURCE_WINDOW))
    seen = []
    monkeypatch.setattr(build, "steps_from_cann", lambda steps, t: seen.append((steps, t)) or (
        np.array([7, 8]), np.array([0, 500], np.int64), np.array([400, 600], np.int64), res))
    for source, named in (("step_trace_db", "step_trace_db"), ("", "step_trace")):
        d, t = pb.Digest(), table([])
        d.cann_steps.add(step=7, source=source)
        build._steps(d, t, None)
        assert seen.pop() == ([d.cann_steps[0]], t)  # the digest's CANN steps, as a list, and the table
        assert [(s.number, s.dur_ns, s.tail_ns, s.distorted) for s in d.steps] == \
            [(7, 400, 0, False), (8, 600, 0, False)]
        assert (d.step_source, d.step_clock, list(d.average_steps)) == (named, "device", [7, 8])
        assert (d.average.total_ns, d.average.compute_ns) == (500, 50)


def test_the_trace_steps_win_over_cann_steps(monkeypatch):
    """ProfilerStep ranges (source "trace") and CANN steps both present: the trace's steps, on their clock."""
    res = _res(compute=[10])
    monkeypatch.setattr(build, "steps_from_cann", lambda *a: pytest.fail("CANN's steps read"))
    monkeypatch.setattr(build, "host_steps", lambda t: (None, None, None, "trace"))
    monkeypatch.setattr(build, "breakdowns", lambda t, ctx: (np.array([1]), np.array([0]), np.array([100]),
                                                             {k: np.asarray(v) for k, v in res.items()},
                                                             np.zeros(1, np.int64), np.zeros(1, bool), "device"))
    d = pb.Digest()
    d.cann_steps.add(step=7, source="step_trace")
    build._steps(d, table([]), None)
    assert (d.step_source, d.step_clock, [s.number for s in d.steps]) == ("trace", "device", [1])


def test_the_device_figures_are_of_the_kept_steps(monkeypatch):
    """gpu_efficiency and npu_efficiency receive the starts and ends of the steps the average keeps: steps 1
    and 3 of three, step 2 distorted."""
    seen = []
    monkeypatch.setattr(build, "breakdowns", lambda t, ctx: (
        np.array([1, 2, 3]), np.array([0, 100, 200], np.int64), np.array([50, 60, 70], np.int64),
        {f: np.zeros(3, np.int64) for f in FIELDS}, np.zeros(3, np.int64), np.array([False, True, False]), "host"))
    for name in ("gpu_efficiency", "npu_efficiency"):
        monkeypatch.setattr(build, name, lambda t, s, e, name=name: seen.append((name, list(s), list(e))) or [])
    monkeypatch.setattr(build, "input_pipeline", lambda t, n, s, e, kept: seen.append(("input", list(kept)))
                        or pb.InputPipeline())
    monkeypatch.setattr(build, "communication_stats", lambda ctx, s, e, n, res: seen.append(
        ("communication", list(s), list(e), list(n))) or pb.Communication())
    build_digest(table([ev("a", K.CPU_OP, 0, 10)]), graph=False)
    assert seen == [("gpu_efficiency", [0, 200], [50, 270]), ("npu_efficiency", [0, 200], [50, 270]),
                    ("input", [True, False, True]), ("communication", [0, 100, 200], [50, 160, 270], [1, 2, 3])]


def test_without_trace_operators_the_operator_details_give_the_tables():
    """No host op in the trace, torch_npu's operator_details: mm 10 / 100 and mm 20 / 200 (host self / total),
    add 1 / 600: by name add (600) then mm (2 calls, 30 / 300); by shapes and by stack the same two groups."""
    t = table([ev("k", K.KERNEL, 0, 10)])
    rows = [dict(name="aten::mm", input_shapes="[[2]]", call_stack="f", host_self_ns=10, host_total_ns=100,
                 device_self_ns=5, device_total_ns=50),
            dict(name="aten::mm", input_shapes="[[2]]", call_stack="f", host_self_ns=20, host_total_ns=200,
                 device_self_ns=6, device_total_ns=60),
            dict(name="aten::add", input_shapes=None, call_stack=None, host_self_ns=1, host_total_ns=600,
                 device_self_ns=0, device_total_ns=0)]
    side.put(t.side, "operator_details", [side.row("operator_details", **r) for r in rows])
    d = build_digest(t, graph=False)
    assert [(o.name, o.calls, o.host_self_ns, o.host_total_ns) for o in d.ops_by_name] == \
        [("aten::add", 1, 1, 600), ("aten::mm", 2, 30, 300)]
    assert [(o.name, o.input_shapes) for o in d.ops_by_shape] == [("aten::add", ""), ("aten::mm", "[[2]]")]
    assert [(o.name, o.call_stack) for o in d.ops_by_stack] == [("aten::add", ""), ("aten::mm", "f")]


def test_trace_operators_win_over_the_operator_details():
    """A host op in the trace: its table, the side table's rows not read."""
    t = table([ev("aten::relu", K.CPU_OP, 0, 10)])
    side.put(t.side, "operator_details", [side.row("operator_details", name="aten::mm", input_shapes=None,
                                                   call_stack=None, host_self_ns=1, host_total_ns=2,
                                                   device_self_ns=0, device_total_ns=0)])
    assert [o.name for o in build_digest(t, graph=False).ops_by_name] == ["aten::relu"]


def test_the_critical_path_only_with_the_graph():
    """A step with a launched kernel: a critical path per step with the graph, none without."""
    t = table([ev("ProfilerStep#1", K.USER_ANNOTATION, 0, 1000), ev("aten::mm", K.CPU_OP, 10, 100, external_id=1),
               ev("cudaLaunchKernel", K.RUNTIME, 20, 10, correlation=5, external_id=1),
               ev("gemm", K.KERNEL, 50, 300, correlation=5, external_id=1)])
    assert [p.number for p in build_digest(t).critical_path] == [1]
    assert len(build_digest(t, graph=False).critical_path) == 0
    assert NONE == -1


def test_an_unnamed_window_and_a_device_without_fields():
    """Format, worker and host empty: "" (not a placeholder); a device dict with no key: kind "", index -1 (unknown), name "",
    memory -1 (unknown), compute capability "", no property."""
    t = table([ev("a", K.CPU_OP, 0, 10)])
    t.meta.format, t.meta.worker, t.meta.host, t.meta.devices = "", "", "", [{}]
    w = build_digest(t, graph=False).window
    assert (w.format, w.worker, w.host) == ("", "", "")
    (dv,) = w.devices
    assert (dv.kind, dv.index, dv.name, dv.memory_bytes, dv.compute_capability, dict(dv.properties)) == \
        ("", -1, "", -1, "", {})


def test_the_rules_get_the_context_with_its_step_categories_the_graph_and_the_chip(monkeypatch):
    """The rules receive the window's Context, on which breakdowns set the step categories (the claims' time),
    and the dependency graph when asked for; the roofline the chip chosen for the view."""
    from canning_tb.analysis.context import Context
    from canning_tb.analysis.graph.section import WindowGraph
    seen = []
    monkeypatch.setattr(build, "rule_hits", lambda d, ctx, wg: seen.append((ctx, wg)) or [])
    monkeypatch.setattr(build, "roofline_section", lambda ctx, d, chip: seen.append(chip))
    t = table([ev("ProfilerStep#1", K.USER_ANNOTATION, 0, 1000), ev("aten::mm", K.CPU_OP, 10, 100)])
    build_digest(t, chip="H100")
    chip, (ctx, wg) = seen
    assert chip == "H100" and isinstance(ctx, Context) and ctx.table is t and isinstance(wg, WindowGraph)
    assert "untraced_wait" in ctx.categories and "runtime" in ctx.categories
    seen.clear()
    build_digest(t, graph=False)
    assert seen[0] is None and seen[1][1] is None
