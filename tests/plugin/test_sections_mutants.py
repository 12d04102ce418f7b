"""queries/sections.py on digests made by hand (issue 46: fast tests for a mutation run): the window's head
(duration, problems named relative to the logdir, the old-analysis warning), times made relative to the window's
start (-1 kept), the tables' groups, pages and CSV files, one operator's detail, the memory range's checks. Each
expected value is worked out by hand in the test."""
import pytest

from _hand_store import HandStore
from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.digest import analysis_revision
from canning_tb.queries import sections
from canning_tb.queries.errors import BadParameter, NotFound

W = ("r", "w", "1")
T0 = 1_000_000


def digest(revision=None, start=T0, end=T0 + 9_000) -> pb.Digest:
    d = pb.Digest(schema_version=7, analysis_revision=analysis_revision() if revision is None else revision)
    d.window.start_ns, d.window.end_ns = start, end
    return d


def store_of(tmp_path, d) -> HandStore:
    return HandStore(tmp_path, {W: d})


@pytest.mark.parametrize("start,end,duration", [(T0, T0 + 9_000, 9_000), (T0, T0 - 5, 0), (-1, T0, -1),
                                                (T0, -1, -1), (0, 0, 0)])
def test_the_heads_duration(tmp_path, start, end, duration):
    """end - start, 0 when the end is before the start, -1 (unknown) when either end is -1."""
    body = sections.modules_impl(store_of(tmp_path, digest(start=start, end=end)), *W)
    assert body["info"]["duration_ns"] == duration
    assert (body["run"], body["worker"], body["window"]) == W and body["modules"] == []


def test_problems_are_named_relative_to_the_logdir_and_a_current_digest_warns_of_nothing(tmp_path):
    d = digest()
    d.problems.add(file=str(tmp_path / "a" / "b.json"), message="bad", severity="error")
    d.problems.add(file="/elsewhere/c.csv", message="odd", severity="warning")
    body = sections.modules_impl(store_of(tmp_path, d), *W)
    assert body["old_analysis"] is None
    assert body["problems"] == [{"file": "a/b.json", "message": "bad", "severity": "error"},
                                {"file": "/elsewhere/c.csv", "message": "odd", "severity": "warning"}]


@pytest.mark.parametrize("revision,by", [("", "a canning-tb older than revisions"), ("abc123", "revision abc123")])
def test_a_digest_of_other_code_is_said_first_among_the_problems(tmp_path, revision, by):
    d = digest(revision=revision)
    d.problems.add(file="x.json", message="bad", severity="error")
    body = sections.modules_impl(store_of(tmp_path, d), *W)
    said = (f"Digest made by other analysis code ({by}; this viewer: {analysis_revision()}) and the window's "
            "files are not here to make it again: its figures may differ from the other windows'.")
    assert body["old_analysis"] == said
    assert body["problems"] == [{"file": "", "message": said, "severity": "warning"},
                                {"file": "x.json", "message": "bad", "severity": "error"}]


def test_the_overviews_steps_are_relative_and_say_why_one_is_left_out(tmp_path):
    d = digest()
    # step 3: waited 2 ms of 10 for queued work (over 5 %): left out, and not in average_steps
    d.steps.add(number=3, start_ns=T0 + 500, dur_ns=10_000_000, untraced_wait_ns=2_000_000, distorted=True)
    # step 4: the same wait, but the average keeps it; step 5: no start (-1 stays -1), nothing to say
    d.steps.add(number=4, start_ns=T0 + 700, dur_ns=10_000_000, untraced_wait_ns=2_000_000)
    d.steps.add(number=5, start_ns=-1, dur_ns=10)
    d.steps[0].breakdown.total_ns, d.steps[0].breakdown.host_ns = 10, 4
    d.average_steps.extend([4, 5])
    d.average.total_ns = 77
    body = sections.overview_impl(store_of(tmp_path, d), *W)
    steps = body["steps"]
    assert [s["start_ns"] for s in steps] == [500, 700, -1]
    assert [s["left_out"] for s in steps] == ["queued work", "", ""]
    assert steps[0]["note"].startswith("Step 3 is left out of the average: its host waited 2.0 ms")
    assert steps[1]["note"].startswith("Step 4 includes 2.0 ms")
    assert steps[2]["note"] == ""
    assert steps[0]["shares"]["host"] == 0.4  # 4 / 10
    assert body["average"]["total_ns"] == 77 and body["schema_version"] == 7
    assert body["step_clock"] == "host" and body["input_pipeline"] is None
    assert body["gpu_efficiency"] == [] and body["npu_efficiency"] == [] and body["rule_hits"] == []


