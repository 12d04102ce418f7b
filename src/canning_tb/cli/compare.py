"""--mode=compare: two runs side by side, per step so windows of different lengths compare."""
from __future__ import annotations

import sys
from collections import defaultdict

from .output import JSON_SCHEMA, dump_json
from .targets import targets_for
from .view import digest_all


def _side(path: str, cache_dir: str | None) -> dict:
    digests = [d for _, d, _ in digest_all(targets_for(path, cache_dir)) if d is not None]
    if not digests:
        raise FileNotFoundError(f"{path}: no readable windows")
    steps = sum(max(len(d.steps), 1) for d in digests)
    step_ns = sum(s.dur_ns for d in digests for s in d.steps)
    ops: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for d in digests:
        for op in d.ops_by_name:
            row = ops[op.name]
            row[0] += op.calls
            row[1] += op.host_total_ns
            row[2] += op.device_total_ns
    return {"path": path, "windows": len(digests), "steps": steps, "step_ns": step_ns / steps,
            "ops": {k: [v[0] / steps, v[1] / steps, v[2] / steps] for k, v in ops.items()}}


def compare(args) -> int:
    base, exp = _side(args.base, args.cache_dir), _side(args.input, args.cache_dir)
    names = sorted(set(base["ops"]) | set(exp["ops"]),
                   key=lambda n: -abs(exp["ops"].get(n, [0, 0, 0])[1] - base["ops"].get(n, [0, 0, 0])[1]))
    rows = []
    for n in names:
        b, e = base["ops"].get(n, [0, 0, 0]), exp["ops"].get(n, [0, 0, 0])
        rows.append({"name": n, "base_calls_per_step": b[0], "exp_calls_per_step": e[0],
                     "base_host_ms_per_step": b[1] / 1e6, "exp_host_ms_per_step": e[1] / 1e6,
                     "delta_host_ms_per_step": (e[1] - b[1]) / 1e6,
                     "base_device_ms_per_step": b[2] / 1e6, "exp_device_ms_per_step": e[2] / 1e6})
    summary = {"base_step_ms": base["step_ns"] / 1e6, "exp_step_ms": exp["step_ns"] / 1e6,
               "base_windows": base["windows"], "exp_windows": exp["windows"]}
    if args.format == "json":
        dump_json({"schema": JSON_SCHEMA, "mode": "compare", "base": args.base, "input": args.input,
                   "summary": summary, "operators": rows})
        return 0
    out = sys.stdout
    delta = summary["exp_step_ms"] - summary["base_step_ms"]
    pct = 100 * delta / summary["base_step_ms"] if summary["base_step_ms"] else float("nan")
    out.write(f"Step time (mean): base {summary['base_step_ms']:.3f} ms -> {summary['exp_step_ms']:.3f} ms "
              f"({delta:+.3f} ms, {pct:+.1f}%)\n\n")
    out.write(f"{'Operator':<48} {'Calls/step':>21} {'Host ms/step':>23} {'Delta ms':>10}\n")
    for r in rows[: args.top]:
        out.write(f"{r['name'][:48]:<48} {r['base_calls_per_step']:>9.1f} -> {r['exp_calls_per_step']:<9.1f}"
                  f" {r['base_host_ms_per_step']:>10.3f} -> {r['exp_host_ms_per_step']:<10.3f}"
                  f" {r['delta_host_ms_per_step']:>+10.3f}\n")
    return 0
