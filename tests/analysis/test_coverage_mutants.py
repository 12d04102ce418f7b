"""The Overview's "Data" panel (analysis/coverage.py) on tables and digests made by hand.

Every expected number is worked out by hand in the comments (issue 46: the mutants these tests kill).
Times in ns; -1 is "unknown".
"""
from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.coverage import coverage, coverage_rows, coverage_text
from canning_tb.ingest import side_tables as side
from canning_tb.ingest.table import EVENT_COLUMNS, ColumnBuilder, EventTable, Kind, sort_by_time

OUT = "/run/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/"


def tbl(kernels=0, comm=0, files=(), op_counts=None, comm_ops=0, env=None) -> EventTable:
    """`kernels` compute tasks and `comm` HCCL tasks of 10 ns each; op_statistic.csv rows with the counts
    `op_counts` (None: no table); `comm_ops` rows of communication.json's calls."""
    t = EventTable()
    cols = ColumnBuilder(EVENT_COLUMNS)
    for i in range(kernels + comm):
        kind = Kind.KERNEL if i < kernels else Kind.COMM_KERNEL
        cols.add(name=t.strings.id(f"k{i}"), kind=int(kind), ts=100 * i, dur=10, pid=1, tid=1)
    t.events = sort_by_time(cols.freeze())
    t.meta.source_files = [f if f.startswith("/") else OUT + f for f in files]
    t.meta.environment = dict(env or {})
    t.side = {}
    if op_counts is not None:
        side.put(t.side, "op_statistic", [side.row("op_statistic", op_type=f"T{i}", core_type="AI_CORE", count=c,
                                                   total_ns=1) for i, c in enumerate(op_counts)])
    side.put(t.side, "comm_ops", [side.row("comm_ops", op=f"hcom_allReduce__1_{i}_1") for i in range(comm_ops)])
    t.check()
    return t


def files_of(cov) -> dict:
    return {f.file: (f.rows, f.of_rows, f.sampled, f.note) for f in cov.files}


def figures_of(cov) -> dict:
    return {x.figure: (x.source, x.note) for x in cov.figures}


def checks_of(cov) -> dict:
    return {c.figure: (c.value_a, c.value_b, round(c.difference, 6), c.agree) for c in cov.checks}


# ---------------------------------------------------------------- the files


def test_files_a_sampled_kernel_list_and_the_calls_the_events_lack():
    """3 compute tasks held; op_statistic counts 5 + 0 (None) + 0 (-2 as 0) + 2 = 7: 3 of 7, a sample.
    1 HCCL task in the events, 4 calls in communication.json: 1 of 4. 2 CANN steps."""
    t = tbl(kernels=3, comm=1, op_counts=[5, None, -2, 2], comm_ops=4,
            files=["kernel_details.csv", "kernel_details.csv", "op_statistic.csv", "communication.json",
                   "step_trace_time.csv", "trace_view.json"])
    d = pb.Digest()
    d.cann_steps.add(step=1)
    d.cann_steps.add(step=2)
    cov = coverage(t, d)
    got = files_of(cov)
    # the path read twice is listed once, in the order read; the events' HCCL entry last
    assert [f.file for f in cov.files] == ["kernel_details.csv", "op_statistic.csv", "communication.json",
                                           "step_trace_time.csv", "trace_view.json", "HCCL operators in the events"]
    rows, of_rows, sampled, note = got["kernel_details.csv"]
    assert (rows, of_rows, sampled) == (3, 7, True) and note.startswith("3 of the 7 compute tasks")
    assert got["op_statistic.csv"] == (7, 7, False, "")
    assert got["communication.json"] == (4, 4, False, "")
    assert got["step_trace_time.csv"] == (2, 2, False, "")
    assert got["trace_view.json"] == (-1, -1, False, "")
    rows, of_rows, sampled, note = got["HCCL operators in the events"]
    assert (rows, of_rows, sampled) == (1, 4, True) and note.startswith("1 of the 4 HCCL calls")
    covers = {f.file: f.covers for f in cov.files}
    assert "one row per device task" in covers["kernel_details.csv"]
    assert "the timeline" in covers["trace_view.json"]


