"""One SQL query in DuckDB's sandbox: a fresh in-memory connection per query, the tables it names
registered as Arrow, no file, network or extension access, a row limit and a time limit.

The query must be one SELECT (WITH ... SELECT, VALUES, EXPLAIN refused): COPY, ATTACH, INSTALL, LOAD,
PRAGMA, SET, CREATE ... are refused before anything runs. Inside the SELECT, DuckDB itself refuses every
file and URL (`enable_external_access=false`: read_csv('/etc/passwd'), 'https://...'), extensions are
neither installed nor loaded, Python variables are not tables (`python_enable_replacements=false`), nothing
spills to disk, and the configuration is locked (`lock_configuration=true`) before the query runs. At most
`max_rows` rows come back (one more is fetched to say the answer was truncated); past `timeout_s` a timer
thread interrupts the connection.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

import pyarrow as pa

DEFAULT_MAX_ROWS = 10_000
DEFAULT_TIMEOUT_S = 60.0
MEMORY_LIMIT = "4GB"
SETTINGS = {"enable_external_access": False, "autoinstall_known_extensions": False,
            "autoload_known_extensions": False, "allow_community_extensions": False,
            "python_enable_replacements": False, "max_temp_directory_size": "0B", "memory_limit": MEMORY_LIMIT,
            "lock_configuration": True}


class SqlError(Exception):
    """A query refused or failed; the message says why (never a traceback)."""


@dataclass
class Answer:
    table: pa.Table  # at most max_rows rows
    truncated: bool  # the query had more rows than max_rows
    tables: list = field(default_factory=list)  # the tables it read
    problems: list = field(default_factory=list)  # windows left out ("worker / window: problem")


def _duckdb():
    try:
        import duckdb
    except ImportError:
        raise SqlError("SQL needs DuckDB, which is not installed here: pip install duckdb") from None
    return duckdb


def _statement(query: str):
    duckdb = _duckdb()
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as e:
        raise SqlError(f"the query cannot be parsed: {_first_line(e)}{_hint(query)}") from None
    if len(statements) != 1:
        raise SqlError(f"one SELECT statement per query, not {len(statements)}")
    kind = statements[0].type.name
    if kind != "SELECT":
        raise SqlError(f"only SELECT queries are allowed (read-only); this is {kind}: COPY, ATTACH, INSTALL, LOAD, "
                       "PRAGMA, SET, CREATE and other statements are refused")
    return statements[0]


def names_in(query: str) -> set[str] | None:
    """The table names a query reads (lower case), None when DuckDB's parser cannot tell."""
    duckdb = _duckdb()
    try:
        return {n.lower() for n in duckdb.get_table_names(query)}
    except duckdb.Error:
        return None


def _hint(query: str) -> str:
    import re
    if re.search(r'(?<!")\bwindow\b(?!")', query, re.I):
        return ' (WINDOW is an SQL keyword: write the column as "window", in double quotes)'
    return ""


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.split("\n", 1)[0] if text else type(error).__name__


def check(query: str) -> None:
    """Raise SqlError unless `query` is one SELECT statement."""
    _statement(query)


def run(query: str, tables: dict, max_rows: int = DEFAULT_MAX_ROWS, timeout_s: float = DEFAULT_TIMEOUT_S,
        threads: int | None = None) -> tuple[pa.Table, bool]:
    """(at most max_rows rows of `query` over `tables` {name: Arrow table}, truncated)."""
    duckdb = _duckdb()
    if max_rows < 0:
        raise SqlError("max_rows must be 0 or more")
    statement = _statement(query)
    text = statement.query.strip().rstrip(";").strip()
    config = dict(SETTINGS)
    if threads:
        config["threads"] = threads
    con = duckdb.connect(":memory:", config=config)
    timer = threading.Timer(timeout_s, con.interrupt)
    timer.daemon = True
    try:
        for name, table in tables.items():
            con.register(name, table)
        timer.start()
        # the row limit in the query (nothing past it is computed) and in the fetch (nothing past it comes back)
        reader = con.sql(f"SELECT * FROM (\n{text}\n) AS canning_query LIMIT {max_rows + 1}").to_arrow_reader(
            min(max_rows + 1, 65_536))
        batches, count = [], 0
        for batch in reader:
            batches.append(batch)
            count += batch.num_rows
            if count > max_rows:
                break
        result = pa.Table.from_batches(batches, schema=reader.schema)
    except duckdb.InterruptException:
        raise SqlError(f"the query ran past its time limit ({timeout_s:g} s) and was stopped") from None
    except duckdb.PermissionException as e:
        raise SqlError(f"refused: {_first_line(e)} (queries read the run's tables only: no file, URL or "
                       "extension)") from None
    except duckdb.OutOfMemoryException as e:
        raise SqlError(f"the query needs more memory than its limit ({MEMORY_LIMIT}): {_first_line(e)}") from None
    except duckdb.Error as e:
        hint = _hint(query) if isinstance(e, duckdb.ParserException) else ""
        raise SqlError(_first_line(e) + hint) from None
    finally:
        timer.cancel()
        con.close()
    truncated = result.num_rows > max_rows
    return (result.slice(0, max_rows) if truncated else result), truncated
