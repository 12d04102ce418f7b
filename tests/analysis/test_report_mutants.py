"""The text twins of the views (analysis/report.py) on digests made by hand: every cell, note and line
worked out in the comments (issue 46: report.py under mutation). No digest is built from events here."""
from canning_tb.analysis import cluster, coverage, parallelism, summary  # noqa: F401
from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis import report
from canning_tb.analysis.communication import wait_transfer  # noqa: F401
from canning_tb.analysis.efficiency import summary as efficiency_summary  # noqa: F401
from canning_tb.analysis.report import Table
from canning_tb.analysis.rules import finding, text  # noqa: F401

# report.py imports these inside its functions; imported here, once, they are not timed in the first test that
# reaches them (under mutmut each mutant's tests run in a fork of one process that has collected this file)

MS = 1_000_000


# ---------------------------------------------------------------- Table and its cells


def test_table_text_aligns_numbers_right_and_text_left():
    """Widths: "Name" column max(4, len("ab"), len("xyz")) = 4; "N" column max(1, len("12"), len("3")) = 2
    ("unknown" for None would be 7: not here). Line: 4 + 2 + 2 (the gap) = 8 dashes."""
    t = Table("T", ["Name", "N"], [["ab", 12], ["xyz", 3]], ["a note"])
    assert str(t).split("\n") == ["T", "--------", "Name   N", "--------", "ab    12", "xyz    3", "--------",
                                  "a note"]


def test_table_text_of_none_floats_and_mixed_columns():
    """None prints "unknown" and keeps a column numeric (right-aligned); a float prints with 3 decimals;
    a column with text in it is left-aligned. Widths: max(1, len("1.500"), len("unknown")) = 7, and "k"
    column max(1, 1, 1) = 1; line 7 + 2 + 1 = 10."""
    t = Table("T", ["v", "k"], [[1.5, "a"], [None, 2]])
    assert str(t).split("\n") == ["T", "-" * 10, "      v  k", "-" * 10, "  1.500  a", "unknown  2", "-" * 10]


def test_table_text_of_one_column_and_of_no_column():
    """One column of width 3: 3 dashes (no gap); no column at all: an empty line of dashes, the title kept."""
    assert str(Table("T", ["abc"], [[1]])).split("\n") == ["T", "---", "abc", "---", "  1", "---"]
    assert str(Table("T", [])).split("\n") == ["T", "", "", "", ""]


def test_fmt_cuts_long_and_multi_line_text_only():
    """A cell of exactly 100 characters is kept; 101 is cut to 97 + "..."; a second line is cut off whatever
    the first's length; a cell of 99 characters kept whole."""
    assert report._fmt("x" * 100) == "x" * 100
    assert report._fmt("y" * 99) == "y" * 99
    assert report._fmt("x" * 101) == "x" * 97 + "..."
    assert report._fmt("ab\ncd") == "ab..."
    assert report._fmt("ab\ncd\nef") == "ab..."  # the first line of three
    assert report._fmt(None) == "unknown"
    assert report._fmt(2.0) == "2.000"
    assert report._fmt(7) == "7"
    assert report._fmt("a b\tc") == "a b\tc"  # one line with spaces and a tab: whole


def test_csv_and_dict_and_repr():
    """CSV: the header and rows written as they are, None an empty cell, a formula quoted; the dict copies
    the lists (changing it leaves the table alone)."""
    t = Table("Title", ["a", "b"], [["=1+1", None], ["x", 2]], ["n"])
    assert t.to_csv() == "a,b\n'=1+1,\nx,2\n"
    d = t.to_dict()
    assert d == {"title": "Title", "columns": ["a", "b"], "rows": [["=1+1", None], ["x", 2]], "notes": ["n"]}
    d["rows"][0].append(1)
    d["columns"].append("c")
    d["notes"].append("m")
    assert t.rows[0] == ["=1+1", None] and t.columns == ["a", "b"] and t.notes == ["n"]
    assert repr(t) == "Table('Title', 2 rows)"


def test_ms_and_mb():
    """1,234,567 ns = 1.234567 ms -> 1.235 (3 decimals); 3 MiB + 512 KiB = 3.5 MiB -> "3.50 MB"."""
    assert report._ms(1_234_567) == 1.235
    assert report._ms(-1_000_000) == -1.0
    assert report._ms(2 * 10 ** 9) == 2000.0  # a divisor off by one would give 1999.998
    assert report._mb(3 * 1024 ** 2 + 512 * 1024) == "3.50 MB"


# ---------------------------------------------------------------- one window's tables


def _op(name, calls, total, lo, hi):
    return pb.OpStat(name=name, calls=calls, host_total_ns=total, host_total_min_ns=lo, host_total_max_ns=hi)


