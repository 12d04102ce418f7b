"""`canning_tb.open(logdir_or_run)`: every window of every rank of a run (or of every run of a logdir) as
tables, through the store: `.arrow(name)`, `.df(name)` (pandas), `.pl(name)` (polars), `.sql(query)`.

The digests' tables are built on first use from each window's digest (only the fields the table reads:
store.digest_part), kept for the life of the object; `events` is read per window on demand, from the
Parquet cache when it is there. Windows that cannot be read are left out and listed in `problems`.
"""
from __future__ import annotations

import os
import threading

import pyarrow as pa

from canning_tb.queries.errors import QueryError, window_digest

from . import events as events_table
from . import sandbox
from .tables import TABLES, Window, arrow

EVENTS = "events"
STEPS_FOR_EVENTS = (("schema_version", None), ("analysis_revision", None), ("window", ("start_ns",)), ("steps", ("number", "start_ns", "dur_ns")))


def table_names() -> list[str]:
    return [*TABLES, EVENTS]


class Run:
    """The tables of the windows of `runs` in `store` (every run when None)."""

    def __init__(self, store, runs: list[str] | None = None):
        self.store = store
        known = store.runs()
        for name in runs or ():
            if name not in known:
                raise KeyError(f"unknown run {name!r}: the logdir holds {', '.join(known) or 'none'}")
        self.runs = list(runs) if runs else known
        self._tables: dict[str, pa.Table] = {}
        self._events: dict[tuple, pa.Table] = {}
        self._lock = threading.RLock()
        self.problems: list[str] = []

    def __repr__(self) -> str:
        return f"<canning_tb Run {', '.join(self.runs)}: {len(self.windows())} windows>"

    # -- the windows ------------------------------------------------------------------------------------
    def windows(self) -> list[tuple[Window, object]]:
        """(key, store Window) of every ready window, in run, rank, window order."""
        out = []
        for run in self.runs:
            for worker in self.store.workers(run):
                for index, win in enumerate(self.store.windows(run, worker.name)):
                    if win.status == "ready":
                        rank = worker.rank if worker.rank >= 0 else win.rank
                        out.append((Window(run, worker.name, rank, win.id, index), win))
                    else:  # torch_npu output not analysed yet, or a window still being written
                        self._problem(f"{run} / {worker.name} / {win.label}: left out, not ready ({win.status})")
        return out

    def _digest(self, key: Window, fields: tuple):
        try:
            return window_digest(self.store, key.run, key.worker, key.window, fields)
        except QueryError as e:
            self._problem(f"{key.run} / {key.worker} / {key.window}: {e.body['error']}")
            return None

    def _problem(self, text: str) -> None:
        with self._lock:
            if text not in self.problems:
                self.problems.append(text)

    # -- tables -------------------------------------------------------------------------------------------
    def arrow(self, name: str, **where) -> pa.Table:
        """The table `name` as Arrow (`events`: every window's, or those `where` picks: rank=, window_index=,
        run=, worker=, window=; a value or a list of values)."""
        if name == EVENTS:
            return self.events(**where)
        if name not in TABLES:
            raise KeyError(f"unknown table {name!r}: the tables are {', '.join(table_names())}")
        with self._lock:
            found = self._tables.get(name)
            if found is None:
                found = self._tables[name] = self._build(TABLES[name])
        return _filter(found, where) if where else found

    def _build(self, table) -> pa.Table:
        parts = []
        windows = [key for key, _ in self.windows()]
        if table.cross_rank:  # the ranks at one window position of a run, together
            groups: dict = {}
            for key in windows:
                groups.setdefault((key.run, key.window_index), []).append(key)
            for keys in groups.values():
                found = [(k, self._digest(k, table.fields)) for k in keys]
                found = [(k, d) for k, d in found if d is not None]
                rows = table.rows([d for _, d in found], [{} for _ in found]) if found else []
                parts.extend(zip([k for k, _ in found], rows))
        else:
            labels = {(k.run, k.worker, k.window): w.label for k, w in self.windows()}
            for key in windows:
                digest = self._digest(key, table.fields)
                if digest is not None:
                    parts.append((key, table.rows(digest, {"label": labels[(key.run, key.worker, key.window)]})))
        return arrow(table, parts)

    def df(self, name: str, **where):
        """The table as a pandas DataFrame (pandas must be installed)."""
        return self.arrow(name, **where).to_pandas()

    def pl(self, name: str, **where):
        """The table as a polars DataFrame (polars must be installed)."""
        import polars
        return polars.from_arrow(self.arrow(name, **where))

    def events(self, **where) -> pa.Table:
        """The events of the windows `where` picks (all without it), each read once and cached as Parquet."""
        chosen = [(k, w) for k, w in self.windows() if matches(k, where)]
        parts = [self._window_events(k) for k, _ in chosen]
        parts = [p for p in parts if p is not None]
        return pa.concat_tables(parts) if parts else events_table.schema().empty_table()

    def prepare_events(self, progress=None) -> int:
        """Read every window's events into the Parquet cache ahead of the queries (`canning-prof digest
        --sql-events`); returns how many windows have them. progress(done, total) after each window."""
        keys = [k for k, _ in self.windows()]
        done = 0
        for i, key in enumerate(keys, 1):
            done += self._window_events(key, keep=False) is not None
            if progress:
                progress(i, len(keys))
        return done

    def _window_events(self, key: Window, keep: bool = True) -> pa.Table | None:
        ident = (key.run, key.worker, key.window)
        with self._lock:
            if ident in self._events:
                return self._events[ident]
        digest = self._digest(key, STEPS_FOR_EVENTS)
        if digest is None:
            return None
        prefix = self.store.events_prefix(key.run, key.worker, key.window)

        def build():
            table = self.store.table(key.run, key.worker, key.window)
            return events_table.to_arrow(table, key.__dict__, digest.window.start_ns, list(digest.steps))
        try:
            found = events_table.cached(prefix, build)
        except Exception as e:  # noqa: BLE001 - an unreadable window is left out and said, the others go on
            from canning_tb.ingest.table import InputError
            if not isinstance(e, (InputError, OSError, ValueError)):
                raise
            self._problem(f"{key.run} / {key.worker} / {key.window}: {e}")
            return None
        if keep:
            with self._lock:
                self._events[ident] = found
        return found

    # -- SQL ------------------------------------------------------------------------------------------------
    def sql(self, query: str, max_rows: int = sandbox.DEFAULT_MAX_ROWS,
            timeout_s: float = sandbox.DEFAULT_TIMEOUT_S) -> sandbox.Answer:
        """`query` (one SELECT) over the tables it names, in DuckDB's sandbox (sandbox.py)."""
        sandbox.check(query)
        named = sandbox.names_in(query)
        wanted = [n for n in table_names() if named is None or n in named]
        tables = {}
        for name in wanted:
            if name == EVENTS:
                tables[name] = self.events(**events_where(query))
            else:
                tables[name] = self.arrow(name)
        try:
            result, truncated = sandbox.run(query, tables, max_rows, timeout_s)
        except sandbox.SqlError as e:
            if "does not exist" in str(e):
                raise sandbox.SqlError(f"{e} (the tables: {', '.join(table_names())})") from None
            raise
        return sandbox.Answer(result, truncated, wanted, list(self.problems))


