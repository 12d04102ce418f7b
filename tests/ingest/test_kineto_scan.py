"""The compiled Kineto scanner (ingest/native/kineto_scan.c) against the typed msgspec decode it stands in for:
the same EventTable, column by column, on every Kineto fixture (the second reading is the reader with
CANNING_KINETO_SCAN=0); its fields are schema.py's; what the typed decode would reject or coerce it
declines (None), so that path keeps deciding; its floats are Python's float() bit for bit."""
import glob
import os
import random
import struct

import numpy as np
import pytest

from canning_tb.ingest.kineto import read as kineto_read
from canning_tb.ingest.kineto import scan as kineto_scan

from conftest import FIXTURES as _FIXTURES

FIXTURES = str(_FIXTURES)  # the repository's copy (tests/fixtures), or CANNING_FIXTURES
TRACES = sorted(p for p in glob.glob(os.path.join(FIXTURES, "**", "*.json*"), recursive=True)
                if "ascend" not in p.lower() and "expected" not in p and p.endswith((".json", ".json.gz")))
pytestmark = pytest.mark.compiled("_kineto_scan")  # skipped where the Kineto scanner is not built


def _reading(path, monkeypatch, scan):
    monkeypatch.setenv("CANNING_KINETO_SCAN", "1" if scan else "0")
    return kineto_read.read_kineto(path)


@pytest.mark.parametrize("path", TRACES, ids=lambda p: os.path.relpath(p, FIXTURES))
def test_the_same_table_as_the_typed_decode(path, monkeypatch):
    taken = []
    real = kineto_scan.scan
    monkeypatch.setattr(kineto_read.kineto_scan, "scan", lambda piece: taken.append(real(piece)) or taken[-1])
    a = _reading(path, monkeypatch, True)
    b = _reading(path, monkeypatch, False)
    for part in ("events", "memory"):
        x, y = getattr(a, part), getattr(b, part)
        assert set(x) == set(y)
        for k in x:
            assert x[k].dtype == y[k].dtype, (part, k)
            assert np.array_equal(x[k], y[k], equal_nan=x[k].dtype.kind == "f"), (part, k)
    assert a.strings.values == b.strings.values
    assert set(a.metrics) == set(b.metrics)
    for k in a.metrics:
        assert np.array_equal(a.metrics[k], b.metrics[k], equal_nan=True)
    assert [p.message for p in a.problems] == [p.message for p in b.problems]
    assert repr(a.meta) == repr(b.meta)
    if "amd_trace" not in path:  # its "stream": "0x0" is no int: declined, as tested below
        assert taken and all(t is not None for t in taken), path


def test_its_fields_are_the_schema_s():
    assert kineto_scan._AGREES and kineto_scan.enabled()


def _one(text: bytes):
    return kineto_scan._scan.scan(b"[" + text + b"]")


@pytest.mark.parametrize("event", [
    b'{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"stream": "0x0"}}',  # text int
    b'{"ph": "X", "cat": null, "name": "k", "ts": 1, "dur": 1}',  # cat is a str
    b'{"ph": "X", "cat": "c", "name": 5, "ts": 1, "dur": 1}',
    b'{"ph": "X", "cat": "c", "name": "k", "ts": null, "dur": 1}',
    b'{"ph": "X", "cat": "c", "name": "k", "ts": 1, "dur": 1, "args": {"device": 1.0}}',
    b'{"ph": "X", "cat": "c", "name": "k", "ts": 1, "dur": 1, "args": {"flops": true}}',
    b'{"ph": "X", "cat": "c", "name": "k", "ts": 1, "dur": 1, "args": {"grid": 3}}',
    b'{"ph": "X", "cat": "c", "name": "k", "ts": 1, "dur": 1, "args": []}',
    b'{"ph": "X", "ph": "X", "cat": "c", "name": "k", "ts": 1, "dur": 1}',  # a repeated field
    b'{"ph": "X", "cat": "c", "name": "k", "ts": 1, "dur": 1, "args": {"stream": 1, "stream": 2}}',
    b'{"ph": "\\u0058", "cat": "c", "name": "k", "ts": 1, "dur": 1}',  # an escaped phase
    b'{"ph": "X", "cat": "c", "name": "k", "ts": 1, "dur": 1, "args": {"str\\u0065am": 1}}',  # an escaped key
    b'{"ph": "X", "cat": "c", "name": "k", "pid": 1.5, "ts": 1, "dur": 1}',
    b'{"ph": "X", "cat": "c", "name": "k", "pid": 99999999999999999999, "ts": 1, "dur": 1}',  # past int64
    b'{"ph": "X", "cat": "c", "name": "k", "ts": 9007199254740993, "dur": 1}',  # an int past 2**53
    b'{"ph": "X", "cat": "c", "name": "k", "ts": 1e400, "dur": 1}',  # not finite
    b'{"ph": "X", "cat": "c", "name": "k", "ts": 1, "dur": 1, "args": {"stream": -9223372036854775808}}',  # the absent mark
    b'{"ph": "i", "name": "[memory]", "ts": 1, "args": {"Bytes": "512"}}',  # an instant's text int
    b'7',  # an element that is no object
    b'{"ph": "X", "cat": "c", "name": "k", "ts": 1, "dur": 1',  # cut
])
def test_declines_what_the_typed_decode_must_decide(event):
    assert _one(event) is None


