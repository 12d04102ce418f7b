"""The capture routes (plugin/capture_routes.py) in this process, with the job side stood in for (the targets
listed, a run's state, the request written) and the clock set by hand: which methods, switches, headers,
Hosts and bodies each route takes, every refusal's status and words, the listing's cache and the rate
limit, as the module doc and docs/http_api.md#capture state them (issue 46: mutation testing of plugin/).
tests/plugin/test_capture_routes.py checks the same routes against a real job's files."""
import json
import logging
from types import SimpleNamespace

import pytest
from werkzeug.test import Client, EnvironBuilder, run_wsgi_app

from canning_tb.capture import request as cr
from canning_tb.capture.targets import CaptureBusy
from canning_tb.plugin import capture_routes
from canning_tb.plugin.capture_routes import OFF, CaptureRoutes, capture_enabled

HEADERS = {"X-Canning-Capture": "1", "Host": "localhost:6006"}


class Clock:
    def __init__(self):
        self.now = 100.0

    def monotonic(self):
        return self.now

    def time_ns(self):
        return 5_000_000_000


@pytest.fixture
def job(monkeypatch):
    """Two runs a job watches ("a", "b"), the calls made to the job side, a clock at 100 s."""
    clock, calls = Clock(), {"targets": 0, "ask": []}
    runs = {"b": SimpleNamespace(name="B"), "a": SimpleNamespace(name="A")}

    def targets(logdir):
        assert logdir == "/logs"
        calls["targets"] += 1
        return dict(runs)
    monkeypatch.setattr(capture_routes, "time", clock)
    monkeypatch.setattr(capture_routes, "targets", targets)
    monkeypatch.setattr(capture_routes, "summary", lambda target, now: {"job": target.name, "now": now})
    monkeypatch.setattr(capture_routes, "run_state", lambda target: {"state": target.name})
    routes = CaptureRoutes("/logs", True)
    return routes, clock, calls, runs


def call(routes, route, method="GET", body=None, headers=HEADERS, content_type="application/json", **args):
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    resp = Client(routes.apps()[route]).open("/", method=method, data=data, headers=headers,
                                             content_type=content_type, query_string=args,
                                             environ_base={"REMOTE_ADDR": "10.0.0.5"})
    return resp.status_code, json.loads(resp.get_data() or b"null"), resp.headers


def test_on_by_the_flag_or_the_environment(monkeypatch):
    monkeypatch.delenv("CANNING_CAPTURE", raising=False)
    assert capture_enabled(SimpleNamespace(canning_capture=True)) is True
    assert capture_enabled(SimpleNamespace(canning_capture="yes")) is False  # the flag itself, not a word
    assert capture_enabled(None) is False
    for word, on in (("1", True), (" ON ", True), ("true", True), ("Yes", True), ("0", False), ("", False),
                     ("enabled", False)):
        monkeypatch.setenv("CANNING_CAPTURE", word)
        assert capture_enabled(None) is on, word


def test_off_every_route_refuses_saying_how_to_turn_it_on_and_methods_come_first():
    routes = CaptureRoutes("/logs", False)
    for route, method in (("/capture", "GET"), ("/capture_state", "GET"), ("/capture_request", "POST")):
        assert call(routes, route, method)[:2] == (403, {"error": OFF, "enabled": False})
    code, body, headers = call(routes, "/capture_request", "GET")
    assert (code, body, headers["Allow"]) == (405, {"error": "method GET not allowed here: only POST",
                                                    "enabled": False}, "POST")
    code, body, headers = call(routes, "/capture", "POST")
    assert (code, body["error"], headers["Allow"]) == (405, "method POST not allowed here: only GET, HEAD",
                                                       "GET, HEAD")


def test_the_list_of_runs_with_the_limits(job):
    routes, clock, calls, runs = job
    code, body, _ = call(routes, "/capture")
    assert (code, body) == (200, {"enabled": True, "runs": [{"run": "a", "job": "A", "now": 5_000_000_000},
                                                            {"run": "b", "job": "B", "now": 5_000_000_000}],
                                  "limits": {"max_steps": 50, "activities": ["CPU", "CUDA", "NPU"],
                                             "options": ["record_shapes", "profile_memory", "with_stack",
                                                         "with_flops", "with_modules"]}})
    assert call(CaptureRoutes(None, True), "/capture")[1]["runs"] == []  # no logdir: nothing listed
    assert calls["targets"] == 1


