"""The cells of a well-formed CSV found with numpy over its bytes, for csv_io.CsvTable.scan: the same cells
the csv module gives, but only the wanted columns become Python strings (a torch_npu kernel_details.csv
has 40-odd columns and its readers want a dozen; memory_record.csv has 128k rows per 10 MB).

A file is taken here only when its shape leaves no doubt: no NUL, every CR outside quotes part of a CRLF
(line ends inside quotes are the cell's, as torch_npu's call stacks hold them), every quote in a cell
quoted from its first to its last byte (the quotes between doubled),
every data row of the header's cells (or one more, blank: a trailing comma, as csv_io tolerates), blank
lines only as blank lines, no cell near the csv module's field limit. `plan` returns None for anything
else, before any cell is given, and csv_io reads the file with the csv module instead (which also
counts and reports the bad rows). The caller checks the file is valid UTF-8.

A column's cells are given as ByteCells: their byte ranges, text only when asked for, so number columns
go from the bytes to numbers (cells.py, through _cells.c) without a Python string per cell.
"""
from __future__ import annotations

import csv
import os
from typing import Iterator, Sequence

import numpy as np

try:  # built by pip from _cells.c where a C compiler is found (setup.py: optional)
    from canning_tb.ingest.native import _ascend_cells as _cells
except ImportError:  # pragma: no cover - cells.py then converts the cells' text with numpy
    _cells = None

_COMMA, _LF, _CR, _QUOTE = 44, 10, 13, 34


class Plan:
    """Per data row (blank lines left out): its line's start and end (a CRLF's CR excluded), the position
    in `commas` (the delimiters outside quotes) of its first comma, and its number of commas."""

    def __init__(self, buf: np.ndarray, lines: np.ndarray, ends: np.ndarray, first: np.ndarray,
                 count: np.ndarray, commas: np.ndarray, quoted: bool):
        self.buf, self.lines, self.ends, self.first, self.count = buf, lines, ends, first, count
        self.commas, self.quoted = commas, quoted

    def chunks(self, wanted: list[int | None], rows: int) -> Iterator[list]:
        """Per chunk of `rows` rows: one ByteCells per wanted column index ([None] * rows for None)."""
        for lo in range(0, len(self.lines), rows):
            hi = min(lo + rows, len(self.lines))
            yield [self._column(j, lo, hi) if j is not None else [None] * (hi - lo) for j in wanted]

    def _column(self, j: int, lo: int, hi: int) -> ByteCells:
        first, count = self.first[lo:hi], self.count[lo:hi]
        starts = self.lines[lo:hi] if j == 0 else self.commas[first + j - 1] + 1
        inner = j < count  # else the row's last cell, ending at its line's end
        ends = self.ends[lo:hi].copy()
        ends[inner] = self.commas[first[inner] + j]
        return ByteCells(self.buf, starts.astype(np.int64), ends.astype(np.int64), self.quoted)


class ByteCells(Sequence):
    """One column's cells as [start, end) ranges of the file's bytes: a read-only sequence of their texts
    (the csv module's cells: a quoted cell unquoted), made on first use; `numbers` converts them without
    the texts. `quoted`: the file holds quotes (else no cell needs unquoting)."""

    def __init__(self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, quoted: bool):
        self.buf, self.starts, self.ends, self.quoted = buf, starts, ends, quoted
        self._texts: list[str] | None = None

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, k):
        if self._texts is not None or not isinstance(k, (int, np.integer)):
            return self.texts()[k]
        if not -len(self) <= k < len(self):
            raise IndexError(k)
        cell = bytes(self.buf[int(self.starts[k]):int(self.ends[k])]).decode("utf-8")
        return _unquoted(cell) if self.quoted and cell[:1] == '"' else cell

    def __iter__(self):
        return iter(self.texts())

    def texts(self) -> list[str]:
        if self._texts is None:
            cells = _text(self.buf, self.starts, self.ends)
            if self.quoted:  # a quoted cell's quote is its first byte (plan checked it)
                first = self.buf[np.minimum(self.starts, len(self.buf) - 1)]
                for k in np.flatnonzero((self.ends > self.starts) & (first == _QUOTE)).tolist():
                    cells[k] = _unquoted(cells[k])
            self._texts = cells
        return self._texts

    def take(self, rows: np.ndarray) -> ByteCells:
        """The cells of the given rows (indices into this column), in that order."""
        return ByteCells(self.buf, self.starts[rows], self.ends[rows], self.quoted)

    def numbers(self, floats: bool) -> tuple[np.ndarray, np.ndarray] | None:
        """(values, status) with _cells.c's rules (KNOWN, NONE, ODD: float64 or int64 ns from µs), or None
        when _cells is not built or is turned off (CANNING_CSV_CELLS=0)."""
        if not cells_enabled():
            return None
        n = len(self)
        values, status = np.empty(n, np.float64 if floats else np.int64), np.empty(n, np.uint8)
        (_cells.floats if floats else _cells.us_to_ns)(self.buf, self.starts, self.ends, values, status)
        return values, status


