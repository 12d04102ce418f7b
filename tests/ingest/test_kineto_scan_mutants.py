"""kineto/scan.py by hand (issue 46, mutation testing): the field lists the scanner is checked against are
schema.py's, computed again here (the check itself runs at import, before any test); a grid's product past
2**53 keeps every digit through the scanner's lookup table and through the typed decode."""
import json

import pytest

from canning_tb.ingest.kineto import read as kineto_read
from canning_tb.ingest.kineto import scan as kineto_scan

pytestmark = pytest.mark.compiled("_kineto_scan")


def test_the_schema_fields_are_the_scanners():
    """The C scanner's own lists (native/kineto_scan.c, not this module) against _schema_fields: every list
    the same, by name."""
    ours = kineto_scan._schema_fields()
    theirs = kineto_scan._scan.fields()
    assert sorted(ours) == sorted(theirs) == ["float", "int", "raw", "text", "top"]
    for k in theirs:
        assert sorted(ours[k]) == sorted(theirs[k]), k
    assert "External id" in ours["int"] and "grid" in ours["raw"] and "Call stack" in ours["text"]
    assert ours["top"] == ["ph", "cat", "name", "pid", "tid", "ts", "dur", "args"]


@pytest.mark.parametrize("scan", ["1", "0"])
def test_a_grid_product_past_2_to_the_53(tmp_path, monkeypatch, scan):
    """(2**27 + 1) x (2**27 + 1) x 1 = 2**54 + 2**28 + 1 = 18,014,398,777,917,441 blocks, which float64 cannot
    hold (55 bits from the highest to the lowest)."""
    monkeypatch.setenv("CANNING_KINETO_SCAN", scan)
    path = tmp_path / "g.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 1, "ts": 1, "dur": 1,
         "args": {"grid": [2 ** 27 + 1, 2 ** 27 + 1, 1]}},
        {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 1, "ts": 2, "dur": 1, "args": {"grid": [3, 1, 1]}},
    ]}))
    t = kineto_read.read_kineto(str(path))
    assert t.events["blocks"].tolist() == [18_014_398_777_917_441, 3]


def test_the_switch_turns_the_scanner_off(tmp_path, monkeypatch):
    """CANNING_KINETO_SCAN=0: no piece goes to the scanner; unset (or any other value): every piece does."""
    path = tmp_path / "s.pt.trace.json"
    path.write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]}')
    real, calls = kineto_scan.scan, []
    monkeypatch.setattr(kineto_read.kineto_scan, "scan", lambda piece: calls.append(1) or real(piece))
    for value, scanned in (("0", False), (None, True), ("1", True)):
        calls.clear()
        if value is None:
            monkeypatch.delenv("CANNING_KINETO_SCAN", raising=False)
        else:
            monkeypatch.setenv("CANNING_KINETO_SCAN", value)
        assert kineto_read.read_kineto(str(path)).strings.values == ["a", "cpu_op"]
        assert bool(calls) is scanned, value
