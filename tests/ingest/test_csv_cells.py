"""The CSVs' number cells converted from the file's bytes (csv_fast.ByteCells through _cells.c) against
csv_io's scalar rules (us_to_ns, to_float) applied to the same cells' text, one by one: the hand-worked
cases of test_ascend_cells, the statuses the C part gives (what it takes, what it leaves to the scalar
rule), floats bit for bit against Python's float(), and thousands of random cells. Without _cells built
(no C compiler) cells.py converts the texts instead: the fixtures' equality tests run both ways."""
from __future__ import annotations

import random
import struct

import numpy as np
import pytest

from canning_tb.ingest.ascend.csv import fast as csv_fast
from canning_tb.ingest.ascend.csv.cells import float_column, int_column, scaled_column, take, us_to_ns_column
from canning_tb.ingest.ascend.csv.rows import to_float, us_to_ns

from test_ascend_cells import TEXT_CASES

KNOWN, NONE, ODD = csv_fast.KNOWN, csv_fast.MISSING, csv_fast.ODD
pytestmark = pytest.mark.compiled("_ascend_cells")  # each test asks _cells.c; skipped where it is not built


def byte_cells(texts: list[str], quoted: bool = False) -> csv_fast.ByteCells:
    """The texts as one column of an exact-size buffer (the last cell ends at the buffer's end)."""
    raw = [t.encode("utf-8") for t in texts]
    ends = np.cumsum([len(r) for r in raw], dtype=np.int64)
    starts = ends - np.array([len(r) for r in raw], np.int64)
    return csv_fast.ByteCells(np.frombuffer(b"".join(raw), np.uint8).copy(), starts, ends, quoted)


def statuses(texts: list[str], floats: bool) -> list[int]:
    got = byte_cells(texts).numbers(floats)
    assert got is not None, "_cells is not built (test_trace_scan.test_the_scanner_is_built says why)"
    return got[1].tolist()


def answers(values, known) -> list:
    return [v.item() if k else None for v, k in zip(values, known)]


def test_the_cells_part_is_built():
    assert csv_fast._cells is not None and csv_fast.cells_enabled()


@pytest.mark.parametrize("case", sorted(TEXT_CASES))
def test_byte_cells_give_the_hand_worked_ns(case):
    cells, expected = TEXT_CASES[case]
    assert answers(*us_to_ns_column(byte_cells(cells))) == expected


def test_what_the_c_part_takes_and_what_it_leaves():
    """By hand: plain decimals (spaces and TABs around) are KNOWN, csv_io._MISSING's texts NONE, anything
    else ODD (for the scalar rule): quotes, other whitespace, exponents in µs, inf, underscores, 19 digits."""
    texts = ["1736412474730135.222\t", " 5 ", "+.5", "5.", "-0.0005", "\tN/A", "", "  ", "-", "nan", "None",
             "1e3", '"2"', "1_0", "\x0b1", "inf", ".", "+", "1.2.3", "1234567890123456789", "４２"]
    assert statuses(texts, floats=False) == [KNOWN] * 5 + [NONE] * 6 + [ODD] * 10
    assert answers(*us_to_ns_column(byte_cells(texts))) == [
        1736412474730135222, 5000, 500, 5000, -1, None, None, None, None, None, None,
        1000000, 2000, 10000, 1000, None, None, None, None, None, 42000]
    floats = ["0.1", " -2.5e-3\t", "1E5", "5.", "+.5", "2109.6015625", "9" * 63, "1e400", "N/A", "", "NaN", "inf",
              "NAN", "1_0", "0x10", "1e", "e5", '"3"', "9" * 64]  # (63 characters: the longest taken)
    assert statuses(floats, floats=True) == [KNOWN] * 7 + [NONE] * 4 + [ODD] * 8
    f = float_column(byte_cells(floats))
    want = [0.1, -0.0025, 100000.0, 5.0, 0.5, 2109.6015625, 1e63 - 1] + [None] * 6 + [10.0, None, None, None, 3.0,
                                                                                       1e64 - 1]
    assert [None if np.isnan(v) else v for v in f.tolist()] == want


def _bits(f: float) -> bytes:
    return struct.pack("<d", f)


def test_floats_are_python_floats_bit_for_bit():
    """Exact (Clinger's fast path: <= 2**53 and 10**+-22) and past it (many digits, far exponents, -0, subnormal
    and overflowing): each cell's float64 is float(text)'s, bit for bit."""
    rng = random.Random(1202)
    texts = ["-0.0", "0.0", "9007199254740992", "9007199254740993", "1e22", "1e23", "1e-22", "1e-23",
             "4.9e-324", "2.4e-324", "1.7976931348623157e308", "123456789012345678901234567890.5",
             "0.30000000000000004", "2109.6015625", "1736412474730135.222",
             "1e00005", "1e-00022", "1e4294967297", "1e-4294967297", "5e" + "9" * 40]  # (exponents past int32)
    for _ in range(20000):
        whole = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 12)))
        frac = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 12)))
        text = (rng.choice(["", "-", "+"]) + (whole or "0") + ("." + frac if frac or rng.random() < 0.2 else "")
                + (f"e{rng.randint(-40, 40)}" if rng.random() < 0.3 else ""))
        texts.append(text)
    got = float_column(byte_cells(texts))
    for text, value in zip(texts, got.tolist()):
        want = float(text)
        assert _bits(value) == _bits(want if np.isfinite(want) else np.nan), text


_ALPHABET = "0123456789" * 4 + ".-+eE \t" * 2 + 'NA/anul_x"\x0b\u00b5\uff11'


