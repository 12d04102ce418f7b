"""The MCP tools `query` and `schema` through the SDK's own client over stdio, against a real `canning-prof mcp` on
the 2-rank Ascend fixture: the wait per rank is communication.json's (read here with json), a refused statement or
file is a tool error that says why and the server goes on, the answer stays within the size cap and says when it
was cut, the schema's definitions are glossary.json's (read here), and the logdir is not written."""
import json
import shutil
import time
from decimal import Decimal
from pathlib import Path

import pytest

from _mcp import Session, stdio_params
from conftest import fixture_path

import canning_tb

MAX_CHARS = 60_000


def snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("mcp_sql_logdir")
    cache = tmp_path_factory.mktemp("mcp_sql_cache")
    shutil.copytree(fixture_path("ascend", "level1"), root / "ascend")
    before = snapshot(root)
    session = Session(stdio_params(root, cache))
    try:
        yield {"root": root, "session": session, "before": before}
    finally:
        session.close()


def answer_when_digested(session, args, timeout=180):
    """The query's answer once the windows are digested (the first call may say "digesting")."""
    deadline = time.monotonic() + timeout
    while True:
        found = session.answer("query", args)
        if found.get("status") != "digesting":
            return found
        assert time.monotonic() < deadline, found
        time.sleep(min(found["retry_after_s"], 2))


def _wait_ms(rank: int) -> Decimal:
    path = fixture_path("ascend", "level1", f"rank{rank}_ascend_pt", "ASCEND_PROFILER_OUTPUT", "communication.json")
    total = Decimal(0)
    for kinds in json.loads(path.read_text()).values():
        for kind in ("collective", "p2p"):
            for op, info in kinds.get(kind, {}).items():
                if op != "Total Op Info":
                    time_info = info["Communication Time Info"]
                    total += min(Decimal(str(time_info["Wait Time(ms)"])), Decimal(str(time_info["Elapse Time(ms)"])))
    return total


def test_query_wait_per_rank(world):
    found = answer_when_digested(world["session"], {"sql": "SELECT rank, sum(wait_ns) AS wait, count(*) AS calls "
                                                           "FROM communication GROUP BY rank ORDER BY rank"})
    assert [c["name"] for c in found["columns"]] == ["rank", "wait", "calls"]
    assert [r["rank"] for r in found["rows"]] == [0, 1] and found["truncated"] is False
    for row in found["rows"]:
        assert abs(row["wait"] - _wait_ms(row["rank"]) * 1_000_000) <= row["calls"]
    assert found["tables"] == ["communication"]


def test_query_refusals_are_tool_errors(world):
    session = world["session"]
    for sql, says in (("COPY steps TO 'x.csv'", "this is COPY"), ("ATTACH 'x.db'", "this is ATTACH"),
                      ("INSTALL httpfs", "only SELECT"), ("SELECT * FROM read_csv('/etc/passwd')", "/etc/passwd"),
                      ("SELECT * FROM nothing_here", "the tables: windows")):
        failed, text, _ = session.call("query", {"sql": sql})
        assert failed and says in text, (sql, text)
    assert session.answer("query", {"sql": "SELECT 1 AS one"})["rows"] == [{"one": 1}]  # the server goes on
    failed, text, _ = session.call("query", {"sql": "SELECT 1", "max_rows": 5000})
    assert failed and "max_rows" in text


def test_query_is_bounded(world):
    session = world["session"]
    found = answer_when_digested(session, {"sql": "SELECT * FROM range(5000) AS r(i)", "max_rows": 1000})
    assert len(found["rows"]) == 1000 and found["truncated"] is True
    wide = answer_when_digested(session, {"sql": "SELECT repeat('x', 1000) AS text, i FROM range(1000) AS r(i)",
                                          "max_rows": 1000})
    assert wide.get("cut_to_fit") is True and 0 < len(wide["rows"]) < 1000
    assert len(json.dumps(wide, ensure_ascii=False, separators=(",", ":"))) <= MAX_CHARS
    assert snapshot(world["root"]) == world["before"]


def test_schema_names_the_glossary_s_definitions(world):
    glossary = json.loads((Path(canning_tb.__file__).parent / "analysis" / "glossary.json").read_text())
    session = world["session"]
    every = session.answer("schema")
    assert {"steps", "communication", "events", "findings"} <= {t["table"] for t in every["tables"]}
    one = session.answer("schema", {"table": "steps"})
    columns = {c["name"]: c for c in one["tables"][0]["columns"]}
    assert columns["dataloader_share"]["glossary"]["definition"] == glossary["dataloader_share"]["tip"]
    assert columns["idle_ns"]["glossary"]["definition"] == glossary["idle"]["tip"]
    failed, text, _ = session.call("schema", {"table": "nope"})
    assert failed and "unknown table 'nope'" in text


def test_query_over_the_events_of_many_windows_must_name_them(tmp_path):
    """Ten windows (five copies of the two ResNet windows): `events` without a WHERE that names its windows is
    refused before any trace is read; naming one rank's windows is accepted."""
    from canning_tb.mcp.sql_tools import _check_events
    from canning_tb.queries.errors import BadParameter
    from canning_tb.sql.run import Run
    from canning_tb.store import Store
    for copy in range(5):
        shutil.copytree(fixture_path("kineto", "resnet50_v100"), tmp_path / f"run{copy}")
    run = Run(Store(str(tmp_path), cache_dir=str(tmp_path / "cache")))
    assert len(run.windows()) == 10
    with pytest.raises(BadParameter, match="reads the events of 10 windows"):
        _check_events(run, "SELECT count(*) FROM events")
    with pytest.raises(BadParameter, match="reads the events of 10 windows"):
        _check_events(run, "SELECT count(*) FROM events e JOIN steps s USING (rank) WHERE e.rank = 0")
    _check_events(run, "SELECT count(*) FROM events WHERE run = 'run1'")  # two windows
    _check_events(run, "SELECT count(*) FROM steps")
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").rglob("*.parquet"))
