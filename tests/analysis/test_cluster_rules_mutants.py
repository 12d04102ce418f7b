"""The cross-rank findings (analysis/rules/cluster_rules.py) on analyses made by hand: each rule's numbers, words,
floors and branches, worked out in each test's docstring. The rows are what analysis/cluster.py's analyse_ranks
gives (rank, step_ns, computing_ns, communication_ns, free_ns, per_step, ...); the ranks' graph (graph/ranks.py,
tested on its own) is stood in for by recorded calls where a test checks how a rule uses its answer.
t(0.90, n - 1), one-sided: 3.078 (1 degree of freedom), 1.886 (2), the Student's t table's values."""
from types import SimpleNamespace as NS

import pytest

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.parallelism import Parallelism
from canning_tb.analysis.rules import cluster_rules as cr
from canning_tb.analysis.rules.finding import Finding

MS = 1_000_000


def _steps(values_ms, key="compute_ns", **more):
    return [{"step": i + 1, key: int(v * MS), "overlapped_ns": 0, **more} for i, v in enumerate(values_ms)]


def _row(rank, computing_ms, comm_ms=10, free_ms=10, step_ms=100, per_step=None, **more):
    return {"rank": rank, "step_ns": step_ms * MS, "computing_ns": computing_ms * MS, "communication_ns": comm_ms * MS,
            "free_ns": free_ms * MS, "per_step": per_step or [], "steps": len(per_step or ()) or 1, "p2p_wait_ns": 0,
            **more}


def _finding(rule="slow_rank_computing", gain_ns=20 * MS, rank=0, severity="warning"):
    from canning_tb.analysis.rules.finding import evidence
    return Finding(rule, "communication", severity, f"t {rule}", "seen.", gain_ns=gain_ns,
                   evidence=[evidence("ranks", str(rank), "", rank=rank)])


# -- small helpers ---------------------------------------------------------------------------------------------

def test_step_is_the_longest_rank_step_and_zero_without_ranks():
    """max over the rows' step_ns: 90 and 120 ms -> 120 ms; no row -> 0."""
    assert cr._step_ns({"ranks": [_row(0, 1, step_ms=90), _row(1, 1, step_ms=120)]}) == 120 * MS
    assert cr._step_ns({"ranks": []}) == 0


def test_per_step_figures_by_metric():
    """computing = compute + overlapped; free = free_ns; any other metric its `<metric>_ns` key (0 when absent); a
    row whose source is not the trace (CANN's own figures) has none; a row without a source is the trace's."""
    row = {"per_step": [{"step": 4, "compute_ns": 7, "overlapped_ns": 3, "free_ns": 5, "communication_ns": 11},
                        {"step": 9, "compute_ns": 1, "overlapped_ns": 0, "free_ns": 2}]}
    assert cr._per_step(row, "computing") == {4: 10, 9: 1}
    assert cr._per_step(row, "free") == {4: 5, 9: 2}
    assert cr._per_step(row, "communication") == {4: 11, 9: 0}
    assert cr._per_step({**row, "source": "trace"}, "free") == {4: 5, 9: 2}
    assert cr._per_step({**row, "source": "step_trace_time.csv"}, "computing") == {}


def test_paired_noise_over_the_common_steps():
    """Slow rank 82, 84, 83 ms against 80 ms each step: differences 2, 4, 3 ms, sd 1 ms (ddof 1), n 3:
    1.886 x 1 ms / sqrt(3) = 1,088,882.6 ns -> 1,088,883."""
    slow = {"per_step": _steps([82, 84, 83])}
    other = {"per_step": _steps([80, 80, 80])}
    assert cr.paired_noise([slow], [other], "computing") == 1_088_883


def test_paired_noise_matches_steps_by_number_and_averages_each_side():
    """Slow steps 1-3, the others' steps 2-4: common 2 and 3. The others' side is the mean of two ranks per step:
    step 2 (70 + 90) / 2 = 80, step 3 (80 + 80) / 2 = 80; the slow rank's 84 and 81: differences 4 and 1 ms,
    sd = 3 / sqrt(2) ms, n 2: 3.078 x (3 / sqrt 2) / sqrt 2 ms = 3.078 x 1.5 ms = 4,617,000 ns."""
    slow = {"per_step": _steps([99, 84, 81])}
    a = {"per_step": [{"step": s, "compute_ns": v * MS, "overlapped_ns": 0} for s, v in ((2, 70), (3, 80), (4, 5))]}
    b = {"per_step": [{"step": s, "compute_ns": v * MS, "overlapped_ns": 0} for s, v in ((2, 90), (3, 80), (4, 5))]}
    assert cr.paired_noise([slow], [a, b], "computing") == 4_617_000


def test_paired_noise_unknown_with_one_common_step_or_none():
    """One common step (NOISE_MIN_STEPS is 2) or a rank without per-step figures: -1."""
    one = {"per_step": _steps([5])}
    three = {"per_step": _steps([1, 2, 3])}
    assert cr.paired_noise([one], [three], "computing") == -1
    assert cr.paired_noise([three], [{"per_step": []}], "computing") == -1
    assert cr.paired_noise([three], [{"per_step": _steps([1, 2, 3]), "source": "cann"}], "computing") == -1
    assert cr.paired_noise([], [three], "computing") == -1


def test_significance_floors():
    """Floor: int(0.05 x 100 ms) = 5 ms; a gain of 5 ms is at the floor (kept: below it is dropped), 4,999,999 ns
    dropped. Noise 6 ms: a gain of 6 ms is within it (dropped), 6 ms + 1 ns kept. Every call sets floor, noise,
    step and the scope "ranks"."""
    f = _finding(gain_ns=5 * MS)
    assert cr._significant(f, 100 * MS, -1) is True
    assert (f.floor_ns, f.noise_ns, f.step_ns, f.scope) == (5 * MS, -1, 100 * MS, "ranks")
    assert cr._significant(_finding(gain_ns=5 * MS - 1), 100 * MS, -1) is False
    assert cr._significant(_finding(gain_ns=6 * MS), 100 * MS, 6 * MS) is False
    f = _finding(gain_ns=6 * MS + 1)
    assert cr._significant(f, 100 * MS, 6 * MS) is True
    assert (f.severity, f.seen, f.noise_ns) == ("warning", "seen.", 6 * MS)


def test_one_step_makes_a_warning_a_hint_and_says_so():
    """Noise unknown (-1): a warning becomes info with the sentence on profiling more steps; an info stays as it is
    (no sentence); a finding without a gain (-1) is kept whatever the floors, unchanged."""
    f = _finding(gain_ns=50 * MS)
    assert cr._significant(f, 100 * MS, -1) is True
    assert f.severity == "info"
    assert f.seen == ("seen. One step per rank: the ranks' step-to-step variation is unknown, so part of this "
                      "spread may be noise; profile more steps (schedule active=3 or more) to tell.")
    f = _finding(gain_ns=50 * MS, severity="info")
    assert cr._significant(f, 100 * MS, -1) is True and f.seen == "seen."
    f = _finding(gain_ns=-1)
    assert cr._significant(f, 100 * MS, 10 * MS) is True
    assert (f.severity, f.seen, f.scope, f.floor_ns) == ("warning", "seen.", "ranks", 5 * MS)


def test_spread():
    """(max - min) / mean: 1, 2, 3 -> 2 / 2 = 1.0; 3, 5 -> 2 / 4 = 0.5; no value or a mean of 0 -> 0."""
    assert cr._spread([1.0, 2.0, 3.0]) == 1.0
    assert cr._spread([5.0, 3.0]) == 0.5
    assert cr._spread([]) == 0.0 and cr._spread([0.0, 0.0]) == 0.0


# -- slow rank ---------------------------------------------------------------------------------------------------

def _two_ranks(noisy=False):
    """Rank 0 computes 80 ms a step, rank 1 60 ms; rank 0 communicates 10 ms, rank 1 30 ms (it waits); free 10 ms
    each; steps of 100 ms. Per step (3 steps): rank 0 78, 80, 82 ms computing and 10 ms communication, rank 1 60 ms
    and 30 ms (or, `noisy`, rank 0's computing 60, 80, 100)."""
    comp0 = [60, 80, 100] if noisy else [78, 80, 82]
    r0 = _row(0, 80, comm_ms=10, per_step=[{**s, "communication_ns": 10 * MS, "free_ns": 10 * MS}
                                           for s in _steps(comp0)])
    r1 = _row(1, 60, comm_ms=30, per_step=[{**s, "communication_ns": 30 * MS, "free_ns": 10 * MS}
                                           for s in _steps([60, 60, 60])])
    return {"ranks": [r0, r1]}


