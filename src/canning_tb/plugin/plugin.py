"""The TensorBoard plugin: thin routes (the declared query -> a `*_impl` of queries/: sections.py / ranks.py /
compare.py / timeline.py -> the answer), each behind the one boundary of boundary.py (one
parse, one error mapping, msgspec JSON). The route table is ROUTES (and timeline_routes.py); the
routes, their parameters, answers and errors: docs/http_api.md.

The plugin holds a Scanner (store/scanner.py): the Store is built and refreshed in a background
thread, so `is_active()` and /runs never wait on a big logdir.
"""
from __future__ import annotations

import logging
import os

from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from canning_tb.queries import memory_snapshot, sections
from canning_tb.queries.critical_path import HOPS_PAGE, SEGMENTS_PAGE, critical_path_impl, cross_rank_path_impl
from canning_tb.queries.errors import BadParameter, Unavailable, UnknownChip
from canning_tb.queries.ranks import cluster_impl, position_of
from canning_tb.queries.roofline import roofline_impl
from canning_tb.queries.trends import trends_impl
from canning_tb.store.scanner import Scanner, default_store
from canning_tb.store.trends import TrendWriter
from canning_tb.util.logdir import normalize_logdir
from canning_tb.util.remote_fs import scrub

from .boundary import Param, Query, app, encode, json_response
from .capture_routes import CaptureRoutes, capture_enabled
from .hosts import allowed_hosts
from .compare_routes import COMPARE_QUERY, compare_request
from .timeline_routes import timeline_apps

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


WINDOW = (Param("run", required=True), Param("worker", required=True), Param("window", required=True))
# the chip chosen in the UI (analysis/efficiency/peaks.py): the routes whose figures are judged against a peak
PEAKS = WINDOW + (Param("chip"),)
PAGING = (Param("sort"), Param("order"), Param("search"), Param("offset", "int"), Param("limit", "int"))


def paging(q: Query) -> dict:
    """A table's sort, order, search, offset and limit (analysis/table_page.py), those given."""
    return {name: q[name] for name in ("sort", "order", "search", "offset", "limit") if q.get(name) is not None}


def _window(impl):
    """handle(store, q) of a route about one window: impl(store, run, worker, window)."""
    return lambda store, q: impl(store, q.run, q.worker, q.window)


def _operators(store, q):
    if q.detail is not None:
        return sections.operator_detail_impl(store, q.run, q.worker, q.window, q.detail, q.shapes)
    return sections.operators_impl(store, q.run, q.worker, q.window, q.group_by, paging(q))


def _csv(rows_of):
    return lambda store, q: rows_of(store, q.run, q.worker, q.window, q.group_by, paging(q))


def _snapshot(store, q):
    return memory_snapshot.snapshot_impl(store, q.run, q.worker, q.window, q.index, q.limit)


def _snapshot_series(store, q):
    return memory_snapshot.snapshot_series_impl(store, q.run, q.worker, q.window, q.device, q.index, q.points)


def _snapshot_state(store, q):
    return memory_snapshot.snapshot_state_impl(store, q.run, q.worker, q.window, q.entry, q.device, q.index)


SNAPSHOT = WINDOW + (Param("index", "int", default=0),)


def _memory_range(store, q):
    return sections.memory_range_impl(store, q.run, q.worker, q.window, q.device, q.start_ns, q.end_ns)


# route -> (declared query, answer kind, handle(store, query)); timeline routes: timeline_routes.py.
# A new route is one line here (and its section in docs/http_api.md).
GROUP = Param("group_by", default="name")
ROUTES = {
    "/overview": (PEAKS, "json", _window(sections.overview_impl)),
    "/operators": (PEAKS + PAGING + (GROUP, Param("detail"), Param("shapes")), "json", _operators),
    "/kernels": (PEAKS + PAGING, "json", lambda store, q: sections.kernels_impl(store, q.run, q.worker, q.window,
                                                                                  paging(q))),
    "/operators.csv": (PEAKS + PAGING + (GROUP,), "csv", _csv(sections.operators_csv)),
    "/kernels.csv": (PEAKS + PAGING + (GROUP,), "csv", _csv(sections.kernels_csv)),
    "/memory": (WINDOW, "json", _window(sections.memory_impl)),
    "/memory_range": (WINDOW + (Param("device", required=True), Param("start_ns", "int"), Param("end_ns", "int")),
                      "json", _memory_range),
    "/memory_snapshot": (SNAPSHOT + (Param("limit", "int", default=20),), "json", _snapshot),
    "/memory_snapshot_series": (SNAPSHOT + (Param("device", "int", default=0), Param("points", "int", default=2000)),
                                "json", _snapshot_series),
    "/memory_snapshot_state": (SNAPSHOT + (Param("entry", "int", required=True), Param("device", "int", default=0)),
                               "json", _snapshot_state),
    "/memory_snapshot_bands": (SNAPSHOT + (Param("device", "int", default=0), Param("start_entry", "int"),
                                           Param("end_entry", "int"), Param("limit", "int", default=1000)), "json",
                               lambda store, q: memory_snapshot.snapshot_bands_impl(
                                   store, q.run, q.worker, q.window, q.device, q.index, q.start_entry, q.end_entry,
                                   q.limit)),
    "/memory_snapshot_ranks": ((Param("run", required=True), Param("window_index", "int", default=0)), "json",
                               lambda store, q: memory_snapshot.snapshot_ranks_impl(store, q.run, q.window_index)),
    "/communication": (WINDOW, "json", _window(sections.communication_impl)),
    "/suggestions": (PEAKS, "json", _window(sections.suggestions_impl)),
    "/modules": (PEAKS, "json", _window(sections.modules_impl)),
    "/roofline": (PEAKS, "json", _window(roofline_impl)),
    "/critical_path": (WINDOW + (Param("step", "int"), Param("offset", "int", default=0),
                                 Param("limit", "int", default=SEGMENTS_PAGE)), "json",
                       lambda store, q: critical_path_impl(store, q.run, q.worker, q.window, q.step, q.offset, q.limit)),
    "/compare": (COMPARE_QUERY, "json", compare_request),
}


