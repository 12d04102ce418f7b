"""ingest/_json.py by hand (issue 46, mutation testing): the memory cap and this process's limit, the
file's bytes (plain, grown or shrunk while read, gzip members and padding), the whitespace squeeze of
decompressed pieces, the top-level decode and its in-place repairs (control characters, lone surrogate
escapes, NaN tokens, unescaped quotes), the array cut into pieces, and the plan of a big plain file read a
block at a time. Bytes in, values out: every expected value is worked out by hand in the test (or read
from the same bytes by the json module)."""
import gzip
import io
import json
import os
import zlib

import msgspec
import pytest

from canning_tb.ingest import _json
from canning_tb.ingest.table import InputError

SP = b" " * 300  # a run of whitespace past _LONG_SPACE (256)


@pytest.fixture
def cap(monkeypatch):
    """Set CANNING_MAX_TRACE_BYTES for the test."""
    def set_cap(value):
        monkeypatch.setenv(_json.CAP_ENV, str(value))
    return set_cap


def _write(tmp_path, data, name="t.json"):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


# -- the cap and this process's limit ---------------------------------------------------------------

class _CgroupFiles:
    """open() of the two cgroup limit files, with the texts given (a missing one raises OSError)."""

    def __init__(self, texts):
        self.texts, self.asked = texts, []

    def __call__(self, name, encoding=None):
        self.asked.append((name, encoding))
        if name not in self.texts:
            raise FileNotFoundError(2, "No such file or directory")
        return io.StringIO(self.texts[name])


V2, V1 = "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"


def _machine(monkeypatch, texts, pages=1000, page=4096, error=None):
    def sysconf(name):
        if error is not None:
            raise error
        return {"SC_PHYS_PAGES": pages, "SC_PAGE_SIZE": page}[name]
    monkeypatch.setattr(_json.os, "sysconf", sysconf)
    files = _CgroupFiles(texts)
    monkeypatch.setattr(_json, "open", files, raising=False)
    return files


def test_machine_memory_is_the_pages_or_the_lower_cgroup_limit(monkeypatch):
    """1000 pages of 4096 bytes: 4,096,000 bytes; a cgroup limit below it wins, 'max' (v2's no limit) and a
    limit above it do not; both files are read, the lower wins; each opened as ASCII."""
    files = _machine(monkeypatch, {})
    assert _json.machine_memory() == 4_096_000
    assert files.asked == [(V2, "ascii"), (V1, "ascii")]
    _machine(monkeypatch, {V2: "max\n"})
    assert _json.machine_memory() == 4_096_000
    _machine(monkeypatch, {V2: "1000000\n"})
    assert _json.machine_memory() == 1_000_000
    _machine(monkeypatch, {V1: "9223372036854771712\n"})
    assert _json.machine_memory() == 4_096_000
    _machine(monkeypatch, {V2: "3000000", V1: "2000000"})
    assert _json.machine_memory() == 2_000_000
    _machine(monkeypatch, {V2: "2000000", V1: "3000000"})
    assert _json.machine_memory() == 2_000_000


@pytest.mark.parametrize("error", [ValueError("no such name"), OSError(22, "bad"), AttributeError("sysconf")])
def test_machine_memory_without_sysconf_is_16_gib(monkeypatch, error):
    """No page count (ValueError, OSError, or no os.sysconf at all): 16 GiB = 17,179,869,184 bytes, still
    lowered by a cgroup limit."""
    _machine(monkeypatch, {}, error=error)
    assert _json.machine_memory() == 17_179_869_184
    _machine(monkeypatch, {V1: "5000"}, error=error)
    assert _json.machine_memory() == 5000


def test_expansion_cap_from_the_variable_or_a_quarter_of_memory(monkeypatch):
    """The variable as an int, at least 1; unset or not an int: a quarter of the memory, at least 256 MiB
    (4 GiB / 4 = 1 GiB = 1,073,741,824; 512 MiB / 4 = 128 MiB < 256 MiB = 268,435,456)."""
    monkeypatch.setattr(_json, "machine_memory", lambda: 4 << 30)
    monkeypatch.delenv(_json.CAP_ENV, raising=False)
    assert _json.expansion_cap() == 1_073_741_824
    monkeypatch.setattr(_json, "machine_memory", lambda: 512 << 20)
    assert _json.expansion_cap() == 268_435_456
    monkeypatch.setattr(_json, "machine_memory", lambda: (1 << 30) + 4)
    assert _json.expansion_cap() == 268_435_457  # 1,073,741,828 // 4
    for text, want in (("123", 123), ("1", 1), ("0", 1), ("-5", 1), ("abc", 268_435_457), ("", 268_435_457)):
        monkeypatch.setenv("CANNING_MAX_TRACE_BYTES", text)
        assert _json.expansion_cap() == want, text


@pytest.mark.parametrize("nbytes, text", [
    (0, "0 bytes"), (1023, "1023 bytes"), (1024, "1 KiB"), (1536, "1.5 KiB"), (1 << 20, "1 MiB"),
    ((1 << 20) - 1, "1024 KiB"),  # 1023.999 KiB: %g keeps 6 digits
    (3 << 19, "1.5 MiB"), (1 << 30, "1 GiB"), (3 << 29, "1.5 GiB"), (5 << 40, "5120 GiB")])
def test_size_text(nbytes, text):
    assert _json._size_text(nbytes) == text


def test_the_cap_is_an_input_error_and_the_host_limit_a_child_process(cap):
    """Up to the cap is fine; one byte past it an InputError naming the file, the cap and the variable; within
    host_limit(n), past n is TooBigForThisProcess (not an input error), the cap checked first; outside the
    block no host limit."""
    cap(100)
    _json.check_size("p.json", 100)
    with pytest.raises(InputError) as e:
        _json.check_size("p.json", 101)
    assert (e.value.file, e.value.problem) == (
        "p.json", "expands past the 100 bytes cap on one file (set CANNING_MAX_TRACE_BYTES to read bigger files)")
    with _json.host_limit(50):
        _json.check_size("p.json", 50)
        with pytest.raises(_json.TooBigForThisProcess) as big:
            _json.check_size("p.json", 51)
        assert big.value.args == ("p.json",)
        with pytest.raises(InputError):
            _json.check_size("p.json", 101)
    _json.check_size("p.json", 99)  # the limit is gone after the block
    limits = _json._Limits("q")
    assert (limits.path, limits.cap, limits.host) == ("q", 100, None)


# -- the file's first bytes and its whole bytes ------------------------------------------------------

@pytest.mark.parametrize("data", [b"", b" \n\t ", b"\xef\xbb\xbf \t\r\n{", b'"s"', b"-1", b"7", b"true", b"false",
                                  b"null", b"[1]", b"\r\n{}", b"\xef\xbb\xbf"])
def test_text_that_can_start_json_is_not_refused(tmp_path, data):
    _json.refuse_non_json(_write(tmp_path, data))


@pytest.mark.parametrize("data, shown", [
    (b"PK\x03\x04\x14\x00\x06\x00\x08\x00", "50 4b 03 04 14 00 06 00"),
    (b"\xff\xfe{\x00", "ff fe 7b 00"),  # UTF-16
    (b" \xef\xbb\xbf{", "20 ef bb bf 7b"),  # a mark after a space is no mark
    (b"x", "78"), (b"  +1", "20 20 2b 31")])
def test_text_that_cannot_start_json_is_refused_naming_its_first_bytes(tmp_path, data, shown):
    path = _write(tmp_path, data)
    with pytest.raises(InputError) as e:
        _json.refuse_non_json(path)
    assert (e.value.file, e.value.problem) == (path, f"not a trace: starts with bytes {shown}, not JSON text")


def test_a_gzip_file_is_told_by_what_it_holds(tmp_path):
    _json.refuse_non_json(_write(tmp_path, gzip.compress(b'{"a": 1}'), "a.gz"))
    with pytest.raises(InputError, match="starts with bytes 50 4b 03 04, not"):  # the bytes it holds
        _json.refuse_non_json(_write(tmp_path, gzip.compress(b"PK\x03\x04"), "b.gz"))


def test_read_bytes_of_plain_files(tmp_path, cap):
    """The bytes as written, in a bytearray; one byte (shorter than gzip's magic); the cap checked on the
    file's size before it is read."""
    got = _json.read_bytes(_write(tmp_path, b'{"a": 1}'))
    assert type(got) is bytearray and got == b'{"a": 1}'
    assert _json.read_bytes(_write(tmp_path, b"7")) == b"7"
    assert _json.read_bytes(_write(tmp_path, b"\x1f")) == b"\x1f"
    cap(8)
    assert _json.read_bytes(_write(tmp_path, b'{"a": 1}')) == b'{"a": 1}'
    path = _write(tmp_path, b'{"a": 12}')
    with pytest.raises(InputError, match=r"^.*t\.json: expands past the 8 bytes cap"):
        _json.read_bytes(path)