def test_the_listing_is_kept_three_seconds_and_an_unknown_run_lists_again_after_half_a_second(job):
    routes, clock, calls, runs = job
    call(routes, "/capture")
    clock.now = 102.9
    call(routes, "/capture")
    assert calls["targets"] == 1
    clock.now = 103.0
    call(routes, "/capture")
    assert calls["targets"] == 2
    runs["c"] = SimpleNamespace(name="C")  # a run that just appeared
    clock.now = 103.4
    assert call(routes, "/capture_state", run="c")[:2] == (404, {
        "error": "no job watches run 'c' for a capture request (ps.on_demand())", "enabled": True})
    assert calls["targets"] == 2  # listed 0.4 s ago: not again
    clock.now = 104.0
    assert call(routes, "/capture_state", run="a")[0] == 200
    assert calls["targets"] == 2  # a run the listing has: not listed afresh (the listing is 1 s old)
    clock.now = 104.2  # 1.2 s after the listing, more than half a second: listed afresh
    assert call(routes, "/capture_state", run="c")[:2] == (200, {"run": "c", "state": "C"})
    assert calls["targets"] == 3


def test_a_runs_state_and_its_unusable_file(job, monkeypatch):
    routes, clock, calls, runs = job
    assert call(routes, "/capture_state", run="a")[:2] == (200, {"run": "a", "state": "A"})
    assert call(routes, "/capture_state", "HEAD", run="a")[0] == 200
    assert call(routes, "/capture_state")[:2] == (404, {  # no run named: the run ''
        "error": "no job watches run '' for a capture request (ps.on_demand())", "enabled": True})

    def unusable(target):
        raise cr.UnusableFile("capture/request.json", "not JSON")
    monkeypatch.setattr(capture_routes, "run_state", unusable)
    assert call(routes, "/capture_state", run="a")[:2] == (422, {
        "error": "a/capture/request.json: not JSON", "file": "a/capture/request.json", "enabled": True})
    runs["."] = SimpleNamespace(name="root")
    clock.now = 200.0
    assert call(routes, "/capture_state", run=".")[:2] == (422, {
        "error": "capture/request.json: not JSON", "file": "capture/request.json", "enabled": True})


def test_a_request_is_written_once_per_run_every_two_seconds(job, monkeypatch, caplog):
    routes, clock, calls, runs = job

    def ask(target, body, writer):
        calls["ask"].append((target.name, dict(body), writer))
        return {"id": "req1", "start_step": 3, "end_step": 5}
    monkeypatch.setattr(capture_routes, "ask", ask)
    with caplog.at_level(logging.WARNING, logger="canning_tb.plugin"):
        code, body, _ = call(routes, "/capture_request", "POST", {"run": "a", "steps": 3, "ranks": [0, 1]})
    assert (code, body) == (201, {"run": "a", "request": {"id": "req1", "start_step": 3, "end_step": 5}})
    assert calls["ask"] == [("A", {"steps": 3, "ranks": [0, 1]}, "tensorboard")]
    assert caplog.records[-1].getMessage() == "canning: capture req1 of run 'a' asked from 10.0.0.5: steps 3-5, ranks [0, 1]"
    clock.now = 101.9
    code, body, _ = call(routes, "/capture_request", "POST", {"run": "a"})
    assert (code, body) == (429, {"error": "run 'a' was asked a moment ago; wait 2 s between requests",
                                  "enabled": True})
    with caplog.at_level(logging.WARNING, logger="canning_tb.plugin"):
        assert call(routes, "/capture_request", "POST", {"run": "b"})[0] == 201  # another run: its own limit
    assert caplog.records[-1].getMessage().endswith('ranks "all"')  # no ranks named: all of them
    clock.now = 102.0
    assert call(routes, "/capture_request", "POST", {"run": "a"})[0] == 201
    assert len(calls["ask"]) == 3


@pytest.mark.parametrize("error, code", [(cr.JobNotReady("no rank is watching"), 409),
                                         (cr.RequestError("steps must be 1 to 50"), 400),
                                         (CaptureBusy("a capture is in progress"), 409)])
def test_the_jobs_refusals_and_a_refused_request_does_not_count_for_the_rate(job, monkeypatch, error, code):
    routes, clock, calls, runs = job

    def ask(target, body, writer):
        raise error
    monkeypatch.setattr(capture_routes, "ask", ask)
    assert call(routes, "/capture_request", "POST", {"run": "a"})[:2] == (code, {"error": str(error), "enabled": True})
    monkeypatch.setattr(capture_routes, "ask", lambda target, body, writer: {"id": "x", "start_step": 1,
                                                                            "end_step": 1})
    assert call(routes, "/capture_request", "POST", {"run": "a"})[0] == 201


