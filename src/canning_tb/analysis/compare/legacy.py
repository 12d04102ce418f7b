"""The first version of the comparison, kept for the fields of `canning-prof --mode=compare
--format=json` it made (`summary`, `operators`: docs/cli-json.md says fields are only ever added);
analysis/compare/verdict.py is the comparison. Two sets of windows (a baseline and a candidate) side by
side, per step, so that windows of different lengths compare; operators by their recorded names.

`per_step(digests)`: steps = the sum over windows of max(steps, 1) (a window without
ProfilerStep# ranges counts as one step); step_ns = the summed step durations over those steps;
per operator name its calls, host total and device total time over those steps.
`compare(base, candidate)`: the summary of both and one row per operator, the operators whose
host time per step changed most first; the step time's change in ms and in % of the baseline
(None when the baseline has no step time).
"""
from __future__ import annotations

from collections import defaultdict


def per_step(digests: list) -> dict:
    steps = sum(max(len(d.steps), 1) for d in digests)
    step_ns = sum(s.dur_ns for d in digests for s in d.steps)
    ops: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for digest in digests:
        for op in digest.ops_by_name:
            row = ops[op.name]
            row[0] += op.calls
            row[1] += op.host_total_ns
            row[2] += op.device_total_ns
    return {"windows": len(digests), "steps": steps, "step_ns": step_ns / steps,
            "ops": {name: [v[0] / steps, v[1] / steps, v[2] / steps] for name, v in ops.items()}}


def compare(base: dict, exp: dict) -> tuple[dict, list[dict]]:
    """(summary, operator rows) of two `per_step` sides; times in ms per step."""
    zero = [0, 0, 0]
    names = sorted(set(base["ops"]) | set(exp["ops"]),
                   key=lambda n: -abs(exp["ops"].get(n, zero)[1] - base["ops"].get(n, zero)[1]))
    rows = []
    for name in names:
        was, now = base["ops"].get(name, zero), exp["ops"].get(name, zero)
        rows.append({"name": name, "base_calls_per_step": was[0], "exp_calls_per_step": now[0],
                     "base_host_ms_per_step": was[1] / 1e6, "exp_host_ms_per_step": now[1] / 1e6,
                     "delta_host_ms_per_step": (now[1] - was[1]) / 1e6,
                     "base_device_ms_per_step": was[2] / 1e6, "exp_device_ms_per_step": now[2] / 1e6})
    delta_ns = exp["step_ns"] - base["step_ns"]
    summary = {"base_step_ms": base["step_ns"] / 1e6, "exp_step_ms": exp["step_ns"] / 1e6,
               "delta_step_ms": delta_ns / 1e6,
               "delta_step_pct": 100 * delta_ns / base["step_ns"] if base["step_ns"] else None,
               "base_windows": base["windows"], "exp_windows": exp["windows"]}
    return summary, rows
