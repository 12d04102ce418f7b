"""ingest/kineto/parallel.py (issue 46, mutation testing): a plain trace read in two byte ranges, the
second range's reader merged into the first's, gives the table the whole-file read gives (a second
reading, by the other path) and the values worked out here: the two halves intern their strings,
shapes, args and text pids / tids in other orders, so every id of the second half must be translated.
The child is run in this process (forked.Forked replaced, its value pickled as the pipe would), so
no test forks but the last."""
import json
import pickle

import numpy as np
import pytest

from canning_tb.ingest import _json, forked
from canning_tb.ingest.kineto import parallel
from canning_tb.ingest.kineto.read import _Reader, read_kineto
from canning_tb.ingest.table import NONE, InputError

PADS = 4000  # ~ 4000 * 80 bytes: past plan_array's floor of 4 * 64 KiB


def _x(name, pid, tid, ts, dur=1, cat="cpu_op", **args):
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        e["args"] = args
    return e


def _events():
    """First half: process / thread names and labels of text pid "A", ops x and y (x with shapes [[2, 3]]
    and float inputs), a CPU memory record, the iteration start, a window end at 50 µs, a flow end of
    pid "A". Last half: text pid "B" met before "A", ops z, y, x (ids in another order), shapes [[4]]
    then [[2, 3]], a cuda:0 memory record, a negative duration, a window end at 9000 µs, a flow end
    of pid "B", and names of numeric ids: process 1, thread 1:1, thread 5 of "B"."""
    first = [
        {"ph": "M", "name": "process_name", "pid": "A", "args": {"name": "procA"}},
        {"ph": "M", "name": "thread_name", "pid": "A", "tid": "T1", "args": {"name": "mainA"}},
        {"ph": "M", "name": "process_labels", "pid": "A", "args": {"labels": "CPU"}},
        _x("x", "A", "T1", 10, 5, **{"Input Dims": [[2, 3]], "Input type": ["float"]}),
        _x("y", 1, 1, 12),
        {"ph": "i", "s": "t", "name": "Iteration Start: PyTorch Profiler", "pid": 1, "tid": 1, "ts": 1},
        {"ph": "i", "s": "t", "name": "Record Window End", "pid": 1, "tid": 1, "ts": 50},
        {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 11,
         "args": {"Device Type": 0, "Device Id": -1, "Addr": 123, "Bytes": 64, "Total Allocated": 64,
                  "Total Reserved": 128}},
        {"ph": "s", "cat": "ac2g", "id": 1, "pid": 1, "tid": 1, "ts": 10},
        {"ph": "f", "cat": "ac2g", "id": 1, "pid": "A", "tid": "T1", "ts": 12, "bp": "e"},
    ]
    pads = [_x("pad", 1, 1, 100 + i) for i in range(PADS)]
    last = [
        {"ph": "M", "name": "process_name", "pid": "B", "args": {"name": "procB"}},
        {"ph": "M", "name": "thread_name", "pid": "B", "tid": "T2", "args": {"name": "mainB"}},
        {"ph": "M", "name": "process_labels", "pid": "B", "args": {"labels": "GPU 0"}},
        _x("z", "B", "T2", 8000, 3, **{"Input Dims": [[4]], "Input type": ["int"]}),
        _x("y", "A", "T1", 8001, 2),
        _x("x", "A", "T1", 8002, 2, **{"Input Dims": [[2, 3]], "Input type": ["float"]}),
        _x("neg", 1, 1, 8003, -3),
        {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 8004,
         "args": {"Device Type": 1, "Device Id": 0, "Addr": 77, "Bytes": 32, "Total Allocated": 96,
                  "Total Reserved": 256}},
        {"ph": "s", "cat": "ac2g", "id": 2, "pid": 1, "tid": 1, "ts": 8000},
        {"ph": "f", "cat": "ac2g", "id": 2, "pid": "B", "tid": "T2", "ts": 8001, "bp": "e"},
        {"ph": "i", "s": "t", "name": "Record Window End", "pid": 1, "tid": 1, "ts": 9000},
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "proc1"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main1"}},
        {"ph": "M", "name": "process_labels", "pid": 1, "args": {"labels": "CPU"}},
        {"ph": "M", "name": "thread_name", "pid": "B", "tid": 5, "args": {"name": "worker5"}},
    ]
    return first + pads + last