def test_slow_rank_by_computing_and_by_communication():
    """Computing: (80 - 60) / 70 = 28.6 %, the most computing rank 0, gain 20 ms; per-step differences 18, 20, 22 ms:
    noise 1.886 x 2 ms / sqrt 3 = 2,177,765 ns, under the gain. Communication: (30 - 10) / 20 = 100.0 %, the least
    communicating rank 0 (the one the others wait for), gain 20 ms, the differences all 20 ms: noise 0. Free is the
    same on both (no finding)."""
    found = cr.slow_rank(_two_ranks(), Parallelism())
    by = {f.rule: f for f in found}
    assert sorted(by) == ["slow_rank_communication", "slow_rank_computing"]
    c = by["slow_rank_computing"]
    assert (c.title, c.severity, c.gain_ns, c.noise_ns, c.floor_ns, c.step_ns) == (
        "Rank 0 is slow (computing)", "warning", 20 * MS, 2_177_765, 5 * MS, 100 * MS)
    assert c.seen == ("Computing time differs by (max - min) / mean = 28.6%: 60.000 ms on rank 1 to 80.000 ms on "
                      "rank 0 per step (Ranks view: computing).")
    assert c.why == "Every collective waits for the rank with the most computing time."
    assert c.figures == {"ratio": pytest.approx(20 / 70), "max_ns": 80 * MS, "min_ns": 60 * MS}
    assert (c.value, c.figure, c.figure_value, c.view, c.ranks) == (pytest.approx(20 / 70), "computing", 80 * MS,
                                                                    "ranks", [0, 1])
    assert c.gain_basis == "the computing spread between the ranks" and c.removes_what == ["computing spread"]
    assert [(e.view, e.row, e.label, e.rank) for e in c.evidence] == [("ranks", "0", "rank 0", 0)]
    assert "balance the work per rank" in c.change_torch and "numactl" in c.change_npu
    m = by["slow_rank_communication"]
    assert (m.title, m.gain_ns, m.noise_ns, m.figure_value) == ("Rank 0 is slow (communication)", 20 * MS, 0, 10 * MS)
    assert m.seen.startswith("Communication time differs by (max - min) / mean = 100.0%: 10.000 ms on rank 0 to "
                             "30.000 ms on rank 1 per step")
    assert m.why == "The rank with the least communication is the one the others wait for inside the collectives."


def test_slow_rank_keeps_only_the_rank_the_others_wait_for():
    """Rank 1 now communicates least (5 ms against 30): the communication finding names rank 1, so the computing
    finding on rank 0 (the most computing) is dropped: it is not the rank the others wait for."""
    a = _two_ranks()
    a["ranks"][0]["communication_ns"], a["ranks"][1]["communication_ns"] = 30 * MS, 5 * MS
    for s in a["ranks"][0]["per_step"]:
        s["communication_ns"] = 30 * MS
    for s in a["ranks"][1]["per_step"]:
        s["communication_ns"] = 5 * MS
    assert [(f.rule, f.evidence[0].rank) for f in cr.slow_rank(a, Parallelism())] == [("slow_rank_communication", 1)]


def test_slow_rank_within_a_pipeline_stage():
    """Stages [0, 2] and [1, 3]: ranks compared within a stage only. Stage 0: 80 against 60 ms (a finding on rank 0,
    "among the ranks of pipeline stage 0"); stage 1: 100 and 100 (none), though stage 1 computes more than stage 0."""
    rows = [_row(0, 80, per_step=[{**s, "communication_ns": 10 * MS} for s in _steps([78, 80, 82])]),
            _row(2, 60, per_step=[{**s, "communication_ns": 10 * MS} for s in _steps([60, 60, 60])]),
            _row(1, 100), _row(3, 100)]
    par = Parallelism(stages=[[0, 2], [1, 3]])
    found = cr.slow_rank({"ranks": rows}, par)
    assert [(f.rule, f.evidence[0].rank, f.ranks) for f in found] == [("slow_rank_computing", 0, [0, 2])]
    assert found[0].seen.startswith("Computing time differs among the ranks of pipeline stage 0 by (max - min) / "
                                    "mean = 28.6%")


def test_slow_rank_skips_a_stage_with_one_rank_present():
    """Stages [0, 5] and [1, 2], rank 5 absent: stage 0 has one row (skipped); stage 1's 80 / 60 ms gives rank 1."""
    rows = [_row(0, 10), _row(1, 80, per_step=_steps([78, 80, 82])), _row(2, 60, per_step=_steps([60, 60, 60]))]
    found = cr.slow_rank({"ranks": rows}, Parallelism(stages=[[0, 5], [1, 2]]))
    assert [(f.rule, f.evidence[0].rank) for f in found] == [("slow_rank_computing", 1)]


def test_slow_rank_at_the_ratio_and_under_the_floors():
    """A spread of exactly 5 % (102.5 and 97.5 ms: 5 / 100) is not above the ratio; a spread of 20 % over a step of
    1,000 ms (gain 20 ms < the 50 ms floor) is dropped; a spread within the noise is dropped: rank 0's 60, 80, 100
    against 60 gives differences 0, 20, 40 ms, sd 20 ms, noise 1.886 x 20 / sqrt 3 = 21.8 ms above the 20 ms gain."""
    even = {"ranks": [_row(0, 102.5, per_step=_steps([102.5] * 3)), _row(1, 97.5, per_step=_steps([97.5] * 3))]}
    assert [f for f in cr.slow_rank(even, Parallelism()) if f.rule == "slow_rank_computing"] == []
    small = {"ranks": [_row(0, 110, step_ms=1000, per_step=_steps([110] * 3)),
                       _row(1, 90, step_ms=1000, per_step=_steps([90] * 3))]}
    assert [f for f in cr.slow_rank(small, Parallelism()) if f.rule == "slow_rank_computing"] == []
    assert [f.rule for f in cr.slow_rank(_two_ranks(noisy=True), Parallelism())] == ["slow_rank_communication"]


def test_slow_rank_on_one_step_is_a_hint():
    """No per-step figures: the noise unknown, the computing finding kept at 20 ms over the 5 ms floor but as info."""
    a = {"ranks": [_row(0, 80, comm_ms=10), _row(1, 60, comm_ms=10)]}
    (f,) = cr.slow_rank(a, Parallelism())
    assert (f.rule, f.severity, f.noise_ns) == ("slow_rank_computing", "info", -1)
    assert "One step per rank" in f.seen


def test_slow_rank_free_picks_the_most_idle_rank():
    """Free 30 against 10 ms (computing and communication equal): (30 - 10) / 20 = 100 %, rank 1 (the most free)."""
    a = {"ranks": [_row(0, 50, free_ms=10, per_step=[{**s, "free_ns": 10 * MS} for s in _steps([50] * 3)]),
                   _row(1, 50, free_ms=30, per_step=[{**s, "free_ns": 30 * MS} for s in _steps([50] * 3)])]}
    (f,) = cr.slow_rank(a, Parallelism())
    assert (f.rule, f.evidence[0].rank, f.gain_ns, f.figure_value) == ("slow_rank_free", 1, 20 * MS, 30 * MS)


class _Graph:
    """The ranks' graph stood in for: its ranks, its send / receive pairs; the calls a rule makes are recorded."""

    def __init__(self, ranks, p2p=()):
        self.ranks = [NS(rank=r) for r in ranks]
        self.p2p = list(p2p)


def test_balancing_a_slow_rank_as_the_graph_replays_it(monkeypatch):
    """With the ranks' graph, the gain is balance_gain's (gain, low, high) for the rank's index in the graph (rank 1
    is index 0 of [1, 0]), an estimate (not a bound), with the edit in words."""
    calls = []
    monkeypatch.setattr(cr, "balance_gain", lambda sk, i: calls.append(i) or (7, 5, 9, 3))
    f = _finding(gain_ns=20 * MS, rank=1)
    cr._balanced(f, _Graph([1, 0]), 1)
    assert calls == [0]
    assert (f.gain_ns, f.gain_low_ns, f.gain_high_ns, f.gain_is_bound, f.observation) == (7, 5, 9, False, False)
    assert f.edit == "rank 1 given the other ranks' median own work before each collective it shares"


