"""ingest/ascend/db/columns.py under mutation (issue 46): `select` (blocks of group_concat text, NULLs, strict
text), `text_ids`, `texts`, `lookup`, `or_none` on small tables made here; every answer by hand."""
from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from canning_tb.ingest.ascend.db import columns as q
from canning_tb.ingest.table import Strings

INT_NULL = np.iinfo(np.int64).min


def _conn(rows, cols="a, b, x, y"):
    c = sqlite3.connect(":memory:")
    c.execute(f"create table t ({cols})")
    c.executemany(f"insert into t values ({', '.join('?' * len(cols.split(',')))})", rows)
    return c


@pytest.mark.parametrize("block", [1, 2, 3, 1 << 18])
def test_select_two_ints_two_reals_in_blocks(monkeypatch, block):
    """Five rows read in blocks of 1, 2, 3 rows or one block: the same columns, in rowid order, NULL int ->
    INT_NULL, NULL real -> NaN, 2**62 + 1 keeps every digit, 0.1 and 1e-300 the same double."""
    monkeypatch.setattr(q, "_BLOCK_ROWS", block)
    c = _conn([(1, -7, 0.5, None), (None, 2**62 + 1, 0.1, 2.0), (3, 0, None, -1e-300), (4, 5, 1e308 * 10, 3.25),
               (-5, None, -0.0, 7.0)])
    got = q.select(c, "t", ints=["a", "b"], reals=["x", "y"])
    assert list(got) == ["a", "b", "x", "y"]
    assert got["a"].dtype == np.int64 and got["x"].dtype == np.float64
    assert got["a"].tolist() == [1, INT_NULL, 3, 4, -5]
    assert got["b"].tolist() == [-7, 2**62 + 1, 0, 5, INT_NULL]
    x, y = got["x"].tolist(), got["y"].tolist()
    assert x[0:2] == [0.5, 0.1] and np.isnan(x[2]) and x[3:] == [float("inf"), 0.0]
    assert np.isnan(y[0]) and y[1:] == [2.0, -1e-300, 3.25, 7.0]


def test_select_follows_the_order_and_reads_a_query_as_source():
    """order='k' reads rows by k (not rowid): k 3, 1, 2 inserted -> rows of k 1, 2, 3; a parenthesised query
    as source; ints only and reals only each alone."""
    c = _conn([(3, 30, 0.3, None), (1, 10, 0.1, None), (2, 20, 0.2, None)], cols="k, a, x, y")
    assert q.select(c, "t", ints=["a"], order="k")["a"].tolist() == [10, 20, 30]
    assert q.select(c, "t", reals=["x"], order="k")["x"].tolist() == [0.1, 0.2, 0.3]
    got = q.select(c, "(select k, a * 2 as d from t where k > 1)", ints=["d"], order="k")
    assert got == {"d": got["d"]} and got["d"].tolist() == [40, 60]


def test_select_of_no_rows_keeps_the_dtypes():
    """An empty table: each column empty, int64 for ints and float64 for reals."""
    c = _conn([])
    got = q.select(c, "t", ints=["a"], reals=["x"], strict=("a",))
    assert got["a"].dtype == np.int64 and got["x"].dtype == np.float64
    assert got["a"].shape == (0,) and got["x"].shape == (0,)


def test_select_strict_text_must_be_an_integer():
    """strict columns: '12' and b'7' as text / blob are integers' text (read as 12 and 7); '1.5' and a 50
    character text are errors naming the expression and the first 40 characters; a column not strict takes
    SQLite's cast ('1.5' -> 1, 'abc' -> 0)."""
    c = _conn([("12", "1.5", None, None), (b"7", "abc", None, None)])
    got = q.select(c, "t", ints=["a", "b"], strict=("a",))
    assert got["a"].tolist() == [12, 7] and got["b"].tolist() == [1, 0]
    with pytest.raises(ValueError) as e:
        q.select(c, "t", ints=["a", "b"], strict=("a", "b"))
    assert str(e.value) == "b holds '1.5', not a number of ns"
    long = "z" * 50
    c = _conn([(1, 2, None, None), (long, 3, None, None)])
    with pytest.raises(ValueError) as e:
        q.select(c, "t", ints=["a", "b"], strict=("b", "a"))
    assert str(e.value) == f"a holds {'z' * 40!r}, not a number of ns"
    # a strict int column of plain integers and NULL: no error
    c = _conn([(None, 1, None, None)])
    assert q.select(c, "t", ints=["a"], strict=("a",))["a"].tolist() == [INT_NULL]