def test_the_overview_keeps_a_step_clock_the_efficiency_cards_and_the_input_pipeline(tmp_path):
    d = digest()
    d.step_clock = "device"
    d.gpu_efficiency.add(device=2)
    d.npu_efficiency.add(device=5)
    d.npu_efficiency.add(device=6)
    d.input_pipeline.SetInParent()
    d.rule_hits.add(rule="x")
    body = sections.overview_impl(store_of(tmp_path, d), *W)
    assert body["step_clock"] == "device"
    assert [g["device"] for g in body["gpu_efficiency"]] == [2]
    assert [n["device"] for n in body["npu_efficiency"]] == [5, 6]
    assert isinstance(body["input_pipeline"], dict) and [r["rule"] for r in body["rule_hits"]] == ["x"]


def test_modules_and_suggestions_times_are_relative_to_the_window(tmp_path):
    d = digest()
    d.modules.add(name="a", first_start_ns=T0 + 40)
    d.modules.add(name="b", first_start_ns=-1)
    hit = d.rule_hits.add(rule="r1")
    hit.evidence.add(ts_ns=T0 + 3, view="overview")
    hit.evidence.add(ts_ns=-1)
    d.rule_hits.add(rule="r2")
    store = store_of(tmp_path, d)
    assert [m["first_start_ns"] for m in sections.modules_impl(store, *W)["modules"]] == [40, -1]
    findings = sections.suggestions_impl(store, *W)["findings"]
    assert [f["rule"] for f in findings] == ["r1", "r2"]
    assert [e["ts_ns"] for e in findings[0]["evidence"]] == [3, -1] and findings[1]["evidence"] == []
    assert d.rule_hits[0].evidence[0].ts_ns == T0 + 3  # the digest itself is not changed


def test_relative():
    assert sections.relative(T0 + 5, T0) == 5 and sections.relative(0, T0) == -T0
    assert sections.relative(-1, T0) == -1 and sections.relative(-7, T0) == -7


def ops_digest() -> pb.Digest:
    d = digest()
    for name, calls in (("aten::mm", 3), ("aten::add", 5), ("aten::relu", 1)):
        d.ops_by_name.add(name=name, calls=calls, host_self_ns=10 * calls)
    mm = d.ops_by_name[0]
    mm.kernels.add(name="gemm", calls=3, total_ns=30)
    d.ops_by_shape.add(name="aten::mm", input_shapes="[[2]]", calls=2).kernels.add(name="gemm_small")
    d.ops_by_shape.add(name="aten::mm", input_shapes="[[4]]", calls=1)
    d.ops_by_stack.add(name="aten::mm", input_shapes="[[2]]", call_stack="a.py(1)", calls=2)
    d.ops_by_stack.add(name="aten::mm", input_shapes="[[4]]", call_stack="b.py(2)", calls=1)
    d.ops_by_stack.add(name="aten::add", call_stack="c.py(3)", calls=5)
    return d


def test_operators_group_page_and_flags(tmp_path):
    store = store_of(tmp_path, ops_digest())
    body = sections.operators_impl(store, *W, paging={"sort": "calls", "limit": 2})
    # calls descending: add 5, mm 3 (relu 1 on the next page)
    assert [r["name"] for r in body["rows"]] == ["aten::add", "aten::mm"]
    assert (body["all_rows"], body["total"], body["limit"], body["group_by"]) == (3, 3, 2, "name")
    assert body["has_device"] is False and body["has_stacks"] is True
    shape = sections.operators_impl(store, *W, group_by="shape")
    assert [r["input_shapes"] for r in shape["rows"]] == ["[[2]]", "[[4]]"] and shape["all_rows"] == 2
    stack = sections.operators_impl(store, *W, group_by="stack", paging={"search": "ADD"})
    assert [r["call_stack"] for r in stack["rows"]] == ["c.py(3)"] and stack["all_rows"] == 3
    with pytest.raises(BadParameter, match="group_by must be one of name, shape, stack, not 'module'"):
        sections.operators_impl(store, *W, group_by="module")
    with pytest.raises(BadParameter, match="limit"):
        sections.operators_impl(store, *W, paging={"limit": 0})


