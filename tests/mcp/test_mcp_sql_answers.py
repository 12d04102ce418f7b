"""The shaping of mcp/sql_tools.py's answers (query, schema) over a store laid out by hand and tables made by hand
(issue 46: fast tests for a mutation run over sql_tools.py; test_mcp_sql.py runs the real server over a digested
fixture). DuckDB runs the queries for real; the digests' tables are hand-made Arrow tables, so every expected row is
written here. Glossary entries are read from glossary.json with json."""
import json
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest

from canning_tb.mcp import sql_tools
from canning_tb.queries.errors import BadParameter, NotFound
from canning_tb.sql.run import Run

GLOSSARY = json.loads((Path(__file__).parents[2] / "src/canning_tb/analysis/glossary.json").read_text())
MAX_CHARS = 60_000  # docs/agents.md: every answer within 60,000 characters of JSON
STEPS = pa.table({"rank": pa.array([0, 0, 1], pa.int64()), "step": pa.array([1, 2, 1], pa.int64()),
                  "dur_ns": pa.array([10, 30, 20], pa.int64())})


def store(layout: dict):
    """layout: {run: {worker: (rank, [status of each window])}}."""
    workers = {run: [SimpleNamespace(name=w, rank=rank) for w, (rank, _) in ws.items()] for run, ws in layout.items()}
    wins = {(run, w): [SimpleNamespace(id=f"win{i}", label=f"win{i}", status=s, rank=rank)
                       for i, s in enumerate(states)]
            for run, ws in layout.items() for w, (rank, states) in ws.items()}
    return SimpleNamespace(runs=lambda: list(layout), workers=lambda run: workers[run],
                           windows=lambda run, worker: wins[(run, worker)])


def host(layout: dict, pending=None):
    """A host over the layout; pending(run, items) answers `pending.get(run)` and records what it was asked."""
    asked = []

    def pend(run, items):
        asked.append((run, items))
        return (pending or {}).get(run)

    return SimpleNamespace(store=lambda: store(layout), pending_many=pend, asked=asked)


class Built(list):
    """The runs each Run was made for, and the time limits its queries were given."""


@pytest.fixture
def tables(monkeypatch):
    """The digests' tables as hand-made Arrow tables (what Run.arrow / Run.events would build from the digests)."""
    built = Built()

    class HandRun(Run):
        timeouts = []

        def sql(self, query, max_rows, timeout_s=-1):
            HandRun.timeouts.append(timeout_s)
            return super().sql(query, max_rows=max_rows, timeout_s=timeout_s)

        def __init__(self, store_, runs):
            super().__init__(store_, runs)
            built.append(list(runs))
            self.problems = [f"p{i}" for i in range(25)]

        def arrow(self, name, **where):
            return STEPS

        def events(self, **where):
            return pa.table({"rank": pa.array([3], pa.int64()), "window_index": pa.array([0], pa.int64()),
                             "name": ["mm"]})

    monkeypatch.setattr(sql_tools, "Run", HandRun)
    built.timeouts = HandRun.timeouts
    return built


ONE_RUN = {"r": {"w0": (0, ["ready", "ready"]), "w1": (1, ["ready", "waiting"])}}


def test_a_query_answers_its_rows_columns_and_the_tables_it_read(tables):
    h = host(ONE_RUN)
    got = sql_tools.query(h, "SELECT rank, sum(dur_ns) AS total FROM steps GROUP BY rank ORDER BY rank")
    assert got == {"columns": [{"name": "rank", "type": "int64"}, {"name": "total", "type": "decimal128(38, 0)"}],
                   "row_count": 2, "truncated": False, "tables": ["steps"],
                   "problems": [f"p{i}" for i in range(20)],  # 20 of the run's 25 problems
                   "units": sql_tools.UNITS, "rows": [{"rank": 0, "total": 40}, {"rank": 1, "total": 20}]}
    assert got["units"]["-1 or null"] == "unknown (never 0)"
    # only the ready windows are asked about, each by its run, worker and id
    assert h.asked == [("r", [("r", "w0", "win0"), ("r", "w0", "win1"), ("r", "w1", "win0")])]
    assert tables == [["r"]]  # every run of the logdir when none is named
    assert tables.timeouts == [30.0]  # docs/agents.md: 30 s (the sandbox's own default is longer)


def test_max_rows_bounds_the_rows_and_says_truncated(tables):
    got = sql_tools.query(host(ONE_RUN), "SELECT step FROM steps ORDER BY dur_ns", max_rows=2)
    assert got["rows"] == [{"step": 1}, {"step": 1}] and got["truncated"] is True and got["row_count"] == 2
    assert sql_tools.query(host(ONE_RUN), "SELECT step FROM steps")["truncated"] is False  # 100 by default
    rows = "SELECT * FROM range(101) t(i)"
    assert len(sql_tools.query(host(ONE_RUN), rows)["rows"]) == 100


