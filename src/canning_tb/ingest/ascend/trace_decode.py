"""trace_view.json a piece at a time: the file read in blocks, each piece of its bare array decoded by
msgspec into small typed Structs holding only the fields torch_npu's events use (`args` kept as a raw
view, decoded per kind later). Elements the typed decode refuses (a number, a field of another type)
are taken one by one, coerced as the plain reading would (`lenient`), or counted as unusable.
"""
from __future__ import annotations

import os
from operator import attrgetter, itemgetter
from typing import Any, Iterator

import msgspec

from canning_tb.safe_files import open_file

from .. import _json
from ..table import InputError

F = msgspec.field
_EMPTY = msgspec.Raw(b"")
INT_ABSENT = -(1 << 63)  # an int arg the event does not have (decoded as this default, never written by a file)


class XArgs(msgspec.Struct, gc=False):
    """The args an event handler reads (docs/formats/ascend.md); others are skipped by the decoder."""

    dims: Any = F(default=None, name="Input Dims")  # Any: a value of another type is taken as its text
    stack: Any = F(default=None, name="Call stack")
    task_type: Any = F(default=None, name="Task Type")
    pstream: Any = F(default=INT_ABSENT, name="Physic Stream Id")
    conn: Any = F(default=INT_ABSENT, name="connection_id")
    count: Any = INT_ABSENT
    data_type: Any = None
    size: Any = F(default=INT_ABSENT, name="size(Byte)")
    sid: Any = F(default=INT_ABSENT, name="stream id")
    label: Any = F(default=None, name="name")  # process_name / thread_name metadata
    itype: Any = F(default=None, name="Input type")  # host ops' input dtypes (the `args` column)
    flops: Any = None  # torch_npu's own count with with_flops=True


NO_ARGS = XArgs()


class Ev(msgspec.Struct, gc=False):
    ph: str = ""
    name: str | None = ""
    cat: str | None = None
    pid: int | str | None = None
    tid: int | str | None = None
    ts: str | int | float | None = None
    dur: str | int | float | None = None
    id: int | str | None = None
    args: XArgs | None = None


class _Counter(msgspec.Struct, gc=False):
    """A second, light pass over a piece with counter events: their args as written (any keys)."""

    ph: str = ""
    args: msgspec.Raw = _EMPTY


_PH = attrgetter("ph")
_ARGS = attrgetter("args")
_DEC = msgspec.json.Decoder(list[Ev])
_DEC_COUNTER = msgspec.json.Decoder(list[_Counter])
_DEC_RAW = msgspec.json.Decoder(list[msgspec.Raw])
_DEC_ANY = msgspec.json.Decoder()


def decode_piece(piece) -> tuple[list[Ev], int, list | None]:
    """(events, elements that are no usable object, the raw args of every event when some are counters)."""
    try:
        events, bad = _DEC.decode(piece), 0
    except msgspec.ValidationError:
        return _decode_lenient(piece)
    counters = _DEC_COUNTER.decode(piece) if "C" in map(_PH, events) else None
    return events, bad, counters


def _decode_lenient(piece) -> tuple[list[Ev], int, list]:
    out, bad, counters = [], 0, []
    for raw in _DEC_RAW.decode(piece):
        obj = _DEC_ANY.decode(raw)
        e = lenient(obj)
        if e is None:
            bad += 1
            continue
        args = obj.get("args")
        counters.append(_Counter(e.ph, msgspec.Raw(msgspec.json.encode(args)) if isinstance(args, dict) else _EMPTY))
        out.append(e)
    return out, bad, counters


def counter_args(counters: list, rows: list[int]) -> list:
    """The args of the counter events at rows (their objects as dicts)."""
    pick = itemgetter(*rows) if len(rows) > 1 else (lambda c: (c[rows[0]],))
    return any_args(list(map(_ARGS, pick(counters))))


def _text(v: Any) -> str | None:
    return None if v is None else (v if isinstance(v, str) else str(v))