def _write(tmp_path, events=None, name="t.pt.trace.json"):
    p = tmp_path / name
    p.write_text(json.dumps({"schemaVersion": 1, "traceEvents": _events() if events is None else events,
                             "displayTimeUnit": "ms"}))
    return str(p)


class _InProcess:
    """forked.Forked run here: the target runs when its value is asked for; pickled as the pipe would."""

    made = []

    def __init__(self, target, *args):
        self.target, self.args, self.killed = target, args, False
        _InProcess.made.append(self)

    def result(self):
        return pickle.loads(pickle.dumps(self.target(*self.args), protocol=5))

    def kill(self):
        self.killed = True


@pytest.fixture
def in_process(monkeypatch):
    _InProcess.made = []
    monkeypatch.setattr(forked, "Forked", _InProcess)
    monkeypatch.setattr(forked, "can_fork", lambda: True)
    return _InProcess


def _view(t):
    """Each event and memory record with its strings as text (ids differ between readings)."""
    s = t.strings
    ev = t.events
    text_cols = ("name", "cat", "shapes", "stack", "core", "group", "args")
    rows = [tuple(s[int(ev[k][i])] if k in text_cols else int(ev[k][i]) for k in ev) for i in range(len(t))]
    mem = [tuple(s[int(t.memory[k][i])] if k in ("device", "component", "op") else int(t.memory[k][i])
                 for k in t.memory) for i in range(len(t.memory["ts"]))]
    m = t.meta
    return rows, mem, (m.start_ns, m.end_ns, m.process_names, m.thread_names, m.environment, m.rank), \
        [(p.file, p.message, p.severity) for p in t.problems]


def test_two_ranges_give_the_whole_files_table(tmp_path, monkeypatch, in_process):
    path = _write(tmp_path)
    whole = read_kineto(path)  # under 64 MB: the whole-file path
    assert in_process.made == []
    monkeypatch.setattr(parallel, "PARALLEL_BYTES", 0)
    got = read_kineto(path)
    assert len(in_process.made) == 1  # one child, for the second range
    assert _view(got) == _view(whole)
    # by hand: PADS pads + x, y (first half) + z, y, x, neg (last half)
    assert len(got) == PADS + 6
    names = [got.strings[int(i)] for i in got.events["name"]]
    assert names.count("x") == 2 and names.count("y") == 2 and names.count("z") == 1
    rows = {got.strings[int(got.events["name"][i])]: i for i in range(len(got)) if got.events["ts"][i] >= 8_000_000}
    assert got.strings[int(got.events["shapes"][rows["z"]])] == "[[4]]"
    assert got.strings[int(got.events["shapes"][rows["x"]])] == "[[2, 3]]"
    assert int(got.events["dur"][rows["neg"]]) == 0
    pid_z, pid_x = int(got.events["pid"][rows["z"]]), int(got.events["pid"][rows["x"]])
    assert pid_z != pid_x and pid_z <= -2 and pid_x <= -2
    assert got.meta.process_names[pid_x] == "procA" and got.meta.process_names[pid_z] == "procB"
    assert got.meta.thread_names[f"{pid_x}:{int(got.events['tid'][rows['x']])}"] == "mainA"
    assert got.meta.thread_names[f"{pid_z}:{int(got.events['tid'][rows['z']])}"] == "mainB"
    assert got.meta.end_ns == 9_000_000  # the second half's window end, the later one
    assert sorted(got.strings[int(d)] for d in got.memory["device"]) == ["CPU", "cuda:0"]
    assert ("1 negative durations set to 0", "warning") in [(p.message, p.severity) for p in got.problems]


