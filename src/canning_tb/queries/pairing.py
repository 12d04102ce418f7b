"""What a target is compared with when no baseline is named: the one default pairing of the CLI, the
plugin's GET /compare (and so the Compare view) and the MCP compare tool, said in words.

A window (run, worker, window), the first rule that applies:
1. a window the job asked for itself on a slow step (ps.on_demand(trigger=...): Window.trigger) -> the last
   normal window before it in its worker ("triggered");
2. the window before it in its worker ("previous window"), 3. else the window after it ("next window");
4. the matching window of the previous run of the logdir (runs in the store's order, by name): the same
   worker (else the same rank, else the first worker) at the same position (else its last window); so a
   run of one window is compared with the run before it, never with itself ("previous run");
5. the window at its position in another worker of the run ("other worker"),
6. the matching window of the next run of the logdir ("next run": the first run of a logdir);
else nothing to compare with (NotFound: the only window of the logdir).
A run (every window of every worker):
1. its newest window position holds a triggered window -> the windows of every worker at that position
   against those at the last position before it that holds none ("triggered");
2. every window of the previous run of the logdir ("previous run");
else NotFound (the first run of a logdir: name a baseline).
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import NotFound, unknown_window

Key = tuple[str, str, str]


@dataclass
class Pairing:
    base: list[Key]
    target: list[Key]
    rule: str                       # "triggered" | "previous window" | "previous run" | "next window" | "other worker"
    #                                 | "next run" | "named"
    text: str                       # the pairing in words, for the screen and the report


def _label(run: str, worker: str, window) -> str:
    return f"{'' if run == '.' else run + ' / '}{worker} / {window.label}"


def _previous_run(store, run: str, step: int = -1) -> str | None:
    """The run before `run` among the logdir's runs that hold a window (step=1: the run after it)."""
    runs = [r for r in store.runs() if any(store.windows(r, w.name) for w in store.workers(r))]
    if run not in runs:
        return None
    index = runs.index(run) + step
    return runs[index] if 0 <= index < len(runs) else None


def _matching(store, run: str, worker, position: int):
    """(worker name, window) in `run` matching a worker and a position (module doc, rule 3)."""
    workers = [w for w in store.workers(run) if store.windows(run, w.name)]
    chosen = (next((w for w in workers if w.name == worker.name), None)
              or next((w for w in workers if worker.rank >= 0 and w.rank == worker.rank), None) or workers[0])
    windows = store.windows(run, chosen.name)
    return chosen.name, windows[min(position, len(windows) - 1)]


def window_pairing(store, run: str, worker: str, window: str) -> Pairing:
    try:
        windows = store.windows(run, worker)
        position = store.position(run, worker, window)
    except KeyError:
        raise unknown_window(run, worker, window) from None
    me = windows[position]
    target = [(run, worker, window)]
    if me.trigger:
        normal = next((w for w in reversed(windows[:position]) if not w.trigger), None)
        if normal is not None:
            return Pairing([(run, worker, normal.id)], target, "triggered",
                           f"the job asked for {_label(run, worker, me)} itself ({me.trigger}): compared with the "
                           f"last normal window before it, {_label(run, worker, normal)}")
    if position > 0:
        before = windows[position - 1]
        return Pairing([(run, worker, before.id)], target, "previous window",
                       f"window against the window before it: {_label(run, worker, me)} against "
                       f"{_label(run, worker, before)}")
    if position + 1 < len(windows):
        after = windows[position + 1]
        return Pairing([(run, worker, after.id)], target, "next window",
                       f"window against the window after it (none before it): "
                       f"{_label(run, worker, me)} against {_label(run, worker, after)}")
    previous = _previous_run(store, run)
    if previous is not None:
        return _in_run(store, run, worker, position, me, target, previous, "previous run", "the previous run")
    for other_worker in store.workers(run):
        others = store.windows(run, other_worker.name)
        if other_worker.name != worker and others:
            other = others[min(position, len(others) - 1)]
            return Pairing([(run, other_worker.name, other.id)], target, "other worker",
                           f"window against the same position in another worker: {_label(run, worker, me)} "
                           f"against {_label(run, other_worker.name, other)}")
    following = _previous_run(store, run, step=1)
    if following is not None:
        return _in_run(store, run, worker, position, me, target, following, "next run",
                       "the next run (no window or run before it)")
    raise NotFound(f"nothing to compare {_label(run, worker, me)} with: it is the only window of the logdir; "
                   "name a baseline")


def run_pairing(store, run: str) -> Pairing:
    if run not in store.runs():
        raise NotFound(f"unknown run: {run!r}")
    workers = store.workers(run)
    depth = max((len(store.windows(run, w.name)) for w in workers), default=0)
    if depth == 0:
        raise NotFound(f"run {run!r} holds no window")
    newest = store.windows_at(run, depth - 1)
    triggered = [win for _, win in newest if win.trigger]
    if triggered:
        normal = next((p for p in range(depth - 2, -1, -1)
                       if store.windows_at(run, p) and not any(win.trigger for _, win in store.windows_at(run, p))),
                      None)
        if normal is not None:
            base = [(run, w.name, win.id) for w, win in store.windows_at(run, normal)]
            label = store.windows_at(run, normal)[0][1].label
            return Pairing(base, [(run, w.name, win.id) for w, win in newest], "triggered",
                           f"the job asked for its newest window itself ({triggered[0].trigger}): compared with the "
                           f"last normal window before it ({label}), on every rank")
    previous = _previous_run(store, run)
    if previous is None:
        raise NotFound(f"nothing to compare run {run!r} with: it is the first run of the logdir; name a baseline")
    every = [(r, w.name, win.id) for r in (previous, run) for w in store.workers(r) for win in store.windows(r, w.name)]
    return Pairing([k for k in every if k[0] == previous], [k for k in every if k[0] == run], "previous run",
                   f"run against the previous run of the logdir: {run!r} against {previous!r}, every window "
                   "of every rank, per step")


def default_pairing(store, run: str, worker: str | None = None, window: str | None = None) -> Pairing:
    """The baseline of a target named without one (module doc): a window when worker and window are named,
    else the whole run."""
    return window_pairing(store, run, worker, window) if worker and window else run_pairing(store, run)


def _in_run(store, run, worker, position, me, target, other_run, kind: str, words: str) -> "Pairing":
    """The window against the matching window of another run (`words` says which)."""
    me_worker = next(w for w in store.workers(run) if w.name == worker)
    name, other = _matching(store, other_run, me_worker, position)
    return Pairing([(other_run, name, other.id)], target, kind,
                   f"window against the matching window of {words}: {_label(run, worker, me)} "
                   f"against {_label(other_run, name, other)}")
