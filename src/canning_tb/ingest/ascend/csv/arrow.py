"""An Ascend CSV's columns read by pyarrow.csv, for rows.CsvTable.scan: the cells the csv module gives (pyarrow
splits fields, unquotes and undoubles quotes, takes CR, LF and CRLF as line ends and line ends inside quotes
as the cell's, as the csv module does: test_csv_arrow checks it on every fixture and on thousands of generated
files), but parsed in C++ and only the wanted columns kept.

The time columns are read as text (their µs become ns exactly, columns.py); the number columns the caller names
(`floats`: PMU ratios, MiB, KB, block dims) as float64, by the same float() the scalar rule takes, the texts that
mean "no number" (`missing`: rows._MISSING) null. A number column holding a cell pyarrow cannot read as a number
is read again as text (then the scalar rule decides that cell).

`read` returns None for anything pyarrow refuses: a row of another number of cells than the header's (a trailing
comma, a short or a blank-but-spaces line), a header with quotes or line ends in it, a wanted cell longer than
the csv module's field limit, or when turned off (CANNING_CSV_ARROW=0). Then the csv module reads the file
(rows.py), which also skips and counts the bad rows. The caller checks the file is valid UTF-8 (pyarrow does not
check it again) and holds no NUL.
"""
from __future__ import annotations

import csv
import os
import re

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

ENV = "CANNING_CSV_ARROW"
_CONVERSION = re.compile(r"In CSV column #(\d+): .*CSV conversion error")


def enabled() -> bool:
    return os.environ.get(ENV, "1") != "0"


def read(raw: bytes, n: int, wanted: list[int | None], floats: set[int], missing=()) -> list | None:
    """The wanted columns (file column indices; None: an all-null column) of the whole file: string arrays, or
    float64 for the indices in `floats` (the texts in `missing` null); None when pyarrow declines the file."""
    if n < 2 or not enabled():
        return None
    head = raw[:raw.find(b"\n") + 1 or len(raw)]
    if b'"' in head or b"\r" in head.rstrip(b"\r\n"):  # a header the csv module reads otherwise than line one
        return None
    cols = sorted({i for i in wanted if i is not None})
    as_float = {i for i in floats if i in cols}
    names = [f"c{i}" for i in range(n)]
    while True:
        try:
            table = pcsv.read_csv(pa.BufferReader(pa.py_buffer(raw)), read_options=_READ(names),
                                  parse_options=_PARSE,
                                  convert_options=_convert(names, cols, as_float, missing))
            break
        except pa.ArrowInvalid as e:
            m = _CONVERSION.search(str(e))
            if m is None or int(m.group(1)) not in as_float:
                return None  # rows of another number of cells ...: the csv module reads the file
            as_float.discard(int(m.group(1)))  # that column as text: the scalar rule for its odd cells
    rows = table.num_rows
    out = []
    for i in wanted:
        if i is None:
            out.append(pa.nulls(rows, pa.string()))
            continue
        col = table.column(names[i])
        if i not in as_float and rows and pc.max(pc.binary_length(col)).as_py() > csv.field_size_limit():
            return None  # the csv module refuses such a cell: it says so, and reads up to it
        out.append(col)
    return out


def _READ(names: list[str]) -> pcsv.ReadOptions:
    # one thread: measured faster on this 2-core VM (benchmarks/README.md), and the trace's child reads beside it
    return pcsv.ReadOptions(column_names=names, skip_rows=1, use_threads=False)


_PARSE = pcsv.ParseOptions(delimiter=",", quote_char='"', double_quote=True, escape_char=False,
                           newlines_in_values=True, ignore_empty_lines=True)


def _convert(names: list[str], cols: list[int], as_float: set[int], missing) -> pcsv.ConvertOptions:
    return pcsv.ConvertOptions(column_types={names[i]: pa.float64() if i in as_float else pa.string() for i in cols},
                               include_columns=[names[i] for i in cols], null_values=sorted(missing),
                               strings_can_be_null=False, check_utf8=False)  # (the caller checked the whole file)
