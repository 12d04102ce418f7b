"""The /timeline_* routes: their declared queries and what they call in queries/timeline.py, each behind
the plugin's one boundary (boundary.py: JSON, binary tiles and the trace download alike; docs/http_api.md).
Kept apart from plugin.py, which only lists them."""
from __future__ import annotations

from canning_tb.queries import timeline
from canning_tb.queries.errors import BadParameter, NotFound

from .boundary import Param

WINDOW = (Param("run", required=True), Param("worker", required=True), Param("window", required=True))
RANGE = (Param("start_ns", "int", required=True), Param("end_ns", "int", required=True))
TRACKS = Param("tracks", "ints")
WIDTH = Param("width", "int", required=True)
EVENT = Param("event", "int", required=True)


def timeline_apps(plugin) -> dict:
    """{route: app} of the timeline, over the plugin's store and boundary (plugin.route)."""
    cache = timeline.IndexCache()

    def on_window(impl, *names):
        return lambda store, q: impl(cache, store, q.run, q.worker, q.window, *(q[n] for n in names))

    routes = {
        "/timeline_tracks": (WINDOW, "json", on_window(timeline.tracks_impl)),
        "/timeline_tile": (WINDOW + RANGE + (TRACKS, WIDTH), "bytes",
                           on_window(timeline.tile_impl, "tracks", "start_ns", "end_ns", "width")),
        "/timeline_slice": (WINDOW + (EVENT,), "json", on_window(timeline.slice_impl, "event")),
        "/timeline_peers": (WINDOW + (EVENT,), "json", on_window(timeline.peers_impl, "event")),
        "/timeline_search": (WINDOW + (Param("q", required=True), Param("at_ns", "int", default=0), TRACKS,
                                       Param("exact", "flag", default=False), Param("collective", "flag", default=False),
                                       Param("from_ns", "int"), Param("to_ns", "int")),
                             "json", on_window(timeline.search_impl, "q", "at_ns", "tracks", "exact", "collective",
                                               "from_ns", "to_ns")),
        "/timeline_summary": (WINDOW + RANGE + (TRACKS,), "json",
                              on_window(timeline.summary_impl, "start_ns", "end_ns", "tracks")),
        "/timeline_counters": (WINDOW + RANGE + (WIDTH,), "json",
                               on_window(timeline.counters_impl, "start_ns", "end_ns", "width")),
        "/timeline_download": (WINDOW, "download", on_window(timeline.download_impl)),
        "/timeline_ranks": ((Param("run", required=True), Param("worker"), Param("window"),
                             Param("window_index", "int", default=-1)), "json", _ranks),
    }
    return {path: plugin.route(handle, query, kind) for path, (query, kind, handle) in routes.items()}


def _ranks(store, q):
    if q.run not in store.runs():
        raise NotFound(f"unknown run: {q.run!r}")
    position = q.window_index
    if position < 0:
        missing = [n for n in ("worker", "window") if not q[n]]
        if missing:
            raise BadParameter(f"missing parameter: {', '.join(missing)}")
        position = store.position(q.run, q.worker, q.window) if _known(store, q.run, q.worker, q.window) else -1
    if position < 0:
        raise NotFound("unknown run/worker/window")
    return timeline.ranks_impl(store, q.run, position)


def _known(store, run: str, worker: str, window: str) -> bool:
    try:
        store.position(run, worker, window)
    except KeyError:
        return False
    return True
