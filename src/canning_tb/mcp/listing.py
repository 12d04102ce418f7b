"""list_runs / list_windows: what the logdir holds, from the Store's discovery (the plugin's /runs lists
the same), one row per run and one per window of a worker (rank), paged."""
from __future__ import annotations

from canning_tb.queries.errors import NotFound
from canning_tb.util.remote_fs import scrub

from .bounds import offset_of, paged


def list_runs(host, cursor: str | None = None, limit: int = 100) -> dict:
    store = host.store()
    question = {"tool": "list_runs"}
    offset = offset_of(cursor, question)
    names = store.runs()
    rows = []
    for run in names[offset:offset + limit]:
        try:
            workers = store.workers(run)
        except KeyError:  # the run went between runs() and workers()
            continue
        counts = [len(store.windows(run, w.name)) for w in workers]
        ranks = sorted(w.rank for w in workers if w.rank >= 0)
        rows.append({"run": run, "workers": len(workers), "ranks": len(ranks),
                     "first_rank": ranks[0] if ranks else -1, "last_rank": ranks[-1] if ranks else -1,
                     "windows": sum(counts), "window_positions": max(counts, default=0)})
    scanner = host.scanner
    answer = {"logdir": scrub(host.logdir or ""), "discovering": scanner.loading, "error": scanner.error,
              "total": len(names), "offset": offset, "runs": rows}
    return paged(answer, "runs", question, offset, len(names))


def list_windows(host, run: str, worker: str | None = None, cursor: str | None = None, limit: int = 100) -> dict:
    """One row per window of every worker of the run (or of one worker), workers by rank, each worker's
    windows in time order (`window_index`: the position the cross-rank tools take; `trigger`: why the job
    asked for the window itself, ps.on_demand(trigger=...), or null)."""
    store = host.store()
    if run not in store.runs():
        raise NotFound(f"unknown run: {run!r} (list_runs names them)")
    workers = store.workers(run)
    if worker is not None:
        workers = [w for w in workers if w.name == worker]
        if not workers:
            raise NotFound(f"unknown worker {worker!r} in run {run!r}")
    question = {"tool": "list_windows", "run": run, "worker": worker}
    offset = offset_of(cursor, question)
    every = [(w, i, win) for w in workers for i, win in enumerate(store.windows(run, w.name))]
    rows = [{"worker": w.name, "rank": w.rank, "window_index": i, "window": win.id, "label": win.label,
             "format": win.format, "status": win.status, "digested": store.has_digest(run, w.name, win.id),
             "trigger": win.trigger or None, "snapshots": len(win.snapshots)}
            for w, i, win in every[offset:offset + limit]]
    answer = {"run": run, "total": len(every), "offset": offset, "windows": rows}
    return paged(answer, "windows", question, offset, len(every))
