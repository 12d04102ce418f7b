"""analysis/compare/attribution.py, gate.py and noise.py under mutation (issue 46): the machine's factor and the
code's part, the code items, the gate's verdicts and words, the step samples and the Welch interval, on rows and
steps made here. Every expected value is worked out by hand in a comment or docstring."""
import math
from types import SimpleNamespace

import pytest

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.compare.attribution import attribute, factor_se, weighted_quantile
from canning_tb.analysis.compare.gate import interval_text, judge
from canning_tb.analysis.compare.noise import Interval, step_samples, t975, welch

Z975 = 1.959963984540054  # the normal 97.5 % quantile (printed tables: 1.95996 39845)


def op(key, base_calls, target_calls, base_ns, target_ns, status="changed", shapes=""):
    return SimpleNamespace(key=key, input_shapes=shapes, status=status, base_calls=base_calls,
                           target_calls=target_calls, base_ns=base_ns, target_ns=target_ns)


def test_weighted_quantiles_by_hand():
    """Values 3, 1, 2 of weights 1, 1, 2, sorted 1 (1), 2 (2), 3 (1): cumulative 1, 3, 4 of 4. q 0.25 reaches 1
    at the first (1 >= 1); 0.26 needs 1.04: the second; 0.75 (3) the second; 1.0 the third; past 1: the last."""
    values, weights = [3, 1, 2], [1, 1, 2]
    assert [weighted_quantile(values, weights, q) for q in (0.25, 0.26, 0.5, 0.75, 1.0, 1.5)] == [1, 2, 2, 2, 3, 3]


ROWS = [op("A", 10, 10, 40, 80), op("B", 5, 5, 30, 60), op("C", 2, 2, 30, 30), op("D", 1, 1, 10, 50),
        op("E", 0, 3, 0, 7, "added"), op("F", 4, 0, 5, 0, "removed"), op("G", 10, 20, 8, 16)]


def test_the_machine_s_factor_and_the_code_s_part_by_hand():
    """Matched (same calls, time on both sides): A 40 -> 80 (ratio 2), B 30 -> 60 (2), C 30 -> 30 (1), D 10 -> 50
    (5); G's calls differ (10 -> 20), E is added, F removed. Weights 40 30 30 10 of 110, sorted by ratio 1 (30),
    2 (30), 2 (40), 5 (10): cumulative 30 60 100 110; q 0.25 (27.5) -> 1, 0.5 (55) -> 2, 0.75 (82.5) -> 2.
    D's 5 is over 2 x the median 2 and holds 10 >= 1 % of 110: the code's. Factor (80 + 60 + 30) / (40 + 30 + 30)
    = 1.7; the step 200 -> 400 ns: machine 0.7 x 200 = 140, code 200 - 140 = 60. Matched share 110 / 123 of the
    baseline's operator time (40 + 30 + 30 + 10 + 0 + 5 + 8). Code items, excess target - 1.7 x base: D 50 - 17 =
    33, F 0 - 8.5 = -8.5, E 7, G 16 - 13.6 = 2.4; named 33.9, rest 60 - 33.9 = 26.1."""
    a = attribute(ROWS, [200.0] * 5, [400.0] * 5, 200, 400)
    assert (a.matched_operators, a.factor, a.factor_low, a.factor_high) == (3, pytest.approx(1.7), 1, 2)
    assert a.matched_share == pytest.approx(110 / 123)
    assert (a.step_delta_ns, a.machine_ns, a.code_ns) == (200, pytest.approx(140), pytest.approx(60))
    assert [(i.name, i.why, i.base_ns, i.target_ns) for i in a.code_items] == [
        ("D", "slower beyond the machine", 10, 50), ("F", "removed", 5, 0), ("E", "added", 0, 7),
        ("G", "other calls", 8, 16)]
    assert [i.excess_ns for i in a.code_items] == pytest.approx([33, -8.5, 7, 2.4])
    assert (a.named_ns, a.rest_ns) == (pytest.approx(33.9), pytest.approx(26.1))
    # no spread in the steps: the interval is 400 - 1.7 x 200 = 60, widened by the factor's standard error over
    # A, B, C: residuals 80 - 68 = 12, 60 - 51 = 9, 30 - 51 = -21, squares 666; se = sqrt(3 / 2 x 666) / 100
    # = 0.31607; half = z x 0.31607 x 200 = 123.897 (df unknown: the normal quantile)
    half = Z975 * math.sqrt(1.5 * 666) / 100 * 200
    assert (a.code_interval.low_ns, a.code_interval.high_ns) == (pytest.approx(60 - half), pytest.approx(60 + half))
    assert a.code_interval.df is None and a.code_interval.level == 0.95