def test_the_hosts_given_are_the_ones_taken(job, monkeypatch):
    routes, clock, calls, runs = job
    monkeypatch.setattr(capture_routes, "ask", lambda target, body, writer: {"id": "x", "start_step": 1,
                                                                            "end_step": 1})
    named = CaptureRoutes("/logs", True, frozenset({"box.example"}))
    box = {"X-Canning-Capture": "1", "Host": "box.example:6006"}
    assert call(named, "/capture_request", "POST", {"run": "a"}, headers=box)[0] == 201
    assert call(named, "/capture_request", "POST", {"run": "b"})[0] == 403  # localhost is not among them
    assert call(routes, "/capture_request", "POST", {"run": "a"}, headers=box)[0] == 403  # none given: loopback


def test_what_a_request_must_be(job, monkeypatch):
    routes, clock, calls, runs = job
    monkeypatch.setattr(capture_routes, "ask", lambda target, body, writer: {"id": "x", "start_step": 1,
                                                                            "end_step": 1})
    code, body, _ = call(routes, "/capture_request", "POST", {"run": "a"}, headers={"X-Canning-Capture": "1",
                                                                                   "Host": "evil.example:80"})
    assert (code, body["error"]) == (403, "a capture request must be addressed to the address TensorBoard serves, "
                                          "not Host 'evil.example:80' (start TensorBoard with --host NAME, or name "
                                          "it in CANNING_CAPTURE_HOSTS)")
    far = "h" * 100
    code, body, _ = call(routes, "/capture_request", "POST", {"run": "a"}, headers={"X-Canning-Capture": "1", "Host": far})
    assert (code, body["error"]) == (403, f"a capture request must be addressed to the address TensorBoard serves, "
                                          f"not Host {far[:80]!r} (start TensorBoard with --host NAME, or name "
                                          f"it in CANNING_CAPTURE_HOSTS)")
    environ = EnvironBuilder(method="POST", data=b'{"run": "a"}', content_type="application/json",
                             headers={"X-Canning-Capture": "1"}).get_environ()
    del environ["HTTP_HOST"]
    body, status, _ = run_wsgi_app(routes.apps()["/capture_request"], environ, buffered=True)
    assert status.startswith("403") and "not Host '' (start" in json.loads(b"".join(body))["error"]
    needs = "a capture request needs a JSON body and the header X-Canning-Capture: 1"
    assert call(routes, "/capture_request", "POST", {"run": "a"}, headers={"Host": "localhost"})[:2] == (
        403, {"error": needs, "enabled": True})
    assert call(routes, "/capture_request", "POST", {"run": "a"}, headers={**HEADERS, "X-Canning-Capture": "yes"})[
        1]["error"] == needs
    assert call(routes, "/capture_request", "POST", {"run": "a"}, content_type="text/plain")[1]["error"] == needs
    big = json.dumps({"run": "a", "pad": "x" * 5000}).encode()
    code, body, _ = call(routes, "/capture_request", "POST", big)
    assert (code, body["error"]) == (413, "the request body is 4097 bytes, over the limit of 4096")
    edge = json.dumps({"run": "a", "pad": ""}).encode()
    edge = edge[:-2] + b"x" * (4096 - len(edge)) + b'"}'
    assert len(edge) == 4096 and call(routes, "/capture_request", "POST", edge)[0] == 201  # at the limit: taken
    assert call(routes, "/capture_request", "POST", b"{nope")[0] == 400
    assert call(routes, "/capture_request", "POST", b"{" + b" " * 4095)[0] == 400  # 4096 bytes, not JSON: not too big
    shape = "the body must be a JSON object naming the run: {\"run\": ..., \"steps\": ...}"
    for bad in ([{"run": "a"}], {"steps": 3}, {"run": 5}):
        assert call(routes, "/capture_request", "POST", bad)[:2] == (400, {"error": shape, "enabled": True})
    assert call(routes, "/capture_request", "POST", {"run": "zz"})[0] == 404


def test_the_loader_defines_the_capture_flag_off_by_default_and_builds_the_plugin(tmp_path):
    import argparse

    from tensorboard.plugins import base_plugin

    from canning_tb.plugin.loader import CanningLoader
    from canning_tb.plugin.plugin import CanningPlugin
    parser = argparse.ArgumentParser()
    CanningLoader().define_flags(parser)
    assert parser.parse_args([]).canning_capture is False
    assert parser.parse_args(["--canning_capture"]).canning_capture is True
    assert "CANNING_CAPTURE=1" in " ".join(parser.format_help().split())
    built = CanningLoader().load(base_plugin.TBContext(logdir=str(tmp_path)))
    assert isinstance(built, CanningPlugin) and built.scanner.wait_first(10)
    assert built.capture.logdir == str(tmp_path)  # the context's logdir
    assert built.scanner.interval == 5.0  # the logdir is listed again at most every 5 s
