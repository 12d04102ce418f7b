"""analysis/summary.py on digests made by hand (issue 46's mutation round): the one ratio every share is, each
step share and category share, the slowest operator, the memory peaks, this rank's communication rows, the
run table's row and the run summary. Every expected number is worked out in the comments."""
import pytest

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis import summary as sm
from canning_tb.analysis.communication import wait_transfer as wt

# one step of 1000 ns: 100 + 50 + 30 + 20 + 10 + 5 + 15 + 40 + 200 + 530 = 1000
STEP = dict(total_ns=1000, compute_ns=100, overlapped_ns=50, communication_ns=30, memcpy_ns=20, memset_ns=10,
            device_wait_ns=5, runtime_ns=15, dataloader_ns=40, host_ns=200, idle_ns=530)


def test_share_is_part_over_total_and_unknown_without_either():
    assert sm.share(1, 4) == 0.25 and sm.share(0, 4) == 0.0 and sm.share(4, 4) == 1.0 and sm.share(1, 1) == 1.0
    assert sm.share(-1, 4) is None  # an unknown part (-1)
    assert sm.share(1, 0) is None and sm.share(1, -5) is None and sm.share(0, 0) is None
    assert sm.share(float("inf"), 1) is None and sm.share(float("nan"), 1) is None


def test_the_step_shares_on_a_device_by_hand():
    """compute (100 + 50) / 1000; communication not hidden 30 / 1000; dataloader 40 / 1000; idle 530 / 1000;
    device idle: the step less compute, overlapped, communication, memcpy, memset (210): 790 / 1000."""
    assert sm.step_shares(pb.Breakdown(**STEP), True) == {
        "compute_share": 150 / 1000, "compute_source": "device", "comm_not_hidden_share": 30 / 1000,
        "dataloader_share": 40 / 1000, "idle_share": 530 / 1000, "device_idle_share": 790 / 1000}


def test_the_step_shares_without_a_device_by_hand():
    """No device: the host operators are the computation, (host 200 + overlapped 50) / 1000; no device idle."""
    assert sm.step_shares(pb.Breakdown(**STEP), False) == {
        "compute_share": 250 / 1000, "compute_source": "host", "comm_not_hidden_share": 30 / 1000,
        "dataloader_share": 40 / 1000, "idle_share": 530 / 1000, "device_idle_share": None}


def test_device_idle_is_never_below_zero():
    """Busy 80 + 40 = 120 in a step of 100 (device streams run side by side): device idle 0, not -0.2."""
    b = pb.Breakdown(total_ns=100, compute_ns=80, communication_ns=40)
    assert sm.step_shares(b, True)["device_idle_share"] == 0.0
    assert sm.step_shares(pb.Breakdown(), True)["device_idle_share"] is None  # no step: unknown


def test_each_category_over_the_step():
    assert sm.category_shares(pb.Breakdown(**STEP)) == {
        "compute": 0.1, "overlapped": 0.05, "communication": 0.03, "memcpy": 0.02, "memset": 0.01,
        "device_wait": 0.005, "runtime": 0.015, "dataloader": 0.04, "host": 0.2, "idle": 0.53}
    assert set(sm.category_shares(pb.Breakdown()).values()) == {None}


@pytest.mark.parametrize("field,value,device", [
    ("compute_ns", 1, True), ("memset_ns", 1, True), ("device_self_ns", 1, True), ("device_total_ns", 1, True),
    ("communication_ns", 5, False),
    ("idle_ns", 5, False), ("host_ns", 5, False)])
def test_device_work_is_kernels_compute_copies_or_device_time_on_operators(field, value, device):
    d = pb.Digest()
    d.ops_by_name.add(name="aten::mm", host_self_ns=10)
    if field in ("device_self_ns", "device_total_ns"):
        setattr(d.ops_by_name[0], field, value)
    else:
        setattr(d.average, field, value)
    assert sm.has_device_work(d) is device


def test_the_kernels_total_leaves_unknown_times_out():
    """250 + 1 (a kernel of 1 ns counts); -1 (unknown) and 0 add nothing."""
    d = pb.Digest()
    for total in (250, 1, -1, 0):
        d.kernels_by_name.add(name=f"k{total}", total_ns=total)
    assert sm.kernel_total_ns(d) == 251


