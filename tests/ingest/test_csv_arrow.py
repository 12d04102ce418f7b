"""pyarrow.csv's reading of the Ascend CSVs (ingest/ascend/csv/arrow.py) against the csv module's reading of the
same bytes (rows.CsvTable's fallback, CANNING_CSV_ARROW=0): equal cells, equal numbers and equal problems on every
CSV of the real fixtures and on thousands of generated files mixing what real files and damaged ones hold
(quotes, doubled quotes, commas in quotes, CRLF, lone CR, blank lines, trailing commas, short and long rows,
non-ASCII, a missing last line end); every file pyarrow declines is still read, by the csv module, which counts
its bad rows."""
import csv
import random

import numpy as np
import pytest

from canning_tb.ingest.ascend.csv import arrow as csv_arrow, rows as csv_rows
from canning_tb.ingest.ascend.csv.columns import float_column, texts

from conftest import FIXTURES


def read(raw: bytes, path, arrow: bool, monkeypatch, rows=5, numbers=False) -> tuple[list, list]:
    """(every column's cells, problems) of the file as rows.py reads it, by pyarrow or by the csv module.
    numbers: every column read as a number column (pyarrow.csv may give float64), compared as float_column."""
    path.write_bytes(raw)
    problems = []
    with monkeypatch.context() as m:
        m.setattr(csv_rows, "CHUNK_ROWS", rows)
        m.setenv(csv_arrow.ENV, "1" if arrow else "0")
        table = csv_rows.read_table(str(path), path.name, problems)
        if table is None:
            return [], [p.message for p in problems]
        wanted = list(range(len(table.header))) + [None]
        chunks = list(table.scan(wanted, set(range(len(wanted))) if numbers else set()))
        assert arrow or all(len(c) <= rows for chunk in chunks for c in chunk)  # the csv module: a chunk at a time

        def cells(col):
            return [None if np.isnan(v) else v for v in float_column(col).tolist()] if numbers else texts(col)
        # the cells of each column in order (where the chunks are cut is no part of the answer)
        return [sum((cells(chunk[k]) for chunk in chunks), []) for k in range(len(wanted))], \
            [p.message for p in problems]


def taken(raw: bytes) -> bool:
    """pyarrow reads the file (else the csv module does)."""
    n = len(next(csv.reader(raw.decode("utf-8-sig").splitlines())))
    return csv_arrow.read(raw, n, list(range(n)), set()) is not None


REAL = sorted(p for p in FIXTURES.rglob("*.csv"))


def test_every_fixture_csv_is_read_to_the_same_cells(tmp_path, monkeypatch):
    assert len(REAL) > 40
    took = 0
    for path in REAL:
        raw = path.read_bytes()
        for numbers in (False, True):
            by_arrow = read(raw, tmp_path / "f.csv", True, monkeypatch, rows=1000, numbers=numbers)
            assert by_arrow == read(raw, tmp_path / "f.csv", False, monkeypatch, rows=1000, numbers=numbers), path
        took += taken(raw)
    # the real files are what pyarrow is for: it takes every one (call stacks with CRLF in quotes too)
    assert took == len(REAL)


def test_torch_npu_shapes_and_stacks_are_taken():
    """kernel_details.csv's shape cells (commas and doubled quotes inside quotes, as torch_npu writes them),
    timestamps with a trailing TAB, CRLF line ends, a call stack with CRLF inside its quotes: pyarrow takes
    them, unquoted as csv does."""
    raw = ('Name,Start Time(us),Input Shapes,Duration(us)\r\n'
           'mm,1736412474730135.222\t,"""32,3,224,224"";""64""",5.5\r\n'
           'add,1736412474730296.625\t,"",6\r\n'
           'stack,1,"a.py(1): f;\r\nb.py(2): g;\r\n",7\r\n').encode()
    cols = csv_arrow.read(raw, 4, [0, 1, 2, 3], set())
    assert [texts(c) for c in cols] == [["mm", "add", "stack"], ["1736412474730135.222\t", "1736412474730296.625\t", "1"],
                                        ['"32,3,224,224";"64"', "", "a.py(1): f;\r\nb.py(2): g;\r\n"], ["5.5", "6", "7"]]


PIECES = ["a", "bc", "12.5", "1736412474607990.240\t", "N/A", "", " ", "é", "中文", '"q,uoted"', '"dou""bled"',
          '""', '""""', '"a""",', 'x"y', ' "sp"', '"open', "tab\t", "-3", '"line\nbreak"', "\r", "1e3", '"2"x']


def generated(rng: random.Random) -> bytes:
    n = rng.randint(1, 5)
    end = rng.choice(["\n", "\r\n", "\r"]) if rng.random() < 0.15 else rng.choice(["\n", "\r\n"])
    lines = [",".join(f"h{k}" for k in range(n))]
    for _ in range(rng.randint(0, 12)):
        roll = rng.random()
        if roll < 0.08:
            lines.append(rng.choice(["", " ", "\t"]))
            continue
        cells = n + (rng.choice([-1, 1, 2]) if roll < 0.16 else 0)
        cells = max(cells, 1)
        weights = [0.8 if rng.random() < 0.7 else 0.2] * 6 + [0.05] * (len(PIECES) - 6)
        row = [rng.choices(PIECES, weights)[0] for _ in range(cells)]
        if roll > 0.95:
            row.append("")  # a trailing comma
        lines.append(",".join(row))
    text = end.join(lines) + (end if rng.random() < 0.8 else "")
    if rng.random() < 0.1:
        text = "\ufeff" + text
    return text.encode("utf-8")


