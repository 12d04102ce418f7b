"""ingest/ascend/db/host.py under mutation (issue 46): PYTORCH_API (kinds, categories, ends, thread ids, shapes and
dtypes either way round, call stacks, external ids through CONNECTION_IDS), STEP_TIME and CANN_API, read from a
small profiler db made here (tests/_ascend_db_make.py, torch_npu's schema); every answer by hand."""
from __future__ import annotations

import numpy as np

from _ascend_db_make import make_db, open_db
from canning_tb.ingest.ascend.db import host
from canning_tb.ingest.table import NONE, Kind, Strings

STRINGS = [(1, "aten::add"), (2, "ProfilerStep#3"), (3, "fwd.py(10): f"), (4, "2,3;3"), (5, "float;int"),
           (6, "frameA"), (7, "frameB"), (8, "aten::mm"), (9, "aclnnAdd"), (10, "1,2"), (11, "4")]
G = (5 << 32) | 7  # globalTid: pid 5, tid 7
G2 = (1 << 32) | 0xFFFFFFFF  # pid 1, tid 2**32 - 1

# startNs, endNs, globalTid, connectionId, name, sequenceNumber, fwdThreadId, inputDtypes, inputShapes, callchainId,
# type
API = [
    ("1000", "1500", G, 100, 1, None, None, 5, 4, 1, 50001),  # a: aten::add, CPU_OP, dtypes / shapes as named
    ("900", "2000", 0, 200, 2, None, None, None, None, None, 50001),  # b: ProfilerStep#3, a step range
    (None, "5", G, 100, 1, None, None, None, None, None, 50001),  # no start: dropped
    ("1100", "0", None, None, 3, None, None, None, None, 3, 50003),  # c: python function, end 0 = none
    ("1200", None, G2, 100, 8, None, None, 4, 5, 2, 50001),  # d: aten::mm, the two cells swapped
    ("1300", "1250", G, 300, None, None, None, 10, 11, 77, 50002),  # e: queue, ends before it starts; both shapes
    ("1400", "1410", G, 400, 1, None, None, 5, 1, None, 50004),  # f: mstx; both cells no shapes
    ("1500", "1600", G, None, 2, None, None, None, None, None, 99),  # g: ProfilerStep#3 named, unknown type: OTHER
]
CHAINS = [(1, 7, 1), (1, 6, 0), (2, 6, 0), (2, 7, 1), (3, None, 0), (3, 99, 1), (3, 3, 2)]
PAIRS = [(100, 5000), (100, 5001), (200, 4000), (100, 4000), (300, 6000), (400, 7000), (999, 8000), (200, 5001)]


def _db(tmp_path, **tables):
    base = {"STRING_IDS": STRINGS}
    return open_db(make_db(tmp_path / f"p{len(list(tmp_path.iterdir()))}.db", {**base, **tables}))


def _texts(s, col):
    return [s[int(i)] for i in col]


def test_pytorch_api_by_hand(tmp_path):
    """Rows a..g (the row without a start dropped): ts, dur = max(end - start, 0) with end 0 / NULL = start,
    kinds (50001: a step name is USER_ANNOTATION, else CPU_OP; 50003 PYTHON_FUNCTION; others OTHER), cats,
    pid = gtid >> 32, tid = gtid & 0xFFFFFFFF (NULL / 0 -> 0)."""
    db = _db(tmp_path, PYTORCH_API=API, PYTORCH_CALLCHAINS=CHAINS, CONNECTION_IDS=PAIRS)
    s = Strings()
    ev, steps, links = host.pytorch_api(db, s)
    assert ev["ts"].tolist() == [1000, 900, 1100, 1200, 1300, 1400, 1500]
    assert ev["dur"].tolist() == [500, 1100, 0, 0, 0, 10, 100]
    assert ev["kind"].tolist() == [Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.PYTHON_FUNCTION, Kind.CPU_OP, Kind.OTHER,
                                   Kind.OTHER, Kind.OTHER]
    assert _texts(s, ev["name"]) == ["aten::add", "ProfilerStep#3", "fwd.py(10): f", "aten::mm", "", "aten::add",
                                     "ProfilerStep#3"]
    assert _texts(s, ev["cat"]) == ["cpu_op", "cpu_op", "python_function", "cpu_op", "queue", "mstx", "pytorch_api"]
    assert ev["pid"].tolist() == [5, 0, 0, 1, 5, 5, 5]
    assert ev["kind"].dtype == np.uint8 and ev["cat"].dtype == np.int32 and ev["name"].dtype == np.int32
    assert ev["tid"].tolist() == [7, 0, 0, 0xFFFFFFFF, 7, 7, 7]
    assert steps == {"ProfilerStep#3"}


