"""The regression gate: does the target regress beyond the user's threshold, beyond the noise?

`judge(comparison parts, threshold_pct, gate_on)`: the part judged is the code's (attribution.py,
`gate_on="code"`, the default) or the whole step-time change (`"total"`), in % of the baseline's step
time. Verdicts:
- "regression": the part is above the threshold AND significant (its 95 % interval lies above 0);
- "pass": below the threshold, or above it but not significant ("not significant (interval ...)");
- "cannot judge": a side has fewer than noise.MIN_STEPS steps (the text says how many it needs), or the
  baseline has no step time.
"""
from __future__ import annotations

from dataclasses import dataclass

from .attribution import Attribution
from .noise import MIN_STEPS, Interval

GATE_ON = ("code", "total")
PASS, REGRESSION, CANNOT_JUDGE = "pass", "regression", "cannot judge"


@dataclass
class Gate:
    status: str                     # PASS | REGRESSION | CANNOT_JUDGE
    gate_on: str                    # "code" | "total"
    threshold_pct: float
    part_ns: float | None           # the judged part, ns per step
    part_pct: float | None          # of the baseline's step time
    interval: Interval | None
    text: str


def interval_text(interval: Interval, base_step_ns: float) -> str:
    pct = (f" ({100 * interval.low_ns / base_step_ns:+.1f} % .. {100 * interval.high_ns / base_step_ns:+.1f} %)"
           if base_step_ns > 0 else "")
    return f"95 % interval {interval.low_ns / 1e6:+.3f} .. {interval.high_ns / 1e6:+.3f} ms per step{pct}"


def too_few_text(base_steps: int, target_steps: int) -> str:
    return (f"cannot judge the noise: the baseline has {base_steps} steps, the target {target_steps}; "
            f"{MIN_STEPS} steps per side are needed (profile more active steps or windows)")


def judge(total: Interval | None, attribution: Attribution, base_step_ns: float, base_steps: int,
          target_steps: int, threshold_pct: float, gate_on: str = "code") -> Gate:
    if gate_on not in GATE_ON:
        raise ValueError(f"gate_on is one of {', '.join(GATE_ON)}, not {gate_on!r}")
    part, interval = ((attribution.code_ns, attribution.code_interval) if gate_on == "code"
                      else (attribution.step_delta_ns, total))
    what = "the code's part of the step-time change" if gate_on == "code" else "the step-time change"
    if base_step_ns <= 0:
        return Gate(CANNOT_JUDGE, gate_on, threshold_pct, None, None, None,
                    "cannot judge: the baseline has no step time (no ProfilerStep ranges)")
    pct = 100 * part / base_step_ns
    head = f"{what}: {part / 1e6:+.3f} ms per step ({pct:+.1f} % of the baseline's step)"
    if interval is None:
        return Gate(CANNOT_JUDGE, gate_on, threshold_pct, part, pct, None,
                    f"{head}; {too_few_text(base_steps, target_steps)}")
    if pct <= threshold_pct:
        return Gate(PASS, gate_on, threshold_pct, part, pct, interval,
                    f"{head}, not above {threshold_pct:g} %; {interval_text(interval, base_step_ns)}")
    if interval.low_ns <= 0:
        return Gate(PASS, gate_on, threshold_pct, part, pct, interval,
                    f"{head}, above {threshold_pct:g} % but not significant ({interval_text(interval, base_step_ns)})")
    return Gate(REGRESSION, gate_on, threshold_pct, part, pct, interval,
                f"{head}: a regression above {threshold_pct:g} %, significant "
                f"({interval_text(interval, base_step_ns)})")
