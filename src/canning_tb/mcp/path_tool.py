"""critical_path: what held each step (the plugin's /critical_path and /critical_path_ranks answers,
queries/critical_path.py), bounded. Every figure is the route's, unchanged.

scope "window": one window's steps, each with its time per category on the path; with `step`, that step's
longest segments, paged. scope "ranks": which rank held each step across the ranks at one window position, with
the clock offsets applied; with `step`, that step's hops, paged."""
from __future__ import annotations

from canning_tb.queries.critical_path import MAX_PAGE, critical_path_impl, cross_rank_path_impl
from canning_tb.queries.errors import BadParameter, NotFound
from canning_tb.queries.ranks import position_of

from .bounds import UNITS, offset_of, paged
from .host import digesting_windows

SCOPES = ("window", "ranks")
STEPS_SHOWN = 50  # steps of a window listed without `step` (their segments: ask with `step`)
RANKS_SHOWN = 16  # ranks listed per step without `step` (by time held, most first)
OFFSETS_SHOWN = 64  # clock offsets listed: those moved or not aligned first


def critical_path(host, run: str, worker: str | None = None, window: str | None = None,
                  window_index: int | None = None, scope: str = "window", step: int | None = None,
                  cursor: str | None = None, limit: int = 50) -> dict:
    if scope not in SCOPES:
        raise BadParameter(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
    if not 1 <= limit <= MAX_PAGE:
        raise BadParameter(f"limit must be between 1 and {MAX_PAGE}, not {limit}")
    if scope == "ranks":
        return _ranks(host, run, worker, window, window_index, step, cursor, limit)
    if not (worker and window):
        raise BadParameter("scope window needs worker and window (list_windows names them)")
    pending = host.pending(run, worker, window)
    if pending:
        return pending
    where = {"run": run, "worker": worker, "window": window, "scope": scope}
    if step is None:
        body = critical_path_impl(host.store(), run, worker, window, None, 0, 1)
        steps = [{k: v for k, v in s.items() if k not in ("segments", "longest", "next_offset")}
                 for s in body["steps"]]
        return {**where, "steps": steps[:STEPS_SHOWN], "steps_total": len(steps),
                "segments": "ask with step=N for that step's longest segments", "units": UNITS}
    question = {"tool": "critical_path", **where, "step": step}
    offset = offset_of(cursor, question)
    body = critical_path_impl(host.store(), run, worker, window, step, offset, limit)
    one = body["steps"][0]
    answer = {**where, "step": {k: v for k, v in one.items() if k not in ("segments", "next_offset")},
              "offset": offset, "segments": one["segments"], "units": UNITS}
    return paged(answer, "segments", question, offset, one["segments_kept"])


def _ranks(host, run, worker, window, window_index, step, cursor, limit) -> dict:
    if window_index is None:
        if not (worker and window):
            raise BadParameter("scope ranks needs window_index, or worker and window (list_windows names them)")
        window_index = position_of(host.store(), run, worker, window)
    where = {"run": run, "window_index": window_index, "scope": "ranks"}
    question = {"tool": "critical_path", **where, "step": step}
    offset = offset_of(cursor, question) if step is not None else 0
    body = cross_rank_path_impl(host.store(), host.prefetcher, run, window_index, offset, limit)
    if body.get("loading"):
        return digesting_windows(run, window_index, body["done"], body["total"])
    offsets = sorted(body["clock_offsets"], key=lambda o: (o["offset_ns"] == 0 and o["aligned"], o["rank"]))
    head = {**where, "ranks_total": body["ranks_total"], "problems": body["problems"][:20],
            "clock_offsets": offsets[:OFFSETS_SHOWN], "clock_offsets_total": len(offsets), "units": UNITS}
    if step is None:
        steps = [{"step": s["step"], "dur_ns": s["dur_ns"], "held_by": s["held_by"],
                  "by_rank": s["by_rank"][:RANKS_SHOWN], "by_rank_total": len(s["by_rank"]),
                  "hops_total": s["hops_total"]} for s in body["steps"]]
        return {**head, "steps": steps[:STEPS_SHOWN], "steps_total": len(steps),
                "hops": "ask with step=N for that step's hops (which rank, own work or transfer, after which "
                        "collective)"}
    found = [s for s in body["steps"] if s["step"] == step]
    if not found:
        shown = ", ".join(str(s["step"]) for s in body["steps"][:20]) or "none"
        raise NotFound(f"step {step} has no critical path across the ranks of {run} at {window_index} "
                       f"(steps: {shown})")
    one = found[0]
    answer = {**head, "step": {k: v for k, v in one.items() if k not in ("hops", "next_offset")}, "offset": offset,
              "hops": one["hops"]}
    answer["step"]["by_rank"] = one["by_rank"][:RANKS_SHOWN]
    return paged(answer, "hops", question, offset, offset + len(one["hops"]) + (1 if one["next_offset"] else 0))
