"""canning-prof sql: one SQL query over every window of every rank of a run (docs/sql.md).

  canning-prof sql RUN "SELECT ..." [--format=table|csv|json|parquet] [--out FILE] [--max-rows N] [--timeout S]
  canning-prof sql RUN --schema   (the tables and their columns)

RUN is a run folder or a logdir (every run under it; the `run` column tells them apart). The query runs in
DuckDB's sandbox (canning_tb/sql/sandbox.py): one SELECT, no file or network access, at most --max-rows rows
(a note on stderr when there were more) and --timeout seconds. NULL is unknown, printed "-" in the table.
Exit status 2 for a refused or failed query or an input that holds no profile.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from canning_tb.queries.errors import scrub_paths
from canning_tb.util.csv_cells import csv_chunks
from canning_tb.util.remote_fs import RemoteError, is_url

FORMATS = ("table", "csv", "json", "parquet")
MAX_CELL = 60  # characters of a text cell in the table format (csv / json / parquet hold the whole text)


def parser() -> argparse.ArgumentParser:
    from canning_tb.sql import sandbox
    p = argparse.ArgumentParser(prog="canning-prof sql", description="SQL over every window of every rank of a run "
                                "(DuckDB, read-only, no file or network access; docs/sql.md).")
    p.add_argument("input", metavar="RUN", help="a run folder or a logdir (a local path or a URL)")
    p.add_argument("query", nargs="?", help='one SELECT, e.g. "SELECT rank, avg(dur_ns) FROM steps GROUP BY rank"')
    p.add_argument("--format", choices=FORMATS, default="table", help="output format (parquet needs --out)")
    p.add_argument("--out", default=None, metavar="FILE", help="write the answer to FILE instead of stdout")
    p.add_argument("--max-rows", type=int, default=sandbox.DEFAULT_MAX_ROWS, help="rows at most (default "
                   f"{sandbox.DEFAULT_MAX_ROWS:,}; one more is read to tell that the answer was cut)")
    p.add_argument("--timeout", type=float, default=sandbox.DEFAULT_TIMEOUT_S, metavar="S",
                   help=f"seconds the query may run (default {sandbox.DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--run", action="append", metavar="NAME", help="only this run of the logdir (repeatable)")
    p.add_argument("--schema", action="store_true", help="print the tables and their columns, then exit")
    p.add_argument("--cache-dir", default=None,
                   help="where digests and the events' Parquet files are cached (default: the user's cache folder)")
    return p


def sql_command(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if args.max_rows < 0 or args.timeout <= 0:
        print("canning-prof sql: --max-rows must be 0 or more and --timeout more than 0", file=sys.stderr)
        return 2
    if args.schema:
        from canning_tb.sql.schema import describe
        json.dump(describe(), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    if not args.query:
        print("canning-prof sql: a query is needed (or --schema)", file=sys.stderr)
        return 2
    if args.format == "parquet" and not args.out:
        print("canning-prof sql: --format=parquet needs --out FILE", file=sys.stderr)
        return 2
    if args.out and not is_url(args.input) and _inside(args.out, args.input):
        print(f"canning-prof sql: {args.out}: inside the profiles' folder {args.input}: the profiles are never "
              "written to; choose another --out", file=sys.stderr)
        return 2
    from canning_tb.sql import SqlError, open_run
    try:
        run = open_run(args.input, run=args.run, cache_dir=args.cache_dir)
        answer = run.sql(args.query, max_rows=args.max_rows, timeout_s=args.timeout)
    except (SqlError, FileNotFoundError, RemoteError, KeyError) as e:
        message = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        print(f"canning-prof sql: {message}", file=sys.stderr)
        return 2
    for problem in answer.problems:
        print(f"canning-prof sql: left out: {scrub_paths(problem, run.store.logdir)}", file=sys.stderr)
    if answer.truncated:
        print(f"canning-prof sql: truncated to the first {args.max_rows:,} rows (--max-rows)", file=sys.stderr)
    try:
        _write(answer, args)
    except OSError as e:
        print(f"canning-prof sql: cannot write {args.out}: {e.strerror or e}", file=sys.stderr)
        return 2
    return 0


def _inside(path: str, folder: str) -> bool:
    real, root = os.path.realpath(path), os.path.realpath(folder)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _write(answer, args) -> None:
    table = answer.table
    if args.format == "parquet":
        import pyarrow.parquet as pq
        pq.write_table(table, args.out)
        return
    out = open(args.out, "w", encoding="utf-8", newline="") if args.out else sys.stdout
    try:
        if args.format == "csv":
            rows = ([_cell(v) for v in row.values()] for row in table.to_pylist())  # NULL: an empty cell
            for chunk in csv_chunks(table.schema.names, rows):
                out.write(chunk)
        elif args.format == "json":
            from canning_tb.sql import plain
            json.dump({"columns": plain.columns(table), "rows": plain.rows(table), "truncated": answer.truncated,
                       "problems": answer.problems}, out, allow_nan=False, ensure_ascii=False)
            out.write("\n")
        else:
            out.write(text_table(table))
    finally:
        if out is not sys.stdout:
            out.close()


def _cell(value):
    from canning_tb.sql.plain import plain
    value = plain(value)
    return "" if value is None else value


def _shown(value) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "-"  # unknown, never 0
    if isinstance(value, float):
        return f"{value:.6g}"
    text = str(value).replace("\n", " ")
    return text if len(text) <= MAX_CELL else text[:MAX_CELL - 1] + "…"


def text_table(table) -> str:
    """The rows as an aligned text table (numbers right-aligned), "-" for NULL, and how many rows."""
    names = table.schema.names
    rows = [[_shown(v) for v in row.values()] for row in table.to_pylist()]
    numeric = [str(f.type).startswith(("int", "uint", "double", "float", "decimal")) for f in table.schema]
    widths = [max([len(n)] + [len(r[i]) for r in rows]) for i, n in enumerate(names)]

    def line(cells):
        return "  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric)).rstrip()
    out = [line(names), line(["-" * w for w in widths])] + [line(r) for r in rows]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out) + "\n"
