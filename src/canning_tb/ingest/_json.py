"""Bytes in, JSON pieces out: file loading, repair of common damage, chunked array decoding.

Memory is the constraint: the file is held once (a bytearray, filled in place even for .gz), every
repair works in place, the top-level object is decoded into zero-copy `msgspec.Raw` views, and a big
array is decoded a few MB at a time so that only one chunk of Python objects is alive at once.

Files are read, never memory-mapped: a trace rewritten in place while it is read (a script exporting
again to the same name) then gives at worst bad JSON for that read, never a SIGBUS. Every file is
opened through canning_tb/util/safe_files.py (a regular file inside the logdir, checked on the descriptor).

Memory follows what a file holds, not what it expands to: gzip is decompressed a piece at a time and
whitespace outside strings is dropped as it comes (JSON does not need it), so a file of gigabytes of
whitespace costs nothing. What is kept of one file is capped (`CANNING_MAX_TRACE_BYTES`, by default
a quarter of the machine's memory, or of the container's limit), and a caller may cap it lower for its
own process (`host_limit`): a gzip bomb is stopped while it is decompressed, whatever its trailer claims.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import re
import sys
import zlib
from typing import Any, Callable, Iterator

import msgspec
import numpy as np

from canning_tb.util.safe_files import open_file

from .file_head import file_head
from .table import InputError, Problem

CHUNK = 4 << 20  # bytes of array text decoded at once
_READ = 1 << 20
CAP_ENV = "CANNING_MAX_TRACE_BYTES"
MEMORY_SHARE = 4  # by default one file may keep at most 1/MEMORY_SHARE of the machine's memory
_PREALLOC_RATIO = 16  # a trailer's claim is trusted for the first allocation up to this ratio (traces gzip ~10x)
_LONG_SPACE = 256  # runs of whitespace this long are looked at (and dropped outside strings) as they come
_SPACES = b" " * _LONG_SPACE
_ALL_SPACE = bytes.maketrans(b"\t\r\n", b"   ")
_SPACE_RUN = re.compile(rb" *")
_SQUEEZE_RATIO = 64  # a piece that expanded more than this from its input is looked at for whitespace
TOO_DEEP = "JSON nested deeper than the decoder allows (about 1,000 levels)"

_BAD_TOKEN = re.compile(rb"([\[:,]\s*)(?:-?Infinity|NaN|nan|-?inf|N/A|undefined)(?=\s*[,\]}])")
_CONTROL = bytes(range(32)).maketrans(bytes(range(32)), b" " * 32)
_BYTE_AT = re.compile(r"\(byte (\d+)\)")
# one key and its string value alone on a line, as Kineto writes an event's fields: the value runs to the
# line's last quote, so a quote inside it that the writer left unescaped can be told from the closing one
_STRING_LINE = re.compile(rb'([ \t]*"[^"\\\n]*"[ \t]*:[ \t]*")(.*)("[ \t]*,?[ \t]*\r?)')
_MAX_QUOTE_REPAIRS = 1000  # each one decodes the file again: past this, the file is said to be damaged
# a \uD800-\uDBFF escape not followed by a \uDC00-\uDFFF one, or the latter without the former
_LONE_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
                             rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_JSON_START = b'{["-0123456789tfn'
_host_limit: contextvars.ContextVar[int | None] = contextvars.ContextVar("canning_host_limit", default=None)


class TooBigForThisProcess(Exception):
    """The file expands past what this process may hold (`host_limit`): read it in a child process."""


@contextlib.contextmanager
def host_limit(nbytes: int | None):
    """Within the block, a file expanding past nbytes raises TooBigForThisProcess (not an input error)."""
    token = _host_limit.set(nbytes)
    try:
        yield
    finally:
        _host_limit.reset(token)


def machine_memory() -> int:
    """Bytes of memory this process may use: the machine's, or its container's limit (cgroup) when lower."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        total = 16 << 30
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(limit_file, encoding="ascii") as f:  # the kernel's, not the user's
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def expansion_cap() -> int:
    """The most bytes of one file kept in memory (`CANNING_MAX_TRACE_BYTES`, default a quarter of
    machine_memory(), at least 256 MiB)."""
    try:
        return max(1, int(os.environ.get(CAP_ENV, "")))
    except ValueError:
        return max(256 << 20, machine_memory() // MEMORY_SHARE)


def _size_text(nbytes: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):g} {unit}"
    return f"{nbytes} bytes"