def test_the_merge_by_hand(tmp_path, monkeypatch):
    """Two readers of two ranges, merged: the second's ids (strings, shapes, args, text pids) are ours;
    its window end (later) wins, its unset iteration start (NONE) does not; counts and problems add."""
    monkeypatch.setattr(parallel, "PARALLEL_BYTES", 0)
    path = _write(tmp_path)
    plan = _json.plan_array(path, 0)
    lo, hi = plan.split(path, 2)
    ours, theirs = parallel._read_range(path, _Reader, lo), parallel._read_range(path, _Reader, hi)
    # each reader's ids in its order of first sight: names, then the category, then memory devices
    assert ours.strs.keys_in_order() == ["x", "y", "pad", "cpu_op", "CPU"]
    assert theirs.strs.keys_in_order() == ["pad", "z", "y", "x", "neg", "cpu_op", "cuda:0"]
    assert list(theirs.named_ids)[1:] == ["B", "T2", "A", "T1"] and list(ours.named_ids)[1:] == ["A", "T1"]
    assert theirs.iter_start == NONE and ours.iter_start == 1000
    theirs.problems.append("p")
    ours.count["range"] = 2
    theirs.count["range"] = 3
    parallel.merge(ours, theirs)
    assert ours.iter_start == 1000 and ours.window_end == 9_000_000
    assert ours.count["range"] == 5 and ours.count["negative"] == 1 and ours.problems == ["p"]
    a, b = -2 - ours.named_ids["A"], -2 - ours.named_ids["B"]
    assert (a, b) == (-2, -4)  # ours: "A" then "T1" (a tid) then "B"
    assert ours.process_names == {a: "procA", b: "procB", 1: "proc1"}
    assert ours.process_labels == {a: "CPU", b: "GPU 0", 1: "CPU"}
    t1, t2 = -2 - ours.named_ids["T1"], -2 - ours.named_ids["T2"]
    assert ours.thread_names == {f"{a}:{t1}": "mainA", f"{b}:{t2}": "mainB", "1:1": "main1", f"{b}:5": "worker5"}
    assert [p.tolist() for p, _, _ in ours.flow_parts] == [[a], [b]]
    assert [t.tolist() for _, t, _ in ours.flow_parts] == [[t1], [t2]]
    late = np.concatenate([p["ts"] for p in ours.ev_parts]) >= 8_000_000  # the last half's four ops
    cols = {k: np.concatenate([p[k] for p in ours.ev_parts])[late].tolist()
            for k in ("name", "pid", "tid", "shapes", "args", "cat")}
    names = [ours.strs.keys_in_order()[i] for i in cols["name"]]
    assert names == ["z", "y", "x", "neg"]
    assert cols["pid"] == [b, a, a, 1] and cols["tid"] == [t2, t1, t1, 1]
    assert cols["shapes"][1] == NONE and cols["shapes"][3] == NONE
    # shapes: ours [[2, 3]] (0); theirs [[4]] (0 -> our new 1), [[2, 3]] (1 -> 0); args: ours float (0),
    # none (1); theirs none (0 -> 1), int (1 -> our new 2), float (2 -> 0)
    assert cols["shapes"] == [1, NONE, 0, NONE] and cols["args"][:3] == [2, 1, 0]
    assert ours.raw_dims.keys_in_order() == [b"[[2, 3]]", b"[[4]]"]
    assert {ours.strs.keys_in_order()[c] for c in cols["cat"]} == {"cpu_op"}
    devices = [ours.strs.keys_in_order()[int(d)] for p in ours.mem_parts for d in p["device"]]
    assert devices[-1] == "cuda:0"


def test_lut_and_renamed():
    """Their ids 0, 1 -> ours (interning what we lack), -1 stays NONE; pid / tid ids swapped A <-> B are
    swapped once each (never twice), numeric ids and NONE kept."""
    from canning_tb.ingest.kineto.read import _Ids
    ours, theirs = _Ids(), _Ids()
    ours["a"], theirs["b"], theirs["a"] = 0, 0, 1
    ours.n, theirs.n = 1, 2
    lut = parallel._lut(theirs, ours)
    assert lut.tolist() == [1, 0, NONE] and lut.dtype == np.int32 and ours.keys_in_order() == ["a", "b"]
    ids = np.array([-2, -3, 5, -1, -2])
    got = parallel._renamed(ids, {-2: -3, -3: -2})
    assert got.tolist() == [-3, -2, 5, -1, -3] and ids.tolist() == [-2, -3, 5, -1, -2]
    same = np.array([1, -1])
    assert parallel._renamed(same, {-2: -3}) is same and parallel._renamed(ids, {}) is ids