def test_the_interval_widened_in_quadrature():
    """Steps with spread: the code's half-width is sqrt(welch's half^2 + (t x se x 200)^2), welch's interval of
    400 - 1.7 x 200 and its df (noise.py, checked against the printed t table in test_compare_gate.py)."""
    base, target = [190.0, 210, 200, 195, 205], [380.0, 420, 400, 390, 410]
    a = attribute(ROWS, base, target, 200, 400)
    steps = welch(base, target, 1.7)
    assert (steps.low_ns + steps.high_ns) / 2 == pytest.approx(60)
    half = math.sqrt(((steps.high_ns - steps.low_ns) / 2) ** 2 + (t975(steps.df) * math.sqrt(999) / 100 * 200) ** 2)
    assert (a.code_interval.low_ns, a.code_interval.high_ns) == (pytest.approx(60 - half), pytest.approx(60 + half))
    assert a.code_interval.df == steps.df
    assert attribute(ROWS, base[:4], target, 200, 400).code_interval is None  # 4 steps: too few


def test_factor_standard_error():
    """One operator: 0 (no spread to tell); two, b 10 and 30, t 20 and 30 at factor 1.25: residuals 20 - 12.5 =
    7.5 and 30 - 37.5 = -7.5, sqrt(2 / 1 x 112.5) / 40 = 15 / 40 = 0.375."""
    assert factor_se([op("x", 1, 1, 10, 20)], 2.0) == 0.0
    assert factor_se([op("x", 1, 1, 10, 20), op("y", 1, 1, 30, 30)], 1.25) == pytest.approx(0.375)


def test_no_matched_operator_leaves_the_machine_unknown():
    """Only an added and a removed operator: no factor, no machine part, the whole change the code's (500 - 300
    = 200); items at factor 1: removed 0 - 40 = -40, added 90; named 50, rest 150; the interval is welch's
    (no spread: [200, 200]). The matched share 0 of 40; without operator time, unknown."""
    rows = [op("new", 0, 2, 0, 90, "added"), op("old", 3, 0, 40, 0, "removed")]
    a = attribute(rows, [300.0] * 5, [500.0] * 5, 300, 500)
    assert (a.matched_operators, a.matched_share, a.factor, a.factor_low, a.factor_high, a.machine_ns) == \
        (0, 0.0, None, None, None, None)
    assert (a.step_delta_ns, a.code_ns, a.named_ns, a.rest_ns) == (200, 200, 50, 150)
    assert [(i.name, i.excess_ns) for i in a.code_items] == [("new", 90), ("old", -40)]
    assert (a.code_interval.low_ns, a.code_interval.high_ns) == (200, 200)
    assert attribute([op("new", 0, 2, 0, 90, "added")], [1.0] * 5, [2.0] * 5, 1, 2).matched_share is None


def test_calls_within_half_a_percent_are_the_same_calls():
    """199 -> 200 calls: 1 <= 0.005 x 200 = 1.0, the same (matched); 199 -> 201: 2 > 1.005, other calls; a row
    with 0 calls or 0 ns on a side is not matched."""
    rows = [op("same", 199, 200, 10, 10), op("other", 199, 201, 10, 10), op("zero_ns", 5, 5, 10, 0),
            op("zero_ns_b", 5, 5, 0, 10), op("zero_calls", 0, 0, 10, 10)]
    a = attribute(rows, [1.0] * 5, [1.0] * 5, 1, 1)
    assert a.matched_operators == 1 and a.matched_share == pytest.approx(10 / 40)
    assert [(i.name, i.why) for i in a.code_items] == [("other", "other calls")]


def test_beyond_the_machine_at_its_edges():
    """Median ratio 1 (a 100-unit operator unchanged). Over 2x the median is slower, exactly 2x is not; under
    1/2 faster, exactly 1/2 not; an operator under 1 % of the matched time is never judged alone: 2 of 209 is
    0.96 % (the total 100 + 50 + 50 + 4 + 3 + 2; 1 % is 2.09)."""
    rows = [op("big", 1, 1, 100, 100), op("twice", 1, 1, 50, 100), op("half", 1, 1, 50, 25),
            op("over", 1, 1, 4, 8.01), op("under", 1, 1, 3, 1.49), op("tiny", 1, 1, 2, 100)]
    a = attribute(rows, [1.0] * 5, [1.0] * 5, 1, 1)
    # sorted by ratio: under 0.497 (3), half 0.5 (50), big 1 (100), ...: cumulative 3, 53, 153 reach 104.5 at 1
    assert {i.name: i.why for i in a.code_items} == {"over": "slower beyond the machine",
                                                     "under": "faster beyond the machine"}


