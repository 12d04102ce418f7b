"""Every route answers the error table of docs/http_api.md ("Conventions") for every error class: a
missing parameter (400), an unknown window (404), another method (405), unreadable input (422), a bug
(500), a remote logdir that cannot be read (502) and a logdir still being scanned (503), always as JSON
`{"error": ...}` and never with an absolute path outside the logdir. Before the one boundary
(plugin/boundary.py) a remote failure answered 502 on /overview, 500 on the timeline's binary routes
and escaped uncaught on the CSV downloads.

The plugin runs in this process (werkzeug's client), over a real logdir; the failures of a bug and of
remote storage are made by replacing the store's lookups (a remote logdir needs a network here)."""
import json
import re

import pytest
from tensorboard.backend import application
from werkzeug.test import Client

from canning_tb.util.remote_fs import RemoteError
from test_plugin_routes import RESNET_WINDOW, build_logdir, make_plugin

W = {"run": "resnet", "worker": "worker0", "window": RESNET_WINDOW}
BROKEN = {"run": "broken", "worker": "worker0", "window": "1"}
RANGE = {"start_ns": "0", "end_ns": "1000000", "width": "100"}
# every route of the plugin with the parameters of a good request (window routes take W's)
ROUTES = {
    "/overview": {}, "/operators": {}, "/kernels": {}, "/operators.csv": {}, "/kernels.csv": {}, "/memory": {},
    "/roofline": {}, "/critical_path": {"offset": "0"},
    "/memory_range": {"device": "cuda:0"}, "/communication": {}, "/suggestions": {}, "/modules": {},
    "/compare": {"base_run": "resnet", "base_worker": "worker0", "base_window": RESNET_WINDOW},
    "/timeline_tracks": {}, "/timeline_tile": RANGE, "/timeline_slice": {"event": "0"},
    "/timeline_peers": {"event": "0"}, "/timeline_search": {"q": "conv"},
    "/timeline_summary": {"start_ns": "0", "end_ns": "1000000"}, "/timeline_counters": RANGE,
    "/timeline_download": {},
}
# the capture routes choose their own methods (POST to ask) and are off without --canning_capture:
# tests/plugin/test_capture_routes.py checks their answers, which go through the same error mapping
CAPTURE = {"/capture", "/capture_state", "/capture_request"}
# the memory snapshot routes answer a window's snapshot (this logdir has none): tests/plugin/
# test_memory_snapshot_routes.py checks their answers and errors, through the same boundary
SNAPSHOT = {"/memory_snapshot", "/memory_snapshot_series", "/memory_snapshot_state", "/memory_snapshot_bands",
            "/memory_snapshot_ranks"}
ACROSS_RANKS = {"/cluster": {"run": "resnet", "window_index": "0"}, "/timeline_ranks": {"run": "resnet", "window_index": "0"},
                "/trends": {"run": "resnet", "worker": "worker0"},
                "/critical_path_ranks": {"run": "resnet", "window_index": "0"}}


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    return make_plugin(build_logdir(tmp_path_factory.mktemp("errors")))


@pytest.fixture(scope="module")
def client(plugin):
    return Client(application.TensorBoardWSGI([plugin]))


def call(client, route, params, method="GET"):
    resp = client.open(f"/data/plugin/canning{route}", method=method, query_string=params)
    body = resp.get_data()
    is_json = resp.headers.get("Content-Type", "").startswith("application/json")
    return resp.status_code, (json.loads(body) if is_json else None), resp.headers


def check_error(code, body, expected, logdir):
    assert code == expected, (code, body)
    assert isinstance(body, dict) and isinstance(body.get("error"), str) and body["error"], body
    assert str(logdir) not in json.dumps(body) and "/tmp/" not in body["error"], body


def test_the_plugin_serves_exactly_these_routes(plugin):
    served = set(plugin.get_plugin_apps()) - {"/index.js", "/runs"}
    assert served == set(ROUTES) | set(ACROSS_RANKS) | CAPTURE | SNAPSHOT


