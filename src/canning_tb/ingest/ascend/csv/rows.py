"""CSV files of a torch_npu ``ASCEND_PROFILER_OUTPUT`` folder (helpers for ``ascend.py``).

Every file is read by column *name* (headers drift between torch_npu / CANN versions), with
the quirks of the real files tolerated: timestamp cells in µs with 3 decimals and a trailing
TAB, ``N/A`` in numeric cells, CRLF or LF line ends, shape cells holding literal quotes,
an optional leading ``Device_id`` / ``Step Id`` column, ``Block Dim`` vs ``Block Num``.

A file is parsed by pyarrow.csv (arrow.py) into the wanted columns; what pyarrow refuses (rows with the
wrong number of cells, ...) by the csv module here, a chunk of rows at a time: rows with the wrong number of
cells are skipped, and one warning Problem per file gives their count and the first line number. Both give the
same cells (test_csv_arrow), as pyarrow string arrays, which columns.py converts. A file that cannot be read
at all (unreadable, no header, a NUL byte: damage, never what torch_npu writes) gives one error Problem.
"""
from __future__ import annotations

import codecs
import csv
import errno
import io
import itertools
import json
import math
import os
import re
import time
from typing import Any, Iterator

import pyarrow as pa

from canning_tb.ingest import _json
from canning_tb.ingest.table import NONE, InputError, Problem
from canning_tb.util.safe_files import READ_DEADLINE_S, Refused, open_file, read_all

from . import arrow

_NUM_RE = re.compile(r"^([+-]?)(\d*)(?:\.(\d*))?$")
_MISSING = {"", "N/A", "NA", "n/a", "None", "null", "-", "nan", "NaN"}


def us_to_ns(cell: Any) -> int | None:
    """µs (string with decimals, int or float) -> int ns. Strings are converted exactly
    (split on '.', no float); more than 3 decimals round half up to the ns. None for what is no
    number or lies out of range (inf, 1e400, past int64 ns)."""
    if cell is None or isinstance(cell, bool):
        return None
    if isinstance(cell, int):
        return _in_range(cell * 1000)
    if isinstance(cell, float):
        return _scale(cell, 1000)
    s = str(cell).strip().strip('"').strip()
    if s in _MISSING:
        return None
    m = _NUM_RE.match(s)
    if m and (m.group(2) or m.group(3)):
        sign = -1 if m.group(1) == "-" else 1
        whole = int(m.group(2) or "0") if len(m.group(2) or "") < 20 else _LIMIT
        frac = m.group(3) or ""
        ns = whole * 1000 + int((frac[:3]).ljust(3, "0"))
        if len(frac) > 3 and frac[3] >= "5":
            ns += 1
        return _in_range(sign * ns)
    return _scale(to_float(s), 1000)


def unreadable(cell: Any) -> bool:
    """A cell that holds something but no usable number (inf, 1e400, text): not merely empty / N/A."""
    return cell is not None and str(cell).strip().strip('"').strip() not in _MISSING and to_float(cell) is None


_LIMIT = 1 << 62  # ns and bytes beyond this are no measurement (and a sum of two must fit int64)


def _in_range(value: int) -> int | None:
    return value if -_LIMIT < value < _LIMIT else None


def ms_to_ns(v: Any) -> int | None:
    """ms (float, as communication.json / analysis.db write them) -> int ns."""
    return _scale(v, 1_000_000)


def us_float_to_ns(v: Any) -> int | None:
    """µs given as a float (JSON, analysis.db) -> int ns."""
    return _scale(v, 1000)


def _scale(v: Any, factor: int) -> int | None:
    f = to_float(v)
    if f is None or not abs(f * factor) < _LIMIT:  # also false for inf and NaN
        return None
    return int(round(f * factor))


