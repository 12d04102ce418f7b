"""Each route of the plugin asks its selection (queries/) with the parameters docs/http_api.md gives it, the
defaults it states included: the selections are stood in for here (each records what it was asked), the
store is a stand-in behind a stand-in scanner, and the requests go through the plugin's own WSGI apps
(werkzeug's client), so no digest is built (issue 46: mutation testing of plugin/)."""
import json
from types import SimpleNamespace

import pytest
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from canning_tb.analysis.efficiency.peaks import chip_names
from canning_tb.plugin import compare_routes, plugin as plugin_module
from canning_tb.queries import memory_snapshot, sections, timeline
from canning_tb.store.chip_digest import ChipView

W = {"run": "r", "worker": "w", "window": "7"}


class Scanner:
    """What the plugin reads of its scanner: the store, the last listing, and the calls it makes."""

    def __init__(self, store):
        self.store, self.listing, self.loading, self.error = store, {"runs": [{"run": "r"}]}, False, None
        self.prefetcher = "prefetcher"
        self.kicks, self.waits, self.first = 0, [], True

    def kick(self):
        self.kicks += 1

    def wait_first(self, timeout):
        self.waits.append(timeout)
        return self.first


@pytest.fixture
def served(tmp_path, monkeypatch):
    p = plugin_module.CanningPlugin(base_plugin.TBContext(logdir=str(tmp_path)), refresh_interval=60.0)
    p.scanner.wait_first(10)
    store = SimpleNamespace(logdir=str(tmp_path), runs=lambda: ["r"])
    p.scanner = Scanner(store)
    asked = []

    def stand_in(name, answer=None):
        def impl(*args):
            asked.append((name, args))
            return {"impl": name} if answer is None else answer
        return impl
    return p, store, asked, stand_in


def _get(p, route, method="GET", **params):
    resp = Client(p.get_plugin_apps()[route]).open("/", method=method, query_string=params)
    body = resp.get_data()
    is_json = resp.headers.get("Content-Type", "").startswith("application/json")
    return resp.status_code, (json.loads(body) if is_json and body else body), resp.headers


WINDOW_ROUTES = [  # route, extra parameters, module, impl, what it is asked after (store, run, worker, window)
    ("/kernels", {}, sections, "kernels_impl", ({},)),
    ("/kernels", {"sort": "calls", "order": "asc", "search": "mm", "offset": "5", "limit": "10"}, sections,
     "kernels_impl", ({"sort": "calls", "order": "asc", "search": "mm", "offset": 5, "limit": 10},)),
    ("/kernels", {"search": "", "offset": "0"}, sections, "kernels_impl", ({"offset": 0},)),  # empty: not given
    ("/operators", {}, sections, "operators_impl", ("name", {})),
    ("/operators", {"group_by": "shape", "limit": "3"}, sections, "operators_impl", ("shape", {"limit": 3})),
    ("/operators", {"detail": "aten::mm", "shapes": "[[2]]"}, sections, "operator_detail_impl", ("aten::mm", "[[2]]")),
    ("/operators", {"detail": "aten::mm"}, sections, "operator_detail_impl", ("aten::mm", None)),
    ("/memory_range", {"device": "cuda:0", "start_ns": "5"}, sections, "memory_range_impl", ("cuda:0", 5, None)),
    ("/memory_range", {"device": "npu:1", "end_ns": "9"}, sections, "memory_range_impl", ("npu:1", None, 9)),
    # snapshots: index 0, limit 20, device 0, points 2000, bands' limit 1000 by default (docs/http_api.md)
    ("/memory_snapshot", {}, memory_snapshot, "snapshot_impl", (0, 20)),
    ("/memory_snapshot", {"index": "2", "limit": "5"}, memory_snapshot, "snapshot_impl", (2, 5)),
    ("/memory_snapshot_series", {}, memory_snapshot, "snapshot_series_impl", (0, 0, 2000)),
    ("/memory_snapshot_series", {"index": "1", "device": "3", "points": "9"}, memory_snapshot,
     "snapshot_series_impl", (3, 1, 9)),
    ("/memory_snapshot_state", {"entry": "4"}, memory_snapshot, "snapshot_state_impl", (4, 0, 0)),
    ("/memory_snapshot_state", {"entry": "4", "device": "1", "index": "2"}, memory_snapshot, "snapshot_state_impl",
     (4, 1, 2)),
    ("/memory_snapshot_bands", {}, memory_snapshot, "snapshot_bands_impl", (0, 0, None, None, 1000)),
    ("/memory_snapshot_bands", {"device": "1", "index": "2", "start_entry": "3", "end_entry": "4", "limit": "5"},
     memory_snapshot, "snapshot_bands_impl", (1, 2, 3, 4, 5)),
    ("/critical_path", {}, plugin_module, "critical_path_impl", (None, 0, 50)),
    ("/critical_path", {"step": "3", "offset": "4", "limit": "5"}, plugin_module, "critical_path_impl", (3, 4, 5)),
]


