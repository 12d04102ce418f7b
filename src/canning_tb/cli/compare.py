"""--mode=compare: two runs side by side, per step so windows of different lengths compare."""
from __future__ import annotations

import sys

from canning_tb.analysis.compare import compare as compare_sides
from canning_tb.analysis.compare import per_step

from .output import JSON_SCHEMA, dump_json
from .targets import targets_for
from .view import digest_all


def _side(path: str, cache_dir: str | None) -> dict:
    digests = [d for _, d, _ in digest_all(targets_for(path, cache_dir)) if d is not None]
    if not digests:
        raise FileNotFoundError(f"{path}: no readable windows")
    return per_step(digests)


def compare(args) -> int:
    summary, rows = compare_sides(_side(args.base, args.cache_dir), _side(args.input, args.cache_dir))
    if args.format == "json":
        dump_json({"schema": JSON_SCHEMA, "mode": "compare", "base": args.base, "input": args.input,
                   "summary": summary, "operators": rows})
        return 0
    out = sys.stdout
    pct = "n/a" if summary["delta_step_pct"] is None else f"{summary['delta_step_pct']:+.1f}%"
    out.write(f"Step time (mean): base {summary['base_step_ms']:.3f} ms -> {summary['exp_step_ms']:.3f} ms "
              f"({summary['delta_step_ms']:+.3f} ms, {pct})\n\n")
    out.write(f"{'Operator':<48} {'Calls/step':>21} {'Host ms/step':>23} {'Delta ms':>10}\n")
    for r in rows[: args.top]:
        out.write(f"{r['name'][:48]:<48} {r['base_calls_per_step']:>9.1f} -> {r['exp_calls_per_step']:<9.1f}"
                  f" {r['base_host_ms_per_step']:>10.3f} -> {r['exp_host_ms_per_step']:<10.3f}"
                  f" {r['delta_host_ms_per_step']:>+10.3f}\n")
    return 0
