"""Reading trace_view.json (ingest/ascend/trace/read.py, decode.py's file plan and pieces): the forms of the file
(a bare array, BOM and whitespace around it, the {"traceEvents": [...]} form, a file big enough to be read in
blocks), what is refused and the Problem it gives, and the warnings of a read; with the compiled scanner on and
off (CANNING_TRACE_SCAN), each expected value worked out by hand from the text written here (the mutation round
of issue 46)."""
import json

import pytest

from canning_tb.ingest._json import TOO_DEEP
from canning_tb.ingest.ascend.trace import decode as dec
from canning_tb.ingest.ascend.trace.read import read_trace
from canning_tb.ingest.table import Strings

NO_ARRAY = "expected a JSON array of trace events"


@pytest.fixture(params=["1", "0"], ids=["scanner", "msgspec"])
def scan(request, monkeypatch):
    monkeypatch.setenv("CANNING_TRACE_SCAN", request.param)


def _read(tmp_path, data: bytes):
    path = tmp_path / "trace_view.json"
    path.write_bytes(data)
    strings, problems = Strings(), []
    td = read_trace(str(path), "tv.json", problems, strings)
    return td, strings, [(p.file, p.message, p.severity) for p in problems]


def _x(k: int) -> dict:
    return {"ph": "X", "name": f"op{k}", "pid": 1, "tid": 1, "ts": f"{k}.001", "dur": "2.5"}


def _names_ts(td, strings):
    return [strings.values[i] for i in td.events["name"].tolist()], td.events["ts"].tolist()


@pytest.mark.parametrize("head, tail, wrap", [
    (b"", b"", False), (b"\xef\xbb\xbf \r\n\t", b" \r\n\t", False), (b"\xef\xbb\xbf \n", b"\n", True),
    (b"", b"", True)])
def test_the_forms_of_a_small_file(tmp_path, scan, head, tail, wrap):
    """Two events, as a bare array or inside {"traceEvents": ...}, with a BOM and whitespace before and
    whitespace after: "0.001" µs is 1 ns, "1.001" 1,001 ns;
    dur "2.5" µs is 2,500 ns; no problem."""
    events = [_x(0), _x(1)]
    body = json.dumps({"other": [1], "traceEvents": events} if wrap else events).encode()
    td, s, problems = _read(tmp_path, head + body + tail)
    assert problems == []
    assert _names_ts(td, s) == (["op0", "op1"], [1, 1001]) and td.events["dur"].tolist() == [2500, 2500]


def test_a_file_read_in_blocks_reads_every_event(tmp_path, scan):
    """3,000 events (about 250 KB: past the 2 x 64 KiB a file needs to be planned and read in blocks) after a
    BOM and whitespace, whitespace after: every event, in file order, ts k.001 µs = 1,000 k + 1 ns."""
    n = 3000
    text = b"\xef\xbb\xbf \n" + json.dumps([_x(k) for k in range(n)]).encode() + b" \n\n"
    assert len(text) > 2 * (1 << 16)
    td, s, problems = _read(tmp_path, text)
    assert problems == []
    names, ts = _names_ts(td, s)
    assert names == [f"op{k}" for k in range(n)] and ts == [1000 * k + 1 for k in range(n)]


def test_a_big_wrapped_file_is_read_whole(tmp_path, scan):
    """The {"traceEvents": [...]} form past 128 KiB (no plan: read in memory): every event."""
    n = 2000
    text = json.dumps({"traceEvents": [_x(k) for k in range(n)]}).encode()
    assert len(text) > 2 * (1 << 16)
    td, s, problems = _read(tmp_path, text)
    assert problems == [] and _names_ts(td, s)[1] == [1000 * k + 1 for k in range(n)]


@pytest.mark.parametrize("data, message", [
    (b"5", NO_ARRAY), (b'{"traceEvents": 5}', NO_ARRAY), (b'{"a": 1}', NO_ARRAY),
    (b'{"traceEvents": {"x": 1}}', NO_ARRAY),
    (b'  "text"  ', NO_ARRAY),
    (b'[{"ph":"X"', "not valid JSON (truncated or still being written?): truncated"),
    (b"[" * 2000 + b"]" * 2000, TOO_DEEP)])
def test_what_is_no_array_of_events_is_refused(tmp_path, scan, data, message):
    """Nothing read (None) and one error naming the file: a number, an object without traceEvents or whose
    traceEvents is no array, a text; an array cut short; arrays nested 2,000 deep."""
    td, _, problems = _read(tmp_path, data)
    assert td is None and problems == [("tv.json", message, "error")]


def test_a_big_file_cut_short_is_refused(tmp_path, scan):
    """Past 128 KiB, no closing ']': not planned (it must end in ']'), read in memory: truncated."""
    text = json.dumps([_x(k) for k in range(3000)]).encode()[:-1]
    td, _, problems = _read(tmp_path, text)
    assert td is None and len(problems) == 1 and problems[0][1].startswith("not valid JSON") \
        and problems[0][2] == "error"


