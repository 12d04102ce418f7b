"""--mode=compare: a baseline and a target (every window under each PATH, put per step so that
windows of different lengths compare) through analysis.compare, as text or JSON; with
--fail-on-regression=PCT the exit status is REGRESSION_EXIT when the mean step time grew by more
than PCT % of the baseline, and stderr names the operators that caused it."""
from __future__ import annotations

import os
import sys

from canning_tb.analysis.compare.verdict import compare as compare_digests
from canning_tb.analysis.compare.legacy import compare as legacy_compare
from canning_tb.analysis.compare.legacy import per_step
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


def _legacy(base: list, target: list) -> dict:
    """`summary` and `operators` as the first version wrote them (docs/cli-json.md)."""
    summary, rows = legacy_compare(per_step(base), per_step(target))
    return {"summary": summary, "operators": rows}


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
    base, target = _digests(args.base, args.cache_dir), _digests(args.input, args.cache_dir)
    comp = compare_digests(base, target, _names(args), top=args.top).as_dict()
    failed = regression(comp, args.fail_on_regression)
    if args.format == "json":
        dump_json({"schema": JSON_SCHEMA, "mode": "compare", "base": args.base, "input": args.input,
                   **_legacy(base, target),
                   "comparison": comp, "regression": failed})
    else:
        sys.stdout.write(text_report(comp, args.top))
    if failed:
        print(f"canning-prof: {failed}", file=sys.stderr)
        return REGRESSION_EXIT
    return 0
