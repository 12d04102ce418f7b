"""One range of trace_view.json's events into columns (ingest/ascend/trace/parse.py) on pieces decoded by msgspec
(the reading where the compiled scanner is off or declines a piece): int args taken as written or past int64,
phases, the keys of events (host operator, torch_to_npu flow), metadata names; every expected value worked out by
hand from the text (the mutation round of issue 46)."""
import numpy as np

from canning_tb.ingest.ascend.trace import decode as dec
from canning_tb.ingest.ascend.trace.parse import Combos, Ids, _Parse, _phases, _pick, flow_phase
from canning_tb.ingest.table import NONE


def _parse(*elements: str) -> _Parse:
    p = _Parse()
    p.piece(dec.decode_piece(("[" + ",".join(elements) + "]").encode()))
    return p


def _sparse(p: _Parse) -> dict:
    """attr -> (rows, values), the pieces' parts joined."""
    out: dict = {}
    for part in p.sparse:
        for k, (rows, vals) in part.items():
            r, v = out.setdefault(k, ([], []))
            r += rows.tolist()
            v += np.asarray(vals).tolist()
    return out


def test_int_args_taken_as_written():
    """A piece whose args are not all ints (so not typed): "5" -> 5, 2.0 -> 2, "x" no value, true no value,
    "-4" -> -4, 2**62 no measurement, 2**62 - 1 kept. Rows: the piece's duration events 0 and 1."""
    p = _parse('{"ph":"X","name":"k","pid":9,"tid":1,"ts":"1.000","args":{"stream id":"5","count":2.0,'
               '"size(Byte)":"x","connection_id":true,"Physic Stream Id":4611686018427387904}}',
               '{"ph":"X","name":"k","pid":9,"tid":1,"ts":"2.000","args":{"stream id":7,"count":"3",'
               '"connection_id":"-4","Physic Stream Id":4611686018427387903}}')
    assert _sparse(p) == {"sid": ([0, 1], [5, 7]), "count": ([0, 1], [2, 3]), "conn": ([1], [-4]),
                          "pstream": ([1], [(1 << 62) - 1])}


def test_int_args_taken_as_written_stay_exact_past_float_precision():
    """Untyped (a count written "1"): connection_id 9007199254740993 (2**53 + 1, which a float would round to
    2**53) read exactly beside another event's "x" (no value), and the Physic Stream Id 2**53 + 3."""
    p = _parse('{"ph":"X","name":"k","pid":9,"tid":1,"ts":"1.000","args":{"count":"1",'
               '"connection_id":9007199254740993,"Physic Stream Id":9007199254740995}}',
               '{"ph":"X","name":"k","pid":9,"tid":1,"ts":"2.000","args":{"connection_id":"x"}}')
    assert _sparse(p) == {"count": ([0], [1]), "conn": ([0], [(1 << 53) + 1]), "pstream": ([0], [(1 << 53) + 3])}


def test_an_int_arg_past_int64_is_no_value_and_the_others_stay():
    """Typed ints, one of them 2**64 - 1 (msgspec takes it, int64 cannot hold it): that one no value, the other
    event's size 16 and both counts kept. A second piece continues the rows: its event is row 2."""
    p = _parse('{"ph":"X","name":"k","pid":9,"tid":1,"ts":"1.000","args":{"size(Byte)":18446744073709551615,'
               '"count":1}}', '{"ph":"X","name":"k","pid":9,"tid":1,"ts":"2.000","args":{"size(Byte)":16,"count":2}}')
    p.piece(dec.decode_piece(b'[{"ph":"X","name":"k","pid":9,"tid":1,"ts":"3.000","args":{"count":3}}]'))
    assert _sparse(p) == {"size": ([1], [16]), "count": ([0, 1, 2], [1, 2, 3])}


def test_phases_as_byte_codes():
    """'X' 88, 's' 115, 'C' 67; a phase not one ASCII character ('é', '', 'XX') 0."""
    evs = [dec.Ev(ph=ph) for ph in ("X", "s", "\u00e9", "", "XX", "C")]
    assert _phases(evs).tolist() == [88, 115, 0, 0, 0, 67]
    assert _phases([dec.Ev(ph=ph) for ph in ("M", "f", "t")]).tolist() == [77, 102, 116]
    assert _phases([dec.Ev(ph="\u00e9"), dec.Ev(ph="X")]).tolist() == [0, 88]
    assert flow_phase(np.array([115, 102, 116], np.uint8)).tolist() == ["s", "f", "t"]


def test_pick():
    """items at rows: one row, some rows, every row."""
    items = ["a", "b", "c"]
    assert _pick(items, np.array([2])) == ["c"] and _pick(items, np.array([0, 2])) == ["a", "c"]
    assert _pick(items, np.array([0, 1, 2])) == items


