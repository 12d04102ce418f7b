"""The compiled trace scanner (ingest/native/ascend_scan.c, through trace_scan.py) against msgspec's decode of
the same pieces (trace_decode.decode_piece, the reading before it): a piece the scanner takes must give
a _Parse the same in every id, column and order; a piece it cannot take exactly (odd types, escaped
keys, invalid text) must be declined, and then the old reading decides, errors included. Marked
`compiled`: skipped where the scanner is not built (make test-nocc); where it is, test_the_scanner_is_built
fails if it is missing rather than passing on the fallback alone."""
import json
import random
import re

import msgspec
import numpy as np
import pytest

from canning_tb.ingest.ascend.trace import decode as dec, scan as trace_scan
from canning_tb.ingest.ascend.trace.parse import _Parse

from conftest import fixture_path

_scan = trace_scan._scan  # None when the build found no C compiler: test_the_scanner_is_built says so


def _lists(dicts: list) -> dict:
    keys = sorted({k for d in dicts for k in d})
    return {k: np.concatenate([np.asarray(d[k]) for d in dicts if k in d]).tolist() for k in keys}


def state(parse: _Parse) -> dict:
    """Everything a _Parse holds, as plain values (pieces joined: the order within is kept)."""
    sparse = {}
    for part in parse.sparse:
        for attr, (rows, vals) in part.items():
            sparse.setdefault(attr, []).append({"rows": rows, "vals": vals})
    return {"ids": {k: v.values_in_order() for k, v in parse.ids.items()},
            "combos": (list(parse.combos), parse.combos.parts, parse.combos.host, parse.combos.flow),
            "parts": _lists(parse.parts), "sparse": {k: _lists(v) for k, v in sparse.items()},
            "flows": _lists(parse.flows), "series": list(parse.counters.series),
            "units": list(parse.counters.units), "counters": _lists(parse.counters.parts),
            "pnames": parse.pnames, "tnames": parse.tnames,
            "n": parse.n, "seq": parse.seq, "bad": parse.bad}


def read(piece: bytes, scanned: bool) -> dict:
    parse = _Parse()
    got = trace_scan.decode(memoryview(piece)) if scanned else dec.decode_piece(memoryview(piece))
    assert (type(got) is trace_scan.Scanned) == scanned
    parse.piece(got)
    return state(parse)


def piece_of(*elements: str) -> bytes:
    return ("[" + ",\n".join(elements) + "]").encode("utf-8")


@pytest.mark.compiled("_ascend_scan")
def test_the_scanner_is_built():
    assert _scan is not None, "make test builds canning_tb/ingest/native/ascend_scan.c (pip install -e .)"
    assert trace_scan.enabled()


@pytest.mark.compiled("_ascend_scan")
@pytest.mark.parametrize("level", ["level0", "level1", "level2"])
@pytest.mark.parametrize("rank", [0, 1])
def test_every_fixture_trace_is_scanned_to_the_same_parse(level, rank):
    path = fixture_path("ascend", level, f"rank{rank}_ascend_pt", "ASCEND_PROFILER_OUTPUT", "trace_view.json")
    text = path.read_bytes()
    assert _scan.scan(text) is not None  # taken, not declined: the fixtures are what torch_npu writes
    assert read(text, True) == read(text, False)


X = ('{"ph":"X","name":"aten::mm","pid":3178231,"tid":3178231,"ts":"1736412474714258.990","dur":167.56,'
     '"cat":"cpu_op","args":{"Sequence number":-1,"Input Dims":"2,3;\\r\\n3,4","Input type":"float;\\r\\nfloat",'
     '"Call stack":"a.py(1): f;\\r\\nb.py(2): g","flops":12.5}}')
KERNEL = ('{"ph":"X","name":"MatMul_1","pid":7,"tid":2,"ts":"1736412474714260.000","dur":3,'
          '"args":{"Task Type":"AI_CORE","data_type":"FLOAT16","Physic Stream Id":2,"connection_id":8230,'
          '"stream id":2,"count":4,"size(Byte)":4096}}')