class _Limits:
    """The cap (an input error) and this process's limit (read it elsewhere), checked as bytes come."""

    def __init__(self, path: str):
        self.path, self.cap, self.host = path, expansion_cap(), _host_limit.get()

    def check(self, nbytes: int) -> None:
        if nbytes > self.cap:
            raise InputError(self.path, f"expands past the {_size_text(self.cap)} cap on one file "
                                        f"(set {CAP_ENV} to read bigger files)")
        if self.host is not None and nbytes > self.host:
            raise TooBigForThisProcess(self.path)


def check_size(path: str, nbytes: int) -> None:
    """InputError past the cap, TooBigForThisProcess past this process's limit."""
    _Limits(path).check(nbytes)


def refuse_non_json(path: str) -> None:
    """Refuse from its first bytes a file that cannot be JSON (binary junk, UTF-16): no full read."""
    head = file_head(path, 4096)
    start = head.lstrip(b"\xef\xbb\xbf").lstrip(b" \t\r\n")[:1]
    if head and start and start not in _JSON_START:
        raise InputError(path, f"not a trace: starts with bytes {head[:8].hex(' ')}, not JSON text")


def read_bytes(path: str) -> bytearray:
    """The whole (decompressed) file; gzip is recognised by its magic bytes, not the name. The file
    may shrink, grow or change while it is read: what was read is returned (bad JSON at worst)."""
    limits = _Limits(path)
    try:
        handle = open_file(path)
    except OSError as e:
        raise InputError(path, f"cannot open: {e.strerror or e}") from None
    with handle:
        try:
            size = os.fstat(handle.fileno()).st_size
            magic = handle.read(2)
            if magic == b"\x1f\x8b":
                buf = _gunzip(path, handle, size, limits)
            else:
                limits.check(size)
                buf = _read_plain(handle, size, magic, limits)
        except OSError as e:
            raise InputError(path, f"cannot read: {e.strerror or e}") from None
    if not buf:
        raise InputError(path, "empty file")
    return buf


def _read_plain(handle, size: int, start: bytes, limits: _Limits) -> bytearray:
    buf = bytearray(max(size, len(start)))
    buf[:len(start)] = start
    pos = len(start)
    while True:
        if pos == len(buf):  # full: the file may have grown since fstat
            more = handle.read(_READ)
            if not more:
                break
            limits.check(pos + len(more))
            buf[pos:] = more
            pos += len(more)
            continue
        with memoryview(buf) as view:
            got = handle.readinto(view[pos:])
        if not got:
            break
        pos += got
    del buf[pos:]  # the file shrank while it was read
    return buf


def _gunzip(path: str, handle, comp_size: int, limits: _Limits) -> bytearray:
    """Stream-decompress (members one after the other), whitespace outside strings dropped as it comes
    (_Squeeze), checking the limits against what is kept. The trailer's size (mod 2**32, and anyone can
    write it) only sizes the first allocation, when plausible for a trace."""
    handle.seek(max(0, comp_size - 4))
    claimed = int.from_bytes(handle.read(4), "little") if comp_size >= 18 else 0
    plausible = min(limits.cap, limits.host or limits.cap, _PREALLOC_RATIO * comp_size)
    out = bytearray(claimed if 0 < claimed <= plausible else min(4 * comp_size, plausible))
    handle.seek(0)
    pos, pending, member, expanded = 0, b"", None, 0
    squeeze = _Squeeze(out)
    try:
        while True:
            if not pending:
                pending = handle.read(_READ)
                if not pending:
                    break
            if member is None:
                pending = pending.lstrip(b"\0")  # padding between members
                if not pending:
                    continue
                member = zlib.decompressobj(wbits=31)
            piece = member.decompress(pending, _READ * 4)
            used = len(pending) - len(member.unconsumed_tail) - len(member.unused_data)
            pending = member.unconsumed_tail
            expanded += len(piece)
            pos = _append(out, pos, squeeze.piece(piece, pos, len(piece) / max(used, 1)), limits)
            if member.eof:
                pending, member = member.unused_data, None
        if member is not None:
            pos = _append(out, pos, squeeze.piece(member.flush(), pos, 0), limits)
    except zlib.error as e:
        raise InputError(path, f"corrupt gzip stream ({e})") from None
    if member is not None and not member.eof:
        raise InputError(path, f"truncated gzip stream (ends after {expanded} uncompressed bytes)")
    del out[pos:]
    if expanded == 0:
        raise InputError(path, "empty file (empty gzip stream)")
    return out


