"""The /timeline_* routes: parse the request, call plugin/timeline.py, answer JSON or binary
(docs/http_api.md). Kept apart from plugin.py, which only lists them."""
from __future__ import annotations

import logging

from tensorboard.backend import http_util
from werkzeug import wrappers

from . import timeline
from .errors import RouteError

log = logging.getLogger("canning_tb.plugin")


def _int(args, name: str, default: int | None = None) -> int:
    value = args.get(name)
    if value in (None, ""):
        if default is None:
            raise RouteError(400, f"missing parameter: {name}")
        return default
    try:
        return int(value)
    except ValueError:
        raise RouteError(400, f"{name} must be an integer, not {value!r}") from None


def _tracks(args) -> list[int] | None:
    """`tracks=0,3,4` (None when absent: every track)."""
    text = args.get("tracks")
    if not text:
        return None
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise RouteError(400, f"tracks must be integers separated by commas, not {text!r}") from None


def _text(args, name: str) -> str:
    if not args.get(name):
        raise RouteError(400, f"missing parameter: {name}")
    return args[name]


def _start(args) -> int:
    return _int(args, "start_ns")


def _end(args) -> int:
    return _int(args, "end_ns")


def _width(args) -> int:
    return _int(args, "width")


def _event(args) -> int:
    return _int(args, "event")


def _window(args) -> tuple[str, str, str]:
    missing = [n for n in ("run", "worker", "window") if not args.get(n)]
    if missing:
        raise RouteError(400, f"missing parameter: {', '.join(missing)}")
    return args["run"], args["worker"], args["window"]


def _binary(handle):
    """A route answering bytes (or (filename, chunks) for a download); errors as JSON."""
    @wrappers.Request.application
    def app(request):
        try:
            body = handle(request)
        except RouteError as e:
            return http_util.Respond(request, e.body, "application/json", code=e.code)
        except Exception as e:  # request boundary: a bug shows as text in the UI, logged here
            log.exception("canning: %s failed", request.path)
            return http_util.Respond(request, {"error": f"internal error: {type(e).__name__}: {e}"},
                                     "application/json", code=500)
        if isinstance(body, bytes):
            return http_util.Respond(request, body, "application/octet-stream")
        name, chunks = body
        return wrappers.Response(chunks, mimetype="application/octet-stream",
                                 headers={"Content-Disposition": f'attachment; filename="{name}"'})

    return app


def timeline_apps(plugin) -> dict:
    """{route: app} of the timeline, over the plugin's store (plugin._store) and JSON wrapper."""
    cache = timeline.IndexCache()

    def window_json(impl, *parse):
        def handle(request):
            args = request.args
            return impl(cache, plugin._store(), *_window(args), *(p(args) for p in parse))
        return plugin._route(handle)

    def tile(request):
        args = request.args
        return timeline.tile_impl(cache, plugin._store(), *_window(args), _tracks(args), _start(args), _end(args),
                                  _width(args))

    def download(request):
        return timeline.download_impl(cache, plugin._store(), *_window(request.args))

    def ranks(request):
        args = request.args
        if not args.get("run"):
            raise RouteError(400, "missing parameter: run")
        store = plugin._store()
        if args["run"] not in store.runs():
            raise RouteError(404, f"unknown run: {args['run']!r}")
        position = _int(args, "window_index", -1)
        if position < 0:
            run, worker, window = _window(args)
            position = store.position(run, worker, window) if _known(store, run, worker, window) else -1
        if position < 0:
            raise RouteError(404, "unknown run/worker/window")
        return timeline.ranks_impl(store, args["run"], position)

    return {
        "/timeline_tracks": window_json(timeline.tracks_impl),
        "/timeline_tile": _binary(tile),
        "/timeline_slice": window_json(timeline.slice_impl, _event),
        "/timeline_peers": window_json(timeline.peers_impl, _event),
        "/timeline_search": window_json(timeline.search_impl, lambda args: _text(args, "q"),
                                        lambda args: _int(args, "at_ns", 0), _tracks,
                                        lambda args: args.get("exact") == "1",
                                        lambda args: args.get("collective") == "1"),
        "/timeline_summary": window_json(timeline.summary_impl, _start, _end, _tracks),
        "/timeline_counters": window_json(timeline.counters_impl, _start, _end, _width),
        "/timeline_download": _binary(download),
        "/timeline_ranks": plugin._route(ranks),
    }


def _known(store, run: str, worker: str, window: str) -> bool:
    try:
        store.position(run, worker, window)
    except KeyError:
        return False
    return True