def test_balancing_without_the_graph_or_its_answer(monkeypatch):
    """No graph: the finding unchanged. A rank not in the graph, or no answer from it: an observation whose time is
    its spread (at most 20 ms), no gain."""
    monkeypatch.setattr(cr, "balance_gain", lambda sk, i: None)
    f = _finding(gain_ns=20 * MS)
    cr._balanced(f, None, 0)
    assert (f.gain_ns, f.observation, f.at_most_ns) == (20 * MS, False, -1)
    cr._balanced(f, _Graph([0, 1]), 0)
    assert (f.gain_ns, f.observation, f.at_most_ns) == (-1, True, 20 * MS)
    monkeypatch.setattr(cr, "balance_gain", lambda sk, i: pytest.fail("not asked for a rank outside the graph"))
    f = _finding(gain_ns=20 * MS)
    cr._balanced(f, _Graph([0, 1]), 4)
    assert (f.gain_ns, f.observation, f.at_most_ns) == (-1, True, 20 * MS)


# -- slow link ---------------------------------------------------------------------------------------------------

def _col(per_rank, wait_source="wait and transfer", comm_type="collective", group="g1", kind="AllReduce"):
    return {"wait_source": wait_source, "per_rank": per_rank, "comm_type": comm_type, "group": group, "kind": kind,
            "calls": 4, "total_ns": 0}


def _link_ranks():
    """Two ranks of 2 steps each: transfer 40 ms (20 a step) on rank 0, 20 ms (10 a step) on rank 1; per step
    transfer 19, 20, 21 ms and 10 ms."""
    return [_row(0, 50, steps=2, per_step=[{**s, "transfer_ns": t * MS} for s, t in zip(_steps([50] * 3), (19, 20, 21))]),
            _row(1, 50, steps=2, per_step=[{**s, "transfer_ns": 10 * MS} for s in _steps([50] * 3)])]


def test_slow_link_in_a_group():
    """Per step 20 against 10 ms: (20 - 10) / 15 = 66.7 %, slowest rank 0, gain 10 ms; per-step differences 9, 10,
    11 ms: noise 1.886 x 1 ms / sqrt 3 = 1,088,883 ns."""
    a = {"ranks": _link_ranks(), "collectives": [_col({"0": {"transfer_ns": 40 * MS}, "1": {"transfer_ns": 20 * MS}})]}
    (f,) = cr.slow_link(a, [])
    assert (f.rule, f.title, f.gain_ns, f.noise_ns, f.severity) == ("slow_link", "Slow link in group g1", 10 * MS,
                                                                    1_088_883, "warning")
    assert f.seen == ("AllReduce in group g1: transfer time per rank and step differs by (max - min) / mean = 66.7%; "
                      "slowest rank 0 (20.000 ms vs 10.000 ms).")
    assert (f.figure, f.figure_value, f.value, f.ranks) == ("transfer", 20 * MS, pytest.approx(10 / 15), [0, 1])
    assert [(e.row, e.label, e.rank) for e in f.evidence] == [("AllReduce", "AllReduce g1", 0)]
    assert f.gain_basis == "the transfer spread in the group per step" and f.removes_what == ["transfer spread"]
    assert "hccn_tool" in f.change_npu and "NCCL_DEBUG" in f.change_torch


def test_slow_link_skips_what_it_cannot_judge():
    """Matched calls (transfer equal by construction), no wait source, one rank, point-to-point calls, a spread of
    5 % exactly (41 and 39 ms over 2 steps: 20.5 and 19.5 ms, 1 / 20): no finding."""
    per = {"0": {"transfer_ns": 40 * MS}, "1": {"transfer_ns": 20 * MS}}
    for col in (_col(per, wait_source="matched calls"), _col(per, wait_source=""), _col({"0": per["0"]}),
                _col(per, comm_type="p2p"),
                _col({"0": {"transfer_ns": 41 * MS}, "1": {"transfer_ns": 39 * MS}})):
        assert cr.slow_link({"ranks": _link_ranks(), "collectives": [col]}, []) == [], col


def test_slow_link_of_ranks_the_analysis_does_not_list():
    """Ranks 7 and 8 have no row: one step each (transfer as given), no noise: 30 against 10 ms, gain 20 ms over a
    floor of 0 (no step known): an info (one step)."""
    a = {"ranks": [], "collectives": [_col({"7": {"transfer_ns": 30 * MS}, "8": {"transfer_ns": 10 * MS}})]}
    (f,) = cr.slow_link(a, [])
    assert (f.gain_ns, f.noise_ns, f.severity, f.ranks, f.floor_ns) == (20 * MS, -1, "info", [7, 8], 0)


def test_slow_link_steps_of_zero_count_as_one():
    """Rank 0 with steps 0 (read as 1) and rank 1 with 2: per step 30 / 1 against 20 / 2 = 10 ms; gain 20 ms."""
    rows = [_row(0, 50, steps=0), _row(1, 50, steps=2)]
    a = {"ranks": rows, "collectives": [_col({"0": {"transfer_ns": 30 * MS}, "1": {"transfer_ns": 20 * MS}})]}
    (f,) = cr.slow_link(a, [])
    assert f.gain_ns == 20 * MS and f.figure_value == 30 * MS


def _digest(rank, steps, links):
    d = pb.Digest()
    d.window.rank = rank
    for i in range(steps):
        d.steps.add(number=i + 1)
    for transport, src, dst, nbytes, ns, numbering in links:
        d.communication.links.add(transport=transport, src=src, dst=dst, bytes=nbytes, time_ns=ns, numbering=numbering)
    return d


MIB32 = 32 * 2 ** 20


def test_slow_transport_over_large_transfers():
    """Two HCCS links over 2 steps: 0 -> 1 moves 2 x 32 MiB in 2 ms, 1 -> 0 the same in 4 ms. Per step 33,554,432
    bytes in 1 and 2 ms: 33.554 and 16.777 GB/s; (33.554 - 16.777) / 25.166 = 66.7 %; the slowest 1 -> 0; its gain
    2 ms - 33,554,432 / 25.165824 = 2,000,000 - 1,333,333.3 = 666,666 ns. Steps of 10 ms: floor 0.5 ms."""
    d = _digest(0, 2, [("HCCS", 0, 1, 2 * MIB32, 2 * MS, "global"), ("HCCS", 1, 0, 2 * MIB32, 4 * MS, "global")])
    (f,) = cr._slow_transport([d], {"ranks": [_row(0, 5, step_ms=10)]})
    assert (f.title, f.gain_ns, f.ranks, f.figure, f.view) == ("Slow HCCS link", 666_666, [1, 0], "bandwidth", "ranks")
    # no noise floor for links: the finding is a hint (info) and says so
    assert (f.severity, f.noise_ns) == ("info", -1)
    assert f.seen == ("HCCS bandwidth on transfers of at least 16 MiB differs across links by (max - min) / mean = "
                      "66.7%; slowest 1 -> 0 at 16.78 GB/s, mean 25.17 GB/s (Communication matrix). One step per rank: "
                      "the ranks' step-to-step variation is unknown, so part of this spread may be noise; profile more "
                      "steps (schedule active=3 or more) to tell.")
    assert f.figure_value == pytest.approx(16.777216) and f.figures["bandwidth_gbps"] == pytest.approx(16.777216)
    assert f.value == pytest.approx(16.777216 / 25.165824)
    assert [(e.row, e.label, e.rank) for e in f.evidence] == [("1->0", "matrix cell", 1)]
    assert f.gain_basis.startswith("the slowest link's transfer time per step at the links' mean")


def test_slow_transport_sums_a_link_over_the_windows_and_uses_average_steps():
    """The 0 -> 1 link in two windows (ranks 0 and 1), each 1 step: 16 MiB in 1 ms each, 32 MiB in 2 ms in all
    (16.78 GB/s); 1 -> 0: 32 MiB in 1 ms (33.55 GB/s) from a window whose 4 steps are 2 averaged steps (divided by
    2: 64 MiB in 2 ms given). Slowest 0 -> 1: 2 ms - 33,554,432 / 25.165824 = 666,666 ns."""
    a = _digest(0, 1, [("RDMA", 0, 1, 16 * 2 ** 20, MS, "global")])
    b = _digest(1, 1, [("RDMA", 0, 1, 16 * 2 ** 20, MS, "global")])
    c = _digest(2, 4, [("RDMA", 1, 0, 2 * MIB32, 2 * MS, "global")])
    c.average_steps.extend([2, 3])
    (f,) = cr._slow_transport([a, b, c], {"ranks": [_row(0, 5, step_ms=10)]})
    assert (f.ranks, f.gain_ns) == ([0, 1], 666_666)