@pytest.mark.parametrize("seed", range(8))
def test_generated_files_read_as_the_csv_module_reads_them(seed, tmp_path, monkeypatch):
    rng = random.Random(seed)
    took = 0
    for k in range(400):
        raw = generated(rng)
        numbers = k % 4 == 0
        by_arrow = read(raw, tmp_path / "g.csv", True, monkeypatch, numbers=numbers)
        assert by_arrow == read(raw, tmp_path / "g.csv", False, monkeypatch, numbers=numbers), raw
        took += taken(raw)
    assert 40 < took < 400  # both paths are exercised


@pytest.mark.parametrize("raw", [
    b'a,b\n1,2,3\n',  # a row too long
    b'a,b\n1\n',  # a row too short
    b'a,b\n1,2,\n',  # a trailing comma (the csv module's reading tolerates it)
    b'a,b\n \n1,2\n',  # a line of a blank only
    b'"a",b\n1,2\n',  # a quoted header
    b'a,b\r3\n1,2\n',  # a lone CR in the header
    b'a\nx\n',  # one column: the csv module reads it
    b'a,b',  # the header alone, without a line end
])
def test_what_pyarrow_declines(raw):
    n = len(next(csv.reader(raw.decode().splitlines(True))))
    assert csv_arrow.read(raw, n, list(range(n)), set()) is None


@pytest.mark.parametrize("raw,cells", [
    (b"a,b\n1,2\n3,4", [["1", "3"], ["2", "4"]]),  # no line end at the end
    (b"a,b\r\n1,2\r\n\r\n\r\n3,4\r\n\r\n", [["1", "3"], ["2", "4"]]),  # blank lines between and after
    (b'a,b\n1,"2"x\n', [["1"], ["2x"]]),  # text after a closing quote: kept, as the csv module keeps it
    (b'a,b\n1,"ab"c"d"\n', [["1"], ['abc"d"']]),  # quotes inside a quoted cell that are not doubled
    (b'a,b\n1,2\r3,4\n', [["1", "3"], ["2", "4"]]),  # a lone CR ends a row
    (b'a,b\n1,"open\n', [["1"], ["open\n"]]),  # a quote left open to the end
    (b"\xef\xbb\xbfa,b\n1,2\n", [["1"], ["2"]]),  # a byte order mark
    (b"a,b\n", [[], []]),  # the header alone
])
def test_what_pyarrow_takes(raw, cells):
    assert [texts(c) for c in csv_arrow.read(raw, 2, [0, 1], set())] == cells


def test_pyarrow_off_reads_with_the_csv_module(monkeypatch):
    monkeypatch.setenv(csv_arrow.ENV, "0")
    assert not csv_arrow.enabled() and csv_arrow.read(b"a,b\n1,2\n", 2, [0, 1], set()) is None


def test_a_file_pyarrow_declines_is_read_with_its_bad_rows_counted(tmp_path, monkeypatch):
    """Ragged rows: the csv module reads the file, skips them and says how many, and from which line."""
    raw = b"a,b\n1,2\n3\n4,5,6\n7,8,\n9,10\n"
    for arrow in (True, False):
        cols, problems = read(raw, tmp_path / "r.csv", arrow, monkeypatch)
        assert cols[:2] == [["1", "7", "9"], ["2", "8", "10"]]
        assert problems == ["2 row(s) with a wrong number of columns skipped (expected 2; first at line 3)"]


@pytest.mark.parametrize("where", ["header", "row", "last line"])
def test_a_cell_past_the_field_limit_is_left_to_the_csv_module(tmp_path, monkeypatch, where):
    """One byte past the limit, in the header, a row, or a last line without a line end."""
    big = b"x" * (csv.field_size_limit() + 1)
    raw = {"header": b"a," + big + b"\n1,2\n", "row": b"a,b\n1," + big + b"\n3,4\n", "last line": b"a,b\n1," + big}[where]
    if where != "header":
        assert csv_arrow.read(raw, 2, [0, 1], set()) is None
    cells, problems = read(raw, tmp_path / "big.csv", True, monkeypatch)
    assert any("field larger than field limit" in p for p in problems)
    assert (cells, problems) == read(raw, tmp_path / "big.csv", False, monkeypatch)


def test_not_utf8_is_read_by_the_csv_module_with_a_warning(tmp_path, monkeypatch):
    raw = b"a,b\n1,\xff2\n"
    for arrow in (True, False):
        cols, problems = read(raw, tmp_path / "u.csv", arrow, monkeypatch)
        assert cols[:2] == [["1"], ["\ufffd2"]] and problems == ["not valid UTF-8; undecodable bytes replaced"]


def test_a_nul_byte_refuses_the_file(tmp_path, monkeypatch):
    """No torch_npu CSV holds a NUL: a file with one is damaged, refused with the line and byte where it is."""
    raw = b"a,b\n1,2\n3,4\x00\n"
    for arrow in (True, False):
        assert read(raw, tmp_path / "n.csv", arrow, monkeypatch) == (
            [], ["holds a NUL byte (line 3, byte 11): damaged (torch_npu writes none); file not read"])
