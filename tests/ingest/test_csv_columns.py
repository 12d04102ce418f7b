"""The column converters of the Ascend readers (ingest/ascend/csv/columns.py) against values worked out by hand
and against the scalar rules of rows.py, cell by cell: µs text to ns (one byte matrix when every cell has one
width, torch_npu's trailing tab, whole µs; else the cells of one width and point grouped; the cells they must
leave to the scalar rule: N/A, quotes, signs, exponents, non-ASCII digits, a line end inside a cell), floats
(pyarrow's parse bit for bit against float(), in a cast and in pyarrow.csv), ints, scaled MiB / KB, JSON
durations. Each text case runs as a Python list (trace_view.json's values), a pyarrow string array (a CSV
column), a column in several chunks (pyarrow.csv's blocks) and a slice of a longer array. (The cases of the
former tests of cells.py and of the C number cells, test_ascend_cells and test_csv_cells, are here.)"""
from __future__ import annotations

import random
import struct

import numpy as np
import pyarrow as pa
import pytest

from canning_tb.ingest.ascend.csv import arrow as csv_arrow
from canning_tb.ingest.ascend.csv.columns import (MISSING, dur_column, each, float_column, int_column, mapped,
                                                  mapped_rows, scaled_column, take, us_to_ns_column)
from canning_tb.ingest.ascend.csv.rows import to_float, to_int, us_to_ns


def as_list(cells):
    return list(cells)


def as_array(cells):
    return pa.array(cells, pa.string())


def as_chunks(cells):
    """The cells in chunks of 1, 2, 3 ... cells (a null chunk first: pyarrow.csv's blocks can be empty)."""
    out, at, k = [pa.array([], pa.string())], 0, 1
    while at < len(cells):
        out.append(pa.array(cells[at:at + k], pa.string()))
        at, k = at + k, k + 1
    return pa.chunked_array(out, pa.string())


def as_slice(cells):
    """The cells as a slice of a longer array (its data buffer holds other cells before and after them)."""
    return pa.array(["1.5", "x", *cells, "7", "N/A"], pa.string()).slice(2, len(cells))


FORMS = {"list": as_list, "array": as_array, "chunks": as_chunks, "slice": as_slice}


def answers(values, known) -> list:
    return [int(v) if k else None for v, k in zip(values, known)]


LIMIT_US = (1 << 62) // 1000  # 4611686018427387: the largest whole µs whose ns stay below 2**62

TEXT_CASES = {
    "one width, trailing tab": (["1736412474714258.990\t", "1736412474714259.001\t"],
                                [1736412474714258990, 1736412474714259001]),
    "widths mixed, tab on some": (["5.000\t", "12.345", "7", "0.125\t", "12.345"],
                                  [5000, 12345, 7000, 125, 12345]),
    "whole µs up to the limit": ([str(LIMIT_US), str(LIMIT_US + 1), "0000000000000042"],
                                 [LIMIT_US * 1000, None, 42000]),
    "blanks on some rows only": ([" 12.345", "123.456", "\t1.500 "], [12345, 123456, 1500]),
    "left to the scalar rule": (["N/A", "", '"3.5"', "-2.5", "1e3", "12.3456", "\uff11\uff12", "1\n2"],
                                [None, None, 3500, -2500, 1000000, 12346, 12000, None]),
    "line ends that keep the length": (["1234", "", "5\n78"], [1234000, None, None]),
    # written after mutation testing (docs/mutants.md): the 4th decimal rounds half up; the ns limit is 2**62
    # = 4611686018427387904, exclusive, on every path (3 decimals, a sign, 19 digits past int64)
    "the 4th decimal, half up": (["12.3455", "12.3454", "+12.3455"], [12346, 12345, 12346]),
    # (each list one path: a cell that one path declines sends the whole block of its width to the next)
    "at the ns limit, 3 decimals": (["4611686018427387.903", "4611686018427387.904"], [(1 << 62) - 1, None]),
    "at the ns limit, signed": (["+4611686018427387.950", "+4611686018427387.5", "+9999999999999999999"],
                                [None, 4611686018427387500, None]),
    "19 digits of ns past int64": (["9300000000000000.000"], [None]),
    "20 digits of ns": (["12345678901234567.890"], [None]),
    "negative, 3 decimals": (["-123.456", "-000.001"], [-123456, -1]),
}


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("case", sorted(TEXT_CASES))
def test_us_text_columns_give_the_hand_worked_ns(case, form):
    cells, expected = TEXT_CASES[case]
    ns, known = us_to_ns_column(FORMS[form](cells))
    assert ns.dtype == np.int64 and known.dtype == bool
    assert answers(ns, known) == expected
    assert [us_to_ns(c) for c in cells] == expected  # (the scalar rule itself)