def _scalar(v: Any):
    return v if isinstance(v, (int, float, str)) and not isinstance(v, bool) else None


def lenient(obj: Any) -> Ev | None:
    """An event of odd field types, as the plain reading takes it; None for a non-object."""
    if not isinstance(obj, dict):
        return None
    args = obj.get("args")
    return Ev(ph=_text(obj.get("ph")) or "", name=_text(obj.get("name", "")), cat=_text(obj.get("cat")),
              pid=_scalar(obj.get("pid")), tid=_scalar(obj.get("tid")), ts=_scalar(obj.get("ts")),
              dur=_scalar(obj.get("dur")), id=_scalar(obj.get("id")),
              args=_lenient_args(args) if isinstance(args, dict) else None)


_TEXT_ARGS = ("dims", "stack", "task_type", "data_type", "label", "itype")


def _lenient_args(obj: dict) -> XArgs:
    vals = {}
    for f in msgspec.structs.fields(XArgs):
        v = obj.get(f.encode_name)
        if v is None:
            continue
        v = _text(v) if f.name in _TEXT_ARGS else _scalar(v)
        if v is not None:
            vals[f.name] = v
    return XArgs(**vals)


def any_args(raws: list) -> list:
    """Raw args decoded as plain values (dicts for objects; {} where absent)."""
    if not raws:
        return []
    try:  # args are there (the plain case); an empty one leaves ",," (or "[]" for one) and this fails
        out = _DEC_ANY.decode(b"[" + b",".join(raws) + b"]")
        if len(out) == len(raws):
            return out
    except msgspec.DecodeError:
        pass
    return _DEC_ANY.decode(b"[" + b",".join(r if len(r) else b"{}" for r in raws) + b"]")


class ArrayFile:
    """Where the bare array of a plain trace_view.json lies ('[' at start, ']' just before end)."""

    def __init__(self, path: str, start: int, end: int):
        self.path, self.start, self.end = path, start, end

    def split(self, parts: int) -> list[tuple[int, int]]:
        """[lo, hi) byte ranges of whole elements, cut near equal sizes."""
        return _json.ArrayPlan({}, self.start, self.end).split(self.path, parts)


_EDGE = 1 << 16


def plan_file(path: str) -> ArrayFile | None:
    """The array of a plain file that starts with '[' and ends with ']' (whitespace around); None else."""
    with open_file(path) as f:  # a regular file inside the logdir (safe_files), else OSError
        size = os.fstat(f.fileno()).st_size
        _json.check_size(path, size)
        head = f.read(_EDGE)
        f.seek(max(0, size - _EDGE))
        tail = f.read(_EDGE)
    body = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if head[:2] == b"\x1f\x8b" or body[:1] != b"[":
        return None
    start = len(head) - len(body)
    stripped = tail.rstrip(b" \t\r\n")
    if not stripped.endswith(b"]") or size < 2 * _EDGE:
        return None
    return ArrayFile(path, start, size - (len(tail) - len(stripped)))


def iter_pieces(plan: ArrayFile, span: tuple[int, int], on_utf8) -> Iterator[tuple[list[Ev], int]]:
    """decode_piece over the elements in the byte range, a block at a time."""
    yield from _json.iter_file_chunks(plan.path, span[0], span[1], decode_piece, on_utf8)


def iter_buffer(buf: bytearray, on_utf8) -> Iterator[tuple[list[Ev], int]]:
    """decode_piece over a whole array held in memory (small or odd files)."""
    text = bytes(buf[:64]).lstrip(b"\xef\xbb\xbf \t\r\n")
    if text[:1] != b"[":
        raise InputError("", "not an array")
    start = len(buf[:64]) - len(text)
    end = len(buf.rstrip(b" \t\r\n"))
    if buf[end - 1:end] != b"]":
        raise msgspec.DecodeError("truncated")
    yield from _json.iter_chunks(buf, start, end, decode_piece, on_utf8)