def test_pytorch_api_shapes_args_and_stacks(tmp_path):
    """Shapes: the cell that looks like shapes ('2,3;3' -> [[2, 3], [3]]), whichever column holds it; args: the
    other cell's dtypes; two shape cells: the first is the shapes, no args; two dtype cells: the first is the args.
    Stacks: frames by stackDepth, ';' joined; NULL and unknown frames left out; no chain -> NONE."""
    db = _db(tmp_path, PYTORCH_API=API, PYTORCH_CALLCHAINS=CHAINS, CONNECTION_IDS=PAIRS)
    s = Strings()
    ev, _, _ = host.pytorch_api(db, s)
    types = '{"types":["float","int"]}'
    assert _texts(s, ev["shapes"]) == ["[[2, 3], [3]]", None, None, "[[2, 3], [3]]", "[[4]]", None, None]
    assert _texts(s, ev["args"]) == [types, None, None, types, None, '{"types":["aten::add"]}', None]
    assert _texts(s, ev["stack"]) == ["frameA;frameB", None, "fwd.py(10): f", "frameA;frameB", None, None, None]
    assert ev["shapes"].dtype == np.int32 and ev["stack"].dtype == np.int32 and ev["args"].dtype == np.int32


def test_pytorch_api_external_ids(tmp_path):
    """External ids 1, 2, 3 to the CPU_OP / step rows whose connection CONNECTION_IDS names (a, b, d; e is a queue
    row, f an mstx one: none); device connections take the id of the first op naming them: 5000 and 5001 via 100
    (a: 1), 4000 and 5001 via 200 (b: 2) and 100 (a: 1) -> the smallest, 1, once; 6000, 7000 (rows not linked) and
    8000 (no row) none."""
    db = _db(tmp_path, PYTORCH_API=API, CONNECTION_IDS=PAIRS)
    ev, _, links = host.pytorch_api(db, Strings())
    assert ev["external_id"].tolist() == [1, 2, NONE, 3, NONE, NONE, NONE]
    assert links[0].tolist() == [4000, 5000, 5001] and links[1].tolist() == [1, 1, 1]
    assert (ev["stack"] == NONE).all() and ev["stack"].dtype == np.int32  # no PYTORCH_CALLCHAINS
    # no CONNECTION_IDS: no ids, no links
    db = _db(tmp_path, PYTORCH_API=API[:2])
    ev, _, links = host.pytorch_api(db, Strings())
    assert ev["external_id"].tolist() == [NONE, NONE]
    assert links[0].tolist() == [] and links[1].tolist() == []
    assert links[0].dtype == np.int64 and links[1].dtype == np.int64


def test_pytorch_api_absent_or_empty(tmp_path):
    """No PYTORCH_API: no events, no steps, empty links; an empty PYTORCH_API: no events, empty shapes / args."""
    db = _db(tmp_path)
    ev, steps, links = host.pytorch_api(db, Strings())
    assert len(ev["ts"]) == 0 and steps == set() and len(links[0]) == len(links[1]) == 0
    assert links[0].dtype == np.int64 and links[1].dtype == np.int64
    db = _db(tmp_path, PYTORCH_API=[], PYTORCH_CALLCHAINS=CHAINS, CONNECTION_IDS=PAIRS)
    ev, steps, links = host.pytorch_api(db, Strings())
    assert len(ev["ts"]) == 0 and steps == set()
    assert ev["shapes"].dtype == np.int32 and ev["args"].dtype == np.int32 and ev["cat"].dtype == np.int32
    assert len(ev["shapes"]) == len(ev["args"]) == len(ev["stack"]) == len(ev["cat"]) == len(ev["kind"]) == 0
    assert links[0].tolist() == []


def test_step_time_by_hand(tmp_path):
    """STEP_TIME: step 3 already seen (skipped); 4: 2000..3000 -> dur 1000; 5 no start (skipped); 6 no end -> dur
    0; 7 ends before it starts -> dur 0. All USER_ANNOTATION, cat step_time."""
    rows = [(3, 900, 2000), (4, 2000, 3000), (5, None, 100), (6, 3000, None), (7, 4000, 3500)]
    db = _db(tmp_path, STEP_TIME=rows)
    s = Strings()
    ev = host.step_time(db, s, {"ProfilerStep#3"})
    assert ev["ts"].tolist() == [2000, 3000, 4000] and ev["dur"].tolist() == [1000, 0, 0]
    assert _texts(s, ev["name"]) == ["ProfilerStep#4", "ProfilerStep#6", "ProfilerStep#7"]
    assert ev["kind"].tolist() == [Kind.USER_ANNOTATION] * 3 and _texts(s, ev["cat"]) == ["step_time"] * 3
    assert ev["name"].dtype == np.int32 and ev["kind"].dtype == np.uint8 and ev["cat"].dtype == np.int32
    assert ev["ts"].dtype == np.int64 and ev["dur"].dtype == np.int64
    assert len(host.step_time(db, s, {f"ProfilerStep#{i}" for i in (3, 4, 6, 7)})["ts"]) == 0
    assert len(host.step_time(_db(tmp_path), s, set())["ts"]) == 0