def test_an_unknown_run_is_not_found_and_a_known_one_is_the_only_one_read(tables):
    two = {**ONE_RUN, "s": {"v": (3, ["ready"])}}
    with pytest.raises(NotFound, match="unknown run: 'x'"):
        sql_tools.query(host(two), "SELECT 1", run="x")
    h = host(two)
    sql_tools.query(h, "SELECT 1 AS one", run="s")
    assert h.asked == [("s", [("s", "v", "win0")])] and tables == [["s"]]
    h = host(two)
    sql_tools.query(h, "SELECT 1 AS one")
    assert [run for run, _ in h.asked] == ["r", "s"] and tables[-1] == ["r", "s"]


def test_a_refused_statement_is_said_before_any_window_is_digested(tables):
    h = host(ONE_RUN)
    for sql, says in (("COPY steps TO 'x.csv'", "this is COPY"), ("SELECT 1; SELECT 2", "not 2"),
                      ("SELEC 1", "cannot be parsed")):
        with pytest.raises(BadParameter, match=says):
            sql_tools.query(h, sql)
    assert h.asked == [] and tables == []


def test_a_failing_query_is_a_bad_parameter_that_says_why(tables):
    with pytest.raises(BadParameter, match="nothing_here.*the tables: windows"):
        sql_tools.query(host(ONE_RUN), "SELECT * FROM nothing_here")


def test_windows_being_digested_answer_that_first_run_first(tables):
    two = {**ONE_RUN, "s": {"v": (3, ["ready"])}, "t": {"u": (0, ["waiting"])}}
    waiting = {"status": "digesting", "done": 1}
    h = host(two, pending={"s": waiting, "r": None})
    assert sql_tools.query(h, "SELECT 1 AS one") is waiting
    assert [run for run, _ in h.asked] == ["r", "s"] and tables == []  # t not asked: s answered first
    h = host(two, pending={"r": {"status": "digesting", "done": 0}, "s": waiting})
    assert sql_tools.query(h, "SELECT 1 AS one")["done"] == 0 and [run for run, _ in h.asked] == ["r"]
    h = host({"t": {"u": (0, ["waiting"])}}, pending={"t": waiting})  # no ready window: nothing to digest
    assert sql_tools.query(h, "SELECT 1 AS one")["rows"] == [{"one": 1}] and h.asked == []


def many(windows: int) -> dict:
    return {"r": {f"w{i}": (i, ["ready"]) for i in range(windows)}}


def test_events_over_more_than_eight_windows_must_name_them(tables):
    assert sql_tools.query(host(many(8)), "SELECT name FROM events")["rows"] == [{"name": "mm"}]
    with pytest.raises(BadParameter) as refused:
        sql_tools.query(host(many(9)), "SELECT name FROM events")
    assert str(refused.value) == (
        "this query reads the events of 9 windows (at most 8 in one call): query `events` alone with WHERE rank = N "
        "(or rank IN (...), window_index = N) joined by AND, or use the digests' tables (steps, operators, kernels, "
        "communication)")
    # naming eight of nine (or fewer) is taken; a join or an OR reads them all
    assert sql_tools.query(host(many(9)), "SELECT name FROM events WHERE rank IN (0, 1, 2, 3, 4, 5, 6, 7)")["rows"]
    assert sql_tools.query(host(many(20)), "SELECT name FROM events WHERE rank = 3 AND window_index = 0")["rows"]
    with pytest.raises(BadParameter, match="the events of 9 windows"):
        sql_tools.query(host(many(9)), "SELECT e.name FROM events e JOIN steps s ON e.rank = s.rank")
    with pytest.raises(BadParameter, match="the events of 20 windows"):
        sql_tools.query(host(many(20)), "SELECT name FROM events WHERE rank = 3 OR rank = 4")
    # the windows not ready are not counted, and a query not over events is never refused
    assert sql_tools.query(host({"r": {f"w{i}": (i, ["ready", "waiting"]) for i in range(8)}}),
                           "SELECT name FROM events")["rows"]
    assert sql_tools.query(host(many(20)), "SELECT count(*) AS n FROM steps")["rows"] == [{"n": 3}]


def test_events_checked_when_the_parser_cannot_name_the_tables(tables, monkeypatch):
    from canning_tb.sql import sandbox
    monkeypatch.setattr(sandbox, "names_in", lambda sql: None)  # DuckDB's parser could not tell: every table
    with pytest.raises(BadParameter, match="the events of 9 windows"):
        sql_tools.query(host(many(9)), "SELECT count(*) AS n FROM steps")