def test_slow_transport_leaves_out_small_self_and_timeless_links():
    """Under 16 MiB (16 MiB - 1 byte), a rank to itself, 0 ns: each left out, so one link remains (a transport with
    one link gives nothing); each would give a finding if counted (steps of 5 ms: floor 250 µs). 16 MiB exactly is
    counted: 16.78 against 33.55 GB/s, gain 1 ms - 16,777,216 / 25.165824 = 333,333 ns."""
    base = ("NVLink", 0, 1, MIB32, MS, "global")
    for odd in (("NVLink", 1, 0, 16 * 2 ** 20 - 1, 4 * MS, "global"), ("NVLink", 1, 1, MIB32, 4 * MS, "global"),
                ("NVLink", 1, 0, MIB32, 0, "global")):
        assert cr._slow_transport([_digest(0, 1, [base, odd])], {"ranks": [_row(0, 1, step_ms=5)]}) == [], odd
    at16 = ("NVLink", 1, 0, 16 * 2 ** 20, MS, "global")  # 16 MiB in 1 ms, 16.78 GB/s, against 33.55: judged
    (f,) = cr._slow_transport([_digest(0, 1, [base, at16])], {"ranks": [_row(0, 1, step_ms=5)]})
    assert f.gain_ns == 333_333


def test_slow_transport_at_the_ratio_and_the_floor():
    """Two links of equal bandwidth: a spread of 0 (none). 32 MiB in 1 and in 2 ms (33.55 and 16.78 GB/s, mean
    25.17): gain 2 ms - 33,554,432 / 25.165824 = 666,666 ns; under a step of 20 ms (floor 1 ms) none, of 13 ms
    (floor 650,000 ns) kept."""
    same = _digest(0, 1, [("HCCS", 0, 1, MIB32, MS, "global"), ("HCCS", 1, 0, MIB32, MS, "global")])
    assert cr._slow_transport([same], {"ranks": [_row(0, 5, step_ms=10)]}) == []
    d = _digest(0, 1, [("HCCS", 0, 1, MIB32, MS, "global"), ("HCCS", 1, 0, MIB32, 2 * MS, "global")])
    assert cr._slow_transport([d], {"ranks": [_row(0, 5, step_ms=20)]}) == []
    (f,) = cr._slow_transport([d], {"ranks": [_row(0, 5, step_ms=13)]})
    assert (f.gain_ns, f.floor_ns) == (666_666, 650_000)


def test_a_slow_transport_link_is_replayed_unless_numbered_in_its_communicator(monkeypatch):
    """The link 1 -> 0 at 16.78 GB/s against the other links' median 33.55: factor 0.5, given to link_gain with the
    link's ends; a link numbered inside its communicator (not global ranks) is not replayed."""
    seen = []
    monkeypatch.setattr(cr, "p2p_overlaps", lambda sk: False)
    monkeypatch.setattr(cr, "link_gain", lambda sk, s, d, factor: seen.append((s, d, round(factor, 6))) or (900_000, 800_000, 1_000_000, 2))
    d = _digest(0, 1, [("HCCS", 0, 1, MIB32, MS, "global"), ("HCCS", 1, 0, MIB32, 2 * MS, "global")])
    (f,) = cr._slow_transport([d], {"ranks": [_row(0, 5, step_ms=10)]}, _Graph([0, 1]))
    assert seen == [(1, 0, 0.5)] and (f.gain_ns, f.gain_low_ns, f.gain_high_ns) == (900_000, 800_000, 1_000_000)
    local = _digest(0, 1, [("HCCS", 0, 1, MIB32, MS, "communicator"), ("HCCS", 1, 0, MIB32, 2 * MS, "communicator")])
    (f,) = cr._slow_transport([local], {"ranks": [_row(0, 5, step_ms=10)]}, _Graph([0, 1]))
    assert seen == [(1, 0, 0.5)] and f.gain_ns == 666_666


def test_link_replay_conditions(monkeypatch):
    """link_gain asked only with a graph, a factor above 0 and no overlapping sends; its answer is the gain (an
    estimate) with the edit in words; without an answer the finding stays as it was."""
    asked = []
    monkeypatch.setattr(cr, "link_gain", lambda sk, s, d, factor: asked.append(factor) or (4, 3, 5, 1))
    monkeypatch.setattr(cr, "p2p_overlaps", lambda sk: False)
    for sk, factor in ((None, 0.5), (_Graph([0, 1]), 0.0), (_Graph([0, 1]), -1.0)):
        f = _finding(gain_ns=100)
        cr._link_replayed(f, sk, 2, 3, factor)
        assert (f.gain_ns, f.edit, f.gain_is_bound) == (100, "", True)
    assert asked == []
    monkeypatch.setattr(cr, "p2p_overlaps", lambda sk: True)
    f = _finding(gain_ns=100)
    cr._link_replayed(f, _Graph([0, 1]), 2, 3, 0.25)
    assert (f.gain_ns, asked) == (100, [])
    monkeypatch.setattr(cr, "p2p_overlaps", lambda sk: False)
    f = _finding(gain_ns=100)
    cr._link_replayed(f, _Graph([0, 1]), 2, 3, 0.25)
    assert (f.gain_ns, f.gain_low_ns, f.gain_high_ns, f.gain_is_bound) == (4, 3, 5, False)
    assert f.edit == "the sends from rank 2 to rank 3 at the other links' median bandwidth (0.25x their time)"
    monkeypatch.setattr(cr, "link_gain", lambda sk, s, d, factor: None)
    f = _finding(gain_ns=100)
    cr._link_replayed(f, _Graph([0, 1]), 2, 3, 0.25)
    assert (f.gain_ns, f.edit) == (100, "")


def test_slow_link_adds_the_transport_findings():
    """slow_link returns the group findings and then the transport ones of the digests."""
    d = _digest(0, 2, [("HCCS", 0, 1, 2 * MIB32, 2 * MS, "global"), ("HCCS", 1, 0, 2 * MIB32, 4 * MS, "global")])
    a = {"ranks": _link_ranks(), "collectives": [_col({"0": {"transfer_ns": 40 * MS}, "1": {"transfer_ns": 20 * MS}})]}
    a["ranks"][0]["step_ns"] = a["ranks"][1]["step_ns"] = 10 * MS
    assert [f.title for f in cr.slow_link(a, [d])] == ["Slow link in group g1", "Slow HCCS link"]


# -- pipeline stages ---------------------------------------------------------------------------------------------

def _stages(comp_last=(88, 90, 92), last_ms=90):
    """Stage 0 = rank 0 (60 ms computing, 60 each step, p2p wait 30 ms), stage 1 = rank 1 (90 ms; 88, 90, 92)."""
    r0 = _row(0, 60, p2p_wait_ns=30 * MS, per_step=_steps([60, 60, 60]))
    r1 = _row(1, last_ms, p2p_wait_ns=2 * MS, per_step=_steps(comp_last))
    return {"ranks": [r0, r1]}, Parallelism(stages=[[0], [1]], source="declared groups")


def test_stage_imbalance_on_the_last_stage():
    """Computing 60 and 90 ms: (90 - 60) / 75 = 40.0 %, the slowest stage 1 (the last), gain 90 - 75 = 15 ms. Noise:
    the slow stage against everyone's mean per step: (60 + 88) / 2 = 74 -> 14, 75 -> 15, 76 -> 16 ms, sd 1 ms:
    1.886 / sqrt 3 ms = 1,088,883 ns."""
    a, par = _stages()
    (f,) = cr.stage_imbalance(a, par)
    assert (f.rule, f.gain_ns, f.noise_ns, f.step_ns, f.severity) == ("stage_imbalance", 15 * MS, 1_088_883,
                                                                      100 * MS, "warning")
    assert f.title == "Pipeline stages are unbalanced (stage 1, rank 1, is slowest)"
    assert f.seen == ("Computing per step differs across the 2 pipeline stages (declared groups) by (max - min) / "
                      "mean = 40.0%: stage 1 90.000 ms, the stages' mean 75.000 ms. It is the last stage, which also "
                      "computes the loss. The other stages wait for it in send / receive (p2p wait per step: stage 0 "
                      "(rank 0) 30.000 ms).")
    assert f.figures == {"ratio": pytest.approx(0.4), "slow_stage_computing_ns": 90 * MS, "mean_computing_ns": 75 * MS}
    assert (f.figure_value, f.ranks, [e.rank for e in f.evidence]) == (90 * MS, [0, 1], [1])
    assert [e.label for e in f.evidence] == ["rank 1 computing"]
    assert "--num-layer-list" in f.change_npu and "ScheduleInterleaved1F1B" in f.change_torch


