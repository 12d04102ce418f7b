"""The by-hand traces of test_trace_kinds_mutants.py read again with the compiled scanner off
(CANNING_TRACE_SCAN=0): every piece then goes through msgspec's typed decode and parse._Parse's own columns
(`_durations`, `_sparse_args`, `_texts`, `_int_args`, `_flows`, `_meta`), which must give the same by-hand values
as the scanner's reading (the mutation round of issue 46: parse.py's side is reached only where the scanner is
off or declines a piece). The tests are that file's, collected here again."""
import pytest

import test_trace_kinds_mutants as _kinds

globals().update({k: v for k, v in vars(_kinds).items() if k.startswith("test_")})


@pytest.fixture(autouse=True)
def _scanner_off(monkeypatch):
    monkeypatch.setenv("CANNING_TRACE_SCAN", "0")