@pytest.mark.parametrize("route, extra, module, name, tail", WINDOW_ROUTES)
def test_each_window_route_asks_its_selection_with_the_documented_defaults(served, monkeypatch, route, extra,
                                                                          module, name, tail):
    p, store, asked, stand_in = served
    monkeypatch.setattr(module, name, stand_in(name))
    code, body, headers = _get(p, route, **W, **extra)
    assert (code, body) == (200, {"impl": name})
    assert asked == [(name, (store, "r", "w", "7") + tail)]


def test_the_routes_about_one_window_and_the_csv_routes_call_their_selection(served):
    """These routes hold their selection itself (made at import), so it is read from the route's handle; what
    the handle asks it is checked with a stand-in of the same shape."""
    p, store, asked, stand_in = served
    whole = {"/overview": sections.overview_impl, "/memory": sections.memory_impl,
             "/communication": sections.communication_impl, "/suggestions": sections.suggestions_impl,
             "/modules": sections.modules_impl, "/roofline": plugin_module.roofline_impl}
    for route, impl in whole.items():
        query, kind, handle = plugin_module.ROUTES[route]
        assert handle.__closure__[0].cell_contents is impl and kind == "json", route
    for route, impl in (("/operators.csv", sections.operators_csv), ("/kernels.csv", sections.kernels_csv)):
        query, kind, handle = plugin_module.ROUTES[route]
        assert handle.__closure__[0].cell_contents is impl and kind == "csv", route
    q = plugin_module.Query(run="r", worker="w", window="7", group_by="shape", sort=None, order="desc", search=None,
                            offset=None, limit=4)
    assert plugin_module._window(stand_in("one"))(store, q) == {"impl": "one"}
    assert plugin_module._csv(stand_in("csv"))(store, q) == {"impl": "csv"}
    assert asked == [("one", (store, "r", "w", "7")), ("csv", (store, "r", "w", "7", "shape", {"order": "desc",
                                                                                                  "limit": 4}))]
    for route in ("/overview", "/operators", "/kernels", "/operators.csv", "/kernels.csv", "/suggestions", "/modules",
                  "/roofline"):  # the routes judged against a chip's peaks take `chip`
        assert "chip" in [param.name for param in plugin_module.ROUTES[route][0]], route
    assert "chip" not in [param.name for param in plugin_module.ROUTES["/memory"][0]]


def test_the_snapshot_ranks_and_compare_routes(served, monkeypatch):
    p, store, asked, stand_in = served
    monkeypatch.setattr(memory_snapshot, "snapshot_ranks_impl", stand_in("ranks"))
    assert _get(p, "/memory_snapshot_ranks", run="r")[0] == 200
    assert _get(p, "/memory_snapshot_ranks", run="r", window_index="3")[0] == 200
    assert asked == [("ranks", (store, "r", 0)), ("ranks", (store, "r", 3))]
    asked.clear()
    monkeypatch.setattr(compare_routes, "compare_impl", stand_in("compare"))
    assert _get(p, "/compare", **W)[0] == 200
    assert _get(p, "/compare", **W, base_run="b", base_worker="bw", base_window="1", group_by="shape",
                table="kernels", sort="delta", order="asc", search="mm", offset="2", limit="4")[0] == 200
    assert asked == [("compare", (store, ("", "", ""), ("r", "w", "7"), "name", "operators",
                                  {"sort": "abs_delta", "search": "", "offset": 0})),
                     ("compare", (store, ("b", "bw", "1"), ("r", "w", "7"), "shape", "kernels",
                                  {"sort": "delta", "search": "mm", "offset": 2, "order": "asc", "limit": 4}))]
    assert _get(p, "/compare", run="r", worker="w") == (
        400, {"error": "missing parameter: window"}, _get(p, "/compare", run="r", worker="w")[2])