class _Squeeze:
    """Drops long runs of whitespace outside JSON strings from decompressed pieces as they come.

    Whether a run lies inside a string is the parity of the unescaped quotes before it, counted only
    when a long run is found, over what was kept since the last count: a quote after k backslashes is
    unescaped when k is even, so their number is the alternating sum of the counts of '"', '\\"',
    '\\\\"', ... (each pattern matches once at each quote with at least that many backslashes before it;
    _unescaped_quotes). A trace without long runs pays one translate and one find per piece."""

    def __init__(self, out: bytearray):
        self.out, self.counted, self.odd = out, 0, False
        self.spaced_end = False  # what was kept ends in a run of whitespace outside a string

    def piece(self, piece: bytes, end: int, ratio: float) -> bytes:
        """What to keep of `piece`, which follows out[:end] and expanded `ratio` times from its input:
        pieces of a trace (deflate shrinks JSON text 5-30x) are kept as they are, at no cost."""
        if ratio < _SQUEEZE_RATIO or not piece:
            self.spaced_end = False
            return piece
        if not piece.translate(None, b" \t\r\n"):  # all whitespace: a bomb's pieces
            if self.spaced_end:
                return b""
            self._sync(end, piece, 0)
            self.spaced_end = not self.odd
            return piece if self.odd else piece[:1]  # inside a string it is kept (the cap bounds it)
        flat = piece.translate(_ALL_SPACE)
        lo = _SPACE_RUN.match(flat).end() if self.spaced_end else 0  # the run goes on: drop it
        if lo == len(flat):
            return b""
        at = flat.find(_SPACES, lo)
        if at < 0:
            self.spaced_end = False
            return piece[lo:]
        self._sync(end, piece, lo)
        parts, spaced = [], False
        while at >= 0:
            stop = _SPACE_RUN.match(flat, at).end()
            self.odd ^= _unescaped_quotes(piece, lo, at) & 1
            parts.append(piece[lo:stop] if self.odd else piece[lo:at + 1])  # outside: one byte of the run stays
            spaced, lo = not self.odd and stop == len(flat), stop
            at = flat.find(_SPACES, lo)
        self.counted = end + sum(map(len, parts))  # counted up to here; the rest at the next sync
        parts.append(piece[lo:])
        self.spaced_end = spaced
        return b"".join(parts)

    def _sync(self, end: int, piece: bytes, lo: int) -> None:
        """The parity up to out[end]; then the quote piece[lo:] may start with after backslashes that
        out ends with (an escape cut between two pieces)."""
        out = self.out
        if self.counted < end:
            self.odd ^= _unescaped_quotes(out, self.counted, end) & 1
            self.counted = end
        if lo == 0 and end and out[end - 1] == 0x5C:  # a backslash
            before = _backslashes_before(out, end)  # all of them: a string may hold many escaped backslashes
            within = len(piece) - len(piece.lstrip(b"\\"))
            if piece[within:within + 1] == b'"':  # counted as unescaped when `within` is even; it is when the sum is
                self.odd ^= (within % 2 == 0) != ((before + within) % 2 == 0)


def _backslashes_before(buf, end: int) -> int:
    """How many backslashes buf[:end] ends with, read back in windows each 4 times the last."""
    count, size = 0, 64
    while True:
        lo = max(0, end - count - size)
        tail = bytes(buf[lo:end - count])
        run = len(tail) - len(tail.rstrip(b"\\"))
        count += run
        if run < len(tail) or lo == 0:
            return count
        size *= 4


def _unescaped_quotes(buf, lo: int, hi: int) -> int:
    total, sign, pattern = 0, 1, b'"'
    while True:
        n = buf.count(pattern, lo, hi)
        if not n:
            return total
        total, sign, pattern = total + sign * n, -sign, b"\\" + pattern


def _append(out: bytearray, pos: int, piece: bytes, limits: _Limits) -> int:
    if piece:
        limits.check(pos + len(piece))
        out[pos:pos + len(piece)] = piece  # in place while the first allocation lasts, then appended
    return pos + len(piece)


def _kind(buf: bytearray) -> str:
    match = re.match(rb"\s*(.)", bytes(buf[:64]), re.S)
    first = match.group(1) if match else b""
    return {b"[": "a list", b'"': "a string", b"t": "a boolean", b"f": "a boolean",
            b"n": "null", b"{": "an object"}.get(first, "a number")