@pytest.mark.parametrize("values, expected", [
    ([1, 2, None], [1000, 2000, 0]),
    ([1.25, 3], [1250, 3000]),
    ([0.5, 2.0], [500, 2000]),
    ([1 << 70, 4], [None, 4000]),
    ([LIMIT_US, -LIMIT_US, LIMIT_US + 1], [LIMIT_US * 1000, -LIMIT_US * 1000, None]),
    (["2.5", 1], [2500, 1000]),
    ([], []),
    ([0.5, (1 << 52) + 1], [500, ((1 << 52) + 1) * 1000]),  # an int past float64's exact ns: not through floats
])
def test_json_durations_give_the_hand_worked_ns(values, expected):
    ns, known = dur_column(values)
    assert [int(v) if k else None for v, k in zip(ns, known)] == expected


# Written after mutation testing (docs/mutants.md): the column converters' other paths, each cell worked out by
# hand from the rule the module docstring states (rows.py's scalar rules: µs x 1000 rounded half-even for floats,
# exact for ints, None out of (-2**62, 2**62) ns, for NaN / inf / text that is no number).
@pytest.mark.parametrize("values, expected", [
    ([], []),
    ([1.25, 0.0005, 0.0015, -2.5, float("inf"), float("nan")], [1250, 0, 2, -2500, None, None]),  # half-even
    ([3, -7, LIMIT_US, LIMIT_US + 1], [3000, -7000, LIMIT_US * 1000, None]),
    ([1 << 70, 5], [None, 5000]),                                     # too large for int64: one by one
    (["1.5", 2, 0.25, None, "N/A"], [1500, 2000, 250, None, None]),   # types mixed: each by its own rule
    ([None, None], [None, None]),
    ([True, 4], [None, 4000]),                                        # a bool is no number of µs
])
def test_us_columns_of_numbers_and_mixed_cells(values, expected):
    ns, known = us_to_ns_column(values)
    assert ns.dtype == np.int64 and known.dtype == bool and len(ns) == len(known) == len(expected)
    assert [int(v) if k else None for v, k in zip(ns, known)] == expected


NAN = None  # float_column's NaN, compared as None


@pytest.mark.parametrize("values, expected", [
    (["1.5", " 2.25\t", '"3"', "-0.5", 4, 5.5], [1.5, 2.25, 3.0, -0.5, 4.0, 5.5]),
    (["", "N/A", "NA", "n/a", "None", "null", "-", "nan", "NaN", None], [NAN] * 10),
    (["inf", "-inf", "1e400", float("inf"), "abc", 1 << 2000], [NAN] * 6),
    ([True, "7"], [NAN, 7.0]),                       # to_float: a bool is no measurement
    ([], []),
])
def test_float_column_by_hand(values, expected):
    f = float_column(values)
    assert f.dtype == np.float64
    assert [None if np.isnan(v) else float(v) for v in f] == expected


@pytest.mark.parametrize("values, expected", [
    ([3, -4, (1 << 62) - 1, 1 << 62], [3, -4, (1 << 62) - 1, None]),   # ints: exact, in range
    ([1 << 70, 2], [None, 2]),
    (["3", "2.5", "3.5", "-1.5", "N/A", 7, 8.0], [3, 2, 4, -2, None, 7, 8]),  # rounded half-even, as round()
    (["1e19", None], [None, None]),
    (["4611686018427387904"], [None]),                                  # 2**62 itself, read as a float: unknown
    ([5], [5]),                                                         # a chunk of one row
    ([], []),
])
def test_int_column_by_hand(values, expected):
    a, known = int_column(values)
    assert a.dtype == np.int64 and known.dtype == bool
    assert [int(v) if k else None for v, k in zip(a, known)] == expected


def test_scaled_column_by_hand():
    """MiB -> bytes (x 1024²): 1.5 MiB = 1572864 B, 0.25 MiB = 262144 B; N/A unknown; past 2**62 unknown."""
    a, known = scaled_column(["1.5", 0.25, "N/A", "5e12", 3], 1024 * 1024)
    assert [int(v) if k else None for v, k in zip(a, known)] == [1572864, 262144, None, None, 3145728]
    a, known = scaled_column([4, 2], 1 << 60)  # 4 x 2**60 is the limit itself: unknown
    assert [int(v) if k else None for v, k in zip(a, known)] == [None, 1 << 61]


# -- the same rules on text columns as the CSV readers give them (pyarrow arrays), and the numbers pyarrow.csv reads