def test_read_bytes_errors_name_the_file(tmp_path, monkeypatch):
    path = _write(tmp_path, b"")
    with pytest.raises(InputError) as e:
        _json.read_bytes(path)
    assert (e.value.file, e.value.problem) == (path, "empty file")
    missing = str(tmp_path / "missing.json")
    with pytest.raises(InputError) as e:
        _json.read_bytes(missing)
    assert (e.value.file, e.value.problem) == (missing, "cannot open: No such file or directory")

    def refuse(*args, **kwargs):
        raise OSError("refused here")
    monkeypatch.setattr(_json, "open_file", refuse)
    with pytest.raises(InputError) as e:
        _json.read_bytes(missing)
    assert e.value.problem == "cannot open: refused here"
    monkeypatch.undo()

    def broken(*args):
        raise OSError(5, "Input/output error")
    path = _write(tmp_path, b"[1]")
    monkeypatch.setattr(_json, "_read_plain", broken)
    with pytest.raises(InputError) as e:
        _json.read_bytes(path)
    assert (e.value.file, e.value.problem) == (path, "cannot read: Input/output error")
    monkeypatch.setattr(_json, "_read_plain", lambda *a: (_ for _ in ()).throw(OSError("no strerror")))
    with pytest.raises(InputError) as e:
        _json.read_bytes(path)
    assert e.value.problem == "cannot read: no strerror"


def test_read_plain_when_the_file_grew_or_shrank(cap, monkeypatch):
    """_read_plain(handle, size fstat said, the 2 bytes read, limits): the whole of what the handle holds
    whatever size said; past the size it reads _READ bytes at a time, checking the cap on the total."""
    cap(1000)
    monkeypatch.setattr(_json, "_READ", 2)
    for size in (7, 3, 2, 0, 10, 100):
        handle = io.BytesIO(b"abcdefg")
        start = handle.read(2)
        assert _json._read_plain(handle, size, start, _json._Limits("p")) == b"abcdefg", size
    handle = io.BytesIO(b"")
    assert _json._read_plain(handle, 0, b"", _json._Limits("p")) == b""
    cap(6)  # grown: 2 + 2 + 2 = 6 fine, the seventh byte is past the cap
    handle = io.BytesIO(b"abcdefg")
    with pytest.raises(InputError, match="past the 6 bytes cap"):
        _json._read_plain(handle, 3, handle.read(2), _json._Limits("p"))
    cap(7)
    handle = io.BytesIO(b"abcdefg")
    assert _json._read_plain(handle, 3, handle.read(2), _json._Limits("p")) == b"abcdefg"


# -- gzip ---------------------------------------------------------------------------------------------

def _gz(data, level=9):
    return gzip.compress(data, compresslevel=level, mtime=0)


def test_gzip_members_and_padding(tmp_path, monkeypatch):
    """One member, two members, zero bytes of padding between and after them: their texts joined."""
    assert _json.read_bytes(_write(tmp_path, _gz(b'{"a": [1, 2]}'))) == b'{"a": [1, 2]}'
    assert _json.read_bytes(_write(tmp_path, _gz(b"ab") + _gz(b"cd"))) == b"abcd"
    assert _json.read_bytes(_write(tmp_path, _gz(b"ab") + bytes(10) + _gz(b"cd") + bytes(3))) == b"abcd"
    text = bytes(range(33, 127)) * 40  # 3,760 bytes: many reads of 16 bytes, pieces of at most 64
    monkeypatch.setattr(_json, "_READ", 16)
    assert _json.read_bytes(_write(tmp_path, _gz(text) + bytes(40) + _gz(text, 0))) == text + text


def test_gzip_size_claims_only_size_the_first_allocation(tmp_path):
    """The last 4 bytes of the file (the last member's size, little-endian) size the first allocation:
    a true claim, a claim of 0 (zero padding after the member), a claim of 2 (a second small member) all
    give the text."""
    text = b'{"traceEvents": [' + b", ".join(b'{"n": %d}' % i for i in range(200)) + b"]}"
    gz = _gz(text)
    for data, want in ((gz, text), (gz + bytes(4), text), (gz + _gz(b"[]"), text + b"[]")):
        assert _json.read_bytes(_write(tmp_path, data)) == want


def test_gzip_errors(tmp_path):
    """An empty stream; a stream cut before its 8-byte trailer (stored, level 0: all 100 bytes come out);
    the magic alone (0 bytes); garbage after the magic."""
    path = _write(tmp_path, _gz(b""))
    with pytest.raises(InputError) as e:
        _json.read_bytes(path)
    assert (e.value.file, e.value.problem) == (path, "empty file (empty gzip stream)")
    path = _write(tmp_path, _gz(b"x" * 100, 0)[:-8])
    with pytest.raises(InputError) as e:
        _json.read_bytes(path)
    assert (e.value.file, e.value.problem) == (path, "truncated gzip stream (ends after 100 uncompressed bytes)")
    with pytest.raises(InputError, match=r"truncated gzip stream \(ends after 0 uncompressed bytes\)$"):
        _json.read_bytes(_write(tmp_path, b"\x1f\x8b"))
    path = _write(tmp_path, b"\x1f\x8b\x08\x00" + b"\xff" * 30)
    with pytest.raises(InputError) as e:
        _json.read_bytes(path)
    assert e.value.file == path and e.value.problem.startswith("corrupt gzip stream (Error -3 while decompressing")


def test_gzip_is_capped_on_what_is_kept(tmp_path, cap):
    """100 bytes of text (no whitespace to squeeze): a cap of 100 reads it, 99 refuses it; within
    host_limit(99) it is TooBigForThisProcess."""
    text = bytes(range(33, 133))
    path = _write(tmp_path, _gz(text), "t.json.gz")
    cap(100)
    assert _json.read_bytes(path) == text
    with _json.host_limit(99):
        with pytest.raises(_json.TooBigForThisProcess):
            _json.read_bytes(path)
    with _json.host_limit(100):
        assert _json.read_bytes(path) == text
    cap(99)
    with pytest.raises(InputError, match="expands past the 99 bytes cap"):
        _json.read_bytes(path)


def test_gzip_of_whitespace_keeps_one_byte_of_each_run_outside_strings(tmp_path):
    """A gzip bomb's whitespace: 2 MB of spaces between two values come out as one space; the same inside a
    string stays (the cap bounds it); short runs are never touched."""
    text = b'{"a": [1,' + b" " * 2_000_000 + b'2], "b": "x  y"}'
    assert _json.read_bytes(_write(tmp_path, _gz(text))) == b'{"a": [1, 2], "b": "x  y"}'
    inside = b'{"a": "' + b" " * 1_000_000 + b'"}'
    assert _json.read_bytes(_write(tmp_path, _gz(inside))) == inside


# -- the squeeze of decompressed pieces ----------------------------------------------------------------

def _squeeze(*pieces, ratio=100.0):
    """Feed pieces to a _Squeeze as _gunzip does (each follows what was kept); what was kept, and each
    piece's part."""
    out = bytearray()
    squeeze = _json._Squeeze(out)
    kept = []
    for piece in pieces:
        part = squeeze.piece(piece, len(out), ratio)
        kept.append(part)
        out += part
    return bytes(out), kept


def test_squeeze_only_pieces_that_expanded_64_times():
    """Below a ratio of 64 a piece is kept as it is; at 64 its long runs are looked at."""
    text = b"[1," + SP + b"2]"
    assert _squeeze(text, ratio=63.9)[0] == text
    assert _squeeze(text, ratio=64)[0] == b"[1, 2]"
    assert _squeeze(b"", ratio=100)[0] == b""


def test_squeeze_runs_outside_and_inside_strings():
    """A run of 256 or more outside a string keeps its first byte (a newline stays a newline); 255 is
    untouched; inside a string (an odd number of unescaped quotes before it) it all stays."""
    assert _squeeze(b"[1," + b" " * 255 + b"2]")[0] == b"[1," + b" " * 255 + b"2]"
    assert _squeeze(b"[1," + b" " * 256 + b"2]")[0] == b"[1, 2]"
    assert _squeeze(b"[1,\n" + b"\t" * 299 + b"2]")[0] == b"[1,\n2]"
    assert _squeeze(b'{"a": "x' + SP + b'y"}')[0] == b'{"a": "x' + SP + b'y"}'
    assert _squeeze(b"[" + SP + b'"a' + SP + b'b"' + SP + b"]")[0] == b'[ "a' + SP + b'b" ]'


