"""The critical path as the front doors serve it (docs/critical_path.md), bounded:

- `critical_path_impl(store, run, worker, window, step, offset, limit)`: one window's steps (digest.critical_path):
  per step its time per category (largest first, with its share of the step) and one page of its longest segments
  (times relative to the window start, as every section sends them) and its LONGEST segments apart;
- `cross_rank_path_impl(store, prefetcher, run, position, offset, limit)`: which rank held each step across the
  ranks (the cluster analysis /cluster already computes: analyse_ranks' critical_path and clock_offsets), one
  page of each step's hops.

Figures are the digest's and the cluster analysis', selected and made relative, never recomputed.
"""
from __future__ import annotations

from canning_tb.analysis.summary import share
from canning_tb.util.digest_json import to_plain

from .bounds import check_int
from .errors import BadParameter, NotFound, window_digest
from .ranks import cluster_impl
from .sections import _head, relative

SEGMENTS_PAGE = 50  # segments of a step per page by default
MAX_PAGE = 200  # the digest keeps at most PATH_SEGMENTS (200) per step
HOPS_PAGE = 50
LONGEST = 5  # each step's longest segments, named apart (the Overview's card links them into the timeline)


def _page_args(offset: int, limit: int) -> tuple[int, int]:
    check_int("offset", offset)
    check_int("limit", limit)
    if offset < 0:
        raise BadParameter(f"offset must be 0 or more, not {offset}")
    if not 1 <= limit <= MAX_PAGE:
        raise BadParameter(f"limit must be between 1 and {MAX_PAGE}, not {limit}")
    return offset, limit


def categories(by_category, dur_ns: int) -> list[dict]:
    """[{category, ns, share}] largest first; the share of the step's duration (null for an unknown duration)."""
    rows = sorted(((str(k), int(v)) for k, v in by_category.items() if int(v) > 0), key=lambda kv: (-kv[1], kv[0]))
    return [{"category": k, "ns": v, "share": share(v, dur_ns)} for k, v in rows]


def critical_path_impl(store, run: str, worker: str, window: str, step: int | None = None, offset: int = 0,
                       limit: int = SEGMENTS_PAGE) -> dict:
    """Every step's categories; segments paged (offset / limit) for the asked step, else for each step."""
    offset, limit = _page_args(offset, limit)
    digest = window_digest(store, run, worker, window)
    t0 = digest.window.start_ns
    paths = list(digest.critical_path)
    if step is not None:
        check_int("step", step)
        paths = [p for p in paths if p.number == step]
        if not paths:
            shown = ", ".join(str(p.number) for p in digest.critical_path[:20]) or "none"
            raise NotFound(f"step {step} has no critical path in {run} / {worker} / {window} (steps: {shown})")
    steps = []
    for p in paths:
        segments = [to_plain(s) for s in p.segments]
        for s in segments:
            s["ts_ns"] = relative(s["ts_ns"], t0)
        kept = len(segments)
        page = segments[offset:offset + limit]
        longest = sorted(segments, key=lambda s: (-s["dur_ns"], s["ts_ns"]))[:LONGEST]
        steps.append({"number": int(p.number), "start_ns": relative(int(p.start_ns), t0), "dur_ns": int(p.dur_ns),
                      "categories": categories(p.by_category, int(p.dur_ns)), "segments": page, "longest": longest,
                      "segments_kept": kept, "segments_total": int(p.segments_total),
                      "next_offset": offset + limit if offset + limit < kept else None})
    return {**_head(store, run, worker, window, digest), "offset": offset, "limit": limit, "steps": steps}


def cross_rank_path_impl(store, prefetcher, run: str, position: int, offset: int = 0,
                         limit: int = HOPS_PAGE) -> dict:
    """Which rank held each step across the ranks at one window position, with the clock offsets applied."""
    offset, limit = _page_args(offset, limit)
    body = cluster_impl(store, prefetcher, run, position)
    if body.get("loading"):
        return body
    steps = []
    for p in body.get("critical_path") or []:
        dur = int(p["dur_ns"])
        held = sorted(((int(r), int(ns)) for r, ns in p["by_rank"].items()), key=lambda kv: (-kv[1], kv[0]))
        hops = p["hops"][offset:offset + limit]
        steps.append({"step": int(p["step"]), "dur_ns": dur,
                      "held_by": held[0][0] if held else None,
                      "by_rank": [{"rank": r, "ns": ns, "share": share(ns, dur)} for r, ns in held],
                      "hops": hops, "hops_total": int(p["hops_total"]),
                      "next_offset": offset + limit if offset + limit < len(p["hops"]) else None})
    return {"run": run, "window_index": position, "loading": False, "offset": offset, "limit": limit,
            "steps": steps, "clock_offsets": _named(body), "problems": body.get("problems", []),
            "ranks_total": len(body.get("per_rank", []))}


def _named(body: dict) -> list[dict]:
    """The clock offsets, each with the worker and window of its rank (the timeline places each rank's hops
    on that window's tracks; ranks repeated across workers are numbered by position, as the analysis does)."""
    from canning_tb.analysis.cluster import rank_numbers  # numpy: on the first request
    members = body.get("workers") or []
    named = dict(zip(rank_numbers([m["digest_rank"] for m in members]), members))
    return [{**o, **({"worker": named[o["rank"]]["worker"], "window": named[o["rank"]]["window"]}
                     if o["rank"] in named else {})} for o in body.get("clock_offsets") or []]
