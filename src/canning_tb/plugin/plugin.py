"""The TensorBoard plugin: thin routes (parse the request -> a `*_impl` of sections.py / ranks.py
-> JSON). The routes, their parameters, answers and errors: docs/http_api.md.

The plugin holds a Scanner (store/scanner.py): the Store is built and refreshed in a background
thread, so `is_active()` and /runs never wait on a big logdir. Errors are JSON {"error": ...}.
"""
from __future__ import annotations

import json
import logging
import os

from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from canning_tb.csv_cells import csv_chunks
from canning_tb.remote_fs import RemoteError, scrub
from canning_tb.store.scanner import Scanner, default_store
from canning_tb.store.trends import TrendWriter

from . import sections
from .compare_routes import compare_request
from .errors import RouteError
from .logdir import normalize_logdir
from .ranks import cluster_impl, position_of
from .timeline_routes import timeline_apps
from .trends import trends_impl

log = logging.getLogger("canning_tb.plugin")

PLUGIN_NAME = "canning"
TAB_NAME = "Canning Profiler"
_STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
_MISSING_BUNDLE_JS = b"""// canning: the frontend bundle is not built.
export function render() {
  const p = document.createElement("p");
  p.id = "canning-root";
  p.dataset.state = "error";
  p.style.cssText = "font-family: system-ui, sans-serif; padding: 16px; color: #c62828";
  p.textContent = "The Canning Profiler frontend is not built. Run: cd src/canning_tb/frontend && npm ci && npm run build";
  document.body.appendChild(p);
}
"""


def _required(args, *names: str) -> list[str]:
    missing = [n for n in names if not args.get(n)]
    if missing:
        raise RouteError(400, f"missing parameter: {', '.join(missing)}")
    return [args[n] for n in names]


def _int(args, name: str) -> int | None:
    """An optional integer parameter (None when absent or empty)."""
    value = args.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise RouteError(400, f"{name} must be an integer, not {value!r}") from None


def _paging(args) -> dict:
    """A table's sort, order, search, offset and limit (analysis/table_page.py), those given."""
    paging = {name: args[name] for name in ("sort", "order", "search") if args.get(name) not in (None, "")}
    for name in ("offset", "limit"):
        value = _int(args, name)
        if value is not None:
            paging[name] = value
    return paging


def _operators(store, run, worker, window, args):
    if "detail" in args:
        return sections.operator_detail_impl(store, run, worker, window, args.get("detail", ""), args.get("shapes"))
    return sections.operators_impl(store, run, worker, window, args.get("group_by", "name"), _paging(args))


def _kernels(store, run, worker, window, args):
    return sections.kernels_impl(store, run, worker, window, _paging(args))


def _memory_range(store, run, worker, window, args):
    (device,) = _required(args, "device")
    return sections.memory_range_impl(store, run, worker, window, device, _int(args, "start_ns"), _int(args, "end_ns"))


def _read_only(app):
    """Every route only reads: GET and HEAD; any other method is answered 405 before the route runs."""
    def guarded(environ, start_response):
        if environ.get("REQUEST_METHOD", "GET") in ("GET", "HEAD"):
            return app(environ, start_response)
        body = json.dumps({"error": f"method {environ.get('REQUEST_METHOD')} not allowed: only GET and HEAD"})
        response = wrappers.Response(body, status=405, content_type="application/json",
                                     headers={"Allow": "GET, HEAD"})
        return response(environ, start_response)

    return guarded