def test_stage_imbalance_on_a_first_stage_of_two_ranks():
    """Stage 0 = ranks 0 and 2 (100 and 80 ms: mean 90), stage 1 = rank 1 (60 ms): (90 - 60) / 75 = 40 %, slowest stage
    0, not the last (no sentence on the loss); its ranks "0, 2"; the other stage's wait is rank 1's p2p wait."""
    rows = [_row(0, 100, p2p_wait_ns=0), _row(2, 80, p2p_wait_ns=0), _row(1, 60, p2p_wait_ns=12 * MS)]
    par = Parallelism(stages=[[0, 2], [1]], source="send / receive calls")
    (f,) = cr.stage_imbalance({"ranks": rows}, par)
    assert f.title == "Pipeline stages are unbalanced (stage 0, rank 0, 2, is slowest)"
    assert "loss" not in f.seen and "(p2p wait per step: stage 1 (rank 1) 12.000 ms)" in f.seen
    assert "stages (send / receive calls)" in f.seen
    assert (f.gain_ns, f.ranks, [e.rank for e in f.evidence], f.noise_ns) == (15 * MS, [0, 2, 1], [0, 2], -1)


def test_a_stage_wait_the_files_do_not_split_is_unknown():
    """Three stages: stage 0 = ranks 0 (wait unknown, -1) and 2 (wait 4 ms): its mean over the known one, 4 ms (not
    (4 - 0.000001) / 2); stage 1 = rank 1 (no wait given): "unknown", never a negative or zero time; stage 2 = rank 3, the
    slowest (computing 120 against 60 and 60: mean 80, (120 - 60) / 80 = 75 %)."""
    rows = [_row(0, 60, p2p_wait_ns=-1), _row(2, 60, p2p_wait_ns=4 * MS), _row(1, 60, p2p_wait_ns=-1), _row(3, 120)]
    del rows[2]["p2p_wait_ns"]  # a row without the key: unknown as well
    par = Parallelism(stages=[[0, 2], [1], [3]], source="declared groups")
    (f,) = cr.stage_imbalance({"ranks": rows}, par)
    assert f.seen.endswith("(p2p wait per step: stage 0 (rank 0, 2) 4.000 ms, stage 1 (rank 1) unknown). One step "
                           "per rank: the ranks' step-to-step variation is unknown, so part of this spread may be "
                           "noise; profile more steps (schedule active=3 or more) to tell.")


def test_no_stage_finding_without_a_pipeline_or_a_spread():
    """No pipeline (one stage or none); a second stage none of whose ranks has a row; a spread of exactly 5 %
    (102.5 and 97.5 ms: 5 / 100); a gain within the noise (stage 1's 60, 90, 120 ms against everyone's mean 60, 75,
    90: differences 0, 15, 30 ms, sd 15: noise 1.886 x 15 / sqrt 3 = 16.3 ms above the 15 ms gain)."""
    a, _ = _stages()
    assert cr.stage_imbalance(a, Parallelism(stages=[[0, 1]])) == []
    assert cr.stage_imbalance(a, Parallelism(stages=[[0], [7]])) == []
    even = {"ranks": [_row(0, 102.5), _row(1, 97.5)]}
    assert cr.stage_imbalance(even, Parallelism(stages=[[0], [1]])) == []
    noisy, par = _stages(comp_last=(60, 90, 120))
    assert cr.stage_imbalance(noisy, par) == []


def test_stages_balanced_as_the_graph_replays_it(monkeypatch):
    """Own work per stage from the graph: stage [0] 60 ms, stage [1] 90 (ranks at indices 1 and 0 of the graph); the
    mean 75 ms: factors 75 / 60 = 1.25 for index 1 and 75 / 90 = 0.8333 for index 0; scale_gain's answer is the
    gain, and the edit names the mean and the slowest stage."""
    own = {0: 90 * MS, 1: 60 * MS}
    scaled = []
    monkeypatch.setattr(cr, "p2p_overlaps", lambda sk: False)
    monkeypatch.setattr(cr, "own_work", lambda sk, i: own[i])
    monkeypatch.setattr(cr, "scale_gain", lambda sk, factors: scaled.append(factors) or (11, 10, 12, 3))
    f = _finding(rule="stage_imbalance")
    cr._stages_balanced(f, _Graph([1, 0], p2p=[1]), [[0], [1]])
    assert scaled[0] == {1: pytest.approx(1.25), 0: pytest.approx(75 / 90)}
    assert (f.gain_ns, f.gain_low_ns, f.gain_high_ns, f.gain_is_bound) == (11, 10, 12, False)
    assert f.edit == ("each stage's own work between its sends and receives scaled to the stages' mean (75.000 ms per "
                      "step; stage 1 90.000 ms)")


def test_stages_balanced_only_where_the_graph_can_say(monkeypatch):
    """No graph, no send / receive pairs, overlapping sends, a stage none of whose ranks is in the graph, a stage
    with no own work (0 ns), or no answer from the graph: the finding unchanged."""
    work = {0: 50 * MS, 1: 50 * MS, 2: 0}
    monkeypatch.setattr(cr, "own_work", lambda sk, i: work[i])
    monkeypatch.setattr(cr, "scale_gain", lambda sk, factors: (11, 10, 12, 3))
    monkeypatch.setattr(cr, "p2p_overlaps", lambda sk: False)
    cases = [(None, [[0], [1]]), (_Graph([0, 1]), [[0], [1]]), (_Graph([0, 1], [1]), [[0], [5]]),
             (_Graph([0, 1, 2], [1]), [[0], [1, 2]])]
    for sk, stages in cases:
        f = _finding(gain_ns=100)
        cr._stages_balanced(f, sk, stages)
        assert (f.gain_ns, f.edit) == (100, ""), stages
    f = _finding(gain_ns=100)
    cr._stages_balanced(f, _Graph([0, 1], [1]), [[0], [1]])
    assert f.gain_ns == 11  # the same graph with work on every stage: replayed
    monkeypatch.setattr(cr, "p2p_overlaps", lambda sk: True)
    f = _finding(gain_ns=100)
    cr._stages_balanced(f, _Graph([0, 1], [1]), [[0], [1]])
    assert f.gain_ns == 100
    monkeypatch.setattr(cr, "p2p_overlaps", lambda sk: False)
    monkeypatch.setattr(cr, "scale_gain", lambda sk, factors: None)
    cr._stages_balanced(f, _Graph([0, 1], [1]), [[0], [1]])
    assert (f.gain_ns, f.edit) == (100, "")


# -- embedding all-reduce ----------------------------------------------------------------------------------------

def test_embedding_allreduce():
    """An AllReduce in group "e1", declared the embedding group, between ranks 3 and 0 (listed "3", "0": sorted 0, 3):
    4 calls, 7 and 9 ms: the text names the ranks and 9 ms; an info of the ranks scope, no gain."""
    par = Parallelism(groups={"e1": "embedding", "d1": "data"})
    per = {"3": {"total_ns": 9 * MS}, "0": {"total_ns": 7 * MS}}
    cols = [{**_col(per, group="e1"), "total_ns": 16 * MS}, _col(per, group="d1"), _col(per, group="e1", kind="Broadcast"),
            _col(per, group="e1", comm_type="p2p")]
    (f,) = cr.embedding_allreduce({"collectives": cols}, par)
    assert (f.rule, f.severity, f.scope, f.gain_ns, f.ranks, f.value) == ("embedding_allreduce", "info", "ranks", -1,
                                                                          [0, 3], 4)
    assert f.seen == ("AllReduce in group e1 links only the first and the last pipeline stage (ranks 0, 3): the tied "
                      "embeddings' gradients (4 calls, 9.000 ms on the rank that waits most in the window).")
    assert (f.figure, f.figure_value, f.view, f.figures) == ("comm_total", 16 * MS, "communication", {"calls": 4})
    assert [(e.view, e.row, e.label, e.rank) for e in f.evidence] == [("communication", "AllReduce", "AllReduce e1", 0)]
    assert cr.embedding_allreduce({}, par) == []


def test_embedding_allreduce_of_the_default_group():
    """A group named "" declared embedding: the text says "group default"."""
    (f,) = cr.embedding_allreduce({"collectives": [_col({"1": {"total_ns": MS}}, group="")]},
                                  Parallelism(groups={"": "embedding"}))
    assert f.seen.startswith("AllReduce in group default links")


# -- all of them -------------------------------------------------------------------------------------------------

def test_cluster_hits_without_digests():
    """From the analysis alone: the slow rank's two findings and the embedding one (no pipeline: the embedding
    group needs digests; none here), every finding on the device "cluster" with the step of 100 ms, ranked by gain;
    the two slow-rank findings on rank 0 share their time (min of 20 and 20 ms)."""
    hits = cr.cluster_hits(_two_ranks())
    assert [h.rule for h in hits] == ["slow_rank_communication", "slow_rank_computing"]
    assert all(h.device == "cluster" and not h.observation for h in hits)
    assert [h.gain_ns for h in hits] == [20 * MS, 20 * MS]