def test_the_cross_rank_routes_take_a_position_or_a_window(served, monkeypatch):
    p, store, asked, stand_in = served
    monkeypatch.setattr(plugin_module, "cluster_impl", stand_in("cluster"))
    monkeypatch.setattr(plugin_module, "cross_rank_path_impl", stand_in("paths"))
    monkeypatch.setattr(plugin_module, "trends_impl", stand_in("trends"))
    monkeypatch.setattr(plugin_module, "position_of",
                        lambda where, run, worker, window: 4 if (where, run, worker, window) == (store, "r", "w", "7")
                        else -9)
    assert _get(p, "/cluster", run="r", window_index="2")[0] == 200
    assert _get(p, "/cluster", run="r", worker="w", window="7")[0] == 200
    assert _get(p, "/critical_path_ranks", run="r", window_index="1")[0] == 200
    assert _get(p, "/critical_path_ranks", run="r", worker="w", window="7", offset="3", limit="6")[0] == 200
    assert _get(p, "/trends", run="r", worker="w")[0] == 200
    assert asked == [("cluster", (store, "prefetcher", "r", 2)), ("cluster", (store, "prefetcher", "r", 4)),
                     ("paths", (store, "prefetcher", "r", 1, 0, 50)), ("paths", (store, "prefetcher", "r", 4, 3, 6)),
                     ("trends", (store, "prefetcher", "r", "w"))]
    for route in ("/cluster", "/critical_path_ranks"):
        assert _get(p, route, run="r", worker="w")[:2] == (
            400, {"error": "missing parameter: window_index (or worker and window)"})
        assert _get(p, route, window_index="0")[:2] == (400, {"error": "missing parameter: run"})
    assert _get(p, "/trends", run="r")[:2] == (400, {"error": "missing parameter: worker"})
    assert _get(p, "/trends", worker="w")[:2] == (400, {"error": "missing parameter: run"})
    assert _get(p, "/timeline_search", **W)[:2] == (400, {"error": "missing parameter: q"})
    assert _get(p, "/timeline_ranks", window_index="0")[:2] == (400, {"error": "missing parameter: run"})


def test_a_chip_reads_the_store_for_that_chip_and_an_unknown_one_is_named(served, monkeypatch):
    p, store, asked, stand_in = served
    monkeypatch.setattr(sections, "kernels_impl", stand_in("kernels"))
    chip = chip_names()[0]
    assert _get(p, "/kernels", **W, chip=chip)[0] == 200
    seen = asked[-1][1][0]
    assert isinstance(seen, ChipView) and seen.chip == chip and seen.logdir == store.logdir
    assert _get(p, "/kernels", **W, chip="")[0] == 200 and asked[-1][1][0] is store
    code, body, _ = _get(p, "/kernels", **W, chip="No Such Chip 9000")
    assert code == 422 and body["known"] == chip_names() and "No Such Chip 9000" in body["error"]


TIMELINE_ROUTES = [  # route, extra parameters, impl, what it is asked after (cache, store, run, worker, window)
    ("/timeline_tracks", {}, "tracks_impl", ()),
    ("/timeline_slice", {"event": "3"}, "slice_impl", (3,)),
    ("/timeline_peers", {"event": "4"}, "peers_impl", (4,)),
    ("/timeline_search", {"q": "mm"}, "search_impl", ("mm", 0, None, False, False, None, None)),
    ("/timeline_search", {"q": "mm", "at_ns": "5", "tracks": "1,2", "exact": "1", "collective": "1", "from_ns": "6",
                          "to_ns": "8"}, "search_impl", ("mm", 5, [1, 2], True, True, 6, 8)),
    ("/timeline_search", {"q": "mm", "exact": "yes", "collective": "true"}, "search_impl",
     ("mm", 0, None, False, False, None, None)),  # a flag is on only as "1"
    ("/timeline_summary", {"start_ns": "1", "end_ns": "9"}, "summary_impl", (1, 9, None)),
    ("/timeline_summary", {"start_ns": "1", "end_ns": "9", "tracks": "0"}, "summary_impl", (1, 9, [0])),
    ("/timeline_counters", {"start_ns": "1", "end_ns": "9", "width": "4"}, "counters_impl", (1, 9, 4)),
]


