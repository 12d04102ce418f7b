"""The SQL sandbox (canning_tb/sql/sandbox.py) through `run.sql` and `canning-prof sql`: one SELECT over the run's
tables; every statement that writes, attaches, installs or loads is refused before it runs, every file and URL
inside a SELECT is refused by DuckDB, a query past its row limit says it was cut, and one past its time limit is
stopped. Nothing is written into the logdir; the CLI's outputs are read back with csv, json and pyarrow."""
import csv
import io
import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import fixture_path

import canning_tb
from canning_tb.cli.main import main as cli_main
from canning_tb.sql import SqlError


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("logdir")
    shutil.copytree(fixture_path("ascend", "level1"), root / "ascend")
    return root


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def run(logdir, cache):
    return canning_tb.open(str(logdir), cache_dir=str(cache))


def snapshot(root):
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("query, says", [
    ("COPY steps TO '{tmp}/out.csv'", "this is COPY"),
    ("ATTACH '{tmp}/other.db' AS other", "this is ATTACH"),
    ("INSTALL httpfs", "only SELECT queries are allowed"),
    ("LOAD httpfs", "only SELECT queries are allowed"),
    ("PRAGMA enable_profiling", "this is PRAGMA"),
    ("SET enable_external_access = true", "this is SET"),
    ("CREATE TABLE kept AS SELECT * FROM steps", "this is CREATE"),
    ("SELECT 1; COPY steps TO '{tmp}/out.csv'", "one SELECT statement per query, not 2"),
    ("SELECT * FROM read_csv('/etc/passwd')", "Cannot access file \"/etc/passwd\""),
    ("SELECT * FROM read_text('/etc/passwd')", "Cannot access file \"/etc/passwd\""),
    ("SELECT * FROM '{tmp}/x.parquet'", "file system operations are disabled"),
    ("SELECT * FROM read_json('https://example.com/x.json')", "https://example.com/x.json"),
    ("SELECT * FROM glob('/etc/*')", "file system operations are disabled"),
    ("SELECT * FROM no_such_table", "(the tables: windows, steps"),
])
def test_refused_with_a_clear_error(run, tmp_path, query, says):
    with pytest.raises(SqlError) as e:
        run.sql(query.format(tmp=tmp_path))
    assert says in str(e.value)
    assert "Traceback" not in str(e.value)
    assert list(tmp_path.iterdir()) == []  # nothing was written


def test_python_variables_are_not_tables(run):
    """DuckDB's Python client would scan a variable of the caller's frame named in a query; not here."""
    secret_table = run.arrow("steps")  # noqa: F841 - the name the query tries
    with pytest.raises(SqlError, match="secret_table"):
        run.sql("SELECT * FROM secret_table")


def test_the_row_limit_says_the_answer_was_cut(run):
    answer = run.sql("SELECT * FROM range(1000) AS r(i)", max_rows=10)
    assert answer.table.num_rows == 10 and answer.truncated
    answer = run.sql("SELECT * FROM range(10) AS r(i)", max_rows=10)
    assert answer.table.num_rows == 10 and not answer.truncated
    assert run.sql("SELECT * FROM range(10) AS r(i) ORDER BY i DESC", max_rows=3).table["i"].to_pylist() == [9, 8, 7]


def test_a_query_past_its_time_limit_is_stopped(run):
    with pytest.raises(SqlError, match=r"ran past its time limit \(0.5 s\)"):
        run.sql("SELECT count(*) FROM range(1000000) a, range(1000000) b, range(1000000) c", timeout_s=0.5)
    assert run.sql("SELECT 1 AS one").table["one"].to_pylist() == [1]  # the next query runs


def test_window_keyword_hint(run):
    with pytest.raises(SqlError, match='write the column as "window"'):
        run.sql("SELECT window FROM windows")
    assert run.sql('SELECT "window" FROM windows').table.num_rows == 2