def test_operators_say_device_work_and_no_stacks(tmp_path):
    d = digest()
    d.ops_by_name.add(name="a", device_total_ns=5)
    body = sections.operators_impl(store_of(tmp_path, d), *W)
    assert body["has_device"] is True and body["has_stacks"] is False and body["all_rows"] == 1


def test_operators_csv_columns_and_every_page(tmp_path):
    d = digest()
    for i in range(1, 1004):  # 1003 rows: two pages of the largest limit (1000)
        d.ops_by_name.add(name=f"op{i:04d}", calls=i)
    store = store_of(tmp_path, d)
    name, header, cells = sections.operators_csv(store, *W, paging={"sort": "calls", "order": "asc", "offset": 7,
                                                                     "limit": 3})
    rows = list(cells)
    assert name == "operators-name.csv"
    assert "input_shapes" not in header and "call_stack" not in header and header[:1] == ["name"]
    assert "work.flops" in header  # a field of the single sub-message WorkRates
    assert len(rows) == 1003  # offset and limit of the page asked are not the file's
    calls = header.index("calls")
    assert [r[calls] for r in rows[:2]] == [1, 2] and rows[-1][calls] == 1003 and rows[-1][0] == "op1003"
    _, by_shape, _ = sections.operators_csv(store, *W, group_by="shape")
    assert "input_shapes" in by_shape and "call_stack" in by_shape
    name, _, cells = sections.operators_csv(store, *W, group_by="stack", paging={"search": "op100"})
    assert name == "operators-stack.csv" and list(cells) == []  # ops_by_stack is empty
    _, _, cells = sections.operators_csv(store, *W, paging={"search": "op100"})
    assert len(list(cells)) == 4  # op1000 .. op1003


def test_scalar_fields():
    fields = sections.scalar_fields(pb.OpStat)
    assert fields[:3] == ("name", "input_shapes", "call_stack")
    assert "kernels" not in fields and "work" not in fields and "work.flops" in fields
    kernel = sections.scalar_fields(pb.KernelStat)
    assert "pmu" not in kernel and "pipes" not in kernel and not any(f.startswith("pmu.") for f in kernel)
    assert "mean_blocks" in kernel and "work.tflops" in kernel


def test_one_operators_detail(tmp_path):
    store = store_of(tmp_path, ops_digest())
    by_name = sections.operator_detail_impl(store, *W, "aten::mm")
    assert by_name["calls"] == 3 and by_name["stacks_by_shape"] is False and by_name["input_shapes"] is None
    assert [s["call_stack"] for s in by_name["stacks"]] == ["a.py(1)", "b.py(2)"]
    assert "kernels" not in by_name["stacks"][0] and [k["name"] for k in by_name["kernels"]] == ["gemm"]
    assert (by_name["run"], by_name["worker"], by_name["window"], by_name["name"]) == (*W, "aten::mm")
    shaped = sections.operator_detail_impl(store, *W, "aten::mm", shapes="[[2]]")
    assert shaped["calls"] == 2 and shaped["stacks_by_shape"] is True and shaped["input_shapes"] == "[[2]]"
    assert [s["call_stack"] for s in shaped["stacks"]] == ["a.py(1)"]
    assert [k["name"] for k in shaped["kernels"]] == ["gemm_small"]
    with pytest.raises(NotFound, match=r"^unknown operator: 'aten::mm' with input shapes '\[\[8\]\]'$"):
        sections.operator_detail_impl(store, *W, "aten::mm", shapes="[[8]]")
    with pytest.raises(NotFound, match=r"^unknown operator: 'aten::bmm'$"):
        sections.operator_detail_impl(store, *W, "aten::bmm")


def test_a_detail_by_shape_whose_stacks_carry_no_shapes_keeps_them_all(tmp_path):
    d = ops_digest()
    d.ops_by_shape.add(name="aten::add", input_shapes="[[1]]", calls=5)
    body = sections.operator_detail_impl(store_of(tmp_path, d), *W, "aten::add", shapes="[[1]]")
    assert body["stacks_by_shape"] is False and [s["call_stack"] for s in body["stacks"]] == ["c.py(3)"]