def test_op_summary_longest_first_ties_by_name_and_limit():
    """b: 6 ms over 3 calls = 2 ms each; a and c tie at 4 ms (a first by name); z: 0 calls, its mean 0.0."""
    d = pb.Digest(ops_by_name=[_op("c", 2, 4 * MS, MS, 3 * MS), _op("b", 3, 6 * MS, MS, 3 * MS),
                               _op("a", 1, 4 * MS, 4 * MS, 4 * MS), _op("z", 0, 0, 0, 0)])
    t = report.op_summary(d)
    assert t.title == "Operator summary (host time)"
    assert t.columns == ["Op Type", "Calls", "Total(ms)", "Avg(ms)", "Min(ms)", "Max(ms)", "GFLOP", "TFLOP/s", "Roof(%)"]
    rows = t.rows
    assert rows == [["b", 3, 6.0, 2.0, 1.0, 3.0, None, None, None], ["a", 1, 4.0, 4.0, 4.0, 4.0, None, None, None],
                    ["c", 2, 4.0, 2.0, 1.0, 3.0, None, None, None], ["z", 0, 0.0, 0.0, 0.0, 0.0, None, None, None]]
    assert [r[0] for r in report.op_summary(d, limit=2).rows] == ["b", "a"]
    assert len(report.op_summary(d, limit=None).rows) == 4 and not report.op_summary(d).notes
    assert len(report.op_summary(d, limit=0).rows) == 4  # 0: no limit, as None


def test_op_summary_without_operators_says_why():
    t = report.op_summary(pb.Digest())
    assert t.rows == [] and t.notes == [
        "No operator in this window: the profiler recorded no host operator (a window that ended before any step "
        "ran, or activities without ProfilerActivity.CPU)."]


def test_memory_summary_rows_unknown_and_empty_cache_calls():
    """cuda:0: 2 MiB allocated, peak 1 MiB, reserved 3 MiB, capacity 4 MiB; CPU: peak, reserved and capacity
    unknown (-1, -1, 0), each None; a peak of 0 bytes is known (0.00 MB). empty_cache: the larger count, 5."""
    d = pb.Digest(memory=[
        pb.DeviceMemory(device="cuda:0", allocations=3, frees=2, allocated_bytes=2 * 1024 ** 2,
                        peak_allocated_bytes=1024 ** 2, peak_reserved_bytes=3 * 1024 ** 2, capacity_bytes=4 * 1024 ** 2,
                        empty_cache_calls=5),
        pb.DeviceMemory(device="CPU", allocations=1, frees=0, allocated_bytes=0, peak_allocated_bytes=-1,
                        peak_reserved_bytes=-1, capacity_bytes=0, empty_cache_calls=2),
        pb.DeviceMemory(device="npu:0", peak_allocated_bytes=0, peak_reserved_bytes=0, capacity_bytes=1)])
    t = report.memory_summary(d)
    assert t.title == "Memory summary"
    assert t.columns == ["Device", "Allocations", "Frees", "Allocated", "Peak memory", "Peak reserved", "Capacity"]
    assert t.rows == [["cuda:0", 3, 2, "2.00 MB", "1.00 MB", "3.00 MB", "4.00 MB"],
                      ["CPU", 1, 0, "0.00 MB", None, None, None],
                      ["npu:0", 0, 0, "0.00 MB", "0.00 MB", "0.00 MB", "0.00 MB"]]
    assert t.notes == ["Warning: empty_cache was called 5 times; it slows the steps that follow (the allocator has "
                       "to get the memory back)."]


def test_memory_summary_empty_says_which_switch():
    """profile_memory on: nothing was allocated; off or not said: pass the switch."""
    on = pb.Digest()
    on.window.environment["settings.profile_memory"] = "true"
    off = pb.Digest()
    off.window.environment["settings.profile_memory"] = "false"
    assert report.memory_summary(on).notes == [
        "No memory records: profile_memory=True was on, but no tensor was allocated or freed in the window."]
    for d in (off, pb.Digest()):
        assert report.memory_summary(d).notes == [
            "No memory records: the window was profiled without profile_memory=True. Pass ps.Profile(..., "
            "profile_memory=True) (canning-prof performance --profile-memory) to record every allocation; it slows "
            "the steps down."]
    assert report._setting(on, "profile_memory") is True and report._setting(off, "profile_memory") is False
    assert report._setting(pb.Digest(), "profile_memory") is None
    odd = pb.Digest()
    odd.window.environment["settings.profile_memory"] = "yes"
    assert report._setting(odd, "profile_memory") is None


def test_kernel_summary_in_the_digests_order_with_limit():
    """The digest's order kept (already by time); 0 calls: mean 0.0; 3 ms over 2 calls: 1.5 ms."""
    d = pb.Digest(kernels_by_name=[pb.KernelStat(name="k1", calls=2, total_ns=3 * MS, min_ns=MS, max_ns=2 * MS),
                                   pb.KernelStat(name="k0", calls=0, total_ns=0)])
    assert report.kernel_summary(d).rows == [["k1", 2, 3.0, 1.5, 1.0, 2.0], ["k0", 0, 0.0, 0.0, 0.0, 0.0]]
    assert report.kernel_summary(d, limit=1).rows == [["k1", 2, 3.0, 1.5, 1.0, 2.0]]
    assert len(report.kernel_summary(d, limit=0).rows) == 2  # 0: no limit, as None
    t = report.kernel_summary(d)
    assert t.title == "Kernel summary (device time)"
    assert t.columns == ["Kernel", "Calls", "Total(ms)", "Avg(ms)", "Min(ms)", "Max(ms)"]


