"""GET /trends as `trends_impl(store, prefetcher, run, worker)`: the key figures of every window of one
worker (analysis/trends.py: the figures TensorBoard's Scalars tab gets when the user turns trend files
on, store/trends.py), for the Overview's trends chart: the viewer shows them itself instead of writing
event files into the user's folders. Windows that cannot be read are left out and listed in `problems`;
while the windows are being digested (Prefetcher, in the background) the answer is
{"loading": True, "done", "total"}.
"""
from __future__ import annotations

from canning_tb.analysis.figures import TrendPoint, plain
from canning_tb.analysis.trends import trend_scalars, trend_step
from canning_tb.store.digest_part import RANKS

from .errors import NotFound, QueryError, window_digest
from .sections import old_analysis


def trends_impl(store, prefetcher, run: str, worker: str) -> dict:
    if run not in store.runs():
        raise NotFound(f"unknown run: {run!r}")
    if worker not in {w.name for w in store.workers(run)}:
        raise NotFound(f"unknown worker: {worker!r} in run {run!r}")
    windows = [(position, win) for position, win in enumerate(store.windows(run, worker)) if win.status == "ready"]
    pending = prefetcher.progress(("trends", run, worker), [(run, worker, win.id) for _, win in windows])
    if pending is not None:
        return {"run": run, "worker": worker, "loading": True, **pending}
    points, problems = [], []
    for position, win in windows:
        try:
            digest = window_digest(store, run, worker, win.id, RANKS)  # what window_figures reads
        except QueryError as e:
            problems.append({"window": win.id, "message": e.body["error"]})
            continue
        points.append(plain(TrendPoint(window=win.id, label=win.label, step=trend_step(digest, position),
                                       values=trend_scalars(digest), old_analysis=old_analysis(digest) is not None)))
    return {"run": run, "worker": worker, "loading": False, "windows": points, "problems": problems}
