"""The Ascend trace reader where a file changes under it, the wrapped form with bytes that are no UTF-8, and the
join of a second range read by a child (ingest/ascend/trace/read.py and merge.py): cases the mutation run left."""
import json

import numpy as np

from canning_tb.ingest.ascend.trace import merge as trace_merge
from canning_tb.ingest.ascend.trace.parse import Ids
from canning_tb.ingest.ascend.trace.read import Started, read_trace
from canning_tb.ingest.table import Strings


def _x(name, ts):
    return {"ph": "X", "name": name, "cat": "cpu_op", "pid": 1, "tid": 1, "ts": ts, "dur": 1}


def test_a_file_removed_between_its_plan_and_its_read(tmp_path):
    """A small trace is planned (Started: no error, no ranges to read in parallel), then removed before it is read:
    no table (None), and one error naming the file's display name and why."""
    path = tmp_path / "trace_view.json"
    path.write_text(json.dumps([_x("a", "1.000")]))
    started = Started(str(path))
    assert started.error is None and started.ranges is None
    path.unlink()
    problems = []
    assert read_trace(str(path), "r0/trace_view.json", problems, Strings(), started=started) is None
    assert [(p.file, p.severity, p.message.startswith("cannot read: ")) for p in problems] == [
        ("r0/trace_view.json", "error", True)]


def test_the_wrapped_form_with_bytes_that_are_no_utf8(tmp_path):
    """{"traceEvents": [...]} whose second event's name holds the byte 0xff: both events read, that byte replaced
    (U+FFFD), and one warning that undecodable bytes were replaced."""
    data = json.dumps({"traceEvents": [_x("a", "1.000"), _x("bXb", "2.000")]}).encode().replace(b"bXb", b"b\xffb")
    path = tmp_path / "trace_view.json"
    path.write_bytes(data)
    problems, strings = [], Strings()
    td = read_trace(str(path), "tv.json", problems, strings)
    assert [strings.values[i] for i in td.events["name"].tolist()] == ["a", "b\ufffdb"]
    assert [(p.message, p.severity) for p in problems] == [
        ("not valid UTF-8 in places; undecodable bytes replaced", "warning")]


class _Done:
    """A child whose result is taken: it must not be killed afterwards."""

    def __init__(self, answer):
        self.answer, self.killed = answer, False

    def result(self):
        return self.answer

    def kill(self):
        self.killed = True


def test_closing_after_the_join_leaves_the_finished_child_alone(tmp_path, monkeypatch):
    """A read in two ranges whose child answered: after the join the Ranges hold no child, and a later close()
    (Started.close, as a reader that gives up on a window calls it) kills nothing and raises nothing."""
    path = tmp_path / "trace_view.json"
    path.write_text(json.dumps([_x(f"e{k}", f"{k}.000") for k in range(4000)]))
    monkeypatch.setattr(trace_merge, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(trace_merge, "_can_fork", lambda: True)
    made = []

    def start(plan, span):
        made.append(_Done(trace_merge._read_part(plan, span)))
        return made[-1]
    monkeypatch.setattr(trace_merge, "_start_child", start)
    started = Started(str(path))
    strings = Strings()
    td = read_trace(str(path), "tv.json", [], strings, started=started)
    assert len(made) == 1 and started.ranges.child is None
    started.close()
    assert made[0].killed is False
    assert [strings.values[i] for i in td.events["name"].tolist()] == [f"e{k}" for k in range(4000)]


def test_remap_maps_their_ids_to_ours_and_none_to_none():
    """Their ids 0, 1, 2 are the strings "b", "a", "c"; ours give "a" 5, "b" 7, "c" 9: [7, 5, 9] and, for their NONE
    (-1, the extra last slot), -1."""
    theirs = Ids()  # the reader's id map: None is NONE (-1), each new value the next id from 0
    assert [theirs[s] for s in ("b", "a", "c")] == [0, 1, 2]
    got = trace_merge._remap({"a": 5, "b": 7, "c": 9}, theirs)
    assert got.tolist() == [7, 5, 9, -1] and got.dtype == np.int64