FLOAT_TEXT_CASES = {
    "plain": (["1.5", "2.25", "-0.5", "+.5", "5.", "1e3", "2109.6015625"], [1.5, 2.25, -0.5, 0.5, 5.0, 1000.0, 2109.6015625]),
    "blanks and quotes (the scalar rule)": ([" 2.25\t", '"3"', "\t-1 "], [2.25, 3.0, -1.0]),
    "missing": (["", "N/A", "NA", "n/a", "None", "null", "-", "nan", "NaN", None], [None] * 10),
    "no number": (["inf", "-inf", "1e400", "abc", "0x10", "1.2.3"], [None] * 6),
    "what float() takes beyond pyarrow": (["1_0", "\uff11\uff12", " 1e2 "], [10.0, 12.0, 100.0]),
}


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("case", sorted(FLOAT_TEXT_CASES))
def test_float_text_columns_by_hand(case, form):
    cells, expected = FLOAT_TEXT_CASES[case]
    f = float_column(FORMS[form](cells))
    assert [None if np.isnan(v) else float(v) for v in f] == expected == [to_float(c) for c in cells]
    a, known = int_column(FORMS[form](cells))
    assert answers(a, known) == [to_int(c) for c in cells]


def test_what_is_read_from_the_bytes_and_what_is_left_to_the_scalar_rule():
    """By hand (these were the C number cells' cases): plain decimals, spaces and TABs around, are read from the
    bytes; rows._MISSING's texts are None; quotes, other whitespace, exponents in µs, inf, underscores, 19 digits
    go to the scalar rule, which gives each its value."""
    texts = ["1736412474730135.222\t", " 5 ", "+.5", "5.", "-0.0005", "\tN/A", "", "  ", "-", "nan", "None",
             "1e3", '"2"', "1_0", "\x0b1", "inf", ".", "+", "1.2.3", "1234567890123456789", "４２"]
    want = [1736412474730135222, 5000, 500, 5000, -1, None, None, None, None, None, None,
            1000000, 2000, 10000, 1000, None, None, None, None, None, 42000]
    for form in FORMS.values():
        assert answers(*us_to_ns_column(form(texts))) == want
    floats = ["0.1", " -2.5e-3\t", "1E5", "5.", "+.5", "2109.6015625", "9" * 63, "1e400", "N/A", "", "NaN", "inf",
              "NAN", "1_0", "0x10", "1e", "e5", '"3"', "9" * 64]
    f = float_column(as_array(floats))
    assert [None if np.isnan(v) else v for v in f.tolist()] == [0.1, -0.0025, 100000.0, 5.0, 0.5, 2109.6015625,
                                                                 1e63 - 1] + [None] * 6 + [10.0, None, None, None,
                                                                                           3.0, 1e64 - 1]


def test_cells_that_are_no_number_give_0_and_unknown():
    ns, known = us_to_ns_column(as_array(["x", "N/A", "1e3", "inf", None, "1\x002"]))
    assert ns.tolist() == [0, 0, 1000000, 0, 0, 0] and known.tolist() == [False, False, True, False, False, False]


def _bits(f: float) -> bytes:
    return struct.pack("<d", f)


def _float_texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    texts = ["-0.0", "0.0", "9007199254740992", "9007199254740993", "1e22", "1e23", "1e-22", "1e-23",
             "4.9e-324", "2.4e-324", "1.7976931348623157e308", "123456789012345678901234567890.5",
             "0.30000000000000004", "2109.6015625", "1736412474730135.222",
             "1e00005", "1e-00022", "1e4294967297", "1e-4294967297", "5e" + "9" * 40]  # (exponents past int32)
    for _ in range(n):
        whole = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 12)))
        frac = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 12)))
        texts.append(rng.choice(["", "-", "+"]) + (whole or "0") + ("." + frac if frac or rng.random() < 0.2 else "")
                     + (f"e{rng.randint(-330, 330)}" if rng.random() < 0.3 else ""))
    return texts


def test_floats_are_python_floats_bit_for_bit():
    """Exact (Clinger's fast path: <= 2**53 and 10**+-22) and past it (many digits, far exponents, -0, subnormal
    and overflowing): each cell's float64 is float(text)'s, bit for bit, both where pyarrow casts a text column
    (columns.float_column) and where pyarrow.csv reads a number column while parsing (arrow.read's floats)."""
    texts = _float_texts(1202, 20000)
    cast = float_column(as_array(texts))
    raw = ("a,b\n" + "".join(f"{k},{t}\n" for k, t in enumerate(texts))).encode()
    (read,) = csv_arrow.read(raw, 2, [1], {1}, MISSING)
    assert pa.types.is_floating(read.type)  # read as numbers: every cell taken
    parsed = float_column(read)
    for text, a, b in zip(texts, cast.tolist(), parsed.tolist()):
        want = float(text)
        want = want if np.isfinite(want) else np.nan
        assert _bits(a) == _bits(want) and _bits(b) == _bits(want), text


_ALPHABET = "0123456789" * 4 + ".-+eE \t" * 2 + 'NA/anul_x"\x0b\u00b5\uff11'


