"""The compiled scanner's Python side (ingest/ascend/trace/scan.py) by hand: when it is on (CANNING_TRACE_SCAN),
which pieces it declines to msgspec (counter arg keys that are not ASCII), texts that decode equal made one
(`_canon`), and rows of ids in order of first sight (`_first_seen`); the mutation round of issue 46."""
import numpy as np
import pytest

from canning_tb.ingest.ascend.trace import scan as trace_scan


@pytest.mark.compiled("_ascend_scan")
@pytest.mark.parametrize("value, on", [(None, True), ("1", True), ("0", False), ("no", True), ("", True)])
def test_the_scanner_is_on_unless_the_environment_says_0(monkeypatch, value, on):
    """CANNING_TRACE_SCAN: unset or anything but "0" leaves it on (where it is built)."""
    if value is None:
        monkeypatch.delenv("CANNING_TRACE_SCAN", raising=False)
    else:
        monkeypatch.setenv("CANNING_TRACE_SCAN", value)
    assert trace_scan.enabled() is on
    piece = b'[{"ph":"X","name":"a","pid":1,"tid":1,"ts":"1.000"}]'
    assert (type(trace_scan.decode(memoryview(piece))) is trace_scan.Scanned) is on


@pytest.mark.compiled("_ascend_scan")
def test_counter_keys_not_ascii_are_declined():
    """A counter whose args hold a key that is not ASCII ("xİd") goes to msgspec (a tuple of events, 0
    unusable); the same counter with an ASCII key ("llc_id") is scanned."""
    ok = b'[{"ph":"C","name":"LLC","pid":9,"ts":"1.000","args":{"llc_id":1,"value":2}}]'
    assert type(trace_scan.decode(memoryview(ok))) is trace_scan.Scanned
    odd = ok.replace(b"llc_id", "x\u0130d".encode())
    got = trace_scan.decode(memoryview(odd))
    assert type(got) is tuple and len(got[0]) == 1 and got[1] == 0


def test_texts_that_decode_equal_are_one():
    """_canon: each value's index of the first value equal to it: "a" 0, "b" 1, "a" 0, [1] 3, [1] 3 (lists
    compared as tuples), 0.0 and -0.0 equal (5)."""
    assert trace_scan._canon(["a", "b", "a", [1], [1], 0.0, -0.0]).tolist() == [0, 1, 0, 3, 3, 5, 5]


@pytest.mark.parametrize("base", [4, 1 << 20])
def test_rows_in_order_of_first_sight_by_hand(base):
    """Rows (2,1) (0,3) (2,1) (1,0) (0,3): distinct in order of first sight at rows 0, 1, 3; each row's index
    among them 0 1 0 2 1 (packed as 2*base+1 ... where base**2 fits, else the rows sorted: the same)."""
    keys = np.array([[2, 1], [0, 3], [2, 1], [1, 0], [0, 3]], np.int32)
    firsts, at = trace_scan._first_seen(keys, base)
    assert firsts.tolist() == [0, 1, 3] and at.tolist() == [0, 1, 0, 2, 1]
