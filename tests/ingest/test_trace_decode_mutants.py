"""trace_view.json's pieces decoded (ingest/ascend/trace/decode.py): a piece of odd field types taken one element
at a time as the plain reading takes it (`lenient`), the args of duration events typed or taken as written
(`x_args`, `_lenient_args`), counters' args (`any_args`), int args past 2**62 (`known_ints`) and a whole array held
in memory (`iter_buffer`); each expected value written out by hand from the text (the mutation round of
issue 46)."""
import msgspec
import numpy as np
import pytest

from canning_tb.ingest.ascend.trace import decode as dec
from canning_tb.ingest.table import InputError

ABSENT = dec.INT_ABSENT
R = msgspec.Raw


def _ev(e) -> dict:
    d = msgspec.structs.asdict(e)
    d["args"] = bytes(d["args"])
    return d


def _plain(**kw) -> dict:
    d = {"ph": "", "name": "", "cat": None, "pid": None, "tid": None, "ts": None, "dur": None, "id": None,
         "args": b"null"}
    d.update(kw)
    return d


def test_a_piece_of_odd_types_is_taken_one_element_at_a_time():
    """A number and a text are no event (2 unusable); an event whose name is the int 7 (text "7"), whose cat is
    a list (its str "['a']"), pid a bool (no pid), tid text, ts an int, dur a float, id an object (no id): kept
    as the plain reading takes them, its args object as written; a phase 1 is "1", a null name stays None,
    args that are a list are none; {} is an event of nothing ("" phase, "" name)."""
    piece = (b'[5, {"ph":"X","name":7,"cat":["a"],"pid":true,"tid":"main","ts":12,"dur":1.5,"id":{"a":1},'
             b'"args":{"x": 1}}, {"ph":1,"name":null,"args":[1],"id":"k","pid":3,"tid":2.5}, "s", {}]')
    events, bad = dec.decode_piece(piece)
    assert bad == 2
    assert [_ev(e) for e in events] == [
        _plain(ph="X", name="7", cat="['a']", tid="main", ts=12, dur=1.5, args=b'{"x":1}'),
        _plain(ph="1", name=None, id="k", pid=3, tid=2.5), _plain()]


def test_a_typed_piece_is_decoded_at_once():
    """Every field of its declared type: the events as written, no element unusable; the args kept as raw text."""
    events, bad = dec.decode_piece(b'[{"ph":"X","name":"a","pid":"1","tid":2,"ts":"3.5","args":{"count":4}}]')
    assert bad == 0 and [_ev(e) for e in events] == [_plain(ph="X", name="a", pid="1", tid=2, ts="3.5",
                                                             args=b'{"count":4}')]


def _xa(**kw):
    return msgspec.structs.asdict(dec.XArgs(**kw))


def test_args_of_other_types_are_taken_as_written():
    """Text args of another type as their str ([1, 2] -> "[1, 2]", 5 -> "5", the label 7 -> "7"); other args
    kept as any int, float or text, a bool or a list dropped (Physic Stream Id true, size [1]), null absent."""
    got = dec._lenient_args({"Input Dims": [1, 2], "Call stack": 5, "Input type": None, "flops": "12",
                             "Physic Stream Id": True, "connection_id": 3.5, "count": "4", "size(Byte)": [1],
                             "name": 7, "Task Type": None, "data_type": 3, "stream id": 6})
    assert msgspec.structs.asdict(got) == _xa(dims="[1, 2]", stack="5", flops="12", conn=3.5, count="4",
                                              label="7", data_type="3", sid=6)


def test_the_args_of_duration_events():
    """Typed: (values, True), a null args object as no args. An args that is no object (5) or of another type
    ("3" for count): each taken as written, (values, False). An empty args text (absent) is no args."""
    got, typed = dec.x_args([R(b'{"count":3}'), R(b"null")])
    assert typed and [msgspec.structs.asdict(a) for a in got] == [_xa(count=3), _xa()]
    got, typed = dec.x_args([R(b'{"count":3,"Task Type":"AI_CORE"}'), R(b"5")])
    assert not typed and [msgspec.structs.asdict(a) for a in got] == [_xa(count=3, task_type="AI_CORE"), _xa()]
    got, typed = dec.x_args([R(b'{"count":"3"}'), R(b'{"count":4}'), R(b"")])
    assert not typed and [msgspec.structs.asdict(a) for a in got] == [_xa(count="3"), _xa(count=4), _xa()]
    assert dec.x_args([]) == ([], True)


def test_the_args_of_counters():
    """As written (dicts); an absent one ({}: the empty text) beside others or alone; none -> []."""
    assert dec.any_args([R(b'{"a":1}'), R(b'{"b":[2]}')]) == [{"a": 1}, {"b": [2]}]
    assert dec.any_args([R(b'{"a":1}'), R(b"")]) == [{"a": 1}, {}]
    assert dec.any_args([R(b"")]) == [{}] and dec.any_args([]) == []


def test_known_ints_stop_at_2_to_the_62():
    """|v| < 2**62 kept; 2**62 and -2**62 (and beyond) are no measurement (INT_ABSENT), absent stays absent."""
    a = np.array([0, (1 << 62) - 1, -(1 << 62) + 1, 1 << 62, -(1 << 62), ABSENT, (1 << 63) - 1], np.int64)
    assert dec.known_ints(a).tolist() == [0, (1 << 62) - 1, -(1 << 62) + 1, ABSENT, ABSENT, ABSENT, ABSENT]


def test_a_buffer_in_memory():
    """After a BOM and blanks (6 bytes) the array's elements, whitespace after; no '[' first: refused; no ']'
    last: truncated."""
    seen = []
    buf = bytearray(b'\xef\xbb\xbf \t\n[{"ph":"X","name":"a","ts":"1"},{"ph":"X","name":"b","ts":"2"}] \n')
    got = list(dec.iter_buffer(buf, lambda: seen.append(1)))
    events = [e for events, _ in got for e in events]
    assert [e.name for e in events] == ["a", "b"] and seen == []
    with pytest.raises(InputError):
        list(dec.iter_buffer(bytearray(b' {"a": 1}'), lambda: None))
    with pytest.raises(msgspec.DecodeError):
        list(dec.iter_buffer(bytearray(b'[{"ph":"X"}, '), lambda: None))
