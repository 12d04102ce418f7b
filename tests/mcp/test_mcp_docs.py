"""docs/agents.md documents every tool the server registers, with an example call; each tool's description
states the size cap and takes only bounded limits."""
import asyncio
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from canning_tb.mcp.server import build

AGENTS = Path(__file__).resolve().parents[2] / "docs" / "agents.md"


def test_every_tool_is_documented_with_its_cap(tmp_path):
    app, _ = build(str(tmp_path), str(tmp_path / "cache"))
    # a loop of its own in another thread: the browser tests' Playwright may hold this thread's loop
    with ThreadPoolExecutor(1) as pool:
        tools = pool.submit(asyncio.run, app.list_tools()).result()
    doc = AGENTS.read_text()
    documented = re.findall(r"^### `(\w+)`$", doc, re.M)
    assert sorted(documented) == sorted(t.name for t in tools)
    for tool in tools:
        assert f'{{"tool": "{tool.name}", "arguments": ' in doc, tool.name
        assert "at most 60,000 characters of JSON" in tool.description, tool.name
        assert tool.annotations.read_only_hint is True and tool.annotations.open_world_hint is False
        limit = tool.input_schema["properties"].get("limit")
        if limit:
            assert 1 <= limit["minimum"] <= limit["maximum"] <= 1000, (tool.name, limit)
