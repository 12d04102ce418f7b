"""Damaged copies of a real trace: a clear InputError when nothing can be read, otherwise a table
with warnings. Each case damages param/dlrm_8ranks rank 0 (a real Kineto file) in one way."""
import gzip
import json

import numpy as np
import pytest

from canning_tb.ingest.kineto.read import read_kineto
from canning_tb.ingest.table import NONE, InputError, Kind
from conftest import fixture_path

BASE = ("param", "dlrm_8ranks", "worker0_step_12.1694128201545.pt.trace.json.gz")


@pytest.fixture(scope="module")
def raw():
    return gzip.decompress(fixture_path(*BASE).read_bytes())


@pytest.fixture
def doc(raw):
    return json.loads(raw)


def n_complete(doc):
    return sum(1 for e in doc["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X")


def write(tmp_path, data, name="t.pt.trace.json"):
    p = tmp_path / name
    p.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())
    return str(p)


def cpu_ops(doc):
    return [e for e in doc["traceEvents"] if e.get("cat") == "cpu_op"]


def warnings_of(t):
    assert all(p.severity == "warning" for p in t.problems), t.problems
    return " | ".join(p.message for p in t.problems)


def test_truncated_json(tmp_path, raw):
    with pytest.raises(InputError, match=r"not JSON: unexpected end at byte \d+") as e:
        read_kineto(write(tmp_path, raw[: len(raw) // 2]))
    assert e.value.file.endswith("t.pt.trace.json")


def test_truncated_gzip(tmp_path):
    gz = fixture_path(*BASE).read_bytes()
    with pytest.raises(InputError, match="truncated gzip stream"):
        read_kineto(write(tmp_path, gz[: len(gz) // 2], "t.pt.trace.json.gz"))


def test_corrupt_gzip(tmp_path):
    gz = bytearray(fixture_path(*BASE).read_bytes())
    gz[100:140] = b"\x00" * 40
    with pytest.raises(InputError, match="gzip"):
        read_kineto(write(tmp_path, bytes(gz), "t.pt.trace.json.gz"))


def test_empty_files(tmp_path):
    with pytest.raises(InputError, match="empty file"):
        read_kineto(write(tmp_path, b""))
    with pytest.raises(InputError, match="empty"):
        read_kineto(write(tmp_path, gzip.compress(b""), "e.json.gz"))
    with pytest.raises(InputError, match="cannot open"):
        read_kineto(str(tmp_path / "missing.json"))


def test_wrong_top_level(tmp_path, doc):
    with pytest.raises(InputError, match="expected an object with traceEvents, got a list"):
        read_kineto(write(tmp_path, doc["traceEvents"]))
    with pytest.raises(InputError, match="got a number"):
        read_kineto(write(tmp_path, b" 42 "))
    with pytest.raises(InputError, match="traceEvents is not a list"):
        read_kineto(write(tmp_path, {"traceEvents": {"ph": "X"}}))
    with pytest.raises(InputError, match="no traceEvents"):
        read_kineto(write(tmp_path, {"schemaVersion": 1}))


def test_events_missing_fields(tmp_path, doc):
    n = n_complete(doc)
    ops = cpu_ops(doc)
    for e in ops[:3]:
        del e["ts"]
    for e in ops[3:5]:
        del e["name"]
    del ops[5]["dur"]
    doc["traceEvents"][10:10] = [42, "x", None, ["X"]]  # not events at all
    t = read_kineto(write(tmp_path, doc))
    t.check()
    assert len(t) == n - 6
    w = warnings_of(t)
    assert "6 events" in w and "4 malformed" in w


def test_nan_infinity_na_tokens(tmp_path, doc):
    n = n_complete(doc)
    ops = cpu_ops(doc)
    ops[0]["dur"] = "@NAN@"
    ops[1]["args"]["Sequence number"] = "@INF@"
    ops[2]["args"]["External id"] = "@NA@"
    k = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")
    k["args"]["est. achieved occupancy %"] = "@MINF@"
    text = json.dumps(doc).replace('"@NAN@"', "NaN").replace('"@INF@"', "Infinity") \
        .replace('"@NA@"', "N/A").replace('"@MINF@"', "-Infinity")
    t = read_kineto(write(tmp_path, text.encode()))
    t.check()
    assert len(t) == n - 1  # the NaN duration cannot be used
    w = warnings_of(t)
    assert "NaN/Infinity/N/A" in w and "1 events" in w
    i = np.nonzero(t.events["ts"] == round(ops[2]["ts"] * 1000))[0]
    assert len(i) >= 1 and NONE in t.events["external_id"][i].tolist()


def test_negative_durations_clamped(tmp_path, doc):
    n = n_complete(doc)
    ops = cpu_ops(doc)
    ops[0]["dur"] = -5
    ops[1]["dur"] = -0.5
    t = read_kineto(write(tmp_path, doc))
    assert len(t) == n and t.events["dur"].min() == 0
    assert "2 negative durations" in warnings_of(t)


def test_non_numeric_ts(tmp_path, doc):
    n = n_complete(doc)
    ops = cpu_ops(doc)
    ops[0]["ts"] = "abc"
    ops[1]["ts"] = "1694128201435418.5"  # numbers written as strings (torch_npu does) are read
    ops[2]["ts"] = [1]
    t = read_kineto(write(tmp_path, doc))
    t.check()
    assert len(t) == n - 2
    assert 1694128201435418500 in t.events["ts"].tolist()
    assert "2 events" in warnings_of(t)


def test_invalid_utf8(tmp_path, doc):
    n = n_complete(doc)
    cpu_ops(doc)[0]["name"] = "@BAD@"
    data = json.dumps(doc).encode().replace(b"@BAD@", b"bad\xff\xfename")
    t = read_kineto(write(tmp_path, data))
    assert len(t) == n
    assert "bad\ufffd\ufffdname" in t.strings.values
    assert "UTF-8" in warnings_of(t)


def test_ints_beyond_int64(tmp_path, doc):
    n = n_complete(doc)
    ops = cpu_ops(doc)
    ops[0]["args"]["Comms Id"] = 2 ** 70
    ops[1]["args"]["External id"] = 2 ** 65
    ops[2]["pid"] = 2 ** 70
    k = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")
    k["args"]["correlation"] = -(2 ** 70)
    k["args"]["grid"] = [2 ** 40, 2 ** 40, 1]
    t = read_kineto(write(tmp_path, doc))
    t.check()
    assert len(t) == n
    row = np.nonzero(t.events["ts"] == round(ops[1]["ts"] * 1000))[0]
    assert NONE in t.events["external_id"][row].tolist()
    kr = np.nonzero((t.events["ts"] == round(k["ts"] * 1000)) & (t.events["kind"] == Kind.KERNEL))[0]
    assert t.events["correlation"][kr].tolist() == [NONE] and t.events["blocks"][kr].tolist() == [NONE]
    assert str(2 ** 70) in t.meta.process_names.values()


def test_control_characters_in_strings(tmp_path, doc):
    n = n_complete(doc)
    cpu_ops(doc)[0]["name"] = "@CTL@"
    data = json.dumps(doc).encode().replace(b"@CTL@", b"a\x01b\tc\nd")
    t = read_kineto(write(tmp_path, data))
    assert len(t) == n
    assert "a b c d" in t.strings.values
    assert "control characters" in warnings_of(t)


def test_wrong_types_are_coerced(tmp_path, doc):
    n = n_complete(doc)
    k = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")
    k["args"]["device"] = "0"
    k["args"]["stream"] = 7.0
    k["tid"] = "stream 7"
    t = read_kineto(write(tmp_path, doc))
    assert len(t) == n
    r = np.nonzero((t.events["ts"] == round(k["ts"] * 1000)) & (t.events["kind"] == Kind.KERNEL))[0]
    assert t.events["device"][r].tolist() == [0] and t.events["stream"][r].tolist() == [7]
    assert t.events["tid"][r].tolist() == [7]


def test_overlapping_events_kept(tmp_path, doc):
    n = n_complete(doc)
    e = dict(cpu_ops(doc)[0])
    e["dur"] = e["dur"] * 3
    doc["traceEvents"].append(e)
    t = read_kineto(write(tmp_path, doc))
    assert len(t) == n + 1


def test_rank_missing_from_distributed_info(tmp_path, doc):
    del doc["distributedInfo"]["rank"]
    t = read_kineto(write(tmp_path, doc))
    assert t.meta.rank == 0 and t.meta.world_size == 8
    assert "rank" in warnings_of(t)
