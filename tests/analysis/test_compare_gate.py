"""Issue 42 on digests built here, every expected number worked out by hand: the Welch interval of the
step-time change (noise.py), the machine's and the code's part (attribution.py), the gate (gate.py), the
words of a step-time change, "new" / "gone" only for operators that appear / disappear, and the rest rows
of the text and Markdown reports apart from the named operators. The real runs are in
tests/cli/test_compare_gate_runs.py."""
import pytest

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.compare.noise import step_samples, t975, welch
from canning_tb.analysis.compare.verdict import compare, step_text

MS = 1_000_000


def digest(steps_ms, ops=(), rank=0, distorted=()):
    """One window: its steps (ms) and operators (name, shapes, calls, host self ms) over the whole window;
    host-only, so an operator's compared time is its host self time."""
    d = pb.Digest()
    d.window.rank = rank
    for i, ms in enumerate(steps_ms):
        step = d.steps.add(number=i + 1, start_ns=i * 1000 * MS, dur_ns=int(ms * MS), distorted=i in distorted)
        step.breakdown.total_ns = step.breakdown.host_ns = int(ms * MS)
    kept = [ms for i, ms in enumerate(steps_ms) if i not in distorted]
    d.average.total_ns = d.average.host_ns = int(sum(kept) / len(kept) * MS)
    for name, shapes, calls, self_ms in ops:
        for table in (d.ops_by_name, d.ops_by_shape):
            table.add(name=name, input_shapes=shapes if table is d.ops_by_shape else "", calls=calls,
                      host_self_ns=int(self_ms * MS), host_total_ns=int(self_ms * MS))
    return d


# the 97.5 % quantiles of Student's t, from the printed tables (e.g. Abramowitz & Stegun table 26.10)
T_TABLE = {3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 8: 2.306, 10: 2.228, 15: 2.131, 20: 2.086, 30: 2.042, 60: 2.000,
           120: 1.980}


@pytest.mark.parametrize("df,expected", sorted(T_TABLE.items()))
def test_t_quantile_is_the_table_s(df, expected):
    assert t975(df) == pytest.approx(expected, abs=0.004)


def test_welch_interval_by_hand():
    """base 10 12 11 13 9: mean 11, variance (1+1+0+4+4)/4 = 2.5; target 14 15 13 16 12: mean 14, variance 2.5;
    se^2 = 2.5/5 + 2.5/5 = 1; df = 1 / (0.25/4 + 0.25/4) = 8; t(8) = 2.306: 3 +- 2.306."""
    i = welch([10, 12, 11, 13, 9], [14, 15, 13, 16, 12])
    assert (i.low_ns, i.high_ns, i.df) == (pytest.approx(0.694, abs=0.002), pytest.approx(5.306, abs=0.002),
                                           pytest.approx(8))
    # scaled baseline (the code's part): target - 1.2 x base = 14 - 13.2 = 0.8; se^2 = 1.44 x 0.5 + 0.5 = 1.22
    # df = 1.22^2 / ((0.72^2 + 0.5^2) / 4) = 7.74: t about 2.315, half 2.315 x 1.1045 = 2.557
    i = welch([10, 12, 11, 13, 9], [14, 15, 13, 16, 12], scale=1.2)
    assert (i.low_ns + i.high_ns) / 2 == pytest.approx(0.8) and i.high_ns - i.low_ns == pytest.approx(2 * 2.557, abs=0.01)
    assert welch([1, 2, 3, 4], [1, 2, 3, 4, 5]) is None  # 4 steps: too few


def test_steps_of_several_ranks_are_one_sample_each():
    """Ranks 0 and 1 of steps 1..2 (10/14 and 20/22 ms): means 12 and 21; a distorted step is left out."""
    samples = step_samples([digest([10, 20, 99], rank=0, distorted={2}), digest([14, 22], rank=1)])
    assert samples == [12 * MS, 21 * MS]
    assert step_samples([digest([10, 20, 30], distorted={1})]) == [10 * MS, 30 * MS]


def test_step_words():
    assert step_text(10, 6.9) == "step 31 % shorter (1.45x faster)"
    assert step_text(100, 124) == "step 24 % longer (1.24x slower)"
    assert step_text(100, 100.5) == "step about the same"
    assert step_text(100, 0.2) == "step 99.8 % shorter (500x faster)"
    assert step_text(None, 5) == step_text(0, 5) == "n/a"


