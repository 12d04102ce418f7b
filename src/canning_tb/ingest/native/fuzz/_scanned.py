"""The checks both scanner targets make of an answer: a piece the scanner takes must be strict JSON (it
declines anything else, for the plain reading), its columns exactly n rows long, its ids inside its
tables and its spans whole elements of the piece. A broken check raises: atheris reports it as a crash."""
import json

import numpy as np


def strict_json(data: bytes):
    """The piece as Python's json reads strict UTF-8: what a taken piece must be."""
    return json.loads(data.decode("utf-8"))


def widths(got: dict, n: int, sizes: dict) -> None:
    for key, size in sizes.items():
        assert len(got[key]) == n * size, (key, len(got[key]), n, size)


def ids(got: dict, key: str, table: list) -> None:
    """Every id of column `key` is -1 (none) or a row of `table`."""
    col = np.frombuffer(got[key], np.int32)
    assert col.size == 0 or (col.min() >= -1 and col.max() < len(table)), key


def spans(spans: bytes, data: bytes) -> None:
    """Each (start, end) is one element: '{' to '}' inside the piece, in order, not overlapping."""
    pairs = np.frombuffer(spans, np.int64).reshape(-1, 2)
    last = 0
    for a, b in pairs.tolist():
        assert last <= a < b <= len(data) and data[a] == 0x7B and data[b - 1] == 0x7D, (a, b, len(data))
        last = b


def tables(*lists: list) -> None:
    """Each interned text is a whole JSON value, raw."""
    for table in lists:
        for text in table:
            strict_json(text)