def test_cann_api_by_hand(tmp_path):
    """CANN_API: cat from ENUM_API_TYPE (unknown type: cann_api), RUNTIME kind, name (NULL: ''), pid / tid of the
    globalTid (NULL, 0 -> 0), correlation = connectionId, dur max(end - start, 0)."""
    rows = [(10, 30, 1, (3 << 32) | 9, 11, 9), (20, 15, 5, 0, 12, None), (40, 50, 2, None, 13, 9)]
    db = _db(tmp_path, CANN_API=rows, ENUM_API_TYPE=[(1, "acl"), (2, "runtime")])
    s = Strings()
    ev = host.cann_api(db, s)
    assert ev["ts"].tolist() == [10, 20, 40] and ev["dur"].tolist() == [20, 0, 10]
    assert ev["kind"].tolist() == [Kind.RUNTIME] * 3
    assert _texts(s, ev["name"]) == ["aclnnAdd", "", "aclnnAdd"]
    assert _texts(s, ev["cat"]) == ["acl", "cann_api", "runtime"]
    assert ev["pid"].tolist() == [3, 0, 0] and ev["tid"].tolist() == [9, 0, 0]
    assert ev["correlation"].tolist() == [11, 12, 13]
    assert len(host.cann_api(_db(tmp_path), s)["ts"]) == 0
    ev = host.cann_api(_db(tmp_path, CANN_API=[]), s)
    assert len(ev["ts"]) == 0 and ev["cat"].dtype == np.int32


def test_cann_api_times_must_be_integers_and_ids_keep_their_types(tmp_path):
    """A CANN_API start or end held as text that is no integer: ValueError naming that column (as torch_npu
    writes it); a globalTid of 1: tid 1, pid 0; the cat column int32 like every string id column."""
    import pytest
    for row, column in (((("abc", 5, 1, 0, 1, 9)), "startNs"), ((1, "9x", 1, 0, 1, 9), "endNs")):
        with pytest.raises(ValueError) as e:
            host.cann_api(_db(tmp_path, CANN_API=[row]), Strings())
        assert str(e.value).startswith(f"{column} holds ")
    ev = host.cann_api(_db(tmp_path, CANN_API=[(1, 5, 1, 1, 1, 9)], ENUM_API_TYPE=[(1, "acl")]), Strings())
    assert ev["tid"].tolist() == [1] and ev["pid"].tolist() == [0]
    assert ev["cat"].dtype == np.int32 and ev["name"].dtype == np.int32
    assert ev["kind"].dtype == np.uint8 and ev["correlation"].dtype == np.int64
    ev = host.cann_api(_db(tmp_path, CANN_API=[]), Strings())
    assert len(ev["cat"]) == len(ev["kind"]) == len(ev["pid"]) == 0


def test_step_time_past_int64_is_an_error(tmp_path):
    """A STEP_TIME step from -2**63 to 2**63 - 1 lasts 2**64 - 1 ns: past int64, an OverflowError (read_ascend_db
    reports the file as holding what torch_npu never writes) rather than a column of another dtype."""
    import pytest
    db = _db(tmp_path, STEP_TIME=[(1, -2**63, 2**63 - 1)])
    with pytest.raises(OverflowError):
        host.step_time(db, Strings(), set())


def test_a_null_cell_is_no_text_even_where_string_ids_holds_int_null(tmp_path):
    """STRING_IDS may hold any int64 id, -2**63 too: a NULL inputShapes / inputDtypes cell (read as that value)
    still has no text: no shapes, no args."""
    db = open_db(make_db(tmp_path / "p.db", {"STRING_IDS": STRINGS + [(-2**63, "9,9")],
                                              "PYTORCH_API": [("1", "2", 0, None, 1, None, None, None, None, None,
                                                               50001)]}))
    s = Strings()
    ev, _, _ = host.pytorch_api(db, s)
    assert ev["shapes"].tolist() == [NONE] and ev["args"].tolist() == [NONE]


def test_an_end_of_1_and_a_thread_of_1_are_values(tmp_path):
    """Only 0 and NULL mean no end / no thread: a row from 0 to 1 ns lasts 1 ns; a globalTid of 1 is tid 1."""
    db = open_db(make_db(tmp_path / "p.db", {"STRING_IDS": STRINGS, "PYTORCH_API": [
        ("0", "1", 1, None, 1, None, None, None, None, None, 50001)]}))
    ev, _, _ = host.pytorch_api(db, Strings())
    assert ev["dur"].tolist() == [1] and ev["tid"].tolist() == [1] and ev["pid"].tolist() == [0]