@pytest.mark.parametrize("seed", range(4))
def test_random_cells_give_the_scalar_rules(seed):
    """20,000 random cells a seed (digits, signs, points, exponents, blanks, the missing texts' letters, quotes,
    other whitespace, non-ASCII digits) and 20,000 decimals (up to 20 whole digits, 6 decimals, signs, blanks
    around): each column converter's answer is the scalar rule's, cell by cell, as a text column and as a
    pyarrow.csv number column (read again as text where pyarrow.csv cannot read a cell)."""
    rng = random.Random(seed)
    texts = ["".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 24))) for _ in range(20000)]
    for _ in range(20000):
        whole = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 20)))
        frac = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 6)))
        texts.append(rng.choice(["", " ", "\t"]) + rng.choice(["", "", "-", "+"]) + whole
                     + ("." + frac if rng.random() < 0.7 else "") + rng.choice(["", "\t", " "]))
    texts += ["N/A", "nan", "-", "", "1.5\t", "1e400", "inf", "-0", "99999999999999999999", "0" * 19 + "1.5",
              "0" * 20 + "1.5", "4611686018427387.903", "4611686018427387.904", "-4611686018427387.9035"]
    cells = as_array(texts)
    assert answers(*us_to_ns_column(cells)) == [us_to_ns(t) for t in texts]
    assert answers(*us_to_ns_column(as_chunks(texts))) == [us_to_ns(t) for t in texts]
    plain = [t for t in texts if "\t" not in t and not t.startswith(" ")]  # (no TAB: not one width in a matrix)
    assert answers(*us_to_ns_column(as_array(plain))) == [us_to_ns(t) for t in plain]
    want_f = [to_float(t) for t in texts]
    f = float_column(cells)
    assert [None if np.isnan(v) else v for v in f.tolist()] == want_f
    quoted = ['"' + t.replace('"', '""') + '"' for t in texts]  # every cell as one CSV cell, whatever it holds
    (read,) = csv_arrow.read(("a,b\n" + "".join(f"{k},{q}\n" for k, q in enumerate(quoted))).encode(), 2, [1], {1},
                             MISSING)
    assert [None if np.isnan(v) else v for v in float_column(read).tolist()] == want_f
    mib, known = scaled_column(cells, 1 << 20)
    assert answers(mib, known) == [None if (v := to_float(t)) is None or not abs(v * (1 << 20)) < 1 << 62
                                   else round(v * (1 << 20)) for t in texts]
    ints, known = int_column(cells)
    assert answers(ints, known) == [to_int(t) for t in texts]


def test_a_number_column_pyarrow_reads_as_text_where_a_cell_is_no_number():
    """arrow.read: a number column with a cell pyarrow.csv cannot read as a number (a quoted quote, an underscore)
    comes back as text, and the scalar rule reads that cell; the others stay numbers."""
    raw = b'a,b,c\n1,2.5,"""3"""\n2,N/A,1_0\n3,,4\n'
    b, c = csv_arrow.read(raw, 3, [1, 2], {1, 2}, MISSING)
    assert pa.types.is_floating(b.type) and pa.types.is_string(c.type)
    assert b.to_pylist() == [2.5, None, None] and c.to_pylist() == ['"3"', "1_0", "4"]
    assert float_column(c).tolist() == [3.0, 10.0, 4.0]


def test_take_keeps_the_chosen_rows_in_order():
    rows = np.array([3, 0, 2])
    for form in FORMS.values():
        cells = form(["1", "2", "x", "4"])
        picked = take(cells, rows)
        assert (picked.to_pylist() if hasattr(picked, "to_pylist") else picked) == ["4", "1", "x"]
        assert answers(*us_to_ns_column(picked)) == [4000, 1000, None]


def test_text_cells_are_mapped_once_per_distinct_cell():
    """mapped: fn once per distinct cell (a null too), in order of first appearance; mapped_rows: once per
    distinct row of several columns."""
    seen = []

    def fn(cell):
        seen.append(cell)
        return len(cell or "") * 10
    for name, form in FORMS.items():
        seen.clear()
        cells = form(["ab", None, "ab", "c", None, "ab"])
        got = mapped(cells, fn)
        assert got.dtype == np.int32 and got.tolist() == [20, 0, 20, 10, 0, 20] and seen == ["ab", None, "c"], name
        assert each(cells, lambda c: c and c.upper()) == ["AB", None, "AB", "C", None, "AB"], name
        assert (cells if name == "list" else cells.to_pylist()) == ["ab", None, "ab", "c", None, "ab"]
        seen.clear()
        rows = mapped_rows([form(["a", "a", "b", "a"]), as_chunks(["x", "y", "x", "x"])],
                           lambda r: seen.append(r) or len(seen))
        assert rows.tolist() == [1, 2, 3, 1] and seen == [("a", "x"), ("a", "y"), ("b", "x")], name
    assert mapped(as_array([]), fn).tolist() == [] and mapped_rows([[], []], fn).tolist() == []