def text_rows(widths: list) -> str:
    return " UNION ALL ".join(f"SELECT {i} AS i, repeat('x', {w}) AS s" for i, w in enumerate(widths))


def answer_chars(count: int) -> int:
    """The length of the answer's JSON without its rows, as the tool writes it (compact, non-ASCII kept)."""
    head = {"columns": [{"name": "i", "type": "int32"}, {"name": "s", "type": "string"}], "row_count": count,
            "truncated": False, "tables": [], "problems": [f"p{i}" for i in range(20)], "units": sql_tools.UNITS,
            "rows": []}
    return len(json.dumps(head, ensure_ascii=False, separators=(",", ":")))


def row_chars(i: int, width: int) -> int:
    return len(f'{{"i":{i},"s":"{"x" * width}"}}')


def test_rows_that_fill_the_room_exactly_are_kept_and_one_character_more_is_cut(tables):
    count = 40
    room = MAX_CHARS - 300 - answer_chars(count)  # 300: the margin kept for the message
    # 40 rows (i below 10: one digit; from 10: two), plus a comma each, filling the room exactly
    base = sum(row_chars(i, 0) + 1 for i in range(count))
    width, extra = divmod(room - base, count)
    widths = [width + (i < extra) for i in range(count)]
    assert sum(row_chars(i, w) + 1 for i, w in enumerate(widths)) == room
    whole = sql_tools.query(host(ONE_RUN), text_rows(widths))
    assert len(whole["rows"]) == count and "cut_to_fit" not in whole and "message" not in whole
    cut = sql_tools.query(host(ONE_RUN), text_rows(widths[:-1] + [widths[-1] + 1]))
    assert len(cut["rows"]) == 39 and cut["rows"][-1]["i"] == 38 and cut["row_count"] == count
    assert cut["cut_to_fit"] is True
    assert cut["message"] == ("39 of 40 rows fit the size cap: select fewer columns, aggregate, or page with LIMIT / "
                              "OFFSET")
    assert len(json.dumps(cut, ensure_ascii=False, separators=(",", ":"))) <= MAX_CHARS


def test_a_single_row_over_the_cap_is_kept_with_its_strings_cut(tables):
    got = sql_tools.query(host(ONE_RUN), "SELECT repeat('y', 70000) AS s")
    assert len(got["rows"]) == 1 and "cut_to_fit" not in got
    assert got["rows"][0]["s"] == "y" * 2000 + "... [68000 more characters cut to fit the answer]"
    two = sql_tools.query(host(ONE_RUN), "SELECT repeat('y', 30000) AS s UNION ALL SELECT repeat('z', 30000)")
    assert [len(r["s"]) for r in two["rows"]] == [2000 + len("... [28000 more characters cut to fit the answer]")] * 2


def test_the_schema_of_one_table_gives_each_figures_glossary_definition():
    got = sql_tools.schema(None, "communication")
    assert [t["table"] for t in got["tables"]] == ["communication"] and got["units"] == sql_tools.UNITS
    columns = {c["name"]: c for c in got["tables"][0]["columns"]}
    wait = GLOSSARY["wait"]
    assert columns["wait_ns"]["glossary"] == {"term": "wait", "name": wait["label"], "definition": wait["tip"]}
    assert columns["wait_ns"]["type"] == "int64" and "glossary" not in columns["run"]


def test_the_schema_of_every_table_names_the_terms_without_their_definitions():
    got = sql_tools.schema(None)
    names = [t["table"] for t in got["tables"]]
    assert "communication" in names and "events" in names and len(names) > 5
    communication = {c["name"]: c for c in got["tables"][names.index("communication")]["columns"]}
    assert communication["wait_ns"]["glossary"] == {"term": "wait", "name": GLOSSARY["wait"]["label"]}
    assert communication["wait_ns"]["type"] == "int64" and communication["run"]["doc"].startswith("the run")
    assert all(set(c.get("glossary", {})) <= {"term", "name"} for t in got["tables"] for c in t["columns"])
    assert got["units"] == sql_tools.UNITS
    notes = got["notes"]
    assert len(notes) == 4 and sql_tools.schema(None, "steps")["notes"] == notes
    assert notes[0] == "every row carries run, worker, rank, window, window_index, step (NULL: the whole window)"
    assert notes[1].startswith("NULL is unknown, never 0")
    assert notes[2] == 'write the column window as "window" (an SQL keyword)'
    assert notes[3].startswith("one SELECT per query; no file")


def test_an_unknown_table_is_not_found_and_names_the_tables():
    with pytest.raises(NotFound, match="unknown table 'nope': the tables are .*communication"):
        sql_tools.schema(None, "nope")