def to_float(cell: Any) -> float | None:
    """A finite float, or None (NaN, inf and 1e400 are no measurement)."""
    if cell is None or isinstance(cell, bool):
        return None
    if isinstance(cell, (int, float)):
        try:
            f = float(cell)
        except OverflowError:
            return None
    else:
        s = str(cell).strip().strip('"').strip()
        if s in _MISSING:
            return None
        try:
            f = float(s)
        except ValueError:
            return None
    return f if math.isfinite(f) else None


def to_int(cell: Any) -> int | None:
    if cell is None or isinstance(cell, bool):
        return None
    if isinstance(cell, int):
        return _in_range(cell)
    f = to_float(cell)
    if f is None:
        return None
    return _in_range(int(round(f)))


def mb_to_bytes(cell: Any) -> int | None:
    """MiB (the memory CSVs divide bytes by 1024²) -> bytes, rounded to an int."""
    return _scale(cell, 1024 * 1024)


def kb_to_bytes(cell: Any) -> int | None:
    return _scale(cell, 1024)


def norm_shapes(cell: Any) -> str | None:
    """'"32,3,224,224";"64"' / '32,3,224,224;\\r\\n;\\r\\n' -> '[[32, 3, 224, 224], [64]]'.
    Parts that are not plain integer lists (of dimensions up to 18 digits) are kept as quoted strings."""
    if cell is None:
        return None
    s = str(cell).strip()
    if s in ("", "N/A"):
        return None
    parts = [p.strip().strip('"').strip() for p in s.split(";")]
    if parts and parts[-1] == "" and len(parts) > 1 and s.rstrip().endswith(";"):
        parts = parts[:-1]
    out = []
    for p in parts:
        if p == "":
            out.append("[]")
        elif re.fullmatch(r"-?\d{1,18}(\s*,\s*-?\d{1,18})*", p):  # (19 digits may not fit int64: text)
            out.append("[" + ", ".join(x.strip() for x in p.split(",")) + "]")
        else:
            out.append(json.dumps(p.replace('"', "'"), ensure_ascii=False))  # valid JSON whatever the text
    return "[" + ", ".join(out) + "]"


def norm_stack(cell: Any) -> str | None:
    """'a;\\r\\nb;\\r\\nc' -> 'a;b;c' (frames innermost first, as torch_npu writes them)."""
    if cell is None:
        return None
    frames = [f.strip() for f in str(cell).split(";")]
    frames = [f for f in frames if f]
    return ";".join(frames) if frames else None


def read_bytes(path: str, display: str, problems: list[Problem], whole: bool = False) -> bytes | None:
    """The whole file; None (with an error Problem) when it cannot be read. whole: a file up to _ONE_READ bytes
    in one read (one bytes object of its size: no blocks joined into a second copy; the CSVs)."""
    try:
        with open_file(path) as f:  # a regular file inside the logdir (safe_files), else OSError
            size = os.fstat(f.fileno()).st_size
            _json.check_size(path, size)
            return _read_whole(f, path, size) if whole and size <= _ONE_READ else read_all(f, path)
    except OSError as e:
        problems.append(Problem(display, f"cannot read: {e.strerror or e}"))
    except InputError as e:
        problems.append(Problem(display, e.problem))
    return None


_ONE_READ = 256 << 20


def _read_whole(f, path: str, size: int) -> bytes:
    """The file in one read of its size (checked against READ_DEADLINE_S as safe_files.read_all checks each of
    its blocks), then whatever a file still being written has past it, by read_all."""
    deadline = time.monotonic() + READ_DEADLINE_S
    data = f.read(size + 1)
    if time.monotonic() > deadline:
        raise Refused(path, f"reading took longer than {READ_DEADLINE_S:g} s", errno.ETIMEDOUT)
    return data if len(data) <= size else data + read_all(f, path)


CHUNK_ROWS = 32768  # rows of a CSV held as Python strings at once