def ops_digest(times, metric="device_self_ns"):
    d = pb.Digest()
    for name, ns in times:
        op = d.ops_by_name.add(name=name, host_self_ns=1)
        setattr(op, metric, ns)
    return d


def test_the_slowest_operator_is_the_first_of_the_most_device_self_time():
    """ProfilerStep#3 (900) is no operator; aten::mm and aten::bmm tie at 300: the first in the digest; the share
    over the operators with time: 300 / (300 + 300 + 100) = 3 / 7; -1 (unknown) and 0 add nothing."""
    d = ops_digest([("ProfilerStep#3", 900), ("aten::mm", 300), ("aten::bmm", 300), ("aten::add", 100),
                    ("aten::x", -1), ("aten::zero", 0)])
    assert sm.slowest_op(d) == {"name": "aten::mm", "ns": 300, "metric": "device_self_ns", "share": 300 / 700}
    assert sm.slowest_op(ops_digest([("aten::a", 1), ("aten::b", 3)])) == {
        "name": "aten::b", "ns": 3, "metric": "device_self_ns", "share": 3 / 4}
    assert sm.slowest_op(ops_digest([("ProfilerStep#3", 900), ("aten::x", 0)])) is None


def test_the_slowest_operator_by_host_self_time_without_device_work():
    """No device time anywhere: host self time, aten::b 7 of 1 + 7 (the ProfilerStep range left out)."""
    d = ops_digest([("aten::a", 1), ("ProfilerStep#1", 50), ("aten::b", 7)], metric="host_self_ns")
    assert sm.slowest_op(d) == {"name": "aten::b", "ns": 7, "metric": "host_self_ns", "share": 7 / 8}


def test_memory_peaks_put_the_cpu_last_in_any_case():
    d = pb.Digest()
    for dev, peak in (("cpu", 1), ("npu:0", 2), ("CPU", 3), ("npu:1", 4)):
        d.memory.add(device=dev, peak_allocated_bytes=peak, capacity_bytes=10 * peak)
    assert sm.memory_peaks(d) == [{"device": "npu:0", "peak_bytes": 2, "capacity_bytes": 20},
                                  {"device": "npu:1", "peak_bytes": 4, "capacity_bytes": 40},
                                  {"device": "cpu", "peak_bytes": 1, "capacity_bytes": 10},
                                  {"device": "CPU", "peak_bytes": 3, "capacity_bytes": 30}]


def comm_digest():
    """Step 1 (1000 ns: overlapped 100, not overlapped 50), step 2 (2000 ns: 0 and 400); the mean step 1500 ns
    (50 and 225). Calls: step 1 AllReduce on g0 (30 ns, 100 bytes; 20 ns, bytes unknown), Broadcast on g1 (50 ns,
    8 bytes); step 2 AllGather on g0 (10 ns, 4 bytes); a call of step 3, which the digest does not hold."""
    d = pb.Digest()
    d.steps.add(number=1, dur_ns=1000, breakdown=pb.Breakdown(total_ns=1000, overlapped_ns=100, communication_ns=50))
    d.steps.add(number=2, dur_ns=2000, breakdown=pb.Breakdown(total_ns=2000, communication_ns=400))
    d.average.CopyFrom(pb.Breakdown(total_ns=1500, overlapped_ns=50, communication_ns=225))
    for step, kind, group, dur, size in ((1, "AllReduce", "g0", 30, 100), (1, "Broadcast", "g1", 50, 8),
                                         (1, "AllReduce", "g0", 20, -1), (2, "AllGather", "g0", 10, 4),
                                         (3, "AllReduce", "g0", 99, 1)):
        d.communication.calls.add(step=step, kind=kind, group=group, dur_ns=dur, bytes=size)
    d.communication.calls_truncated = True
    return d


FOUND = {"per_step": [{"step": 1, "wait_ns": 10, "p2p_wait_ns": 2, "transfer_ns": 30}],
         "wait_ns": 5, "p2p_wait_ns": 1, "transfer_ns": 15,
         "window_wait_ns": 100, "window_p2p_wait_ns": 3, "window_transfer_ns": 200}


