"""The plain reading's CSV rows: csv.reader over the whole file, one list of cells per row (the scalar
rules, us_to_ns / to_float ..., are canning-tb's own: csv_io)."""
from __future__ import annotations

import csv
import io
from typing import Callable, Iterator

from canning_tb.ingest.ascend.csv.rows import (device_index, device_name, kb_to_bytes, mb_to_bytes, ms_to_ns,  # noqa: F401
                                             none_to, norm_shapes, norm_stack, read_bytes, step_value, to_float, to_int,
                                             unreadable, us_float_to_ns, us_to_ns)
from canning_tb.ingest.table import Problem


class CsvFile:
    """Header-indexed rows of one CSV file."""

    def __init__(self, path: str, header: list[str], rows: list[list[str]], display: str):
        self.path = path
        self.display = display
        self.header = [h.strip().lstrip("\ufeff").strip() for h in header]
        self.index = {h: i for i, h in enumerate(self.header)}
        self.rows = rows

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

    def getter(self, *names: str) -> Callable[[list[str]], str | None]:
        i = self.col(*names)
        if i is None:
            return lambda row: None
        return lambda row: row[i]

    def __len__(self) -> int:
        return len(self.rows)


def read_csv(path: str, display: str, problems: list[Problem]) -> CsvFile | None:
    """Read a whole CSV; None (with an error Problem) when unreadable or headerless."""
    raw = read_bytes(path, display, problems)
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        problems.append(Problem(display, "not valid UTF-8; undecodable bytes replaced", "warning"))
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        problems.append(Problem(display, "empty file (no header)"))
        return None
    except csv.Error as e:
        problems.append(Problem(display, f"malformed CSV header: {e}"))
        return None
    n = len(header)
    rows: list[list[str]] = []
    bad = 0
    first_bad = None
    try:
        for row in reader:
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) != n:
                # a trailing empty cell from a trailing comma is tolerated
                if len(row) == n + 1 and row[-1].strip() == "":
                    row = row[:-1]
                else:
                    bad += 1
                    if first_bad is None:
                        first_bad = reader.line_num
                    continue
            rows.append(row)
    except csv.Error as e:
        problems.append(Problem(display, f"malformed CSV near line {reader.line_num}: {e}; rest of file skipped"))
    if bad:
        problems.append(Problem(display, f"{bad} row(s) with a wrong number of columns skipped "
                                         f"(expected {n}; first at line {first_bad})", "warning"))
    return CsvFile(path, header, rows, display)


def iter_rows(f: CsvFile) -> Iterator[list[str]]:
    return iter(f.rows)