OPS = [("aten::addmm", "[[64, 512], [512, 512]]", 18, 36), ("aten::mm", "[[64, 512], [512, 512]]", 12, 18),
       ("aten::relu", "[[64, 512]]", 12, 6), ("aten::add_", "[[512]]", 36, 3.6)]  # per 6-step window: 63.6 ms


def scaled(ops, factor):
    return [(n, s, c, t * factor) for n, s, c, t in ops]


BASE_STEPS = [12.0, 12.4, 11.6, 12.2, 11.8, 12.0]  # mean 12, variance (0+.16+.16+.04+.04+0)/5 = 0.08


def test_a_slower_machine_is_the_machine_s_part():
    """Every operator 1.5x slower with the same calls and shapes, the step too (18 ms): factor 1.5, machine
    (1.5 - 1) x 12 = 6 ms, code 0. The gate on the code passes, the gate on the total fails (+50 %, the
    interval well above 0)."""
    base = digest(BASE_STEPS, OPS)
    target = digest([1.5 * s for s in BASE_STEPS], scaled(OPS, 1.5))
    c = compare(base, target, threshold_pct=5).as_dict()
    a = c["attribution"]
    assert a["factor"] == pytest.approx(1.5) and (a["factor_low"], a["factor_high"]) == (pytest.approx(1.5),) * 2
    assert a["machine_ns"] == pytest.approx(6 * MS) and a["code_ns"] == pytest.approx(0, abs=1000)
    assert a["matched_operators"] == 4 and a["code_items"] == []
    assert c["gate"]["status"] == "pass" and c["gate"]["gate_on"] == "code"
    total = compare(base, target, threshold_pct=5, gate_on="total").as_dict()["gate"]
    assert total["status"] == "regression" and total["part_pct"] == pytest.approx(50)
    assert c["verdict"]["significance"] == "significant"
    assert c["verdict"]["text"].startswith("step 50 % longer (1.50x slower), significant (95 % interval +")


def test_an_added_operator_is_the_code_s_part_and_is_blamed():
    """The same operators at the same time, aten::linalg_svd added at 18 ms per window (3 ms per step), the
    step 12 -> 15 ms: factor 1, machine 0, code +3 ms (+25 %), the SVD the first code item, "new"."""
    base = digest(BASE_STEPS, OPS)
    target = digest([s + 3 for s in BASE_STEPS], OPS + [("aten::linalg_svd", "[[200, 200]]", 6, 18)])
    c = compare(base, target, threshold_pct=5).as_dict()
    a = c["attribution"]
    assert a["factor"] == pytest.approx(1) and a["machine_ns"] == pytest.approx(0, abs=1000)
    assert a["code_ns"] == pytest.approx(3 * MS, abs=1000)
    first = a["code_items"][0]
    assert (first["name"], first["why"], first["excess_ns"]) == ("aten::linalg_svd", "added", pytest.approx(3 * MS))
    assert c["gate"]["status"] == "regression" and c["gate"]["part_pct"] == pytest.approx(25, abs=0.01)
    svd = next(r for r in c["operators"] if r["key"] == "aten::linalg_svd")
    assert (svd["status"], svd["delta_text"]) == ("added", "new")


def test_not_significant_and_cannot_judge():
    """+10 % in the mean with steps that vary by +-50 %: above 5 % but not significant; 3 steps: cannot judge,
    saying how many are needed."""
    noisy = [6, 18, 6, 18, 6, 18]
    c = compare(digest(noisy, OPS), digest([s * 1.1 for s in noisy[::-1]], OPS), threshold_pct=5, gate_on="total")
    gate = c.as_dict()["gate"]
    assert gate["status"] == "pass" and "above 5 % but not significant (95 % interval" in gate["text"]
    assert gate["interval"]["low_ns"] < 0 < gate["interval"]["high_ns"]
    few = compare(digest([12, 12, 12], OPS), digest([20, 20, 20], OPS), threshold_pct=5).as_dict()
    assert few["gate"]["status"] == "cannot judge" and few["verdict"]["significance"] == "cannot judge"
    assert "the baseline has 3 steps, the target 3; 5 steps per side are needed" in few["gate"]["text"]


