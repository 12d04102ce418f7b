"""SQL and DataFrames over a whole run (docs/sql.md): a front door beside plugin/ and mcp/.

`open_run(logdir_or_run)` (also `canning_tb.open`) -> Run: every window of every rank as Arrow / pandas /
polars tables with `run, worker, rank, window, window_index, step` on every row, and `Run.sql(query)`
through DuckDB's sandbox (sandbox.py). It reads through the store and the views' own functions
(queries/, analysis/); only cli/, mcp/ and `canning_tb.open` import it.
"""
from .run import Run, open_run, table_names
from .sandbox import SqlError

__all__ = ["Run", "SqlError", "open_run", "table_names"]
