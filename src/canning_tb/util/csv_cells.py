"""CSV as the downloads and the text twins write it, with formula injection neutralised.

A spreadsheet runs a cell that starts with `=`, `+`, `-` or `@` (and, in some, a tab or carriage
return) as a formula: an operator named `=HYPERLINK("http://...")` in a trace would become a link
in the user's spreadsheet. Following OWASP's guidance on CSV injection, such a text cell is written
with a single quote in front (`'=HYPERLINK(...)`): spreadsheets show the text as it was, and the
quote is visible, so nothing is hidden. Numbers (negative ones too) are written as numbers.
"""
from __future__ import annotations

import csv
import io
from typing import Iterable, Iterator

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
CHUNK_ROWS = 1000


def safe_cell(value):
    """The cell as written: text that a spreadsheet would run as a formula gets a leading quote."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_chunks(header: list[str], rows: Iterable[list]) -> Iterator[str]:
    """The CSV text (header first, CRLF line ends), a chunk of CHUNK_ROWS rows at a time: a download
    of any length streams without holding the whole file."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([safe_cell(name) for name in header])
    for count, row in enumerate(rows, 1):
        writer.writerow([safe_cell(cell) for cell in row])
        if count % CHUNK_ROWS == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()
