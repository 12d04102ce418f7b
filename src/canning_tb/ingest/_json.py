"""Bytes in, JSON pieces out: file loading, repair of common damage, chunked array decoding.

Memory is the constraint: the file is held once (a bytearray, filled in place even for .gz),
the top-level object is decoded into zero-copy `msgspec.Raw` views, and a big array is decoded
a few MB at a time so that only one chunk of Python objects is alive at once.
"""
from __future__ import annotations

import mmap
import os
import re
import zlib
from typing import Any, Callable, Iterator

import msgspec

from .table import InputError, Problem

CHUNK = 4 << 20  # bytes of array text decoded at once
_READ = 1 << 20

_BAD_TOKEN = re.compile(rb"([\[:,]\s*)(?:-?Infinity|NaN|nan|-?inf|N/A|undefined)(?=\s*[,\]}])")
_CONTROL = bytes(range(32)).maketrans(bytes(range(32)), b" " * 32)
_BYTE_AT = re.compile(r"\(byte (\d+)\)")


def read_bytes(path: str) -> bytearray | mmap.mmap:
    """The whole (decompressed) file; gzip is recognised by its magic bytes, not the name.

    A plain file is mapped copy-on-write rather than read: no copy of hundreds of MB, and the
    brief bracket writes of `iter_chunks` stay private to this process.
    """
    try:
        handle = open(path, "rb")
    except OSError as e:
        raise InputError(path, f"cannot open: {e.strerror or e}") from None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            raise InputError(path, "empty file")
        if handle.read(2) == b"\x1f\x8b":
            handle.seek(0)
            return _gunzip(path, handle.read())
        try:
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY)
        except (OSError, ValueError):  # a filesystem that cannot map: read it
            handle.seek(0)
            buf = bytearray(size)
            handle.readinto(buf)
            return buf


def _gunzip(path: str, comp: bytes) -> bytearray:
    # ISIZE (last 4 bytes) lets us fill a preallocated buffer: no 2x peak from joining pieces.
    guess = int.from_bytes(comp[-4:], "little") if len(comp) >= 18 else 0
    guess = min(guess, 64 * len(comp) + (1 << 20))  # a damaged trailer must not make us allocate GBs
    out = bytearray(guess)
    pos, start = 0, 0
    while start < len(comp):
        member = zlib.decompressobj(wbits=31)
        try:
            for at in range(start, len(comp), _READ):
                piece = member.decompress(comp[at:at + _READ])
                if piece:
                    if pos + len(piece) > len(out):
                        out.extend(b"\0" * (pos + len(piece) - len(out)))
                    out[pos:pos + len(piece)] = piece
                    pos += len(piece)
                if member.eof:
                    break
            piece = member.flush()
            if piece:
                out[pos:pos] = piece
                pos += len(piece)
        except zlib.error as e:
            raise InputError(path, f"corrupt gzip stream ({e})") from None
        if not member.eof:
            raise InputError(path, f"truncated gzip stream (ends after {pos} uncompressed bytes)")
        rest = member.unused_data.lstrip(b"\0")  # another gzip member may follow
        start = len(comp) - len(rest) if rest else len(comp)
    del out[pos:]
    if pos == 0:
        raise InputError(path, "empty file (empty gzip stream)")
    return out


def _kind(buf: bytearray) -> str:
    match = re.match(rb"\s*(.)", bytes(buf[:64]), re.S)
    first = match.group(1) if match else b""
    return {b"[": "a list", b'"': "a string", b"t": "a boolean", b"f": "a boolean",
            b"n": "null", b"{": "an object"}.get(first, "a number")


