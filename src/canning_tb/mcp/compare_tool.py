"""compare: a target against a baseline, each one window (the plugin's /compare comparison,
queries/compare.compared_windows) or every window of a run (the same comparison over many digests, as
`canning-prof --mode=compare` compares run folders: queries/compare.compared), one section at a time.

The comparison of the last few questions is kept (with the identity of their windows' digests), so that
paging through its operators compares once. Without a baseline, the default one of queries/pairing.py
(as the CLI and the Compare view): `pairing` says which and why."""
from __future__ import annotations

import threading
from collections import OrderedDict

from canning_tb.queries.compare import compared, compared_windows
from canning_tb.queries.errors import BadParameter, NotFound, QueryError, Unreadable, unknown_window, window_digest
from canning_tb.queries.pairing import Pairing, default_pairing

from .bounds import UNITS, first, offset_of, paged

TABLES = ("breakdown", "operators", "kernels", "kernel_families", "communication", "communication_by_kind", "memory")
SECTIONS = ("summary", *TABLES)
CURVE_POINTS = 100  # per side of a device's step-aligned memory curve
PROBLEMS_SHOWN = 20
KEPT = 4
_kept: OrderedDict = OrderedDict()
_kept_lock = threading.Lock()


def _side(store, run: str, worker: str | None, window: str | None) -> list[tuple[str, str, str]]:
    """The windows of one side: the one named, or every window of the run (workers by rank)."""
    if run not in store.runs():
        raise NotFound(f"unknown run: {run!r} (list_runs names them)")
    if worker and window:
        try:
            store.window(run, worker, window)
        except KeyError:
            raise unknown_window(run, worker, window) from None
        return [(run, worker, window)]
    if worker or window:
        raise BadParameter("name a window with both worker and window, or neither (every window of the run)")
    every = [(run, w.name, win.id) for w in store.workers(run) for win in store.windows(run, w.name)]
    if not every:
        raise NotFound(f"run {run!r} holds no window")
    return every


def _comparison(host, base: list, target: list, group_by: str, threshold: float | None = None, gate_on: str = "code"):
    """`compared_windows` of two windows, or `compared` over every readable window of each side."""
    store = host.store()
    identity = tuple((key, store.digest_key(key[0], store.window(*key))) for key in base + target)
    memo = (id(store), tuple(base), tuple(target), group_by, threshold, gate_on)
    with _kept_lock:
        kept = _kept.get(memo)
        if kept and kept[0] == identity:
            return kept[1]
    if len(base) == 1 and len(target) == 1:
        body = compared_windows(store, base[0], target[0], group_by, threshold, gate_on)
    else:
        (base_digests, base_problems), (target_digests, target_problems) = _digests(store, base), _digests(store, target)
        body = {"base_windows": len(base_digests), "target_windows": len(target_digests),
                **first(base_problems + target_problems, PROBLEMS_SHOWN, "problems"), **compared(store, base_digests, target_digests, group_by, threshold, gate_on)}
    with _kept_lock:
        _kept[memo] = (identity, body)
        while len(_kept) > KEPT:
            _kept.popitem(last=False)
    return body


def _memory(pair: dict) -> dict:
    """A device's memory pair with each side's step-aligned curve thinned (analysis/memory.downsample)."""
    import numpy as np

    from canning_tb.analysis.memory import downsample
    out = dict(pair)
    for side in ("base", "target"):
        values = pair[f"{side}_bytes"]
        keep = downsample(np.array(values, np.int64), CURVE_POINTS - 1).tolist() if values else []
        out[f"{side}_x"] = [pair[f"{side}_x"][i] for i in keep]
        out[f"{side}_bytes"] = [values[i] for i in keep]
        out[f"{side}_points_total"] = len(values)
    return out


def _digests(store, side: list) -> tuple[list, list]:
    """(digests, problems) of the readable windows of a side; a side none of which is readable: 422."""
    digests, problems = [], []
    for key in side:
        try:
            digests.append(window_digest(store, *key))
        except QueryError as e:
            problems.append({"run": key[0], "worker": key[1], "window": key[2], "message": e.body["error"]})
    if not digests:
        raise Unreadable(f"no readable window in run {side[0][0]!r}", problems=problems)
    return digests, problems


def _pairing(store, run: str, base_run, worker, window, base_worker, base_window) -> Pairing:
    """The baseline named, or the default one (queries/pairing.py) when base_run is omitted."""
    if base_run:
        return Pairing(_side(store, base_run, base_worker, base_window), _side(store, run, worker, window), "named",
                       "the baseline named")
    if base_worker or base_window:
        raise BadParameter("base_worker / base_window need base_run (omit all three for the default baseline)")
    _side(store, run, worker, window)  # the target's ids checked as a named one's are
    return default_pairing(store, run, worker, window)


def compare(host, run: str, base_run: str | None = None, worker: str | None = None, window: str | None = None,
            base_worker: str | None = None, base_window: str | None = None, group_by: str = "name",
            section: str = "summary", cursor: str | None = None, limit: int = 25,
            fail_on_regression_pct: float | None = None, gate_on: str = "code") -> dict:
    store = host.store()
    pairing = _pairing(store, run, base_run, worker, window, base_worker, base_window)
    base, target = pairing.base, pairing.target
    pending = host.pending_many(run, base + target)
    if pending:
        return pending
    body = _comparison(host, base, target, group_by, fail_on_regression_pct, gate_on)
    heads = ("base_window", "target_window") if "base_window" in body else ("base_windows", "target_windows",
                                                                             "problems", "problems_total")
    where = {"run": run, "worker": worker, "window": window, "base_run": base_run, "base_worker": base_worker,
             "base_window": base_window, "group_by": group_by, "section": section}
    answer = {**where, **{k: body[k] for k in heads}, "metric": body["metric"], "units": UNITS,
              "pairing": {"rule": pairing.rule, "text": pairing.text, "default": pairing.rule != "named"}}
    if section == "summary":
        return {**answer, **{k: body[k] for k in ("name_map", "mode", "base", "target", "verdict", "breakdown",
                                                  "contributors", "attribution", "gate")},
                **{f"{k}_total": len(body[k]) for k in TABLES}}
    question = {"tool": "compare", **where}
    offset = offset_of(cursor, question)
    rows = body[section][offset:offset + limit]
    if section == "memory":
        rows = [_memory(pair) for pair in rows]
    return paged({**answer, "total": len(body[section]), "offset": offset, section: rows}, section, question,
                 offset, len(body[section]))