def test_device_summary_gpu_and_npu_rows():
    """Shares as % to 2 decimals (0.12345 -> 12.35), -1 unknown; 0.0 known (0.0 %); occupancy already a %.
    The NPU's PMU in a note, 3 decimals, or "not collected"."""
    g = pb.GpuEfficiency(device=0, name="A100", utilization=0.12345, sm_efficiency=-1, achieved_occupancy_pct=45.678,
                         tensor_core_share=0.0)
    g2 = pb.GpuEfficiency(device=1, name="A100", utilization=1.0, sm_efficiency=0.5, achieved_occupancy_pct=-1,
                          tensor_core_share=-1)
    g3 = pb.GpuEfficiency(device=2, name="B", utilization=0, sm_efficiency=0, achieved_occupancy_pct=0.0,
                          tensor_core_share=1)  # 0 % occupancy is known
    g4 = pb.GpuEfficiency(device=3, name="B", utilization=0, sm_efficiency=0, achieved_occupancy_pct=0.5,
                          tensor_core_share=1)
    n = pb.NpuEfficiency(device=3, name="Ascend910B", ai_core_utilization=0.5, cube_share=-1,
                         pmu=[pb.NpuPmuMetric(name="aic_mac_ratio", value=0.25), pb.NpuPmuMetric(name="x", value=1)])
    n2 = pb.NpuEfficiency(device=4, name="Ascend910B", ai_core_utilization=-1, cube_share=0.75)
    t = report.device_summary(pb.Digest(gpu_efficiency=[g, g2, g3, g4], npu_efficiency=[n, n2]))
    assert t.title == "Device efficiency (%, over the steps the average keeps)"
    assert t.columns == ["Device", "Utilization", "Est. SM efficiency", "Est. achieved occupancy",
                         "Tensor Cores / cube share"]
    assert t.rows == [["GPU 0: A100", 12.35, None, 45.68, 0.0], ["GPU 1: A100", 100.0, 50.0, None, None],
                      ["GPU 2: B", 0.0, 0.0, 0.0, 100.0], ["GPU 3: B", 0.0, 0.0, 0.5, 100.0],
                      ["NPU 3: Ascend910B", 50.0, None, None, None], ["NPU 4: Ascend910B", None, None, None, 75.0]]
    assert t.notes == ["NPU 3 PMU: aic_mac_ratio 0.250, x 1.000", "NPU 4 PMU: not collected"]


def _step(number, dur, **kw):
    s = pb.Step(number=number, dur_ns=dur, distorted=kw.pop("distorted", False),
                untraced_wait_ns=kw.pop("untraced", 0), tail_ns=kw.pop("tail", 0))
    for k, v in kw.items():
        setattr(s.breakdown, k, v)
    return s


def test_step_summary_rows_average_and_left_out_steps():
    """Step 1: 10 ms, 4 ms compute, 1 ms idle; step 2: distorted by 2 ms of device work past its host range
    (left out: "window end"); step 3: waited 1 ms of its 10 ms for queued work (over 5 %: "queued work").
    The average row: 10 ms and 4 ms compute as the digest gives them."""
    d = pb.Digest(steps=[_step(1, 10 * MS, compute_ns=4 * MS, idle_ns=MS),
                         _step(2, 12 * MS, distorted=True, tail=2 * MS),
                         _step(3, 10 * MS, distorted=True, untraced=MS)],
                  average_steps=[1], step_source="trace")
    d.average.total_ns, d.average.compute_ns, d.average.host_ns = 10 * MS, 4 * MS, MS
    t = report.step_summary(d)
    assert t.title == "Step time breakdown (ms)"
    assert t.columns == ["Step", "Total(ms)", "Compute", "Overlapped", "Communication", "Memcpy", "Memset",
                         "Device wait", "Runtime", "DataLoader", "Host", "Idle"]
    assert t.rows == [["1", 10.0, 4.0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0],
                      ["2 (window end)", 12.0] + [0.0] * 10,
                      ["3 (queued work)", 10.0] + [0.0] * 10,
                      ["average", 10.0, 4.0, 0, 0, 0, 0, 0, 0, 0, 1.0, 0]]
    assert t.notes == [
        "Step 2 is left out of the average: its device work ran 2.0 ms past its host range, into the window's end.",
        "Step 3 is left out of the average: its host waited 1.0 ms for device work queued before the window (a "
        "blocking call while the trace shows no device work running)."]


