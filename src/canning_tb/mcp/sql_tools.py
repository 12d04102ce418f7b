"""query / schema: SQL over every window of every rank (canning_tb/sql: the tables built from the digests with the
views' own functions, DuckDB's sandbox: one SELECT, no file or network access, a row and a time limit), and the
tables' columns with their glossary definitions. The answer is bounded like every other: at most `max_rows` rows,
cut further to fit the size cap (said in `cut_to_fit`)."""
from __future__ import annotations

from canning_tb.queries.errors import BadParameter, NotFound
from canning_tb.sql import SqlError, plain
from canning_tb.sql.run import Run
from canning_tb.sql.schema import describe

from .bounds import MAX_CHARS, UNITS, dump, shorten

TIMEOUT_S = 30.0  # a query's time limit here: an assistant's call must come back
# the events of more windows than this in one call are refused: each window not read yet is a whole trace to parse
MAX_EVENT_WINDOWS = 8
_MARGIN = 300


def _digesting(host, runs: list[str]) -> dict | None:
    store = host.store()
    for run in runs:
        items = [(run, worker.name, win.id) for worker in store.workers(run) for win in store.windows(run, worker.name)
                 if win.status == "ready"]
        pending = host.pending_many(run, items) if items else None
        if pending:
            return pending
    return None


def query(host, sql: str, run: str | None = None, max_rows: int = 100) -> dict:
    store = host.store()
    if run is not None and run not in store.runs():
        raise NotFound(f"unknown run: {run!r}")
    runs = [run] if run is not None else store.runs()
    try:
        from canning_tb.sql import sandbox
        sandbox.check(sql)  # a refused statement is said before any window is digested
    except SqlError as e:
        raise BadParameter(str(e)) from None
    pending = _digesting(host, runs)
    if pending:
        return pending
    run_tables = Run(store, runs)
    _check_events(run_tables, sql)
    try:
        answer = run_tables.sql(sql, max_rows=max_rows, timeout_s=TIMEOUT_S)
    except SqlError as e:
        raise BadParameter(str(e)) from None
    rows = plain.rows(answer.table)
    out = {"columns": plain.columns(answer.table), "row_count": len(rows), "truncated": answer.truncated,
           "tables": answer.tables, "problems": answer.problems[:20], "units": UNITS, "rows": []}
    room = MAX_CHARS - _MARGIN - len(dump(out))
    kept, used = [], 0
    for row in rows:
        row = shorten(row)
        used += len(dump(row)) + 1
        if used > room and kept:
            break
        kept.append(row)
    out["rows"] = kept
    if len(kept) < len(rows):
        out["cut_to_fit"] = True
        out["message"] = (f"{len(kept)} of {len(rows)} rows fit the size cap: select fewer columns, aggregate, or "
                          "page with LIMIT / OFFSET")
    return out


def _check_events(run: Run, sql: str) -> None:
    """A query over `events` must name its windows (WHERE rank / window_index ... = or IN) when the runs hold more
    than MAX_EVENT_WINDOWS: the call would otherwise parse every trace of the run before it answers."""
    from canning_tb.sql import sandbox
    from canning_tb.sql.run import events_where, matches
    named = sandbox.names_in(sql)
    if named is not None and "events" not in named:
        return
    where = events_where(sql)
    chosen = [key for key, _ in run.windows() if matches(key, where)]
    if len(chosen) > MAX_EVENT_WINDOWS:
        raise BadParameter(f"this query reads the events of {len(chosen)} windows (at most {MAX_EVENT_WINDOWS} in one "
                           "call): query `events` alone with WHERE rank = N (or rank IN (...), window_index = N) "
                           "joined by AND, or use the digests' tables (steps, operators, kernels, communication)")


def schema(host, table: str | None = None) -> dict:
    try:
        tables = describe(table)
    except KeyError as e:
        raise NotFound(e.args[0]) from None
    if table is None:  # every table: names, types and glossary names (the definitions: one table at a time)
        tables = [{**t, "columns": [{k: (v if k != "glossary" else {"term": v["term"], "name": v["name"]})
                                     for k, v in c.items()} for c in t["columns"]]} for t in tables]
    return {"tables": tables, "units": UNITS,
            "notes": ["every row carries run, worker, rank, window, window_index, step (NULL: the whole window)",
                      "NULL is unknown, never 0; instants (*_ns of a start) are relative to the window start",
                      "write the column window as \"window\" (an SQL keyword)",
                      "one SELECT per query; no file, URL or extension access; row and time limits"]}
