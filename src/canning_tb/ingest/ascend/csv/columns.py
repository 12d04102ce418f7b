"""Columns of cells -> numpy columns, with exactly the rules of the scalar converters in rows.py (us_to_ns,
to_float, to_int, _scale), a column at a time. A column is a pyarrow string array (the CSVs' cells, whichever
parser read them: a null is no cell), a float64 array (a number column pyarrow.csv converted while parsing,
arrow.py: the same float() the rule takes) or a Python list (trace_view.json's values: str, float, int, None).

The µs texts become ns from their bytes, exactly (digits, never a float): one byte matrix when every cell has
the width the files write ('1736412474714258.990\\t'); else, the TABs and spaces around the cells dropped, the
cells that are digits and at most one point grouped by width and place of the point, a byte matrix per group
(3 decimals make the ns, the 4th rounds half up). A cell neither path takes (N/A, signs, quotes, exponents,
other whitespace, non-ASCII digits) goes to the scalar rule, once per distinct text, so every path gives every
cell the scalar rule's value. Each function returns (values, known): known is False where the scalar rule gives
None. Text cells are mapped once per distinct cell (`mapped`, `each`, `mapped_rows`: pyarrow's hash).
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .rows import _LIMIT, _MISSING, to_float, to_int, us_to_ns

Column = pa.Array | pa.ChunkedArray

MISSING = sorted(_MISSING)  # the cells that mean "no number" (pyarrow.csv's null_values for the float columns)
_WIDEST = 24  # bytes: longer cells are read by the scalar rule (a µs text is 20 with its TAB)
_POW10 = 10 ** np.arange(19, dtype=np.int64)


# -- columns as pyarrow arrays -----------------------------------------------------------------------------------

def is_arrow(values) -> bool:
    return isinstance(values, (pa.Array, pa.ChunkedArray))


def _arrays(col: Column) -> list[pa.Array]:
    """The column as few arrays as its size allows (a string array's offsets are int32: under 2 GiB each)."""
    if isinstance(col, pa.Array):
        return [col]
    if col.num_chunks == 1:
        return [col.chunk(0)]
    if col.nbytes < 1 << 30:
        return [col.combine_chunks()] if col.num_chunks else [pa.array([], col.type)]
    return list(col.chunks)


def _joined(parts: list[tuple]) -> tuple:
    if len(parts) == 1:
        return parts[0]
    return tuple(np.concatenate(p) for p in zip(*parts))


def texts(col: Column | list) -> list:
    """The cells as Python values (str, or None where there is no cell)."""
    return col.to_pylist() if is_arrow(col) else list(col)


def take(col: Column | list, rows: np.ndarray) -> Column | list:
    """The cells of the given rows (indices into the column), in that order."""
    if is_arrow(col):
        return col.take(pa.array(rows, pa.int64()))
    return [col[k] for k in rows.tolist()]


def cell(col: Column | list, k: int):
    return col[k].as_py() if is_arrow(col) else col[k]


def mapped(col: Column | list, fn, dtype=np.int32) -> np.ndarray:
    """fn(cell) of every cell, computed once per distinct cell (fn: a dict's __getitem__, a rule)."""
    values, codes = _distinct(col)
    return np.fromiter(map(fn, values), dtype, len(values))[codes]


def each(col: Column | list, fn) -> list:
    """[fn(cell) for every cell], computed once per distinct cell."""
    values, codes = _distinct(col)
    values = list(map(fn, values))
    return [values[k] for k in codes.tolist()]


class Distinct(NamedTuple):
    """A column as its distinct cells (in order of first appearance, None for no cell) and each cell's position
    among them: what `distinct` gives, which mapped, each and mapped_rows take in place of the column."""
    values: list
    codes: np.ndarray


def distinct(col: Column | list | Distinct) -> Distinct:
    return _distinct(col)


def _distinct(col: Column | list | Distinct) -> Distinct:
    if isinstance(col, Distinct):
        return col
    if not is_arrow(col):
        col = pa.array(col, pa.string())
    if not len(col):
        return Distinct([], np.zeros(0, np.int64))
    enc = pc.dictionary_encode(col, null_encoding="encode")
    if isinstance(enc, pa.DictionaryArray):
        return Distinct(enc.dictionary.to_pylist(), np.asarray(enc.indices.to_numpy(zero_copy_only=False), np.int64))
    chunks = [c for c in enc.chunks if len(c)]
    if all(c.dictionary is chunks[0].dictionary or c.dictionary.equals(chunks[0].dictionary) for c in chunks):
        codes = np.concatenate([np.asarray(c.indices.to_numpy(zero_copy_only=False), np.int64) for c in chunks])
        return Distinct(chunks[0].dictionary.to_pylist(), codes)
    values = pc.unique(col)  # (chunks with dictionaries of their own: not what pyarrow gives today)
    return Distinct(values.to_pylist(), np.asarray(pc.index_in(col, value_set=values).to_numpy(zero_copy_only=False),
                                                   np.int64))


def mapped_rows(cols: list, fn, dtype=np.int32) -> np.ndarray:
    """fn(tuple of the row's cells) of every row of several columns, computed once per distinct row."""
    n = len(cols[0])
    if not n:
        return np.zeros(0, dtype)
    key, span, parts = np.zeros(n, np.int64), 1, []
    for col in cols:
        values, codes = _distinct(col)
        parts.append((values, codes))
        if span * len(values) >= 1 << 62:  # the key made dense again before it could overflow
            uniq, key = dense(key)
            key, span = key.astype(np.int64), len(uniq)
        key, span = key * len(values) + codes, span * len(values)
    uniq, key = dense(key)
    first = np.empty(len(uniq), np.int64)
    first[key[::-1]] = np.arange(n - 1, -1, -1)  # each distinct row's first appearance
    rows = list(zip(*([values[k] for k in codes[first].tolist()] for values, codes in parts)))
    return np.fromiter(map(fn, rows), dtype, len(rows))[key]


def dense(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct values in order of first appearance, each value's position among them): np.unique's
    answer up to the order, by a hash (pyarrow's) rather than a sort."""
    if not len(values):
        return values[:0], np.zeros(0, np.int64)
    enc = pc.dictionary_encode(pa.array(values))
    return enc.dictionary.to_numpy(zero_copy_only=False), enc.indices.to_numpy(zero_copy_only=False)


# -- µs text -> ns -----------------------------------------------------------------------------------------------

def us_to_ns_column(values: Column | Sequence) -> tuple[np.ndarray, np.ndarray]:
    """rows.us_to_ns of every cell -> int64 ns (µs text, or a list of µs as text, int or float)."""
    if not is_arrow(values):
        return _us_list(values)
    if pa.types.is_floating(values.type) or pa.types.is_integer(values.type):  # (not read so by arrow.py)
        return _us_list(values.to_pylist())
    return _joined([_us_array(a) for a in _arrays(values)])


def _offsets(a: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(offsets: cell k is data[offsets[k]:offsets[k + 1]], the data bytes) of a string array."""
    bufs = a.buffers()
    at = np.frombuffer(bufs[1], np.int32 if pa.types.is_string(a.type) else np.int64)[a.offset:a.offset + len(a) + 1]
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None and bufs[2].size else np.zeros(0, np.uint8)
    return at.astype(np.int64), data


def _us_array(a: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    n = len(a)
    if not n:
        return np.zeros(0, np.int64), np.zeros(0, bool)
    at, data = _offsets(a)
    lens = np.diff(at)
    w = int(lens[0])
    if w and not a.null_count and (lens == w).all():  # one width: the cells one after another, one matrix
        got = _matrix_ns(data[int(at[0]):int(at[0]) + n * w].reshape(n, w))
        if got is not None:
            return got
    if (data == 9).any() or (data == 32).any():  # blanks around cells (torch_npu's trailing TAB) dropped first
        a = pc.utf8_trim(a, " \t")
        at, data = _offsets(a)
    ns, known, odd = _plain_ns(at, data, a)
    if odd.any():  # N/A, quotes, signs, exponents ...: the scalar rule decides, once per distinct text
        rows = np.flatnonzero(odd)
        values, codes = _distinct(a.take(pa.array(rows)))
        got = [us_to_ns(v) for v in values]
        ns[rows] = np.fromiter((0 if v is None else v for v in got), np.int64, len(got))[codes]
        known[rows] = np.fromiter((v is not None for v in got), bool, len(got))[codes]
    return ns, known


def _matrix_ns(m: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Cells of one width as rows of a byte matrix: blank columns around them dropped, then digits with 3 decimals
    or whole µs; None when they are not all so."""
    while m.shape[1] and _blank(m[:, -1]):
        m = m[:, :-1]
    while m.shape[1] and _blank(m[:, 0]):
        m = m[:, 1:]
    got = _fixed_width_ns(m)
    if got is not None or not 1 <= m.shape[1] <= 16 or not ((m >= 48) & (m <= 57)).all():
        return got
    us = _number(m, range(m.shape[1]))
    known = us <= _LIMIT // 1000
    return np.where(known, us, 0) * 1000, known


def _number(m: np.ndarray, columns) -> np.ndarray:
    """The digits of the given columns of a byte matrix, read as one decimal number per row (int64: at most 18
    digits, or 19 below 5e18), a column at a time: no temporary bigger than a column of the answer."""
    out = np.zeros(len(m), np.int64)
    for j in columns:
        out *= 10
        out += m[:, j]
        out -= 48
    return out


def _blank(col: np.ndarray) -> bool:
    return bool(((col == 9) | (col == 32)).all())


def _fixed_width_ns(m: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The common case at once: a byte matrix (one cell per row) of digits with 3 decimals ('1736412474714258.990');
    None when the block is not all so."""
    n, w = m.shape
    if not 5 <= w <= 20:
        return None
    if not (m[:, w - 4] == 46).all() or ((m < 48) | (m > 57)).sum() != n:  # (the points: all that is no digit)
        return None
    if w == 20 and (m[:, 0] > 52).any():  # 19 digits of ns: below 5e18 they fit int64
        return None
    ns = _number(m, [j for j in range(w) if j != w - 4])
    return ns, ns < _LIMIT


_PLAIN_BYTE = np.zeros(256, bool)  # the bytes of a plain decimal: digits and the point
_PLAIN_BYTE[48:58] = _PLAIN_BYTE[46] = True


def _plain_ns(at: np.ndarray, data: np.ndarray, a: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ns, known, odd) of cells of any widths that hold digits and at most one point, nothing else ('53.741',
    '6.54', '7', '.5', '5.'): the 4th decimal rounds half up, the rest are dropped. The cells of one width with
    the point at one place are one byte matrix, so each digit's weight is its column's. odd: every other cell
    (empty, N/A, a sign, 19 whole digits or more ...), left to the scalar rule (ns and known 0 and False there)."""
    n = len(at) - 1
    data, at = data[at[0]:at[-1]], at - at[0]  # (a slice's data buffer may hold other cells around its own)
    lens = np.diff(at)
    other = np.zeros(n, bool)  # a byte that is no digit and no point
    bad = np.flatnonzero(~_PLAIN_BYTE[data])
    if len(bad):
        other[np.searchsorted(at, bad, "right") - 1] = True
    if a.null_count:
        other[~np.asarray(a.is_valid().to_numpy(zero_copy_only=False), bool)] = True
    found = np.flatnonzero(data == 46)
    owner = np.searchsorted(at, found, "right") - 1
    points = np.bincount(owner, minlength=n)
    digits = lens - points
    dot = lens.copy()  # where the whole digits end: the point, else the cell's end
    dot[owner] = found - at[owner]
    plain = ~other & (points <= 1) & (digits >= 1) & (dot <= 18) & (lens <= _WIDEST)
    ns, known = np.zeros(n, np.int64), np.zeros(n, bool)
    rows = np.flatnonzero(plain)
    if len(rows):
        key = (lens[rows] * 32 + dot[rows]).astype(np.int16)  # (< 32 * 25: a radix sort)
        order = np.argsort(key, kind="stable")
        cuts = np.flatnonzero(np.diff(key[order])) + 1
        padded = np.append(data, np.zeros(_WIDEST, np.uint8))
        for group in np.split(rows[order], cuts):
            w, p = int(lens[group[0]]), int(dot[group[0]])
            m = np.lib.stride_tricks.sliding_window_view(padded, w)[at[group]]  # the group's cells, one a row
            v = _number(m, range(p))
            ok = v <= _LIMIT // 1000
            k = min(3, max(w - p - 1, 0))  # the decimals that make ns
            v = np.where(ok, v, 0) * 1000 + _number(m, range(p + 1, p + 1 + k)) * 10 ** (3 - k)
            if w > p + 4:
                v += m[:, p + 4] >= 53  # the 4th decimal, 5 or more: half up
            ns[group], known[group] = np.where(ok, v, 0), ok & (v < _LIMIT)
    return ns, known, ~plain


# -- lists (trace_view.json's values) ----------------------------------------------------------------------------

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


def _us_list(values: Sequence) -> tuple[np.ndarray, np.ndarray]:
    if not len(values):
        return np.zeros(0, np.int64), np.zeros(0, bool)
    mixed = _by_type(values, _us_list)
    if mixed is not None:
        return mixed
    first = values[0]
    if type(first) is str:
        return _us_array(pa.array(values, pa.string()))
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


# -- floats, ints, scaled ----------------------------------------------------------------------------------------

_NAN_TEXT = {v: "nan" for v in _MISSING}
_NAN_TEXT[None] = "nan"


def float_column(values: Column | Sequence) -> np.ndarray:
    """rows.to_float of every cell -> float64, NaN where it gives None."""
    if is_arrow(values) and pa.types.is_floating(values.type):  # read as numbers by pyarrow.csv (arrow.py)
        f = np.asarray(values.to_numpy(), np.float64)  # (a new array; null, the missing cells: NaN)
        if not f.flags.writeable:
            f = f.copy()
    elif is_arrow(values):
        f = np.concatenate([_float_array(a) for a in _arrays(values)]) if len(values) else np.zeros(0)
    else:
        f = _float_list(values)
    f[~np.isfinite(f)] = np.nan
    return f


def _float_array(a: pa.Array) -> np.ndarray:
    if not len(a):
        return np.zeros(0)
    try:  # float()'s value for each cell pyarrow parses (test_columns checks it bit for bit), the cell as text
        return np.array(pc.cast(a, pa.float64()).to_numpy(zero_copy_only=False), np.float64)
    except pa.ArrowInvalid:
        pass
    none = pc.fill_null(pc.is_in(a, value_set=pa.array(MISSING)), True)
    try:
        return np.array(pc.cast(pc.if_else(none, pa.scalar(None, pa.string()), a), pa.float64())
                        .to_numpy(zero_copy_only=False), np.float64)
    except pa.ArrowInvalid:  # text that is no plain number: the scalar rule, once per distinct cell
        return mapped(a, lambda v: np.nan if (x := to_float(v)) is None else x, np.float64)


def _float_list(values: Sequence) -> np.ndarray:
    f = None
    if set(map(type, values)) <= {str, float, int, type(None)}:
        try:  # float() of these is to_float's, once the cells that mean "none" say nan
            f = np.fromiter(map(float, map(_NAN_TEXT.get, values, values)), np.float64, len(values))
        except (ValueError, OverflowError, TypeError):
            f = None
    if f is None:
        f = np.fromiter((np.nan if (v := to_float(x)) is None else v for x in values), np.float64, len(values))
    return f


def scaled_column(values: Column | Sequence, factor: int) -> tuple[np.ndarray, np.ndarray]:
    """rows._scale(value, factor) of every cell (MiB -> bytes, KB -> bytes ...)."""
    return _scaled_floats(float_column(values), factor)


def int_column(values: Column | Sequence) -> tuple[np.ndarray, np.ndarray]:
    """rows.to_int of every cell."""
    if not is_arrow(values) and values and type(values[0]) is int and all(type(v) is int for v in values):
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