@pytest.mark.parametrize("before, inside", [
    (b'{"a": "x\\"', True),  # \" : escaped, still inside
    (b'{"a": "x\\\\"', False),  # \\" : the quote closes the string
    (b'{"a": "x\\\\\\"', True),  # \\\" : escaped
    (b'{"a": "x\\\\\\\\"', False)])
def test_squeeze_counts_quotes_after_backslashes(before, inside):
    text = before + SP + b"}"
    assert _squeeze(text)[0] == (text if inside else before + b" }")


def test_squeeze_across_pieces():
    """A run that ends a piece outside a string keeps one byte, and the run going on in the next pieces is
    dropped (leading spaces, an all-space piece); a piece that is all spaces keeps one byte outside a string,
    all of itself inside one."""
    out, kept = _squeeze(b"[1," + SP, b" " * 100 + b"2,", b" " * 10 + b"3]")
    assert out == b"[1, 2," + b" " * 10 + b"3]" and kept[1] == b"2,"
    assert _squeeze(b"[1," + SP, SP, SP + b"2]")[0] == b"[1, 2]"
    assert _squeeze(b"[1,", SP, SP, b"2]")[0] == b"[1, 2]"
    assert _squeeze(b'["a', SP, SP, b'"]')[0] == b'["a' + SP + SP + b'"]'
    assert _squeeze(b"[1,", SP, b"x", SP)[0] == b"[1, x "


def test_squeeze_counts_quotes_kept_before_a_later_piece():
    """The parity goes on from where the last count stopped: piece 1 opens a string before its run, then
    closes it and opens another (two quotes after the run, not yet counted); piece 2's run is inside that
    string and stays. After a dropped run (outside) the count starts where the kept text starts."""
    first = b'["a' + SP + b'b", "c'
    assert _squeeze(first, SP + b'd"]')[0] == first + SP + b'd"]'
    assert _squeeze(b"[1," + SP + b'"x', SP + b'y"]')[0] == b'[1, "x' + SP + b'y"]'
    assert _squeeze(b'["a", ' + SP + b'"b"', b', "c' + SP + b'd"]')[0] == b'["a", "b", "c' + SP + b'd"]'


@pytest.mark.parametrize("out, piece, inside", [
    (b'["a\\', b'"' + SP + b'c"]', True),  # \ then " : escaped across the cut, still inside
    (b'["a\\\\', b'"' + SP + b'c"]', False),  # \\ then " : closes
    (b'["a\\', b'\\"' + SP + b'"]', False),  # \ then \" : closes
    (b'["a\\', b'\\\\"' + SP + b'c"]', True),  # \ then \\" : escaped
    (b'["a', b'\\"' + SP + b'c"]', True)])  # no backslash before the cut
def test_squeeze_an_escape_cut_between_two_pieces(out, piece, inside):
    """The quote a piece starts with, after backslashes the kept text ends with (piece 1 kept as it is: a
    ratio below 64, like the first pieces of a real trace)."""
    kept = bytearray(out)
    squeeze = _json._Squeeze(kept)
    assert squeeze.piece(out, 0, 1.0) == out
    part = squeeze.piece(piece, len(kept), 100.0)
    at = piece.index(SP)
    assert part == (piece if inside else piece[:at + 1] + piece[at + len(SP):])


def test_squeeze_all_space_piece_after_an_escape_cut():
    """An all-space piece after text ending inside a string with a backslash: the parity counted on the kept
    text (one quote: inside), the piece kept whole; after '["a"' (closed) one byte."""
    assert _squeeze(b'["a\\', SP)[0] == b'["a\\' + SP
    assert _squeeze(b'["a"', SP, SP)[0] == b'["a" '


def test_unescaped_quotes():
    """a"b\\"c\\\\"d\\\\\\"e: quotes after 0, 1, 2, 3 backslashes: 2 unescaped (the 1st and 3rd), as the
    alternating sum 4 - 3 + 2 - 1; within [lo, hi) only."""
    buf = b'a"b\\"c\\\\"d\\\\\\"e'
    assert _json._unescaped_quotes(buf, 0, len(buf)) == 2
    assert _json._unescaped_quotes(b'x"y"z', 1, 3) == 1
    assert _json._unescaped_quotes(b'x"y"z', 2, 4) == 1
    assert _json._unescaped_quotes(b'x"y"z', 0, 5) == 2
    assert _json._unescaped_quotes(b"xyz", 0, 3) == 0
    assert _json._unescaped_quotes(b'\\"', 1, 2) == 1  # the backslash before lo is not looked at


def test_append_writes_in_place_then_appends(cap):
    cap(4)
    out = bytearray(b"xxxxx")
    assert _json._append(out, 1, b"ab", _json._Limits("p")) == 3 and out == b"xabxx"
    assert _json._append(out, 9, b"", _json._Limits("p")) == 9  # nothing: no check
    with pytest.raises(InputError, match="past the 4 bytes cap"):
        _json._append(out, 3, b"ab", _json._Limits("p"))
    assert out == b"xabxx"
    out = bytearray(b"ab")
    assert _json._append(out, 2, b"cd", _json._Limits("p")) == 4 and out == b"abcd"


@pytest.mark.parametrize("text, kind", [
    (b"  [1]", "a list"), (b'"s"', "a string"), (b"true", "a boolean"), (b"false", "a boolean"),
    (b"null", "null"), (b"\n\t{", "an object"), (b"42", "a number"), (b"", "a number"), (b"   ", "a number"),
    (b" " * 63 + b"[", "a list"), (b" " * 64 + b"[", "a number")])  # only the first 64 bytes are looked at
def test_kind(text, kind):
    assert _json._kind(bytearray(text)) == kind


# -- the top-level object and its repairs ------------------------------------------------------------

def _top(text):
    buf, problems = bytearray(text), []
    top, out = _json.decode_top("t.json", buf, problems)
    assert out is buf
    return {k: bytes(v) for k, v in top.items()}, bytes(buf), [(p.file, p.message, p.severity) for p in problems]


def test_decode_top_of_good_text_and_a_byte_order_mark():
    assert _top(b'{"a": [1, 2], "b": "x"}') == ({"a": b"[1, 2]", "b": b'"x"'}, b'{"a": [1, 2], "b": "x"}', [])
    assert _top(b'\xef\xbb\xbf{"a": 1}') == ({"a": b"1"}, b'   {"a": 1}', [])