def test_not_planned_files(tmp_path, monkeypatch, in_process):
    """Too small, gzipped, missing: NotPlanned (the caller reads it whole); a damaged range too."""
    path = _write(tmp_path)
    with pytest.raises(parallel.NotPlanned) as e:
        parallel.read_ranges(path, _Reader)  # 64 MB floor
    assert e.value.args == (path,)
    monkeypatch.setattr(parallel, "PARALLEL_BYTES", 0)
    missing = str(tmp_path / "missing.json")
    with pytest.raises(parallel.NotPlanned) as e:
        parallel.read_ranges(missing, _Reader)
    assert e.value.args == (missing,)
    bad = _write(tmp_path, name="bad.pt.trace.json")
    text = open(bad).read().replace('"dur": 1}', '"dur": NaN}', 1)
    open(bad, "w").write(text)
    with pytest.raises(parallel.NotPlanned) as e:
        parallel._read_range(bad, _Reader, _json.plan_array(bad, 0).split(bad, 1)[0])
    assert e.value.args == (bad,)
    with pytest.raises(parallel.NotPlanned):
        parallel.read_ranges(bad, _Reader)
    assert len(read_kineto(bad)) == PADS + 5  # the whole-file path repairs it: the NaN pad left out


def test_invalid_utf8_is_counted_once_per_block(tmp_path, monkeypatch):
    """A bad byte in the first op and one in a flow end near the file's end: blocks of 100,000 bytes put
    them in two blocks, each counted once (2); the reader is of the file read."""
    events = _events()
    events[4]["name"] = "y\udcff"
    events[-6]["name"] = "x\udcff"
    path = tmp_path / "u.pt.trace.json"
    path.write_bytes(json.dumps({"traceEvents": events}).encode().replace(b"\\udcff", b"\xff"))
    monkeypatch.setattr(_json, "_BLOCK", 100_000)
    plan = _json.plan_array(str(path), 0)
    reader = parallel._read_range(str(path), _Reader, plan.split(str(path), 1)[0])
    assert reader.count["utf8"] == 2 and reader.path == str(path)


def test_one_range_without_fork(tmp_path, monkeypatch, in_process):
    monkeypatch.setattr(parallel, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(forked, "can_fork", lambda: False)
    path = _write(tmp_path)
    reader, top = parallel.read_ranges(path, _Reader)
    assert in_process.made == []
    assert sum(len(p["ts"]) for p in reader.ev_parts) == PADS + 6
    assert set(top) == {"schemaVersion", "traceEvents", "displayTimeUnit"} and bytes(top["traceEvents"]) == b"[]"


def test_a_child_without_a_value_and_a_parent_that_fails(tmp_path, monkeypatch, in_process):
    """The child's None sends the caller to the whole-file path; the parent's own error stops the child
    (killed) and goes up as it is."""
    monkeypatch.setattr(parallel, "PARALLEL_BYTES", 0)
    path = _write(tmp_path)
    monkeypatch.setattr(_InProcess, "result", lambda self: None)
    with pytest.raises(parallel.NotPlanned) as e:
        parallel.read_ranges(path, _Reader)
    assert e.value.args == (path,)

    class Failing(_Reader):
        def __init__(self, path):
            raise InputError(path, "parent")

    with pytest.raises(InputError, match="parent"):
        parallel.read_ranges(path, Failing)
    assert in_process.made[-1].killed


@pytest.mark.skipif(not forked.can_fork(), reason="needs fork and a second CPU")
def test_a_real_child(tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "PARALLEL_BYTES", 0)
    path = _write(tmp_path)
    reader, _ = parallel.read_ranges(path, _Reader)
    assert sum(len(p["ts"]) for p in reader.ev_parts) == PADS + 6 and "z" in reader.strs