def _values(value) -> set:
    return set(value) if isinstance(value, (list, tuple, set, frozenset)) else {value}


def matches(key: Window, where: dict) -> bool:
    for column, value in where.items():
        if column not in ("run", "worker", "rank", "window", "window_index"):
            raise KeyError(f"events are picked by run, worker, rank, window or window_index, not {column!r}")
        if getattr(key, column) not in _values(value):
            return False
    return True


def _filter(table: pa.Table, where: dict) -> pa.Table:
    import pyarrow.compute as pc
    mask = None
    for column, value in where.items():
        if column not in table.schema.names:
            raise KeyError(f"no column {column!r}")
        one = pc.is_in(table[column], pa.array(sorted(_values(value)), table.schema.field(column).type))
        mask = one if mask is None else pc.and_(mask, one)
    return table.filter(mask)


def events_where(query: str) -> dict:
    """The windows a query over `events` alone names in its WHERE (rank / window_index / run / worker / window
    = constant or IN constants, at the top of an AND): only those are read. Anything else (a join, an OR, a
    subquery): every window."""
    import json

    import duckdb
    try:
        tree = json.loads(duckdb.execute("SELECT json_serialize_sql(?)", [query]).fetchone()[0])
        node = tree["statements"][0]["node"]
    except (duckdb.Error, KeyError, IndexError, TypeError, ValueError):
        return {}
    source = node.get("from_table") or {}
    if node.get("type") != "SELECT_NODE" or source.get("type") != "BASE_TABLE" or \
            str(source.get("table_name", "")).lower() != EVENTS or node.get("cte_map", {}).get("map") or \
            "SUBQUERY" in json.dumps(node):  # a subquery may read other windows' events
        return {}
    where = node.get("where_clause")
    terms = where.get("children", []) if where and where.get("type") == "CONJUNCTION_AND" else [where] if where else []
    out: dict = {}
    for term in terms:
        found = _pick(term)
        if found:
            column, values = found
            out[column] = out[column] & values if column in out else values
    return {k: sorted(v) for k, v in out.items()}


