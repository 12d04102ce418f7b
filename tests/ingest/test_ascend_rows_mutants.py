"""ingest/ascend/csv/rows.py under mutation (docs/mutants.md, issue 46): the scalar rules the Ascend readers apply
to a cell (shapes, stacks, device cells, step cells, units) and the csv module's reading of a file pyarrow declines,
each answer worked out by hand from the rule its docstring states."""
from __future__ import annotations

import pytest

from canning_tb.ingest.ascend.csv.rows import (_columns, _good_rows, _lines, _utf8, device_digits, device_index,
                                               device_name, kb_to_bytes, mb_to_bytes, ms_to_ns, none_to, norm_shapes,
                                               norm_stack, read_table, scan_all, step_value, to_float, to_int,
                                               unreadable, us_float_to_ns, us_to_ns)
from canning_tb.ingest.ascend.csv import rows
from canning_tb.ingest.table import NONE


@pytest.mark.parametrize("cell, want", [
    (None, None), ("", None), ("N/A", None), ("  ", None),
    ('"32,3,224,224";"64"', "[[32, 3, 224, 224], [64]]"),
    ("32,3,224,224;\r\n;\r\n", "[[32, 3, 224, 224], []]"),  # stripped, split: [.., "", ""]: last dropped
    ("1 , 2,3", "[[1, 2, 3]]"), ("-1,5", "[[-1, 5]]"), ("1;2", "[[1], [2]]"), ("1;", "[[1]]"), (";", "[[]]"),
    ("1;;2", "[[1], [], [2]]"),
    ("123456789012345678", "[[123456789012345678]]"),          # 18 digits: a dimension
    ("1234567890123456789", '["1234567890123456789"]'),        # 19 digits may not fit int64: text
    ('a"b', '["a\'b"]'), ("é,1", '["é,1"]'), ("1,,2", '["1,,2"]'), ("X1X", '["X1X"]'),
    ('1;"', "[[1], []]"),  # the second part '"' is empty once unquoted, but the cell does not end with ';': kept
])
def test_norm_shapes_by_hand(cell, want):
    assert norm_shapes(cell) == want


@pytest.mark.parametrize("cell, want", [
    (None, None), ("a;\r\nb;\r\nc", "a;b;c"), (";;", None), (" x ; y ", "x;y"), ("", None), ("f", "f"),
])
def test_norm_stack_by_hand(cell, want):
    assert norm_stack(cell) == want


@pytest.mark.parametrize("cell, digits, index", [
    ("NPU:0", "0", 0), ("npu:3", "3", 3), ("0", "0", 0), ("NPU:007", "7", 7), ("NPU:000", "0", 0),
    ("CPU", "", NONE), ("cpu0", "", NONE), ("Host1", "", NONE), ("host", "", NONE), ("", "", NONE), (None, "", NONE),
    ("NPU:", "", NONE), (" x12 ", "12", 12), ("NPU:123456789", "123456789", 123456789),
    ("NPU:1234567890", "1234567890", NONE),  # 10 digits: no device number
])
def test_device_cells_by_hand(cell, digits, index):
    assert device_digits(cell) == digits and device_index(cell) == index


@pytest.mark.parametrize("cell, want", [
    ("NPU:0", "npu:0"), (" NPU:2 ", "npu:2"), ("NPU:007", "npu:7"), ("Ascend 3", "npu:3"),
    ("CPU", "CPU"), ("cpu:1", "CPU"), ("host", "CPU"), ("HOST", "CPU"),
    (None, "CPU"), ("", "CPU"), ("GPU", "gpu"), ("Hostile:1", "hostile:1"),  # "host..." has no device number
])
def test_device_names_by_hand(cell, want):
    assert device_name(cell) == want


@pytest.mark.parametrize("cell, want", [
    ("step50", 50), ("50", 50), (50, 50), ("", None), ("step", None), (None, None), ("STEP7", 7), (" step 3 ", 3),
    ("Step2.5", 2),  # to_int: 2.5 rounds half to even
])
def test_step_cells_by_hand(cell, want):
    assert step_value(cell) == want


def test_none_to_and_the_unit_rules():
    """ms x 1e6, µs x 1e3, MiB x 2**20, KB x 2**10, rounded; past 2**62 (or not a number) None."""
    assert none_to(None) == NONE and none_to(5) == 5 and none_to(None, 7) == 7 and none_to(0, 7) == 0
    assert ms_to_ns(1.5) == 1_500_000 and us_float_to_ns(2.5) == 2500 and us_float_to_ns("x") is None
    assert mb_to_bytes(1.5) == 1572864 and mb_to_bytes("N/A") is None
    assert kb_to_bytes(2) == 2048 and kb_to_bytes(2 ** 52 - 1) == (2 ** 52 - 1) * 1024 and kb_to_bytes(2 ** 52) is None
    assert kb_to_bytes(-(2 ** 52)) is None and kb_to_bytes(-(2 ** 52) + 1) == (-(2 ** 52) + 1) * 1024