FLOWS = ('{"ph":"s","bp":"e","name":"torch_to_npu","id":8230,"pid":3178231,"tid":3178231,'
         '"ts":"1736412474714258.995","cat":"async_npu"}',
         '{"ph":"f","bp":"e","name":"torch_to_npu","id":"8230","pid":7,"tid":2,"ts":"1736412474714260.000",'
         '"cat":"async_npu"}')
COUNTERS = ('{"name":"HBM 0/Read","pid":9,"tid":0,"ts":"10.500","args":{"Read(MB/s)":2.5},"ph":"C"}',
            '{"name":"read_bandwidth","pid":9,"tid":0,"ts":"11","args":{"value":3,"acc_id":4},"ph":"C"}',
            '{"name":"read_bandwidth","pid":9,"tid":0,"ts":"12.000","args":{"value":5,"acc_id":4.0},"ph":"C"}')
LLC = '{"name":"LLC 0","pid":9,"tid":0,"ts":"13.000","args":{"llc_id":3,"Read(MB/s)":1,"Hit Rate(%)":50.5},"ph":"C"}'
META = ('{"ph":"M","name":"process_name","pid":9,"tid":0,"args":{"name":"Ascend Hardware"}}',
        '{"ph":"M","name":"thread_name","pid":7,"tid":2,"args":{"name":"Stream 2"}}')


@pytest.mark.compiled("_ascend_scan")
@pytest.mark.parametrize("level", ["level1", "level2"])
def test_pieces_of_a_whole_trace_add_up_as_msgspec_reads_them(level):
    """A fixture's trace in pieces of 16 KB (_json.iter_chunks): ids, rows, file order and counts carry from
    piece to piece in the scanned reading as in the decoded one."""
    from canning_tb.ingest import _json
    text = fixture_path("ascend", level, "rank0_ascend_pt", "ASCEND_PROFILER_OUTPUT", "trace_view.json").read_bytes()
    hits = iter(range(10 ** 6))  # every 700th event without a time (skipped, counted), in many pieces
    text = re.sub(rb'"ts": ?"', lambda m: b'"t_": "' if next(hits) % 700 == 699 else m.group(0), text)
    text = text.replace(b'"Sequence number"', b'"flops": 3.5, "Sequence number"')  # torch_npu's own FLOPs
    got = {}
    for scanned in (True, False):
        parse, pieces = _Parse(), 0
        for piece in _json.iter_chunks(bytearray(text), 0, len(text), trace_scan.decode if scanned else dec.decode_piece,
                                       lambda: None, chunk=16 << 10):
            pieces += 1
            parse.piece(piece)
        got[scanned] = state(parse)
    assert pieces > 5 and got[True]["bad"] >= 3 and len(got[True]["sparse"]["flops"]["rows"]) > 100
    assert got[True] == got[False]


def test_what_a_plain_piece_holds_by_hand():
    """The figures read off the text itself: µs text to ns exactly, a float µs rounded to the ns, counter
    units scaled (MB/s -> bytes/s by 1024²), an id arg named as first written (4, then 4.0: one series)."""
    got = [read(piece_of(X, KERNEL, *FLOWS, *COUNTERS, LLC, *META), scanned)  # msgspec's alone where no C
           for scanned in ((True, False) if _scan is not None else (False,))]
    for one in got:
        _holds_by_hand(one)
    assert all(one == got[-1] for one in got)  # the scanner's _Parse is msgspec's