class CanningPlugin(base_plugin.TBPlugin):
    plugin_name = PLUGIN_NAME

    def __init__(self, context, *, refresh_interval: float = 5.0, store_factory=default_store):
        self._logdir = normalize_logdir(getattr(context, "logdir", None), getattr(context, "flags", None))
        self.scanner = Scanner(self._logdir, refresh_interval, store_factory)
        self.scanner.kick()  # start looking now, in the background
        self.trends = TrendWriter()  # Scalars event files, when the user turns them on (store/trends.py)

    # TensorBoard API ------------------------------------------------------------------------
    def get_plugin_apps(self):
        return {path: _read_only(app) for path, app in self._apps().items()}

    def _apps(self):
        return {
            "/index.js": self._serve_js,
            "/runs": self._serve_runs,
            "/overview": self._window_route(sections.overview_impl),
            "/operators": self._window_route(_operators, with_args=True),
            "/kernels": self._window_route(_kernels, with_args=True),
            "/operators.csv": self._csv_route(sections.operators_csv),
            "/kernels.csv": self._csv_route(sections.kernels_csv),
            "/memory": self._window_route(sections.memory_impl),
            "/memory_range": self._window_route(_memory_range, with_args=True),
            "/communication": self._window_route(sections.communication_impl),
            "/suggestions": self._window_route(sections.suggestions_impl),
            "/modules": self._window_route(sections.modules_impl),
            "/cluster": self._route(self._cluster),
            "/trends": self._route(self._trends),
            **timeline_apps(self),
            "/compare": self._route(lambda request: compare_request(self._store(), request.args)),
        }

    def is_active(self) -> bool:
        """Cheap: reads the last scan's listing. While the very first scan of a big logdir is
        still running (after a short wait), the tab is shown and says it is loading."""
        scanner = self.scanner
        scanner.kick()
        if not scanner.wait_first(0.5):
            return True
        self.trends.kick(scanner.store)
        # a logdir that cannot be read (bad credentials, no such bucket) shows the tab with the reason
        return bool(scanner.error or (scanner.listing and scanner.listing["runs"]))

    def frontend_metadata(self):
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name=TAB_NAME, disable_reload=False)

    # routes ---------------------------------------------------------------------------------
    @wrappers.Request.application
    def _serve_js(self, request):
        path = os.path.join(_STATIC, "index.js")
        try:
            with open(path, "rb") as f:
                body = f.read()
        except OSError:
            log.warning("canning: %s missing; build it with: cd src/canning_tb/frontend && npm ci && npm run build", path)
            body = _MISSING_BUNDLE_JS
        return http_util.Respond(request, body, "text/javascript")

    @wrappers.Request.application
    def _serve_runs(self, request):
        scanner = self.scanner
        scanner.kick()
        if scanner.listing is None:
            scanner.wait_first(0.5)  # /runs answers within a second, whatever the logdir holds
        body = {"logdir": scrub(self._logdir or "") or None, "loading": scanner.loading, "error": scanner.error,
                "runs": (scanner.listing or {"runs": []})["runs"]}
        return http_util.Respond(request, body, "application/json")

    def _route(self, handle):
        """A JSON route: handle(request) -> body; a RouteError is answered with its own code."""
        @wrappers.Request.application
        def app(request):
            try:
                body = handle(request)
                code = 202 if body.get("loading") else 200
            except RouteError as e:
                body, code = e.body, e.code
            except RemoteError as e:  # the remote logdir cannot be read now (credentials, network)
                body, code = {"error": str(e)}, 502
            except Exception as e:  # request boundary: a bug shows as text in the UI, logged here
                log.exception("canning: %s failed", request.path)
                body, code = {"error": f"internal error: {type(e).__name__}: {e}"}, 500
            return http_util.Respond(request, body, "application/json", code=code)

        return app

    def _window_route(self, impl, with_args: bool = False):
        """A route about one window: impl(store, run, worker, window), or with the request's
        other parameters too: impl(store, run, worker, window, args)."""
        def handle(request):
            run, worker, window = _required(request.args, "run", "worker", "window")
            store = self._store()
            if with_args:
                return impl(store, run, worker, window, request.args)
            return impl(store, run, worker, window)

        return self._route(handle)

    def _csv_route(self, rows_of):
        """A CSV download: rows_of(store, run, worker, window, group_by, paging) -> (file name, header,
        rows), streamed (csv_cells: formulas neutralised); errors are JSON as on the other routes."""
        @wrappers.Request.application
        def app(request):
            try:
                run, worker, window = _required(request.args, "run", "worker", "window")
                name, header, rows = rows_of(self._store(), run, worker, window, request.args.get("group_by", "name"),
                                             _paging(request.args))
            except RouteError as e:
                return http_util.Respond(request, e.body, "application/json", code=e.code)
            response = wrappers.Response(csv_chunks(header, rows), mimetype="text/csv")
            response.headers["Content-Disposition"] = f'attachment; filename="{name}"'
            response.headers["X-Content-Type-Options"] = "nosniff"
            return response

        return app

    def _store(self):
        scanner = self.scanner
        if scanner.store is None:
            scanner.kick()
            scanner.wait_first(5.0)
            if scanner.store is None:
                raise RouteError(503, scanner.error or "still discovering the profiles under the logdir", loading=True)
        return scanner.store

    def _cluster(self, request):
        args = request.args
        (run,) = _required(args, "run")
        store = self._store()
        position = _int(args, "window_index")
        if position is None:
            if not (args.get("worker") and args.get("window")):
                raise RouteError(400, "missing parameter: window_index (or worker and window)")
            position = position_of(store, run, args["worker"], args["window"])
        return cluster_impl(store, self.scanner.prefetcher, run, position)

    def _trends(self, request):
        run, worker = _required(request.args, "run", "worker")
        return trends_impl(self._store(), self.scanner.prefetcher, run, worker)
