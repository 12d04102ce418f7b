"""Code or machine: the step-time change split into the part a slower (or faster) machine explains and
the part the code does.

The machine's common factor: operators matched by name and input shapes (ops.operator_rows, mode
"shape") with the same calls per step on both sides (within CALLS_TOLERANCE) and time on both sides run
the same code. Their ratios target / baseline of time per step, weighted by the baseline's time, give a
weighted median and weighted quartiles `factor_low` .. `factor_high` (the spread shown). A matched
operator that holds at least SHARE of their baseline time and whose ratio is more than FAR times the
median (or under median / FAR) changed beyond the machine: it is the code's. `factor` is the ratio of the
sums of the other matched operators' times, sum(target) / sum(baseline). A machine under load, at another
clock or shared with another job slows every operator by about the same factor; the code changes which
operators run, their calls or shapes, or one operator far beyond the others. Why a ratio of sums and not a
median of ratios: a machine shared by time slices delays a few short operators a lot and most not at all
(the ratios are heavy-tailed), and only the sums follow the step (runs here: the weighted median said 0.48
and 1.67 where the step went 0.63x and 2.04x and the sums 0.61x and 2.08x); and why only operators with a
share are judged one by one: a short operator's ratio is that noise, a long one's is not.

Parts, in ns per step: machine = (factor - 1) x the baseline's step time (the whole step scaled by the
machine's factor: gaps and Python between operators slow down with it); code = the step-time change -
machine. The code part's 95 % interval: noise.welch of target - factor x baseline (the steps' noise),
widened by the factor's own uncertainty, the standard error of a ratio estimator over the n operators
that set it, se = sqrt(n / (n - 1) x sum (t_i - factor x b_i)^2) / sum b_i (few operators holding most of
the time, or operators that disagree: a wide interval); the two half-widths add in quadrature:
half = sqrt(welch^2 + (t x se x baseline step)^2). No matched operator (nothing ran on both sides with
the same calls and shapes): the machine part is unknown (None) and the whole change is the code's.

Code items, the operators the code part names: those added or removed, those whose calls changed
(other shapes are other rows), and matched ones beyond the machine (above);
each with its excess target - factor x baseline (what it costs beyond what the machine explains). Their
sum is `named_ns`; code - named_ns is `rest_ns`, the code part no operator explains (shown apart,
never netted against a named operator).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .noise import Interval, t975, welch
from .ops import Row

CALLS_TOLERANCE = 0.005             # relative: calls per step are sums / steps
FAR = 2.0                           # an operator's ratio over FAR x the median ratio (or under median / FAR) ...
SHARE = 0.01                        # ... holding at least this share of the matched operators' time: the code's
ITEMS = 10                          # code items kept, largest |excess| first


@dataclass
class CodeItem:
    name: str
    input_shapes: str
    why: str                        # "added" | "removed" | "other calls" | "slower beyond the machine" | "faster ..."
    base_ns: float                  # per step
    target_ns: float
    excess_ns: float                # target - factor x base


@dataclass
class Attribution:
    matched_operators: int          # operators that set the factor
    matched_share: float | None     # their share of the baseline's operator time; None without operator time
    factor: float | None            # the machine's common factor (sum target / sum baseline); None: unknown
    factor_low: float | None
    factor_high: float | None
    step_delta_ns: float
    machine_ns: float | None        # per step; None: unknown (no matched operator)
    code_ns: float
    code_interval: Interval | None  # 95 %, of the code part; None: too few steps
    code_items: list[CodeItem] = field(default_factory=list)
    named_ns: float = 0.0           # the code items' excess, summed
    rest_ns: float = 0.0            # code_ns - named_ns: not explained by a named operator


def weighted_quantile(values: list[float], weights: list[float], q: float) -> float:
    """The smallest value whose cumulative weight reaches q of the total (values with positive weights)."""
    pairs = sorted(zip(values, weights))
    total, acc = sum(weights), 0.0
    for value, weight in pairs:
        acc += weight
        if acc >= q * total:
            return value
    return pairs[-1][0]


def _same_calls(row: Row) -> bool:
    return abs(row.target_calls - row.base_calls) <= CALLS_TOLERANCE * max(row.base_calls, row.target_calls)


def _matched(rows: list[Row]) -> list[Row]:
    return [r for r in rows if r.base_calls > 0 and r.target_calls > 0 and _same_calls(r)
            and r.base_ns > 0 and r.target_ns > 0]


def _beyond(row: Row, median: float, total: float) -> str:
    """"slower" / "faster" for a matched operator FAR beyond the median ratio that holds at least SHARE of
    the matched operators' baseline time, else "" (module doc)."""
    if row.base_ns < SHARE * total:
        return ""
    ratio = row.target_ns / row.base_ns
    return "slower" if ratio > median * FAR else "faster" if ratio < median / FAR else ""


