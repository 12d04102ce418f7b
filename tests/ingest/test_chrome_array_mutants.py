"""ingest/chrome_array.py by hand (issue 46, mutation testing): a Chrome trace file goes to its reader by its
first JSON byte (an object: the Kineto reader; an array: torch_npu's trace reader), and a bare array becomes
a table whose meta says what the events say. Tiny hand-written traces; every expected value read off them."""
import gzip
import json

import pytest

from canning_tb.ingest import chrome_array
from canning_tb.ingest.chrome_array import read_chrome_array, read_chrome_trace, starts_with_array
from canning_tb.ingest.table import InputError

PY, HW = 100, 7
ARRAY = [{"ph": "M", "name": "process_name", "pid": PY, "tid": 0, "args": {"name": "Python"}},
         {"ph": "M", "name": "thread_name", "pid": PY, "tid": 1, "args": {"name": "main"}},
         {"ph": "M", "name": "process_name", "pid": HW, "tid": 0, "args": {"name": "Ascend Hardware"}},
         {"ph": "M", "name": "thread_name", "pid": HW, "tid": 2, "args": {"name": "Stream 2"}},
         {"ph": "X", "name": "aten::mm", "pid": PY, "tid": 1, "ts": "10.000", "dur": 5, "cat": "cpu_op"},
         {"ph": "X", "name": "MatMul_1", "pid": HW, "tid": 2, "ts": "12.500", "dur": "2.25",
          "args": {"Task Type": "AI_CORE"}}]


def _write(tmp_path, data, name="w3.1234.pt.trace.json"):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())
    return str(path)


@pytest.mark.parametrize("head, want", [
    (b"[", True), (b"\xef\xbb\xbf \t\r\n[", True), (b"{", False), (b"", False), (b" x[", False),
    (b"\n\n{\"traceEvents\": [", False)])
def test_starts_with_array(tmp_path, head, want):
    assert starts_with_array(_write(tmp_path, head)) is want


def test_starts_with_array_looks_into_gzip(tmp_path):
    assert starts_with_array(_write(tmp_path, gzip.compress(b"  [1]"), "a.json.gz"))
    assert not starts_with_array(_write(tmp_path, gzip.compress(b'{"a": [1]}'), "b.json.gz"))


def test_a_bare_array_is_a_table_of_its_events(tmp_path):
    """Two duration events (µs text to ns: 10.000 -> 10,000, dur 5 -> 5,000; 12.500 -> 12,500, 2.25 ->
    2,250); the worker is the file name before its first dot; the names of processes and threads as the M
    events say; the device of the hardware process (its pid & 31: 7 & 31 = 7); the file itself the source."""
    path = _write(tmp_path, ARRAY)
    table = read_chrome_trace(path)
    assert table.meta.format == "kineto" and table.meta.worker == "w3"
    assert sorted(zip(table.events["ts"].tolist(), table.events["dur"].tolist())) == [(10_000, 5_000), (12_500, 2_250)]
    assert table.meta.process_names == {PY: "Python", HW: "Ascend Hardware"}
    assert table.meta.thread_names == {f"{PY}:1": "main", f"{HW}:2": "Stream 2"}
    assert table.meta.devices == [{"kind": "npu", "index": 7, "name": "Ascend"}]
    assert table.meta.source_files == [path]
    assert [p for p in table.problems if p.severity == "error"] == []
    same = read_chrome_array(tmp_path / "w3.1234.pt.trace.json")  # a Path is read as its text
    assert same.meta.source_files == [path] and same.meta.worker == "w3"


def test_an_object_goes_to_the_kineto_reader(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(chrome_array, "read_kineto", lambda p: asked.append(p) or "kineto")
    monkeypatch.setattr(chrome_array, "read_chrome_array", lambda p: asked.append(("array", p)) or "array")
    obj, arr = _write(tmp_path, b'{"traceEvents": []}', "o.json"), _write(tmp_path, b" [ ]", "a.json")
    assert read_chrome_trace(obj) == "kineto" and read_chrome_trace(arr) == "array"
    assert asked == [obj, ("array", arr)]


def test_bare_arrays_that_give_no_table(tmp_path):
    """A gzipped array is refused by its name (torch_npu writes it plain); an array of metadata only has no
    duration event; text that is no JSON names the reader's error; an empty array names no event."""
    path = _write(tmp_path, gzip.compress(json.dumps(ARRAY).encode()), "w.pt.trace.json.gz")
    with pytest.raises(InputError) as e:
        read_chrome_array(path)
    assert (e.value.file, e.value.problem) == (
        path, "a gzipped bare-array trace: gunzip it first (torch_npu writes it plain)")
    path = _write(tmp_path, ARRAY[:4])
    with pytest.raises(InputError) as e:
        read_chrome_array(path)
    assert (e.value.file, e.value.problem) == (path, "a JSON array without any duration event")
    path = _write(tmp_path, b'[{"ph": "X", "ts": ')
    with pytest.raises(InputError) as e:
        read_chrome_array(path)
    assert e.value.file == path and e.value.problem.startswith("not valid JSON (truncated or still being written?)")


def test_starts_with_array_edges(tmp_path):
    """Only the first 4096 bytes are looked at; an X is no whitespace."""
    assert not starts_with_array(_write(tmp_path, b" " * 4096 + b"["))
    assert starts_with_array(_write(tmp_path, b" " * 4095 + b"["))
    assert not starts_with_array(_write(tmp_path, b"X["))


def test_warnings_name_the_file_by_its_base_name(tmp_path):
    """A byte 0xff in a name: one warning, naming the file as w3.1234.pt.trace.json (not its path)."""
    path = _write(tmp_path, json.dumps(ARRAY).encode().replace(b"aten::mm", b"aten::m\xff"))
    table = read_chrome_trace(path)
    assert [(p.file, p.severity) for p in table.problems] == [("w3.1234.pt.trace.json", "warning")]