def decode_top(path: str, buf: bytearray, problems: list[Problem]) -> tuple[dict[str, msgspec.Raw], bytearray]:
    """The top-level object as {key: Raw}; repairs NaN / N/A tokens and control characters."""
    repaired: set[str] = set()
    while True:
        try:
            top = msgspec.json.decode(buf, type=dict[str, msgspec.Raw])
            return top, buf
        except msgspec.ValidationError:
            raise InputError(path, f"expected an object with traceEvents, got {_kind(buf)}") from None
        except msgspec.DecodeError as e:
            msg = str(e)
            if "truncated" in msg:
                raise InputError(path, f"not JSON: unexpected end at byte {len(buf)}") from None
            where = _BYTE_AT.search(msg)
            at = int(where.group(1)) if where else -1
            bad = bytes(buf[at:at + 12]) if at >= 0 else b""
            fix = None
            if bad[:1] and bad[0] < 32 and "control" not in repaired:
                fix = "control"
                buf = bytearray(memoryview(buf)).translate(_CONTROL)
                problems.append(Problem(path, "control characters inside strings replaced by spaces", "warning"))
            elif at >= 0 and "tokens" not in repaired:
                new, count = _BAD_TOKEN.subn(rb"\1null", buf)
                if count:
                    fix = "tokens"
                    buf = bytearray(new)
                    problems.append(Problem(path, f"{count} bare NaN/Infinity/N/A values read as null", "warning"))
            if fix is None:
                raise InputError(path, f"not JSON: {msg}") from None
            repaired.add(fix)


def value_span(buf: bytearray, key: bytes, raw: msgspec.Raw) -> tuple[int, int]:
    """Where the value `raw` of top-level `key` lies in buf (Raw keeps no offset)."""
    size = len(memoryview(raw))
    head = bytes(memoryview(raw)[:64])
    key_at = buf.find(b'"' + key + b'"')
    while key_at >= 0:
        after = key_at + len(key) + 2
        colon = re.match(rb"\s*:\s*", bytes(buf[after:after + 64]))
        if colon:
            start = after + colon.end()
            tail = bytes(memoryview(raw)[-64:])
            if buf[start:start + len(head)] == head and buf[start + size - len(tail):start + size] == tail:
                return start, start + size
        key_at = buf.find(b'"' + key + b'"', key_at + 1)
    raise ValueError("value not found")


def _next_cut(buf: bytearray, pos: int, end: int) -> int:
    """Index of a ',' that looks like it separates two array elements ('},' then '{'), else end."""
    while pos < end:
        brace = buf.find(b"},", pos, end)
        if brace < 0:
            return end
        nxt = brace + 2
        while nxt < end and buf[nxt] in b" \t\r\n":
            nxt += 1
        if nxt < end and buf[nxt] == 0x7B:  # '{'
            return brace + 1
        pos = brace + 2
    return end


def iter_chunks(buf: bytearray, start: int, end: int, decode: Callable[[bytes], Any],
                on_utf8: Callable[[], None], chunk: int = CHUNK) -> Iterator[Any]:
    """decode(b"[...]") over pieces of the array buf[start:end] ('[' at start, ']' at end-1).

    A cut at a wrong place (inside a string or a nested object) always leaves the piece
    unbalanced, so it fails to decode; the piece is then extended to the next cut. The array
    as a whole was already validated by `decode_top`.
    """
    lo, stop = start + 1, end - 1
    view = memoryview(buf)
    while lo < stop:
        hi = _next_cut(buf, lo + chunk, stop)
        while True:
            # decode in place: put brackets around the piece for a moment (no copy of the text)
            before, after = buf[lo - 1], buf[hi]
            buf[lo - 1], buf[hi] = 0x5B, 0x5D
            try:  # decode() handles type errors itself; what comes here is syntax
                out = decode(view[lo - 1:hi + 1])
                break
            except msgspec.DecodeError as err:
                if "UTF-8" in str(err):
                    piece = bytes(view[lo - 1:hi + 1]).decode("utf-8", "replace").encode("utf-8")
                    try:
                        out = decode(piece)
                        on_utf8()
                        break
                    except msgspec.DecodeError:
                        pass
                if hi >= stop:
                    raise
            finally:
                buf[lo - 1], buf[hi] = before, after
            hi = _next_cut(buf, hi + 1, stop)
        yield out
        lo = hi + 1