def test_step_summary_two_steps_and_a_queued_step_kept():
    """Two steps: the average row. Step 2 waited 1 ms of 10 for queued work, but the average keeps it (listed in
    average_steps): it says so, not "left out"."""
    d = pb.Digest(steps=[_step(1, 10 * MS), _step(2, 10 * MS, distorted=True, untraced=MS)], average_steps=[1, 2])
    t = report.step_summary(d)
    assert [r[0] for r in t.rows] == ["1", "2 (queued work)", "average"]
    assert t.notes == ["Step 2 includes 1.0 ms the host waited for device work queued before the window; no other "
                       "step to average instead."]


def test_step_summary_one_step_no_average_and_the_notes():
    """One step: no average row. Steps on the device clock from the trace: the note on the device's clock;
    from CANN's step trace: its step note, not the device-clock one."""
    d = pb.Digest(steps=[_step(5, 2 * MS)], step_clock="device", step_source="trace")
    t = report.step_summary(d)
    assert [r[0] for r in t.rows] == ["5"]
    assert t.notes == ["Steps measured on the device: it runs behind the host, so each step runs from its first "
                       "device event to the next step's."]
    d.step_source = "step_trace_time.csv"
    assert report.step_summary(d).notes == [
        "Steps as CANN measured them (step_trace_time.csv): the window has no ProfilerStep ranges."]
    d.step_clock, d.step_source = "host", "trace"
    assert report.step_summary(d).notes == []


def _hit(rule, gain_ns, severity="warning", **kw):
    return pb.RuleHit(rule=rule, severity=severity, title=kw.pop("title", rule.upper()), detail=f"{rule} detail",
                      gain_ns=gain_ns, **kw)


def test_suggestions_rows_ranked_by_gain_and_unknowns():
    """a: 3 ms gain, speedup 1.23456 -> 1.235; b: 1 ms; c: no gain (-1) and no speedup (0): None, None;
    extra hits ranked with the window's."""
    d = pb.Digest(rule_hits=[_hit("b", MS, speedup=1.1), _hit("c", -1, severity="info")])
    t = report.suggestions(d, extra_hits=[_hit("a", 3 * MS, speedup=1.23456)])
    assert t.rows == [["warning", "A. a detail", 3.0, 1.235], ["warning", "B. b detail", 1.0, 1.1],
                      ["info", "C. c detail", None, None]]
    assert [h.rule for h in t.hits] == ["a", "b", "c"] and t.notes == []
    assert t.title == "Suggestions" and t.columns == ["Severity", "Suggestion", "Gain(ms/step)", "Speedup"]
    assert [f["rule"] for f in t.to_dict()["findings"]] == ["a", "b", "c"]
    assert t.to_dict()["rows"] == t.rows
    assert str(t).startswith("Optimization Suggestions:\n1. [warning] A. a detail")
    zero = report.suggestions(pb.Digest(rule_hits=[_hit("z", 0, speedup=1.0)]))
    assert zero.rows == [["warning", "Z. z detail", 0.0, 1.0]]


def test_suggestions_without_finding_say_over_how_many_steps():
    """0 steps: "0 steps" and the one-step advice (n <= 1); 1 step: "1 step"; 2 steps: "2 steps." alone."""
    def note(n):
        (line,) = report.suggestions(pb.Digest(steps=[_step(i, MS) for i in range(n)])).notes
        return line
    one = (" (one step: the step-to-step variation, and the findings that need it, are unknown; call prof.step() "
           "once per step).")
    assert note(0) == "No finding: no rule's check crossed its threshold over the 0 steps measured" + one
    assert note(1) == "No finding: no rule's check crossed its threshold over the 1 step measured" + one
    assert note(2) == "No finding: no rule's check crossed its threshold over the 2 steps measured."
    t = report.suggestions(pb.Digest(steps=[_step(1, MS), _step(2, MS)]))
    assert str(t) == ("Optimization Suggestions:\n  No finding: no rule's check crossed its threshold over the 2 "
                      "steps measured.")
    empty = report.Suggestions("S", ["a"])
    assert str(empty) == "Optimization Suggestions:\n  No problem found by the rules."


# ---------------------------------------------------------------- communication


def _comm_digest(step_source="trace"):
    """One step of 10 ms; the mean step: 1 ms of communication hidden, 2 ms not (total 3 ms, 2 / 10 = 20 %)."""
    d = pb.Digest(steps=[pb.Step(number=1, dur_ns=10 * MS)], average_steps=[1], step_source=step_source)
    d.average.total_ns, d.average.overlapped_ns, d.average.communication_ns = 10 * MS, MS, 2 * MS
    return d