def test_a_missing_file_and_one_past_the_cap(tmp_path, scan, monkeypatch):
    """No file: "cannot read: " and the OSError as Python prints it (errno, text, path), naming the file as shown;
    a 40-byte file with CANNING_MAX_TRACE_BYTES=10: refused before reading, and the Problem says so (an error)."""
    strings, problems = Strings(), []
    path = str(tmp_path / "none.json")
    assert read_trace(path, "tv.json", problems, strings) is None
    assert [(p.file, p.message, p.severity) for p in problems] == [
        ("tv.json", f"cannot read: [Errno 2] No such file or directory: '{path}'", "error")]
    monkeypatch.setenv("CANNING_MAX_TRACE_BYTES", "10")
    td, _, problems = _read(tmp_path, json.dumps([_x(0)]).encode())
    assert td is None and len(problems) == 1 and problems[0][2] == "error" and "10" in problems[0][1]


def test_the_warnings_of_a_read(tmp_path, scan):
    """Events without a usable time: one without ts, one with ts "x", and the element 7 (no object): 3 skipped.
    A name with the byte 0xff (no UTF-8): replaced, one warning. One torch_to_npu flow whose start no host op
    encloses: 1 unbound. Each a warning; the two good events are read (op0, op1)."""
    bad = [{"ph": "X", "name": "a", "pid": 1, "tid": 1}, {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": "x"}]
    flows = [{"ph": "s", "name": "torch_to_npu", "cat": "async_npu", "id": 3, "pid": 1, "tid": 1, "ts": "50.000"},
             {"ph": "f", "name": "torch_to_npu", "cat": "async_npu", "id": 3, "pid": 2, "tid": 2, "ts": "60.000"}]
    text = json.dumps([_x(0), *bad, 7, *flows, {**_x(1), "name": "op1\u00e9"}]).encode().replace(b"\\u00e9", b"\xff")
    td, s, problems = _read(tmp_path, text)
    assert problems == [("tv.json", "3 event(s) without a usable timestamp skipped", "warning"),
                        ("tv.json", "not valid UTF-8 in places; undecodable bytes replaced", "warning"),
                        ("tv.json", "1 torch_to_npu flow(s) could not be bound to a host op and a device task",
                         "warning")]
    assert _names_ts(td, s) == (["op0", "op1\ufffd"], [1, 1001])


def test_the_plan_of_a_file(tmp_path):
    """plan_file: '[' after a BOM and 3 blanks starts at byte 3 + 3 = 6; the end is just past ']' before the 2
    trailing blanks (size - 2); a file under 2 x 64 KiB, one not ending in ']', one starting with the gzip magic,
    or an object: no plan (None)."""
    body = json.dumps([_x(k) for k in range(3000)]).encode()
    path = tmp_path / "a.json"
    path.write_bytes(b"\xef\xbb\xbf \t\n" + body + b"\r\n")
    plan = dec.plan_file(str(path))
    assert (plan.start, plan.end) == (6, 6 + len(body)) and plan.path == str(path)
    for data in (json.dumps([_x(0)]).encode(), body[:-1] + b" ", b"\x1f\x8b" + body, b'{"a": ' + body + b"}"):
        path.write_bytes(data)
        assert dec.plan_file(str(path)) is None


def test_a_plan_is_read_as_exactly_its_elements(tmp_path):
    """A file of exactly 2 x 64 KiB is planned (the bound is inclusive): padding events made to fill it."""
    one = json.dumps(_x(0)).encode()
    events, size = [], 2
    k = 0
    while size + len(one) + 1 < 2 * (1 << 16):
        events.append(json.dumps(_x(k)).encode())
        size += len(events[-1]) + 1
        k += 1
    text = b"[" + b",".join(events) + b"]"
    text = text[:-1] + b" " * (2 * (1 << 16) - len(text)) + b"]"
    path = tmp_path / "a.json"
    path.write_bytes(text)
    assert len(text) == 2 * (1 << 16)
    plan = dec.plan_file(str(path))
    assert plan is not None and (plan.start, plan.end) == (0, len(text))


@pytest.mark.parametrize("wrap", [False, True])
def test_many_blanks_before_the_array(tmp_path, scan, wrap):
    """100 blanks (a BOM, then spaces and line ends) before the array or the object: still JSON, read as
    without them (the two events, 1 and 1,001 ns)."""
    events = [_x(0), _x(1)]
    body = json.dumps({"traceEvents": events} if wrap else events).encode()
    head = b"\xef\xbb\xbf" + b" \n" * 50
    td, s, problems = _read(tmp_path, head + body)
    assert problems == [] and _names_ts(td, s) == (["op0", "op1"], [1, 1001])