def decode_top(path: str, buf: bytearray, problems: list[Problem]) -> tuple[dict[str, msgspec.Raw], bytearray]:
    """The top-level object as {key: Raw}; repairs, in place, a byte-order mark, control characters,
    lone UTF-16 surrogate escapes and NaN / N/A tokens."""
    if buf[:3] == b"\xef\xbb\xbf":
        buf[:3] = b"   "
    repaired: set[str] = set()
    quotes = _QuoteRepairs()
    while True:
        try:
            top = msgspec.json.decode(buf, type=dict[str, msgspec.Raw])
            quotes.report(path, problems)
            return top, buf
        except RecursionError:
            raise InputError(path, TOO_DEEP) from None
        except msgspec.ValidationError:
            raise InputError(path, f"expected an object with traceEvents, got {_kind(buf)}") from None
        except msgspec.DecodeError as e:
            msg = str(e)
            if "truncated" in msg and not _LONE_SURROGATE.search(buf):
                raise InputError(path, f"not JSON: unexpected end at byte {len(buf)}") from None
            where = _BYTE_AT.search(msg)
            at = int(where.group(1)) if where else -1
            if quotes.repair(buf, at, msg):
                continue
            fix = _repair(buf, at, msg, repaired)
            if fix is None:
                raise InputError(path, f"not JSON: {msg}") from None
            repaired.add(fix[0])
            problems.append(Problem(path, fix[1], "warning"))


class _QuoteRepairs:
    """Quotes a writer left unescaped inside a string value (torch's Python tracer names a frame with
    whatever text it finds, quotes included): escaped where the decoder stops, on a line that holds one
    key and its string value, one line at a time; each repair moves the decoder's stop further on."""

    def __init__(self):
        self.count, self.last, self.keys = 0, -1, []

    def repair(self, buf: bytearray, at: int, msg: str) -> bool:
        if at < 0 or at <= self.last or "expected" not in msg or self.count >= _MAX_QUOTE_REPAIRS:
            return False
        lo = buf.rfind(b"\n", 0, at) + 1
        hi = buf.find(b"\n", at)
        hi = len(buf) if hi < 0 else hi
        match = _STRING_LINE.fullmatch(bytes(buf[lo:hi]))
        if match is None or lo + match.end(2) < at:  # the stop is past the value: not its quotes
            return False
        value = _escape_quotes(match.group(2))
        if value == match.group(2):
            return False
        buf[lo:hi] = match.group(1) + value + match.group(3)
        self.count, self.last = self.count + 1, at
        self.keys.append(match.group(1).strip().split(b'"')[1].decode("utf-8", "replace"))
        return True

    def report(self, path: str, problems: list[Problem]) -> None:
        if self.count:
            keys = ", ".join(sorted(set(self.keys)))
            problems.append(Problem(path, f"{self.count} string value(s) with quotes the writer left unescaped "
                                          f"read as text (keys: {keys})", "warning"))


def _escape_quotes(value: bytes) -> bytes:
    """value with a backslash before each quote that no backslash escapes."""
    out, i = bytearray(), 0
    while i < len(value):
        c = value[i:i + 1]
        if c == b"\\":
            out += value[i:i + 2]
            i += 2
            continue
        out += b'\\"' if c == b'"' else c
        i += 1
    return bytes(out)


def _repair(buf: bytearray, at: int, msg: str, repaired: set[str]) -> tuple[str, str] | None:
    """(what, warning) of one in-place repair of the damage at byte `at`; None when none applies."""
    bad = bytes(buf[at:at + 12]) if at >= 0 else b""
    if bad[:1] and bad[0] < 32 and "control" not in repaired:
        for lo in range(0, len(buf), _READ):
            buf[lo:lo + _READ] = buf[lo:lo + _READ].translate(_CONTROL)
        return "control", "control characters inside strings replaced by spaces"
    if ("surrogate" in msg or "escape" in msg or "truncated" in msg) and "surrogate" not in repaired:
        count = 0
        for match in _LONE_SURROGATE.finditer(buf):
            buf[match.start():match.end()] = b"\\ufffd"  # same length: no copy
            count += 1
        if count:
            return "surrogate", f"{count} lone UTF-16 surrogate escapes replaced (U+FFFD)"
    if at >= 0 and "tokens" not in repaired:
        count = _null_tokens(buf)
        if count:
            return "tokens", f"{count} bare NaN/Infinity/N/A values read as null"
    return None