def test_communication_summary_rows_labels_and_unknowns():
    """g1 shows its label "dp"; g9 has none (its id shown). AllReduce: 3 ms over 2 calls = 1.5 ms; bytes 0 and
    wait / transfer 0 are known; transit bytes 0 unknown (only > 0 known). Broadcast: 0 calls (mean 0.0), its
    bytes, wait, transfer and bandwidth -1 (None), transit 5 bytes, bandwidth 0.12345 -> 0.123."""
    d = _comm_digest()
    d.communication.groups.add(group="g1", label="dp")
    d.communication.groups.add(group="g2", label="")
    d.communication.collectives.add(kind="AllReduce", group="g1", calls=2, total_ns=3 * MS, bytes=0, transit_bytes=0,
                                    wait_ns=0, transfer_ns=0, bandwidth_gbps=0)
    d.communication.collectives.add(kind="Broadcast", group="g9", calls=0, total_ns=0, bytes=-1, transit_bytes=5,
                                    wait_ns=-1, transfer_ns=-1, bandwidth_gbps=-1)
    d.communication.collectives.add(kind="Send", group="g2", calls=1, total_ns=MS, bytes=7, transit_bytes=1,
                                    wait_ns=1_500_000, transfer_ns=MS, bandwidth_gbps=0.12345)
    t = report.communication_summary(d)
    assert t.title == "Communication summary"
    assert t.columns == ["Collective", "Group", "Calls", "Total(ms)", "Avg(ms)", "Bytes", "Transit bytes", "Wait(ms)",
                         "Transfer(ms)", "Bandwidth(GB/s)"]
    assert t.rows == [["AllReduce", "dp", 2, 3.0, 1.5, 0, None, 0.0, 0.0, 0.0],
                      ["Broadcast", "g9", 0, 0.0, 0.0, None, 5, None, None, None],
                      ["Send", "g2", 1, 1.0, 1.0, 7, 1, 1.5, 1.0, 0.123]]
    # no call: the mean wait and transfer are sums over no call, 0 (known)
    assert t.notes == ["Mean step: communication 3.0 ms, of which 2.0 ms not overlapped with compute (20.0% of the "
                       "step).", "Mean step: wait 0.0 ms, transfer 0.0 ms (p2p wait 0.0 ms)."]


def test_communication_summary_cann_source_and_step_note():
    """CANN's figures: the source note; CANN's steps: the step note; the call's own wait 1 ms and transfer
    (transit) 2 ms are the mean step's (one step, kept)."""
    d = _comm_digest("step_trace_time.csv")
    d.communication.collectives.add(kind="AllReduce", group="g", calls=1, total_ns=3 * MS)
    d.communication.calls.add(kind="AllReduce", group="g", step=1, dur_ns=3 * MS, wait_ns=MS, transit_ns=2 * MS)
    d.communication.source = "communication.json"
    assert report.communication_summary(d).notes == [
        "Wait, transfer, transit bytes and bandwidth as CANN measured them (communication.json).",
        "Steps as CANN measured them (step_trace_time.csv): the window has no ProfilerStep ranges.",
        "Mean step: communication 3.0 ms, of which 2.0 ms not overlapped with compute (20.0% of the step).",
        "Mean step: wait 1.0 ms, transfer 2.0 ms (p2p wait 0.0 ms)."]


def test_communication_summary_unknown_wait_and_share():
    """A call without CANN's wait, on one rank's trace: wait unknown. A mean step of 0 ns: the share unknown."""
    d = _comm_digest()
    d.average.total_ns = 0
    d.communication.collectives.add(kind="AllReduce", group="g", calls=1, total_ns=3 * MS)
    d.communication.calls.add(kind="AllReduce", group="g", step=1, dur_ns=3 * MS, wait_ns=-1, transit_ns=-1)
    assert report.communication_summary(d).notes == [
        "Mean step: communication 3.0 ms, of which 2.0 ms not overlapped with compute (unknown of the step).",
        "Wait and transfer: unknown from this rank's trace alone (they need the other ranks' profiles of the same "
        "steps: canning-prof view on the run folder, or TensorBoard)."]


def test_communication_summary_empty_by_world_size():
    """World size 0 or 1: one process; 2 and more: this rank ran none."""
    one = ("No collective in this window: a single process (world size 1) runs no communication. Profile the ranks "
           "of a torch.distributed job (DDP, FSDP, tensor / pipeline parallel) to fill it.")
    for world in (0, 1):
        d = pb.Digest()
        d.window.world_size = world
        assert report.communication_summary(d).notes == [one]
    d = pb.Digest()
    d.window.world_size = 2
    assert report.communication_summary(d).notes == [
        "No collective in this window: this rank (of 2) ran no collective while the window recorded; record steps "
        "that communicate (e.g. the backward pass with DDP), with the device activities on."]


# ---------------------------------------------------------------- across ranks


def _rank(rank, total=0, source=""):
    """A rank's mean step: 10 ms, computing 4, communication 2, free unknown, Preparing 1, Other 0; wait 1 ms,
    p2p wait unknown, transfer 1 ms."""
    return {"rank": rank, "step_ns": 10 * MS, "computing_ns": 4 * MS, "communication_ns": 2 * MS, "free_ns": -1,
            "preparing_ns": MS, "other_ns": 0, "wait_ns": MS, "p2p_wait_ns": -1, "transfer_ns": MS,
            "communication_total_ns": total, "wait_source": source}


def _analysis(**kw):
    from canning_tb.analysis.cluster import analyse_ranks
    r = analyse_ranks([])
    r.update(kw)
    return r