def test_cluster_hits_sets_the_step_of_findings_that_have_none(monkeypatch):
    """The embedding finding (no floors, so no step) gets the analysis's step, 100 ms: its speedup reads it."""
    monkeypatch.setattr(cr, "recognise", lambda digests, ranks=None: Parallelism(groups={"e": "embedding"}))
    a = {**_two_ranks(), "collectives": [_col({"0": {"total_ns": MS}, "1": {"total_ns": MS}}, group="e", wait_source="")]}
    found = []
    real = cr.to_hit
    monkeypatch.setattr(cr, "to_hit", lambda f: found.append(f) or real(f))
    cr.cluster_hits(a)
    emb = [f for f in found if f.rule == "embedding_allreduce"]
    assert len(emb) == 1 and emb[0].step_ns == 100 * MS and emb[0].device == "cluster"


def test_cluster_hits_with_the_ranks_graph_makes_unreplayed_gains_observations(monkeypatch):
    """With digests the ranks' graph is built (skeleton, on the digests' ranks 5 and 6). The slow rank's findings
    are replayed by balance_gain (30 ms each, rank 5 = index 0: kept as gains); the slow link of the group (transfer
    40 against 20 ms over 3 steps: 13.3 against 6.7 ms a step, 6.7 ms above the 5 ms floor, noise 0) has no edit,
    so it becomes an observation: no gain, at most 6.7 ms, ranked after the findings. Without balance_gain's answer
    the slow-rank findings are observations too."""
    built = []
    monkeypatch.setattr(cr, "skeleton", lambda digests, ranks: built.append(list(ranks)) or _Graph(ranks))
    monkeypatch.setattr(cr, "balance_gain", lambda sk, i: (30 * MS, 20 * MS, 40 * MS, 3) if sk.ranks[i].rank == 5 else None)
    a = _two_ranks()
    for r, rank in zip(a["ranks"], (5, 6)):
        r["rank"] = rank
    a["collectives"] = [_col({"5": {"transfer_ns": 40 * MS}, "6": {"transfer_ns": 20 * MS}})]
    digests = [_digest(5, 3, []), _digest(6, 3, [])]
    hits = cr.cluster_hits(a, digests)
    assert built == [[5, 6]]
    assert [(h.rule, h.observation, h.gain_ns) for h in hits] == [("slow_rank_communication", False, 30 * MS),
                                                                 ("slow_rank_computing", False, 30 * MS),
                                                                 ("slow_link", True, -1)]
    assert hits[2].gain.startswith("not simulated: an observation")
    monkeypatch.setattr(cr, "balance_gain", lambda sk, i: None)
    hits = cr.cluster_hits(a, digests)
    assert [(h.observation, h.gain_ns) for h in hits] == [(True, -1), (True, -1), (True, -1)]


def test_a_slow_rank_explains_the_others_waiting():
    """Rank 1 has the window finding "communication_not_overlapped" and waits 25 ms against 5 ms of transfer: the
    slow-rank finding on rank 0 says rank 1's unhidden communication comes from rank 0. Rank 2 waits too but has no
    such finding; rank 3 has it but waits (4 ms) under its transfer (5 ms)."""
    rows = [{"rank": 0, "wait_ns": 0, "transfer_ns": 5}, {"rank": 1, "wait_ns": 25 * MS, "transfer_ns": 5 * MS},
            {"rank": 2, "wait_ns": 25 * MS, "transfer_ns": 5 * MS}, {"rank": 3, "wait_ns": 4 * MS, "transfer_ns": 5 * MS}]
    digests = [_digest(r, 1, []) for r in range(4)]
    for d in (digests[1], digests[3], digests[0]):
        d.rule_hits.add(rule="communication_not_overlapped")
    f = _finding(rank=0)
    other = _finding(rule="stage_imbalance", rank=0)
    cr._explains_waits([f, other], {"ranks": rows}, digests)
    assert f.seen == ("seen. On rank 1 the communication that is not hidden is mostly waiting (Ranks view: wait above "
                      "transfer): that rank's 'communication not hidden' comes from rank 0; overlapping cannot hide it, "
                      "balancing rank 0 does.")
    assert other.seen == "seen."


def test_explains_waits_names_several_ranks_and_reads_unknown_transfer_as_zero():
    """Ranks 1 and 2 wait 1 ns, their transfer unknown (-1, read as 0): "On ranks 1, 2"; a finding without evidence
    is left alone; no analysis rows: nothing."""
    rows = [{"rank": 1, "wait_ns": 1, "transfer_ns": -1}, {"rank": 2, "wait_ns": 1}, {"rank": 0}]
    digests = [_digest(r, 1, []) for r in range(3)]
    for d in digests:
        d.rule_hits.add(rule="communication_not_overlapped")
    f = _finding(rank=0)
    bare = Finding("slow_rank_free", "communication", "warning", "t", "seen.")
    cr._explains_waits([f, bare], {"ranks": rows}, digests)
    assert f.seen.startswith("seen. On ranks 1, 2 the communication") and bare.seen == "seen."
    g = _finding(rank=0)
    cr._explains_waits([g], {}, digests)
    assert g.seen == "seen."


def test_slow_rank_findings_on_one_rank_share_their_time():
    """Two slow-rank findings on rank 0 (20 and 12 ms) share 12 ms, each naming the other; one on rank 1 and one
    without a gain share nothing; a non-slow-rank finding is not counted."""
    a, b = _finding("slow_rank_computing", 20 * MS, 0), _finding("slow_rank_free", 12 * MS, 0)
    c, d = _finding("slow_rank_communication", 30 * MS, 1), _finding("slow_rank_communication", -1, 0)
    e = _finding("stage_imbalance", 5 * MS, 0)
    cr._same_rank([a, b, c, d, e])
    assert a.shared == [("slow_rank_free", "t slow_rank_free", 12 * MS)]
    assert b.shared == [("slow_rank_computing", "t slow_rank_computing", 12 * MS)]
    assert c.shared == [] and d.shared == [] and e.shared == []


# -- every field of each finding, and the edges the first run left -------------------------------------------------

def _fields(f):
    return {k: getattr(f, k) for k in ("category", "why", "change_torch", "change_npu", "gain_basis", "figure", "view",
                                       "removes_what")}


def test_the_words_of_a_slow_rank_finding():
    """Each field of the computing finding of _two_ranks, as docs/rules.md gives the slow-rank finding."""
    c = next(f for f in cr.slow_rank(_two_ranks(), Parallelism()) if f.rule == "slow_rank_computing")
    assert _fields(c) == {
        "category": "communication", "why": "Every collective waits for the rank with the most computing time.",
        "change_torch": "look at that rank's window: its data (uneven batches / sequence lengths), its host (other "
                        "processes, CPU binding, throttling) and its device; balance the work per rank.",
        "change_npu": "the same; check the device's AI Core frequency and the host's CPU binding (numactl).",
        "gain_basis": "the computing spread between the ranks", "figure": "computing", "view": "ranks",
        "removes_what": ["computing spread"]}


def test_the_words_of_a_slow_link_finding():
    a = {"ranks": _link_ranks(), "collectives": [_col({"0": {"transfer_ns": 40 * MS}, "1": {"transfer_ns": 20 * MS}})]}
    (f,) = cr.slow_link(a, [])
    assert _fields(f) == {
        "category": "communication", "why": "Every member of the group waits for its slowest link.",
        "change_torch": "check that rank's links (nvidia-smi topo -m, NCCL_DEBUG=INFO for the transport chosen).",
        "change_npu": "check that rank's HCCS / RDMA links (hccn_tool -i N -link -g, -net_health -g).",
        "gain_basis": "the transfer spread in the group per step", "figure": "transfer", "view": "ranks",
        "removes_what": ["transfer spread"]}
    assert f.figures == {"ratio": pytest.approx(10 / 15)}
    assert [(e.view, e.row, e.label, e.rank) for e in f.evidence] == [("ranks", "AllReduce", "AllReduce g1", 0)]


