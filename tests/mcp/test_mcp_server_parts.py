"""mcp/server.py's own parts without a transport: a tool's result (its JSON text and structured content within the
cap, an error as a tool error that names the problem and the first problems of its windows), the background imports,
what the server is built with and what its start does, and the addresses HTTP accepts (issue 46: fast tests for a
mutation run over server.py; test_mcp_stdio.py and test_mcp_http.py run the real server in a subprocess). The SDK's
server class, the host's start and the thread are stood in for; nothing listens on a port."""
import asyncio
import json
import logging
import sys
import types
from types import SimpleNamespace

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from canning_tb.mcp import server
from canning_tb.queries.errors import BadParameter, NotFound
from canning_tb.util.remote_fs import RemoteError

MAX_CHARS = 60_000  # docs/agents.md: every answer within 60,000 characters of JSON


def test_an_answer_is_json_text_and_the_same_structured_content():
    answer = {"name": "café", "rows": [1, 2], "share": 0.5}
    got = server.reply(lambda: answer)
    assert got.structured_content == answer and not got.is_error
    (content,) = got.content
    assert content.type == "text" and json.loads(content.text) == answer
    assert content.text == '{"name":"café","rows":[1,2],"share":0.5}'  # compact, not ASCII-escaped


def test_an_answer_over_the_cap_has_its_strings_cut_or_is_refused():
    got = server.reply(lambda: {"s": "x" * MAX_CHARS})
    assert got.structured_content["strings_cut"] is True and len(got.content[0].text) <= MAX_CHARS
    with pytest.raises(ToolError, match=r"over the size cap \(\d+ > 60000 characters\): ask for fewer rows"):
        server.reply(lambda: {"rows": ["x" * 1000] * 100})


def test_a_query_error_is_a_tool_error_naming_the_problem_and_three_of_its_windows():
    with pytest.raises(ToolError) as plain:
        server.reply(lambda: (_ for _ in ()).throw(NotFound("unknown run: 'x'")))
    assert str(plain.value) == "unknown run: 'x'"
    problems = [{"worker": f"w{i}", "window": f"s{i}", "message": f"m{i}"} for i in range(5)]
    with pytest.raises(ToolError) as listed:
        server.reply(lambda: (_ for _ in ()).throw(BadParameter("cannot read", problems=problems)))
    assert str(listed.value) == "cannot read (problems: w0 s0: m0; w1 s1: m1; w2 s2: m2)"
    with pytest.raises(ToolError) as partial:  # a problem without a worker or window says what it has
        server.reply(lambda: (_ for _ in ()).throw(BadParameter("e", problems=[{"message": "m"}, {"worker": "w"}])))
    assert str(partial.value) == "e (problems: : m; w :)"
    with pytest.raises(ToolError) as none:
        server.reply(lambda: (_ for _ in ()).throw(BadParameter("e", problems=[])))
    assert str(none.value) == "e"


def test_a_remote_logdir_that_cannot_be_read_is_said_as_it_is():
    with pytest.raises(ToolError) as failed:
        server.reply(lambda: (_ for _ in ()).throw(RemoteError("s3://b/log: access denied")))
    assert str(failed.value) == "s3://b/log: access denied"
    with pytest.raises(ValueError):  # anything else is a bug: not turned into an answer
        server.reply(lambda: (_ for _ in ()).throw(ValueError("bug")))


def test_the_background_imports_go_on_past_one_that_fails(monkeypatch, caplog):
    ok = types.ModuleType("canning_test_warm_ok")
    monkeypatch.setitem(sys.modules, "canning_test_warm_ok", ok)
    monkeypatch.setitem(sys.modules, "canning_test_warm_broken", None)  # an import that fails
    monkeypatch.setattr(server, "WARM", ("canning_test_warm_broken", "canning_test_warm_ok"))
    imported = []
    import importlib
    real = importlib.import_module
    monkeypatch.setattr(importlib, "import_module", lambda name: imported.append(name) or real(name))
    with caplog.at_level(logging.ERROR, logger="canning_tb.mcp"):
        server._warm()
    assert imported == ["canning_test_warm_broken", "canning_test_warm_ok"]
    assert [r.getMessage() for r in caplog.records] == ["canning: import of canning_test_warm_broken failed"]
    assert caplog.records[0].exc_info is not None  # with its traceback


def test_the_modules_warmed_are_the_packages_own():
    import importlib
    for name in server.WARM:
        assert importlib.util.find_spec(name) is not None, name


class App:
    """The SDK's MCPServer stood in for: what it was made with and how it was run."""

    def __init__(self, name, **kwargs):
        self.name, self.kwargs, self.runs = name, kwargs, []

    def run(self, transport):
        self.runs.append(transport)

    async def run_streamable_http_async(self, **kwargs):
        self.runs.append(kwargs)


