"""Code or machine: the step-time change split into the part a slower (or faster) machine explains and
the part the code does.

The machine's common factor: operators matched by name and input shapes (ops.operator_rows, mode
"shape") with the same calls per step on both sides (within CALLS_TOLERANCE) and time on both sides run
the same code; the ratio target / baseline of their time per step, weighted by the baseline's time, has a
weighted median `factor` (the machine) and weighted quartiles `factor_low` .. `factor_high` (its
spread). A machine under load, at another clock or shared with another job slows every operator by
about the same factor; the code changes which operators run, their calls or shapes, or one operator far
beyond the others.

Parts, in ns per step: machine = (factor - 1) x the baseline's step time (the whole step scaled by the
machine's factor: gaps and Python between operators slow down with it); code = the step-time change -
machine. The code part's 95 % interval: noise.welch of target - factor x baseline (the steps' noise),
widened by the factor's own uncertainty: its standard error is that of a median, 1.253 sigma / sqrt(n),
with sigma = (factor_high - factor_low) / 1.349 (the quartiles of a normal spread) and n the operators'
effective number (sum w)^2 / sum w^2 (few operators that hold most of the time: a wide interval); the
two half-widths add in quadrature: half = sqrt(welch^2 + (t x se x baseline step)^2). No matched
operator (nothing ran on both sides with the same calls and shapes): the machine part is unknown
(None) and the whole change is the code's.

Code items, the operators the code part names: those added or removed, those whose calls changed
(other shapes are other rows), and matched ones slower or faster FAR x beyond the factor's quartiles;
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
FAR = 1.5                           # an operator's ratio beyond factor_high x FAR (or under factor_low / FAR)
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
    factor: float | None            # the machine's common factor (target / baseline); None: unknown
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


def _why(row: Row, low: float, high: float) -> str:
    if row.status in ("added", "removed"):
        return row.status
    if not _same_calls(row):
        return "other calls"
    if row.base_ns > 0 and row.target_ns > 0:
        ratio = row.target_ns / row.base_ns
        if ratio > high * FAR:
            return "slower beyond the machine"
        if ratio < low / FAR:
            return "faster beyond the machine"
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
        items = _items(rows, 1.0, 1.0, 1.0)
        named = sum(i.excess_ns for i in items)
        return Attribution(0, share, None, None, None, delta, None, delta, interval, items, named, delta - named)
    ratios, weights = [r.target_ns / r.base_ns for r in matched], [r.base_ns for r in matched]
    factor = weighted_quantile(ratios, weights, 0.5)
    low, high = weighted_quantile(ratios, weights, 0.25), weighted_quantile(ratios, weights, 0.75)
    machine = (factor - 1) * base_step_ns
    code = delta - machine
    interval = _widened(welch(base_steps, target_steps, factor), factor_se(low, high, weights), base_step_ns)
    items = _items(rows, factor, low, high)
    named = sum(i.excess_ns for i in items)
    return Attribution(len(matched), share, factor, low, high, delta, machine, code, interval, items, named,
                       code - named)


def factor_se(low: float, high: float, weights: list[float]) -> float:
    """The standard error of the weighted median factor (module doc)."""
    effective = sum(weights) ** 2 / sum(w * w for w in weights)
    return 1.253 * (high - low) / 1.349 / math.sqrt(effective)


def _widened(steps: Interval | None, se: float, base_step_ns: float) -> Interval | None:
    if steps is None:
        return None
    middle, half = (steps.low_ns + steps.high_ns) / 2, (steps.high_ns - steps.low_ns) / 2
    half = math.sqrt(half * half + (t975(steps.df) * se * base_step_ns) ** 2)
    return Interval(middle - half, middle + half, steps.df, steps.level)


def _items(rows: list[Row], factor: float, low: float, high: float) -> list[CodeItem]:
    out = []
    for r in rows:
        why = _why(r, low, high)
        if why:
            out.append(CodeItem(r.key, r.input_shapes, why, r.base_ns, r.target_ns, r.target_ns - factor * r.base_ns))
    out.sort(key=lambda i: (-abs(i.excess_ns), i.name, i.input_shapes))
    return out[:ITEMS]