def test_one_ns_and_exactly_one_percent():
    """Per-step times are fractions of a ns too. big 98 -> 98, edge 1 -> 3 (3x), low 1 -> 0.4 (0.4x) of 100:
    1 % is 1.0, so edge and low are judged (not under 1 %); the median 1 (cumulative 1, 99 reach 50 at big):
    edge slower, low faster; all three matched (share 100 / 100); the factor big's 98 / 98 = 1."""
    rows = [op("big", 1, 1, 98, 98), op("edge", 1, 1, 1, 3), op("low", 1, 1, 1, 0.4)]
    a = attribute(rows, [1.0] * 5, [1.0] * 5, 1, 1)
    assert (a.matched_operators, a.matched_share, a.factor) == (1, 1.0, 1.0)
    assert [(i.name, i.why) for i in a.code_items] == [("edge", "slower beyond the machine"),
                                                       ("low", "faster beyond the machine")]
    assert attribute([op("half", 1, 1, 0.5, 0.5)], [1.0] * 5, [1.0] * 5, 1, 1).matched_share == 1.0
    # the same calls, no time in the baseline: not matched, nothing to judge (no ratio of 0), no item
    assert attribute([op("z", 1, 1, 0, 5)], [1.0] * 5, [1.0] * 5, 1, 1).code_items == []


def test_without_a_matched_operator_the_factor_is_one():
    """No calls on either side but time on both (10 -> 30): not matched; judged against a factor and median of
    1: 3 > 2 x 1, slower beyond the machine, excess 30 - 10 = 20; 15 (1.5x) is not."""
    a = attribute([op("x", 0, 0, 10, 30)], [1.0] * 5, [1.0] * 5, 1, 1)
    assert [(i.name, i.why, i.excess_ns) for i in a.code_items] == [("x", "slower beyond the machine", 20)]
    assert attribute([op("x", 0, 0, 10, 15)], [1.0] * 5, [1.0] * 5, 1, 1).code_items == []


def test_only_the_ten_largest_code_items_in_order():
    """Twelve added operators of 1..12 ns and a removed one of 12: the ten largest |excess| kept, ties by name."""
    rows = [op(f"n{k:02d}", 0, 1, 0, k, "added") for k in range(1, 13)] + [op("a", 1, 0, 12, 0, "removed")]
    items = attribute(rows, [1.0] * 5, [1.0] * 5, 1, 1).code_items
    assert [i.name for i in items] == ["a", "n12", "n11", "n10", "n09", "n08", "n07", "n06", "n05", "n04"]
    same = [op("b", 0, 1, 0, 5, "added", "[2]"), op("b", 0, 1, 0, 5, "added", "[1]")]
    assert [i.input_shapes for i in attribute(same, [1.0] * 5, [1.0] * 5, 1, 1).code_items] == ["[1]", "[2]"]


def part(code_ns=0.0, interval=None, step_delta_ns=0.0):
    return SimpleNamespace(code_ns=code_ns, code_interval=interval, step_delta_ns=step_delta_ns)


MS = 1_000_000


