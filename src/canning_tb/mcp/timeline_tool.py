"""timeline: what runs in a time range of one window (one rank), summed per name: the plugin's
/timeline_summary answer (queries/timeline.summary_impl over the window's level-of-detail index), on the
tracks of one kind or all; the range given in ns relative to the window start, or as a step."""
from __future__ import annotations

from canning_tb.queries.errors import BadParameter, NotFound
from canning_tb.queries.timeline import summary_impl, tracks_impl

from .bounds import UNITS

TRACK_KINDS = ("all", "device", "host", "python")
INDEX_WAIT_S = 1.0  # a call waits this long for the window's events and index before it says "indexing"
TRACKS_SHOWN = 20
STEPS_SHOWN = 50


def _range(layout: dict, start_ns: int | None, end_ns: int | None, step: int | None) -> tuple[int, int]:
    if step is not None:
        if start_ns is not None or end_ns is not None:
            raise BadParameter("give either step or start_ns / end_ns, not both")
        found = next((s for s in layout["steps"] if s["number"] == step), None)
        if found is None or found["start_ns"] < 0:
            numbers = [s["number"] for s in layout["steps"]]
            raise NotFound(f"no step {step} with a start in this window (its steps: {numbers[:STEPS_SHOWN]})")
        return found["start_ns"], found["start_ns"] + found["dur_ns"]
    start = 0 if start_ns is None else start_ns
    end = layout["duration_ns"] if end_ns is None else end_ns
    if end <= start:
        raise BadParameter(f"end_ns ({end}) must be after start_ns ({start})")
    return start, end


def timeline(host, run: str, worker: str, window: str, start_ns: int | None = None, end_ns: int | None = None,
             step: int | None = None, tracks: str = "all", limit: int = 50) -> dict:
    pending = host.pending(run, worker, window)
    if pending:
        return pending
    store, cache = host.store(), host.timeline
    where = {"run": run, "worker": worker, "window": window}
    layout = tracks_impl(cache, store, run, worker, window, INDEX_WAIT_S)
    if layout.get("loading"):
        progress = {k: layout[k] for k in ("stage", "elapsed_s") if k in layout}
        return {**where, "status": "indexing", **progress, "retry_after_s": 2.0,
                "message": "the window's events are being loaded and indexed for the timeline: ask again"}
    start, end = _range(layout, start_ns, end_ns, step)
    chosen = [t for t in layout["tracks"] if tracks == "all" or t["kind"] == tracks]
    ids = None if tracks == "all" else [t["id"] for t in chosen]
    body = summary_impl(cache, store, run, worker, window, start, end, ids) if ids != [] else \
        {"start_ns": start, "end_ns": end, "events": 0, "names": 0, "rows": []}
    shown = [{k: t[k] for k in ("id", "name", "kind", "events")} for t in chosen[:TRACKS_SHOWN]]
    return {**where, "rank": layout["rank"], "duration_ns": layout["duration_ns"], "step": step,
            "start_ns": body["start_ns"], "end_ns": body["end_ns"], "tracks": tracks, "tracks_total": len(chosen),
            "tracks_shown": shown, "events": body["events"], "names": body["names"],
            "rows": body["rows"][:limit], "steps": layout["steps"][:STEPS_SHOWN], "units": UNITS}