def test_communication_rows_of_the_mean_step_the_window_and_each_step():
    """The window: 1000 + 2000 ns, overlapped 100 + 0, not overlapped 50 + 400 (share 450 / 3000). Step 1's
    AllReduce calls on g0: 2, 30 + 20 ns, bytes unknown (one call's are); its Broadcast: 50 ns too, listed after
    (same time, kind by name). Step 2 has no wait / transfer row: -1 (unknown)."""
    got = sm.communication_figures(comm_digest(), found=FOUND)
    assert got["mean"] == {"dur_ns": 1500, "total_ns": 275, "overlapped_ns": 50, "not_overlapped_ns": 225,
                           "not_overlapped_share": 225 / 1500, "wait_ns": 5, "p2p_wait_ns": 1, "transfer_ns": 15}
    assert got["window"] == {"dur_ns": 3000, "total_ns": 550, "overlapped_ns": 100, "not_overlapped_ns": 450,
                             "not_overlapped_share": 450 / 3000, "wait_ns": 100, "p2p_wait_ns": 3,
                             "transfer_ns": 200}
    assert got["steps"] == [
        {"step": 1, "dur_ns": 1000, "total_ns": 150, "overlapped_ns": 100, "not_overlapped_ns": 50,
         "not_overlapped_share": 50 / 1000, "wait_ns": 10, "p2p_wait_ns": 2, "transfer_ns": 30,
         "collectives": [{"kind": "AllReduce", "group": "g0", "calls": 2, "total_ns": 50, "bytes": -1},
                         {"kind": "Broadcast", "group": "g1", "calls": 1, "total_ns": 50, "bytes": 8}]},
        {"step": 2, "dur_ns": 2000, "total_ns": 400, "overlapped_ns": 0, "not_overlapped_ns": 400,
         "not_overlapped_share": 400 / 2000, "wait_ns": -1, "p2p_wait_ns": -1, "transfer_ns": -1,
         "collectives": [{"kind": "AllGather", "group": "g0", "calls": 1, "total_ns": 10, "bytes": 4}]}]
    assert got["calls_truncated"] is True


def test_a_steps_collectives_by_time_then_kind_then_group_and_bytes_summed():
    """Step 1: AllReduce on g1 (5 + 7 ns, 3 + 4 bytes), AllReduce on g0 (12 ns), Broadcast on g0 (40 ns):
    Broadcast first (most time), then the two AllReduce by group."""
    d = pb.Digest()
    for kind, group, dur, size in (("AllReduce", "g1", 5, 3), ("AllReduce", "g0", 12, 0), ("Broadcast", "g0", 40, -1),
                                   ("AllReduce", "g1", 7, 4)):
        d.communication.calls.add(step=1, kind=kind, group=group, dur_ns=dur, bytes=size)
    assert sm._step_collectives(d, 1) == [
        {"kind": "Broadcast", "group": "g0", "calls": 1, "total_ns": 40, "bytes": -1},
        {"kind": "AllReduce", "group": "g0", "calls": 1, "total_ns": 12, "bytes": 0},
        {"kind": "AllReduce", "group": "g1", "calls": 2, "total_ns": 12, "bytes": 7}]


def test_communication_figures_take_this_digests_own_row_of_the_ranks(monkeypatch):
    """Without `found`, wait / transfer are matched over `ranks` (this digest among them), or this digest alone:
    the row at this digest's position is its own."""
    asked = []

    def fake(digests):
        asked.append(list(digests))
        return [dict(FOUND, wait_ns=1000 + i, per_step=[]) for i in range(len(digests))]

    monkeypatch.setattr(wt, "wait_transfer", fake)
    other, mine = pb.Digest(), comm_digest()
    got = sm.communication_figures(mine, ranks=[other, mine, pb.Digest()])
    assert got["mean"]["wait_ns"] == 1001 and got["steps"][0]["wait_ns"] == -1
    assert asked[0][1] is mine and len(asked[0]) == 3
    assert sm.communication_figures(mine)["mean"]["wait_ns"] == 1000 and asked[1] == [mine]


def test_a_rank_row_without_memory_operators_or_steps():
    """No memory: "" and -1; no operator: "" and -1, the metric it would have used (device: kernels ran);
    no step time: shares -1 (unknown)."""
    d = pb.Digest()
    d.kernels_by_name.add(name="k", total_ns=5)
    assert sm.rank_row(d) == {"steps": 0, "step_ns": 0, "compute_share": -1.0, "comm_not_hidden_share": -1.0,
                              "memory_device": "", "memory_peak_bytes": -1, "memory_capacity_bytes": -1,
                              "slowest_op": "", "slowest_op_ns": -1, "slowest_op_metric": "device_self_ns"}
    assert sm.rank_row(pb.Digest())["slowest_op_metric"] == "host_self_ns"


