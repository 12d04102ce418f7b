"""Fuzz target: _kineto_scan.scan, the Kineto traceEvents scanner, on any bytes (seeds: the pieces the
Kineto reader hands it, cut from the fixtures by seeds.py). An answer is checked by _scanned. The module's
other function, fields(), takes no input: it is called once here and its answer checked."""
import sys

import atheris

import _scanned
from _load import exact, module

scanner = module("kineto_scan")
FIELDS = scanner.fields()
assert sorted(FIELDS) == ["float", "int", "raw", "text", "top"] and all(
    isinstance(w, str) and w for names in FIELDS.values() for w in names), FIELDS
NI, NF, NT, NR = (len(FIELDS[k]) for k in ("int", "float", "text", "raw"))
SIZES = {"ph": 1, "cat": 4, "name": 4, "pid": 8, "tid": 8, "pid_ref": 4, "tid_ref": 4, "ts": 8, "dur": 8,
         "ints": 8 * NI, "floats": 8 * NF, "texts": 4 * NT, "raws_of": 4 * NR, "span": 16}


def TestOneInput(data: bytes) -> None:
    got = scanner.scan(exact(data))
    if got is None:
        return
    n = got["n"]
    events = _scanned.strict_json(data)
    others = len(got["other"]) // 16
    assert isinstance(events, list) and n + others <= len(events) and all(type(e) is dict for e in events)
    _scanned.widths(got, n, SIZES)
    for key in ("cat", "name", "pid_ref", "tid_ref", "texts"):
        _scanned.ids(got, key, got["strings"])
    _scanned.ids(got, "raws_of", got["raws"])
    _scanned.spans(got["span"], data)
    _scanned.spans(got["other"], data)
    _scanned.tables(got["strings"], got["raws"])


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
