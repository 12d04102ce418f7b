"""Wait and transfer (analysis/communication/wait_transfer.py) on digests made here, every figure by hand
(ns; written after mutation testing showed these paths untested: docs/mutants.md, issue 46). A call's
split is (wait, transfer): CANN's own figures where its file has both (capped to the call), else, for the
same call on two or more ranks, transfer = the shortest duration among them and wait = the rest."""
import numpy as np

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.communication.wait_transfer import call_splits, collective_sums, split_sources, \
    rank_figures_many, step_figures, step_figures_many, wait_transfer


def call(kind, start, dur, wait=-1, transit=-1, step=-1, seq=-1, group="g", p2p=False) -> dict:
    return dict(kind=kind, group=group, start_ns=start, dur_ns=dur, wait_ns=wait, transit_ns=transit, step=step,
                seq=seq, comm_type="p2p" if p2p else "collective")


def digest(source="", steps=(), calls=(), average=None) -> pb.Digest:
    d = pb.Digest()
    d.communication.source = source
    for number, start, dur in steps:
        d.steps.add(number=number, start_ns=start, dur_ns=dur)
    d.average_steps.extend([s[0] for s in steps] if average is None else average)
    for c in calls:
        d.communication.calls.add(**c)
    return d


def row(step, start, dur, total, wait, transfer, p2p_wait=0) -> dict:
    return {"step": step, "start_ns": start, "dur_ns": dur, "communication_total_ns": total, "wait_ns": wait,
            "p2p_wait_ns": p2p_wait, "transfer_ns": transfer}


def test_where_each_ranks_wait_and_transfer_come_from():
    d0 = digest("communication.json", calls=[
        call("AllReduce", 0, 10, wait=0, transit=0),  # CANN measured it: 0 and 0 are figures, not unknown
        call("AllGather", 100, 20, wait=5)])          # no transit time in the file: not measured
    d1 = digest("", calls=[call("AllGather", 50, 15, wait=3, transit=4)])  # measured, the file unnamed
    d2 = digest("communication.json")  # no call
    d3 = digest("communication.json", calls=[call("Broadcast", 0, 30)])  # one rank's call alone
    splits = call_splits([d0, d1, d2, d3])
    # d0's AllGather matched with d1's: transfer = min(20, 15) = 15, wait = 20 - 15 = 5; d1's stays CANN's 3 / 4
    assert [s.tolist() for s in splits] == [[[0, 0], [5, 15]], [[3, 4]], [], [[-1, -1]]]
    assert split_sources([d0, d1, d2, d3], splits) == ["communication.json + matched calls", "CANN", "", ""]


def test_wait_transfer_matches_the_calls_of_the_ranks_given():
    # one AllReduce per rank in one step [0, 1000): transfer = the shortest, 10; rank 1 waited 30 - 10 = 20
    ranks = [digest(steps=[(1, 0, 1000)], calls=[call("AllReduce", 100, 10)]),
             digest(steps=[(1, 0, 1000)], calls=[call("AllReduce", 100, 30)])]
    got = [{k: v for k, v in r.items() if k != "per_step"} for r in wait_transfer(ranks)]
    assert got == [
        {"communication_total_ns": 10, "wait_ns": 0, "p2p_wait_ns": 0, "transfer_ns": 10,
         "window_communication_total_ns": 10, "window_wait_ns": 0, "window_p2p_wait_ns": 0, "window_transfer_ns": 10},
        {"communication_total_ns": 30, "wait_ns": 20, "p2p_wait_ns": 0, "transfer_ns": 10,
         "window_communication_total_ns": 30, "window_wait_ns": 20, "window_p2p_wait_ns": 0, "window_transfer_ns": 10}]


def test_step_figures_of_one_digest():
    # wait [100, 110), transfer [110, 150): the step [0, 120) holds 10 of wait and 10 of transfer
    d = digest(steps=[(7, 0, 120)], calls=[call("AllReduce", 100, 50)])
    assert step_figures(d, np.array([[10, 40]])) == [row(7, 0, 120, 20, 10, 10)]


def test_steps_no_clock_placed_span_their_own_calls():
    """CANN's steps without device tasks (start -1) hold the calls filed under their number, and the calls of no
    step (-1), of their own rank only: from the first call's start to the last call's end."""
    rank0 = digest(steps=[(1, -1, 500), (2, -1, 300), (3, -1, 100), (4, 0, 100)], calls=[
        call("AllReduce", 200, 50, step=1), call("AllReduce", 300, 40, step=1), call("AllReduce", 1000, 30, step=2),
        call("AllGather", 50, 100, step=4)])  # step 4 starts at 0 on the clock: placed, [0, 100)
    rank1 = digest(steps=[(1, -1, 0), (0, -1, 0)], calls=[
        call("Broadcast", 9000, 10, step=1), call("Broadcast", 10_000, 20, step=-1),
        call("Broadcast", 20_000, 5, step=0)])
    # rank 0: wait 10 then transfer 40 of [200, 250); transfer [300, 340); wait 5, transfer 25 of [1000, 1030);
    # [50, 150): wait 20, transfer 80. Rank 1: all transfer.
    splits = [np.array([[10, 40], [0, 40], [5, 25], [20, 80]]), np.array([[0, 10], [0, 20], [0, 5]])]
    got = step_figures_many([rank0, rank1], splits)
    assert got[0] == [
        row(1, -1, 500, 50 + 40, 10, 40 + 40),  # [200, 340): not rank 1's calls at 9000 on
        row(2, -1, 300, 30, 5, 25),             # [1000, 1030)
        row(3, -1, 100, 0, 0, 0),               # no call of step 3: an empty span
        row(4, 0, 100, 50, 20, 30)]             # [0, 100) holds [50, 100): wait [50, 70), transfer [70, 100)
    # rank 1, step 1: [9000, 10020) (its own call and the call of no step); step 0: [10000, 20005)
    assert got[1] == [row(1, -1, 0, 30, 0, 30), row(0, -1, 0, 25, 0, 25)]