def test_the_cli_formats(logdir, cache, tmp_path, capsys):
    before = snapshot(logdir)
    query = "SELECT rank, count(*) AS calls, sum(wait_ns) AS wait, max(kind) AS kind FROM communication " \
            "GROUP BY rank ORDER BY rank"
    base = ["sql", str(logdir), query, "--cache-dir", str(cache)]
    assert cli_main(base) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].split() == ["rank", "calls", "wait", "kind"] and "(2 rows)" in text
    assert cli_main([*base, "--format=csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["rank"] for r in rows] == ["0", "1"]
    assert cli_main([*base, "--format=json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in doc["columns"]] == ["rank", "calls", "wait", "kind"]
    assert [r["wait"] for r in doc["rows"]] == [int(r["wait"]) for r in rows]  # a number, not text
    assert doc["truncated"] is False
    out = tmp_path / "answer.parquet"
    assert cli_main([*base, "--format=parquet", "--out", str(out)]) == 0
    assert pq.read_table(out).to_pylist() == doc["rows"]
    assert cli_main([*base, "--max-rows=1", "--format=json"]) == 0
    captured = capsys.readouterr()
    assert len(json.loads(captured.out)["rows"]) == 1 and "truncated to the first 1 rows" in captured.err
    assert snapshot(logdir) == before


def test_the_cli_refuses_with_status_2(logdir, cache, tmp_path, capsys):
    base = ["sql", str(logdir)]
    assert cli_main([*base, "COPY steps TO 'x.csv'", "--cache-dir", str(cache)]) == 2
    assert "only SELECT queries are allowed" in capsys.readouterr().err
    assert cli_main([*base, "SELECT 1", "--format=parquet"]) == 2
    assert "--format=parquet needs --out" in capsys.readouterr().err
    assert cli_main([*base, "SELECT 1", "--out", str(logdir / "ascend" / "x.csv")]) == 2
    assert "the profiles are never written to" in capsys.readouterr().err
    assert cli_main(["sql", str(tmp_path / "none"), "SELECT 1"]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert not (logdir / "ascend" / "x.csv").exists()


def test_the_cli_schema_names_glossary_definitions(capsys):
    glossary = json.loads((Path(canning_tb.__file__).parent / "analysis" / "glossary.json").read_text())
    assert cli_main(["sql", ".", "--schema"]) == 0
    tables = {t["table"]: t for t in json.loads(capsys.readouterr().out)}
    assert {"steps", "operators", "kernels", "communication", "matrix", "memory", "allocations", "findings",
            "efficiency", "events"} <= set(tables)
    wait = next(c for c in tables["communication"]["columns"] if c["name"] == "wait_ns")
    assert wait["glossary"]["definition"] == glossary["wait"]["tip"]
    for table in tables.values():
        assert [c["name"] for c in table["columns"][:6]] == ["run", "worker", "rank", "window", "window_index", "step"]


def test_digest_writes_the_events_parquet_ahead(tmp_path, capsys):
    """`canning-prof digest --sql-events`: every window's events as Parquet in the cache (none in the logdir), and
    a query over them then reads those files as they are (their mtimes unchanged)."""
    logdir = tmp_path / "log"
    shutil.copytree(fixture_path("kineto", "resnet50_v100"), logdir / "resnet")
    cache = tmp_path / "cache"
    before = snapshot(logdir)
    assert cli_main(["digest", f"--input={logdir}", f"--cache-dir={cache}", "--workers=1", "--sql-events"]) == 0
    assert "2 windows' events written as Parquet for SQL (0 left out)" in capsys.readouterr().out
    written = {p: p.stat().st_mtime_ns for p in cache.rglob("*.parquet")}
    assert len(written) == 2 and snapshot(logdir) == before
    run = canning_tb.open(str(logdir), cache_dir=str(cache))
    answer = run.sql("SELECT count(DISTINCT \"window\") AS windows, count(*) AS events FROM events")
    assert answer.table["windows"].to_pylist() == [2] and answer.table["events"].to_pylist()[0] > 10_000
    assert {p: p.stat().st_mtime_ns for p in cache.rglob("*.parquet")} == written