def test_keys_of_events_host_operators_and_flows():
    """(name, cat, pid, tid) -> one id each, in order of first sight; each part its own id space (None ->
    NONE). Host operator: cat user_annotation / cpu_op / operator, or a name starting "ProfilerStep#", never
    python_function. Flow: cat async_npu or the name torch_to_npu. A None name is "None"."""
    ids = {k: Ids() for k in ("name", "cat", "pid", "tid")}
    c = Combos(ids)
    keys = [("ProfilerStep#1", "python_function", 1, 1), ("ProfilerStep#1", "x", 1, 1), ("a", "cpu_op", 1, 2),
            ("a", "user_annotation", 2, 1), ("a", "operator", 1, 1), ("a", "kernel", 1, 1),
            ("torch_to_npu", "x", 1, 1), ("b", "async_npu", 1, 1), (None, "cpu_op", None, 1), ("a", "cpu_op", 1, 2)]
    assert [c[k] for k in keys] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 2]
    assert c.host == [False, True, True, True, True, False, False, False, True]
    assert c.flow == [False, False, False, False, False, False, True, True, False]
    assert ids["name"].values_in_order() == ["ProfilerStep#1", "a", "torch_to_npu", "b", "None"]
    assert c.column(0).tolist() == [0, 0, 1, 1, 1, 1, 2, 3, 4] and c.column(0).dtype == np.int32
    assert c.column(2).tolist() == [0, 0, 0, 1, 0, 0, 0, 0, NONE]
    assert c.column(1).tolist() == [0, 1, 2, 3, 4, 5, 1, 6, 2] and c.column(3).tolist() == [0, 0, 1, 0, 0, 0, 0, 0, 0]


def test_metadata_names():
    """process_name / thread_name: the label as text ("" where absent, 5 -> "5"), the last one of a process
    winning; other metadata (process_sort_index) is no name. Keys: the pid's id (9 -> 0, 3 -> 1), (pid id,
    tid id)."""
    p = _parse('{"ph":"M","name":"process_name","pid":9,"tid":0,"args":{"name":"first"}}',
               '{"ph":"M","name":"process_sort_index","pid":3,"tid":0,"args":{"name":"no"}}',
               '{"ph":"M","name":"process_name","pid":9,"tid":0,"args":{"name":"HW"}}',
               '{"ph":"M","name":"process_name","pid":3,"tid":0,"args":{}}',
               '{"ph":"M","name":"thread_name","pid":3,"tid":7,"args":{"name":5}}')
    assert p.pnames == {0: "HW", 1: ""} and p.tnames == {(1, 0): "5"}
    assert p.ids["pid"].values_in_order() == [9, 3] and p.ids["tid"].values_in_order() == [7]


def test_durations_flows_and_counts_of_a_piece():
    """Durations: ts "1.000" µs 1,000 ns; dur -3 -> 0, "x" (unreadable) -> 0, absent -> 0; an event without a
    time skipped (bad 1). Flows: only torch_to_npu / async_npu ones kept (the fwdbwd one not); their file
    positions (seq) among the piece's 7 elements: 3 and 4; a flow without a time keeps NONE, ts_ok False."""
    p = _parse('{"ph":"X","name":"a","pid":1,"tid":1,"ts":"1.000","dur":-3}',
               '{"ph":"X","name":"b","pid":1,"tid":1,"ts":"2.000","dur":"x"}',
               '{"ph":"X","name":"c","pid":1,"tid":1}',
               '{"ph":"s","name":"torch_to_npu","id":4,"pid":1,"tid":1,"ts":"1.500"}',
               '{"ph":"f","name":"x","cat":"async_npu","id":"4","pid":2,"tid":1}',
               '{"ph":"s","name":"fwdbwd","cat":"fwdbwd","id":5,"pid":1,"tid":1,"ts":"1.000"}',
               '{"ph":"X","name":"d","pid":1,"tid":1,"ts":"3.000"}')
    parts = {k: np.concatenate([part[k] for part in p.parts]).tolist() for k in ("ts", "dur")}
    assert parts == {"ts": [1000, 2000, 3000], "dur": [0, 0, 0]} and p.n == 3 and p.bad == 1 and p.seq == 7
    (f,) = p.flows
    assert f["seq"].tolist() == [3, 4] and f["ts"].tolist() == [1500, NONE] and f["ts_ok"].tolist() == [True, False]
    assert f["ph"].tolist() == [ord("s"), ord("f")] and p.ids["flow"].values_in_order() == [4, "4"]
