"""Operators and kernels of two sides matched by (canonical) name, per step, with their deltas.

Operators are matched by name, by name + input shapes, or by name + call stack (the stack's
line numbers dropped, so an edit that shifts lines still matches). An operator's time is self
time (exclusive, so rows add up without counting a child inside its parent): its device self
time when it ran device work on either side (device total time > 0), else its host self time,
so host-only work (the dataloader, Python-side ranges, CPU-only windows) counts too; both are
kept in the row. ProfilerStep#N ranges are left out: their self time is the step's gaps, not an
operator's. Kernels are matched by name and by family
(names.NameMap.family). A row present on one side only is "added" or "removed".

A percentage of a base near zero says nothing (two runs that nest events differently give +9766 %):
when one side is under NEAR_ZERO of the other, `delta_pct` is None. `delta_text` says "new" only when
the operator really appears (no call in the baseline, calls in the target) and "gone" only when it
really disappears; an operator called as often on both sides is never new or gone, whatever its time.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .side import Side
from ..names import NameMap
from ..summary import STEP_RANGE_PREFIX

MODES = {"name": "ops_by_name", "shape": "ops_by_shape", "stack": "ops_by_stack"}
NEAR_ZERO = 0.01  # one side under 1 % of the other: "new" / "gone", not a percentage
_LINE = re.compile(r"\(\d+\)")


@dataclass
class Row:
    key: str                        # canonical name (kernels: name or family)
    input_shapes: str
    call_stack: str                 # without line numbers
    base_names: list[str]           # the names on each side that map to `key`
    target_names: list[str]
    base_calls: float               # per step
    target_calls: float
    base_ns: float                  # time per step (see the module doc); kernels: device time
    target_ns: float
    delta_ns: float
    delta_pct: float | None         # of the baseline; None when one side is near zero (delta_text)
    delta_text: str                 # "new" | "gone" when the operator appears / disappears (calls), else ""
    status: str                     # "added" | "removed" | "changed" | "same"
    base_host_self_ns: float        # per step
    target_host_self_ns: float
    base_device_self_ns: float
    target_device_self_ns: float
    base_host_total_ns: float       # per step, children included
    target_host_total_ns: float
    base_device_total_ns: float
    target_device_total_ns: float

    # for the paged table (analysis/table_page.py sorts and searches by attribute)
    @property
    def abs_delta(self) -> float:
        return abs(self.delta_ns)

    @property
    def pct_order(self) -> float:
        """delta_pct, "new" above every percentage, "gone" below, unknown as 0."""
        if self.delta_pct is not None:
            return self.delta_pct
        return {"new": float("inf"), "gone": -float("inf")}.get(self.delta_text, 0.0)

    @property
    def names(self) -> str:
        return "\n".join(self.base_names + self.target_names)


def metric_of(base: Side, target: Side) -> str:
    """"device" when a side ran device work (operators then use the rule of the module doc)."""
    return "device" if base.has_device or target.has_device else "host"


def strip_lines(call_stack: str) -> str:
    return _LINE.sub("", call_stack)


def status_of(base_calls: float, target_calls: float, delta: float) -> str:
    if base_calls == 0 and target_calls > 0:
        return "added"
    if target_calls == 0 and base_calls > 0:
        return "removed"
    return "same" if delta == 0 else "changed"


def percent_change(before: float, after: float, status: str = "changed") -> tuple[float | None, str]:
    """(delta_pct, delta_text) of a change from `before` to `after` of a row of `status` (module doc)."""
    text = {"added": "new", "removed": "gone"}.get(status, "")
    if (after > 0 and before < after * NEAR_ZERO) or (before > 0 and after < before * NEAR_ZERO):
        return None, text
    return (100 * (after - before) / before if before else None), text


def op_time(base: list[float], target: list[float]) -> tuple[float, float]:
    """The compared time of one operator from [host self, device self, device total, ...] per side."""
    on_device = base[2] > 0 or target[2] > 0
    return (base[1], target[1]) if on_device else (base[0], target[0])


def _accumulate(side: Side, items) -> dict:
    """key -> [names, calls, [host self, device self, device total, host total], shapes, stack], per step."""
    out: dict = {}
    get, steps = out.get, side.steps
    for key, name, calls, (t0, t1, t2, t3), shapes, stack in items:
        acc = get(key)
        if acc is None:
            out[key] = [{name}, calls / steps, [t0 / steps, t1 / steps, t2 / steps, t3 / steps], shapes, stack]
            continue
        acc[0].add(name)
        acc[1] += calls / steps
        sums = acc[2]
        sums[0] += t0 / steps
        sums[1] += t1 / steps
        sums[2] += t2 / steps
        sums[3] += t3 / steps
    return out


def _rows(base: dict, target: dict) -> list[Row]:
    rows = []
    empty = [set(), 0.0, [0.0] * 4, "", ""]
    for key in base.keys() | target.keys():
        was, now = base.get(key, empty), target.get(key, empty)
        before, after = op_time(was[2], now[2])
        shapes, stack = (now if key in target else was)[3:5]
        status = status_of(was[1], now[1], after - before)
        pct, text = percent_change(before, after, status)
        rows.append(Row(key[0], shapes, stack, sorted(was[0]), sorted(now[0]), was[1], now[1], before, after,
                        after - before, pct, text, status,
                        was[2][0], now[2][0], was[2][1], now[2][1], was[2][3], now[2][3], was[2][2], now[2][2]))
    rows.sort(key=lambda r: (-abs(r.delta_ns), r.key, r.input_shapes, r.call_stack))
    return rows


def _op_items(side: Side, mode: str, names: NameMap):
    operator, by_shape, by_stack = names.operator, mode == "shape", mode == "stack"
    for digest in side.digests:
        for op in getattr(digest, MODES[mode]):
            name = op.name
            if name.startswith(STEP_RANGE_PREFIX):
                continue
            shapes = op.input_shapes if by_shape else ""
            stack = strip_lines(op.call_stack) if by_stack else ""
            yield ((operator(name), shapes, stack), name, op.calls,
                   (op.host_self_ns, op.device_self_ns, op.device_total_ns, op.host_total_ns), shapes, stack)


def operator_rows(base: Side, target: Side, names: NameMap, mode: str = "name") -> list[Row]:
    if mode not in MODES:
        raise ValueError(f"operators are matched by one of {', '.join(MODES)}, not {mode!r}")
    return _rows(_accumulate(base, _op_items(base, mode, names)), _accumulate(target, _op_items(target, mode, names)))


def _kernel_items(side: Side, names: NameMap, by_family: bool):
    for digest in side.digests:
        for kernel in digest.kernels_by_name:
            key = names.family_of(kernel) if by_family else names.kernel(kernel.name)
            yield (key, "", ""), kernel.name, kernel.calls, (0, kernel.total_ns, kernel.total_ns, 0), "", ""


def kernel_rows(base: Side, target: Side, names: NameMap, by_family: bool = False) -> list[Row]:
    return _rows(_accumulate(base, _kernel_items(base, names, by_family)),
                 _accumulate(target, _kernel_items(target, names, by_family)))