def test_files_without_a_sample():
    """op_statistic counts 2, the events hold 2 compute tasks: rows = of_rows = 2, no sample; 2 HCCL tasks in
    the events and 2 calls in communication.json: no extra entry."""
    t = tbl(kernels=2, comm=2, op_counts=[2], comm_ops=2,
            files=["kernel_details.csv", "op_statistic.csv", "communication.json"])
    cov = coverage(t, pb.Digest())
    assert files_of(cov) == {"kernel_details.csv": (2, 2, False, ""), "op_statistic.csv": (2, 2, False, ""),
                             "communication.json": (2, 2, False, "")}


def test_files_without_op_statistic_have_no_count():
    """No op_statistic.csv: the kernel list's count is unknown (-1 of -1); communication.json's 0 calls count 0;
    no CANN step: step_trace_time.csv holds 0."""
    t = tbl(kernels=2, files=["kernel_details.csv", "op_statistic.csv", "communication.json",
                              "step_trace_time.csv"])
    assert files_of(coverage(t, pb.Digest())) == {
        "kernel_details.csv": (-1, -1, False, ""), "op_statistic.csv": (-1, -1, False, ""),
        "communication.json": (0, 0, False, ""), "step_trace_time.csv": (0, 0, False, "")}


def test_op_statistic_counting_no_task():
    """op_statistic's counts 0 + 0 (None): 0 tasks, a count all the same (0 of 0, not unknown)."""
    t = tbl(op_counts=[0, None], files=["kernel_details.csv", "op_statistic.csv"])
    assert files_of(coverage(t, pb.Digest())) == {"kernel_details.csv": (0, 0, False, ""),
                                                  "op_statistic.csv": (0, 0, False, "")}


def test_op_statistic_counting_fewer_is_no_sample():
    """op_statistic counts 1, the events hold 3: rows 3 of 1, not a sample (held < counted is false)."""
    t = tbl(kernels=3, op_counts=[1], files=["kernel_details.csv"])
    assert files_of(coverage(t, pb.Digest())) == {"kernel_details.csv": (3, 1, False, "")}


def test_calls_the_events_lack_without_communication_json_are_not_listed():
    """3 calls in comm_ops but no communication.json among the files (analysis.db): no events' entry; and with
    the file, 0 HCCL tasks of 3 are listed."""
    t = tbl(comm_ops=3, files=["analysis.db"])
    assert [f.file for f in coverage(t, pb.Digest()).files] == ["analysis.db"]
    t = tbl(comm_ops=3, files=["communication.json"])
    assert files_of(coverage(t, pb.Digest()))["HCCL operators in the events"][:3] == (0, 3, True)


def test_what_an_unknown_file_covers():
    """Files outside the list: profiler_info_N.json the rank and settings, another .json the events, any
    other file profiler output."""
    t = tbl(files=["/run/profiler_info_0.json", "/run/x/w.pt.trace.json", "/run/x/notes.txt"])
    covers = [f.covers for f in coverage(t, pb.Digest()).files]
    assert covers == ["the rank and the profiler settings", "profiler events (host and device)", "profiler output"]


# ---------------------------------------------------------------- the figures


