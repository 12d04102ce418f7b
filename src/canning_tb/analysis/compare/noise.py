"""Is a step-time change beyond the noise the two sides show? A Welch interval on the per-step times.

Samples (`step_samples`): one per step of a side. A step recorded by several ranks (the same
ProfilerStep#N in the digests of different ranks) is one sample, the mean over those ranks: the ranks of
one job wait for each other, so their times of one step are not independent draws. Steps of every window
of the side are pooled (windows within a run are the run's spread too). Steps the window's end distorted
(Step.distorted) and steps without a duration are left out, as the step average leaves them out.

Interval (`welch`): the difference of the means, target - scale x baseline, with the 95 % two-sided
Welch-Satterthwaite interval: se = sqrt(s_t^2 / n_t + scale^2 s_b^2 / n_b), degrees of freedom by the
Welch-Satterthwaite formula, the Student t quantile (`t975`) from the Cornish-Fisher expansion of
Abramowitz & Stegun 26.7.5 (no SciPy at run time). `scale` = 1 for the total change; the common factor
of the machine (attribution.py) for the code's part. Fewer than MIN_STEPS samples on a side: no interval
(the variation of fewer steps says nothing about the noise).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

MIN_STEPS = 5                       # per side, to estimate the spread of the step time
LEVEL = 0.95                        # two-sided
_Z975 = statistics.NormalDist().inv_cdf(0.975)


@dataclass
class Interval:
    low_ns: float                   # of target - scale x baseline, ns per step
    high_ns: float
    df: float | None                # Welch-Satterthwaite degrees of freedom; None: no variation at all
    level: float


def step_samples(digests) -> list[float]:
    """One step time (ns) per step of the side (module doc)."""
    ranks = {d.window.rank for d in digests}
    if len(ranks) <= 1:
        return [float(s.dur_ns) for d in digests for s in d.steps if s.dur_ns > 0 and not s.distorted]
    by_number: dict[int, list[int]] = {}
    alone: list[float] = []
    for d in digests:
        for s in d.steps:
            if s.dur_ns <= 0 or s.distorted:
                continue
            if s.number > 0:
                by_number.setdefault(s.number, []).append(s.dur_ns)
            else:
                alone.append(float(s.dur_ns))
    return [sum(v) / len(v) for _, v in sorted(by_number.items())] + alone


def t975(df: float) -> float:
    """The 97.5 % quantile of Student's t with `df` degrees of freedom (Cornish-Fisher, A&S 26.7.5)."""
    z = _Z975
    if df is None or df <= 0 or math.isinf(df):
        return z
    z3, z5, z7, z9 = z ** 3, z ** 5, z ** 7, z ** 9
    g = ((z3 + z) / 4, (5 * z5 + 16 * z3 + 3 * z) / 96, (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / 384,
         (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / 92160)
    return z + sum(gi / df ** (i + 1) for i, gi in enumerate(g))


def welch(base: list[float], target: list[float], scale: float = 1.0) -> Interval | None:
    """The 95 % interval of mean(target) - scale x mean(base); None under MIN_STEPS samples a side."""
    if len(base) < MIN_STEPS or len(target) < MIN_STEPS:
        return None
    vb, vt = scale * scale * statistics.variance(base) / len(base), statistics.variance(target) / len(target)
    diff = statistics.fmean(target) - scale * statistics.fmean(base)
    se2 = vb + vt
    if se2 == 0:
        return Interval(diff, diff, None, LEVEL)
    df = se2 * se2 / (vb * vb / (len(base) - 1) + vt * vt / (len(target) - 1))
    half = t975(df) * math.sqrt(se2)
    return Interval(diff - half, diff + half, df, LEVEL)
