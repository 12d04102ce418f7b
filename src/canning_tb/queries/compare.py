"""GET /compare: two windows of the logdir (any run, worker, window, any formats), compared by
`canning_tb.analysis.compare.verdict` from their digests through the name map of the logdir
(store/name_map.py). The plugin selects, pages and serialises: every figure comes from the analysis.

Bounded like /operators whatever the windows hold: one table (operators, kernels or kernel families)
is answered a page at a time, searched and sorted here (analysis/table_page.py); the rest of the
answer (verdict, breakdown, contributors, the bounded tree, memory, communication) is the same for
every page. The last few comparisons are kept (by the windows' digest identities, the name map's
file identity and the matching mode), so paging through 200,000 rows compares once.

A request without a baseline (base_run, base_worker and base_window all empty) is compared with the
default baseline of queries/pairing.py (the one pairing of every front door); the answer's `pairing`
says which rule chose it and says it in words (`default`: false when the request named the baseline).
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import asdict

from canning_tb.analysis.compare.ops import MODES
from canning_tb.store.name_map import load_name_map, name_map_file

from .errors import BadParameter, short_path, unknown_window, window_digest
from .pairing import window_pairing

SIDE_PARAMS = {"base": ("base_run", "base_worker", "base_window"), "target": ("run", "worker", "window")}
TABLES = {"operators": "operators", "kernels": "kernels", "families": "kernel_families"}
# sort names of the table (the view's columns) -> Row attributes
SORTS = {"key": "key", "input_shapes": "input_shapes", "call_stack": "call_stack", "status": "status",
         "base_calls": "base_calls", "target_calls": "target_calls", "base_ns": "base_ns", "target_ns": "target_ns",
         "delta_ns": "delta_ns", "abs_delta": "abs_delta", "delta_pct": "pct_order"}
SEARCHED = ("key", "input_shapes", "call_stack", "names")
KEPT = 4

_kept: OrderedDict = OrderedDict()  # identity -> (answer head, {table: rows})
_lock = threading.Lock()


def _side(store, run: str, worker: str, window: str) -> tuple[dict, object, str]:
    digest = window_digest(store, run, worker, window)
    try:
        win = store.window(run, worker, window)
        key = store.digest_key(run, win)
    except KeyError:
        raise unknown_window(run, worker, window) from None
    return {"run": run, "worker": worker, "window": window, "label": win.label, "format": win.format,
            "rank": digest.window.rank}, digest, key


def _map_identity(folder: str | None) -> tuple:
    path = name_map_file(folder)
    try:
        st = os.stat(path) if path else None
    except OSError:
        return (path,)
    return (path, st.st_size, st.st_mtime_ns, st.st_ino) if st else (None,)


def _compared(store, base: tuple, target: tuple, group_by: str) -> tuple[dict, dict]:
    """(the answer without its table, {table: rows}), computed once per identity."""
    from canning_tb.analysis.compare.verdict import compare  # numpy: on the first request, not at TensorBoard start
    base_info, base_digest, base_key = _side(store, *base)
    target_info, target_digest, target_key = _side(store, *target)
    identity = (id(store), base_key, target_key, _map_identity(store.logdir), group_by)
    with _lock:
        if identity in _kept:
            _kept.move_to_end(identity)
            return _kept[identity]
    names, path, problem = load_name_map(store.logdir)
    comparison = compare(base_digest, target_digest, names, group_by)
    tables = {name: getattr(comparison, field) for name, field in TABLES.items()}
    for field in TABLES.values():
        setattr(comparison, field, [])
    head = {"base_window": base_info, "target_window": target_info,
            "name_map": {"file": short_path(store, path) if path else None, "problem": problem},
            **asdict(comparison), "tables": {name: len(rows) for name, rows in tables.items()}}
    for field in TABLES.values():
        head.pop(field)
    with _lock:
        _kept[identity] = (head, tables)
        while len(_kept) > KEPT:
            _kept.popitem(last=False)
    return head, tables


def compare_impl(store, base: tuple[str, str, str], target: tuple[str, str, str], group_by: str = "name",
                 table: str = "operators", paging: dict | None = None) -> dict:
    from canning_tb.analysis.table_page import MAX_LIMIT, PageError, page
    if group_by not in MODES:
        raise BadParameter(f"group_by must be one of {', '.join(MODES)}, not {group_by!r}")
    if table not in TABLES:
        raise BadParameter(f"table must be one of {', '.join(TABLES)}, not {table!r}")
    paging = dict(paging or {})
    sort = paging.pop("sort", "abs_delta")
    if sort not in SORTS:
        raise BadParameter(f"sort must be one of {', '.join(SORTS)}, not {sort!r}")
    pairing = _pairing(store, base, target)
    head, tables = _compared(store, pairing.base[0], target, group_by)
    head = {**head, "pairing": {"rule": pairing.rule, "text": pairing.text, "default": pairing.rule != "named"}}
    rows = tables[table]
    try:
        found = page(rows, tuple(SORTS.values()), SEARCHED, sort=SORTS[sort], limit=paging.pop("limit", MAX_LIMIT),
                     **paging)
    except PageError as e:
        raise BadParameter(str(e)) from None
    return {**head, "table": table, "all_rows": len(rows), **found.head(), "sort": sort,
            "rows": [asdict(r) for r in found.rows]}


def _pairing(store, base: tuple[str, str, str], target: tuple[str, str, str]):
    """The named baseline, or the default one (queries/pairing.py) when none of its three ids is given."""
    from .pairing import Pairing
    if not any(base):
        return window_pairing(store, *target)
    if not all(base):
        raise BadParameter("name the baseline with base_run, base_worker and base_window, or none of them "
                           "(the default baseline)")
    return Pairing([base], [target], "named", "the baseline named")


def compared(store, base, target, group_by: str = "name", threshold_pct: float | None = None,
             gate_on: str = "code") -> dict:
    """The whole comparison of two sides (a digest or a list of digests each: analysis.compare), every
    table unpaged, through the logdir's name map, and that map's file and problem: the MCP server's
    (canning_tb/mcp), which pages each section itself."""
    from canning_tb.analysis.compare.verdict import compare  # numpy: on the first request, not at TensorBoard start
    if group_by not in MODES:
        raise BadParameter(f"group_by must be one of {', '.join(MODES)}, not {group_by!r}")
    from canning_tb.analysis.compare.gate import GATE_ON
    if gate_on not in GATE_ON:
        raise BadParameter(f"gate_on must be one of {', '.join(GATE_ON)}, not {gate_on!r}")
    names, path, problem = load_name_map(store.logdir)
    return {"name_map": {"file": short_path(store, path) if path else None, "problem": problem},
            **compare(base, target, names, group_by, threshold_pct=threshold_pct, gate_on=gate_on).as_dict()}


def compared_windows(store, base: tuple[str, str, str], target: tuple[str, str, str], group_by: str = "name",
                     threshold_pct: float | None = None, gate_on: str = "code") -> dict:
    """`compared` of two windows, with the windows the answer is about (the route's base_window / target_window)."""
    base_info, base_digest, _ = _side(store, *base)
    target_info, target_digest, _ = _side(store, *target)
    return {"base_window": base_info, "target_window": target_info,
            **compared(store, base_digest, target_digest, group_by, threshold_pct, gate_on)}