def test_figures_of_a_sampled_ascend_window():
    """A kernel list sampled (3 of 5), op types, calls completed from communication.json, CANN's wait, links,
    groups from the metadata, the world size from the distributed arguments."""
    t = tbl(kernels=3, op_counts=[5], files=["kernel_details.csv"],
            env={"source.comm_ops": "communication.json", "source.comm_matrix": "communication_matrix.json",
                 "source.comm_groups": "profiler_metadata.json", "world_size_source": "distributed args"})
    d = pb.Digest(step_source="trace")
    d.kernel_types.add(name="MatMul", total_ns=5)
    d.communication.calls.add(dur_ns=1)
    d.communication.source = "communication.json"
    d.communication.links.add(src=0, dst=1)
    d.communication.groups.add(group="g")
    cov = coverage(t, d)
    got = figures_of(cov)
    sample_note = files_of(cov)["kernel_details.csv"][3]
    assert [x.figure for x in cov.figures] == ["steps", "kernels", "kernel_types", "cores", "communication",
                                               "wait", "matrix", "groups", "world_size"]
    assert got["steps"] == ("trace", "")  # the ProfilerStep ranges: no note
    assert got["kernels"] == ("kernel_details.csv", sample_note) and sample_note
    assert got["kernel_types"][0] == "op_statistic.csv"
    assert got["cores"] == ("op_statistic.csv", "")  # a sample: the cores of every task
    assert got["communication"][0] == "kernel_details.csv + communication.json" and got["communication"][1]
    assert got["wait"] == ("communication.json", "")
    assert got["matrix"][0] == "communication_matrix.json"
    assert got["groups"] == ("profiler_metadata.json", "")
    assert got["world_size"] == ("distributed args", "")


def test_figures_of_a_trace_alone():
    """No kernel list: kernels from the trace, cores too (no sample); calls from the events alone, wait from
    matching ranks; groups the calls name; world size 4 known without a source, 0 unknown."""
    t = tbl(kernels=1)
    d = pb.Digest()
    d.kernel_types.add(name="MatMul", total_ns=5)
    d.communication.calls.add(dur_ns=1)
    d.communication.groups.add(group="g")
    d.window.world_size = 4
    got = figures_of(coverage(t, d))
    assert got["steps"] == ("trace", "")  # no step source said: the trace's
    assert got["kernels"] == ("trace", "")
    assert got["cores"] == ("trace", "")
    assert got["communication"] == ("trace", "")
    assert got["wait"][0] == "matched calls (cross-rank view)" and got["wait"][1]
    assert got["groups"] == ("the communicators the calls name", "")
    assert got["world_size"] == ("", "")
    assert "matrix" not in got
    d.window.world_size = 1  # one rank, known
    assert figures_of(coverage(t, d))["world_size"] == ("", "")
    d.window.world_size = 0
    assert figures_of(coverage(t, d))["world_size"] == ("unknown", "")


def test_a_kernel_list_not_sampled_gives_the_cores():
    """kernel_details.csv holding every task (2 of 2): the cores come from it, the kernels carry no note."""
    t = tbl(kernels=2, op_counts=[2], files=["kernel_details.csv"])
    d = pb.Digest()
    d.kernel_types.add(name="MatMul", total_ns=5)
    got = figures_of(coverage(t, d))
    assert got["kernels"] == ("kernel_details.csv", "")
    assert got["cores"] == ("kernel_details.csv", "")


def test_figures_left_out_without_their_data():
    """No op types, calls, links or groups: steps, kernels and the world size only."""
    assert [x.figure for x in coverage(tbl(), pb.Digest()).figures] == ["steps", "kernels", "world_size"]


def test_step_notes():
    """CANN's steps: the Preparing note; the training loop's step marks: their own note, naming prof.step()."""
    got = figures_of(coverage(tbl(), pb.Digest(step_source="step_trace_time.csv")))
    assert got["steps"][0] == "step_trace_time.csv" and "Preparing" in got["steps"][1]
    got = figures_of(coverage(tbl(), pb.Digest(step_source="step_marks")))
    assert got["steps"][0] == "step_marks" and "prof.step()" in got["steps"][1]


# ---------------------------------------------------------------- the checks


