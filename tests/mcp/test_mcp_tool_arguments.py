"""mcp/tools.py: each tool's arguments reach its selection in the right places, unchanged, with the defaults and
bounds docs/agents.md states (a limit past its range refused before any selection runs), on the SDK's own server
with no logdir behind it (issue 46: fast tests for a mutation run over tools.py; the stdio / HTTP tests go through a
real server and a digest)."""
import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from canning_tb.mcp import (comm_tools, compare_tool, efficiency, listing, memory_tools, path_tool, sql_tools,
                            timeline_tool, tools, window_tools)

HOST = object()
WIN = {"run": "r", "worker": "w", "window": "7"}
BOUND = 2 ** 62  # queries/bounds.py's INT_BOUND: every front door's limit on an integer
# tool: (module, function, the least arguments, what the function is given then (after the host))
DEFAULTS = {
    "list_runs": (listing, "list_runs", {}, (None, 100)),
    "list_windows": (listing, "list_windows", {"run": "r"}, ("r", None, None, 100)),
    "overview": (window_tools, "overview", WIN, ("r", "w", "7")),
    "operators": (window_tools, "operators", WIN, ("r", "w", "7", "name", None, None, "", None, 25)),
    "kernels": (window_tools, "kernels", WIN, ("r", "w", "7", "name", None, None, "", None, 25)),
    "findings": (window_tools, "findings", WIN, ("r", "w", "7", None, 5)),
    "memory": (memory_tools, "memory", WIN, ("r", "w", "7", 200)),
    "memory_allocations": (memory_tools, "memory_allocations", {**WIN, "device": "cuda:0"},
                           ("r", "w", "7", "cuda:0", None, None, None, 100)),
    "memory_snapshot": (memory_tools, "memory_snapshot", WIN, ("r", "w", "7", 0, 5)),
    "memory_snapshot_ranks": (memory_tools, "memory_snapshot_ranks", {"run": "r"}, ("r", 0, 100)),
    "communication": (comm_tools, "communication", WIN, ("r", "w", "7", "summary", None, 50)),
    "cross_rank": (comm_tools, "cross_rank", {"run": "r"}, ("r", None, "summary", None, 50, None, None)),
    "compare": (compare_tool, "compare", {"run": "r"},
                ("r", None, None, None, None, None, "name", "summary", None, 25, None, "code")),
    "timeline": (timeline_tool, "timeline", WIN, ("r", "w", "7", None, None, None, "all", 50)),
    "mfu": (efficiency, "mfu", WIN, ("r", "w", "7")),
    "roofline": (efficiency, "roofline", WIN, ("r", "w", "7", "all", None, 50)),
    "critical_path": (path_tool, "critical_path", {"run": "r"}, ("r", None, None, None, "window", None, None, 50)),
    "query": (sql_tools, "query", {"sql": "SELECT 1"}, ("SELECT 1", None, 100)),
    "schema": (sql_tools, "schema", {}, (None,)),
}
# tool: (every argument given, what the function is given then)
GIVEN = {
    "list_runs": ({"cursor": "c", "limit": 500}, ("c", 500)),
    "list_windows": ({"run": "r", "worker": "w", "cursor": "c", "limit": 3}, ("r", "w", "c", 3)),
    "operators": ({**WIN, "group_by": "stack", "sort": "calls", "order": "asc", "search": "mm", "cursor": "c",
                   "limit": 200}, ("r", "w", "7", "stack", "calls", "asc", "mm", "c", 200)),
    "kernels": ({**WIN, "group_by": "op", "sort": "calls", "order": "desc", "search": "gemm", "cursor": "c",
                 "limit": 1}, ("r", "w", "7", "op", "calls", "desc", "gemm", "c", 1)),
    "findings": ({**WIN, "cursor": "c", "limit": 50}, ("r", "w", "7", "c", 50)),
    "memory": ({**WIN, "points": 10}, ("r", "w", "7", 10)),
    "memory_allocations": ({**WIN, "device": "npu:0", "start_ns": -5, "end_ns": BOUND, "cursor": "c", "limit": 1000},
                           ("r", "w", "7", "npu:0", -5, BOUND, "c", 1000)),
    "memory_snapshot": ({**WIN, "index": 1000, "limit": 50}, ("r", "w", "7", 1000, 50)),
    "memory_snapshot_ranks": ({"run": "r", "window_index": 3, "limit": 1000}, ("r", 3, 1000)),
    "communication": ({**WIN, "section": "matrix", "cursor": "c", "limit": 500}, ("r", "w", "7", "matrix", "c", 500)),
    "cross_rank": ({"run": "r", "window_index": 2, "section": "stages", "worker": "w", "window": "7", "cursor": "c",
                    "limit": 7}, ("r", 2, "stages", "c", 7, "w", "7")),
    "compare": ({"run": "r", "base_run": "b", "worker": "w", "window": "7", "base_worker": "bw", "base_window": "8",
                 "group_by": "shape", "section": "kernels", "cursor": "c", "limit": 9, "fail_on_regression_pct": 2.5,
                 "gate_on": "total"}, ("r", "b", "w", "7", "bw", "8", "shape", "kernels", "c", 9, 2.5, "total")),
    "timeline": ({**WIN, "start_ns": 1, "end_ns": 2, "step": 3, "tracks": "python", "limit": 4},
                 ("r", "w", "7", 1, 2, 3, "python", 4)),
    "roofline": ({**WIN, "kind": "kernel", "cursor": "c", "limit": 500}, ("r", "w", "7", "kernel", "c", 500)),
    "critical_path": ({"run": "r", "scope": "ranks", "worker": "w", "window": "7", "window_index": 1, "step": 6,
                       "cursor": "c", "limit": 200}, ("r", "w", "7", 1, "ranks", 6, "c", 200)),
    "query": ({"sql": "SELECT 2", "run": "r", "max_rows": 1000}, ("SELECT 2", "r", 1000)),
    "schema": ({"table": "steps"}, ("steps",)),
}
# tool: (argument, lowest, highest) as docs/agents.md states them
LIMITS = [("list_runs", "limit", 1, 500), ("list_windows", "limit", 1, 500), ("operators", "limit", 1, 200),
          ("kernels", "limit", 1, 200), ("findings", "limit", 1, 50), ("memory", "points", 10, 1000),
          ("memory_allocations", "limit", 1, 1000), ("memory_snapshot", "limit", 1, 50),
          ("memory_snapshot", "index", 0, 1000), ("memory_snapshot_ranks", "limit", 1, 1000),
          ("communication", "limit", 1, 500), ("cross_rank", "limit", 1, 500), ("compare", "limit", 1, 200),
          ("timeline", "limit", 1, 50), ("roofline", "limit", 1, 500), ("critical_path", "limit", 1, 200),
          ("query", "max_rows", 1, 1000), ("memory_snapshot_ranks", "window_index", 0, BOUND),
          ("cross_rank", "window_index", 0, BOUND), ("critical_path", "window_index", 0, BOUND),
          ("timeline", "start_ns", -BOUND, BOUND), ("timeline", "end_ns", -BOUND, BOUND),
          ("timeline", "step", -BOUND, BOUND), ("critical_path", "step", -BOUND, BOUND),
          ("memory_allocations", "start_ns", -BOUND, BOUND), ("memory_allocations", "end_ns", -BOUND, BOUND),
          ("compare", "fail_on_regression_pct", 0, 1e6)]