@pytest.mark.parametrize("text, message", [
    (b"[1]", "expected an object with traceEvents, got a list"),
    (b"  42", "expected an object with traceEvents, got a number"),
    (b'{"a": 1', "not JSON: unexpected end at byte 7"),
    (b'{"a": x}', "not JSON: JSON is malformed: invalid character (byte 6)"),
    (b'{"a": [1 2]}', "not JSON: JSON is malformed: expected ',' or ']' (byte 9)"),
    (b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}", _json.TOO_DEEP)])
def test_decode_top_errors(text, message):
    with pytest.raises(InputError) as e:
        _json.decode_top("t.json", bytearray(text), [])
    assert (e.value.file, e.value.problem) == ("t.json", message)


def test_decode_top_repairs_each_kind_once_with_a_warning():
    """Control characters (every one in the file, \\x1f included) become spaces; lone surrogate escapes
    (high alone, low alone) become \\ufffd and a whole pair stays; bare NaN / -Infinity / N/A become null;
    each repair one warning, in the order they were met."""
    top, buf, problems = _top(b'{"a": "x\x01y\x1fz", "b": "\\ud800-\\udc00-\\ud83d\\ude00", '
                              b'"c": [NaN, 1, -Infinity, N/A], "d": "\x02"}')
    assert top == {"a": b'"x y z"', "b": b'"\\ufffd-\\ufffd-\\ud83d\\ude00"', "c": b"[null, 1, null, null]",
                   "d": b'" "'}
    assert json.loads(buf) == {"a": "x y z", "b": "\ufffd-\ufffd-\U0001f600", "c": [None, 1, None, None], "d": " "}
    assert problems == [("t.json", "control characters inside strings replaced by spaces", "warning"),
                        ("t.json", "2 lone UTF-16 surrogate escapes replaced (U+FFFD)", "warning"),
                        ("t.json", "3 bare NaN/Infinity/N/A values read as null", "warning")]


def test_a_truncated_file_with_a_lone_surrogate_is_repaired_then_still_truncated():
    """msgspec calls a lone surrogate 'truncated': repaired first, then the end is still missing."""
    problems = []
    with pytest.raises(InputError, match=r"not JSON: unexpected end at byte 15$"):
        _json.decode_top("t.json", bytearray(b'{"a": "\\ud800x"'), problems)
    assert [p.message for p in problems] == ["1 lone UTF-16 surrogate escapes replaced (U+FFFD)"]
    assert _top(b'{"a": "\\ud800x"}')[0] == {"a": b'"\\ufffdx"'}


def test_damage_no_repair_fixes_is_an_error():
    """After the tokens' repair other damage is 'not JSON', at its byte in the repaired text (null is one
    byte longer than NaN: 'nope' starts at byte 19, msgspec stops at its 'o', byte 20); a lone surrogate
    outside a string is repaired and the decoder still stops."""
    with pytest.raises(InputError, match=r"not JSON: JSON is malformed: invalid character \(byte 20\)$"):
        _json.decode_top("t.json", bytearray(b'{"a": [NaN], "b": nope}'), [])
    with pytest.raises(InputError, match="not JSON: "):
        _json.decode_top("t.json", bytearray(b'{"a": "\\ud800", "b": \\ud800}'), [])


QUOTED = b'{\n  "name": "a "b" c",\n  "cat": "x"y",\r\n  "x": 1\n}'


def test_quotes_left_unescaped_are_escaped_line_by_line():
    """Two lines with unescaped quotes (one ending in CRLF): two repairs, keys named sorted, once each; the
    values are the text as written (json reads the repaired bytes)."""
    top, buf, problems = _top(QUOTED)
    assert json.loads(buf) == {"name": 'a "b" c', "cat": 'x"y', "x": 1}
    assert top["name"] == b'"a \\"b\\" c"' and top["cat"] == b'"x\\"y"'
    assert problems == [("t.json", "2 string value(s) with quotes the writer left unescaped read as text "
                                   "(keys: cat, name)", "warning")]
    top, _, problems = _top(b'{\n"k": "a"b",\n"k2": "c",\n"k": "d"e"\n}')
    assert problems[0][1] == "2 string value(s) with quotes the writer left unescaped read as text (keys: k)"


def test_quote_repair_declines():
    """No byte, a stop at or before the last repair's, a message without 'expected', 1,000 repairs done, a
    line of two keys, a stop past the value (on its closing quote is still in it), nothing to escape."""
    line = b'  "k": "a"b"  ,'  # the value a"b: bytes 8-10, its closing quote at 11, the comma at 14
    msg = "JSON is malformed: expected ',' or '}' (byte 9)"
    q = _json._QuoteRepairs()
    assert not q.repair(bytearray(line), -1, msg)
    assert not q.repair(bytearray(line), 9, "JSON is malformed: invalid character (byte 9)")
    assert not q.repair(bytearray(line), 12, msg) and q.count == 0
    buf = bytearray(line)
    assert q.repair(buf, 11, msg) and bytes(buf) == b'  "k": "a\\"b"  ,'
    assert (q.count, q.last, q.keys) == (1, 11, ["k"])
    assert not q.repair(bytearray(line), 11, msg) and not q.repair(bytearray(line), 10, msg)
    assert q.repair(bytearray(line), 12, msg) is False  # after the last repair's stop, but past the value
    q = _json._QuoteRepairs()
    q.count = 999
    assert q.repair(bytearray(line), 9, msg) and q.count == 1000
    q.last = -1
    assert not q.repair(bytearray(line), 9, msg)
    q = _json._QuoteRepairs()
    assert not q.repair(bytearray(b'  "k": 1, "j": "a"b"'), 16, msg)  # the line starts with no string value
    assert not q.repair(bytearray(b'  "k": "a\\"b",'), 9, msg)
    buf = bytearray(b'{\n  "k": "a"b"')  # the last line, no line end after it
    assert q.repair(buf, 12, msg) and bytes(buf) == b'{\n  "k": "a\\"b"'
    assert q.keys == ["k"]
    problems = []
    _json._QuoteRepairs().report("t.json", problems)
    assert problems == []


@pytest.mark.parametrize("value, want", [
    (b'a"b', b'a\\"b'), (b'a\\"b', b'a\\"b'), (b'a\\\\"b', b'a\\\\\\"b'), (b'"', b'\\"'), (b"", b""),
    (b'\\', b'\\'), (b'x"', b'x\\"'), (b'\\n"\\"', b'\\n\\"\\"')])
def test_escape_quotes_by_hand(value, want):
    assert _json._escape_quotes(value) == want


# -- one repair at a time --------------------------------------------------------------------------

def test_repair_of_control_characters_reads_the_whole_buffer_in_blocks(monkeypatch):
    """Every byte below 32 becomes a space, in blocks of _READ (3 here) to the end; byte 32 at the stop
    is no control character; once done, not again."""
    monkeypatch.setattr(_json, "_READ", 3)
    buf = bytearray(b'\x01a"\x1fb\x00c"\x0a\x7f')
    repaired = set()
    assert _json._repair(buf, 3, "", repaired) == ("control", "control characters inside strings replaced by spaces")
    assert buf == b' a" b c" \x7f'  # 0x0a a space too, 0x7f kept
    buf = bytearray(b'[ 1]\x01')
    assert _json._repair(buf, 1, "", set()) is None and buf == b'[ 1]\x01'
    assert _json._repair(bytearray(b"\x01"), 0, "", {"control"}) is None
    assert _json._repair(bytearray(b"\x01"), -1, "", set()) is None


@pytest.mark.parametrize("msg", ["lone surrogate", "invalid escape", "Input data was truncated"])
def test_repair_of_surrogates_is_asked_by_the_message(msg):
    buf = bytearray(b'["\\uD800", "\\uDBFF\\uDFFF", "\\udfff", "\\uDC00x"]')
    """Lone: \\uD800 (high alone), \\udfff and \\uDC00 (low alone): 3; the pair \\uDBFF\\uDFFF stays."""
    assert _json._repair(buf, -1, msg, set()) == ("surrogate", "3 lone UTF-16 surrogate escapes replaced (U+FFFD)")
    assert buf == b'["\\ufffd", "\\uDBFF\\uDFFF", "\\ufffd", "\\ufffdx"]'
    assert json.loads(buf) == ["\ufffd", "\U0010ffff", "\ufffd", "\ufffdx"]


def test_repair_of_surrogates_and_tokens_declines():
    """Another message, the kind done already, or no lone surrogate: on to the tokens, which need a byte
    and are done once."""
    buf = bytearray(b'["\\ud800"]')
    assert _json._repair(buf, -1, "invalid character", set()) is None
    assert _json._repair(buf, -1, "truncated", {"surrogate"}) is None
    assert _json._repair(bytearray(b'[1]'), -1, "truncated", set()) is None
    buf = bytearray(b'[NaN, "\\ud800"]')
    assert _json._repair(buf, 1, "invalid character", set()) == ("tokens", "1 bare NaN/Infinity/N/A values read as null")
    assert buf == b'[null, "\\ud800"]'
    assert _json._repair(bytearray(b'[NaN]'), 1, "invalid character", {"tokens"}) is None
    assert _json._repair(bytearray(b'[NaN]'), -1, "invalid character", set()) is None
    buf = bytearray(b'[NaN, "\\ud800"]')
    assert _json._repair(buf, 1, "truncated", {"surrogate"})[0] == "tokens"
    buf = bytearray(b'["\\ud800", NaN]')
    assert _json._repair(buf, 1, "escape", set())[0] == "surrogate" and b"NaN" in buf


@pytest.mark.parametrize("read", [1, 2, 3, 1 << 20])
@pytest.mark.parametrize("text, want, count", [
    (b"[NaN,inf, -inf ,N/A]", b"[null,null, null ,null]", 4),
    (b'["NaN", NaN]', b'["NaN", null]', 1),
    (b'{"a":undefined,"b":nan}', b'{"a":null,"b":null}', 2),
    (b"[NaN,NaN,NaN]", b"[null,null,null]", 3),  # each grows by 1: the text moves 3 bytes right first
    (b"[-Infinity,NaN,NaN]", b"[null,null,null]", 3),  # -5, then +1, +1: never ahead of the text
    (b"[Infinity, -Infinity]", b"[null, null]", 2),
    (b"[1, 2]", b"[1, 2]", 0), (b"[NaNa]", b"[NaNa]", 0), (b"[xNaN]", b"[xNaN]", 0),
    (b'{"a": NaN\n}', b'{"a": null\n}', 1)])
def test_null_tokens(monkeypatch, read, text, want, count):
    monkeypatch.setattr(_json, "_READ", read)
    buf = bytearray(text)
    assert _json._null_tokens(buf) == count
    assert buf == want


def test_move_copies_in_blocks(monkeypatch):
    monkeypatch.setattr(_json, "_READ", 2)
    buf = bytearray(b"..abcde")
    assert _json._move(buf, 0, 2, 7) == 5 and buf == b"abcdede"
    buf = bytearray(b"xyabcde")
    assert _json._move(buf, 1, 3, 6) == 4 and buf == b"xbcdcde"
    assert _json._move(buf, 4, 5, 5) == 4


# -- spans, cuts and pieces --------------------------------------------------------------------------

def test_value_span():
    """Where a Raw decoded from buf lies: {"a": [1, 2], "b": ""}: [1, 2] at bytes 6-11, "" at 19-20."""
    buf = bytearray(b'{"a": [1, 2], "b": ""}')
    top = msgspec.json.decode(buf, type=dict[str, msgspec.Raw])
    assert _json.value_span(buf, top["a"]) == (6, 12) and _json.value_span(buf, top["b"]) == (19, 21)
    whole = bytearray(b"[1]")
    assert _json.value_span(whole, msgspec.json.decode(whole, type=msgspec.Raw)) == (0, 3)
    other = msgspec.json.decode(bytearray(b'{"a": [1, 2]}'), type=dict[str, msgspec.Raw])["a"]
    with pytest.raises(ValueError, match="the value is not a view into the buffer"):
        _json.value_span(buf, other)
    with pytest.raises(ValueError, match="not a view"):
        _json.value_span(buf, msgspec.Raw())
    before = bytearray(b'{"a": [1, 2], "b": ""}' * 2)  # a view of buf is not a view of an earlier buffer
    with pytest.raises(ValueError):
        _json.value_span(before[:4], top["a"])


def test_next_cut():
    """'},' then (spaces) '{': the comma's index; a '},' followed by anything else is skipped; none: end."""
    buf = bytearray(b'{"a":1},{"b":[{}, 1]},  \n{"c":3}')
    assert _json._next_cut(buf, 0, len(buf)) == 7
    assert _json._next_cut(buf, 8, len(buf)) == 21  # '{}, 1' skipped
    assert _json._next_cut(buf, 22, len(buf)) == len(buf)
    assert _json._next_cut(buf, 0, 7) == 7  # the '},' must lie within [pos, end)
    assert _json._next_cut(buf, 8, 23) == 23  # the '{' after the spaces lies past end
    assert _json._next_cut(buf, 8, 22) == 22
    assert _json._next_cut(buf, 5, 5) == 5


def _pieces(text, chunk, start=0, end=None, decode=None):
    buf = bytearray(text)
    seen = []

    def record(piece):
        seen.append(bytes(piece))
        return (decode or msgspec.json.decode)(piece)
    got = list(_json.iter_chunks(buf, start, len(buf) if end is None else end, record, lambda: None, chunk))
    assert buf == text  # the brackets put around each piece are taken away
    return got, seen


def test_iter_chunks_cuts_between_elements():
    """[{"a":1},{"a":2},{"a":3}]: elements at 1-7, 9-15, 17-23; a chunk of 1 byte cuts after each, a chunk
    of 7 or 8 reaches the second '},' (from byte 8 or 9); the default keeps the whole array in one piece."""
    text = b'[{"a":1},{"a":2},{"a":3}]'
    got, seen = _pieces(text, 1)
    assert got == [[{"a": 1}], [{"a": 2}], [{"a": 3}]]
    assert seen == [b'[{"a":1}]', b'[{"a":2}]', b'[{"a":3}]']
    assert _pieces(text, 8)[1] == [b'[{"a":1},{"a":2}]', b'[{"a":3}]']
    assert _pieces(text, 6)[1] == [b'[{"a":1}]', b'[{"a":2}]', b'[{"a":3}]']  # from byte 7: the first '},'
    assert _pieces(text, 7)[1] == [b'[{"a":1},{"a":2}]', b'[{"a":3}]']  # from byte 8: past the first
    assert _pieces(text, _json.CHUNK)[1] == [text]
    assert _pieces(b"[]", 1) == ([], [])
    assert _pieces(b'{"t": [1, 2], "u": 0}', 1, 6, 12)[0] == [[1, 2]]  # the array inside a bigger buffer


def test_a_cut_inside_a_string_extends_the_piece():
    text = b'[{"s":"},{"},{"a":2}]'
    got, seen = _pieces(text, 1)
    assert got == [[{"s": "},{"}], [{"a": 2}]]
    assert seen == [b'[{"s":"}]', b'[{"s":"},{"}]', b'[{"a":2}]']


def test_damage_raises_at_once_and_leaves_the_buffer(monkeypatch):
    """Damage in a middle piece: the syntax check of the rest raises; in the last piece the decode's own
    error; the syntax check runs at most once however many cuts fail."""
    with pytest.raises(msgspec.DecodeError):
        _pieces(b'[{"a":1},{"a":2,},{"a":3}]', 1)
    with pytest.raises(msgspec.DecodeError):
        _pieces(b'[{"a":1},{"a":2},{"a":3,}]', 1)
    checks = []
    real = _json._check_syntax
    monkeypatch.setattr(_json, "_check_syntax", lambda *a: checks.append(a[1:]) or real(*a))
    text = b'[{"s":"},{},{},{"},{"a":2}]'
    got, seen = _pieces(text, 1)
    assert got == [[{"s": "},{},{},{"}], [{"a": 2}]] and len(seen) == 5 and checks == [(1, len(text) - 1)]


def test_invalid_utf8_is_replaced_in_its_piece_only():
    """A byte 0xff in a string: that piece decoded again with U+FFFD, on_utf8 called once; others as is."""
    buf = bytearray(b'[{"a":"\xff"},{"a":"b"}]')
    calls = []
    got = list(_json.iter_chunks(buf, 0, len(buf), msgspec.json.decode, lambda: calls.append(1), 1))
    assert got == [[{"a": "\ufffd"}], [{"a": "b"}]] and calls == [1]
    buf = bytearray(b'[{"a":\xff},{"a":"b"}]')  # outside a string: no decode can read it
    with pytest.raises(msgspec.DecodeError):
        list(_json.iter_chunks(buf, 0, len(buf), msgspec.json.decode, lambda: calls.append(2), 1))
    assert calls == [1]


def test_check_syntax():
    buf = bytearray(b'x{"a":1},[2],"s",3,true,null,1.5y')
    assert _json._check_syntax(buf, 1, len(buf) - 1) is True and buf == b'x{"a":1},[2],"s",3,true,null,1.5y'
    buf = bytearray(b'x{"a":1},,y')
    with pytest.raises(msgspec.DecodeError):
        _json._check_syntax(buf, 1, len(buf) - 1)
    assert buf == b'x{"a":1},,y'


# -- the plan of a big plain file, read a block at a time ------------------------------------------------

HEAD = b'{"traceEvents": ['  # 17 bytes: '[' at 16


def _events_file(tmp_path, n=10, tail=b"]}", name="big.json"):
    """HEAD, n elements {"n": i} (8 bytes for i < 10) joined by ', ': element i at 17 + 10 i to 25 + 10 i."""
    return _write(tmp_path, HEAD + b", ".join(b'{"n": %d}' % i for i in range(n)) + tail, name)


def test_plan_array_finds_the_array_and_the_other_keys(tmp_path, monkeypatch):
    """With _EDGE = 20 (files from 80 bytes; the head holds HEAD's '['): 10 elements end at 115, ']' at 115,
    '}' at 116 (117 bytes): start 16, end 116; 'x' after the array read from the tail; a file shorter than
    min_bytes or 4 edges, gzip, or without the key is no plan."""
    monkeypatch.setattr(_json, "_EDGE", 20)
    path = _events_file(tmp_path)
    plan = _json.plan_array(path, 117)
    assert (plan.start, plan.end, {k: bytes(v) for k, v in plan.top.items()}) == (16, 116, {"traceEvents": b"[]"})
    assert _json.plan_array(path, 118) is None
    monkeypatch.setattr(_json, "_EDGE", 30)  # 4 edges: 120 bytes
    assert _json.plan_array(path, 0) is None
    monkeypatch.setattr(_json, "_EDGE", 20)
    path = _events_file(tmp_path, tail=b'], "x": [1]}')  # the tail '{"n": 9}], "x": [1]}': the first ']' closes
    plan = _json.plan_array(path, 0)
    assert (plan.start, plan.end, bytes(plan.top["x"])) == (16, 116, b"[1]")
    path = _write(tmp_path, HEAD + b", ".join(b'{"n": [%d]}' % i for i in range(10)) + b"]}")
    plan = _json.plan_array(path, 0)  # the tail's first ']' ends [9] inside an element: the next one closes
    assert (plan.start, plan.end) == (16, 136)  # elements of 10 bytes: 17 + 10 * 10 + 9 * 2 = 135 is ']'
    assert _json.plan_array(_write(tmp_path, b'{"events": [' + b"1, " * 40 + b"1]}"), 0) is None
    assert _json.plan_array(_write(tmp_path, _gz(open(_events_file(tmp_path), "rb").read(), 0)), 0) is None
    assert _json.plan_array(_events_file(tmp_path, tail=b"]"), 0) is None  # never closed
    assert _json.plan_array(_events_file(tmp_path, tail=b'], "traceEvents": 5}'), 0) is None  # a later key wins
    # nested past the decoder's depth after the array (3,000 elements make the file past 4 edges of 8,000): the
    # array's own ']' leaves text too deep, skipped (no error); the first ']' after which the text closes is
    # then the file's last (before '}'): what follows the array is read as part of it (its decode fails later)
    deep = HEAD + b", ".join(b'{"n": %d}' % i for i in range(3000)) + b'], "x": ' + b"[" * 3000 + b"]" * 3000 + b"}"
    monkeypatch.setattr(_json, "_EDGE", 8000)
    assert _json.plan_array(_write(tmp_path, deep), 0).end == len(deep) - 1


def test_split_cuts_between_elements(tmp_path, monkeypatch):
    """Elements from 17 to 115 (98 bytes). 2 parts: from 17 + 49 = 66 the first '}' that ends an element is
    74 (element 5: 67-74), '{' of the next at 77: [(17, 75), (77, 115)]. 3 parts: from 17 + 32 = 49 (cut
    55-57) and from 17 + 65 = 82 (cut 85-87)."""
    monkeypatch.setattr(_json, "_EDGE", 20)
    path = _events_file(tmp_path)
    plan = _json.plan_array(path, 0)
    assert plan.split(path, 1) == [(17, 115)]
    assert plan.split(path, 2) == [(17, 75), (77, 115)]
    assert plan.split(path, 3) == [(17, 55), (57, 85), (87, 115)]
    text = open(path, "rb").read()
    assert [json.loads(b"[" + text[lo:hi] + b"]") for lo, hi in plan.split(path, 3)] == [
        [{"n": i} for i in range(4)], [{"n": i} for i in range(4, 7)], [{"n": i} for i in range(7, 10)]]
    one = _write(tmp_path, HEAD + b'{"n": "' + b"x" * 200 + b'"}]}')
    assert _json.plan_array(one, 0).split(one, 2) == [(17, 226)]  # 17 + 7 + 200 + 2: no cut after the middle


def test_first_cut_reads_more_until_the_block_size(tmp_path, monkeypatch):
    """A cut 1.5 MB after `at` (past the first 1 MB read): found by the 4 MB read; with _BLOCK at 1 MB not
    looked for further; a file that ends before the read's size: none. Text '"}, {"b": 1}' is the cut."""
    big = b'{"a": "' + b"x" * 1_500_000 + b'"}, {"b": 1}'
    path = _write(tmp_path, big)
    with open(path, "rb") as f:
        found = _json._first_cut(f, 2)
        assert (found.start(), found.end()) == (1_500_007 - 2 + 1, 1_500_007 - 2 + 5)
        assert _json._first_cut(f, 1_500_009) is None
    monkeypatch.setattr(_json, "_BLOCK", 1 << 20)
    with open(path, "rb") as f:
        assert _json._first_cut(f, 2) is None
    with open(_write(tmp_path, b'[{"a": 1}, {"b": 2}]', "s.json"), "rb") as f:
        found = _json._first_cut(f, 0)
        assert (found.start(), found.end()) == (8, 12)
        found = _json._first_cut(f, 3)
        assert (found.start(), found.end()) == (5, 9)
        assert _json._first_cut(f, 9) is None
    with open(_write(tmp_path, b'[{"a": "}, {x"}, {"b": 2}]', "q.json"), "rb") as f:  # '}, {x' is no cut
        found = _json._first_cut(f, 0)
        assert (found.start(), found.end()) == (14, 18)


def test_block_buffer_by_its_reference_count(monkeypatch):
    """The last buffer again when it is big enough and its count is at most _FREE (here both 5 by hand),
    else a new one of the size asked."""
    counts = {}
    monkeypatch.setattr(_json, "_references", lambda buf: counts.get(id(buf), 5))
    monkeypatch.setattr(_json, "_FREE", 5)
    buf = bytearray(100)
    assert _json._block_buffer(buf, 50) is buf and _json._block_buffer(buf, 100) is buf
    new = _json._block_buffer(buf, 101)
    assert new is not buf and len(new) == 101 and not any(new)
    counts[id(buf)] = 6
    new = _json._block_buffer(buf, 50)
    assert new is not buf and len(new) == 50
    counts[id(buf)] = 4
    assert _json._block_buffer(buf, 50) is buf
    new = _json._block_buffer(None, 7)
    assert type(new) is bytearray and len(new) == 7


def test_references_count_what_holds_a_buffer():
    """One more holder (a memoryview) is one more reference; _free_references measures, as _block_buffer
    calls it, a buffer only its caller's name holds (the test measures it the same way)."""
    buf = bytearray(3)
    n = _json._references(buf)
    view = memoryview(buf)
    assert _json._references(buf) == n + 1
    view.release()
    assert _json._references(buf) == n

    def block_buffer(last):
        return _json._references(last)
    one = bytearray(1)
    assert _json._free_references() == block_buffer(one)


def _elements(path):
    return 1, os.path.getsize(path) - 1


def test_iter_file_chunks_in_small_blocks(tmp_path, monkeypatch):
    """Blocks of 30 bytes over [{"n": 0}, ..., {"n": 9}]: each block ends after its last whole element, the
    next starts at the next '{'; every element once, in order (json reads the file)."""
    monkeypatch.setattr(_json, "_BLOCK", 30)
    path = _write(tmp_path, b"[" + b", ".join(b'{"n": %d}' % i for i in range(10)) + b"]")
    pieces = []
    for got in _json.iter_file_chunks(path, *_elements(path), lambda p: pieces.append(bytes(p)) or
                                      msgspec.json.decode(p), lambda: None):
        assert got
    assert [e for p in pieces for e in json.loads(p)] == json.loads(open(path, "rb").read())
    # from byte 1: 30 bytes hold elements 0-2 (1-28) and ', ' but not the '{' after: cut after element 1
    assert pieces[0] == b'[{"n": 0}, {"n": 1}]' and pieces[1] == b'[{"n": 2}, {"n": 3}]'
    monkeypatch.setattr(_json, "_BLOCK", 1000)
    pieces.clear()
    list(_json.iter_file_chunks(path, *_elements(path), lambda p: pieces.append(bytes(p)) or [], lambda: None))
    assert pieces == [open(path, "rb").read()]
    pieces.clear()
    list(_json.iter_file_chunks(path, 11, 29, lambda p: pieces.append(bytes(p)) or [], lambda: None))
    assert pieces == [b'[{"n": 1}, {"n": 2}]']


def test_iter_file_chunks_errors(tmp_path, monkeypatch):
    """A range past the file's end: 'the file changed'; an element longer than a block (not the last
    block): no element boundary; invalid UTF-8 in a string: replaced, on_utf8 called."""
    path = _write(tmp_path, b'[{"n": 0}, {"n": 1}]')
    with pytest.raises(InputError) as e:
        list(_json.iter_file_chunks(path, 1, 40, msgspec.json.decode, lambda: None))
    assert (e.value.file, e.value.problem) == (path, "the file changed while it was read")
    monkeypatch.setattr(_json, "_BLOCK", 30)
    path = _write(tmp_path, b'[{"n": "' + b"x" * 40 + b'"}, {"n": 1}]')
    with pytest.raises(msgspec.DecodeError, match="no element boundary in a block"):
        list(_json.iter_file_chunks(path, *_elements(path), msgspec.json.decode, lambda: None))
    path = _write(tmp_path, b'[{"n": "\xff"}, {"n": 1}]')
    calls = []
    got = list(_json.iter_file_chunks(path, *_elements(path), msgspec.json.decode, lambda: calls.append(1)))
    assert got == [[{"n": "\ufffd"}, {"n": 1}]] and calls == [1]


# -- what the first mutation run let live ------------------------------------------------------------

def test_expansion_cap_is_an_int(monkeypatch):
    """(2**30 + 6) // 4 = 268,435,457 (not 268,435,457.5)."""
    monkeypatch.delenv(_json.CAP_ENV, raising=False)
    monkeypatch.setattr(_json, "machine_memory", lambda: (1 << 30) + 6)
    assert _json.expansion_cap() == 268_435_457 and type(_json.expansion_cap()) is int


@pytest.mark.parametrize("data", [b"\x0c{", b"\x0b[1]", b"X1", b"XX{", b"X", b" " * 4095 + b"x"])
def test_more_text_that_is_refused(tmp_path, data):
    """A form feed or vertical tab is no JSON whitespace; an X is no JSON start; an x within the first 4096
    bytes is seen."""
    with pytest.raises(InputError, match="not a trace"):
        _json.refuse_non_json(_write(tmp_path, data))


def test_only_the_first_4096_bytes_are_looked_at(tmp_path):
    _json.refuse_non_json(_write(tmp_path, b" " * 4096 + b"x"))


def test_a_file_that_grew_after_fstat_is_read_whole_and_capped(tmp_path, monkeypatch, cap):
    """fstat says 1 byte: the 9 bytes are read all the same, the cap checked as they come."""
    path = _write(tmp_path, b'{"a": 12}')

    class Os:  # os for _json alone (safe_files checks the descriptor with the real fstat)
        def __getattr__(self, name):
            return getattr(os, name)

        def fstat(self, fd):
            return os.stat_result((0,) * 6 + (1,) + (0,) * 3)
    monkeypatch.setattr(_json, "os", Os())
    assert _json.read_bytes(path) == b'{"a": 12}'
    cap(8)
    with pytest.raises(InputError, match="past the 8 bytes cap"):
        _json.read_bytes(path)


def _allocations(monkeypatch):
    made = []
    monkeypatch.setattr(_json, "bytearray", lambda *n: made.append(n[0] if n else None) or bytearray(*n),
                        raising=False)
    return made


def test_the_first_allocation_of_a_gzip_file(tmp_path, monkeypatch, cap):
    """The claim (the last 4 bytes, little-endian) when 0 < claim <= min(cap, host limit, 16 x the file),
    else min(4 x the file, that bound). Stored (level 0) gzip of 1,000 bytes: 1,023 bytes (10 header + 5
    block header + 1,000 + 8 trailer), claim 1,000: 1,000 bytes. 100,000 'a' at level 9: 16 x the file is
    under 100,000 (the file is small): 4 x the file. Zero padding after the member: claim 0, 4 x the file."""
    text = bytes(range(33, 133)) * 10
    stored = _gz(text, 0)
    assert len(stored) == 1023
    made = _allocations(monkeypatch)
    assert _json.read_bytes(_write(tmp_path, stored)) == text and made[0] == 1000
    made.clear()
    _json.read_bytes(_write(tmp_path, stored + bytes(4)))
    assert made[0] == 4 * 1027
    made.clear()
    bomb = _gz(b"a" * 100_000)
    assert 16 * len(bomb) < 100_000
    _json.read_bytes(_write(tmp_path, bomb))
    assert made[0] == 4 * len(bomb)
    made.clear()
    _json.read_bytes(_write(tmp_path, _gz(b"7", 0)))  # claim 1: a buffer of 1 byte
    assert made[0] == 1
    cap(500)  # the cap under the claim: min(4 x 1,023, 500)
    made.clear()
    with pytest.raises(InputError):
        _json.read_bytes(_write(tmp_path, stored))
    assert made[0] == 500
    cap(10_000)
    with _json.host_limit(600):  # the host limit under the claim and the cap
        made.clear()
        with pytest.raises(_json.TooBigForThisProcess):
            _json.read_bytes(_write(tmp_path, stored))
        assert made[0] == 600
    with _json.host_limit(20_000):  # a host limit over the cap: the cap bounds it
        cap(900)
        made.clear()
        with pytest.raises(InputError):
            _json.read_bytes(_write(tmp_path, stored))
        assert made[0] == 900


def test_a_claim_equal_to_the_bound_is_trusted(tmp_path, monkeypatch, cap):
    """A text that gzip shrinks between 4 and 16 times, the cap set to its size: the claim equals the bound
    (min(cap, 16 x the file)) and is trusted: one allocation of the text's size, not 4 x the file."""
    text = ", ".join('{"n": %d, "v": %d}' % (i, (i * 7919) % 10007) for i in range(200)).encode()
    gz = _gz(text)
    assert 4 * len(gz) < len(text) <= 16 * len(gz)
    cap(len(text))
    made = _allocations(monkeypatch)
    assert _json.read_bytes(_write(tmp_path, gz)) == text and made[0] == len(text)


def test_the_first_allocation_of_short_gzip_files(tmp_path, monkeypatch):
    """Under 18 bytes no claim is read: the magic alone (2 bytes) gets min(4 x 2, 16 x 2) = 8. At 18 bytes
    the claim is read: a stored block cut after 3 of its bytes (10 header, 01 F5FF 0A00 block header with
    LEN 0xF5FF, NLEN 0x0A00, 3 zero bytes): the last 4 bytes 0A 00 00 00 claim 10 (<= 16 x 18)."""
    made = _allocations(monkeypatch)
    with pytest.raises(InputError, match="truncated"):
        _json.read_bytes(_write(tmp_path, b"\x1f\x8b"))
    assert made[0] == 8
    cut = _gz(b"", 0)[:10] + b"\x01\xff\xf5\x00\x0a" + bytes(3)
    assert len(cut) == 18
    made.clear()
    with pytest.raises(InputError, match=r"truncated gzip stream \(ends after 3 uncompressed bytes\)"):
        _json.read_bytes(_write(tmp_path, cut))
    assert made[0] == 10
    made.clear()  # 17 bytes (LEN 0xFFFA, NLEN 0x0005, 2 zero bytes): the last 4 would claim 5; not read: 4 x 17
    short = _gz(b"", 0)[:10] + b"\x01\xfa\xff\x05\x00" + bytes(2)
    assert len(short) == 17
    with pytest.raises(InputError, match="truncated"):
        _json.read_bytes(_write(tmp_path, short))
    assert made[0] == 68


def test_what_follows_a_gzip_member_must_be_gzip(tmp_path):
    """After a member: zero padding is skipped, an X is not (a new member that is no gzip); a zlib stream
    (not gzip) is refused too."""
    with pytest.raises(InputError, match="gzip stream"):
        _json.read_bytes(_write(tmp_path, _gz(b"ab") + b"XX" + _gz(b"cd")))
    with pytest.raises(InputError, match="corrupt gzip stream"):
        _json.read_bytes(_write(tmp_path, _gz(b"ab") + zlib.compress(b"cd")))


def test_gzip_whitespace_inside_and_outside_strings_over_many_pieces(tmp_path, monkeypatch):
    """Pieces of at most 4 x 1,024 bytes: 100,000 spaces inside a string are kept, 100,000 outside one
    become one; the parity of the quotes before is counted on what was kept."""
    monkeypatch.setattr(_json, "_READ", 1024)
    text = b'{"a": "' + b" " * 100_000 + b'", "b": [1,' + b" " * 100_000 + b"2]}"
    assert _json.read_bytes(_write(tmp_path, _gz(text))) == b'{"a": "' + b" " * 100_000 + b'", "b": [1, 2]}'


def test_squeeze_from_the_first_piece():
    """What was kept before the first piece is nothing: no run goes on into it (leading spaces stay, an
    all-space piece keeps one byte); a quote at byte 0 is counted."""
    assert _squeeze(b"  [1]")[0] == b"  [1]"
    assert _squeeze(SP)[0] == b" "
    assert _squeeze(b'"a', SP + b'"')[0] == b'"a' + SP + b'"'


def test_squeeze_after_a_piece_kept_as_it_is():
    """A piece below the ratio ends no run: the next piece's leading spaces stay."""
    out = bytearray(b"[1,")
    squeeze = _json._Squeeze(out)
    assert squeeze.piece(b"[1,", 0, 1.0) == b"[1,"
    assert squeeze.piece(b"  2]", 3, 100.0) == b"  2]"


def test_squeeze_short_all_space_and_x_pieces():
    """An all-space piece of 10 bytes outside a string keeps one (a bomb's piece), inside all; an X is no
    whitespace; a piece that starts with a long run outside a string keeps one byte of it."""
    assert _squeeze(b"[1,", b" " * 10, b"2]")[0] == b"[1, 2]"
    assert _squeeze(b'["a', b" " * 10, b'"]')[0] == b'["a' + b" " * 10 + b'"]'
    assert _squeeze(b"[1,", b"XXXX")[0] == b"[1,XXXX"
    assert _squeeze(b"[1,", SP + b"2]")[0] == b"[1, 2]"
    assert _squeeze(b"[1,", b"\n" + SP + b"2]")[0] == b"[1,\n2]"


def test_squeeze_a_backslash_at_byte_0():
    """Kept text '\\' (one backslash, no quote), then '"' and a run: the quote is escaped (1 backslash), so
    the run is outside a string (no quote opened one): one byte kept."""
    out = bytearray(b"\\")
    squeeze = _json._Squeeze(out)
    assert squeeze.piece(b"\\", 0, 1.0) == b"\\"
    assert squeeze.piece(b'"' + SP + b"x", 1, 100.0) == b'" x'


def test_utf8_error_is_not_a_token_repair():
    """Invalid UTF-8 in a key has no byte in msgspec's message: no repair is tried (the NaN after it
    stays)."""
    problems = []
    with pytest.raises(InputError, match=r"not JSON: Invalid UTF-8 encoded string$"):
        _json.decode_top("t.json", bytearray(b'{"a\xff": [NaN]}'), problems)
    assert problems == []


def test_quote_repair_after_a_line_end_at_byte_0_and_a_key_not_utf8():
    """'\\n  "k": "a"b"': the line starts after the newline at byte 0 (the stop at 11, the b); a key with a
    byte 0xff is named with U+FFFD."""
    msg = "JSON is malformed: expected ',' or '}' (byte 11)"
    q = _json._QuoteRepairs()
    buf = bytearray(b'\n  "k": "a"b"')
    assert q.repair(buf, 11, msg) and buf == b'\n  "k": "a\\"b"'
    q = _json._QuoteRepairs()
    buf = bytearray(b'  "k\xff": "a"b"')
    assert q.repair(buf, 11, msg) and q.keys == ["k\ufffd"]


def test_repairs_at_byte_0():
    """A control character at byte 0; a stop at byte 0 with NaN tokens further on (repaired, the stop
    stays)."""
    buf = bytearray(b"\x01[1]")
    assert _json._repair(buf, 0, "invalid character", set())[0] == "control" and buf == b" [1]"
    buf = bytearray(b"x[NaN]")
    assert _json._repair(buf, 0, "invalid character", set()) == (
        "tokens", "1 bare NaN/Infinity/N/A values read as null") and buf == b"x[null]"


def test_null_tokens_with_tokens_in_the_moved_part(monkeypatch):
    """Ten NaN: the text moves 10 bytes right first; the copy left in the first 10 bytes ('[NaN,NaN,N')
    is not read again."""
    for read in (4, 1 << 20):
        monkeypatch.setattr(_json, "_READ", read)
        buf = bytearray(b"[" + b",".join([b"NaN"] * 10) + b"]")
        assert _json._null_tokens(buf) == 10 and buf == b"[" + b",".join([b"null"] * 10) + b"]"


def test_value_span_messages_and_a_shorter_buffer():
    """The exact message; a buffer that ends before the value does ([1, 2] at 6-11 of an 8-byte view)."""
    buf = bytearray(b'{"a": [1, 2], "b": ""}')
    top = msgspec.json.decode(buf, type=dict[str, msgspec.Raw])
    with pytest.raises(ValueError) as e:
        _json.value_span(memoryview(buf)[:8], top["a"])
    assert str(e.value) == "the value is not a view into the buffer"
    assert _json.value_span(memoryview(buf)[:12], top["a"]) == (6, 12)


@pytest.mark.parametrize("text, end, want", [
    (b'},{"a":1}', None, 1),  # a '},' at byte 0
    (b'{"a":1},  ', None, 10),  # spaces to the end: no '{'
    (b'{"a":1},X{"b":2}', None, 16),  # an X is no space
    (b'{"a":1},{"b":2}', 8, 8),  # the '{' at the end is past it
    (b'},},{', None, 3)])  # the second '},' starts right after the first
def test_next_cut_edges(text, end, want):
    buf = bytearray(text)
    assert _json._next_cut(buf, 0, len(buf) if end is None else end) == want


def test_damage_in_the_last_piece_is_the_decoders_error():
    def decode(piece):
        try:
            return msgspec.json.decode(piece)
        except msgspec.DecodeError as e:
            raise msgspec.DecodeError(f"mine: {e}") from None
    with pytest.raises(msgspec.DecodeError, match="^mine: "):
        _pieces(b'[{"a":1},{"a":2},{"a":3,}]', 1, decode=decode)


def test_the_syntax_check_reads_the_array_only():
    """The array inside a bigger object, a cut inside a string: the check reads up to the array's ']'."""
    text = b'{"t": [{"s":"},{"},{"a":2}], "u": 0}'
    assert _pieces(text, 1, 6, 27)[0] == [[{"s": "},{"}], [{"a": 2}]]


def test_first_cut_reads_up_to_the_block_size(tmp_path, monkeypatch):
    """_BLOCK 4 MiB: reads of 1 then 4 MiB; a cut 4.2 MB after `at` is past them: none."""
    monkeypatch.setattr(_json, "_BLOCK", 4 << 20)
    path = _write(tmp_path, b'{"a": "' + b"x" * 4_200_000 + b'"}, {"b": 1}')
    with open(path, "rb") as f:
        assert _json._first_cut(f, 2) is None


def test_plan_array_edges(tmp_path, monkeypatch):
    """117 bytes: 4 edges of 29 (116) fit; a key past the head is not looked for; a traceEvents key inside
    another object is no plan."""
    monkeypatch.setattr(_json, "_EDGE", 29)
    path = _events_file(tmp_path)
    assert _json.plan_array(path, 0).end == 116
    monkeypatch.setattr(_json, "_EDGE", 20)
    late = b'{"meta": "' + b"x" * 50 + b'", ' + HEAD[1:] + b"1, 2]}"  # 85 bytes, the key at 63
    assert len(late) == 85 and _json.plan_array(_write(tmp_path, late), 0) is None
    monkeypatch.setattr(_json, "_EDGE", 24)  # the head holds '{"a": {"traceEvents": [' (23 bytes)
    nested = b'{"a": {"traceEvents": [' + b", ".join(b"%d" % i for i in range(30)) + b']}, "b": 1}'
    assert _json.plan_array(_write(tmp_path, nested), 0) is None


def test_iter_file_chunks_reuses_one_buffer_of_the_block_size(tmp_path, monkeypatch):
    """With every buffer free (_references 0): blocks of 30 bytes read into one buffer of 32 (a byte before
    and after for the brackets); the error's exact text."""
    monkeypatch.setattr(_json, "_BLOCK", 30)
    monkeypatch.setattr(_json, "_references", lambda buf: 0)
    path = _write(tmp_path, b"[" + b", ".join(b'{"n": %d}' % i for i in range(10)) + b"]")
    made = _allocations(monkeypatch)
    got = [e for piece in _json.iter_file_chunks(path, *_elements(path), msgspec.json.decode, lambda: None)
           for e in piece]
    assert got == [{"n": i} for i in range(10)] and made == [32]
    path = _write(tmp_path, b'[{"n": "' + b"x" * 40 + b'"}, {"n": 1}]')
    with pytest.raises(msgspec.DecodeError) as e:
        list(_json.iter_file_chunks(path, *_elements(path), msgspec.json.decode, lambda: None))
    assert str(e.value) == "no element boundary in a block"


@pytest.mark.parametrize("out, piece, inside", [
    (b'["' + b"\\" * 65, b'"' + SP + b'x"]', True),  # 65 backslashes: the quote is escaped
    (b'["' + b"\\" * 64, b'"' + SP + b'x"]', False),  # 64: it closes the string
    (b'["' + b"\\" * 5000, b'"' + SP + b'x"]', False),
    (b'["a\\', b"\\" * 65 + b'"' + SP + b'x"]', False),  # 1 + 65 = 66: it closes
    (b'["a\\', b"\\" * 64 + b'"' + SP + b'x"]', True)])  # 1 + 64 = 65: escaped
def test_squeeze_an_escape_cut_after_many_backslashes(out, piece, inside):
    """The backslashes before a quote cut between two pieces are all counted, not only the last 64 of the
    kept text or the first 64 of the piece (a string of 32 escaped backslashes then an escaped quote)."""
    kept = bytearray(out)
    squeeze = _json._Squeeze(kept)
    assert squeeze.piece(out, 0, 1.0) == out
    at = piece.index(SP)
    assert squeeze.piece(piece, len(kept), 100.0) == (piece if inside else piece[:at + 1] + piece[at + len(SP):])


@pytest.mark.parametrize("text, end, want", [
    (b"x", 1, 0), (b"\\\\\\", 3, 3), (b"a" + b"\\" * 64, 65, 64), (b"\\" * 64, 64, 64), (b"a" + b"\\" * 65, 66, 65),
    (b"a" + b"\\" * 5000, 5001, 5000), (b"\\" * 5000, 5000, 5000), (b"a\\\\b", 3, 2), (b"ab\\", 2, 0)])
def test_backslashes_before(text, end, want):
    assert _json._backslashes_before(bytearray(text), end) == want