def _steps_digest(source="trace") -> pb.Digest:
    """Steps 1 and 2 of the trace (compute 100 + 20, overlapped 30 + 0: 150); CANN's steps 1, 2 (communication
    40, -1 as 0, computing 150, -1 as 0); calls of step 1 (25), step 2 (15), step -1 (10), step 7 and step 0
    (1000, 2000: no step of the trace): 25 + 15 + 10 = 50 against 40."""
    d = pb.Digest(step_source=source)
    for n, c, o in ((1, 100, 30), (2, 20, 0)):
        s = d.steps.add(number=n)
        s.breakdown.compute_ns, s.breakdown.overlapped_ns = c, o
    d.cann_steps.add(step=1, communication_ns=40, computing_ns=150)
    d.cann_steps.add(step=2, communication_ns=-1, computing_ns=-1)
    for step, dur in ((1, 25), (2, 15), (-1, 10), (7, 1000), (0, 2000)):
        d.communication.calls.add(step=step, dur_ns=dur)
    return d


def test_checks_of_the_steps():
    """communication: 50 vs 40: |50 - 40| / 50 = 0.2, differ. computing: 150 vs 150 agree (0)."""
    got = checks_of(coverage(tbl(), _steps_digest()))
    assert got == {"communication": (50, 40, 0.2, False), "computing": (150, 150, 0.0, True)}


def test_what_each_check_compares():
    """Each check names its two sources and says in a note what it compares; so does every figure and file."""
    d = _steps_digest()
    d.kernels_by_name.add(name="a", total_ns=60)
    d.kernel_types.add(name="A", total_ns=100)
    d.communication.source = "communication.json"
    d.communication.links.add(src=0, dst=1)
    t = tbl(comm_ops=2, files=["communication.json"], env={"source.comm_ops": "communication.json"})
    cov = coverage(t, d)
    assert {c.figure: (c.source_a, c.source_b) for c in cov.checks} == {
        "communication": ("HCCL calls of the steps", "step_trace_time.csv"),
        "computing": ("trace", "step_trace_time.csv"),
        "kernel time": ("kernel_details.csv", "op_statistic.csv")}
    assert all(c.note for c in cov.checks)
    notes = figures_of(cov)
    assert all(notes[f][1] for f in ("kernel_types", "communication", "matrix"))
    assert all(f.covers for f in cov.files) and len(cov.files) == 2  # communication.json, the events' HCCL


def test_checks_of_cann_steps_leave_out_computing():
    """CANN's own steps: the computing check would compare CANN with itself; the communication check stays."""
    assert set(checks_of(coverage(tbl(), _steps_digest("step_trace_time.csv")))) == {"communication"}


def test_no_checks_without_cann_steps_or_calls():
    d = _steps_digest()
    del d.communication.calls[:]
    assert set(checks_of(coverage(tbl(), d))) == {"computing"}
    del d.cann_steps[:]
    assert checks_of(coverage(tbl(), d)) == {}


def test_kernel_time_check_and_the_tolerance():
    """Compute kernels 60 + 38 = 98 (the 500 of communication left out) against op_statistic's 100 + 0 (-5 as 0):
    |98 - 100| / 100 = 0.02, the tolerance itself: agree. 97: 0.03, differ."""
    d = pb.Digest()
    d.kernels_by_name.add(name="a", total_ns=60)
    d.kernels_by_name.add(name="b", total_ns=38)
    d.kernels_by_name.add(name="hcom", total_ns=500, communication=True)
    d.kernel_types.add(name="A", total_ns=100)
    d.kernel_types.add(name="B", total_ns=-5)
    assert checks_of(coverage(tbl(), d)) == {"kernel time": (98, 100, 0.02, True)}
    d.kernels_by_name[1].total_ns = 37
    assert checks_of(coverage(tbl(), d)) == {"kernel time": (97, 100, 0.03, False)}


