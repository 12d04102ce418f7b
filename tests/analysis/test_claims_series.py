"""The claims' verdicts (analysis/rules/claims.py, docs/rules.md "Significance" and "Gains") on hand-made step
series where one slip would flip them: the noise floor's standard error (sd / sqrt(n), not sd / n), the noise
taken over the step less the time the finding claims, a gain as the union of what a change removes (nested
or parallel ranges once, outside the kept steps not at all), a residual finding left with only what no other
claims, and the time two findings share. Every figure is worked out in the comments; the constants are the
documented ones (docs/rules.md: MIN_GAIN_SHARE 5 %, SHARED_MIN_SHARE 1 %, t(0.90) from the tables, MAD x 1.4826)."""
import numpy as np

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.rules.claims import settle
from canning_tb.analysis.rules.finding import Finding

MS = 1_000_000


def digest(durations_ms, gap_ms=20, skipped=()):
    """Steps 1..n, step k starting at (k - 1) x gap_ms; `skipped`: numbers the average leaves out."""
    d = pb.Digest()
    for k, dur in enumerate(durations_ms, 1):
        d.steps.add(number=k, start_ns=(k - 1) * gap_ms * MS, dur_ns=int(dur * MS))
    d.average_steps.extend(k for k in range(1, len(durations_ms) + 1) if k not in skipped)
    return d


def finding(rule, spans_ms, residual=False):
    """A warning removing these (start, end) ranges, ms."""
    starts = np.array([round(s * MS) for s, _ in spans_ms], np.int64)
    ends = np.array([round(e * MS) for _, e in spans_ms], np.int64)
    return Finding(rule=rule, category="time", severity="warning", title=rule, seen=f"{rule}.",
                   removes=(starts, ends), residual=residual)


def test_the_noise_floor_is_t_times_sd_over_sqrt_n():
    # 5 steps of 10, 14, 10, 14, 12 ms (mean 12: floor 5 % = 0.6 ms); the finding removes 1 ms of each
    durations = [10, 14, 10, 14, 12]
    d = digest(durations)
    f = finding("f", [((k * 20), (k * 20) + 1) for k in range(5)])
    (kept,) = settle([f], d, step_ns=12 * MS)
    assert kept.gain_ns == 1 * MS
    # the rest of the step: 9, 13, 9, 13, 11 ms; median 11, absolute deviations 2, 2, 2, 2, 0: MAD 2 ms,
    # sd 1.4826 x 2 ms; t(0.90, 4) = 1.533; noise = 1.533 x 2.9652 ms / sqrt(5) = 2.0329 ms
    assert kept.noise_ns == round(1.533 * 1.4826 * 2 * MS / 5 ** 0.5)
    # 1 ms is within it: an info that says so (over n instead of sqrt(n) the floor would be 0.909 ms: a warning)
    assert kept.severity == "info" and "noise floor 2.033 ms" in kept.seen
    # the same steps, a finding removing 2.0 ms or 2.1 ms of each: the rest varies as before (noise 2.0329 ms),
    # so 2.0 ms is within it and 2.1 ms above it
    for claim_ms, severity in ((2.0, "info"), (2.1, "warning")):
        (kept,) = settle([finding("f", [(k * 20, k * 20 + claim_ms) for k in range(5)])], d, step_ns=12 * MS)
        assert (kept.gain_ns, kept.severity) == (round(claim_ms * MS), severity)


def test_the_noise_is_the_rest_of_the_step_not_the_claimed_time():
    # 4 steps of 10, 16, 10, 16 ms; the finding removes 6 ms of the long ones (what makes them long)
    d = digest([10, 16, 10, 16])
    f = finding("wait", [(20, 26), (60, 66)])
    (kept,) = settle([f], d, step_ns=13 * MS)
    # gain: 12 ms over 4 steps = 3 ms; the rest of each step is 10 ms: no variation, noise 0
    assert (kept.gain_ns, kept.noise_ns, kept.severity) == (3 * MS, 0, "warning")
    # (over the raw steps: median 13, MAD 3 ms, t(0.90, 3) = 1.638: 1.638 x 4.4478 / 2 = 3.64 ms > 3 ms: an info)


def test_gains_count_each_instant_once_and_residuals_only_the_unclaimed():
    # 4 kept steps of 10 ms at 0, 20, 40, 60 ms (floor 0.5 ms, shared above 0.1 ms) and step 5 left out
    d = digest([10, 10, 10, 10, 10], skipped=(5,))
    steps = [0, 20, 40, 60]
    # a: [1, 4) ms of each step, a nested [2, 3) again, [12, 14) between steps, and all of step 5: 3 ms per step
    a = finding("a", [span for s in steps for span in ((s + 1, s + 4), (s + 2, s + 3), (s + 12, s + 14))] + [(80, 90)])
    # b: [3, 5) ms: 2 ms per step, 1 ms of it shared with a
    b = finding("b", [(s + 3, s + 5) for s in steps])
    # idle (residual) over [0, 5.4): only [0, 1) and [5, 5.4) are no one else's: 1.4 ms
    idle = finding("idle", [(s, s + 5.4) for s in steps], residual=True)
    # a residual over [1, 5.3): all claimed but [5, 5.3): 0.3 ms, under the 0.5 ms floor: no finding
    small = finding("small_idle", [(s + 1, s + 5.3) for s in steps], residual=True)
    kept = {f.rule: f for f in settle([a, b, idle, small], d, step_ns=10 * MS)}
    assert set(kept) == {"a", "b", "idle"}
    assert (kept["a"].gain_ns, kept["b"].gain_ns, kept["idle"].gain_ns) == (3 * MS, 2 * MS, 1_400_000)
    assert kept["a"].shared == [("b", "b", 1 * MS)] and kept["b"].shared == [("a", "a", 1 * MS)]
    assert kept["idle"].shared == []  # a residual shares nothing by construction
    assert all(f.severity == "warning" and f.noise_ns == 0 for f in kept.values())  # equal steps: no noise


def test_a_gain_under_five_percent_of_the_step_is_not_reported():
    # 4 steps of 10 ms: the floor is 0.5 ms; 0.49 ms per step is dropped, 0.51 ms kept
    d = digest([10, 10, 10, 10])
    under = finding("under", [(s, s + 0.49) for s in (0, 20, 40, 60)])
    over = finding("over", [(s + 5, s + 5.51) for s in (0, 20, 40, 60)])
    kept = settle([under, over], d, step_ns=10 * MS)
    assert [(f.rule, f.gain_ns, f.floor_ns) for f in kept] == [("over", 510_000, 500_000)]


def test_time_that_is_no_steps_removes_nothing():
    # 2 steps of 10 ms; [2, 6) ms of step 1 is graph capture (not_steps): a finding over [0, 6) of each step
    # removes 2 ms of step 1 and 6 ms of step 2: 4 ms per step (6 ms if the capture counted)
    d = digest([10, 10])
    capture = (np.array([2 * MS]), np.array([6 * MS]))
    (kept,) = settle([finding("f", [(0, 6), (20, 26)])], d, step_ns=10 * MS, not_steps=[capture])
    assert kept.gain_ns == 4 * MS