@pytest.mark.parametrize("route, extra, name, tail", TIMELINE_ROUTES)
def test_each_timeline_route_asks_its_selection(served, monkeypatch, route, extra, name, tail):
    p, store, asked, stand_in = served
    monkeypatch.setattr(timeline, name, stand_in(name))
    assert _get(p, route, **W, **extra)[:2] == (200, {"impl": name})
    (got_name, args), = asked
    assert got_name == name and isinstance(args[0], timeline.IndexCache) and args[1:] == (store, "r", "w", "7") + tail


def test_the_timelines_tile_and_download_answer_bytes(served, monkeypatch):
    p, store, asked, stand_in = served
    monkeypatch.setattr(timeline, "tile_impl", stand_in("tile", b"\x01\x02"))
    monkeypatch.setattr(timeline, "download_impl", stand_in("download", ("t.json", iter([b"{", b"}"]))))
    code, body, headers = _get(p, "/timeline_tile", **W, start_ns="0", end_ns="10", width="5", tracks="2")
    assert (code, body, headers["Content-Type"]) == (200, b"\x01\x02", "application/octet-stream")
    assert asked[-1][1][1:] == (store, "r", "w", "7", [2], 0, 10, 5)
    code, body, headers = _get(p, "/timeline_download", **W)
    assert (code, body) == (200, b"{}") and 'filename="t.json"' in headers["Content-Disposition"]
    assert _get(p, "/timeline_tile", **W, start_ns="0", end_ns="10")[:2] == (400, {"error": "missing parameter: width"})


def test_the_timelines_ranks_by_position_or_by_window(served, monkeypatch):
    p, store, asked, stand_in = served
    monkeypatch.setattr(timeline, "ranks_impl", stand_in("ranks"))

    def position(run, worker, window):
        if (run, worker) != ("r", "w") or window not in ("7", "first"):
            raise KeyError(window)
        return 5 if window == "7" else 0
    store.position = position
    assert _get(p, "/timeline_ranks", run="r", window_index="2")[0] == 200
    assert _get(p, "/timeline_ranks", run="r", worker="w", window="7")[0] == 200
    assert _get(p, "/timeline_ranks", run="r", window_index="0")[0] == 200  # the first position is a position
    assert _get(p, "/timeline_ranks", run="r", worker="w", window="first")[0] == 200
    assert asked == [("ranks", (store, "r", 2)), ("ranks", (store, "r", 5)), ("ranks", (store, "r", 0)),
                     ("ranks", (store, "r", 0))]
    assert _get(p, "/timeline_ranks", run="x", window_index="0")[:2] == (404, {"error": "unknown run: 'x'"})
    assert _get(p, "/timeline_ranks", run="r")[:2] == (400, {"error": "missing parameter: worker, window"})
    assert _get(p, "/timeline_ranks", run="r", worker="w")[:2] == (400, {"error": "missing parameter: window"})
    assert _get(p, "/timeline_ranks", run="r", worker="w", window="8")[:2] == (
        404, {"error": "unknown run/worker/window"})


def test_a_routes_error_names_the_logdirs_files_relatively(served, monkeypatch):
    from canning_tb.ingest.table import InputError
    p, store, asked, stand_in = served

    def unreadable(*args):
        raise InputError(f"{store.logdir}/r/t.json", f"unlike {store.logdir}/r/u.json")
    monkeypatch.setattr(sections, "kernels_impl", unreadable)
    assert _get(p, "/kernels", **W)[:2] == (422, {"error": "r/t.json: unlike r/u.json", "file": "r/t.json"})


def test_the_routes_only_read(served):
    p, store, asked, stand_in = served
    code, body, headers = _get(p, "/overview", method="POST", **W)
    assert (code, body) == (405, {"error": "method POST not allowed: only GET and HEAD"})
    assert (headers["Allow"], headers["X-Content-Type-Options"]) == ("GET, HEAD", "nosniff")
    assert _get(p, "/runs", method="HEAD")[0] == 200
    apps = p.get_plugin_apps()
    assert {"/capture", "/capture_state", "/capture_request", "/index.js", "/runs", "/cluster", "/trends",
            "/critical_path_ranks", "/timeline_ranks", "/timeline_download"} | set(plugin_module.ROUTES) <= set(apps)
    assert _get(p, "/capture", method="POST")[0] == 405  # the capture routes choose their own methods


