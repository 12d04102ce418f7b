"""A big trace_view.json read in two byte ranges (ingest/ascend/trace/merge.py): the second range's columns, read
in its own local ids, joined to the first's (`absorb`): names, process and thread names, text args, flows,
counters, skipped events and undecodable bytes of the second range land on the right rows and ids. The child
process is stood in for by a reading in this process (no fork: fast and deterministic); every expected value is
worked out by hand from the events written here (the mutation round of issue 46)."""
import json

import pytest

from canning_tb.ingest.ascend.trace import merge as trace_merge
from canning_tb.ingest.ascend.trace.read import Started, read_trace
from canning_tb.ingest.table import NONE, Kind, Strings

PY, HW = 100, 7
N_FIRST = 2000  # filler host ops: past the 128 KiB a planned file needs, and past half the file


def _events():
    """Host op "outer" + 0xff (Python pid 100, tid 1, Input Dims "9") at 0 µs for 1 s, an op without a time, a flow
    start inside it; 2,000 fillers a0..a9
    (cpu_op, 10 ns apart from 1 µs); then, in the second half: fillers b0..b4, a3 again, an op with Input Dims,
    one without a time, one with the byte 0xff in its name, a flow end of another id (77, first seen there), the
    hardware task the flow ends on (pid 7, tid 3, at 500 µs, connection_id 5), a counter of pid 7, and the process
    and thread names."""
    ev = [{"ph": "X", "name": "outer\u00e9", "cat": "cpu_op", "pid": PY, "tid": 1, "ts": "0.000", "dur": 1_000_000,
           "args": {"Input Dims": "9"}},
          {"ph": "X", "name": "early_no_time", "cat": "cpu_op", "pid": PY, "tid": 1},
          {"ph": "s", "name": "torch_to_npu", "cat": "async_npu", "id": 42, "pid": PY, "tid": 1, "ts": "0.500"}]
    ev += [{"ph": "X", "name": f"a{k % 10}", "cat": "cpu_op", "pid": PY, "tid": 1, "ts": f"{1 + k / 100:.3f}",
            "dur": 0} for k in range(N_FIRST)]
    ev += [{"ph": "X", "name": f"b{k}", "cat": "cpu_op", "pid": PY, "tid": 2, "ts": "900.000", "dur": 1}
           for k in range(5)]
    ev += [{"ph": "X", "name": "a3", "cat": "cpu_op", "pid": PY, "tid": 2, "ts": "901.000", "dur": 1},
           {"ph": "X", "name": "dims_op", "cat": "cpu_op", "pid": PY, "tid": 2, "ts": "902.000", "dur": 1,
            "args": {"Input Dims": "2,3"}},
           {"ph": "X", "name": "no_time", "cat": "cpu_op", "pid": PY, "tid": 2},
           {"ph": "X", "name": "bad\u00e9", "cat": "cpu_op", "pid": PY, "tid": 2, "ts": "903.000", "dur": 1},
           {"ph": "f", "name": "torch_to_npu", "cat": "async_npu", "id": 77, "pid": HW, "tid": 3, "ts": "400.000"},
           {"ph": "X", "name": "task", "pid": HW, "tid": 3, "ts": "500.000", "dur": 2,
            "args": {"Task Type": "AI_CORE", "connection_id": 5}},
           {"ph": "f", "name": "torch_to_npu", "cat": "async_npu", "id": 42, "pid": HW, "tid": 3, "ts": "500.000",
            "bp": "e"},
           {"ph": "C", "name": "HBM 0", "pid": HW, "tid": 0, "ts": "600.000", "args": {"Read(MB/s)": 2}},
           {"ph": "M", "name": "process_name", "pid": PY, "tid": 0, "args": {"name": "Python"}},
           {"ph": "M", "name": "process_name", "pid": HW, "tid": 0, "args": {"name": "Ascend Hardware"}},
           {"ph": "M", "name": "thread_name", "pid": HW, "tid": 3, "args": {"name": "Stream 3"}}]
    return ev


class _Child:
    """Stands in for forked.Forked: reads its span here when asked (or answers None: a child that failed)."""

    def __init__(self, plan, span, answer, taken):
        self.plan, self.span, self.answer, self.killed = plan, span, answer, False
        taken.append(("child", span))

    def result(self):
        return trace_merge._read_part(self.plan, self.span) if self.answer else None

    def kill(self):
        self.killed = True