@pytest.mark.parametrize("seed", range(4))
def test_random_cells_give_the_scalar_rules(seed):
    """20,000 random cells a seed (digits, signs, points, exponents, blanks, the missing texts' letters, quotes,
    other whitespace, non-ASCII digits): each column converter's answer is the scalar rule's, cell by cell."""
    rng = random.Random(seed)
    texts = ["".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 24))) for _ in range(20000)]
    texts += ["N/A", "nan", "-", "", "1.5\t", "1e400", "inf", "-0", "99999999999999999999"]
    cells = byte_cells(texts)
    assert answers(*us_to_ns_column(cells)) == [us_to_ns(t) for t in texts]
    f = float_column(cells)
    assert [None if np.isnan(v) else v for v in f.tolist()] == [to_float(t) for t in texts]
    mib, known = scaled_column(cells, 1 << 20)
    assert answers(mib, known) == [None if (v := to_float(t)) is None or not abs(v * (1 << 20)) < 1 << 62
                                   else round(v * (1 << 20)) for t in texts]
    ints, known = int_column(cells)
    assert answers(ints, known) == [None if (v := to_float(t)) is None or not abs(round(v)) < 1 << 62
                                    else round(v) for t in texts]


def test_quoted_cells_are_unquoted_as_the_csv_module_does():
    cells = byte_cells(['"1.5"', '"a,""b"""', "2.5", '""'], quoted=True)
    assert list(cells) == ["1.5", 'a,"b"', "2.5", ""]
    assert cells[1] == 'a,"b"' and cells[-1] == ""
    assert answers(*us_to_ns_column(cells)) == [1500, None, 2500, None]


def test_number_columns_make_no_texts_and_give_0_where_unknown():
    """The point of ByteCells: plain number cells are converted without a Python string each (only the odd
    ones, by the scalar rule, one at a time); where a cell is no number the value is 0, as _scalar gives."""
    cells = byte_cells(["1.5\t", "N/A", "2", "-"])
    assert answers(*us_to_ns_column(cells)) == [1500, None, 2000, None]
    assert float_column(cells).tolist()[::2] == [1.5, 2.0] and cells._texts is None
    ns, known = us_to_ns_column(byte_cells(["x", "N/A", "1e3", "inf"]))
    assert ns.tolist() == [0, 0, 1000000, 0] and known.tolist() == [False, False, True, False]


def test_one_cell_at_a_time_before_the_texts_are_made():
    """Indexing a fresh ByteCells reads that cell alone (unquoted where quoted); slices and out-of-range
    indices as a list's; a one-byte last cell after a quoted one is no quoted cell."""
    def fresh():
        return byte_cells(['"a,""b"""', "2", '"3"', "y"], quoted=True)
    assert fresh()[0] == 'a,"b"' and fresh()[2] == "3" and fresh()[3] == "y" and fresh()[-4] == 'a,"b"'
    assert fresh()[np.int64(1)] == "2" and fresh()[1:3] == ["2", "3"]
    for k in (4, -5):
        with pytest.raises(IndexError):
            fresh()[k]
    assert list(byte_cells(['"x"', "y"], quoted=True)) == ["x", "y"]


def test_take_keeps_the_chosen_rows_in_order():
    cells = byte_cells(["1", "2", "x", "4"])
    rows = np.array([3, 0, 2])
    assert list(take(cells, rows)) == ["4", "1", "x"] == take(["1", "2", "x", "4"], rows)
    assert answers(*us_to_ns_column(take(cells, rows))) == [4000, 1000, None]
    quoted = take(byte_cells(['"a,""b"""', "2", '"3"'], quoted=True), np.array([2, 0]))  # still unquoted
    assert list(quoted) == ["3", 'a,"b"'] and quoted[0] == "3"


def test_the_cells_off_give_the_same_numbers(monkeypatch):
    texts = ["1.5\t", "N/A", "1e3", "", "-2.0005", '"7"']
    on = answers(*us_to_ns_column(byte_cells(texts))), float_column(byte_cells(texts)).tolist()
    monkeypatch.setenv("CANNING_CSV_CELLS", "0")
    assert byte_cells(texts).numbers(False) is None
    off = answers(*us_to_ns_column(byte_cells(texts))), float_column(byte_cells(texts)).tolist()
    assert str(on) == str(off)  # (NaN == NaN as text)
    assert on[0] == [1500, None, 1000000, None, -2001, 7000]


def test_ranges_outside_the_bytes_are_refused():
    from canning_tb.ingest.native import _ascend_cells as _cells
    buf = np.frombuffer(b"12,34", np.uint8)
    values, status = np.empty(1, np.int64), np.empty(1, np.uint8)
    for lo, hi in ((0, 6), (-1, 2), (3, 2)):
        with pytest.raises(ValueError, match="range"):
            _cells.us_to_ns(buf, np.array([lo], np.int64), np.array([hi], np.int64), values, status)
    with pytest.raises(ValueError, match="one item per cell"):
        _cells.floats(buf, np.array([0, 3], np.int64), np.array([2, 5], np.int64), values, status)
    with pytest.raises(ValueError, match="one item per cell"):
        _cells.floats(buf, np.array([0, 3], np.int64), np.array([2, 5], np.int64), np.empty(2), status)
    with pytest.raises(ValueError, match="one item per cell"):
        _cells.floats(buf, np.array([0, 3], np.int64), np.array([2], np.int64), np.empty(2), np.empty(2, np.uint8))
    _cells.us_to_ns(buf, np.array([3], np.int64), np.array([5], np.int64), values, status)
    assert values.tolist() == [34000] and status.tolist() == [KNOWN]
