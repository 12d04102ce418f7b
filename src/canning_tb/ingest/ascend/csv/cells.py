"""Cells -> numpy columns, with exactly the rules of the scalar converters in csv_io (us_to_ns, to_float,
to_int, _scale), but a column at a time: what the files hold (µs text with 3 decimals, floats) goes
through numpy, or, for cells still in the file's bytes (csv_fast.ByteCells), through _cells.c; any
other cell (inf, quotes, text) through the scalar rule, one by one, so every path gives the same value
for every cell. Each function returns (values, known): `known` is False where the scalar rule gives None.
"""
from __future__ import annotations

from operator import itemgetter
from typing import Sequence

import numpy as np

from canning_tb.util.arrays import distinct

from .fast import KNOWN, ODD, ByteCells
from .rows import _LIMIT, to_float, to_int, us_to_ns

_BLOCK = 65536  # rows of text turned into a byte matrix at once


def _scalar(values: Sequence, fn) -> tuple[np.ndarray, np.ndarray]:
    out = [fn(v) for v in values]
    known = np.fromiter((v is not None for v in out), bool, len(out))
    return np.fromiter((0 if v is None else v for v in out), np.int64, len(out)), known


def _by_type(values: Sequence, convert) -> tuple[np.ndarray, np.ndarray] | None:
    """A list mixing value types (str, float, int, None) converted type by type; None when homogeneous."""
    kinds = set(map(type, values))
    if len(kinds) <= 1:
        return None
    out, known = np.zeros(len(values), np.int64), np.zeros(len(values), bool)
    for kind in kinds:
        where = [k for k, v in enumerate(values) if type(v) is kind]
        a, ok = convert([values[k] for k in where])
        out[where], known[where] = a, ok
    return out, known


def take(cells: Sequence, rows: np.ndarray) -> Sequence:
    """The cells of the given rows of a column (a list, or ByteCells still in the bytes)."""
    if type(cells) is ByteCells:
        return cells.take(rows)
    return [cells[k] for k in rows.tolist()]


def _from_bytes(cells: ByteCells, floats: bool, rule) -> tuple[np.ndarray, np.ndarray] | None:
    """(values, known) of cells still in the file's bytes: _cells.c's plain cells, the scalar rule for the
    odd ones; None when _cells is not built."""
    got = cells.numbers(floats)
    if got is None:
        return None
    values, status = got
    known = status == KNOWN
    for k in np.flatnonzero(status == ODD).tolist():
        v = rule(cells[k])
        known[k] = v is not None
        values[k] = 0 if v is None else v
    return values, known  # (_cells.c gives 0 for a missing cell)