def _holds_by_hand(got: dict) -> None:
    assert got["parts"]["ts"] == [1736412474714258990, 1736412474714260000]
    assert got["parts"]["dur"] == [167560, 3000]
    assert got["ids"]["name"][:2] == ["aten::mm", "MatMul_1"]
    assert got["ids"]["dims"] == ["2,3;\r\n3,4"] and got["ids"]["stack"] == ["a.py(1): f;\r\nb.py(2): g"]
    assert got["sparse"]["flops"] == {"rows": [0], "vals": [12.5]}
    assert got["sparse"]["conn"] == {"rows": [1], "vals": [8230]}
    assert got["sparse"]["size"] == {"rows": [1], "vals": [4096]}
    assert got["ids"]["task"] == ["AI_CORE"]
    assert got["flows"]["ts"] == [1736412474714258995, 1736412474714260000]
    assert got["ids"]["flow"] == [8230, "8230"]  # an int id and a text id are not the same id
    assert got["series"] == ["HBM 0/Read", "read_bandwidth acc_id 4", "LLC 0 llc_id 3/Read(MB/s)",
                             "LLC 0 llc_id 3/Hit Rate(%)"]  # two values in one event: each its own series
    assert got["units"] == ["bytes/s", "", "%"]
    assert got["counters"]["value"] == [2.5 * 1024 * 1024, 3.0, 5.0, 1.0 * 1024 * 1024, 50.5]
    assert got["counters"]["ts"] == [10500, 11000, 12000, 13000, 13000]
    # file order: the 5th to 8th elements, then the position of the value among the args (the id first)
    assert got["counters"]["seq"] == [4 * 64, 5 * 64, 6 * 64, 7 * 64 + 1, 7 * 64 + 2]
    assert got["pnames"] == {got["ids"]["pid"].index(9): "Ascend Hardware"}


# pieces the scanner takes: each must read as msgspec reads it
TAKEN = {
    "escapes decoded once: two spellings of one name are one id": (
        X, X.replace('"aten::mm"', '"aten::\\u006dm"'), X.replace('"cat":"cpu_op"', '"cat":"cpu\\u005fop"')),
    "null and absent fields": (
        '{"ph":"X","name":null,"pid":1,"tid":1,"ts":"5.000","dur":null,"cat":null}',
        '{"ph":"X","pid":1,"ts":"6.000"}', '{"ph":"X","name":"a","ts":"7.000","args":null}'),
    "a duration event without a time is skipped and counted": ('{"ph":"X","name":"a","pid":1,"tid":1}', X),
    "int and float times, negative durations": (
        '{"ph":"X","name":"a","pid":1,"tid":1,"ts":17,"dur":-2}',
        '{"ph":"X","name":"a","pid":1,"tid":1,"ts":17.0005,"dur":0.0005}',
        '{"ph":"X","name":"a","pid":1,"tid":1,"ts":"0.001","dur":2.5e1}'),
    "text pids and tids beside int ones": (
        '{"ph":"X","name":"a","pid":"5","tid":"main","ts":"1.000"}', '{"ph":"X","name":"a","pid":5,"tid":1,"ts":"1.000"}'),
    "unknown fields of any shape, and whitespace anywhere": (
        ' { "ph" : "X" , "name" : "a" , "x" : [1, {"y": [true, false, null, -0.5e-3]}], "ts" : "1.000" ,'
        ' "args" : { "z" : {"Input Dims": 5}, "Input Dims" : "1" } } ',),
    "phases no reader takes": (
        '{"ph":"B","name":"a","ts":"x"}', '{"ph":"XX","name":"a"}', '{"ph":"","name":"a"}', '{"name":"a"}', X),
    "counters: null, bool and absent values, no args, null args, empty args": (
        '{"name":"c","pid":9,"ts":"1.000","args":{"value":null},"ph":"C"}',
        '{"name":"c","pid":9,"ts":"2.000","args":{"value":true},"ph":"C"}',
        '{"name":"c","pid":9,"ts":"3.000","ph":"C"}', '{"name":"c","pid":9,"ts":"4.000","args":null,"ph":"C"}',
        '{"name":"c","pid":9,"ts":"5.000","args":{},"ph":"C"}',
        '{"name":"c","pid":9,"ts":"x","args":{"value":1},"ph":"C"}'.replace('"x"', 'null')),
    "counters with two values and two ids": (
        '{"name":"LLC","pid":9,"ts":"1.000","args":{"Read(MB/s)":1,"Hit Rate(%)":50.5,"llc_id":0,"ID":"x"},"ph":"C"}',
        '{"name":"LLC","pid":9,"ts":"2.000","args":{"Read(MB/s)":2,"Hit Rate(%)":60,"llc_id":1,"ID":"x"},"ph":"C"}'),
    "flows of other categories are not kept": (
        '{"ph":"s","name":"fwdbwd","id":1,"pid":1,"tid":1,"ts":"1.000","cat":"fwdbwd"}', *FLOWS,
        '{"ph":"t","name":"torch_to_npu","pid":1,"tid":1,"cat":"async_npu"}',
        '{"ph":"t","name":"torch_to_npu","id":8230,"pid":1,"tid":1,"ts":"3.000","cat":"async_npu"}'),
    "host ops' args only for host ops": (
        X.replace('"cat":"cpu_op"', '"cat":"python_function"'), X.replace('"aten::mm"', '"ProfilerStep#3"'), KERNEL),
    "non-ASCII text": (X.replace("aten::mm", "算子"), X.replace("a.py", "ä.py")),
    "int args at and past 2**62 (no measurement)": (
        KERNEL.replace('"stream id":2', '"stream id":4611686018427387904').replace('"count":4', '"count":-4611686018427387904')
        .replace('"connection_id":8230', '"connection_id":4611686018427387903'),),
    "counters of two processes, a null name, an escaped name, ids before values": (
        '{"name":"c","pid":9,"ts":"1.000","args":{"value":1},"ph":"C"}',
        '{"name":"c","pid":10,"tid":9,"ts":"2.000","args":{"value":2},"ph":"C"}',
        '{"name":null,"pid":9,"ts":"3.000","args":{"value":3},"ph":"C"}',
        '{"name":"\\u0063","pid":9,"ts":"4.000","args":{"value":4},"ph":"C"}',
        '{"name":"r","pid":9,"ts":"5.000","args":{"acc_id":1,"value":5},"ph":"C"}'),
    "counters of one process on two threads, interleaved": (
        '{"name":"c","pid":9,"tid":1,"ts":"1.000","args":{"value":1},"ph":"C"}',
        '{"name":"c","pid":9,"tid":2,"ts":"2.000","args":{"value":2},"ph":"C"}',
        '{"name":"c","pid":9,"tid":1,"ts":"3.000","args":{"value":3},"ph":"C"}'),
    "a counter group with no sample before others": (
        '{"name":"z","pid":9,"ts":"1.000","args":null,"ph":"C"}', '{"name":"y","pid":9,"ts":"2.000","args":{"value":1},"ph":"C"}'),
}


