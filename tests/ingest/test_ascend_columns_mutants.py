"""ingest/ascend/csv/columns.py under mutation (docs/mutants.md, issue 46): the helpers the CSV readers take cells
with (texts, cell, distinct, mapped_rows, dense) and the dtypes the readers index with, each answer worked out by
hand or by a Python dict of the rows (an independent reading: no numpy, no pyarrow)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from canning_tb.ingest.ascend.csv.columns import (cell, dense, distinct, float_column, int_column, mapped_rows, texts,
                                                  us_to_ns_column)


def _forms(cells: list) -> dict:
    """The cells as a list (trace_view.json), an array (a CSV column) and a chunked array whose only cells are
    in its second chunk (pyarrow.csv's first block can be empty)."""
    return {"list": list(cells), "array": pa.array(cells, pa.string()),
            "chunks": pa.chunked_array([pa.array([], pa.string()), pa.array(cells, pa.string())])}


def test_texts_and_cell_give_python_values_of_every_form():
    for name, col in _forms(["a", None, "7"]).items():
        assert texts(col) == ["a", None, "7"], name
        assert cell(col, 2) == "7" and cell(col, 1) is None and cell(col, 0) == "a", name


def test_distinct_cells_in_order_of_first_appearance():
    """["b", None, "b", "a", None]: distinct b, None, a (first seen at 0, 1, 3); codes 0 1 0 2 1. A chunked array
    with one chunk of cells (after an empty one) and a Distinct given again read the same."""
    for name, col in _forms(["b", None, "b", "a", None]).items():
        got = distinct(col)
        assert got.values == ["b", None, "a"] and got.codes.tolist() == [0, 1, 0, 2, 1], name
        assert distinct(got) is got
    assert distinct([]).values == [] and distinct([]).codes.tolist() == []


def _by_dict(rows: list[tuple]) -> tuple[list, list]:
    """(each row's 1-based rank among the distinct rows in order of first appearance, the distinct rows): what
    mapped_rows gives with a function that counts its calls, read with a Python dict of tuples."""
    rank: dict[tuple, int] = {}
    for r in rows:
        rank.setdefault(r, len(rank) + 1)
    return [rank[r] for r in rows], list(rank)


def _counting():
    calls: list[tuple] = []
    return calls, lambda row: calls.append(row) or len(calls)


def test_mapped_rows_keeps_rows_apart_whose_codes_would_add_up_alike():
    """Column a: x y z x (codes 0 1 2 0); b: p p p q (0 0 0 1). The rows (z, p) and (x, q) are distinct: keys
    a * 2 + b = 4 and 1 (keys a / 2 + b = 1 and 1 would merge them). Four distinct rows, fn once each, int32 as
    asked (and for no rows)."""
    a, b = ["x", "y", "z", "x"], ["p", "p", "p", "q"]
    calls, fn = _counting()
    got = mapped_rows([pa.array(a), b], fn)
    assert got.dtype == np.int32 and got.tolist() == [1, 2, 3, 4]
    assert calls == [("x", "p"), ("y", "p"), ("z", "p"), ("x", "q")]
    assert mapped_rows([[], []], fn).dtype == np.int32


def test_mapped_rows_of_many_columns_past_int64_keys():
    """64 columns of 4 and 5 distinct cells: the product of the columns' sizes is about 4**64, far past int64, so
    the running key must be made dense again on the way (else a row and one that differs from it in one column
    could wrap to the same key). Rows: four base rows (column j of row i: v{(i + j) % 4}), base row 0 with one
    column changed to "w" at 0, 29, 31, 59 and 63, base row 2 again. Expected by a dict of the row tuples: the
    9 distinct rows ranked 1..9 in order, the repeat of base row 2 ranked 3."""
    base = [[f"v{(i + j) % 4}" for j in range(64)] for i in range(4)]
    rows = [list(r) for r in base]
    for p in (0, 29, 31, 59, 63):
        r = list(base[0])
        r[p] = "w"
        rows.append(r)
    rows.append(list(base[2]))
    tuples = [tuple(r) for r in rows]
    want, distinct_rows = _by_dict(tuples)
    assert want == [1, 2, 3, 4, 5, 6, 7, 8, 9, 3]
    cols = [pa.array([r[j] for r in rows], pa.string()) for j in range(64)]
    calls, fn = _counting()
    assert mapped_rows(cols, fn).tolist() == want
    assert calls == distinct_rows


def test_mapped_rows_where_keys_pass_int64_and_float64_precision():
    """17 rows over 32 columns: column 0 holds 'a' (one row 'b'), every other column 16 distinct cells (column j of
    base row i: v{(i + j) % 16}), so each column multiplies the key space by 16 and 2 * 16**15 = 2**61 passes
    float64's exact 2**53 long before the key is made dense again (at 2**62). Rows beside the 16 base rows: base
    row 0 with 'b' in column 0 (its key 2**64 past base row 0's after 16 more columns: the same int64 if never made
    dense); base row 15 with column 15 and, apart, column 29 as base row 14 has them (one code apart, where a
    float64 key could no longer tell them apart). By a dict of the tuples: 19 distinct rows, ranks 1..19."""
    base = [["a"] + [f"v{(i + j) % 16}" for j in range(1, 32)] for i in range(16)]
    rows = [list(r) for r in base]
    rows.append(["b"] + base[0][1:])
    for p in (15, 29):
        r = list(base[15])
        r[p] = base[14][p]
        rows.append(r)
    tuples = [tuple(r) for r in rows]
    want, distinct_rows = _by_dict(tuples)
    assert want == list(range(1, 20))
    calls, fn = _counting()
    assert mapped_rows([pa.array([r[j] for r in rows], pa.string()) for j in range(32)], fn).tolist() == want
    assert calls == distinct_rows


def test_dense_of_no_values_and_of_repeats():
    """dense: np.unique's answer up to the order. [] -> ([], []); [7, 3, 7, 9, 3] -> distinct 7 3 9, positions
    0 1 0 2 1."""
    uniq, at = dense(np.zeros(0, np.int64))
    assert len(uniq) == 0 and at.shape == (0,) and at.dtype.kind == "i"
    uniq, at = dense(np.array([7, 3, 7, 9, 3], np.int64))
    assert uniq.tolist() == [7, 3, 9] and at.tolist() == [0, 1, 0, 2, 1]


def test_whole_us_lists_give_a_boolean_known_mask():
    """Whole µs in range (3 and -7: 3000 and -7000 ns) take the int fast path; `known` must be a mask of bools
    (the readers index with it: ts[known]), not ones of another dtype."""
    ns, known = us_to_ns_column([3, -7])
    assert known.dtype == np.bool_ and ns.dtype == np.int64
    assert ns.tolist() == [3000, -7000] and known.tolist() == [True, True]
    ints, known = int_column([3, -7])
    assert known.dtype == np.bool_ and ints.tolist() == [3, -7]


def test_one_width_cells_with_blank_columns_and_whole_us():
    """Cells of one width (one byte matrix): a trailing TAB column and a leading space column dropped, one column
    each, before the digits are read: '1234\\t' -> 1234 µs = 1234000 ns; ' 1234' -> 1234000; ' 12.345' -> 12345."""
    for cells, want in ((["1234\t", "5678\t"], [1234000, 5678000]),
                        ([" 1234", " 5678"], [1234000, 5678000]),
                        ([" 12.345", " 99.001"], [12345, 99001])):
        for name, col in _forms(cells).items():
            ns, known = us_to_ns_column(col)
            assert [int(v) if k else None for v, k in zip(ns, known)] == want, (cells, name)


def test_whole_us_of_19_digits_past_int64_are_unknown():
    """'9223372036854775808' µs (2**63: 19 digits, one width) is no int64 and far past the 2**62 ns limit: unknown,
    as the scalar rule says (read digit by digit in int64 it would wrap to -2**63 and look known)."""
    for name, col in _forms(["9223372036854775808", "9223372036854775808"]).items():
        ns, known = us_to_ns_column(col)
        assert known.tolist() == [False, False], name


def test_an_empty_text_column_gives_no_floats():
    assert float_column(pa.array([], pa.string())).shape == (0,)
    assert float_column(pa.chunked_array([], pa.string())).shape == (0,)


def _ns(col) -> list:
    ns, known = us_to_ns_column(col)
    assert ns.dtype == np.int64 and known.dtype == np.bool_ and len(ns) == len(known) == len(col)
    return [int(v) if k else None for v, k in zip(ns, known)]


def test_one_width_blocks_that_are_no_3_decimal_timestamps():
    """Blocks of one width that the 3-decimal matrix must not take, each worked out by the rule (rows.us_to_ns):
    4 decimals ('12.3456' -> 12345 ns + the 4th decimal 6 rounds up = 12346; '12.3454' -> 12345); 2 decimals
    ('123.45' -> 123450); a slash or a colon where a digit or the point should be, in decimals or in whole µs (no
    number: unknown); a '!' after whole µs (no number, though '1234' alone would be 1234000)."""
    cases = ((["12.3456", "12.3454"], [12346, 12345]),
             (["123.45", "678.90"], [123450, 678900]),
             (["12/345", "67/890"], [None, None]),
             (["1:2.345", "1:2.345"], [None, None]),
             (["12:4", "56:7"], [None, None]),
             (["1234!", "5678!"], [None, None]))
    for cells, want in cases:
        for name, col in _forms(cells).items():
            assert _ns(col) == want, (cells, name)


def test_cells_of_mixed_widths_at_the_limits():
    """Mixed widths (no one-width matrix: each width and point place a group). The ns limit 2**62 =
    4611686018427387904 is exclusive: '4611686018427387.903' µs is 2**62 - 1 ns, known; '.904' is 2**62, unknown.
    19 whole digits ('9300000000000000000.5', past int64 as µs) unknown. 4 decimals of a large timestamp are exact
    (no float): '1736412474714258.9904' -> 1736412474714258990 (the 4th decimal 4 rounds down), '.9905' -> ...991."""
    cells = ["4611686018427387.903", "1.5", "4611686018427387.904", "9300000000000000000.5",
             "1736412474714258.9904", "1736412474714258.9905"]
    want = [(1 << 62) - 1, 1500, None, None, 1736412474714258990, 1736412474714258991]
    for name, col in _forms(cells).items():
        assert _ns(col) == want, name


def test_us_columns_of_other_arrow_types_and_of_no_cells():
    """A float64 column of µs (1.5 -> 1500 ns, 2.0 -> 2000), a large_string column (int64 offsets: '1.5' -> 1500,
    '20' -> 20000), an empty column and one of only empty cells or no cells (unknown each)."""
    assert _ns(pa.array([1.5, 2.0])) == [1500, 2000]
    assert _ns(pa.array(["1.5", "20", None], pa.large_string())) == [1500, 20000, None]
    assert _ns(pa.array([], pa.string())) == [] and _ns(pa.chunked_array([], pa.string())) == []
    assert _ns(pa.array(["", ""], pa.string())) == [None, None]
    assert _ns(pa.nulls(3, pa.string())) == [None, None, None]
    assert _ns(pa.array(["X5 ", "1.5"], pa.string())) == [None, 1500]  # only blanks are trimmed, not the X
