"""communication / cross_rank: this window's communication (the plugin's /communication answer) and the
analysis across the ranks' windows at one position (its /cluster answer, queries/ranks.cluster_impl), one
section at a time, tables paged. Every figure is the route's, unchanged."""
from __future__ import annotations

from canning_tb.queries.errors import BadParameter
from canning_tb.queries.ranks import cluster_impl, position_of
from canning_tb.queries.sections import communication_impl

from .bounds import UNITS, first, offset_of, paged
from .host import digesting_windows
from .terms import COMMUNICATION, RANKS, glossary

COMM_TABLES = ("collectives", "calls", "links", "groups")  # lists of the digest's communication section
COMM_SECTIONS = ("summary", "steps", *COMM_TABLES, "ranks", "matrix")
RANK_SECTIONS = ("summary", "ranks", "rank_figures", "stages", "collectives", "groups", "distributions", "findings",
                 "matrix")
SHOWN = 20  # rows of a table a summary shows (the table's own section pages all of them)
PER_RANK_SHOWN = 32  # a cross-rank collective row lists each rank's own figures up to this many ranks
STAGE_FIELDS = ("rank", "step_ns", "computing_ns", "p2p_wait_ns", "bubble_ns", "free_ns")


def _rows(answer: dict, rows: list, key: str, question: dict, offset: int, limit: int) -> dict:
    return paged({**answer, "total": len(rows), "offset": offset, key: rows[offset:offset + limit]},
                 key, question, offset, len(rows))


def communication(host, run: str, worker: str, window: str, section: str = "summary", cursor: str | None = None,
                  limit: int = 50) -> dict:
    """summary | steps (this rank per step) | collectives | calls | links | groups (the digest's), or
    ranks | matrix (the ranks' communication and the matrix across the run: cross_rank's answer)."""
    if section in ("ranks", "matrix"):
        store = host.store()
        return cross_rank(host, run, position_of(store, run, worker, window), "rank_figures" if section == "ranks"
                          else "matrix", cursor, limit)
    pending = host.pending(run, worker, window)
    if pending:
        return pending
    body = communication_impl(host.store(), run, worker, window)
    comm, figures = body["communication"], body["figures"]
    where = {"run": run, "worker": worker, "window": window, "section": section}
    question = {"tool": "communication", **where}
    offset = offset_of(cursor, question)
    if section == "summary":
        totals = {k: v for k, v in comm.items() if k not in COMM_TABLES}
        return {**where, "communication": {k: v for k, v in figures.items() if k != "steps"}, "totals": totals,
                **first(comm["collectives"], SHOWN, "collectives"),
                **{f"{k}_total": len(comm[k]) for k in ("calls", "links", "groups")},
                "steps_total": len(figures["steps"]), "glossary": glossary(COMMUNICATION), "units": UNITS}
    rows = figures["steps"] if section == "steps" else comm[section]
    return _rows({**where, "units": UNITS}, rows, section, question, offset, limit)


def _cluster(host, run: str, position: int) -> dict:
    store = host.store()
    return cluster_impl(store, host.prefetcher, run, position)


def _collective(row: dict) -> dict:
    """A cross-rank collective row; past PER_RANK_SHOWN ranks its per-rank figures are left to rank_figures."""
    if len(row.get("per_rank", {})) <= PER_RANK_SHOWN:
        return row
    return {**{k: v for k, v in row.items() if k != "per_rank"}, "per_rank": None,
            "per_rank_total": len(row["per_rank"])}


def _summary(body: dict) -> dict:
    outliers = [{"metric": d["metric"], "median": d["median"], "outliers": d["outliers"][:5],
                 "outliers_total": d["outliers_total"]} for d in body["distributions"]]
    return {"workers_total": len(body["workers"]), **first(body["problems"], SHOWN, "problems"),
            "run_summary": body["run_summary"], "slow_ranks": body["slow_ranks"], "outliers": outliers,
            **{k: body[k] for k in ("compute_source", "breakdown_source", "matrix_source", "matrix_truncated")},
            "findings": [{k: f[k] for k in ("rule", "severity", "title", "gain_ns", "observation")} for f in body["findings"][:5]],
            "findings_total": len(body["findings"]), "ranks_total": len(body["per_rank"]),
            "glossary": glossary(RANKS)}


def cross_rank(host, run: str, window_index: int | None = None, section: str = "summary", cursor: str | None = None,
               limit: int = 50, worker: str | None = None, window: str | None = None) -> dict:
    """summary | ranks (each rank's headline row) | rank_figures (each rank's time and communication per mean
    step) | stages (computing and pipeline wait per rank) | collectives | groups | distributions | findings |
    matrix (the communication matrix, per source and destination rank). The windows: `window_index` in every
    worker of the run, or the position of the window `worker` / `window`."""
    if window_index is None:
        if not (worker and window):
            raise BadParameter("give window_index, or worker and window (list_windows names them)")
        window_index = position_of(host.store(), run, worker, window)
    body = _cluster(host, run, window_index)
    if body.get("loading"):
        return digesting_windows(run, window_index, body["done"], body["total"])
    where = {"run": run, "window_index": window_index, "section": section}
    question = {"tool": "cross_rank", **where}
    offset = offset_of(cursor, question)
    answer = {**where, "units": UNITS}
    if section == "summary":
        return {**answer, **_summary(body)}
    if section == "distributions":
        return {**answer, "distributions": body["distributions"]}
    if section == "matrix":
        answer.update({k: body[k] for k in ("matrix_source", "matrix_truncated")})
        return _rows(answer, body["matrix_cells"], "matrix_cells", question, offset, limit)
    if section == "stages":
        stages = [f for f in body["findings"] if f["rule"] == "stage_imbalance"]
        rows = [{k: r[k] for k in STAGE_FIELDS if k in r} for r in body["ranks"]]
        return _rows({**answer, "findings": stages}, rows, "ranks", question, offset, limit)
    rows = {"ranks": body["per_rank"], "rank_figures": body["ranks"], "groups": body["groups"],
            "findings": body["findings"], "collectives": [_collective(c) for c in body["collectives"]]}[section]
    return _rows(answer, rows, section, question, offset, limit)