def _null_tokens(buf: bytearray) -> int:
    """Replace NaN / Infinity / N/A tokens by null in place; the text may grow (NaN -> null), so it is
    first moved to the end of the grown buffer, then rewritten forwards: no second copy of the file."""
    count, growth, shift = 0, 0, 0
    for match in _BAD_TOKEN.finditer(buf):
        count += 1
        growth += 4 - (match.end() - match.end(1))
        shift = max(shift, growth)  # the output never overtakes the text still to be read
    if not count:
        return 0
    size = len(buf)
    if shift:
        buf.extend(bytes(min(shift, _READ)))
        while len(buf) < size + shift:
            buf.extend(bytes(min(size + shift - len(buf), _READ)))
        for hi in range(size, 0, -_READ):  # move the text right, last piece first
            lo = max(0, hi - _READ)
            buf[lo + shift:hi + shift] = buf[lo:hi]
    out, last = 0, shift
    for match in _BAD_TOKEN.finditer(buf, shift):
        out = _move(buf, out, last, match.end(1))
        buf[out:out + 4] = b"null"
        out, last = out + 4, match.end()
    out = _move(buf, out, last, len(buf))
    del buf[out:]
    return count


def _move(buf: bytearray, out: int, lo: int, hi: int) -> int:
    """Copy buf[lo:hi] to buf[out:] (out <= lo) in pieces; the new end of the output."""
    for at in range(lo, hi, _READ):
        piece = buf[at:min(hi, at + _READ)]
        buf[out:out + len(piece)] = piece
        out += len(piece)
    return out


def value_span(buf: bytearray, raw: msgspec.Raw) -> tuple[int, int]:
    """Where the value `raw` lies in buf: a Raw decoded from buf is a view into it (no search)."""
    size = len(memoryview(raw))
    start = int(np.frombuffer(raw, np.uint8).ctypes.data - np.frombuffer(buf, np.uint8).ctypes.data) \
        if size else -1
    if not 0 <= start <= len(buf) - size:
        raise ValueError("the value is not a view into the buffer")
    return start, start + size


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


class _Element(msgspec.Struct, gc=False):
    """Any array element, its fields skipped: decoding a list of these only checks the syntax."""


_CHECK = msgspec.json.Decoder(list[_Element | list | str | int | float | bool | None])


def iter_chunks(buf: bytearray, start: int, end: int, decode: Callable[[bytes], Any],
                on_utf8: Callable[[], None], chunk: int = CHUNK) -> Iterator[Any]:
    """decode(b"[...]") over pieces of the array buf[start:end] ('[' at start, ']' at end-1).

    A cut at a wrong place (inside a string or a nested object) always leaves the piece
    unbalanced, so it fails to decode; the piece is then extended to the next cut. Damaged text
    fails too: the first failure checks the syntax of the rest of the array in one pass, so
    damage raises at once instead of growing a piece element by element (a good file pays for
    no syntax pass at all).
    """
    lo, stop = start + 1, end - 1
    view = memoryview(buf)
    checked = False
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
            checked = checked or _check_syntax(buf, lo, stop)
            hi = _next_cut(buf, hi + 1, stop)
        yield out
        lo = hi + 1


def _check_syntax(buf: bytearray, lo: int, stop: int) -> bool:
    """True when buf[lo:stop] is a valid sequence of array elements; raises DecodeError if not."""
    before, after = buf[lo - 1], buf[stop]
    buf[lo - 1], buf[stop] = 0x5B, 0x5D
    try:
        with memoryview(buf) as view:
            _CHECK.decode(view[lo - 1:stop + 1])
    finally:
        buf[lo - 1], buf[stop] = before, after
    return True


# -- a big array read from the file a block at a time (no whole-file buffer) ----------------------
_EDGE = 64 << 10  # bytes of head / tail searched for the array's ends
_BLOCK = 32 << 20  # bytes read at once by iter_file_chunks
_ARRAY_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
# '}' ',' '{' then a key and its ':' (looked at, not consumed): inside a string the text '}, {"' can only
# be the string's own end, never followed by `"key":`, so a block is never cut inside a string
_ELEMENT_CUT = re.compile(rb'\}\s*,\s*\{(?=\s*"[^"\\]*"\s*:)')