def test_gate_words_by_hand():
    """The code's part +1.5 ms of a 10 ms step: +15 %; its interval 0.5 .. 2.5 ms (+5 % .. +25 %)."""
    inside = Interval(0.5 * MS, 2.5 * MS, 8.0, 0.95)
    g = judge(None, part(1.5 * MS, inside), 10 * MS, 5, 5, 5)
    assert (g.status, g.gate_on, g.threshold_pct, g.part_ns, g.part_pct, g.interval) == \
        ("regression", "code", 5, 1.5 * MS, pytest.approx(15), inside)
    assert g.text == ("the code's part of the step-time change: +1.500 ms per step (+15.0 % of the baseline's step): "
                      "a regression above 5 %, significant (95 % interval +0.500 .. +2.500 ms per step (+5.0 % .. "
                      "+25.0 %))")
    g = judge(None, part(1.5 * MS, inside), 10 * MS, 5, 5, 15)  # exactly at the threshold: not above
    assert g.status == "pass" and g.text == (
        "the code's part of the step-time change: +1.500 ms per step (+15.0 % of the baseline's step), not above "
        "15 %; 95 % interval +0.500 .. +2.500 ms per step (+5.0 % .. +25.0 %)")
    touching = Interval(0.0, 3 * MS, 8.0, 0.95)  # its low end at 0: not significant
    g = judge(None, part(1.5 * MS, touching), 10 * MS, 5, 5, 5)
    assert g.status == "pass" and g.text == (
        "the code's part of the step-time change: +1.500 ms per step (+15.0 % of the baseline's step), above 5 % but "
        "not significant (95 % interval +0.000 .. +3.000 ms per step (+0.0 % .. +30.0 %))")
    assert (g.gate_on, g.threshold_pct, g.part_ns, g.part_pct, g.interval) == ("code", 5, 1.5 * MS, 15, touching)
    assert judge(None, part(1.5 * MS, Interval(1.0, 3 * MS, 8.0, 0.95)), 10 * MS, 5, 5, 5).status == "regression"
    g = judge(None, part(1.5 * MS, inside), 10 * MS, 5, 5, 15)
    assert (g.gate_on, g.threshold_pct, g.part_ns, g.part_pct, g.interval) == ("code", 15, 1.5 * MS, 15, inside)


def test_gate_at_one_ns_and_ms_to_three_places():
    """A baseline step of 1 ns is a step time: a part of 1 ns is +100 %. 2 000 501 ns is "+2.001" ms (read by 1e6;
    by 1e6 + 1 it would be 2.000499); an interval of 1 .. 2 ns of a 1 ns step is +100 % .. +200 %."""
    g = judge(None, part(1.0, Interval(1.0, 2.0, None, 0.95)), 1, 5, 5, 150)
    assert (g.status, g.part_pct) == ("pass", 100)
    assert g.text.endswith("95 % interval +0.000 .. +0.000 ms per step (+100.0 % .. +200.0 %)")
    wide = Interval(-2_000_501, 2_000_501, 8.0, 0.95)
    g = judge(None, part(2_000_501, wide), 10 * MS, 5, 5, 50)
    assert g.text.startswith("the code's part of the step-time change: +2.001 ms per step (+20.0 % of")
    assert "95 % interval -2.001 .. +2.001 ms per step (-20.0 % .. +20.0 %)" in g.text
    # without a baseline step time the interval has no percentages (noise.py's text for such a side)
    for base in (0, -5):
        assert interval_text(Interval(-1.5 * MS, 2.5 * MS, 4.0, 0.95), base) == "95 % interval -1.500 .. +2.500 ms per step"


def test_gate_on_the_total_and_the_cases_it_cannot_judge():
    """gate_on "total" judges the step-time change (-2 ms of 10: -20 %) and its own interval; no interval:
    cannot judge, saying the step counts (4 and 6); no baseline step time (0 or below): cannot judge."""
    total = Interval(-3 * MS, -1 * MS, 9.0, 0.95)
    g = judge(total, part(5 * MS, None, -2 * MS), 10 * MS, 4, 6, 5, "total")
    assert (g.status, g.part_ns, g.part_pct, g.interval) == ("pass", -2 * MS, pytest.approx(-20), total)
    assert g.text.startswith("the step-time change: -2.000 ms per step (-20.0 % of the baseline's step), not above 5 %")
    g = judge(None, part(5 * MS, None, -2 * MS), 10 * MS, 4, 6, 5)
    assert (g.status, g.gate_on, g.threshold_pct, g.part_ns, g.part_pct, g.interval) == \
        ("cannot judge", "code", 5, 5 * MS, pytest.approx(50), None)
    assert g.text == ("the code's part of the step-time change: +5.000 ms per step (+50.0 % of the baseline's step); "
                      "cannot judge the noise: the baseline has 4 steps, the target 6; 5 steps per side are needed "
                      "(profile more active steps or windows)")
    for base in (0, -1):
        g = judge(total, part(5 * MS, total), base, 5, 5, 5, "total")
        assert (g.status, g.gate_on, g.threshold_pct, g.part_ns, g.part_pct, g.interval) == \
            ("cannot judge", "total", 5, None, None, None)
        assert g.text == "cannot judge: the baseline has no step time (no ProfilerStep ranges)"
    with pytest.raises(ValueError, match="gate_on is one of code, total, not 'steps'"):
        judge(total, part(), 10 * MS, 5, 5, 5, "steps")