def _for_chip(store, chip: str | None):
    """The store, or its view for the chip chosen in the UI; 422 naming the known chips for another name."""
    if not chip:
        return store
    from canning_tb.analysis.efficiency.peaks import UnknownChip as NotInTable, chip_names
    from canning_tb.store.chip_digest import ChipView
    try:
        return ChipView(store, chip)
    except NotInTable as e:
        raise UnknownChip(str(e), known=chip_names()) from None


def _read_only(app):
    """Every route only reads: GET and HEAD; any other method is answered 405 before the route runs."""
    def guarded(environ, start_response):
        if environ.get("REQUEST_METHOD", "GET") in ("GET", "HEAD"):
            return app(environ, start_response)
        body = encode({"error": f"method {environ.get('REQUEST_METHOD')} not allowed: only GET and HEAD"})
        response = wrappers.Response(body, status=405, content_type="application/json",
                                     headers={"Allow": "GET, HEAD", "X-Content-Type-Options": "nosniff"})
        return response(environ, start_response)

    return guarded


class CanningPlugin(base_plugin.TBPlugin):
    plugin_name = PLUGIN_NAME

    def __init__(self, context, *, refresh_interval: float = 5.0, store_factory=default_store):
        self._logdir = normalize_logdir(getattr(context, "logdir", None), getattr(context, "flags", None))
        self.scanner = Scanner(self._logdir, refresh_interval, store_factory)
        self.scanner.kick()  # start looking now, in the background
        self.trends = TrendWriter()  # Scalars event files, when the user turns them on (store/trends.py)
        flags = getattr(context, "flags", None)
        self.capture = CaptureRoutes(self._logdir, capture_enabled(flags), allowed_hosts(flags))

    # TensorBoard API ------------------------------------------------------------------------
    def get_plugin_apps(self):
        # the capture routes choose their own methods and are off without --canning_capture (capture_routes.py)
        return {**{path: _read_only(app) for path, app in self._apps().items()}, **self.capture.apps()}

    def _apps(self):
        return {
            "/index.js": self._serve_js,
            "/runs": self._serve_runs,
            **{path: self.route(handle, query, kind) for path, (query, kind, handle) in ROUTES.items()},
            "/cluster": self.route(self._cluster, (Param("run", required=True), Param("window_index", "int"),
                                                   Param("worker"), Param("window"))),
            "/critical_path_ranks": self.route(self._paths, (Param("run", required=True), Param("window_index", "int"),
                                                             Param("worker"), Param("window"),
                                                             Param("offset", "int", default=0),
                                                             Param("limit", "int", default=HOPS_PAGE))),
            "/trends": self.route(self._trends, (Param("run", required=True), Param("worker", required=True))),
            **timeline_apps(self),
        }

    def route(self, handle, query=(), kind: str = "json"):
        """The app of one route: handle(store, query) behind the one boundary (boundary.py); a route
        given `chip` reads the digests for that chip (store/chip_digest.py)."""
        return app(lambda q: handle(_for_chip(self._store(), q.get("chip")), q), query, kind,
                   lambda: self.scanner.store, self._logdir)

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
        return json_response(request, body)

    def _store(self):
        scanner = self.scanner
        if scanner.store is None:
            scanner.kick()
            scanner.wait_first(5.0)
            if scanner.store is None:
                raise Unavailable(scanner.error or "still discovering the profiles under the logdir", loading=True)
        return scanner.store

    def _cluster(self, store, q):
        return cluster_impl(store, self.scanner.prefetcher, q.run, self._position(store, q))

    def _position(self, store, q) -> int:
        if q.window_index is not None:
            return q.window_index
        if not (q.worker and q.window):
            raise BadParameter("missing parameter: window_index (or worker and window)")
        return position_of(store, q.run, q.worker, q.window)

    def _paths(self, store, q):
        return cross_rank_path_impl(store, self.scanner.prefetcher, q.run, self._position(store, q), q.offset,
                                    q.limit)

    def _trends(self, store, q):
        return trends_impl(store, self.scanner.prefetcher, q.run, q.worker)