class CsvTable:
    """One CSV file read by column name: `scan` gives the wanted columns, all rows at once when pyarrow.csv
    parses the file (arrow.py), else a chunk of rows at a time from the csv module (only the chunk's cells are
    Python strings at once); either way as pyarrow arrays, which readers turn into numpy columns (columns.py)."""

    def __init__(self, path: str, display: str, problems: list[Problem], header: list[str], raw: bytes,
                 errors: str):
        self.path, self.display, self.problems = path, display, problems
        self.header = [h.strip().lstrip("\ufeff").strip() for h in header]
        self.index = {h: i for i, h in enumerate(self.header)}
        self._raw, self._errors = raw, errors

    def _lines(self):
        """The text a block at a time (no whole decoded copy of the file)."""
        return io.TextIOWrapper(io.BytesIO(self._raw), encoding="utf-8-sig", errors=self._errors, newline="")

    def col(self, *names: str) -> int | None:
        """Index of the first of `names` present (case-insensitive fallback)."""
        for n in names:
            if n in self.index:
                return self.index[n]
        low = {h.lower(): i for h, i in self.index.items()}
        for n in names:
            i = low.get(n.lower())
            if i is not None:
                return i
        return None

    def has(self, *names: str) -> bool:
        return self.col(*names) is not None

    def scan(self, wanted: list[int | None], floats: set[int] = frozenset()) -> Iterator[list]:
        """Per chunk of good rows: one pyarrow array per wanted index (all null for None). `floats`: the
        positions in `wanted` of number columns, which pyarrow may give as float64 (columns.py takes both)."""
        if self._errors == "strict":
            cols = arrow.read(self._raw, len(self.header), wanted, {wanted[k] for k in floats if wanted[k] is not None},
                              _MISSING)
            if cols is not None:
                yield cols
                return
        for rows in self._csv_chunks():
            yield [pa.nulls(len(rows), pa.string()) if c is None else pa.array(c, pa.string())
                   for c in _columns(rows, wanted)]

    def _csv_chunks(self) -> Iterator[list]:
        reader = csv.reader(self._lines())
        n = len(self.header)
        next(reader)
        bad, first_bad, error = 0, None, None
        while error is None:
            rows, end, error = _chunk(reader)
            if not rows:
                break
            if set(map(len, rows)) != {n}:  # blank lines, a trailing comma, or a malformed row
                rows, b, line = _good_rows(rows, n, end)
                bad += b
                first_bad = first_bad or line
            if rows:  # a chunk of only bad or blank lines gives nothing
                yield rows
        if error is not None:
            self.problems.append(Problem(self.display, f"malformed CSV near line {reader.line_num}: {error}; "
                                                       f"rest of file skipped"))
        if bad:
            self.problems.append(Problem(self.display, f"{bad} row(s) with a wrong number of columns skipped "
                                                       f"(expected {n}; first at line {first_bad})", "warning"))


def _chunk(reader) -> tuple[list, int, csv.Error | None]:
    """Up to CHUNK_ROWS rows, the physical line the last of them ends on, and the csv.Error that stopped the reading
    (None when none did): the rows read before a malformed one are kept, not lost with the rest of their chunk."""
    rows, end = [], reader.line_num
    try:
        for row in itertools.islice(reader, CHUNK_ROWS):
            rows.append(row)
            end = reader.line_num
    except csv.Error as e:
        return rows, end, e
    return rows, end, None


def _good_rows(rows: list[list[str]], n: int, last_line: int) -> tuple[list, int, int | None]:
    """(the rows of n cells, bad rows, line of the first bad one). Blank lines are skipped; a trailing
    empty cell (a trailing comma) is tolerated. The line is the reader's (physical lines: a quoted
    cell may span several), counted back from where the chunk ended."""
    good, bad, first = [], 0, None
    for i, row in enumerate(rows):
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) != n:
            if len(row) == n + 1 and row[-1].strip() == "":
                row = row[:-1]
            else:
                bad += 1
                if first is None:
                    first = last_line - sum(_lines(r) for r in rows[i + 1:])
                continue
        good.append(row)
    return good, bad, first


