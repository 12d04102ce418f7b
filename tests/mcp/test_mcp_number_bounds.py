"""Every integer argument of every MCP tool is held to the bound the plugin's routes hold theirs to
(queries/bounds.py INT_BOUND; a route answers 400 past it): 10**40, -10**40 and 1e40 are a tool error that
names the argument, never an OverflowError from numpy, and the server goes on (NaN is no JSON number: the
SDK's client sends it as null, an omitted argument). The tools and their
integer arguments are read from the server's own tool list, so a tool added later is checked too. The
server runs in this process (the SDK's client connected to it in memory) on one real window (DLRM rank 0),
digested and indexed before the numbers are tried, so that each call would reach the selection."""
import math
import shutil
import time

import pytest

from _mcp import Session
from conftest import fixture_path

from canning_tb.mcp.server import build
from canning_tb.queries.bounds import INT_BOUND

TRACE = "worker0_step_12.1694128201545.pt.trace.json.gz"
BAD = [10 ** 40, -10 ** 40, 1e40, -1e40]


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    root = tmp_path_factory.mktemp("bounds")
    (root / "log" / "dlrm").mkdir(parents=True)
    shutil.copy(fixture_path("param", "dlrm_8ranks", TRACE), root / "log" / "dlrm" / TRACE)
    app, _ = build(str(root / "log"), str(root / "cache"), digest_wait_s=60)
    s = Session(app)
    try:
        (window,) = s.answer("list_windows", {"run": "dlrm"})["windows"]
        where = {"run": "dlrm", "worker": window["worker"], "window": window["window"]}
        deadline = time.monotonic() + 120
        while s.answer("timeline", where).get("status") in ("digesting", "indexing"):  # built, as a user waits
            assert time.monotonic() < deadline
            time.sleep(0.3)
        yield s, where
    finally:
        s.close()


def _integers(schema: dict) -> list[str]:
    """The arguments of a tool's input schema that take an integer (alone or with null)."""
    def integer(prop):
        return prop.get("type") == "integer" or any(p.get("type") == "integer" for p in prop.get("anyOf", []))
    return sorted(name for name, prop in schema["properties"].items() if integer(prop))


def _arguments(tool, where: dict) -> dict:
    """The tool's required arguments, for the one window (a device memory names; the run as its own baseline)."""
    known = {**where, "base_run": "dlrm", "device": "CPU", "window_index": 0, "sql": "SELECT 1"}
    return {name: known[name] for name in tool.input_schema.get("required", [])}


def test_every_integer_argument_is_bounded_in_the_schema_as_the_routes_bound_theirs(session):
    s, _ = session
    tools = s.run(lambda client: client.list_tools()).tools
    checked = {}
    for tool in tools:
        for name in _integers(tool.input_schema):
            prop = tool.input_schema["properties"][name]
            bounds = next((p for p in [prop, *prop.get("anyOf", [])] if p.get("type") == "integer"), prop)
            assert -INT_BOUND <= bounds.get("minimum", -math.inf) and bounds.get("maximum", math.inf) <= INT_BOUND, \
                (tool.name, name, prop)
            checked.setdefault(tool.name, []).append(name)
    assert {"timeline", "memory_allocations", "cross_rank"} <= set(checked), checked  # the ones found unbounded


@pytest.mark.parametrize("value", BAD, ids=["1e40_int", "-1e40_int", "1e40", "-1e40"])
def test_each_tool_refuses_out_of_range_numbers_and_the_server_goes_on(session, value):
    s, where = session
    tools = s.run(lambda client: client.list_tools()).tools
    tried = 0
    for tool in tools:
        for name in _integers(tool.input_schema):
            failed, text, _ = s.call(tool.name, {**_arguments(tool, where), name: value})
            assert failed and name in text and "OverflowError" not in text, (tool.name, name, value, text)
            tried += 1
    assert tried >= 6
    assert s.answer("timeline", {**where, "start_ns": 0, "end_ns": INT_BOUND})["rows"]  # the bound itself is taken
    assert s.answer("list_runs")["total"] == 1