def test_a_check_of_unknown_or_zero_values_is_unknown():
    """A value of -1 (unknown) or both 0: difference -1, not agreeing; 0 vs 5: 5 / 5 = 1, differ."""
    d = pb.Digest()
    d.kernels_by_name.add(name="a", total_ns=-1)
    d.kernel_types.add(name="A", total_ns=5)
    assert checks_of(coverage(tbl(), d)) == {"kernel time": (-1, 5, -1.0, False)}
    d.kernels_by_name[0].total_ns = 0
    d.kernel_types[0].total_ns = 0
    assert checks_of(coverage(tbl(), d)) == {"kernel time": (0, 0, -1.0, False)}
    d.kernel_types[0].total_ns = 5
    assert checks_of(coverage(tbl(), d)) == {"kernel time": (0, 5, 1.0, False)}
    d.kernels_by_name[0].total_ns = 5
    d.kernel_types[0].total_ns = 0
    assert checks_of(coverage(tbl(), d)) == {"kernel time": (5, 0, 1.0, False)}
    d.kernels_by_name[0].total_ns = 1  # 1 vs 0: |1 - 0| / 1 = 1, a difference all the same
    assert checks_of(coverage(tbl(), d)) == {"kernel time": (1, 0, 1.0, False)}


# ---------------------------------------------------------------- text and cross-rank rows


def _cov() -> pb.Coverage:
    cov = pb.Coverage()
    cov.files.add(file="kernel_details.csv", covers="tasks", rows=3, of_rows=7, sampled=True, note="3 of 7")
    cov.files.add(file="op_statistic.csv", covers="types", rows=7, of_rows=7)
    cov.files.add(file="trace_view.json", covers="events", rows=-1, of_rows=-1)
    cov.files.add(file="x.csv", covers="zero", rows=0, of_rows=0)
    cov.figures.add(figure="kernels", source="kernel_details.csv", note="a sample")
    cov.figures.add(figure="world_size", source="")
    cov.checks.add(figure="kernel time", source_a="a", value_a=1_500_000, source_b="b", value_b=1_000_000,
                   difference=0.5, agree=False)
    cov.checks.add(figure="computing", source_a="a", value_a=2_000_000, source_b="b", value_b=2_000_000,
                   difference=0.0, agree=True)
    cov.checks.add(figure="long", source_a="a", value_a=5_000_000_000, source_b="b", value_b=5_000_000_000,
                   difference=0.0, agree=True)
    cov.checks.add(figure="tasks", source_a="a", value_a=-1, source_b="b", value_b=4, difference=-1.0, agree=False)
    return cov


def test_coverage_text():
    """1 500 000 ns = 1.500 ms, 5 000 000 000 ns = 5000.000 ms; a difference of 0.5 is 50.0 %; the tasks check counts, not ms."""
    assert coverage_text(_cov()) == [
        "  kernel_details.csv (3 of 7): tasks; SAMPLE: 3 of 7",
        "  op_statistic.csv (7): types",
        "  trace_view.json: events",
        "  x.csv (0): zero",
        "  kernels from kernel_details.csv (a sample)",
        "  world_size from unknown",
        "  check kernel time: a 1.500 ms vs b 1.000 ms: differ by 50.0%",
        "  check computing: a 2.000 ms vs b 2.000 ms: agree",
        "  check long: a 5000.000 ms vs b 5000.000 ms: agree",  # 5e9 ns / 1e6, not 4999.995 (over 1 000 001)
        "  check tasks: a -1 vs b 4: unknown",
    ]


def test_coverage_rows():
    """Rank 3: the figures' sources, the sampled file, the check that disagrees (not the agreeing one, not the
    unknown one)."""
    d = pb.Digest()
    d.coverage.CopyFrom(_cov())
    assert coverage_rows([d], [3]) == [{
        "rank": 3, "sources": {"kernels": "kernel_details.csv", "world_size": ""},
        "sampled": ["kernel_details.csv: 3 of 7"],
        "disagree": ["kernel time: a 1.500 ms vs b 1.000 ms"]}]