def _run(coro):
    """The coroutine on an event loop of its own, in a thread: the browser tests' Playwright, run earlier in the
    same worker process, may hold this thread's loop (asyncio.run would refuse)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


@pytest.fixture
def app(monkeypatch):
    """The tools on an SDK server; each selection replaced by one that says what it was given."""
    calls = []
    for module, name, _, _ in DEFAULTS.values():
        monkeypatch.setattr(module, name, lambda *a, _name=name: calls.append((_name, a)) or {"ok": _name})
    server = MCPServer("t", log_level="WARNING")
    tools.register(server, HOST, lambda make: make())
    server.calls = calls
    return server


def call(app, tool: str, args: dict):
    app.calls.clear()
    _run(app.call_tool(tool, args))
    (got,) = app.calls
    return got


def test_every_tool_is_registered_read_only_with_the_cap_said():
    added = []
    tools.register(type("App", (), {"add_tool": lambda self, fn, **k: added.append((fn.__name__, k))})(), HOST, None)
    assert sorted(name for name, _ in added) == sorted(DEFAULTS)
    for name, kw in added:
        assert kw["description"].endswith(tools.COMMON) and len(kw["description"]) > len(tools.COMMON) + 40, name
        hints = kw["annotations"]
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint) == (
            True, False, True, False), name
    assert "at most 60,000 characters of JSON" in tools.COMMON


# One server per test, every tool in the loop: building the server is most of a test's time here.
def test_the_least_arguments_reach_the_selection_with_their_defaults(app):
    for tool, (_, name, args, expected) in DEFAULTS.items():
        assert call(app, tool, args) == (name, (HOST, *expected)), tool


def test_every_argument_reaches_the_selection_in_its_place(app):
    for tool, (args, expected) in GIVEN.items():
        assert call(app, tool, args) == (DEFAULTS[tool][1], (HOST, *expected)), tool


def test_numbers_are_taken_at_both_ends_of_their_range_and_refused_past_them(app):
    for tool, arg, low, high in LIMITS:
        least = DEFAULTS[tool][2]
        for value in (low, high):
            call(app, tool, {**least, arg: value})
        step = 1 if isinstance(low, int) and isinstance(high, int) else 0.5
        for value in (low - step, high + step):
            app.calls.clear()
            with pytest.raises(ToolError, match=arg):
                _run(app.call_tool(tool, {**least, arg: value}))
            assert app.calls == [], (tool, arg, value)


CHOICES = [("operators", "group_by", ("name", "shape", "stack"), "op"),
           ("kernels", "group_by", ("name", "op"), "shape"),
           ("timeline", "tracks", ("all", "device", "host", "python"), "gpu"),
           ("critical_path", "scope", ("window", "ranks"), "run"),
           ("roofline", "kind", ("all", "operator", "kernel"), "ops"),
           ("compare", "gate_on", ("code", "total"), "both"), ("operators", "order", ("asc", "desc"), "up"),
           ("communication", "section", ("summary", "steps", "collectives", "calls", "links", "groups", "ranks",
                                         "matrix"), "links2"),
           ("cross_rank", "section", ("summary", "ranks", "rank_figures", "stages", "collectives", "groups",
                                      "distributions", "findings", "matrix"), "steps")]


def test_a_choice_outside_its_list_is_refused(app):
    for tool, arg, allowed, other in CHOICES:
        least = DEFAULTS[tool][2]
        for value in allowed:
            call(app, tool, {**least, arg: value})
        with pytest.raises(ToolError, match=arg):
            _run(app.call_tool(tool, {**least, arg: other}))


def test_a_query_of_more_than_20000_characters_is_refused(app):
    call(app, "query", {"sql": "x" * 20_000})
    with pytest.raises(ToolError, match="sql"):
        _run(app.call_tool("query", {"sql": "x" * 20_001}))


def test_a_snapshot_ranks_window_index_given_as_null_is_position_0(app):
    assert call(app, "memory_snapshot_ranks", {"run": "r", "window_index": None}) == (
        "memory_snapshot_ranks", (HOST, "r", 0, 100))


def test_bounded_arguments_say_their_bounds_in_their_description(app):
    """An agent reads the schema's descriptions: a limit says its most rows, a number what it is."""
    described = 0
    for tool in _run(app.list_tools()):
        for name, prop in tool.input_schema["properties"].items():
            if name == "limit":
                assert f"rows per page, at most {prop['maximum']} " in prop["description"], tool.name
                described += 1
            elif name in ("start_ns", "end_ns", "step", "window_index"):
                assert len(prop.get("description", "")) > 10, (tool.name, name)
                described += 1
    assert described == 14 + 9  # 14 tools page with a limit (query has max_rows); 9 numbers
