"""Where a digest's steps come from, said the same way on every surface (CLI text and JSON, the
profile's summaries, the plugin's Overview). Light (no numpy): the report and the queries import it."""
from __future__ import annotations

# a step that waited over this share of its time for device work the trace lacks (queued before the window)
# is left out of the average (analysis/steps.py, "Work queued before the window")
UNTRACED_SHARE = 0.05
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


def queued(step) -> bool:
    """The step waited over UNTRACED_SHARE of its time for work queued before the window."""
    return step.untraced_wait_ns > UNTRACED_SHARE * step.dur_ns


def left_out_reason(step) -> str:
    """Why the average leaves a step out, in two words ('' where it keeps it): the same on every surface."""
    if not step.distorted:
        return ""
    return "queued work" if queued(step) else "window end"


def step_line(step, kept: bool) -> str:
    """One sentence on a step that the window's end or work queued before it distorts ('' for the others);
    `kept`: the average keeps it all the same (no other step to take instead)."""
    if queued(step):
        wait = round(step.untraced_wait_ns / 1e6, 3)
        if kept:
            return (f"Step {step.number} includes {wait} ms the host waited for device work queued before the "
                    "window; no other step to average instead.")
        return (f"Step {step.number} is left out of the average: its host waited {wait} ms for device work queued "
                "before the window (a blocking call while the trace shows no device work running).")
    if step.distorted:
        return (f"Step {step.number} is left out of the average: its device work ran {round(step.tail_ns / 1e6, 3)} ms "
                "past its host range, into the window's end.")
    return ""