def _lines(row: list[str]) -> int:
    """Physical lines a parsed row spans (line ends inside quoted cells, as the reader counts them)."""
    return 1 + sum(c.count("\n") + c.count("\r") - c.count("\r\n") for c in row)


def _columns(rows: list[list[str]], wanted: list[int | None]) -> list:
    cols = list(zip(*rows))
    return [cols[i] if i is not None else None for i in wanted]


def read_table(path: str, display: str, problems: list[Problem]) -> CsvTable | None:
    """A CSV's header and bytes; None (with an error Problem) when unreadable, damaged or headerless."""
    raw = read_bytes(path, display, problems, whole=True)
    if raw is None:
        return None
    nul = raw.find(b"\x00")
    if nul >= 0:
        line = raw.count(b"\n", 0, nul) + 1
        problems.append(Problem(display, f"holds a NUL byte (line {line}, byte {nul}): damaged (torch_npu writes "
                                         f"none); file not read"))
        return None
    errors = "strict"
    if not _utf8(raw):
        errors = "replace"
        problems.append(Problem(display, "not valid UTF-8; undecodable bytes replaced", "warning"))
    line = raw.find(b"\n")  # the header from its first line alone (the csv module's copy of a few bytes)
    head = bytes(raw[:line + 1]) if line >= 0 and b'"' not in raw[:line] else raw
    try:
        header = next(csv.reader(CsvTable(path, display, problems, [], head, errors)._lines()))
    except StopIteration:
        problems.append(Problem(display, "empty file (no header)"))
        return None
    except csv.Error as e:
        problems.append(Problem(display, f"malformed CSV header: {e}"))
        return None
    return CsvTable(path, display, problems, header, raw, errors)


def _utf8(raw: bytes) -> bool:
    """The bytes are UTF-8 (decoded a block at a time: no whole decoded copy)."""
    if raw.isascii():
        return True
    decoder, view = codecs.getincrementaldecoder("utf-8")(), memoryview(raw)
    try:
        for at in range(0, len(raw), 1 << 22):
            decoder.decode(view[at:at + (1 << 22)])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def scan_all(table: CsvTable, wanted: list[int | None], convert) -> list:
    """convert(chunk) of every chunk, in order."""
    return [convert(chunk) for chunk in table.scan(wanted)]


def device_index(cell: Any) -> int:
    """'NPU:0' / 'npu:3' / '0' -> 0 / 3 / 0; 'CPU', 'host', '', a number of 10 digits or more -> NONE."""
    digits = device_digits(cell)
    return int(digits) if digits and len(digits) <= 9 else NONE


def device_digits(cell: Any) -> str:
    """The number a device cell ends with, leading zeros dropped ('' for none, and for CPU / host)."""
    if cell is None:
        return ""
    s = str(cell).strip()
    k = len(s)
    while k and s[k - 1].isdecimal():  # (re's \d: a linear scan, not a regex's backtracking over a long cell)
        k -= 1
    if k == len(s) or s.lower().startswith(("cpu", "host")):
        return ""
    return s[k:].lstrip("0") or "0"


def device_name(cell: Any) -> str:
    """memory_record Device Type 'NPU:0' -> 'npu:0'; 'CPU' -> 'CPU'."""
    s = (cell or "").strip()
    if not s or s.upper().startswith("CPU") or s.lower() == "host":
        return "CPU"
    i = device_index(s)
    return f"npu:{i}" if i != NONE else s.lower()


def step_value(v: Any) -> int | None:
    """'step50' / '50' / 50 -> 50; '' or 'step' (no schedule) -> None."""
    s = str(v).strip() if v is not None else ""
    if s.lower().startswith("step"):
        s = s[4:]
    return to_int(s) if s else None


def none_to(v: int | None, default: int = NONE) -> int:
    return default if v is None else v