def _why(row: Row, median: float, total: float) -> str:
    if row.status in ("added", "removed"):
        return row.status
    if not _same_calls(row):
        return "other calls"
    if row.base_ns > 0 and row.target_ns > 0:
        far = _beyond(row, median, total)
        return f"{far} beyond the machine" if far else ""
    return ""


def attribute(rows: list[Row], base_steps: list[float], target_steps: list[float], base_step_ns: float,
              target_step_ns: float) -> Attribution:
    """`rows`: operators by name + shapes (ops.operator_rows(..., "shape")); steps: noise.step_samples."""
    matched = _matched(rows)
    delta = target_step_ns - base_step_ns
    op_time = sum(r.base_ns for r in rows)
    share = sum(r.base_ns for r in matched) / op_time if op_time > 0 else None
    if not matched:
        interval = welch(base_steps, target_steps)
        items = _items(rows, 1.0, 1.0, sum(r.base_ns for r in rows))
        named = sum(i.excess_ns for i in items)
        return Attribution(0, share, None, None, None, delta, None, delta, interval, items, named, delta - named)
    ratios, weights = [r.target_ns / r.base_ns for r in matched], [r.base_ns for r in matched]
    low, high = weighted_quantile(ratios, weights, 0.25), weighted_quantile(ratios, weights, 0.75)
    median, total = weighted_quantile(ratios, weights, 0.5), sum(weights)
    kept = [r for r in matched if not _beyond(r, median, total)]
    factor = sum(r.target_ns for r in kept) / sum(r.base_ns for r in kept)
    machine = (factor - 1) * base_step_ns
    code = delta - machine
    interval = _widened(welch(base_steps, target_steps, factor), factor_se(kept, factor), base_step_ns)
    items = _items(rows, factor, median, total)
    named = sum(i.excess_ns for i in items)
    return Attribution(len(kept), share, factor, low, high, delta, machine, code, interval, items, named,
                       code - named)


def factor_se(rows: list[Row], factor: float) -> float:
    """The standard error of the ratio of sums `factor` over `rows` (module doc); 0 for a single operator,
    whose factor has no spread to tell."""
    n = len(rows)
    if n < 2:
        return 0.0
    residual = sum((r.target_ns - factor * r.base_ns) ** 2 for r in rows)
    return math.sqrt(n / (n - 1) * residual) / sum(r.base_ns for r in rows)


def _widened(steps: Interval | None, se: float, base_step_ns: float) -> Interval | None:
    if steps is None:
        return None
    middle, half = (steps.low_ns + steps.high_ns) / 2, (steps.high_ns - steps.low_ns) / 2
    half = math.sqrt(half * half + (t975(steps.df) * se * base_step_ns) ** 2)
    return Interval(middle - half, middle + half, steps.df, steps.level)


def _items(rows: list[Row], factor: float, median: float, total: float) -> list[CodeItem]:
    out = []
    for r in rows:
        why = _why(r, median, total)
        if why:
            out.append(CodeItem(r.key, r.input_shapes, why, r.base_ns, r.target_ns, r.target_ns - factor * r.base_ns))
    out.sort(key=lambda i: (-abs(i.excess_ns), i.name, i.input_shapes))
    return out[:ITEMS]
