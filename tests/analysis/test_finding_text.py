"""A finding as the views show it (analysis/rules/finding.py): its speed-up, its gain in words, the RuleHit and the
Claim written from it, and the order findings are ranked in (issue 46: mutation showed these read by no test).
Every expected value is worked out by hand in the test (times in ns; ms() writes 3 decimals of a millisecond)."""
import math

import pytest

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.rules.finding import Finding, evidence, is_number, ms, pct, rank_key, to_hit

MS = 1_000_000


def finding(**kw) -> Finding:
    base = dict(rule="r", category="time", severity="warning", title="T", seen="Seen.")
    return Finding(**{**base, **kw})


@pytest.mark.parametrize("gain,step,speedup", [
    (2 * MS, 10 * MS, 1.25),  # 10 / (10 - 2)
    (0, 10 * MS, 1.0),  # 10 / 10
    (12 * MS, 10 * MS, 10 * MS),  # capped at the step less 1 ns: 10 ms / 1 ns
    (10 * MS - 1, 10 * MS, 10 * MS),  # the same cap reached exactly
    (-1, 10 * MS, -1.0),  # unknown gain
    (2 * MS, 0, -1.0),  # unknown step
    (2 * MS, -5, -1.0),
])
def test_speedup_is_the_step_over_what_is_left(gain, step, speedup):
    assert finding(gain_ns=gain, step_ns=step).speedup() == speedup


def test_a_finding_that_needs_data_or_is_an_observation_says_so():
    assert finding(needs="record shapes", gain_ns=MS, step_ns=10 * MS).gain_text() == (
        "unknown: the data cannot support this rule")
    assert finding(observation=True, gain_ns=MS, step_ns=10 * MS, edit="x").gain_text() == (
        "not simulated: an observation (the trace cannot say what the change would save)")


def test_a_replayed_gain_names_its_edit_its_spread_and_the_time_it_shares():
    """2.5 ms of a 10 ms step: 10 / 7.5 = 1.33x; over 3 steps from 1.25 to 3.75 ms; 0.4 ms shared with 'Other'."""
    f = finding(gain_ns=2_500_000, step_ns=10 * MS, edit="the calls removed", steps=3, gain_low_ns=1_250_000,
                gain_high_ns=3_750_000)
    text = ("2.500 ms per step, 1.33x (the step replayed on the trace's dependency graph with the calls removed, "
            "1.250 ms to 3.750 ms over 3 steps)")
    assert f.gain_text() == text
    f.shared = [("o", "Other", 400_000), ("p", "Third", 1_000)]
    assert f.gain_text() == (f"{text}; 0.400 ms of the time it touches is also claimed by 'Other'; 0.001 ms of the "
                             "time it touches is also claimed by 'Third'")


def test_a_replayed_gain_of_one_step_or_without_its_spread_or_its_step():
    """One step, or no low end known (-1): no spread; a gain of 0 ns is still a replayed gain; no step: the edit
    alone in brackets."""
    one = finding(gain_ns=MS, step_ns=4 * MS, edit="e", steps=1, gain_low_ns=MS, gain_high_ns=MS)
    assert one.gain_text() == "1.000 ms per step, 1.33x (the step replayed on the trace's dependency graph with e)"
    unknown = finding(gain_ns=MS, step_ns=4 * MS, edit="e", steps=2, gain_low_ns=-1, gain_high_ns=-1)
    assert unknown.gain_text() == one.gain_text()
    zero = finding(gain_ns=0, step_ns=4 * MS, edit="e", steps=2, gain_low_ns=0, gain_high_ns=0)
    assert zero.gain_text() == ("0.000 ms per step, 1.00x (the step replayed on the trace's dependency graph with e, "
                                "0.000 ms to 0.000 ms over 2 steps)")
    assert finding(gain_ns=MS, step_ns=0, edit="e", steps=2, gain_low_ns=0).gain_text() == "1.000 ms (e)"


def test_an_unbounded_gain_names_its_basis_if_any():
    assert finding(gain_ns=-1, gain_basis="at most the matmul time").gain_text() == (
        "not bounded by the data: at most the matmul time")
    assert finding(gain_ns=-1).gain_text() == "not bounded by the data"
    # an edit without a gain (-1) is no replayed gain either
    assert finding(gain_ns=-1, edit="e", step_ns=MS).gain_text() == "not bounded by the data"