def test_known_or_none_and_lookup_by_hand():
    """known: != INT_NULL; or_none: INT_NULL -> absent; lookup: values of keys equal to at, else absent (keys in
    any order; at below, between and past the keys; no keys at all)."""
    col = np.array([5, INT_NULL, 0], np.int64)
    assert q.known(col).tolist() == [True, False, True]
    assert q.or_none(col, -1).tolist() == [5, -1, 0]
    keys, values = np.array([30, 10, 20]), np.array([3, 1, 2])
    at = np.array([10, 5, 25, 30, 40, 20])
    assert q.lookup(keys, values, at, -9).tolist() == [1, -9, -9, 3, -9, 2]
    got = q.lookup(np.zeros(0, np.int64), np.zeros(0, np.int64), np.array([1, 2]), -9)
    assert got.tolist() == [-9, -9] and got.dtype == np.int64


class _Db:
    def __init__(self, strings):
        self.strings = strings


def test_text_ids_by_hand():
    """ids 2, 1, NULL, 2, 99 (not in STRING_IDS) of strings {1: 'a', 2: 'bb'}: fn of the text -> its id in a table
    that already holds 'x' (id 0); fn(None) None -> -1."""
    db = _Db({1: "a", 2: "bb"})
    s = Strings(["x"])
    ids = np.array([2, 1, INT_NULL, 2, 99], np.int64)
    got = q.text_ids(db, ids, s)
    assert got.dtype == np.int32
    # distinct ids in order 1, 2, 99, INT_NULL... np.unique sorts: INT_NULL, 1, 2, 99 -> None, 'a', 'bb', None
    assert [s[i] if i >= 0 else None for i in got.tolist()] == ["bb", "a", None, "bb", None]
    assert got.tolist()[2] == -1 and got.tolist()[4] == -1
    got = q.text_ids(db, ids, s, lambda v: (v or "?") + "!")
    assert [s[i] for i in got.tolist()] == ["bb!", "a!", "?!", "bb!", "?!"]
    # a STRING_IDS row whose id is INT_NULL (SQLite holds any int64): a NULL cell is still no text
    got = q.text_ids(_Db({INT_NULL: "ghost", 1: "a"}), np.array([INT_NULL, 1], np.int64), s)
    assert [s[i] if i >= 0 else None for i in got.tolist()] == [None, "a"]
    empty = q.text_ids(db, np.zeros(0, np.int64), s)
    assert empty.dtype == np.int32 and empty.shape == (0,)


def test_texts_by_hand():
    """texts: codes into a local list in the order of the sorted distinct ids, one entry per distinct value
    (two ids of one text share it), fn(None) None -> -1; fn gets the id too."""
    db = _Db({1: "a", 2: "b", 3: "a"})
    ids = np.array([3, 2, INT_NULL, 1, 3, 7], np.int64)
    codes, values = q.texts(db, ids, lambda v, i: v)
    # sorted distinct: INT_NULL (None: -1), 1 'a' -> 0, 2 'b' -> 1, 3 'a' -> 0, 7 (None: -1)
    assert values == ["a", "b"] and codes.dtype == np.int32
    assert codes.tolist() == [0, 1, -1, 0, 0, -1]
    codes, values = q.texts(db, ids, lambda v, i: f"{v}:{i}" if i != INT_NULL else None)
    assert values == ["a:1", "b:2", "a:3", "None:7"]
    assert codes.tolist() == [2, 1, -1, 0, 2, 3]
    codes, values = q.texts(_Db({INT_NULL: "ghost"}), np.array([INT_NULL], np.int64), lambda v, i: v)
    assert codes.tolist() == [-1] and values == []
    codes, values = q.texts(db, np.zeros(0, np.int64))
    assert codes.dtype == np.int32 and codes.shape == (0,) and values == []
