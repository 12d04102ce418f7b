"""Fuzz target: _ascend_scan.scan, the Ascend trace_view.json scanner, on any bytes (seeds: the pieces the
trace reader hands it, cut from the fixtures by seeds.py). An answer is checked by _scanned."""
import sys

import atheris

import _scanned
from _load import exact, module

scanner = module("ascend_scan")
SIZES = {"ph": 1, "ref": 20, "ts": 8, "dur": 8, "ts_state": 1, "text": 20, "ints": 40, "flops": 8, "sig": 4,
         "cval": 64, "cref": 32, "span": 16}


def TestOneInput(data: bytes) -> None:
    got = scanner.scan(exact(data))
    if got is None:
        return
    n = got["n"]
    events = _scanned.strict_json(data)
    assert isinstance(events, list) and len(events) == n and all(type(e) is dict for e in events)
    _scanned.widths(got, n, SIZES)
    for key in ("ref", "text", "sig", "cref"):
        _scanned.ids(got, key, got["strings"])
    _scanned.spans(got["span"], data)
    _scanned.tables(got["strings"])


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