@pytest.mark.compiled("_ascend_scan")
@pytest.mark.parametrize("case", sorted(TAKEN))
def test_pieces_the_scanner_takes_read_as_msgspec_reads_them(case):
    piece = piece_of(*TAKEN[case])
    assert _scan.scan(piece) is not None
    assert read(piece, True) == read(piece, False)


# elements the scanner must leave to the old reading (a typed decode that fails, or text it cannot judge)
DECLINED = {
    "a repeated field": '{"ph":"X","name":"a","name":"b","ts":"1.000"}',
    "an escaped key": '{"ph":"X","n\\u0061me":"a","ts":"1.000"}',
    "an escaped phase": '{"ph":"\\u0058","name":"a","ts":"1.000"}',
    "a number as phase": '{"ph":5,"name":"a","ts":"1.000"}',
    "a float pid": '{"ph":"X","name":"a","pid":1.5,"ts":"1.000"}',
    "a bool tid": '{"ph":"X","name":"a","tid":true,"ts":"1.000"}',
    "a pid past int64": '{"ph":"X","name":"a","pid":99999999999999999999,"ts":"1.000"}',
    "a number as name": '{"ph":"X","name":5,"ts":"1.000"}',
    "a timestamp with one decimal": '{"ph":"X","name":"a","ts":"12.5"}',
    "a timestamp with spaces": '{"ph":"X","name":"a","ts":" 12.500"}',
    "a negative text timestamp": '{"ph":"X","name":"a","ts":"-12.500"}',
    "a timestamp past the range": '{"ph":"X","name":"a","ts":"9999999999999999.000"}',
    "a timestamp at the range's end (2**62 ns)": '{"ph":"X","name":"a","ts":"4611686018427387.950"}',
    "a duration as text": '{"ph":"X","name":"a","ts":"1.000","dur":"2.000"}',
    "a duration past 2**43 µs": '{"ph":"X","name":"a","ts":"1.000","dur":9000000000000}',
    "a timestamp as object": '{"ph":"X","name":"a","ts":{}}',
    "args no object": '{"ph":"X","name":"a","ts":"1.000","args":[1]}',
    "a text arg as number": '{"ph":"X","name":"a","ts":"1.000","args":{"Call stack":5}}',
    "an int arg as null": '{"ph":"X","name":"a","ts":"1.000","args":{"stream id":null}}',
    "an int arg as float": '{"ph":"X","name":"a","ts":"1.000","args":{"stream id":2.0}}',
    "a counter value as text": '{"name":"c","pid":9,"ts":"1.000","args":{"value":"1.5"},"ph":"C"}',
    "a counter with nine args": '{"name":"c","ts":"1.000","args":{%s},"ph":"C"}' % ",".join(f'"k{i}":1' for i in range(9)),
    "a counter key repeated": '{"name":"c","ts":"1.000","args":{"value":1,"value":2},"ph":"C"}',
    "a counter id as list": '{"name":"c","ts":"1.000","args":{"value":1,"acc_id":[1]},"ph":"C"}',
    "a counter key not ASCII": '{"name":"c","ts":"1.000","args":{"válue":1},"ph":"C"}',
    "an element that is no object": "5",
    "nesting past 64 levels": '{"ph":"X","name":"a","ts":"1.000","x":%s}' % ("[" * 70 + "]" * 70),
}
INVALID = {
    "a trailing comma": '{"ph":"X","name":"a",}',
    "a leading zero": '{"ph":"X","name":"a","pid":01}',
    "a bad escape": '{"ph":"X","name":"a\\x"}',
    "a raw tab in a string": '{"ph":"X","name":"a\tb"}',
    "a raw unit separator (0x1f) in a string": '{"ph":"X","name":"a\x1fb"}',
    "an unclosed object": '{"ph":"X","name":"a"',
    "NaN": '{"ph":"X","name":"a","dur":NaN}',
    "a lone surrogate": '{"ph":"X","name":"a\\ud800","ts":"1.000"}',
    "a number past float (msgspec: out of range)": '{"ph":"X","name":"a","ts":"1.000","args":{"flops":1e400}}',
}