def test_the_words_of_a_slow_transport_finding():
    d = _digest(0, 1, [("HCCS", 0, 1, MIB32, MS, "global"), ("HCCS", 1, 0, MIB32, 2 * MS, "global")])
    (f,) = cr._slow_transport([d], {"ranks": [_row(0, 5, step_ms=10)]})
    assert _fields(f) == {
        "category": "communication", "why": "Collectives run at the pace of their slowest link.",
        "change_torch": "check that link (nvidia-smi topo -m, NCCL_DEBUG=INFO).",
        "change_npu": "check that link (hccn_tool -link / -net_health).",
        "gain_basis": "the slowest link's transfer time per step at the links' mean bandwidth", "figure": "bandwidth",
        "view": "ranks", "removes_what": ["slow link transfer"]}
    # 32 MiB in 2 ms = 33,554,432 / 2,000,000 bytes a ns: the figure exactly, not within a tolerance
    assert f.figure_value == 33_554_432 / 2_000_000 and f.figures == {"ratio": f.value, "bandwidth_gbps": f.figure_value}
    assert [(e.view, e.row, e.label, e.rank) for e in f.evidence] == [("ranks", "1->0", "matrix cell", 1)]


def test_the_words_of_a_stage_finding():
    a, par = _stages()
    (f,) = cr.stage_imbalance(a, par)
    assert _fields(f) == {
        "category": "communication",
        "why": "A pipeline runs at the pace of its slowest stage; the others idle in their receives (bubbles). This is "
               "not a slow rank: the stages hold different layers.",
        "change_torch": "move layers from the slowest stage to the others (torch.distributed.pipelining: split points; "
                        "Megatron: --decoder-first/last-pipeline-num-layers), use more micro-batches, or an interleaved "
                        "schedule (ScheduleInterleaved1F1B, virtual stages).",
        "change_npu": "the same (MindSpeed: --num-layer-list to place layers per stage).",
        "gain_basis": "the slowest stage's computing above the stages' mean (a perfectly balanced split)",
        "figure": "computing", "view": "ranks", "removes_what": ["stage imbalance"]}
    assert [(e.view, e.row, e.label, e.rank) for e in f.evidence] == [("ranks", "1", "rank 1 computing", 1)]


def test_the_words_of_the_embedding_finding():
    (f,) = cr.embedding_allreduce({"collectives": [_col({"1": {"total_ns": MS}}, group="e")]},
                                  Parallelism(groups={"e": "embedding"}))
    assert f.title == "The all-reduce between the first and last pipeline stage waits for the pipeline"
    assert _fields(f) == {
        "category": "communication",
        "why": "The first stage finishes its backward last in a pipeline flush, so the all-reduce waits for it: its "
               "time is the pipeline's imbalance and bubbles, not a DDP bucket or overlap problem.",
        "change_torch": "balance the stages and shrink the bubble (see the stage finding); untie the embeddings "
                        "only if the model allows it.",
        "change_npu": "", "gain_basis": "it waits for the pipeline; its own transfer is small",
        "figure": "comm_total", "view": "communication", "removes_what": []}


def test_the_exact_stage_text_of_a_first_stage():
    """The slowest stage first (not the last): no sentence on the loss and nothing in its place."""
    rows = [_row(0, 100), _row(1, 60, p2p_wait_ns=12 * MS)]
    (f,) = cr.stage_imbalance({"ranks": rows}, Parallelism(stages=[[0], [1]], source="declared groups"))
    assert f.seen.startswith("Computing per step differs across the 2 pipeline stages (declared groups) by (max - min) "
                             "/ mean = 50.0%: stage 0 100.000 ms, the stages' mean 80.000 ms. The other stages wait for "
                             "it in send / receive (p2p wait per step: stage 1 (rank 1) 12.000 ms).")


def test_a_zero_gain_is_judged_by_the_floors():
    """A gain of 0 is a gain (not "none"): under a 5 ms floor it is dropped; with no step (floor 0) and a noise of 0
    it is within the noise (0 <= 0), dropped too; with no noise known it is kept."""
    assert cr._significant(_finding(gain_ns=0), 100 * MS, -1) is False
    assert cr._significant(_finding(gain_ns=0), 0, 0) is False
    assert cr._significant(_finding(gain_ns=0), 0, -1) is True


def test_spread_of_small_values():
    """Values under 1 (a mean of 0.75): (1.0 - 0.5) / 0.75 = 0.667, not 0."""
    assert cr._spread([0.5, 1.0]) == pytest.approx(2 / 3)


def test_slow_link_goes_on_after_a_skipped_collective():
    """A collective skipped (matched calls) or under the ratio before the one that gives a finding: it is still
    found."""
    per = {"0": {"transfer_ns": 40 * MS}, "1": {"transfer_ns": 20 * MS}}
    for first in (_col(per, wait_source="matched calls"), _col({"0": {"transfer_ns": 41 * MS}, "1": {"transfer_ns": 39 * MS}})):
        found = cr.slow_link({"ranks": _link_ranks(), "collectives": [first, _col(per, group="g2")]}, [])
        assert [f.title for f in found] == ["Slow link in group g2"]


def test_slow_link_at_exactly_the_ratio_over_a_short_step():
    """20.5 against 19.5 ms a step (41 and 39 ms over 2 steps): a spread of 1 / 20 = 5 %, not above it: no finding,
    though its 1 ms gain would pass the floor of a 10 ms step (0.5 ms) with no noise known (no per-step figures)."""
    rows = [_row(0, 5, step_ms=10, steps=2), _row(1, 5, step_ms=10, steps=2)]
    col = _col({"0": {"transfer_ns": 41 * MS}, "1": {"transfer_ns": 39 * MS}})
    assert cr.slow_link({"ranks": rows, "collectives": [col]}, []) == []
    col = _col({"0": {"transfer_ns": 42 * MS}, "1": {"transfer_ns": 38 * MS}})  # 21 against 19: 10 %, found
    assert len(cr.slow_link({"ranks": rows, "collectives": [col]}, [])) == 1


def test_slow_link_with_only_the_slow_rank_listed():
    """The fastest rank has no row: its per-step figures are unknown, so the noise is unknown (-1)."""
    rows = [_row(0, 5, step_ms=10, steps=1)]
    (f,) = cr.slow_link({"ranks": rows, "collectives": [_col({"0": {"transfer_ns": 30 * MS},
                                                              "1": {"transfer_ns": 10 * MS}})]}, [])
    assert (f.noise_ns, f.gain_ns) == (-1, 20 * MS)


def test_slow_link_passes_the_graph_to_the_transport_findings(monkeypatch):
    """The ranks' graph given to slow_link reaches the transport finding's replay."""
    monkeypatch.setattr(cr, "p2p_overlaps", lambda sk: False)
    monkeypatch.setattr(cr, "link_gain", lambda sk, s, d, factor: (900_000, 800_000, 1_000_000, 2))
    d = _digest(0, 1, [("HCCS", 0, 1, MIB32, MS, "global"), ("HCCS", 1, 0, MIB32, 2 * MS, "global")])
    (f,) = cr.slow_link({"ranks": [_row(0, 5, step_ms=10)]}, [d], _Graph([0, 1]))
    assert f.gain_ns == 900_000 and f.edit.startswith("the sends from rank 1 to rank 0")


def test_slow_transport_counts_a_link_of_one_nanosecond():
    """A link of 1 ns (32 MiB: 33,554,432 bytes a ns) beside one of 2 ms: two links, the slow one found."""
    d = _digest(0, 1, [("HCCS", 0, 1, MIB32, 1, "global"), ("HCCS", 1, 0, MIB32, 2 * MS, "global")])
    (f,) = cr._slow_transport([d], {"ranks": [_row(0, 5, step_ms=10)]})
    assert f.ranks == [1, 0]


def test_slow_transport_goes_on_after_a_transport_it_skips():
    """Transports in name order: "A" with one link and "B" at 5 % exactly are skipped, "C" is judged after them."""
    links = [("A", 0, 1, MIB32, MS, "global"),
             ("B", 0, 1, 41 * 2 ** 20, 2 ** 20, "global"), ("B", 1, 0, 39 * 2 ** 20, 2 ** 20, "global"),
             ("C", 0, 1, MIB32, MS, "global"), ("C", 1, 0, MIB32, 2 * MS, "global")]
    assert [f.title for f in cr._slow_transport([_digest(0, 1, links)], {"ranks": [_row(0, 5, step_ms=10)]})] == [
        "Slow C link"]


def test_slow_transport_at_exactly_the_ratio():
    """41 and 39 bytes a ns (41 MiB and 39 MiB in 2**20 ns): (41 - 39) / 40 = 5 %, not above: none, though the gain,
    2**20 - 39 x 2**20 / 40 = 26,214 ns, passes the floor of a 0.1 ms step (5,000 ns)."""
    d = _digest(0, 1, [("B", 0, 1, 41 * 2 ** 20, 2 ** 20, "global"), ("B", 1, 0, 39 * 2 ** 20, 2 ** 20, "global")])
    assert cr._slow_transport([d], {"ranks": [{"rank": 0, "step_ns": 100_000}]}) == []