def test_calls_of_two_collectives_are_matched_each_with_its_own():
    """Per (kind, group) the j-th call of each rank: AllReduce once per rank, AllGather twice per rank (its second
    call's slot must not be the AllReduce's)."""
    r0 = digest(calls=[call("AllReduce", 0, 10), call("AllGather", 100, 50), call("AllGather", 200, 60)])
    r1 = digest(calls=[call("AllReduce", 0, 12), call("AllGather", 100, 55), call("AllGather", 200, 5)])
    # AllReduce: transfer min(10, 12) = 10; AllGather 1st: min(50, 55) = 50; 2nd: min(60, 5) = 5
    assert [s.tolist() for s in call_splits([r0, r1])] == [[[0, 10], [0, 50], [55, 5]], [[2, 10], [5, 50], [0, 5]]]


def test_a_collectives_sums_are_unknown_where_one_of_its_calls_is():
    d = digest(calls=[call("AllReduce", 0, 20, wait=3, transit=4), call("AllReduce", 100, 20),
                      call("AllGather", 200, 30, wait=5, transit=6), call("AllGather", 300, 30, wait=7, transit=8)])
    split = call_splits([d])[0]
    assert split.tolist() == [[3, 4], [-1, -1], [5, 6], [7, 8]]
    assert collective_sums([d], [split]) == {(0, "AllReduce", "g"): (-1, -1), (0, "AllGather", "g"): (5 + 7, 6 + 8)}


def test_no_digest_has_no_figures():
    assert wait_transfer([]) == [] and step_figures_many([], []) == []


def test_the_mean_step_is_over_the_averaged_steps_floored_and_the_window_sums_every_step():
    kept = digest(steps=[(1, 0, 100), (2, 100, 100), (3, 200, 100)], average=[1, 2], calls=[
        call("AllReduce", 0, 10), call("AllReduce", 100, 21), call("AllReduce", 200, 90)])
    unknown = digest(steps=[(1, 0, 100), (2, 100, 100)], calls=[call("AllReduce", 0, 10)])
    stepless = digest(calls=[call("AllReduce", 0, 10)])
    splits = [np.array([[0, 10], [10, 11], [50, 40]]), np.array([[-1, -1]]), np.array([[0, 10]])]
    got = rank_figures_many([kept, unknown, stepless], splits)
    fields = ("communication_total_ns", "wait_ns", "p2p_wait_ns", "transfer_ns")
    # steps 1 and 2 (3 is not averaged): total (10 + 21) // 2 = 15, wait (0 + 10) // 2 = 5, transfer (10 + 11) // 2 = 10;
    # the window: total 10 + 21 + 90 = 121, wait 0 + 10 + 50 = 60, transfer 10 + 11 + 40 = 61
    assert [got[0][f] for f in fields] == [15, 5, 0, 10]
    assert [got[0][f"window_{f}"] for f in fields] == [121, 60, 0, 61]
    # a rank whose every call is unknown: its wait and transfer unknown (-1, not a sum of -1s), its communication known
    assert [got[1][f] for f in fields] == [5, -1, -1, -1]
    assert [got[1][f"window_{f}"] for f in fields] == [10, -1, -1, -1]
    # no step: nothing to take a mean or a sum over
    assert [got[2][f] for f in fields] + [got[2][f"window_{f}"] for f in fields] == [-1] * 8


def test_ranks_whose_clocks_differ_each_see_their_own_calls():
    """All ranks are measured on one time line, each shifted by its own offset. Rank 0 spans [10000, 10100], rank 1
    [9949, 10049]: moved to start where the one before ends, 2 ns on (rank 1 at 0 + 102 - 9949), the two stay
    apart; a shift that lost its sign (+ 9949) would lay rank 1's call [9999, 10049) on rank 0's step."""
    r0 = digest(steps=[(1, 10_000, 100)], calls=[call("AllReduce", 10_000, 50)])
    r1 = digest(steps=[(1, 9_949, 100)], calls=[call("AllReduce", 9_999, 50)])
    got = step_figures_many([r0, r1], [np.array([[0, 50]]), np.array([[0, 50]])])
    assert [r["communication_total_ns"] for rank in got for r in rank] == [50, 50]