def test_rank_table_with_and_without_cann():
    """CANN's split adds Preparing and Other; unknown (-1) is None, 0 is 0.0."""
    t = report._rank_table(_analysis(ranks=[_rank(3)], breakdown_source="step_trace_time.csv"))
    assert t.columns == ["Rank", "Step", "Computing", "Communication", "Free", "Preparing", "Other", "Wait",
                         "P2P wait", "Transfer"]
    assert t.rows == [[3, 10.0, 4.0, 2.0, None, 1.0, 0.0, 1.0, None, 1.0]]
    t = report._rank_table(_analysis(ranks=[_rank(3)]))
    assert t.columns == ["Rank", "Step", "Computing", "Communication", "Free", "Wait", "P2P wait", "Transfer"]
    assert t.rows == [[3, 10.0, 4.0, 2.0, None, 1.0, None, 1.0]]
    assert report._ms_known(0) == 0.0 and report._ms_known(-1) is None


def test_ranks_report_notes():
    """Ranks 0 and 1 from communication.json, rank 2 from nothing named ("unknown"); world size 8 from "the
    files" when no source is named; coverage notes per rank; 3 links of 2 MiB unmapped."""
    r = _analysis(ranks=[_rank(0, 5, "communication.json"), _rank(1, 5, "communication.json"), _rank(2)],
                  breakdown_source="step_trace_time.csv", world_size=8,
                  coverage=[{"rank": 1, "sampled": ["a.csv: 10 of 20"], "disagree": ["tasks: x 1 vs y 2"]}],
                  matrix_unmapped={"links": 3, "bytes": 2 * 1024 ** 2, "groups": []})
    text = report.ranks_report([], analysis=r)
    notes = text.split("\n\n")[0].split("\n")[8:]  # title, line, header, line, 3 rows, line
    assert notes == [
        "Computing, communication, free and Preparing as CANN measured them (step_trace_time.csv); Other: the rest "
        "of the step (the host's tail after the last device task).",
        "Wait and transfer from: communication.json (ranks 0,1); unknown (rank 2).",
        "World size 8 (the files).",
        "Data, rank 1: a.csv: 10 of 20.",
        "Data, rank 1: tasks: x 1 vs y 2.",
        "Communication matrix: 3 links (2.00 MB) are numbered inside communicators no file maps to global ranks; "
        "left out of the matrix."]
    assert text.endswith("Optimization Suggestions (across ranks):\n  No problem found by the rules.")


def test_ranks_report_quiet_notes_and_one_rank_source():
    """No communication on any rank: no wait-source note; world size -1 or 0: none; no unmapped link: none;
    one rank of a source: "rank", not "ranks"; a named world-size source."""
    r = _analysis(ranks=[_rank(0), _rank(1)], world_size=0)
    head = report.ranks_report([], analysis=r).split("\n\n")[0].split("\n")
    assert len(head) == 7  # title, line, header, line, 2 rows, line: no note
    r = _analysis(ranks=[_rank(0, 1, "analysis.db"), _rank(1)], world_size=2, world_size_source="metadata.json",
                  matrix_unmapped={"links": 0, "bytes": 5})
    assert report.ranks_report([], analysis=r).split("\n\n")[0].split("\n")[7:] == [
        "Wait and transfer from: analysis.db (rank 0); unknown (rank 1).", "World size 2 (metadata.json)."]


def test_ranks_report_parts_and_missing_keys():
    """The ranks table, the slow-rank table and the suggestions, apart by blank lines; without digests no pipeline
    is known (a flagged spread without finding is under the floors). Keys the analysis lacks (world size,
    coverage) add no note; world size 1 is known. With no analysis given, the digests' (none here)."""
    r = _analysis(ranks=[_rank(0), _rank(1)], slow_ranks=[{"metric": "free", "ratio": 0.5, "flagged": True}])
    del r["world_size"], r["coverage"]
    parts = report.ranks_report([], analysis=r).split("\n\n")
    assert len(parts) == 3 and parts[0].startswith("Ranks (ms, mean step)\n") and len(parts[0].split("\n")) == 7
    # widths: Metric 6, Ratio 5 ("0.500"), Over 5 % 8
    assert parts[1].split("\n")[-2] == "free    0.500  yes       no: under the significance floors (docs/rules.md)"
    assert parts[2] == "Optimization Suggestions (across ranks):\n  No problem found by the rules."
    r = _analysis(ranks=[_rank(0)], world_size=1)
    # title, line, header, line, one row, line, then the note
    assert report.ranks_report([], analysis=r).split("\n\n")[0].split("\n")[6:] == ["World size 1 (the files)."]
    assert report.ranks_report([]).startswith("Ranks (ms, mean step)\n")


def test_ranks_report_spread_over_top_ranks():
    """More ranks than `top`: the spread table; as many: one row a rank."""
    r = _analysis(ranks=[_rank(0), _rank(1), _rank(2)])
    assert report.ranks_report([], top=2, analysis=r).startswith("Ranks (ms, mean step): spread over 3 ranks\n")
    assert report.ranks_report([], top=3, analysis=r).startswith("Ranks (ms, mean step)\n")
    assert report.ranks_report([], analysis=r).startswith("Ranks (ms, mean step)\n")


