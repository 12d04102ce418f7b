"""overview / operators / kernels / findings of one window: the plugin's /overview, /operators, /kernels
and /suggestions answers (queries/sections.py), bounded. Every figure is the route's, unchanged."""
from __future__ import annotations

from canning_tb.queries import sections

from .bounds import UNITS, offset_of, paged
from .terms import BREAKDOWN, DEVICES, FIGURES, KERNELS, OPERATORS, glossary

STEPS_SHOWN = 50  # steps in the overview (a window holds a few; a long one is cut, said in steps_total)
PROBLEMS_SHOWN = 20
FINDINGS_SHOWN = 5  # the overview names the top findings; `findings` pages all of them
FINDING_BRIEF = ("rule", "severity", "category", "title", "gain_ns", "speedup", "observation")  # observations: after the findings, no gain


def _where(run: str, worker: str, window: str) -> dict:
    return {"run": run, "worker": worker, "window": window}


def _paging(sort, order, search, offset: int, limit: int) -> dict:
    """table_page's parameters, those given (as the routes pass them)."""
    asked = {"sort": sort, "order": order, "search": search}
    return {**{k: v for k, v in asked.items() if v}, "offset": offset, "limit": limit}


def overview(host, run: str, worker: str, window: str) -> dict:
    pending = host.pending(run, worker, window)
    if pending:
        return pending
    body = sections.overview_impl(host.store(), run, worker, window)
    info = {k: v for k, v in body["info"].items() if k != "source_files"}
    info["source_files_total"] = len(body["info"]["source_files"])
    hits = body["rule_hits"]
    devices = DEVICES if body["gpu_efficiency"] or body["npu_efficiency"] else {}
    return {**_where(run, worker, window), "info": info, "schema_version": body["schema_version"],
            "figures": body["figures"], "average": body["average"],
            "steps": body["steps"][:STEPS_SHOWN], "steps_total": len(body["steps"]),
            "gpu_efficiency": body["gpu_efficiency"], "npu_efficiency": body["npu_efficiency"],
            "problems": body["problems"][:PROBLEMS_SHOWN], "problems_total": len(body["problems"]),
            "findings": [{k: hit[k] for k in FINDING_BRIEF} for hit in hits[:FINDINGS_SHOWN]],
            "findings_total": len(hits), "glossary": glossary(FIGURES, BREAKDOWN, devices), "units": UNITS}


def _table(host, tool: str, run: str, worker: str, window: str, group_by: str, sort, order, search, cursor,
           limit: int, impl) -> tuple[dict | None, dict, dict, int]:
    """(pending answer or None, the question, the route's page (impl(store, paging)), the offset) of a table."""
    question = {"tool": tool, **_where(run, worker, window), "group_by": group_by, "sort": sort, "order": order,
                "search": search}
    pending = host.pending(run, worker, window)
    if pending:
        return pending, question, {}, 0
    offset = offset_of(cursor, question)
    return None, question, impl(host.store(), _paging(sort, order, search, offset, limit)), offset


def operators(host, run: str, worker: str, window: str, group_by: str = "name", sort: str | None = None,
              order: str | None = None, search: str = "", cursor: str | None = None, limit: int = 25) -> dict:
    pending, question, body, offset = _table(
        host, "operators", run, worker, window, group_by, sort, order, search, cursor, limit,
        lambda store, paging: sections.operators_impl(store, run, worker, window, group_by, paging))
    if pending:
        return pending
    answer = {**_where(run, worker, window), "group_by": group_by, "has_device": body["has_device"],
              "has_stacks": body["has_stacks"], "all_rows": body["all_rows"],
              **{k: body[k] for k in ("total", "offset", "limit", "sort", "order", "search")}, "rows": body["rows"],
              "units": UNITS}
    if offset == 0:
        answer["glossary"] = glossary(OPERATORS)
    return paged(answer, "rows", question, offset, body["total"])


def kernels(host, run: str, worker: str, window: str, group_by: str = "name", sort: str | None = None,
            order: str | None = None, search: str = "", cursor: str | None = None, limit: int = 25) -> dict:
    """One of the Kernels view's two tables: by name, or by name + the operator that launched them."""
    pending, question, body, offset = _table(
        host, "kernels", run, worker, window, group_by, sort, order, search, cursor, limit,
        lambda store, paging: sections.kernels_impl(store, run, worker, window, paging))
    if pending:
        return pending
    table = sections.KERNEL_GROUPS[group_by]
    total = body["total"] if group_by == "name" else body["kernels_by_op_total"]
    answer = {**_where(run, worker, window), "group_by": group_by, "all_rows": body[f"{table}_all"],
              "total": total, **{k: body[k] for k in ("offset", "limit", "sort", "order", "search")},
              "kernel_total_ns": body["total_ns"], "cores": body["cores"], "rows": body[table], "units": UNITS}
    if offset == 0:
        answer["glossary"] = glossary(KERNELS)
    return paged(answer, "rows", question, offset, total)


def findings(host, run: str, worker: str, window: str, cursor: str | None = None, limit: int = 5) -> dict:
    """The window's findings (the Suggestions view), ranked by estimated gain per step, each whole:
    what was seen, why, what to change, the gain bound and the evidence (timeline instants relative)."""
    pending = host.pending(run, worker, window)
    if pending:
        return pending
    question = {"tool": "findings", **_where(run, worker, window)}
    offset = offset_of(cursor, question)
    found = sections.suggestions_impl(host.store(), run, worker, window)["findings"]
    answer = {**_where(run, worker, window), "total": len(found), "offset": offset,
              "findings": found[offset:offset + limit], "units": UNITS}
    return paged(answer, "findings", question, offset, len(found))