@pytest.fixture(params=["1", "0"], ids=["scanner", "msgspec"])
def two(request, monkeypatch, tmp_path):
    """The file split in two ranges whatever its size; returns (path, spans taken: ours and the child's)."""
    monkeypatch.setenv("CANNING_TRACE_SCAN", request.param)
    monkeypatch.setattr(trace_merge, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(trace_merge, "_can_fork", lambda: True)
    path = tmp_path / "trace_view.json"
    path.write_bytes(json.dumps(_events()).encode().replace(b"\\u00e9", b"\xff"))
    taken = []
    read_span = trace_merge._read_span

    def ours(plan, parse, span, on_utf8):
        taken.append(("read", span, parse))
        read_span(plan, parse, span, on_utf8)
    monkeypatch.setattr(trace_merge, "_read_span", ours)
    return str(path), taken


def _read(path, started):
    strings, problems = Strings(), []
    td = read_trace(path, "tv.json", problems, strings, started=started)
    return td, strings, [(p.message, p.severity) for p in problems]


@pytest.mark.parametrize("answer", [True, False], ids=["child answers", "child fails"])
def test_the_second_range_joins_the_first(two, monkeypatch, answer):
    """Rows: outer\ufffd, a0..a9 x 200, b0..b4, a3, dims_op, bad\ufffd, task (early_no_time and no_time skipped,
    one in each range: "2"; 0xff in
    each range: 1 warning). Both halves' fillers a3 are one string; dims_op (second range) holds "2,3" (read as
    "[[2, 3]]"), outer "9" ("[[9]]"), no other row any; the task's correlation 5;
    outer and the task share external_id 1 (the flow's start in the first range, its end in the second); pid 100
    is Python (its host ops CPU_OP), pid 7 Ascend Hardware, thread 7:3 "Stream 3"; one counter sample of 2 MB/s
    = 2 x 2**20 B/s (device npu:7: pid 7 & 31); the task at 500 µs = 500,000 ns. A child that fails leaves the
    second range to this process: the same table."""
    path, taken = two
    monkeypatch.setattr(trace_merge, "_start_child", lambda plan, span: _Child(plan, span, answer, taken))
    td, s, problems = _read(path, Started(path))
    reads = [(span, parse) for who, span, *parse in taken if who == "read"]
    child = [span for who, span, *_ in taken if who == "child"]
    assert len(child) == 1 and reads[0][0][1] < child[0][0] and [span for span, _ in reads[1:]] == child
    # the second range read by the child's own parse, or (a child that fails) by ours
    assert (reads[1][1][0] is reads[0][1][0]) == (not answer)
    assert problems == [("2 event(s) without a usable timestamp skipped", "warning"),
                        ("not valid UTF-8 in places; undecodable bytes replaced", "warning")]
    names = [s.values[i] for i in td.events["name"].tolist()]
    want = ["outer\ufffd"] + [f"a{k % 10}" for k in range(N_FIRST)] + [f"b{k}" for k in range(5)] + \
        ["a3", "dims_op", "bad\ufffd", "task"]
    assert names == want
    row = {n: i for i, n in enumerate(names) if n in ("outer\ufffd", "dims_op", "task", "b0")}
    assert len({int(i) for i, n in zip(td.events["name"].tolist(), names) if n == "a3"}) == 1
    shapes = td.events["shapes"]
    assert s.values[shapes[row["dims_op"]]] == "[[2, 3]]" and s.values[shapes[row["outer\ufffd"]]] == "[[9]]"
    assert int((shapes != NONE).sum()) == 2 and td.events["correlation"][row["task"]] == 5
    ext = td.events["external_id"]
    assert ext[row["outer\ufffd"]] == 1 and ext[row["task"]] == 1 and int((ext != NONE).sum()) == 2
    kind = td.events["kind"]
    assert kind[row["b0"]] == Kind.CPU_OP and kind[row["outer\ufffd"]] == Kind.CPU_OP
    assert td.events["ts"][row["task"]] == 500_000 and td.events["tid"][row["b0"]] == 2
    assert td.process_names == {PY: "Python", HW: "Ascend Hardware"}
    assert td.thread_names == {"7:3": "Stream 3"}
    assert [(r["counter"], r["value"], r["ts_ns"], r["device"]) for r in td.counters] == \
        [("HBM 0", 2 * 2 ** 20, 600_000, "npu:7")]


def test_a_failed_first_range_stops_the_child(two, monkeypatch):
    """When reading our range raises, the child is killed and the error goes up."""
    path, taken = two
    children = []

    def start(plan, span):
        children.append(_Child(plan, span, True, taken))
        return children[-1]
    monkeypatch.setattr(trace_merge, "_start_child", start)

    def boom(plan, parse, span, on_utf8):
        raise OSError("gone")
    monkeypatch.setattr(trace_merge, "_read_span", boom)
    started = Started(path)
    with pytest.raises(OSError):
        started.ranges.read(None, None)
    assert children[0].killed and started.ranges.child is None


@pytest.mark.parametrize("value, workers", [(None, 2), ("1", 1), ("0", 1), ("-3", 1), ("3", 3), ("x", 2)])
def test_workers_from_the_environment(monkeypatch, value, workers):
    """CANNING_READ_WORKERS: unset 2; at least 1; not a number: 2."""
    if value is None:
        monkeypatch.delenv("CANNING_READ_WORKERS", raising=False)
    else:
        monkeypatch.setenv("CANNING_READ_WORKERS", value)
    assert trace_merge.workers() == workers


def test_the_bytes_read_beside_the_trace_move_the_cut(two, monkeypatch):
    """Started(path, besides): 10**12 bytes read beside a trace of under 200 KB leave this process one twentieth
    (_ours' floor), so its span is under a tenth of the array and the child's the rest; none beside: halves."""
    path, taken = two
    monkeypatch.setattr(trace_merge, "_start_child", lambda plan, span: _Child(plan, span, False, taken))
    lean, even = Started(path, 10 ** 12), Started(path)
    children = [lean.ranges.child, even.ranges.child]
    (a0, a1), (b0, b1) = lean.ranges.spans
    assert (a1 - a0) * 10 < b1 - b0
    (c0, c1), (d0, d1) = even.ranges.spans
    assert abs((c1 - c0) - (d1 - d0)) * 10 < d1 - d0
    lean.close()
    even.close()
    assert all(c.killed for c in children)  # closing an abandoned read stops its child


@pytest.mark.parametrize("can, workers, fork", [(True, "2", True), (True, "1", False), (False, "2", False)])
def test_a_child_only_where_fork_is_safe_and_two_workers_are_wanted(monkeypatch, can, workers, fork):
    """_can_fork: forked.can_fork() and more than one worker (CANNING_READ_WORKERS)."""
    monkeypatch.setattr(trace_merge.forked, "can_fork", lambda: can)
    monkeypatch.setenv("CANNING_READ_WORKERS", workers)
    assert trace_merge._can_fork() is fork
