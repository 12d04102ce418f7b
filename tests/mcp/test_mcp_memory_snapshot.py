"""The memory_snapshot tool, called through the MCP SDK's own in-process server on a logdir holding a real Ascend
snapshot: its figures are the plugin route's (queries/memory_snapshot.py), its stacks cut and its answer bounded."""
import asyncio
import json
import shutil
from concurrent.futures import ThreadPoolExecutor

from canning_tb.mcp.server import build
from canning_tb.queries.memory_snapshot import snapshot_impl
from canning_tb.store import Store
from conftest import fixture_path

SNAP = "snapshot_with_empty_cache.pkl"


def call(app, name, args):
    with ThreadPoolExecutor(1) as pool:  # a loop of its own (the browser tests' Playwright may hold this one)
        return pool.submit(asyncio.run, app.call_tool(name, args)).result()


def test_the_tool_answers_the_routes_figures(tmp_path):
    (tmp_path / "job").mkdir()
    shutil.copy(fixture_path("memory_snapshot", SNAP), tmp_path / "job" / "rank0.pickle")
    app, _ = build(str(tmp_path), str(tmp_path / "cache"))
    result = call(app, "memory_snapshot", {"run": "job", "worker": "rank0", "window": "default", "limit": 3})
    content = result[0] if isinstance(result, tuple) else result.content
    text = content[0].text
    assert len(text) <= 60_000
    got = json.loads(text)
    want = snapshot_impl(Store(str(tmp_path)), "job", "rank0", "default", 0, 3)
    assert got["devices"][0]["peak"]["requested"] == want["devices"][0]["peak"]["requested"]
    assert got["devices"][0]["at_snapshot"] == want["devices"][0]["at_snapshot"]
    assert [g["bytes"] for g in got["devices"][0]["peak"]["by_stack"]] == [
        g["bytes"] for g in want["devices"][0]["peak"]["by_stack"]]
    assert all(len(b["stack"]) <= 8 for b in got["devices"][0]["peak"]["top_blocks"])
    assert any("stack_more" in b for b in got["devices"][0]["peak"]["by_stack"])


def test_the_ranks_tool_answers_the_routes_rows(tmp_path):
    (tmp_path / "job").mkdir()
    shutil.copy(fixture_path("memory_snapshot", SNAP), tmp_path / "job" / "rank0.pickle")
    shutil.copy(fixture_path("memory_snapshot", "snapshot_1768383987920985470.pkl"), tmp_path / "job" / "rank1.pickle")
    app, _ = build(str(tmp_path), str(tmp_path / "cache"))
    result = call(app, "memory_snapshot_ranks", {"run": "job", "window_index": 0, "limit": 1})
    content = result[0] if isinstance(result, tuple) else result.content
    got = json.loads(content[0].text)
    from canning_tb.queries.memory_snapshot import snapshot_ranks_impl
    want = snapshot_ranks_impl(Store(str(tmp_path)), "job", 0)
    assert got["ranks_total"] == 2 and got["ranks"] == want["ranks"][:1] and got["findings"] == want["findings"]