def us_to_ns_column(values: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """csv_io.us_to_ns of every value (µs as text, int or float) -> int64 ns."""
    if type(values) is ByteCells:
        got = _from_bytes(values, False, us_to_ns)
        if got is not None:
            return got
        values = values.texts()
    if len(values) and type(values[0]) is str:
        joined = _joined_us(values)  # the common case: every cell text of one width, read from one byte matrix
        if joined is not None:
            return joined
    mixed = _by_type(values, us_to_ns_column)
    if mixed is not None:
        return mixed
    if not len(values):
        return np.zeros(0, np.int64), np.zeros(0, bool)
    first = values[0]
    if type(first) is str:
        return _text_us(values)
    if type(first) is float:
        return _scaled_floats(np.fromiter(values, np.float64, len(values)), 1000)
    if type(first) is int:
        try:
            a = np.fromiter(values, np.int64, len(values))
        except OverflowError:
            return _scalar(values, us_to_ns)
        if np.all(np.abs(a) < _LIMIT // 1000):
            return a * 1000, np.ones(len(a), bool)
    return _scalar(values, us_to_ns)


def dur_column(values: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """us_to_ns of a column that holds numbers (JSON durations), with None as 0: the numbers at once when
    numpy reads them all as ints or floats (floats below 2**43 µs: then an int's float path is exact)."""
    a = np.array(values) if len(values) else np.zeros(0, np.float64)
    if a.dtype.kind == "i" and a.ndim == 1:
        known = np.abs(a) <= _LIMIT // 1000
        return np.where(known, a, 0) * 1000, known
    if a.dtype.kind == "f" and a.ndim == 1:
        with np.errstate(invalid="ignore"):
            if not (np.abs(a) >= 2.0 ** 43).any():
                return _scaled_floats(a, 1000)
    return us_to_ns_column([0 if v is None else v for v in values])


def _scaled_floats(f: np.ndarray, factor: int) -> tuple[np.ndarray, np.ndarray]:
    """_scale of floats: round(f * factor) where finite and in range (Python's round is half-even, as rint)."""
    with np.errstate(invalid="ignore", over="ignore"):
        x = f * factor
        known = np.abs(x) < _LIMIT
    return np.where(known, np.rint(np.where(known, x, 0)), 0).astype(np.int64), known


def _text_us(values: Sequence) -> tuple[np.ndarray, np.ndarray]:
    outs, knowns = [], []
    for lo in range(0, len(values), _BLOCK):
        part = values[lo:lo + _BLOCK]
        try:
            raw = np.array(part, dtype="S")
        except UnicodeEncodeError:
            a, ok = _scalar(part, us_to_ns)
        else:
            fixed = _fixed_width_ns(raw.view(np.uint8).reshape(len(raw), raw.dtype.itemsize)) \
                if raw.dtype.itemsize else None
            a, ok = fixed or _decimal_ns(raw)
            odd = np.flatnonzero(~ok)
            if len(odd):  # N/A, quotes, exponents ...: the scalar rule decides
                a2, ok2 = _scalar([part[k] for k in odd], us_to_ns)
                a[odd], ok[odd] = a2, ok2
        outs.append(a)
        knowns.append(ok)
    return np.concatenate(outs), np.concatenate(knowns)


def _joined_us(values: Sequence) -> tuple[np.ndarray, np.ndarray] | None:
    """us_to_ns of text cells of a few widths (whitespace around them, as the CSVs' trailing tab, allowed
    when every cell of the width has it): the cells of each width joined into one byte matrix, one row
    per cell. None for anything else (a cell that is no str, not ASCII, not plain digits), which the
    general rules then take."""
    try:
        text = "\n".join(values).encode("utf-8")
    except (TypeError, UnicodeEncodeError):
        return None
    n, w = len(values), len(values[0])
    if len(text) == n * (w + 1) - 1:
        m = np.frombuffer(text + b"\n", np.uint8).reshape(n, w + 1)
        if (m[:, w] == 10).all():  # then no cell holds a line end and every cell is w bytes
            got = _matrix_ns(m[:, :w])
            if got is not None:
                return got
    return _by_width(values)


def _by_width(values: Sequence) -> tuple[np.ndarray, np.ndarray] | None:
    lens = np.fromiter(map(len, values), np.int64, len(values))
    widths = distinct(lens)
    if len(widths) > 8:
        return None
    out, known = np.zeros(len(values), np.int64), np.zeros(len(values), bool)
    for w in widths.tolist():
        rows = np.flatnonzero(lens == w)
        part = [values[int(rows[0])]] if len(rows) == 1 else itemgetter(*rows.tolist())(values)
        text = "\n".join(part).encode("utf-8") + b"\n"
        got = None
        if len(text) == len(rows) * (w + 1) and w:
            got = _matrix_ns(np.frombuffer(text, np.uint8).reshape(len(rows), w + 1)[:, :w])
        out[rows], known[rows] = got or _text_us(list(part))  # odd cells (N/A, quotes ...): the general rules
    return out, known


def _matrix_ns(m: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Cells as rows of a byte matrix: blank columns around them dropped, then digits with 3 decimals or
    whole µs; None when they are not all so."""
    while m.shape[1] and _blank(m[:, -1]):
        m = m[:, :-1]
    while m.shape[1] and _blank(m[:, 0]):
        m = m[:, 1:]
    got = _fixed_width_ns(m)
    if got is not None or not 1 <= m.shape[1] <= 16 or not ((m >= 48) & (m <= 57)).all():
        return got
    us = (m.astype(np.int64) - 48) @ 10 ** np.arange(m.shape[1] - 1, -1, -1, dtype=np.int64)
    known = us <= _LIMIT // 1000
    return np.where(known, us, 0) * 1000, known


def _blank(col: np.ndarray) -> bool:
    return bool(((col == 9) | (col == 32)).all())


def _fixed_width_ns(m: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The common case at once: a byte matrix (one cell per row) of digits with 3 decimals
    ('1736412474714258.990'); None when the block is not all so."""
    n, w = m.shape
    if not 5 <= w <= 20:
        return None
    digits = np.delete(m, w - 4, axis=1)
    if not ((m[:, w - 4] == 46).all() and ((digits >= 48) & (digits <= 57)).all()):
        return None
    if w == 20 and (m[:, 0] > 52).any():  # 19 digits of ns: below 5e18 they fit int64
        return None
    weights = 10 ** np.arange(w - 2, -1, -1, dtype=np.int64)
    ns = (digits.astype(np.int64) - 48) @ weights
    return ns, ns < _LIMIT


def _decimal_ns(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Plain decimals ('  1736412474714258.990\t', '-3', '.5') -> ns, the 4th decimal rounding half up;
    ok is False for every other text (left to the scalar rule)."""
    n = len(raw)
    text = np.char.strip(raw)
    parts = np.char.partition(text, b".")
    signed, frac = parts[:, 0], parts[:, 2]
    whole = np.char.lstrip(signed, b"+-")
    sign_len = np.char.str_len(signed) - np.char.str_len(whole)
    ok = ((sign_len <= 1) & (np.char.isdigit(whole) | (whole == b"")) & (np.char.isdigit(frac) | (frac == b""))
          & ((whole != b"") | (frac != b"")))
    ok &= ((parts[:, 1] == b".") | (frac == b"")) & (np.char.str_len(whole) <= 18)  # 18 digits fit int64
    ns = np.zeros(n, np.int64)
    if not ok.any():
        return ns, ok
    whole = np.where(ok & (whole != b""), whole, b"0")
    ns = whole.astype(np.int64)
    ok &= ns < _LIMIT // 1000
    ns = np.where(ok, ns, 0) * 1000
    digits = np.char.ljust(np.where(ok, frac, b""), 4, b"0")
    m = digits.view(np.uint8).reshape(n, digits.dtype.itemsize)[:, :4].astype(np.int64) - 48
    ns += m[:, 0] * 100 + m[:, 1] * 10 + m[:, 2] + (m[:, 3] >= 5)
    negative = np.char.startswith(signed, b"-")
    return np.where(ok, np.where(negative, -ns, ns), 0), ok


_NAN_TEXT = {v: "nan" for v in ("", "N/A", "NA", "n/a", "None", "null", "-", "nan", "NaN")}
_NAN_TEXT[None] = "nan"


def float_column(values: Sequence) -> np.ndarray:
    """csv_io.to_float of every value -> float64, NaN where it gives None."""
    if type(values) is ByteCells:
        got = _from_bytes(values, True, to_float)
        if got is not None:
            f, known = got
            f[~known] = np.nan
            return f
        values = values.texts()
    f = None
    if set(map(type, values)) <= {str, float, int, type(None)}:
        try:  # float() of these is to_float's, once the cells that mean "none" say nan
            f = np.fromiter(map(float, map(_NAN_TEXT.get, values, values)), np.float64, len(values))
        except (ValueError, OverflowError, TypeError):
            f = None
    if f is None:
        f = np.fromiter((np.nan if (v := to_float(x)) is None else v for x in values), np.float64, len(values))
    f[~np.isfinite(f)] = np.nan
    return f


def scaled_column(values: Sequence, factor: int) -> tuple[np.ndarray, np.ndarray]:
    """csv_io._scale(value, factor) of every value (MiB -> bytes, KB -> bytes ...)."""
    f = float_column(values)
    return _scaled_floats(f, factor)


def int_column(values: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """csv_io.to_int of every value."""
    if values and type(values[0]) is int and all(type(v) is int for v in values):
        try:
            a = np.fromiter(values, np.int64, len(values))
            known = np.abs(a) < _LIMIT
            return np.where(known, a, 0), known
        except OverflowError:
            return _scalar(values, to_int)
    f = float_column(values)
    with np.errstate(invalid="ignore"):
        r = np.rint(f)
        known = np.abs(r) < _LIMIT
    return np.where(known, r, 0).astype(np.int64), known