def test_the_same_calls_are_never_new_or_gone():
    """aten::copy_ called 6 times on both sides, 0.006 -> 6 ms: under 1 % of the other side (no percentage),
    but neither new nor gone; aten::fill_ not called in the target: gone."""
    base = digest(BASE_STEPS, OPS + [("aten::copy_", "", 6, 0.006), ("aten::fill_", "", 6, 1)])
    target = digest(BASE_STEPS, OPS + [("aten::copy_", "", 6, 6)])
    rows = {r["key"]: r for r in compare(base, target).as_dict()["operators"]}
    assert (rows["aten::copy_"]["status"], rows["aten::copy_"]["delta_text"], rows["aten::copy_"]["delta_pct"]) == \
        ("changed", "", None)
    assert (rows["aten::fill_"]["status"], rows["aten::fill_"]["delta_text"]) == ("removed", "gone")


def test_rest_rows_are_apart_from_the_named_operators():
    """The issue's case: an operator +92 ms per step while the step grows by 1 ms (the host category +1): the
    rest of the host is -91 ms. The reports list the named operator first and the rest apart, after every
    named row, never in the operator's place."""
    from canning_tb.cli.compare_formats import markdown_report
    from canning_tb.cli.compare_text import text_report
    steps = [100.0, 101, 99, 100, 100.5, 99.5]
    base = digest(steps, [("aten::mm", "", 6, 60)])
    target = digest([s + 1 for s in steps], [("aten::mm", "", 6, 60 + 6 * 92)])
    comp = compare(base, target).as_dict()
    host = next(c for c in comp["contributors"]["by_category"] if c["category"] == "host")
    assert host["delta_ns"] == pytest.approx(1 * MS) and host["rest_ns"] == pytest.approx(-91 * MS)
    text = text_report(comp, 10)
    named, rest = text.index("aten::mm"), text.index("Not explained by a named operator")
    assert named < rest and "+92.000 ms" in text[named:rest] and "-91" not in text[named:rest]
    md = markdown_report(comp, {"text": "x"}, 10)
    assert md.index("`aten::mm` | +92.000") < md.index("*not explained by a named operator*")


def test_one_long_operator_far_beyond_the_others_is_the_code_s():
    """aten::mm (18 of the 63.6 ms per window, 28 %) 3x slower, the others unchanged, the step 12 -> 18 ms: the
    weighted median ratio is 1, mm's 3 is over 2x it: the code's; the factor is the others' sums, 1; code +6 ms
    per step, mm's excess (54 - 18) / 6 = 6 ms."""
    base = digest(BASE_STEPS, OPS)
    slower = [(n, s, c, t * 3 if n == "aten::mm" else t) for n, s, c, t in OPS]
    c = compare(base, digest([s + 6 for s in BASE_STEPS], slower), threshold_pct=5).as_dict()
    a = c["attribution"]
    assert a["factor"] == pytest.approx(1) and a["code_ns"] == pytest.approx(6 * MS, abs=1000)
    assert a["matched_operators"] == 3
    (item,) = a["code_items"]
    assert (item["name"], item["why"], item["excess_ns"]) == ("aten::mm", "slower beyond the machine", pytest.approx(6 * MS))
    assert c["gate"]["status"] == "regression"


def test_short_operators_delayed_by_time_slices_stay_the_machine_s():
    """Every operator 2x slower, and a 0.06 ms operator (under 1 % of the matched time) 20x slower: a short
    operator's ratio is not judged alone (time slices delay a few short ones a lot); it stays in the sums.
    Factor (2 x 63.6 + 1.2) / (63.6 + 0.06) = 128.4 / 63.66 = 2.0170; the step 12 -> 24.2 ms: machine
    1.0170 x 12 = 12.204 ms, code 12.2 - 12.204 = -0.004 ms; no code item."""
    tiny = [("aten::as_strided", "[[4]]", 6, 0.06)]
    base = digest(BASE_STEPS, OPS + tiny)
    target = digest([2 * s + 0.2 for s in BASE_STEPS], scaled(OPS, 2) + scaled(tiny, 20))
    a = compare(base, target, threshold_pct=5).as_dict()["attribution"]
    assert a["factor"] == pytest.approx(128.4 / 63.66, rel=1e-4)
    assert a["machine_ns"] == pytest.approx((128.4 / 63.66 - 1) * 12 * MS, rel=1e-4) and a["code_items"] == []