def test_slow_rank_table_verdicts():
    """computing: flagged and a finding (its title); communication: flagged, no finding (under the floors, or
    the pipeline's stages); free: not flagged ("no"); ratio to 4 decimals."""
    analysis = {"slow_ranks": [{"metric": "computing", "ratio": 0.123456, "flagged": True},
                               {"metric": "communication", "ratio": 0.06, "flagged": True},
                               {"metric": "free", "ratio": 0.01, "flagged": False}]}
    hits = [pb.RuleHit(rule="slow_rank_computing", title="Rank 3 computes slowest"),
            pb.RuleHit(rule="stage_imbalance", title="x")]
    t = report.slow_rank_table(analysis, hits)
    assert t.title == "Slow rank check: (max - min) / mean, and the finding it gives"
    assert t.columns == ["Metric", "Ratio", "Over 5 %", "Finding"]
    assert t.rows == [["computing", 0.1235, "yes", "Rank 3 computes slowest"],
                      ["communication", 0.06, "yes", "no: under the significance floors (docs/rules.md)"],
                      ["free", 0.01, "no", "no"]]
    t = report.slow_rank_table(analysis, hits, pipeline=True)
    assert t.rows[1][3] == "no: the ranks compared are different pipeline stages (the stage finding compares them)"
    assert t.rows[2][3] == "no"


def test_spread_table_rows():
    """Times in ms; the metric's "_ns" dropped; outliers: the first 5 named, "+2" for the 7 in all; none:
    "none"; exactly 5 in all: no "+"."""
    def dist(metric, outliers, total):
        return {"metric": metric, "min": MS, "q1": 2 * MS, "median": 3 * MS, "q3": 4 * MS, "max": 5 * MS,
                "top": [{"rank": 7}, {"rank": 6}], "bottom": [{"rank": 0}],
                "outliers": [{"rank": i, "side": "high"} for i in range(outliers)], "outliers_total": total}
    t = report.spread_table({"ranks": [0] * 8, "distributions": [dist("step_ns", 6, 7), dist("free_ns", 0, 0),
                                                                  dist("wait", 5, 5), dist("x", 5, 6)]})
    assert t.title == "Ranks (ms, mean step): spread over 8 ranks"
    assert t.columns == ["Figure", "Min", "Q1", "Median", "Q3", "Max", "Highest ranks", "Lowest ranks", "Outliers"]
    assert t.notes == ["Outliers: more than 5 % from the median and a robust z-score beyond 3.5 (median absolute "
                       "deviation); every rank: --format=json."]
    five = "0 (high), 1 (high), 2 (high), 3 (high), 4 (high)"
    assert t.rows == [["step", 1.0, 2.0, 3.0, 4.0, 5.0, "7, 6", "0", five + " +2"],
                      ["free", 1.0, 2.0, 3.0, 4.0, 5.0, "7, 6", "0", "none"],
                      ["wait", 1.0, 2.0, 3.0, 4.0, 5.0, "7, 6", "0", five],
                      ["x", 1.0, 2.0, 3.0, 4.0, 5.0, "7, 6", "0", five + " +1"]]


def _path(step, dur, by_rank, hops, total):
    return {"step": step, "dur_ns": dur, "by_rank": by_rank, "hops": hops, "hops_total": total}


def _hop(rank, what="own"):
    return {"rank": rank, "start_ns": 1_500_000, "end_ns": 2_000_000, "ns": 500_000, "what": what, "after": "AllReduce",
            "waited_for": 4}


def test_paths_text_by_hand():
    """Step 2 of 4 ms: rank 1 held 3 ms (75 %), rank 0 1 ms (25 %), largest first; hops: one transfer, one own
    work; 20 hops in all with 2 listed: 18 more. A clock offset of 0 is not listed; 1,500 ns is +1.5 us."""
    r = {"critical_path": [_path(2, 4 * MS, {0: MS, 1: 3 * MS}, [_hop(1, "transfer"), _hop(0)], 20)],
         "clock_offsets": [{"rank": 0, "offset_ns": 0}, {"rank": 1, "offset_ns": 1500}, {"rank": 2, "offset_ns": -250}]}
    assert report._paths_text(r).split("\n") == [
        "", "", "Critical path across ranks (which rank held each step; clocks aligned through the collectives):",
        "  step 2: 4.000 ms: rank 1 3.000 ms (75%), rank 0 1.000 ms (25%)",
        "    rank 1 1.500 to 2.000 ms (0.500 ms): transfer of AllReduce once rank 4 arrived (the last)",
        "    rank 0 1.500 to 2.000 ms (0.500 ms): own work after AllReduce",
        "    ... 18 more hops (the MCP tool critical_path, scope ranks, step 2)",
        "  Clock offsets applied: rank 1 +1.5 us, rank 2 -0.2 us"]
    assert report._paths_text({}) == "" and report._paths_text({"critical_path": []}) == ""
    # 2,000,000,000 ns = 2000.000 ms exactly (a divisor off by one would show 1999.998)
    far = {"rank": 1, "start_ns": 2 * 10 ** 9, "end_ns": 3 * 10 ** 9, "ns": 10 ** 9, "what": "own", "after": "x"}
    assert report._hop_text(far) == "    rank 1 2000.000 to 3000.000 ms (1000.000 ms): own work after x"