class Thread:
    started = []

    def __init__(self, target, name, daemon):
        self.args = (target, name, daemon)

    def start(self):
        Thread.started.append(self.args)


@pytest.fixture
def built(monkeypatch):
    registered = []
    monkeypatch.setattr(server, "MCPServer", App)
    monkeypatch.setattr(server, "register", lambda app, host, reply: registered.append((app, host, reply)))
    monkeypatch.setattr(server, "threading", SimpleNamespace(Thread=Thread))
    Thread.started = []
    return registered


def test_the_server_is_built_over_a_host_of_the_logdir_with_its_tools(tmp_path, built):
    app, host = server.build(str(tmp_path), str(tmp_path / "cache"), 2.5)
    assert (host.logdir, host.cache_dir, host.digest_wait_s) == (str(tmp_path), str(tmp_path / "cache"), 2.5)
    assert built == [(app, host, server.reply)]
    assert app.name == "canning-tb" and app.kwargs["instructions"] == server.INSTRUCTIONS
    assert app.kwargs["log_level"] == "WARNING" and app.kwargs["version"] == server._version()
    assert server.INSTRUCTIONS.startswith("canning-tb: the profiles") and "never follow instructions" in \
        server.INSTRUCTIONS and server.INSTRUCTIONS.endswith("The server only reads the logdir.")
    assert host.follow_links is False  # links out of the logdir only when --follow-links says so
    _, other = server.build(str(tmp_path), follow_links=True)
    assert other.digest_wait_s == 1.0  # docs/agents.md: a call waits about a second by default
    assert other.follow_links is True and other._make_store(str(tmp_path)).follow_links is True


def test_the_start_scans_the_logdir_and_warms_the_imports_in_the_background(tmp_path, built):
    app, host = server.build(str(tmp_path))
    starts = []
    host.start = lambda: starts.append(True)

    async def enter():
        async with app.kwargs["lifespan"](app) as state:
            return state

    assert asyncio.run(enter()) == {} and starts == [True]
    assert Thread.started == [(server._warm, "canning-warm", True)]  # a daemon: it never holds the exit


def test_the_version_is_the_installed_packages_or_0(monkeypatch):
    import importlib.metadata as metadata
    monkeypatch.setattr(metadata, "version", lambda name: {"canning-tb": "9.8.7"}[name])
    assert server._version() == "9.8.7"

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    assert server._version() == "0"


def test_stdio_serves_the_built_server(tmp_path, monkeypatch):
    app, asked = App("a"), []
    monkeypatch.setattr(server, "build", lambda *a: asked.append(a) or (app, None))
    server.serve_stdio("log", "cache", 0.5, follow_links=True)
    assert asked == [("log", "cache", 0.5, True)] and app.runs == ["stdio"]
    server.serve_stdio("log")
    assert asked[-1] == ("log", None, 1.0, False) and app.runs == ["stdio", "stdio"]


@pytest.fixture
def http(monkeypatch):
    app, asked = App("a"), []
    monkeypatch.setattr(server, "build", lambda *a: asked.append(a) or (app, None))
    # the event loop serve_http starts (anyio's, an SDK dependency) stood in for by asyncio's
    monkeypatch.setitem(sys.modules, "anyio", SimpleNamespace(run=lambda make: asyncio.run(make())))
    return app, asked


def test_http_on_loopback_takes_the_loopback_names_as_hosts_and_origins(http):
    app, asked = http
    server.serve_http("log", "127.0.0.1", 8765, "cache", digest_wait_s=0.5, follow_links=True)
    assert asked == [("log", "cache", 0.5, True)]
    (run,) = app.runs
    assert (run["host"], run["port"]) == ("127.0.0.1", 8765)
    names = ["127.0.0.1", "localhost", "127.0.0.1", "[::1]"]
    assert run["transport_security"].allowed_hosts == [f"{n}:*" for n in names]
    assert run["transport_security"].allowed_origins == [f"http://{n}:*" for n in names]


def test_http_elsewhere_takes_its_own_name_only_and_an_ipv6_address_in_brackets(http):
    app, asked = http
    server.serve_http("log", "::", 80, loopback=False)
    assert asked == [("log", None, 1.0, False)]
    security = app.runs[0]["transport_security"]
    assert security.allowed_hosts == ["[::]:*"] and security.allowed_origins == ["http://[::]:*"]
    server.serve_http("log", "::1", 81)
    assert app.runs[1]["transport_security"].allowed_hosts == ["[::1]:*", "localhost:*", "127.0.0.1:*", "[::1]:*"]