class ArrayPlan:
    """Where the traceEvents array of a plain file lies: `start` ('[') to `end` (after ']'), and the
    other top-level keys (decoded from the head and tail alone, the array replaced by [])."""

    def __init__(self, top: dict[str, msgspec.Raw], start: int, end: int):
        self.top, self.start, self.end = top, start, end

    def split(self, path: str, parts: int) -> list[tuple[int, int]]:
        """[lo, hi) byte ranges of the array's elements (no brackets, no separating commas), cut
        between two elements near equal sizes."""
        lo, stop = self.start + 1, self.end - 1
        bounds = [lo]
        with open_file(path) as f:
            for k in range(1, parts):
                at = lo + (stop - lo) * k // parts
                found = _first_cut(f, at)
                if found is None:
                    break
                bounds += [at + found.start() + 1, at + found.end() - 1]  # '}' ends one, '{' starts the next
        bounds.append(stop)
        return list(zip(bounds[::2], bounds[1::2]))


def _first_cut(f, at: int):
    """The first element boundary at or after `at`: read from 1 MB up to _BLOCK (an event is small; the
    split's read is on the critical path of both halves)."""
    size = 1 << 20
    while True:
        f.seek(at)
        block = f.read(size)
        found = _ELEMENT_CUT.search(block)
        if found is not None or size >= _BLOCK or len(block) < size:
            return found
        size *= 4


def plan_array(path: str, min_bytes: int) -> ArrayPlan | None:
    """The plan of a plain (not gzipped) file of at least min_bytes whose top-level object holds
    traceEvents between a small head and tail; None for anything else (then read it whole)."""
    with open_file(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size < max(min_bytes, 4 * _EDGE):
            return None
        head = f.read(_EDGE)
        f.seek(size - _EDGE)
        tail = f.read(_EDGE)
    found = _ARRAY_KEY.search(head)
    if head[:2] == b"\x1f\x8b" or found is None:
        return None
    start = found.end() - 1
    for close in re.finditer(rb"\]", tail):  # the earliest ']' after which the text closes the object
        text = head[:start] + b"[]" + tail[close.end():]
        try:
            top = msgspec.json.decode(text, type=dict[str, msgspec.Raw])
        except (msgspec.DecodeError, RecursionError):
            continue
        if bytes(top.get("traceEvents", b"")) == b"[]":
            return ArrayPlan(top, start, size - _EDGE + close.end())
    return None


def _block_buffer(last: bytearray | None, size: int) -> bytearray:
    """The last block's buffer again when nothing holds it any more and it is big enough, else a new one.
    Fresh memory costs a page fault per page when it is first written: 0.42 s of 0.54 s per 512 MB read
    on this project's machine. What a decode gave back may still hold a view of the last block (a
    msgspec.Raw is a view, not a copy): that view holds the buffer, so a new one is made."""
    if last is not None and len(last) >= size and _references(last) <= _FREE:
        return last
    return bytearray(size)


def _references(buf: bytearray) -> int:
    return sys.getrefcount(buf)


def _free_references() -> int:
    """What _references says, called as _block_buffer calls it, of a buffer that only its caller's name
    holds (4 on CPython 3.11: that name, two arguments, getrefcount's own); measured, not assumed, since
    other Pythons count borrowed references otherwise."""
    def block_buffer(last):
        return _references(last)
    buf = bytearray(1)
    return block_buffer(buf)


_FREE = _free_references()


def iter_file_chunks(path: str, lo: int, hi: int, decode: Callable[[bytes], Any],
                     on_utf8: Callable[[], None]) -> Iterator[Any]:
    """iter_chunks over the array elements in the file's bytes [lo, hi), read a block at a time;
    each block ends where an element ends ('}' before ',' '{')."""
    with open_file(path) as f:
        pos, buf = lo, None
        while pos < hi:
            f.seek(pos)
            size = min(_BLOCK, hi - pos)
            buf = _block_buffer(buf, size + 2)
            with memoryview(buf) as view:
                got = f.readinto(view[1:size + 1])
            if got != size:
                raise InputError(path, "the file changed while it was read")
            end, nxt = size + 1, hi
            if pos + size < hi:  # not the last block: stop after the last whole element
                cut = buf.rfind(b"}", 0, end)
                while cut > 0 and not _ELEMENT_CUT.match(buf, cut):
                    cut = buf.rfind(b"}", 0, cut)
                if cut <= 0:
                    raise msgspec.DecodeError("no element boundary in a block")
                after = _ELEMENT_CUT.match(buf, cut).end()  # an int: a Match would hold the buffer
                end, nxt = cut + 1, pos + after - 2  # buf[i] is file byte pos + i - 1
            buf[0], buf[end] = 0x5B, 0x5D  # '[' piece ']'
            yield from iter_chunks(buf, 0, end + 1, decode, on_utf8)
            pos = nxt
