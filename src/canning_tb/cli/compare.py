"""compare: a baseline and a target (every window under each PATH, put per step so that windows of
different lengths compare) through analysis.compare, as text, JSON, Markdown (a pull request's comment) or
JUnit XML (a CI's test report).

Without --base, --input names a run folder of a logdir (or a logdir: its last run) and the baseline is the
default one of queries/pairing.py, the same as the Compare view's and the MCP tool's, said in the report.

The gate (--fail-on-regression=PCT, "5" or "5%"): analysis/compare/gate.py on the code's part of the
step-time change (--gate-on=code, the default) or on the whole change (--gate-on=total). Exit status
(docs/compare.md): 0 pass (or no gate asked), REGRESSION_EXIT (3, as since the first version) a regression
above PCT and significant, CANNOT_JUDGE_EXIT (2, as for bad input) when the gate cannot judge (too few
steps); stderr says why and names the operators the code's part comes from."""
from __future__ import annotations

import os
import sys
from functools import partial

from canning_tb.analysis.compare.gate import CANNOT_JUDGE, REGRESSION
from canning_tb.analysis.compare.verdict import compare as compare_digests
from canning_tb.analysis.compare.legacy import compare as legacy_compare
from canning_tb.analysis.compare.legacy import per_step
from canning_tb.store.name_map import load_name_map

from .compare_formats import junit_report, markdown_report
from .compare_text import text_report
from .output import JSON_SCHEMA, dump_json
from .targets import targets_for
from .view import digest_all

REGRESSION_EXIT = 3
CANNOT_JUDGE_EXIT = 2


def _digests(path: str, cache_dir: str | None, chip: str | None = None, follow_links: bool = False) -> list:
    digests = [d for _, d, _ in digest_all(targets_for(path, cache_dir, chip, follow_links)) if d is not None]
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


def _store_digests(store, keys: list) -> list:
    from canning_tb.queries.errors import QueryError, window_digest
    out = []
    for key in keys:
        try:
            out.append(window_digest(store, *key))
        except QueryError as e:
            print(f"canning-prof: {'/'.join(key)} left out: {e.body['error']}", file=sys.stderr)
    if not out:
        raise FileNotFoundError(f"{keys[0][0]}: no readable windows")
    return out


def _default_sides(args) -> tuple[list, list, dict]:
    """(base digests, target digests, pairing) of --input without --base (module doc)."""
    from canning_tb.queries.errors import QueryError
    from canning_tb.queries.pairing import default_pairing
    from canning_tb.store import Store
    from canning_tb.util.remote_fs import is_url
    path = args.input
    if not is_url(path) and not os.path.isdir(path):
        raise FileNotFoundError(f"{path}: without --base, --input names a run folder or a logdir")
    store_of = partial(Store, cache_dir=args.cache_dir, chip=getattr(args, "chip", None),
                       follow_links=args.follow_links)
    store = store_of(path)
    runs = store.runs()
    if runs == ["."] and not is_url(path):  # a run folder: its logdir is the folder above
        folder = os.path.abspath(path).rstrip(os.sep)
        store = store_of(os.path.dirname(folder))
        run = next((r for r in store.runs() if os.path.join(os.path.dirname(folder), r) == folder), None)
    else:
        run = runs[-1] if runs else None
    if run is None:
        raise FileNotFoundError(f"{path}: no profiles found")
    try:
        pairing = default_pairing(store, run)
    except QueryError as e:
        raise FileNotFoundError(f"{path}: {e.body['error']}") from None
    info = {"rule": pairing.rule, "text": pairing.text, "default": True,
            "base": [list(k) for k in pairing.base], "target": [list(k) for k in pairing.target]}
    return _store_digests(store, pairing.base), _store_digests(store, pairing.target), info


def _causes(comp: dict, gate_on: str) -> list[str]:
    """What the gate blames, largest first: the code's operators (their cost beyond the machine's factor) and
    the categories no operator records (the dataloader of recent torch); for --gate-on=total every operator's
    change."""
    if gate_on == "code":
        found = [(i["excess_ns"], f"{i['name']} {i['excess_ns'] / 1e6:+.3f} ms ({i['why']})")
                 for i in comp["attribution"]["code_items"]]
    else:
        found = [(o["delta_ns"], f"{o['name']} {o['delta_ns'] / 1e6:+.3f} ms")
                 for o in comp["contributors"]["operators"] if o["kind"] == "operator"]
    found += [(o["delta_ns"], f"{o['name']} {o['delta_ns'] / 1e6:+.3f} ms") for o in comp["contributors"]["operators"]
              if o["kind"] == "category"]
    return [text for delta, text in sorted(found, key=lambda f: -f[0]) if delta > 0]


def regression(comp: dict) -> str | None:
    """The message of a regression the gate found, None when there is none."""
    gate = comp.get("gate")
    if not gate or gate["status"] != REGRESSION:
        return None
    step = comp["verdict"]["step_time"]
    causes = _causes(comp, gate["gate_on"])
    return (f"step time regressed by {step['delta_pct']:.1f} % ({comp['base']['step_ns'] / 1e6:.3f} -> "
            f"{comp['target']['step_ns'] / 1e6:.3f} ms per step); {gate['text']}; "
            f"caused by: {', '.join(causes[:5]) or 'no operator (see the breakdown)'}")


def compare(args) -> int:
    if args.base:
        chip = getattr(args, "chip", None)
        base, target = (_digests(args.base, args.cache_dir, chip, args.follow_links),
                        _digests(args.input, args.cache_dir, chip, args.follow_links))
        pairing = {"rule": "named", "text": f"{args.input} against {args.base}: every window of each, per step",
                   "default": False}
    else:
        base, target, pairing = _default_sides(args)
    comp = compare_digests(base, target, _names(args), top=args.top, threshold_pct=args.fail_on_regression,
                           gate_on=args.gate_on).as_dict()
    failed = regression(comp)
    if args.format == "json":
        dump_json({"schema": JSON_SCHEMA, "mode": "compare", "base": args.base, "input": args.input,
                   **_legacy(base, target), "pairing": pairing,
                   "comparison": comp, "regression": failed})
    elif args.format == "markdown":
        sys.stdout.write(markdown_report(comp, pairing, args.top))
    elif args.format == "junit":
        sys.stdout.write(junit_report(comp, pairing))
    else:
        sys.stdout.write(text_report(comp, args.top, pairing))
    if failed:
        print(f"canning-prof: {failed}", file=sys.stderr)
        return REGRESSION_EXIT
    if comp["gate"] and comp["gate"]["status"] == CANNOT_JUDGE:
        print(f"canning-prof: {comp['gate']['text']}", file=sys.stderr)
        return CANNOT_JUDGE_EXIT
    return 0