def test_takes_the_plain_shapes_by_hand():
    got = _one(b'{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": "stream 3", '
               b'"ts": 1694128201435377, "dur": 2.5, "args": {"External id": 11, "Input Dims": [[2, 3], [3]], '
               b'"Call stack": null, "grid": [4, 2, 1], "Ev Idx": {"deep": [1, 2]}}}, '
               b'{"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "x"}}, '
               b'{"ph": "s", "id": 1, "ts": 3, "cat": "ac2g"}, '
               b'{"ph": "f", "cat": "ac2g", "pid": 0, "tid": 7, "ts": -0}')
    assert got["n"] == 2 and bytes(got["ph"]) == b"Xf"
    assert got["strings"] == [b'"cpu_op"', b'"aten::mm"', b'"stream 3"', b'"ac2g"']
    assert np.frombuffer(got["ts"], np.float64).tolist() == [1694128201435377.0, 0.0]
    assert np.frombuffer(got["dur"], np.float64)[0] == 2.5 and np.isnan(np.frombuffer(got["dur"], np.float64)[1])
    assert np.frombuffer(got["pid"], np.int64).tolist() == [7, 0]
    assert np.frombuffer(got["tid_ref"], np.int32).tolist() == [2, -1]
    ints = np.frombuffer(got["ints"], np.int64).reshape(2, -1)
    assert ints[0, kineto_scan.column("int", "External id")] == 11
    assert (np.delete(ints[0], kineto_scan.column("int", "External id")) == np.iinfo(np.int64).min).all()
    assert got["raws"] == [b"[[2, 3], [3]]", b"[4, 2, 1]"]
    assert np.frombuffer(got["texts"], np.int32).tolist() == [-1] * 12  # a null stack is None
    assert len(got["other"]) == 16  # the metadata event's span only: "s" is skipped


def test_instants_by_hand(tmp_path, monkeypatch):
    """Memory records and the window's marks come as rows ("i" and "I"), read to the numbers worked out here
    by hand: absent args take schema.Args's defaults, the last of each mark wins, and the typed decode
    reads the same (the piece is taken by the scanner, not declined)."""
    path = tmp_path / "w.pt.trace.json"
    path.write_text('{"traceEvents": ['
                    '{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 100, "dur": 50},'
                    '{"ph": "i", "s": "t", "name": "Iteration Start: PyTorch Profiler", "pid": 1, "tid": 1, "ts": 90},'
                    '{"ph": "i", "s": "t", "name": "Iteration Start: PyTorch Profiler", "pid": 1, "tid": 1, "ts": 95},'
                    '{"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 110.5, "args": {'
                    '"Device Type": 1, "Device Id": 0, "Addr": 123, "Bytes": 512, "Total Allocated": 1024, '
                    '"Total Reserved": 2048}},'
                    '{"ph": "I", "name": "[memory]", "pid": 1, "tid": 1, "ts": 120, "args": {"Bytes": -512}},'
                    '{"ph": "i", "s": "t", "name": "Record Window End", "pid": 1, "tid": 1, "ts": 300}'
                    ']}')
    taken = []
    real = kineto_scan.scan
    monkeypatch.setattr(kineto_read.kineto_scan, "scan", lambda piece: taken.append(real(piece)) or taken[-1])
    a = _reading(str(path), monkeypatch, True)
    assert taken and all(t is not None for t in taken)
    b = _reading(str(path), monkeypatch, False)
    mem = a.memory
    assert mem["ts"].tolist() == [110_500, 120_000] and mem["bytes"].tolist() == [512, -512]
    assert mem["addr"].tolist() == [123, -1] and mem["allocated"].tolist() == [1024, -1]
    assert mem["reserved"].tolist() == [2048, -1]
    assert a.strings[int(mem["device"][0])] == "cuda:0"
    assert (a.meta.start_ns, a.meta.end_ns) == (95_000, 300_000)
    for k in mem:
        assert np.array_equal(mem[k], b.memory[k]), k
    assert repr(a.meta) == repr(b.meta)


def test_floats_are_float_bit_for_bit():
    """The fast path (an exact mantissa over an exact power of ten) and the slow one both round as
    float() does: 20k random decimal texts of the lengths profilers write, and the edges."""
    rng = random.Random(7)
    texts = ["0.1", "5382617741673.631", "9007199254740992.5", "0.30000000000000004", "-0.0", "1e-7",
             "123456789012345678.9", "4503599627370497.5"]
    for _ in range(20_000):
        whole = str(rng.randrange(10 ** rng.randrange(1, 17)))
        texts.append(f"{'-' if rng.random() < 0.2 else ''}{whole}.{rng.randrange(10 ** 6):0{rng.randrange(1, 7)}d}")
    body = b",".join(b'{"ph": "X", "cat": "c", "ts": %s, "dur": 0}' % t.encode() for t in texts)
    got = kineto_scan._scan.scan(b"[" + body + b"]")
    ts = np.frombuffer(got["ts"], np.float64)
    for t, v in zip(texts, ts.tolist()):
        assert struct.pack("<d", v) == struct.pack("<d", float(t)), t