def test_stage_at_exactly_the_ratio_over_a_short_step():
    """Stages of 102.5 and 97.5 ms computing: 5 % exactly, not above: none, though the 2.5 ms gain would pass the
    floor of a 10 ms step with no noise known."""
    rows = [_row(0, 102.5, step_ms=10), _row(1, 97.5, step_ms=10)]
    assert cr.stage_imbalance({"ranks": rows}, Parallelism(stages=[[0], [1]])) == []


def test_a_stage_wait_of_zero_is_known():
    """A wait of 0 ns is a known wait: "0.000 ms", not "unknown"."""
    rows = [_row(0, 60, p2p_wait_ns=0), _row(1, 90)]
    (f,) = cr.stage_imbalance({"ranks": rows}, Parallelism(stages=[[0], [1]]))
    assert "(p2p wait per step: stage 0 (rank 0) 0.000 ms)" in f.seen


def test_stages_balanced_with_one_nanosecond_of_own_work(monkeypatch):
    """Own work of 1 ns is work (above 0): the graph is asked; the mean (1 + 50) / 2 = 25.5 ns gives the factors
    25.5 / 1 = 25.5 and 25.5 / 50 = 0.51."""
    monkeypatch.setattr(cr, "p2p_overlaps", lambda sk: False)
    monkeypatch.setattr(cr, "own_work", lambda sk, i: 1 if i == 0 else 50)
    seen = []
    monkeypatch.setattr(cr, "scale_gain", lambda sk, factors: seen.append(factors) or (11, 10, 12, 3))
    f = _finding(gain_ns=100)
    cr._stages_balanced(f, _Graph([0, 1], [1]), [[0], [1]])
    assert seen == [{0: 25.5, 1: 0.51}] and f.gain_ns == 11


def test_embedding_goes_on_after_another_collective():
    """A data-parallel all-reduce before the embedding one: the embedding one is still found."""
    par = Parallelism(groups={"e": "embedding", "d": "data"})
    cols = [_col({"1": {"total_ns": MS}}, group="d"), _col({"1": {"total_ns": MS}}, group="e")]
    assert [f.seen.split(" links")[0] for f in cr.embedding_allreduce({"collectives": cols}, par)] == [
        "AllReduce in group e"]


def test_cluster_hits_takes_the_ranks_by_position_when_the_windows_repeat_one():
    """Two windows that both say rank 0 (world size 2): analysis/cluster.py numbers them 0 and 1, and so must the
    pipeline's recognition: window 0 sends first, window 1 receives (group "g" carries only send / receive: a
    pipeline group), stages [0] and [1]; the computing of 60 and 90 ms is then a stage imbalance, not a slow rank.
    (Read by the windows' own rank, both would be rank 0: one rank of two, no stages.)"""
    digests = []
    for kind, start in (("Send", 0), ("Recv", 0)):
        d = pb.Digest()
        d.window.rank, d.window.world_size = 0, 2
        d.communication.calls.add(kind=kind, group="g", start_ns=start, dur_ns=10, step=1)
        digests.append(d)
    a, _ = _stages()
    rules = [h.rule for h in cr.cluster_hits(a, digests)]
    assert "stage_imbalance" in rules and not any(r.startswith("slow_rank_") for r in rules)


def test_cluster_hits_gives_the_graph_to_the_link_and_stage_findings(monkeypatch):
    """With the ranks' graph, the transport finding and the stage finding are replayed (their edits kept, no
    observation); a transport gain of 0 ns that no edit replays is an observation, as any such gain."""
    monkeypatch.setattr(cr, "skeleton", lambda digests, ranks: _Graph(ranks, p2p=[1]))
    monkeypatch.setattr(cr, "recognise", lambda digests, ranks=None: Parallelism(stages=[[0], [1]]))
    monkeypatch.setattr(cr, "p2p_overlaps", lambda sk: False)
    monkeypatch.setattr(cr, "link_gain", lambda sk, s, d, factor: (900_000, 800_000, 1_000_000, 2))
    monkeypatch.setattr(cr, "own_work", lambda sk, i: 50 * MS)
    monkeypatch.setattr(cr, "scale_gain", lambda sk, factors: (7 * MS, 6 * MS, 8 * MS, 3))
    monkeypatch.setattr(cr, "balance_gain", lambda sk, i: None)
    links = [("HCCS", 0, 1, MIB32, MS, "global"), ("HCCS", 1, 0, MIB32, 2 * MS, "global")]
    a, _ = _stages()
    for r in a["ranks"]:
        r["step_ns"] = 10 * MS
    hits = {h.rule: h for h in cr.cluster_hits(a, [_digest(0, 1, links), _digest(1, 1, [])])}
    assert (hits["stage_imbalance"].gain_ns, hits["stage_imbalance"].observation) == (7 * MS, False)
    assert (hits["slow_link"].gain_ns, hits["slow_link"].observation) == (900_000, False)
    # 16 MiB in 2 and 3 ns: 8,388,608 and 5,592,405.3 bytes a ns, mean 6,990,506.7; the slow link's gain
    # 3 - 16,777,216 / 6,990,506.7 = 0.6 ns -> 0: above a floor of 0 (no step), and no edit: an observation
    monkeypatch.setattr(cr, "link_gain", lambda sk, s, d, factor: None)
    tiny = [("HCCS", 0, 1, 16 * 2 ** 20, 2, "global"), ("HCCS", 1, 0, 16 * 2 ** 20, 3, "global")]
    (hit,) = cr.cluster_hits({"ranks": []}, [_digest(0, 1, tiny), _digest(1, 1, [])])
    assert (hit.rule, hit.observation, hit.gain_ns) == ("slow_link", True, -1)


def test_explains_waits_after_another_finding_and_at_equal_wait():
    """A stage finding before the slow-rank one does not stop the reading; rank 1 waits 5 ms against 5 ms of
    transfer (not above: not named); rank 2 has no wait figure (unknown: not named); rank 3 waits 6 ms against 5."""
    rows = [{"rank": 0}, {"rank": 1, "wait_ns": 5 * MS, "transfer_ns": 5 * MS}, {"rank": 2, "transfer_ns": 0},
            {"rank": 3, "wait_ns": 6 * MS, "transfer_ns": 5 * MS}]
    digests = [_digest(r, 1, []) for r in range(4)]
    for d in digests:
        d.rule_hits.add(rule="communication_not_overlapped")
    other, f = _finding(rule="stage_imbalance", rank=0), _finding(rank=0)
    cr._explains_waits([other, f], {"ranks": rows}, digests)
    assert f.seen.startswith("seen. On rank 3 the communication") and other.seen == "seen."


def test_slow_rank_findings_of_zero_gain_share_too():
    """Two slow-rank findings of 0 ns on rank 2: each names the other, sharing 0 ns."""
    a, b = _finding("slow_rank_computing", 0, 2), _finding("slow_rank_free", 0, 2)
    cr._same_rank([a, b])
    assert a.shared == [("slow_rank_free", "t slow_rank_free", 0)] and b.shared == [("slow_rank_computing", "t slow_rank_computing", 0)]


def test_a_row_without_per_step_figures_has_none():
    """A row with no "per_step" key at all: no figures (not an error)."""
    assert cr._per_step({"rank": 0}, "computing") == {}


def test_the_replays_are_asked_of_the_graph_given(monkeypatch):
    """link_gain, p2p_overlaps and scale_gain each receive the ranks' graph the finding is judged on."""
    sk = _Graph([0, 1], p2p=[1])
    asked = []
    monkeypatch.setattr(cr, "p2p_overlaps", lambda g: asked.append(("overlaps", g)) or False)
    monkeypatch.setattr(cr, "link_gain", lambda g, s, d, factor: asked.append(("link", g)) or (4, 3, 5, 1))
    monkeypatch.setattr(cr, "own_work", lambda g, i: 50)
    monkeypatch.setattr(cr, "scale_gain", lambda g, factors: asked.append(("scale", g)) or (4, 3, 5, 1))
    cr._link_replayed(_finding(), sk, 0, 1, 0.5)
    cr._stages_balanced(_finding(), sk, [[0], [1]])
    assert asked == [("overlaps", sk), ("link", sk), ("overlaps", sk), ("scale", sk)]
    assert all(g is sk for _, g in asked)


def test_the_stage_finding_value_is_its_ratio():
    """value = the spread, (90 - 60) / 75 = 0.4."""
    a, par = _stages()
    (f,) = cr.stage_imbalance(a, par)
    assert f.value == pytest.approx(0.4)
