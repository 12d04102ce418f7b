"""Where a digest's steps come from, said the same way on every surface (CLI text and JSON, the
profile's summaries, the plugin's Overview). Light (no numpy): the report and the queries import it."""
from __future__ import annotations

# the step sources whose steps are cut from the window's own events (steps.host_steps)
FROM_EVENTS = ("", "trace", "step_marks", "window")

_NOTES = {
    "step_marks": "Steps from the training loop's prof.step() calls (the window's manifest or the profile): the "
                  "trace has no ProfilerStep ranges (torch writes them only under a schedule).",
    "window": "No step marks: the whole window is counted as ONE step. Call prof.step() once per training step "
              "(or pass schedule=ps.schedule(...)) to get per-step figures.",
}


def from_events(step_source: str) -> bool:
    """The steps are cut from this window's events (not CANN's step trace)."""
    return step_source in FROM_EVENTS


def step_note(digest) -> str:
    """One sentence on where the steps come from; '' for the ProfilerStep ranges (the usual case)."""
    src = digest.step_source
    if src in _NOTES:
        return _NOTES[src]
    if not from_events(src):
        return f"Steps as CANN measured them ({src}): the window has no ProfilerStep ranges."
    return ""