@pytest.mark.parametrize("cell, as_float, as_int, bad", [
    (None, None, None, False), (True, None, None, True), (3, 3.0, 3, False), (1 << 2000, None, None, True),
    (" 2.5 ", 2.5, 2, False), ('"3.5"', 3.5, 4, False), ("inf", None, None, True), ("nan", None, None, False),
    ("abc", None, None, True), (float("inf"), None, None, True), ("-7", -7.0, -7, False), ("N/A", None, None, False),
    ('"N/A"', None, None, False), ("XN/A", None, None, True), ("X5", None, None, True), ("", None, None, False),
    ((1 << 62) - 1, float((1 << 62) - 1), (1 << 62) - 1, False),
    (1 << 62, float(1 << 62), None, False), (-(1 << 62), float(-(1 << 62)), None, False),
])
def test_float_int_and_unreadable_by_hand(cell, as_float, as_int, bad):
    """to_float: finite floats only; to_int: ints exact within (-2**62, 2**62), the rest rounded half-even;
    unreadable: something that is no number and not one of the 'missing' texts (a bool, inf, an int past float64)."""
    assert to_float(cell) == as_float and to_int(cell) == as_int and unreadable(cell) is bad


@pytest.mark.parametrize("cell, want", [
    (None, None), (False, None), (5, 5000), (1 << 60, None), (1.5, 1500), (" 12.345\t", 12345), ('"3.5"', 3500),
    ("-2.5", -2500), ("+.5", 500), ("5.", 5000), ("12.3455", 12346), ("12.3454", 12345), ("1e3", 1_000_000),
    (".", None), ("-", None), ("12345678901234567890", None), ("-4611686018427387.903", -((1 << 62) - 1)),
    ("4611686018427387.904", None), ("0.0005", 1), ("-0.0005", -1),
    ('"12.3455"', 12346), ("X5", None), ('"0.0005"', 1),  # quoted: still exact (0.0005 * 1000 rounds half-even to 0)
    ('"1736412474714258.990"', 1736412474714258990),  # (as a float: ...258990.0 is no float64; the nearest is 256 off)
])
def test_us_to_ns_by_hand(cell, want):
    assert us_to_ns(cell) == want


def test_good_rows_and_their_lines():
    """Rows of 2 cells (a chunk ending at physical line 7): a blank line and a spaces-only line skipped, a trailing
    empty cell dropped, one short row bad; the bad row's line counted back from the end: the rows after it span
    1 + 1 (a line end inside a cell) = 2 lines, so 7 - 2 = 5."""
    rows = [["a", "b"], [], [" "], ["a", "b", ""], ["x"], ["c", "d\ne"]]
    assert _good_rows(rows, 2, 7) == ([["a", "b"], ["a", "b"], ["c", "d\ne"]], 1, 5)
    assert _good_rows([["a", "b", "c"], ["1", "2", "3", "4"]], 3, 9) == ([["a", "b", "c"]], 1, 9)
    assert _good_rows([["a"], ["b"]], 2, 3) == ([], 2, 2)  # the first bad one: line 3 - 1 = 2
    assert _lines(["a\nb", "c\r\nd", "e\rf"]) == 4  # 1 + one line end in each cell (CRLF counts once)
    assert _columns([["1", "2", "3"], ["4", "5", "6"]], [2, None, 0]) == [("3", "6"), None, ("1", "4")]


def test_utf8_across_the_blocks():
    """_utf8 decodes 4 MiB at a time: an 'é' (2 bytes) split by the block edge is still UTF-8; a lone 0xff is not,
    in the first block or after it."""
    edge = b"a" * ((1 << 22) - 1) + "é".encode()
    assert _utf8(b"abc") and _utf8("é".encode()) and _utf8(edge)
    assert not _utf8(b"\xff") and not _utf8(b"a" * (1 << 22) + b"\xff") and not _utf8(edge[:-1])


def _read(tmp_path, raw: bytes):
    path = tmp_path / "f.csv"
    path.write_bytes(raw)
    problems: list = []
    return read_table(str(path), "f.csv", problems), [(p.message, p.severity) for p in problems if p.file == "f.csv"]


def test_read_table_by_hand(tmp_path):
    """The header from line one (a BOM and blanks around names dropped); columns by name, first of the names
    given, case-insensitive after every exact name; a NUL at byte 9 of line 2 refuses the file; no header."""
    table, problems = _read(tmp_path, "\ufeff Name ,Device_id,Other\n1,2,3\n".encode())
    assert problems == [] and table.header == ["Name", "Device_id", "Other"]
    assert table.col("Name") == 0 and table.col("NAME") == 0 and table.col("x", "device_ID") == 1
    assert table.col("other", "Device_id") == 1 and table.col("x") is None and table.has("Name")
    assert not table.has("y")
    table, problems = _read(tmp_path, b"a,b\n1,2\x00\n")
    assert table is None and problems == [("holds a NUL byte (line 2, byte 7): damaged (torch_npu writes none); "
                                           "file not read", "error")]
    table, problems = _read(tmp_path, b"")
    assert table is None and problems == [("empty file (no header)", "error")]
    table, problems = _read(tmp_path, b'"a\nb",c\n1,2\n')  # a quoted line end in the header: one name
    assert problems == [] and table.header == ["a\nb", "c"]
    table, problems = _read(tmp_path, b"a,b\n1,2\n3,4\n")
    assert scan_all(table, [1, 0], lambda chunk: [c.to_pylist() for c in chunk]) == [[["2", "4"], ["1", "3"]]]


