"""csv_fast (cells found with numpy over the bytes) against the csv module's reading of the same bytes
(csv_io's other path, csv_fast switched off): equal cells on every CSV of the real fixtures and on
thousands of generated files mixing what real files and damaged ones hold (quotes, doubled quotes,
commas in quotes, CRLF, lone CR, blank lines, trailing commas, short and long rows, NUL, non-ASCII,
a missing last line end); every file the fast path declines is still read, by the csv module."""
import random

import pytest

from canning_tb.ingest.ascend.csv import fast as csv_fast, rows as csv_io

from conftest import FIXTURES


def read(raw: bytes, path, fast: bool, monkeypatch, rows=5) -> tuple[list, list]:
    """(chunks of every column, problems) of the file as csv_io reads it, with or without csv_fast."""
    path.write_bytes(raw)
    problems = []
    with monkeypatch.context() as m:
        m.setattr(csv_io, "CHUNK_ROWS", rows)
        if not fast:
            m.setattr(csv_fast, "plan", lambda *_: None)
        table = csv_io.read_table(str(path), path.name, problems)
        if table is None:
            return [], [p.message for p in problems]
        wanted = list(range(len(table.header))) + [None]
        chunks = list(table.scan(wanted))
        assert all(len(c) <= rows for chunk in chunks for c in chunk)  # bounded: a chunk at a time
        # the cells of each column in order (where the chunks are cut is no part of the answer)
        return [sum((list(chunk[k]) for chunk in chunks), []) for k in range(len(wanted))], [p.message for p in problems]


REAL = sorted(p for p in FIXTURES.rglob("*.csv"))


def test_every_fixture_csv_is_read_to_the_same_cells(tmp_path, monkeypatch):
    assert len(REAL) > 40
    taken = 0
    for path in REAL:
        raw = path.read_bytes()
        fast = read(raw, tmp_path / "f.csv", True, monkeypatch, rows=1000)
        assert fast == read(raw, tmp_path / "f.csv", False, monkeypatch, rows=1000), path
        header = raw.split(b"\n", 1)[0].count(b",") + 1
        taken += csv_fast.plan(raw, header) is not None
    # the real files are what the fast path is for: it takes every one (call stacks with CRLF in quotes too)
    assert taken == len(REAL)


def test_torch_npu_shapes_and_stacks_are_taken(tmp_path):
    """kernel_details.csv's shape cells (commas and doubled quotes inside quotes, as torch_npu writes them),
    timestamps with a trailing TAB, CRLF line ends: the fast path takes them, unquoted as csv does."""
    raw = ('Name,Start Time(us),Input Shapes,Duration(us)\r\n'
           'mm,1736412474730135.222\t,"""32,3,224,224"";""64""",5.5\r\n'
           'add,1736412474730296.625\t,"",6\r\n'
           'stack,1,"a.py(1): f;\r\nb.py(2): g;\r\n",7\r\n').encode()
    plan = csv_fast.plan(raw, 4)
    assert plan is not None
    (cols,) = plan.chunks([0, 1, 2, 3], 10)
    assert [list(c) for c in cols] == [["mm", "add", "stack"], ["1736412474730135.222\t", "1736412474730296.625\t", "1"],
                    ['"32,3,224,224";"64"', "", "a.py(1): f;\r\nb.py(2): g;\r\n"], ["5.5", "6", "7"]]


PIECES = ["a", "bc", "12.5", "1736412474607990.240\t", "N/A", "", " ", "é", "中文", '"q,uoted"', '"dou""bled"',
          '""', '""""', '"a""",', 'x"y', ' "sp"', '"open', "tab\t", "\x00", "-3", '"line\nbreak"', "\r"]


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
    taken = 0
    for _ in range(400):
        raw = generated(rng)
        fast = read(raw, tmp_path / "g.csv", True, monkeypatch)
        assert fast == read(raw, tmp_path / "g.csv", False, monkeypatch), raw
        taken += csv_fast.plan(raw, raw.split(b"\n", 1)[0].count(b",") + 1) is not None
    assert 40 < taken < 400  # both paths are exercised


@pytest.mark.parametrize("raw", [
    b'a,b\n"x,y\n',  # an open quote to the end
    b'a,b\n1,2\r3,4\n',  # a lone CR
    b'a,b\n1,2,3\n',  # a row too long
    b'a,b\n1\n',  # a row too short
    b'a,b\n1, "2"\n',  # a quote not at the cell's start
    b'a,b\n1,"2"x\n',  # text after the closing quote
    b'a,b\n1,2\x003\n',
    b'a,b',  # no line end: the header alone
])
def test_what_the_fast_path_declines(raw):
    assert csv_fast.plan(raw, 2) is None


@pytest.mark.parametrize("raw", [
    b'a,b\n1,"ab"c"d"\n',  # quotes inside a quoted cell that are not doubled
    b'a,b\n1,2\nx',  # a last line of one cell, without a line end
    b'a\nx\n',  # one column: the csv module reads it
])
def test_what_the_fast_path_declines_too(raw):
    assert csv_fast.plan(raw, raw.split(b"\n", 1)[0].count(b",") + 1) is None


@pytest.mark.parametrize("raw,cells", [
    (b"a,b\n1,2\n3,4", [["1", "3"], ["2", "4"]]),  # two columns, no line end at the end
    (b'"a",b\n1,2\n', [["1"], ["2"]]),  # a quoted header cell first in the file
    (b"a,b,c\n1,2,3,\n4,5,6, \n", [["1", "4"], ["2", "5"], ["3", "6"]]),  # trailing commas, blank after them
    (b"a,b\r\n1,2\r\n\r\n \t\r\n3,4\r\n\r\n", [["1", "3"], ["2", "4"]]),  # blank lines between and after
])
def test_what_the_fast_path_takes(raw, cells):
    plan = csv_fast.plan(raw, len(cells))
    assert plan is not None and [list(c) for c in next(plan.chunks(list(range(len(cells))), 10))] == cells


@pytest.mark.parametrize("where", ["header", "row", "last line"])
def test_a_cell_past_the_field_limit_is_left_to_the_csv_module(tmp_path, monkeypatch, where):
    """One byte past the limit, in the header, a row, or a last line without a line end."""
    import csv
    big = b"x" * (csv.field_size_limit() + 1)
    raw = {"header": b"a," + big + b"\n1,2\n", "row": b"a,b\n1," + big + b"\n3,4\n", "last line": b"a,b\n1," + big}[where]
    assert csv_fast.plan(raw, 2) is None
    cells, problems = read(raw, tmp_path / "big.csv", True, monkeypatch)
    assert any("field larger than field limit" in p for p in problems)
    assert (cells, problems) == read(raw, tmp_path / "big.csv", False, monkeypatch)
