"""trace_view.json a piece at a time: the file read in blocks, each piece of its bare array decoded by
msgspec into small typed Structs holding only the fields torch_npu's events use, `args` kept as a raw
view of its text; the args are decoded afterwards per kind of event, from their texts joined (`x_args`:
the few fields a duration event's handler reads; `any_args`: a counter's args as written). Elements
the typed decode refuses (a number, a field of another type) are taken one by one, coerced as the
plain reading would (`lenient`), or counted as unusable.
"""
from __future__ import annotations

import os
from typing import Any, Iterator

import msgspec
import numpy as np

from canning_tb.ingest import _json
from canning_tb.ingest.table import InputError
from canning_tb.util.safe_files import open_file

F = msgspec.field
_NULL = msgspec.Raw(b"null")
INT_ABSENT = -(1 << 63)  # an int arg the event does not have (decoded as this default, never written by a file)


class XArgs(msgspec.Struct, gc=False):
    """The args an event handler reads (docs/formats/ascend.md); others are skipped by the decoder. Typed
    as torch_npu writes them, so a piece's columns convert at once; a piece with a value of another type
    is decoded one event at a time (`x_args`), its values taken as the plain reading takes them."""

    dims: str | None = F(default=None, name="Input Dims")
    stack: str | None = F(default=None, name="Call stack")
    itype: str | None = F(default=None, name="Input type")  # host ops' input dtypes (the `args` column)
    flops: float | None = None  # torch_npu's own count with with_flops=True
    task_type: str | None = F(default=None, name="Task Type")
    data_type: str | None = None
    pstream: int = F(default=INT_ABSENT, name="Physic Stream Id")
    conn: int = F(default=INT_ABSENT, name="connection_id")
    count: int = INT_ABSENT
    size: int = F(default=INT_ABSENT, name="size(Byte)")
    sid: int = F(default=INT_ABSENT, name="stream id")
    label: Any = F(default=None, name="name")  # process_name / thread_name metadata


NO_ARGS = XArgs()


def known_ints(a):
    """Int args (numpy, INT_ABSENT for absence) with INT_ABSENT also where one lies past 2**62: no measurement."""
    return np.where((a == INT_ABSENT) | (np.abs(a) < 1 << 62), a, INT_ABSENT)

# sparse text args -> the id space of their values
TEXT_ARGS = {"dims": "dims", "stack": "stack", "task_type": "task", "data_type": "dtype", "itype": "itype"}
HOST_ARGS = ("dims", "stack", "itype")  # read for host operators only (kinds._python)
DEVICE_TEXT = ("task_type", "data_type")
DEVICE_INTS = ("pstream", "conn", "count", "size", "sid")


class Ev(msgspec.Struct, gc=False):
    ph: str = ""
    name: str | None = ""
    cat: str | None = None
    pid: int | str | None = None
    tid: int | str | None = None
    ts: str | int | float | None = None
    dur: str | int | float | None = None
    id: int | str | None = None
    args: msgspec.Raw = _NULL  # decoded later, by kind of event


_DEC = msgspec.json.Decoder(list[Ev])
_DEC_XARGS = msgspec.json.Decoder(list[XArgs | None])
_DEC_RAW = msgspec.json.Decoder(list[msgspec.Raw])
_DEC_ANY = msgspec.json.Decoder()


def decode_piece(piece) -> tuple[list[Ev], int]:
    """(events, elements that are no usable object)."""
    try:
        return _DEC.decode(piece), 0
    except msgspec.ValidationError:
        return _decode_lenient(piece)


def _decode_lenient(piece) -> tuple[list[Ev], int]:
    out, bad = [], 0
    for raw in _DEC_RAW.decode(piece):
        e = lenient(_DEC_ANY.decode(raw))
        if e is None:
            bad += 1
        else:
            out.append(e)
    return out, bad


def _joined(raws: list) -> bytes:
    return b"[" + b",".join(raws) + b"]"


def x_args(raws: list) -> tuple[list[XArgs], bool]:
    """The args of duration events (their raw texts) as XArgs (NO_ARGS where absent or no object), and
    whether every value has its declared type (else some were taken one event at a time, as written)."""
    if not raws:
        return [], True
    try:
        out = _DEC_XARGS.decode(_joined(raws))
        if len(out) == len(raws):
            return ([a or NO_ARGS for a in out] if None in out else out), True
    except (msgspec.ValidationError, msgspec.DecodeError):
        pass
    return [_one_x_args(r) for r in raws], False


def _one_x_args(raw) -> XArgs:
    value = _DEC_ANY.decode(raw) if len(raw) else None
    return _lenient_args(value) if isinstance(value, dict) else NO_ARGS


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
              args=msgspec.Raw(msgspec.json.encode(args)) if isinstance(args, dict) else _NULL)


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
        out = _DEC_ANY.decode(_joined(raws))
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


def iter_pieces(plan: ArrayFile, span: tuple[int, int], on_utf8, decode=decode_piece) -> Iterator:
    """decode (decode_piece, or scan.decode) over the elements in the byte range, a block at a time."""
    yield from _json.iter_file_chunks(plan.path, span[0], span[1], decode, on_utf8)


_BLANKS = b"\xef\xbb\xbf \t\r\n"  # a BOM and whitespace before the JSON text


def text_start(buf) -> int:
    """Where the JSON text of buf begins, past a BOM and blanks (len(buf) when there is none): its first 64
    bytes looked at, the whole of it only when they are all blank."""
    head = bytes(buf[:64]).lstrip(_BLANKS)
    if head or len(buf) <= 64:
        return len(buf[:64]) - len(head)
    return len(buf) - len(bytes(buf).lstrip(_BLANKS))


def iter_buffer(buf: bytearray, on_utf8, decode=decode_piece) -> Iterator:
    """decode over a whole array held in memory (small or odd files)."""
    start = text_start(buf)
    if buf[start:start + 1] != b"[":
        raise InputError("", "not an array")
    end = len(buf.rstrip(b" \t\r\n"))
    if buf[end - 1:end] != b"]":
        raise msgspec.DecodeError("truncated")
    yield from _json.iter_chunks(buf, start, end, decode, on_utf8)