def digest(durations, rank=0, numbers=None, distorted=()):
    d = pb.Digest()
    d.window.rank = rank
    for i, dur in enumerate(durations):
        d.steps.add(number=(numbers or range(1, len(durations) + 1))[i], dur_ns=dur, distorted=i in distorted)
    return d


def test_step_samples_of_ranks_and_of_steps_without_a_number():
    """One rank: every kept step in window order (0 ns and distorted ones left out). Two ranks: step 1 is (10 +
    30) / 2 = 20, step 2 (20 + 40) / 2 = 30, in step order whatever the windows' order; steps numbered 0 are
    samples of their own, after; a rank's 0 ns or distorted step is not in the mean."""
    assert step_samples([digest([5, 0, 7, 9], distorted={3})]) == [5.0, 7.0]
    # one rank: window order, not step order; numbers 0 kept in place; a 1 ns step is a step
    assert step_samples([digest([3, 1, 2], numbers=[2, 0, 1])]) == [3.0, 1.0, 2.0]
    assert step_samples([digest([1, 1], rank=0), digest([1], rank=1)]) == [1.0, 1.0]
    ranks = [digest([40, 30, 0], rank=1, numbers=[2, 1, 3]), digest([10, 20, 99, 8], rank=0, numbers=[1, 2, 2, 0],
                                                                   distorted={2})]
    assert step_samples(ranks) == [20.0, 30.0, 8.0]
    assert step_samples([digest([6], rank=0, numbers=[-1]), digest([4], rank=1, numbers=[1])]) == [4.0, 6.0]


def test_t_quantile_of_unknown_and_large_degrees_of_freedom():
    """No df, df 0 or below, or infinite: the normal quantile; df 1e12: the normal quantile to 1e-9."""
    for df in (None, 0, -3, math.inf):
        assert t975(df) == pytest.approx(Z975, abs=1e-12)
    assert t975(1e12) == pytest.approx(Z975, abs=1e-9)


def test_t_quantile_against_the_true_quantile():
    """The true 97.5 % quantiles of Student's t, from the regularized incomplete beta function at 40 digits
    (mpmath.betainc, solved for 0.975; the printed tables agree: 2.228138852 at 10, 1.983971519 at 100). The
    series' own error shrinks as df^-5: under 1e-5 at 10, 1e-10 at 100, float precision at 1000."""
    assert t975(10) == pytest.approx(2.228138851986274748, abs=1e-5)
    assert t975(100) == pytest.approx(1.983971518523552287, abs=1e-10)
    assert t975(1000) == pytest.approx(1.962339080826408485, abs=1e-14)


def test_welch_by_hand_at_five_steps_and_without_spread():
    """Five a side is enough, four not; base 1 2 3 4 5 (mean 3, variance 2.5), target 2 4 6 8 10 (mean 6,
    variance 10): se^2 = 2.5 / 5 + 10 / 5 = 2.5, df = 6.25 / (0.25 / 4 + 4 / 4) = 5.882; the middle 3. At scale
    2: 6 - 2 x 3 = 0, se^2 = 4 x 0.5 + 2 = 4, df = 16 / (4 / 4 + 4 / 4) = 8. No spread: [diff, diff], no df."""
    i = welch([1, 2, 3, 4, 5], [2, 4, 6, 8, 10])
    assert i.df == pytest.approx(6.25 / (0.25 / 4 + 1)) and (i.low_ns + i.high_ns) / 2 == pytest.approx(3)
    # t at 5.88 df lies between the printed t(6) = 2.447 and t(5) = 2.571
    assert 2.447 < (i.high_ns - i.low_ns) / 2 / math.sqrt(2.5) < 2.571 and i.level == 0.95
    i = welch([1, 2, 3, 4, 5], [2, 4, 6, 8, 10], scale=2)
    assert i.df == pytest.approx(8)  # the printed t(8) = 2.306: 0 +- 2 x 2.306
    assert (i.low_ns, i.high_ns) == (pytest.approx(-4.612, abs=0.008), pytest.approx(4.612, abs=0.008))
    assert welch([1, 2, 3, 4], [1, 2, 3, 4, 5]) is None and welch([1, 2, 3, 4, 5], [1, 2, 3, 4]) is None
    i = welch([7] * 5, [9] * 5, scale=2)
    assert (i.low_ns, i.high_ns, i.df, i.level) == (-5, -5, None, 0.95)