@pytest.mark.parametrize("route", sorted(ROUTES) + sorted(ACROSS_RANKS))
def test_every_route_answers_the_error_table(client, plugin, route, monkeypatch):
    logdir = plugin._logdir
    good = {**W, **ROUTES[route]} if route in ROUTES else dict(ACROSS_RANKS[route])
    code, body, _ = call(client, route, good)
    assert code in (200, 202), (route, code, body)
    # 405: every route only reads
    code, body, headers = call(client, route, good, "POST")
    check_error(code, body, 405, logdir)
    assert headers["Allow"] == "GET, HEAD"
    # 400: the required parameters missing
    check_error(*call(client, route, {})[:2], 400, logdir)
    if route not in ACROSS_RANKS:
        # 400: a malformed number (the declared query), where the route takes one
        numbers = [k for k in good if k in ("start_ns", "end_ns", "width", "event", "offset")]
        for name in numbers:
            check_error(*call(client, route, {**good, name: "1e40"})[:2], 400, logdir)
            check_error(*call(client, route, {**good, name: str(10 ** 40)})[:2], 400, logdir)
        # 404: an unknown window
        check_error(*call(client, route, {**good, "window": "no-such-window"})[:2], 404, logdir)
        # 422: unreadable input, named relative to the logdir (the download serves the file as it is)
        if route == "/timeline_download":
            return check_failures(client, plugin, route, good, monkeypatch)
        broken = {**good, **BROKEN} if route != "/compare" else {**good, "base_run": "broken", "base_window": "1"}
        code, body, _ = call(client, route, broken)
        check_error(code, body, 422, logdir)
        assert body["file"] == "broken/worker0.1.pt.trace.json.gz" and body["error"].startswith(body["file"] + ": ")
    else:
        check_error(*call(client, route, {**good, "run": "no-such-run"})[:2], 404, logdir)
    check_failures(client, plugin, route, good, monkeypatch)


def check_failures(client, plugin, route, good, monkeypatch):
    logdir = plugin._logdir
    store = plugin.scanner.store
    # 500 (a bug) and 502 (the remote logdir cannot be read), wherever the route meets the store
    for error, expected in ((RuntimeError(f"boom in {logdir}/resnet and /etc/secret/file"), 500),
                            (RemoteError("s3://bucket/logs: access denied: check the credentials"), 502)):
        def fail(*args, error=error, **kw):
            raise error
        with monkeypatch.context() as m:
            for name in ("window", "windows", "runs", "position", "local_window", "windows_at"):
                m.setattr(store, name, fail)
            code, body, _ = call(client, route, good)
        check_error(code, body, expected, logdir)
        if expected == 500:
            assert body["error"].startswith("internal error: RuntimeError: boom in resnet and file"), body
        else:
            assert body["error"] == "s3://bucket/logs: access denied: check the credentials"
    # 503: the first scan has not finished
    with monkeypatch.context() as m:
        m.setattr(plugin.scanner, "store", None)
        m.setattr(plugin.scanner, "wait_first", lambda timeout=0: False)
        m.setattr(plugin.scanner, "kick", lambda: None)
        code, body, _ = call(client, route, good)
    check_error(code, body, 503, logdir)
    assert body.get("loading") is True


def test_the_table_in_the_docs_is_the_one_answered():
    from pathlib import Path
    doc = (Path(__file__).resolve().parents[2] / "docs" / "http_api.md").read_text(encoding="utf-8")
    codes = set(re.findall(r"^\| (\d{3}) \|", doc, re.M))
    assert codes == {"400", "404", "405", "422", "500", "502", "503"}, codes


def test_a_window_whose_reader_process_cannot_start_answers_422_and_is_not_remembered(tmp_path, monkeypatch):
    """The spawn of the child that reads a big window fails (as with a process or memory limit: made
    here by failing multiprocessing's start, since root ignores RLIMIT_NPROC): 422 naming the window's
    file and why, no path outside the logdir; the next request, with processes to spare, answers."""
    import multiprocessing.context

    from canning_tb.store import scanner
    monkeypatch.setattr(scanner, "ISOLATE_BYTES", 0)  # every window is read in a child
    logdir = build_logdir(tmp_path / "logdir")
    client = Client(application.TensorBoardWSGI([make_plugin(logdir)]))

    def refuse(*_):
        raise BlockingIOError(11, "Resource temporarily unavailable")
    with monkeypatch.context() as m:
        m.setattr(multiprocessing.context.SpawnProcess, "_Popen", staticmethod(refuse))
        code, body, _ = call(client, "/overview", W)
    check_error(code, body, 422, str(logdir))
    assert body["error"].startswith(f"resnet/worker0.{RESNET_WINDOW}.pt.trace.json.gz: no process could be started")
    assert "Resource temporarily unavailable" in body["error"]
    code, body, _ = call(client, "/overview", W)
    assert code == 200 and body["steps"], (code, body)
