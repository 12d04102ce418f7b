"""Columns straight out of SQLite: a query's values come back as one text per block of rows
(`group_concat`), parsed by numpy, so no Python object is made per row; joins, the latest row per key
and the grouping of call stacks are done by SQLite. Integers keep every digit (a NULL reads as
INT_NULL); reals are printed with 17 significant digits, which gives back the same double (NULL: NaN).
"""
from __future__ import annotations

import numpy as np

from canning_tb.ingest.side_tables import INT_NULL

_BLOCK_ROWS = 1 << 18  # rows per group_concat text (the text of one block is held at once)


def _parse(text: str | None, n_cols: int, dtype) -> np.ndarray:
    if not text:
        return np.zeros((0, n_cols), dtype)
    return np.fromstring(text, dtype=dtype, sep=",").reshape(-1, n_cols)


def select(conn, source: str, ints: list[str] = (), reals: list[str] = (), order: str = "rowid",
           strict: tuple[str, ...] = ()) -> dict:
    """{expression: column} of `source` (a table, or a parenthesised query with a `rowid`-like order
    column), in `order`: int64 for `ints` (INT_NULL for NULL), float64 for `reals` (NaN for NULL).
    `strict`: int expressions where text that is no integer is an error (ValueError naming it), as
    Python's int() of the value would be; elsewhere SQLite's cast decides."""
    out = {e: [] for e in [*ints, *reals]}
    n = conn.execute(f"select count(*) from {source}").fetchone()[0]
    odd = "+".join(f"total(typeof({e}) in ('text', 'blob'))" for e in strict) or "0"
    for offset in range(0, n, _BLOCK_ROWS):
        rows = f"(select * from {source} order by {order} limit {_BLOCK_ROWS} offset {offset})"
        if ints:
            expr = "||','||".join(f"coalesce(cast({e} as integer), {INT_NULL})" for e in ints)
            text, texts = conn.execute(f"select group_concat({expr}, ','), {odd} from {rows}").fetchone()
            if texts:
                _check_texts(conn, rows, strict)
            for i, col in enumerate(_parse(text, len(ints), np.int64).T):
                out[ints[i]].append(col)
        if reals:
            # printf prints NULL as 0.0, so NULL is tested first (NaN: unknown, never 0)
            expr = "||','||".join(f"(case when {e} is null then 'nan' else replace(printf('%!.17g', {e}), 'Inf', 'inf')"
                                  f" end)" for e in reals)
            text = conn.execute(f"select group_concat({expr}, ',') from {rows}").fetchone()[0]
            for i, col in enumerate(_parse(text, len(reals), np.float64).T):
                out[reals[i]].append(col)
    return {e: np.concatenate(v) if v else np.zeros(0, np.int64 if e in ints else np.float64)
            for e, v in out.items()}


def _check_texts(conn, rows: str, strict: tuple[str, ...]) -> None:
    """SQLite keeps any type in any column: a time written as text must at least be an integer's text."""
    for e in strict:
        for (v,) in conn.execute(f"select {e} from {rows} where typeof({e}) in ('text', 'blob')"):
            try:
                int(v)
            except (TypeError, ValueError):
                raise ValueError(f"{e} holds {str(v)[:40]!r}, not a number of ns") from None


def known(col: np.ndarray) -> np.ndarray:
    return col != INT_NULL


def or_none(col: np.ndarray, absent: int) -> np.ndarray:
    """INT_NULL -> absent (the plain reading's `None -> NONE`)."""
    return np.where(col == INT_NULL, absent, col)


def text_ids(db, ids: np.ndarray, strings, fn=lambda v: v) -> np.ndarray:
    """STRING_IDS ids -> ids in the table's strings of fn(text) (NULL or unknown id: fn(None))."""
    uniq, inverse = np.unique(ids, return_inverse=True)
    mapped = []
    for u in uniq.tolist():
        text = None if u == INT_NULL else db.strings.get(u)
        v = fn(text)
        mapped.append(-1 if v is None else strings.id(v))
    return np.array(mapped, np.int32)[inverse] if len(uniq) else np.zeros(0, np.int32)


def texts(db, ids: np.ndarray, fn=lambda v: v) -> tuple[np.ndarray, list]:
    """(ids into a local list, the list) of fn(text) per STRING_IDS id: a side table's str column."""
    uniq, inverse = np.unique(ids, return_inverse=True)
    values, index = [], {}
    codes = []
    for u in uniq.tolist():
        v = fn(None if u == INT_NULL else db.strings.get(u), u)
        if v is None:
            codes.append(-1)
            continue
        if v not in index:
            index[v] = len(values)
            values.append(v)
        codes.append(index[v])
    return (np.array(codes, np.int32)[inverse] if len(uniq) else np.zeros(0, np.int32)), values


def lookup(keys: np.ndarray, values: np.ndarray, at: np.ndarray, absent: int) -> np.ndarray:
    """values[keys == at] for each of at (keys unique), else absent."""
    if not len(keys):
        return np.full(len(at), absent, np.int64)
    order = np.argsort(keys, kind="stable")
    k, v = keys[order], values[order]
    pos = np.clip(np.searchsorted(k, at), 0, len(k) - 1)
    return np.where(k[pos] == at, v[pos], absent)