def test_a_bound_or_an_estimate_per_step_with_what_it_shares():
    """3 ms of a 12 ms step: 12 / 9 = 1.33x; an estimate says "about"; without a step, no speed-up."""
    f = finding(gain_ns=3 * MS, step_ns=12 * MS, gain_basis="b")
    assert f.gain_text() == "at most 3.000 ms per step (b): up to 1.33x"
    f.gain_is_bound = False
    assert f.gain_text() == "about 3.000 ms per step (b): up to 1.33x"
    f.shared = [("o", "Other", 250_000)]
    assert f.gain_text() == "about 3.000 ms per step (b): up to 1.33x; 0.250 ms of it is also claimed by 'Other'"
    assert finding(gain_ns=3 * MS, step_ns=0, gain_basis="b").gain_text() == "at most 3.000 ms (b)"
    f.shared = [("o", "Other", 250_000), ("p", "Third", 500_000)]
    assert f.gain_text().endswith("; 0.250 ms of it is also claimed by 'Other'; 0.500 ms of it is also claimed by 'Third'")


def test_a_bound_of_zero_is_a_bound():
    assert finding(gain_ns=0, step_ns=10 * MS, gain_basis="b").gain_text() == "at most 0.000 ms per step (b): up to 1.00x"


def test_the_rule_hit_carries_every_field_and_the_detail_in_order():
    """Detail: seen, why, the two changes, the gain in words; figures as floats; evidence in order."""
    f = finding(why="Why.", change_torch="ct", change_npu="cn", gain_ns=MS, step_ns=4 * MS, gain_basis="b",
                value=0.25, figures={"a": 3, "b": 0.5}, device="cuda", severity="info",
                evidence=[evidence("kernels", "k1", "l1"), evidence("timeline", "", "l2", "n", 5, 6, 1)])
    hit = to_hit(f)
    assert hit.detail == ("Seen. Why. Change: ct On Ascend (torch_npu): cn Gain: at most 1.000 ms per step (b): "
                          "up to 1.33x.")
    assert (hit.rule, hit.category, hit.severity, hit.title, hit.seen, hit.why) == (
        "r", "time", "info", "T", "Seen.", "Why.")
    assert (hit.change_torch, hit.change_npu, hit.gain_ns, hit.device, hit.needs, hit.observation) == (
        "ct", "cn", MS, "cuda", "", False)
    assert (hit.value, hit.speedup, hit.gain) == (0.25, pytest.approx(4 / 3), "at most 1.000 ms per step (b): up to 1.33x")
    assert dict(hit.figures) == {"a": 3.0, "b": 0.5}
    assert [(e.view, e.row, e.label, e.timeline_name, e.ts_ns, e.dur_ns, e.rank) for e in hit.evidence] == [
        ("kernels", "k1", "l1", "", -1, -1, -1), ("timeline", "", "l2", "n", 5, 6, 1)]


def test_a_rule_hit_that_needs_data_says_how_to_enable_it_and_no_gain():
    hit = to_hit(finding(needs="record shapes", observation=True))
    assert hit.detail == "Seen. To enable this check: record shapes"
    assert (hit.needs, hit.gain, hit.observation, hit.speedup) == (
        "record shapes", "unknown: the data cannot support this rule", True, -1.0)


def test_the_claim_is_written_whole():
    f = finding(figure="kernel_mean", figure_value=9.5, view="kernels", threshold=10.0, floor_ns=7, noise_ns=8,
                step_ns=9, steps=2, scope="ranks", gain_low_ns=1, gain_high_ns=3, edit="e", removes_ns=5,
                removes_what=["a", 2], ranks=[0, 3], shared=[("o", "Other", 4)])
    c = to_hit(f).claim
    assert (c.figure, c.value, c.view, c.threshold, c.floor_ns, c.noise_ns, c.removes_ns) == (
        "kernel_mean", 9.5, "kernels", 10.0, 7, 8, 5)
    assert (c.step_ns, c.steps, c.scope, c.gain_low_ns, c.gain_high_ns, c.edit) == (9, 2, "ranks", 1, 3, "e")
    assert (list(c.removes), list(c.ranks)) == (["a", "2"], [0, 3])
    assert [(s.rule, s.title, s.ns) for s in c.shared] == [("o", "Other", 4)]