def _constant(node):
    if node.get("class") != "CONSTANT":
        return None
    literal = node.get("value") or node.get("literal") or {}
    text = literal.get("text", literal.get("value"))
    kind = str(literal.get("kind", literal.get("type", {}).get("id", ""))).upper()
    if text is None:
        return None
    return int(text) if any(k in kind for k in ("INT", "BIGINT")) else str(text)


def _pick(term: dict):
    """(column, values) of `column = constant` / `column IN (constants)` on a window key column, else None."""
    columns = ("rank", "window_index", "run", "worker", "window")
    if term.get("type") == "COMPARE_EQUAL":
        sides = [term.get("left", {}), term.get("right", {})]
    elif term.get("type") == "COMPARE_IN":
        sides = term.get("children", [])
    else:
        return None
    if not sides or sides[0].get("class") != "COLUMN_REF":
        return None
    names = sides[0].get("column_names", [])
    column = names[-1].lower() if names else ""
    values = [_constant(s) for s in sides[1:]]
    if column not in columns or not values or any(v is None for v in values):
        return None
    if column in ("rank", "window_index") and not all(isinstance(v, int) for v in values):
        return None
    if column not in ("rank", "window_index") and not all(isinstance(v, str) for v in values):
        return None
    return column, set(values)


def open_run(logdir_or_run, run: str | list[str] | None = None, cache_dir: str | None = None) -> Run:
    """A Run over a logdir or run folder (a path or URL), or over an existing Store; `run`: only this run
    (or these) of the logdir."""
    from canning_tb.store import Store
    if isinstance(logdir_or_run, (str, os.PathLike)):
        path = os.fspath(logdir_or_run)
        from canning_tb.util.remote_fs import is_url
        if not is_url(path) and not os.path.isdir(path):
            raise FileNotFoundError(f"{path}: no such folder (a logdir or a run folder)")
        store = Store(path, cache_dir=cache_dir)
        if not store.runs():
            raise FileNotFoundError(f"{path}: no profiles found (looked for *.canning.json, *.pt.trace.json[.gz], "
                                    "Chrome trace .json[.gz] files and torch_npu output folders)")
    else:
        store = logdir_or_run
    runs = [run] if isinstance(run, str) else run
    return Run(store, runs)
