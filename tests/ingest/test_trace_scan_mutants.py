"""The compiled scanner's Python side (ingest/ascend/trace/scan.py) by hand: when it is on (CANNING_TRACE_SCAN),
which pieces it declines to msgspec (counter arg keys that are not ASCII), texts that decode equal made one
(`_canon`), and rows of ids in order of first sight (`_first_seen`); the mutation round of issue 46."""
import numpy as np
import pytest

from canning_tb.ingest.ascend.trace import scan as trace_scan
from canning_tb.ingest.ascend.trace.parse import _Parse


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
    unusable), also where those keys are the piece's first text (null name, no pid); the same counter with an
    ASCII key ("llc_id") is scanned."""
    ok = b'[{"ph":"C","name":"LLC","pid":9,"ts":"1.000","args":{"llc_id":1,"value":2}}]'
    assert type(trace_scan.decode(memoryview(ok))) is trace_scan.Scanned
    odd = ok.replace(b"llc_id", "x\u0130d".encode())
    got = trace_scan.decode(memoryview(odd))
    assert type(got) is tuple and len(got[0]) == 1 and got[1] == 0
    first = b'[{"ph":"C","name":null,"ts":"1.000","args":{"x\xc4\xb0d":1,"value":2}}]'  # its keys: the first text
    assert type(trace_scan.decode(memoryview(first))) is tuple


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


def _scanned_parse(*elements: str):
    piece = ("[" + ",".join(elements) + "]").encode()
    got = trace_scan.decode(memoryview(piece))
    assert type(got) is trace_scan.Scanned
    parse = _Parse()
    parse.piece(got)
    return parse


@pytest.mark.compiled("_ascend_scan")
def test_a_counter_without_name_or_process_is_kept_in_the_columns():
    """A counter with a null name and no pid (its arg keys are then the piece's first text, id 0): one sample,
    value 1.0 at 1,000 ns, series "None" (the plain reading's str(None)); dropped only later, for having no
    process."""
    parse = _scanned_parse('{"ph":"C","name":null,"ts":"1.000","args":{"value":1}}')
    (part,) = parse.counters.parts
    assert part["value"].tolist() == [1.0] and part["ts"].tolist() == [1000]
    assert list(parse.counters.series) == ["None"] and part["series"].tolist() == [0]


@pytest.mark.compiled("_ascend_scan")
def test_many_samples_of_two_counters_keep_file_order_within_each():
    """40 samples alternating counters a and b (value k at k µs): a's part first (seen first) with 0, 2, ..., 38
    in file order, then b's with 1, 3, ..., 39 (a sort of the 40 group numbers that is not stable would mix
    them)."""
    parse = _scanned_parse(*(f'{{"ph":"C","name":"{"ab"[k % 2]}","pid":9,"ts":"{k}.000","args":{{"value":{k}}}}}'
                             for k in range(40)))
    a, b = parse.counters.parts
    assert a["value"].tolist() == list(range(0, 40, 2)) and b["value"].tolist() == list(range(1, 40, 2))
    assert a["seq"].tolist() == [64 * k for k in range(0, 40, 2)]


@pytest.mark.compiled("_ascend_scan")
def test_args_of_a_second_piece_land_on_its_rows():
    """Two scanned pieces into one parse: the second's duration events are rows 1 and 2 (the first piece held
    one). Its int args (stream id 5 on row 1, count 2 on row 2), flops (12.5 on the host operator, row 2) and
    Input Dims ("4" on row 2) keep those rows."""
    parse = _Parse()
    for piece in (b'[{"ph":"X","name":"a","cat":"cpu_op","pid":1,"tid":1,"ts":"1.000"}]',
                  b'[{"ph":"X","name":"k","pid":9,"tid":1,"ts":"2.000","args":{"stream id":5}},'
                  b'{"ph":"X","name":"b","cat":"cpu_op","pid":1,"tid":1,"ts":"3.000","args":{"count":2,'
                  b'"flops":12.5,"Input Dims":"4"}}]'):
        got = trace_scan.decode(memoryview(piece))
        assert type(got) is trace_scan.Scanned
        parse.piece(got)
    second = parse.sparse[1]
    assert {k: (rows.tolist(), vals.tolist()) for k, (rows, vals) in second.items()} == {
        "sid": ([1], [5]), "count": ([2], [2]), "flops": ([2], [12.5]), "dims": ([2], [0])}
    assert parse.ids["dims"].values_in_order() == ["4"] and parse.n == 3


@pytest.mark.compiled("_ascend_scan")
def test_a_text_arg_that_is_the_piece_s_first_text():
    """A duration event with a null name and no process or thread: its Task Type "AI_CORE" is the piece's first
    text (ref 0) and is kept (row 0, id 0)."""
    parse = _scanned_parse('{"ph":"X","name":null,"ts":"1.000","args":{"Task Type":"AI_CORE"}}')
    (part,) = parse.sparse
    assert {k: (rows.tolist(), vals.tolist()) for k, (rows, vals) in part.items()} == {"task_type": ([0], [0])}
    assert parse.ids["task"].values_in_order() == ["AI_CORE"]


@pytest.mark.compiled("_ascend_scan")
def test_file_positions_run_on_from_piece_to_piece():
    """Pieces of 2, 1 and 1 elements: the counter of the third is the file's element 3 (0-based), its sample's
    seq 3 x 64 + 0 (its value the first arg) = 192; the flow of the second piece is element 2."""
    parse = _Parse()
    for piece in (b'[{"ph":"X","name":"a","pid":1,"tid":1,"ts":"1.000"},{"ph":"X","name":"b","pid":1,"tid":1,'
                  b'"ts":"2.000"}]',
                  b'[{"ph":"s","name":"torch_to_npu","id":1,"pid":1,"tid":1,"ts":"1.500"}]',
                  b'[{"ph":"C","name":"c","pid":9,"ts":"3.000","args":{"value":1}}]'):
        got = trace_scan.decode(memoryview(piece))
        assert type(got) is trace_scan.Scanned
        parse.piece(got)
    assert parse.counters.parts[0]["seq"].tolist() == [192] and parse.flows[0]["seq"].tolist() == [2]
    assert parse.seq == 4


@pytest.mark.compiled("_ascend_scan")
def test_events_without_a_time_add_up_over_pieces():
    """Two scanned pieces, each with one duration event without a time beside a good one: 2 skipped in all,
    2 kept."""
    parse = _Parse()
    for k in range(2):
        piece = (f'[{{"ph":"X","name":"a","pid":1,"tid":1}},{{"ph":"X","name":"b","pid":1,"tid":1,'
                 f'"ts":"{k}.000"}}]').encode()
        got = trace_scan.decode(memoryview(piece))
        assert type(got) is trace_scan.Scanned
        parse.piece(got)
    assert parse.bad == 2 and parse.n == 2