@pytest.mark.parametrize("removes,what,removes_ns,expected", [
    (None, [], -1, -1),  # a finding that removes nothing: unknown
    (([0], [5]), [], -1, 7),  # an interval set not yet measured: its gain
    (None, ["calls"], -1, 7),  # what it removes named: its gain
    (None, ["calls"], 0, 0),  # measured (settle): that, even 0
])
def test_the_claims_removed_time(removes, what, removes_ns, expected):
    f = finding(gain_ns=7, removes=removes, removes_what=what, removes_ns=removes_ns)
    assert to_hit(f).claim.removes_ns == expected


def test_the_unknown_claim_values_stay_unknown():
    c = to_hit(finding()).claim
    assert math.isnan(c.value) and math.isnan(c.threshold)
    assert (c.floor_ns, c.noise_ns, c.removes_ns, c.gain_low_ns, c.gain_high_ns, c.scope) == (-1, -1, -1, -1, -1, "window")


def test_findings_rank_by_gain_then_severity_unjudged_and_observations_last():
    """Gains 3, 2, 0 ms first by gain; two without a gain (-1, read as 0) by severity then rule then title; one that
    needs data after every finding, an observation after all (the text report's and the view's order); an unknown
    severity after info."""
    def hit(rule, gain, severity="warning", title="t", needs="", observation=False):
        return pb.RuleHit(rule=rule, gain_ns=gain, severity=severity, title=title, needs=needs, observation=observation)
    hits = [hit("n", 9 * MS, needs="x"), hit("o", 9 * MS, observation=True), hit("b", 2 * MS), hit("a", 3 * MS),
            hit("i", -1, "info"), hit("z", -1, "odd"), hit("c", -1, "critical"), hit("w", -1, "warning", "u"),
            hit("w", -1, "warning", "s"), hit("zero", 0, "info")]
    order = [(h.rule, h.title) for h in sorted(hits, key=rank_key)]
    assert order == [("a", "t"), ("b", "t"), ("c", "t"), ("w", "s"), ("w", "u"), ("i", "t"), ("zero", "t"),
                     ("z", "t"), ("n", "t"), ("o", "t")]


def test_a_gain_of_one_ns_ranks_before_any_severity_without_one():
    """1 ns of gain (an info) before a critical finding with none (-1, read as 0)."""
    hits = [pb.RuleHit(rule="c", gain_ns=-1, severity="critical"), pb.RuleHit(rule="one", gain_ns=1, severity="info")]
    assert [h.rule for h in sorted(hits, key=rank_key)] == ["one", "c"]


def test_evidence_leaves_what_it_is_not_given_empty_or_unknown():
    e = evidence("timeline")
    assert (e.view, e.row, e.label, e.timeline_name, e.ts_ns, e.dur_ns, e.rank) == ("timeline", "", "", "", -1, -1, -1)


def test_numbers_and_their_words():
    assert [is_number(x) for x in (1, 0.5, -3, math.nan, math.inf, "1", None)] == [
        True, True, True, False, False, False, False]
    assert (pct(0.0625), pct(1), pct(0.0005)) == ("6.2%", "100.0%", "0.1%")
    assert (ms(1_234_567), ms(500), ms(0)) == ("1.235 ms", "0.001 ms", "0.000 ms")


def test_the_text_lists_the_findings_in_the_order_every_other_output_gives():
    """A window with a finding, one that could not judge and an observation (a gain the graph did not replay): the
    text report (numbered findings, then "Observations") and the JSON / MCP / HTTP list (rank_key) give the same
    order: the finding, the unjudged one, the observation. (Under load a replayed gain can fall to an observation;
    the two orders then differed.)"""
    import re
    from canning_tb.analysis.rules.text import findings_json, suggestions_text
    hits = [pb.RuleHit(rule="obs", title="Obs", severity="info", gain_ns=-1, observation=True, gain="none"),
            pb.RuleHit(rule="dev", title="Dev", severity="info", gain_ns=-1, needs="ProfilerActivity.CUDA"),
            pb.RuleHit(rule="dl", title="Dl", severity="warning", gain_ns=5 * MS, gain="5 ms")]
    text = suggestions_text(hits)
    assert re.findall(r"^\d+\. \[\w+\] (\w+)\. ", text, re.M) == [h["title"] for h in findings_json(hits)] == \
        ["Dl", "Dev", "Obs"]