def kernels_digest() -> pb.Digest:
    d = digest()
    d.kernels_by_name.add(name="k1", total_ns=30, calls=1)
    d.kernels_by_name.add(name="k2", total_ns=50, calls=2)
    d.kernels_by_name.add(name="k3", total_ns=-1, calls=3)
    d.kernels_by_op.add(name="k2", op_name="aten::mm", total_ns=50)
    d.kernels_by_op.add(name="k1", op_name="aten::add", total_ns=30)
    d.cores.add(core="AI_CORE", calls=4)
    return d


def test_kernels_both_tables_one_page(tmp_path):
    body = sections.kernels_impl(store_of(tmp_path, kernels_digest()), *W, paging={"sort": "total_ns", "limit": 1})
    assert [k["name"] for k in body["kernels_by_name"]] == ["k2"] and body["kernels_by_name_all"] == 3
    assert body["total"] == 3 and body["limit"] == 1
    assert body["total_ns"] == 80  # 30 + 50; the unknown -1 not summed
    assert [k["op_name"] for k in body["kernels_by_op"]] == ["aten::mm"]
    assert body["kernels_by_op_total"] == 2 and body["kernels_by_op_all"] == 2
    assert [c["core"] for c in body["cores"]] == ["AI_CORE"]
    searched = sections.kernels_impl(store_of(tmp_path, kernels_digest()), *W, paging={"search": "ADD"})
    assert searched["kernels_by_name"] == [] and [k["name"] for k in searched["kernels_by_op"]] == ["k1"]
    assert searched["kernels_by_op_total"] == 1 and searched["kernels_by_op_all"] == 2


def test_kernels_csv(tmp_path):
    store = store_of(tmp_path, kernels_digest())
    name, header, cells = sections.kernels_csv(store, *W, paging={"sort": "calls", "order": "asc"})
    assert name == "kernels-name.csv" and "op_name" not in header and "pmu" not in header
    assert [row[0] for row in cells] == ["k1", "k2", "k3"]
    name, header, cells = sections.kernels_csv(store, *W, group_by="op")
    assert name == "kernels-op.csv" and header[:2] == ["name", "op_name"]
    assert [row[:2] for row in cells] == [["k2", "aten::mm"], ["k1", "aten::add"]]
    with pytest.raises(BadParameter, match="group_by must be one of name, op, not 'stack'"):
        sections.kernels_csv(store, *W, group_by="stack")


def memory_digest() -> pb.Digest:
    d = digest()
    mem = d.memory.add(device="cuda:0", peak_ts_ns=T0 + 60, peak_allocated_bytes=9)
    mem.curve_ts_ns.extend([T0, T0 + 60, -1])
    mem.events.add(op="a", bytes=4, alloc_ns=T0 + 10, free_ns=T0 + 20)
    mem.events.add(op="b", bytes=5, alloc_ns=T0 + 30, free_ns=-1)
    mem.events.add(op="a", bytes=2, alloc_ns=-1, free_ns=T0 + 50)
    d.memory.add(device="CPU", peak_ts_ns=-1)
    return d


def test_memory_times_are_relative(tmp_path):
    devices = sections.memory_impl(store_of(tmp_path, memory_digest()), *W)["devices"]
    assert [m["device"] for m in devices] == ["cuda:0", "CPU"]
    assert devices[0]["curve_ts_ns"] == [0, 60, -1] and devices[0]["peak_ts_ns"] == 60
    assert [(e["alloc_ns"], e["free_ns"]) for e in devices[0]["events"]] == [(10, 20), (30, -1), (-1, 50)]
    assert devices[1]["peak_ts_ns"] == -1 and devices[0]["peak_allocated_bytes"] == 9


def test_memory_range(tmp_path):
    store = store_of(tmp_path, memory_digest())
    whole = sections.memory_range_impl(store, *W, "cuda:0")
    assert (whole["device"], whole["start_ns"], whole["end_ns"]) == ("cuda:0", None, None)
    assert [(e["alloc_ns"], e["bytes"]) for e in whole["events"]] == [(10, 4), (30, 5), (-1, 2)]
    assert whole["events_total"] == 3
    # [10, 25] relative: only the allocation at 10 (the one at 30 is after the end)
    part = sections.memory_range_impl(store, *W, "cuda:0", start_ns=10, end_ns=25)
    assert [(e["alloc_ns"], e["free_ns"]) for e in part["events"]] == [(10, 20)] and part["start_ns"] == 10
    assert part["ops"] == [{"name": "a", "allocations": 1, "bytes": 4, "max_bytes": 4, "freed": 1}]
    # from 30 on: the allocation at 30
    assert [e["alloc_ns"] for e in sections.memory_range_impl(store, *W, "cuda:0", start_ns=30)["events"]] == [30]
    # up to 10: the allocation at 10 only (-1 is before the window, not in a range)
    assert [e["alloc_ns"] for e in sections.memory_range_impl(store, *W, "cuda:0", end_ns=10)["events"]] == [10]
    assert sections.memory_range_impl(store, *W, "cuda:0", start_ns=5, end_ns=5)["events"] == []  # equal ends
    with pytest.raises(BadParameter, match=r"^start_ns \(6\) is after end_ns \(5\)$"):
        sections.memory_range_impl(store, *W, "cuda:0", start_ns=6, end_ns=5)
    with pytest.raises(NotFound, match=r"^unknown device: 'npu:0'$"):
        sections.memory_range_impl(store, *W, "npu:0")