def test_paths_text_in_whole_seconds_and_17_offsets():
    """A step of 2 s held 1 s by rank 0 (50 %); 17 ranks moved by 1 ms each: 16 listed (+1000.0 us each)."""
    r = {"critical_path": [_path(1, 2 * 10 ** 9, {0: 10 ** 9}, [], 0)],
         "clock_offsets": [{"rank": k, "offset_ns": 10 ** 6} for k in range(17)]}
    lines = report._paths_text(r).split("\n")
    assert lines[3] == "  step 1: 2000.000 ms: rank 0 1000.000 ms (50%)"
    assert lines[4] == "  Clock offsets applied: " + ", ".join(f"rank {k} +1000.0 us" for k in range(16))


def test_paths_text_limits():
    """A step of 0 ns divides by 1 (0 %); 7 ranks: the 6 largest named; 17 hops: 16 listed, "... 1 more"; 2 hops
    listed of 2: no "more" line; 9 steps: 8 shown; no offset: no offsets line."""
    many = {k: (k + 1) * 10 for k in range(7)}
    hops = [_hop(k) for k in range(17)]
    paths = [_path(0, 0, many, hops, 17)] + [_path(s, MS, {0: MS}, [_hop(0), _hop(1)], 2) for s in range(1, 9)]
    lines = report._paths_text({"critical_path": paths}).split("\n")
    assert lines[3] == ("  step 0: 0.000 ms: rank 6 0.000 ms (7000%), rank 5 0.000 ms (6000%), rank 4 0.000 ms (5000%), "
                        "rank 3 0.000 ms (4000%), rank 2 0.000 ms (3000%), rank 1 0.000 ms (2000%)")
    assert lines[4:20] == [report._hop_text(h) for h in hops[:16]]
    assert lines[20] == "    ... 1 more hops (the MCP tool critical_path, scope ranks, step 0)"
    assert len(lines) == 3 + 18 + 7 * 3 and lines[-1].startswith("    rank 1 ")
    assert not any("Clock offsets" in line for line in lines)


def test_data_text_and_window_report_sections():
    """The window report: head, steps, operators, suggestions always; kernels, devices, memory, communication,
    data and the critical path only where the digest has them."""
    d = pb.Digest(steps=[_step(1, 2 * MS)], step_source="window")
    d.window.rank, d.window.world_size, d.window.format = 3, 0, "kineto"
    d.average.total_ns = 2 * MS
    text = report.window_report(d)
    assert text.split("\n")[0] == ("rank 3/unknown  format kineto  steps 1 (the whole window: no step marks)  "
                                   "average step 2.0 ms")
    for absent in ("Kernel summary", "Device efficiency", "Memory summary", "Communication summary", "Data:",
                   "Critical path"):
        assert absent not in text
    assert "Step time breakdown (ms)" in text
    d.window.world_size = 1
    assert report.window_report(d).split("\n")[0].startswith("rank 3/1  format kineto")
    for i in range(11):  # the default top: 10 operators of 11
        d.ops_by_name.add(name=f"many{i:02d}", calls=1, host_total_ns=MS)
    assert "many09" in report.window_report(d) and "many10" not in report.window_report(d)
    del d.ops_by_name[:]
    d.window.world_size, d.step_source = 2, "trace"
    for i in range(4):
        d.kernels_by_name.add(name=f"k{i}", calls=1, total_ns=MS)
        d.ops_by_name.add(name=f"op{i}", calls=1, host_total_ns=MS)
    d.gpu_efficiency.add(device=0, name="G")
    d.memory.add(device="CPU")
    d.communication.collectives.add(kind="AllReduce", group="g", calls=1, total_ns=MS)
    d.coverage.files.add(file="trace.json", rows=5, covers="events")
    p = d.critical_path.add(number=1, dur_ns=2 * MS)
    p.by_category["kernel"] = MS
    text = report.window_report(d, top=2)
    assert text.split("\n")[0] == "rank 3/2  format kineto  steps 1  average step 2.0 ms"
    for present in ("Kernel summary", "Device efficiency", "Memory summary", "Communication summary",
                    "Data: the files, what each covers, where each figure comes from\n  trace.json (5): events",
                    "Critical path (what held each step", "Optimization Suggestions:"):
        assert present in text
    assert "k1" in text and "k2" not in text and "op1" in text and "op2" not in text  # top=2
    n = pb.Digest()
    n.npu_efficiency.add(device=0, name="N")
    assert "Device efficiency" in report.window_report(n)
    assert report.data_text(pb.Digest()) == "Data: the files, what each covers, where each figure comes from"