@pytest.mark.compiled("_ascend_scan")
@pytest.mark.parametrize("case", sorted(DECLINED))
def test_pieces_the_scanner_declines_are_read_as_before(case):
    piece = piece_of(X, DECLINED[case], KERNEL)
    if case != "a counter key not ASCII":  # that one is declined in trace_scan, once its keys are decoded
        assert _scan.scan(piece) is None
    got = trace_scan.decode(memoryview(piece))
    assert type(got) is not trace_scan.Scanned
    assert read(piece, False)["n"] >= 1  # the old reading takes the piece (typed or lenient)


@pytest.mark.compiled("_ascend_scan")
@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_text_is_declined_and_raises_as_before(case):
    piece = piece_of(X, INVALID[case])
    assert _scan.scan(piece) is None
    for decode in (trace_scan.decode, dec.decode_piece):
        with pytest.raises(msgspec.DecodeError):  # in the decode, or the args' decode of _Parse.piece
            _Parse().piece(decode(memoryview(piece)))


@pytest.mark.compiled("_ascend_scan")
def test_bytes_that_are_no_utf8_are_declined():
    piece = piece_of(X).replace(b"aten::mm", b"aten::\xff\xfe")
    assert _scan.scan(piece) is None
    for overlong in (b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"):
        assert _scan.scan(piece_of(X).replace(b"aten", overlong)) is None


@pytest.mark.compiled("_ascend_scan")
def test_a_mutated_real_piece_is_scanned_only_when_it_reads_the_same():
    """400 random edits (a byte deleted, replaced or inserted) of a real piece of torch_npu's trace: where
    msgspec raises, the scanner must have declined; where the scanner takes the piece, both readings are
    the same."""
    text = fixture_path("ascend", "level2", "rank0_ascend_pt", "ASCEND_PROFILER_OUTPUT", "trace_view.json").read_bytes()
    events = json.loads(text)
    base = bytearray(json.dumps(events[:60], ensure_ascii=False).encode())
    rng = random.Random(20261202)
    alphabet = b'{}[]",:\\/0123456789.-+eEtrufalsn XC\x00\x1f\x7f\x80\xc3\xa9\xff'
    taken = 0
    for _ in range(400):
        piece = bytearray(base)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(1, len(piece) - 1)
            op = rng.random()
            if op < 0.3:
                del piece[at]
            elif op < 0.7:
                piece[at] = rng.choice(alphabet)
            else:
                piece.insert(at, rng.choice(alphabet))
        piece = bytes(piece)
        try:
            want = read(piece, False)
        except msgspec.DecodeError:
            assert _scan.scan(piece) is None
            continue
        if _scan.scan(piece) is not None and type(trace_scan.decode(memoryview(piece))) is trace_scan.Scanned:
            taken += 1
            assert read(piece, True) == want
    assert taken >= 50  # most edits land in text the scanner reads as it is


@pytest.mark.compiled("_ascend_scan")
def test_text_after_the_array_is_declined():
    piece = piece_of(X) + b" 5"
    assert _scan.scan(piece) is None
    with pytest.raises(msgspec.DecodeError):
        dec.decode_piece(memoryview(piece))


@pytest.mark.compiled("_ascend_scan")
def test_first_seen_packs_or_sorts_rows_to_the_same_answer():
    """trace_scan._first_seen packs a row of ids into one int64 where base**width fits, else sorts rows:
    both must give each distinct row in order of first sight, as a plain walk gives it."""
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 5, size=(400, 4)).astype(np.int32)
    seen: dict = {}
    for row in map(tuple, keys.tolist()):
        seen.setdefault(row, len(seen))
    want_firsts = [next(i for i, r in enumerate(map(tuple, keys.tolist())) if r == k) for k in seen]
    want_at = [seen[r] for r in map(tuple, keys.tolist())]
    for base in (5, 1 << 20):  # 5**4 fits; (2**20)**4 does not: rows sorted
        firsts, at = trace_scan._first_seen(keys, base)
        assert firsts.tolist() == want_firsts and at.tolist() == want_at
    big = rng.integers(0, 1 << 15, size=(3000, 4)).astype(np.int32)  # packed: up to 2**60, past float's 2**53
    big[1000:1100] = big[:100]
    firsts, at = trace_scan._first_seen(big, 1 << 15)
    rows = [tuple(r) for r in big.tolist()]
    assert len(firsts) == len(set(rows)) and [rows[f] for f in firsts] == list(dict.fromkeys(rows))
    assert [rows[firsts[a]] for a in at.tolist()] == rows
    # rows a float would merge (2**60 holds no unit in the last place), and rows equal modulo 2**64 were
    # base**width not checked (base 2**17: 8192 * 2**51 == 2**64): all distinct
    for base, pair in ((1 << 15, [(30000, 1, 2, 3), (30000, 1, 2, 4)]), (1 << 15, [(1, 0, 0, 30000), (2, 0, 0, 30000)]),
                       (1 << 17, [(0, 0, 0, 0), (8192, 0, 0, 0)])):
        firsts, at = trace_scan._first_seen(np.array(pair, np.int32), base)
        assert firsts.tolist() == [0, 1] and at.tolist() == [0, 1], (base, pair)