def test_a_rank_row_shows_the_highest_device_peak_and_the_cpu_only_without_another():
    d = pb.Digest()
    d.memory.add(device="CPU", peak_allocated_bytes=5000, capacity_bytes=-1)
    assert (sm.rank_row(d)["memory_device"], sm.rank_row(d)["memory_peak_bytes"]) == ("CPU", 5000)
    d.memory.add(device="cuda:0", peak_allocated_bytes=900, capacity_bytes=1000)
    d.memory.add(device="cuda:1", peak_allocated_bytes=900, capacity_bytes=2000)  # a tie: the first
    d.memory.add(device="cuda:2", peak_allocated_bytes=10, capacity_bytes=3000)
    row = sm.rank_row(d)
    assert (row["memory_device"], row["memory_peak_bytes"], row["memory_capacity_bytes"]) == ("cuda:0", 900, 1000)


def test_window_figures_count_unknown_step_times_as_nothing_and_say_the_steps_source():
    """Steps of 1000, 3000 and -1 (unknown) ns: 4000 in all; the source "" reads as "trace", with no note."""
    d = pb.Digest()
    for n, dur in ((1, 1000), (2, 3000), (3, -1)):
        d.steps.add(number=n, dur_ns=dur)
    d.average.CopyFrom(pb.Breakdown(total_ns=2000, host_ns=500))
    f = sm.window_figures(d)
    assert (f["steps"], f["total_step_ns"], f["average_step_ns"]) == (3, 4000, 2000)
    assert (f["step_source"], f["step_note"], f["compute_source"], f["compute_share"]) == ("trace", "", "host", 0.25)
    assert f["average_shares"]["host"] == 0.25 and f["device_idle_share"] is None
    d.step_source = "step_marks"
    f = sm.window_figures(d)
    assert f["step_source"] == "step_marks" and "prof.step()" in f["step_note"]


def row(rank, **kw):
    base = {"rank": rank, "step_ns": -1, "compute_share": -1.0, "comm_not_hidden_share": -1.0,
            "memory_peak_bytes": -1, "slowest_op": "", "slowest_op_ns": -1, "slowest_op_metric": "device_self_ns"}
    return {**base, **kw}


def test_the_run_summary_counts_zero_as_known_and_takes_the_first_of_equal_ranks():
    """Step time 100 on ranks 0 and 1 (min and max: rank 0, the first); compute share 0.0 on rank 0 is a
    figure (min), 0.3 on ranks 1 and 2 (max: rank 1); communication known on ranks 0 and 2 only; the slowest
    operator: ranks 1 and 2 at 1 ns, rank 1 (first); rank 0's 0 ns is none."""
    rows = [row(0, step_ns=100, compute_share=0.0, comm_not_hidden_share=0.5, memory_peak_bytes=10,
                slowest_op="a", slowest_op_ns=0),
            row(1, step_ns=100, compute_share=0.3, memory_peak_bytes=10, slowest_op="b", slowest_op_ns=1),
            row(2, compute_share=0.3, comm_not_hidden_share=0.2, memory_peak_bytes=30, slowest_op="c",
                slowest_op_ns=1, slowest_op_metric="host_self_ns")]
    assert sm.run_summary(rows) == {
        "ranks": 3,
        "step_ns": {"min": 100, "min_rank": 0, "max": 100, "max_rank": 0},
        "compute_share": {"min": 0.0, "min_rank": 0, "max": 0.3, "max_rank": 1},
        "comm_not_hidden_share": {"min": 0.2, "min_rank": 2, "max": 0.5, "max_rank": 0},
        "memory_peak_bytes": {"min": 10, "min_rank": 0, "max": 30, "max_rank": 2},
        "slowest_op": {"name": "b", "ns": 1, "rank": 1, "metric": "device_self_ns"}}
    # no rank has an operator with time: none, though every rank names one at 0 ns
    assert sm.run_summary([row(0, slowest_op="a", slowest_op_ns=0), row(1, slowest_op="b", slowest_op_ns=0)])[
        "slowest_op"] is None
