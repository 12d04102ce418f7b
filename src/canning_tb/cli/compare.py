"""--mode=compare: a baseline and a target (every window under each PATH, put per step so that
windows of different lengths compare) through analysis.compare, as text or JSON; with
--fail-on-regression=PCT the exit status is REGRESSION_EXIT when the mean step time grew by more
than PCT % of the baseline, and stderr names the operators that caused it."""
from __future__ import annotations

import os
import sys

from canning_tb.analysis.compare import compare as compare_digests
from canning_tb.store.name_map import load_name_map

from .compare_text import text_report
from .output import JSON_SCHEMA, dump_json
from .targets import targets_for
from .view import digest_all

REGRESSION_EXIT = 3


def _digests(path: str, cache_dir: str | None) -> list:
    digests = [d for _, d, _ in digest_all(targets_for(path, cache_dir)) if d is not None]
    if not digests:
        raise FileNotFoundError(f"{path}: no readable windows")
    return digests


def _names(args):
    """The name map: --names, else canning_names.json in the --input folder (or its parent)."""
    folder = args.input if os.path.isdir(args.input) else os.path.dirname(os.path.abspath(args.input))
    names, path, problem = load_name_map(folder, args.names)
    if problem:
        print(f"canning-prof: name map not used: {path}: {problem}", file=sys.stderr)
    return names


def legacy_summary(comp: dict) -> dict:
    """The fields `summary` had before the full comparison (docs/cli-json.md: only ever added)."""
    base, target = comp["base"]["step_ns"], comp["target"]["step_ns"]
    return {"base_step_ms": base / 1e6, "exp_step_ms": target / 1e6, "delta_step_ms": (target - base) / 1e6,
            "delta_step_pct": 100 * (target - base) / base if base else None,
            "base_windows": comp["base"]["windows"], "exp_windows": comp["target"]["windows"]}


def legacy_operator(row: dict) -> dict:
    return {"name": row["key"], "base_calls_per_step": row["base_calls"], "exp_calls_per_step": row["target_calls"],
            "base_host_ms_per_step": row["base_host_total_ns"] / 1e6,
            "exp_host_ms_per_step": row["target_host_total_ns"] / 1e6,
            "delta_host_ms_per_step": (row["target_host_total_ns"] - row["base_host_total_ns"]) / 1e6,
            "base_device_ms_per_step": row["base_device_total_ns"] / 1e6,
            "exp_device_ms_per_step": row["target_device_total_ns"] / 1e6}


def regression(comp: dict, limit_pct: float | None) -> str | None:
    """The message of a step-time regression above `limit_pct`, None when there is none."""
    pct = comp["verdict"]["step_time"]["delta_pct"]
    if limit_pct is None or pct is None or pct <= limit_pct:
        return None
    causes = [f"{o['name']} {o['delta_ns'] / 1e6:+.3f} ms" for o in comp["contributors"]["operators"] if o["delta_ns"] > 0]
    return (f"step time regressed by {pct:.1f} % (more than {limit_pct:g} %): "
            f"{comp['base']['step_ns'] / 1e6:.3f} -> {comp['target']['step_ns'] / 1e6:.3f} ms per step; "
            f"caused by: {', '.join(causes[:5]) or 'no operator (see the breakdown)'}")


def compare(args) -> int:
    comp = compare_digests(_digests(args.base, args.cache_dir), _digests(args.input, args.cache_dir), _names(args),
                        top=args.top).as_dict()
    failed = regression(comp, args.fail_on_regression)
    if args.format == "json":
        dump_json({"schema": JSON_SCHEMA, "mode": "compare", "base": args.base, "input": args.input,
                   "summary": legacy_summary(comp), "operators": [legacy_operator(r) for r in comp["operators"]],
                   "comparison": comp, "regression": failed})
    else:
        sys.stdout.write(text_report(comp, args.top))
    if failed:
        print(f"canning-prof: {failed}", file=sys.stderr)
        return REGRESSION_EXIT
    return 0
