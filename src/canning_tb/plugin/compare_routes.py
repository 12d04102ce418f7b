"""GET /compare as `compare_impl(store, base, target, group_by)`: two windows of the logdir (any
run, worker, window, any formats), compared by `canning_tb.analysis.compare.verdict` from their digests
through the name map of the logdir (store/name_map.py). The plugin selects and serialises: every
figure comes from the analysis."""
from __future__ import annotations

from canning_tb.analysis.compare.ops import MODES
from canning_tb.store.name_map import load_name_map

from .errors import RouteError, short_path, unknown_window, window_digest

SIDE_PARAMS = {"base": ("base_run", "base_worker", "base_window"), "target": ("run", "worker", "window")}


def _side(store, run: str, worker: str, window: str) -> tuple[dict, object]:
    digest = window_digest(store, run, worker, window)
    try:
        win = store.window(run, worker, window)
    except KeyError:
        raise unknown_window(run, worker, window) from None
    return {"run": run, "worker": worker, "window": window, "label": win.label, "format": win.format,
            "rank": digest.window.rank}, digest


def compare_impl(store, base: tuple[str, str, str], target: tuple[str, str, str], group_by: str = "name") -> dict:
    _mode(group_by)
    base_info, base_digest = _side(store, *base)
    target_info, target_digest = _side(store, *target)
    return {"base_window": base_info, "target_window": target_info,
            **compared(store, base_digest, target_digest, group_by)}


def _mode(group_by: str) -> None:
    if group_by not in MODES:
        raise RouteError(400, f"group_by must be one of {', '.join(MODES)}, not {group_by!r}")


def compared(store, base, target, group_by: str = "name") -> dict:
    """The comparison of two sides (a digest or a list of digests each: analysis.compare) through the
    logdir's name map, and that map's file and problem. Also the MCP server's (canning_tb/mcp)."""
    from canning_tb.analysis.compare.verdict import compare  # numpy: on the first request, not at TensorBoard start

    _mode(group_by)
    names, path, problem = load_name_map(store.logdir)
    return {"name_map": {"file": short_path(store, path) if path else None, "problem": problem},
            **compare(base, target, names, group_by).as_dict()}


def compare_request(store, args) -> dict:
    """The request's parameters (docs/http_api.md "GET /compare") -> compare_impl."""
    sides = {}
    for side, names in SIDE_PARAMS.items():
        missing = [n for n in names if not args.get(n)]
        if missing:
            raise RouteError(400, f"missing parameter: {', '.join(missing)}")
        sides[side] = tuple(args[n] for n in names)
    return compare_impl(store, sides["base"], sides["target"], args.get("group_by") or "name")