def cells_enabled() -> bool:
    return _cells is not None and os.environ.get("CANNING_CSV_CELLS", "1") != "0"


ODD, KNOWN, MISSING = 0, 1, 2  # a cell's status from ByteCells.numbers (_cells.c)


def _unquoted(cell: str) -> str:
    return cell[1:-1].replace('""', '"')


def _text(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[str]:
    """The text of each [start, end) byte range, one str each."""
    if not len(starts):
        return []
    starts, lens = starts.astype(np.int64), (ends - starts).astype(np.int64)
    out_at = np.concatenate(([0], np.cumsum(lens + 1)[:-1]))
    idx = np.arange(int(lens.sum()) + len(lens), dtype=np.int64) + np.repeat(starts - out_at, lens + 1)
    joined = buf[np.minimum(idx, len(buf) - 1)]
    joined[out_at + lens] = 0  # each range's own end: NUL, which no file taken here holds, separates them
    return bytes(joined[:-1]).decode("utf-8").split("\x00")


def plan(raw: bytes, n: int) -> Plan | None:
    """The plan of a CSV whose header has n cells (n >= 2), or None when csv_io must read it (module doc)."""
    if n < 2 or b"\x00" in raw:
        return None
    buf = np.frombuffer(raw, np.uint8)
    pos = np.int32 if len(buf) < 2 ** 31 - 1 else np.int64  # positions: half the memory of int64
    quotes = np.flatnonzero(buf == _QUOTE).astype(pos)
    if len(quotes) % 2:
        return None

    def outside(byte: int) -> np.ndarray:  # positions of a byte outside quotes (after an even number of them)
        at = np.flatnonzero(buf == byte).astype(pos)
        return at[np.searchsorted(quotes, at) % 2 == 0] if len(quotes) else at
    cr, lf, commas = outside(_CR), outside(_LF), outside(_COMMA)
    if len(cr) and (cr[-1] + 1 >= len(buf) or (buf[cr + 1] != _LF).any()):
        return None  # a lone CR ends a row for the csv module
    if not len(lf):
        return None  # the header alone
    longest_line = max(int(lf[0]), int(np.diff(lf).max(initial=0)), len(buf) - int(lf[-1]))
    if len(quotes) or longest_line > csv.field_size_limit() - 2:  # else no cell can be long or quoted
        bounds = np.concatenate(([-1], commas, cr, lf, [len(buf)])).astype(np.int64)
        bounds.sort()  # distinct positions (different bytes): sorted, the cells' delimiters in order
        if np.diff(bounds).max() > csv.field_size_limit() - 2:
            return None
        if len(quotes) and not _quotes_well_formed(quotes, bounds):
            return None
    start, end = lf[:-1].astype(np.int64) + 1, lf[1:].astype(np.int64)  # data line k: after line end k
    if lf[-1] + 1 < len(buf):  # a last line without a line end
        start, end = np.append(start, lf[-1] + 1), np.append(end, len(buf))
    end -= (end > start) & (buf[np.maximum(end - 1, 0)] == _CR)
    first = np.searchsorted(commas, start)
    count = np.searchsorted(commas, end) - first
    keep = _rows(raw, buf, start, end, count, commas, first, n)
    if keep is None:
        return None
    return Plan(buf, start[keep], end[keep], first[keep], count[keep], commas, bool(len(quotes)))


def _rows(raw: bytes, buf: np.ndarray, start: np.ndarray, end: np.ndarray, count: np.ndarray, commas: np.ndarray,
          first: np.ndarray, n: int) -> np.ndarray | None:
    """Indices of the data lines that are rows, or None when some line is neither a row of n cells, nor one
    of n + 1 whose last is blank, nor a blank line."""
    blank = np.zeros(len(start), bool)
    for k in np.flatnonzero(count == 0).tolist():  # what the csv module gives as [] or [' ']
        blank[k] = not raw[int(start[k]):int(end[k])].decode("utf-8").strip()
    if not ((count == n - 1) | (count == n) | blank).all():
        return None
    extra = np.flatnonzero(count == n)
    if len(extra) and any(t.strip() for t in _text(buf, commas[first[extra] + n - 1] + 1, end[extra])):
        return None
    return np.flatnonzero(~blank)


def _quotes_well_formed(quotes: np.ndarray, bounds: np.ndarray) -> bool:
    """Every quote in a cell that starts and ends with one, the quotes between doubled. `bounds`: the
    cells' delimiters (commas outside quotes, CR, LF), -1 and the file's end: a cell lies between two."""
    at = np.searchsorted(bounds, quotes)  # the cell of each quote: after bounds[at - 1], before bounds[at]
    opens = np.concatenate(([True], at[1:] != at[:-1]))  # the first quote of its cell
    closes = np.concatenate((at[1:] != at[:-1], [True]))
    if not ((quotes[opens] == bounds[at[opens] - 1] + 1).all() and (quotes[closes] == bounds[at[closes]] - 1).all()):
        return False
    inner = quotes[~opens & ~closes]
    return len(inner) % 2 == 0 and bool((inner[0::2] + 1 == inner[1::2]).all())