def test_a_file_that_cannot_be_read_is_one_error_naming_why(tmp_path, monkeypatch):
    """No file: the OS's reason. A file past the cap on one file (CANNING_MAX_TRACE_BYTES=4, the file 8 bytes):
    the cap's message. A read past the deadline (set to -1 s: already past when the read ends, no clock raced)."""
    problems: list = []
    assert read_table(str(tmp_path / "none.csv"), "none.csv", problems) is None
    assert [(p.file, p.message, p.severity) for p in problems] == [
        ("none.csv", "cannot read: No such file or directory", "error")]
    monkeypatch.setenv("CANNING_MAX_TRACE_BYTES", "4")
    assert _read(tmp_path, b"a,b\n1,2\n") == (None, [
        ("expands past the 4 bytes cap on one file (set CANNING_MAX_TRACE_BYTES to read bigger files)", "error")])
    monkeypatch.delenv("CANNING_MAX_TRACE_BYTES")
    monkeypatch.setattr(rows, "READ_DEADLINE_S", -1.0)
    assert _read(tmp_path, b"a,b\n1,2\n") == (None, [("cannot read: reading took longer than -1 s", "error")])


def _cells(table, wanted) -> list:
    return [[(c.to_pylist(), str(c.type)) for c in chunk] for chunk in table.scan(wanted)]


def test_the_csv_module_path_by_hand(tmp_path, monkeypatch):
    """pyarrow off (CANNING_CSV_ARROW=0), chunks of 2 rows: a quoted CRLF kept in its cell; a column not in the file
    all-null text; 2 short rows in two chunks counted together, the first at line 4 (the quoted CRLF spans lines 2
    and 3); a BOM before a later header cell
    dropped; a header cell past the field limit; a NUL at byte 0, two NULs (the first named), a NUL after a line end
    at byte 0 (line 2); a byte that is no UTF-8 in the header (replaced, with a warning); a cell past the field limit
    at line 5 (the rows before it kept, the rest skipped)."""
    monkeypatch.setenv("CANNING_CSV_ARROW", "0")
    monkeypatch.setattr(rows, "CHUNK_ROWS", 2)
    table, problems = _read(tmp_path, b'a,b\n"x\r\ny",2\n3\n4,5\n6\n7,8\n')
    assert problems == [] and table.header == ["a", "b"]
    assert _cells(table, [0, None]) == [[(["x\r\ny"], "string"), ([None], "string")],  # rows 1-2: one good
                                        [(["4"], "string"), ([None], "string")],  # rows 3-4: one good
                                        [(["7"], "string"), ([None], "string")]]
    assert [(p.file, p.message, p.severity) for p in table.problems] == [
        ("f.csv", "2 row(s) with a wrong number of columns skipped (expected 2; first at line 4)", "warning")]
    table, problems = _read(tmp_path, "\ufeffName,\ufeffX1\n1,2\n".encode())
    assert table.header == ["Name", "X1"]
    big = b"x" * 131073
    assert _read(tmp_path, b"a," + big + b"\n1,2\n")[1] == [
        ("malformed CSV header: field larger than field limit (131072)", "error")]
    table, problems = _read(tmp_path, b"a,b\n1,2\n3\n4,5\n6," + big + b"\n7,8\n")  # chunks: [1,2 3] [4,5 6,<big>]
    assert _cells(table, [0]) == [[(["1"], "string")], [(["4"], "string")]]  # the rows before the malformed one kept
    assert [(p.file, p.message, p.severity) for p in table.problems] == [
        ("f.csv", "malformed CSV near line 5: field larger than field limit (131072); rest of file skipped", "error"),
        ("f.csv", "1 row(s) with a wrong number of columns skipped (expected 2; first at line 3)", "warning")]
    assert _read(tmp_path, b"\x00a,b\n")[1] == [
        ("holds a NUL byte (line 1, byte 0): damaged (torch_npu writes none); file not read", "error")]
    assert _read(tmp_path, b"a,b\n1\x00,2\x00\n")[1] == [
        ("holds a NUL byte (line 2, byte 5): damaged (torch_npu writes none); file not read", "error")]
    assert _read(tmp_path, b"\na\x00\n")[1] == [
        ("holds a NUL byte (line 2, byte 2): damaged (torch_npu writes none); file not read", "error")]
    table, problems = _read(tmp_path, b"a\xff,b\n1,2\n")
    assert table.header == ["a\ufffd", "b"] and problems == [("not valid UTF-8; undecodable bytes replaced", "warning")]