def test_runs_and_a_store_still_being_discovered(served):
    p, store, asked, stand_in = served
    assert _get(p, "/runs")[:2] == (200, {"logdir": store.logdir, "loading": False, "error": None,
                                          "runs": [{"run": "r"}]})
    p.scanner.listing, p.scanner.loading = None, True
    assert _get(p, "/runs")[:2] == (200, {"logdir": store.logdir, "loading": True, "error": None, "runs": []})
    assert p.scanner.waits == [0.5]
    p.scanner.store, p.scanner.waits = None, []
    assert _get(p, "/overview", **W)[:2] == (
        503, {"error": "still discovering the profiles under the logdir", "loading": True})
    assert p.scanner.waits == [5.0]
    p.scanner.error = "s3://b: access denied"
    assert _get(p, "/overview", **W)[:2] == (503, {"error": "s3://b: access denied", "loading": True})


def test_the_tab_is_shown_while_loading_or_with_runs_or_an_error(served):
    p, store, asked, stand_in = served
    kicked = []
    p.trends = SimpleNamespace(kick=kicked.append)
    assert p.is_active() is True and kicked == [store] and p.scanner.waits == [0.5]
    p.scanner.listing = {"runs": []}
    assert p.is_active() is False
    p.scanner.error = "bad bucket"
    assert p.is_active() is True
    p.scanner.first, p.scanner.error, kicked[:] = False, None, []
    assert p.is_active() is True and kicked == []
    meta = p.frontend_metadata()
    assert (meta.es_module_path, meta.tab_name, meta.disable_reload) == ("/index.js", "Canning Profiler", False)


def test_the_bundle_or_a_page_that_says_how_to_build_it(served, monkeypatch, tmp_path):
    p, store, asked, stand_in = served
    monkeypatch.setattr(plugin_module, "_STATIC", str(tmp_path / "none"))
    code, body, headers = _get(p, "/index.js")
    assert (code, headers["Content-Type"].split(";")[0]) == (200, "text/javascript")
    assert b"npm ci && npm run build" in body and b"export function render()" in body
    (tmp_path / "static").mkdir()
    (tmp_path / "static" / "index.js").write_bytes(b"export const x = 1;")
    monkeypatch.setattr(plugin_module, "_STATIC", str(tmp_path / "static"))
    assert _get(p, "/index.js")[1] == b"export const x = 1;"


def test_each_route_is_answered_as_its_table_says(served, monkeypatch):
    p, store, asked, stand_in = served
    kinds = {}
    monkeypatch.setattr(p, "route", lambda handle, query=(), kind="json": kinds.setdefault(id(handle), kind))
    p._apps()
    assert {route: kinds[id(handle)] for route, (query, kind, handle) in plugin_module.ROUTES.items()} == {
        route: ("csv" if route.endswith(".csv") else "json") for route in plugin_module.ROUTES}


def test_the_plugin_is_built_from_tensorboards_context(tmp_path, monkeypatch):
    """A logdir given only by --logdir_spec ("name:path"), --canning_capture and --host: the scanner looks at
    that folder through the store factory given, the capture routes are on for it and take that host name."""
    from canning_tb.store.trends import TrendWriter
    monkeypatch.delenv("CANNING_CAPTURE", raising=False)
    made = []
    flags = SimpleNamespace(logdir_spec=f"main:{tmp_path}", canning_capture=True, host="box.example", bind_all=False)
    p = plugin_module.CanningPlugin(base_plugin.TBContext(logdir="", flags=flags), refresh_interval=60.0,
                                    store_factory=lambda logdir: made.append(logdir) or SimpleNamespace(logdir=logdir))
    assert p.scanner.wait_first(10)
    assert (p._logdir, p.scanner.logdir, p.scanner.interval, made) == (str(tmp_path), str(tmp_path), 60.0,
                                                                       [str(tmp_path)])
    assert (p.capture.logdir, p.capture.enabled) == (str(tmp_path), True)
    assert p.capture.hosts == {"localhost", "127.0.0.1", "::1", "box.example"}
    assert isinstance(p.trends, TrendWriter)
    off = plugin_module.CanningPlugin(base_plugin.TBContext(logdir=str(tmp_path)), refresh_interval=60.0,
                                      store_factory=lambda logdir: SimpleNamespace(logdir=logdir))
    assert off.capture.enabled is False and off.capture.hosts == {"localhost", "127.0.0.1", "::1"}


def test_paging_passes_only_what_was_given():
    q = plugin_module.Query(sort="calls", order=None, search="", offset=0, limit=None)
    assert plugin_module.paging(q) == {"sort": "calls", "search": "", "offset": 0}