def test_communication_calls_are_relative(tmp_path):
    d = digest()
    d.communication.calls.add(kind="AllReduce", start_ns=T0 + 100)
    d.communication.calls.add(kind="Send", start_ns=-1)
    d.communication.total_ns = 12
    body = sections.communication_impl(store_of(tmp_path, d), *W)
    assert [c["start_ns"] for c in body["communication"]["calls"]] == [100, -1]
    assert body["communication"]["total_ns"] == 12 and isinstance(body["figures"], dict)
    assert body["run"] == "r" and body["problems"] == []


def test_an_unknown_window_is_not_found(tmp_path):
    with pytest.raises(NotFound, match="unknown run/worker/window"):
        sections.overview_impl(store_of(tmp_path, digest()), "r", "w", "2")


def test_every_sections_head_names_the_window_and_its_files_relatively(tmp_path):
    d = digest()
    d.problems.add(file=str(tmp_path / "r" / "w.json"), message="odd", severity="warning")
    store = store_of(tmp_path, d)
    for impl in (sections.overview_impl, sections.modules_impl, sections.suggestions_impl, sections.operators_impl,
                 sections.kernels_impl, sections.memory_impl, sections.communication_impl):
        body = impl(store, *W)
        assert (body["run"], body["worker"], body["window"]) == W, impl.__name__
        assert body["problems"] == [{"file": "r/w.json", "message": "odd", "severity": "warning"}], impl.__name__


def test_one_stack_row_is_stacks_and_the_overview_carries_figures_and_coverage(tmp_path):
    from canning_tb.analysis.summary import window_figures
    d = digest()
    d.ops_by_stack.add(name="a", call_stack="x.py(1)")
    d.coverage.files.add()
    store = store_of(tmp_path, d)
    assert sections.operators_impl(store, *W)["has_stacks"] is True
    body = sections.overview_impl(store, *W)
    assert body["figures"] == window_figures(d)  # the analysis' own, as it is
    assert len(body["coverage"]["files"]) == 1 and body["coverage"]["checks"] == []


def test_the_csv_ignores_the_pages_offset_and_limit_and_refuses_a_bad_sort_at_once(tmp_path):
    store = store_of(tmp_path, ops_digest())
    for paging in ({"offset": -1}, {"limit": 0}, {"offset": 10**6, "limit": 10**6}):
        assert len(list(sections.operators_csv(store, *W, paging=paging)[2])) == 3, paging
    with pytest.raises(BadParameter, match="sort"):
        sections.operators_csv(store, *W, paging={"sort": "nope"})  # before a row is read, not midway


def test_the_kernels_csv_searches_and_sorts(tmp_path):
    store = store_of(tmp_path, kernels_digest())
    _, header, cells = sections.kernels_csv(store, *W, group_by="op", paging={"search": "ADD"})
    assert [row[:2] for row in cells] == [["k1", "aten::add"]]  # found by its operator's name
    _, header, cells = sections.kernels_csv(store, *W, paging={"sort": "calls"})
    assert [row[0] for row in cells] == ["k3", "k2", "k1"]  # calls 3, 2, 1: numbers descending by default


def test_the_scalar_fields_of_a_single_sub_message_leave_its_lists_out():
    fields = sections.scalar_fields(pb.Digest)
    assert "window.format" in fields and "average.total_ns" in fields and "schema_version" in fields
    # WindowInfo's repeated string and map, Coverage's lists: none
    assert "window.source_files" not in fields and "window.environment" not in fields
    assert not any(f.startswith("coverage.") for f in fields)
