"""The Ascend trace reader's pieces the mutation run of this morning left (ingest/ascend/trace: flows._tasks_at's
thread bounds, parse._phases' and _texts' paths, merge's split of a big file between this process and a child,
plan_file's edges). Each expected value is worked out by hand in its docstring."""
import json
from types import SimpleNamespace as NS

import numpy as np

from canning_tb.ingest.ascend.trace import decode as dec
from canning_tb.ingest.ascend.trace import merge as trace_merge
from canning_tb.ingest.ascend.trace.flows import bind
from canning_tb.ingest.ascend.trace.parse import _Parse, _phases
from canning_tb.ingest.ascend.trace.read import read_trace
from canning_tb.ingest.table import NONE, Strings


def test_a_flow_end_binds_only_tasks_of_its_own_thread():
    """Host op 0 (1:1, 0..100) holds the flow's start at 10; its end is on device thread 2:5 at 300, where thread 2:5
    has one task at 50 (row 1) and thread 2:7, sorted after it, one at 300 (row 2): no task of 2:5 starts at 300, so
    nothing binds (the task of 2:7 at that time is another stream's) and the flow is unbound."""
    ev = {"pid": np.array([1, 2, 2], np.int32), "tid": np.array([1, 5, 7], np.int32),
          "ts": np.array([0, 50, 300], np.int64), "dur": np.array([100, 1, 1], np.int64)}
    host, device = np.array([True, False, False]), np.array([False, True, True])
    flows = {"ph": np.array(["s", "f"], object), "id": np.array([4, 4], np.int32), "pid": np.array([1, 2], np.int32),
             "tid": np.array([1, 5], np.int32), "ts": np.array([10, 300], np.int64), "ts_ok": np.array([True, True]),
             "seq": np.arange(2)}
    ext, unbound = bind(flows, ev, host, device)
    assert ext.tolist() == [NONE, NONE, NONE] and unbound == 1


def test_phases_fast_and_slow_paths_agree():
    """One-letter ASCII phases go through the bytes ('X' = 88, 'C' = 67); a phase the bytes cannot stand for takes
    the per-event path, where a phase other than X, C, M, s, f, t is 0: four phases with a non-ASCII one (its code
    0, the others 88), an empty phase beside a two-letter one (both 0, though their joined length is 2), a uint8
    array either way."""
    got = _phases([NS(ph=p) for p in ("X", "C")])
    assert got.tolist() == [88, 67] and got.dtype == np.uint8
    got = _phases([NS(ph=p) for p in ("X", "X", "X", "\u00e9")])
    assert got.tolist() == [88, 88, 88, 0] and got.dtype == np.uint8
    got = _phases([NS(ph=p) for p in ("", "XX")])
    assert got.tolist() == [0, 0] and got.dtype == np.uint8


def test_a_text_arg_of_an_untyped_piece_is_taken_as_written():
    """A piece that is not all typed (a value of another type somewhere) takes text args as the plain reading
    writes them: the number 7 as the text "7", the text "a" as it is; a typed piece's texts are kept as given."""
    p = _Parse()
    out = {}
    p._texts(out, "data_type", [NS(data_type=7), NS(data_type=None), NS(data_type="a")], None, False)
    rows, ids = out["data_type"]
    assert rows.tolist() == [0, 2] and [p.ids["dtype"].values_in_order()[i] for i in ids.tolist()] == ["7", "a"]
    q = _Parse()
    q._texts(out, "data_type", [NS(data_type="b")], None, True)
    assert q.ids["dtype"].values_in_order() == ["b"]


class _Plan:
    """A planned array from byte `start` to `end` whose split(n) gives n equal cuts (or `few` cuts when set)."""

    def __init__(self, start, end, few=0):
        self.start, self.end, self.few, self.asked = start, end, few, []

    def split(self, parts):
        self.asked.append(parts)
        n = self.few or parts
        step = (self.end - self.start) // n
        return [(self.start + i * step, self.start + (i + 1) * step) for i in range(n)]


def test_the_share_of_a_big_file_read_here(monkeypatch):
    """Twentieths read here: 0.5 - cost x besides / (2 x size), rounded, within 1 and 10. With the scanner and
    pyarrow (cost 1.7), a file of 1,000 bytes and 100 read beside it: 0.5 - 170 / 2,000 = 0.415 -> 8.3 -> 8; with
    nothing beside, 0.5 -> 10; with 10,000 beside, 0.5 - 8.5 < 0 -> 1; a size of 0 counts as 1 byte."""
    monkeypatch.setattr(trace_merge.trace_scan, "enabled", lambda: True)
    monkeypatch.setattr(trace_merge.csv_arrow, "enabled", lambda: True)
    assert trace_merge._ours(1000, 100) == 8
    assert trace_merge._ours(1000, 0) == 10 and trace_merge._ours(1000, 10_000) == 1
    assert trace_merge._ours(0, 0) == 10 and trace_merge._ours(0, 1) == 1
    monkeypatch.setattr(trace_merge.trace_scan, "enabled", lambda: False)  # cost 0.66: 0.5 - 66 / 2,000 -> 9.34
    assert trace_merge._ours(1000, 100) == 9


def test_the_two_spans_of_a_big_file(monkeypatch):
    """The array from 100 to 2,100 in 20 cuts of 100 bytes, 900 bytes read beside it: of its 2,000 bytes (not
    2,100 + 100) 0.5 - 1.7 x 900 / 4,000 = 0.1175 -> 2.35 -> 2 twentieths here (of 2,200 it would be 3.04 -> 3):
    (100, 300) here and (300, 2,100) for the child. A file the split cannot cut in 20 is read whole here."""
    monkeypatch.setattr(trace_merge.trace_scan, "enabled", lambda: True)
    monkeypatch.setattr(trace_merge.csv_arrow, "enabled", lambda: True)
    plan = _Plan(100, 2100)
    assert trace_merge._two_spans(plan, 900) == [(100, 300), (300, 2100)] and plan.asked == [20]
    few = _Plan(100, 2100, few=5)  # cuts of 400: (100, 500) ... (1,700, 2,100)
    assert trace_merge._two_spans(few, 0) == [(100, 2100)]


def _big(tmp_path, head: bytes, tail: bytes, name="trace_view.json"):
    """An array of 2 x 2**16 bytes and more (past plan_file's edges): "[" + events + "]" with `head` before and
    `tail` after."""
    events = [{"ph": "X", "name": f"e{k}", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": f"{k}.000", "dur": 1}
              for k in range(2000)]
    path = tmp_path / name
    path.write_bytes(head + json.dumps(events).encode() + tail)
    assert path.stat().st_size >= 2 * dec._EDGE
    return str(path)


def test_plan_file_takes_only_an_array_with_blanks_around(tmp_path):
    """A BOM and blanks before, blanks after: planned from just past them ([ at 5, the end just past ]). A letter
    before the [ or after the ], or a form feed after it (no JSON blank), is no plain array: not planned, and
    read_trace then refuses it as JSON."""
    path = _big(tmp_path, b"\xef\xbb\xbf \n", b" \r\n")
    plan = dec.plan_file(path)
    size = (tmp_path / "trace_view.json").stat().st_size
    assert (plan.start, plan.end) == (5, size - 3)
    for i, (head, tail) in enumerate(((b"X", b""), (b"", b"X"), (b"", b"\x0c"))):
        odd = _big(tmp_path, head, tail, f"odd{i}.json")
        assert dec.plan_file(odd) is None, (head, tail)
        problems = []
        assert read_trace(odd, "tv.json", problems, Strings()) is None
        assert problems[0].message.startswith("not valid JSON"), (head, tail)
