"""store/trends.py under mutation (issue 46): the trend files of tiny hand-written Kineto traces, read
back with TensorBoard's own event reader. One step, ProfilerStep#7, of 10 µs: step_time_ms = 0.01 and
the point at step 7; which runs and windows get points, the record of what was written, one file per
worker, the rank suffix, and the wall time (the trace's end when it is a wall-clock time)."""
import dataclasses
import json
import logging
import os
import stat
import threading

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from canning_tb.store import trends as trends_mod
from canning_tb.store.store import Store
from canning_tb.store.trends import TrendWriter

TAG = "canning/from_trace/step_time_ms"


def trace_text(ts=99, op="aten::mm"):
    """One operator inside ProfilerStep#7, which runs from `ts` for 10 µs."""
    return json.dumps({"traceEvents": [
        {"ph": "X", "name": op, "cat": "cpu_op", "ts": ts + 1, "dur": 5, "pid": 1, "tid": 1},
        {"ph": "X", "name": "ProfilerStep#7", "cat": "user_annotation", "ts": ts, "dur": 10, "pid": 1, "tid": 1}]})


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def points(folder, tag=TAG):
    """[(step, value, wall time)] of `tag` in the event files of `folder`, by TensorBoard's reader."""
    events = EventAccumulator(str(folder))
    events.Reload()
    if tag not in events.Tags()["scalars"]:
        return []
    return [(p.step, p.value, p.wall_time) for p in events.Scalars(tag)]


def record(run):
    return json.loads((run / ".canning" / "trends" / "written.json").read_text())


@pytest.fixture
def on(monkeypatch):
    monkeypatch.setenv("CANNING_WRITE_TRENDS", "1")


def test_one_point_per_window_at_its_last_step_and_the_record(tmp_path):
    run = tmp_path / "logdir" / "r"
    write(run / "w.pt.trace.json", trace_text())
    store = Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "c"))
    assert TrendWriter().write_new(store) == 1
    out = run / ".canning" / "trends"
    (step, value, _), = points(out)
    assert step == 7 and value == pytest.approx(0.01, rel=1e-6)  # 10 µs = 0.01 ms (float32)
    wid = store.windows("r", "w")[0].id
    assert record(run) == {f"w\0{wid}": "written"}
    assert TrendWriter().write_new(store) == 0  # recorded: a restart adds no point
    assert len(points(out)) == 1
    assert [n for n in os.listdir(out) if n.startswith("events.out.tfevents.")] == \
        [n for n in os.listdir(out) if n != "written.json"]


def test_workers_get_their_own_files_and_rank_suffixes(tmp_path):
    """rank2, rank5 and a rank-less worker in one run: world size 3, tags .../rank2, .../rank5 and .../rank0 (no
    rank: 0), one event file each."""
    run = tmp_path / "logdir" / "r"
    write(run / "rank5.pt.trace.json", trace_text())
    write(run / "rank2.pt.trace.json", trace_text())
    write(run / "host.pt.trace.json", trace_text())
    writer = TrendWriter()
    assert writer.write_new(Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "c"))) == 3
    out = run / ".canning" / "trends"
    files = sorted(n for n in os.listdir(out) if n.startswith("events."))
    assert len(files) == 3 and len(writer._writers) == 3
    for rank in (0, 2, 5):
        (step, value, _), = points(out, f"{TAG}/rank{rank}")
        assert step == 7
    assert points(out) == [] and points(out, f"{TAG}/rank1") == []


def test_windows_without_steps_are_placed_by_their_position(tmp_path):
    """Two windows of one worker (spans 1 and 2) with no ProfilerStep: points at x = 0 and 1; a window added
    later is written after the recorded one."""
    run = tmp_path / "logdir" / "r"
    no_steps = json.dumps({"traceEvents": [{"ph": "X", "name": "aten::mm", "cat": "cpu_op", "ts": 100, "dur": 5,
                                            "pid": 1, "tid": 1}]})
    write(run / "w.1.pt.trace.json", no_steps)
    store = Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "c"))
    assert TrendWriter().write_new(store) == 1
    write(run / "w.2.pt.trace.json", no_steps)
    store.refresh()
    assert TrendWriter().write_new(store) == 1  # the first is recorded: the loop goes on to the second
    tag = "canning/from_trace/top_op_ms_per_step"
    assert sorted(p[0] for p in points(run / ".canning" / "trends", tag)) == [0, 1]


def test_the_wall_time_is_the_traces_end_from_1e18_ns_on(tmp_path, monkeypatch):
    """A step ending at exactly 10^18 ns (ts 999,999,999,999,990 µs + 10 µs) is a wall-clock time: 10^9 s.
    An end below it (109 µs) is a profiler clock: the time of writing (a stand-in clock: 1234.5)."""
    write(tmp_path / "logdir" / "a" / "w.pt.trace.json", trace_text(ts=999_999_999_999_990))
    write(tmp_path / "logdir" / "b" / "w.pt.trace.json", trace_text())
    monkeypatch.setattr(trends_mod.time, "time", lambda: 1234.5)
    assert TrendWriter().write_new(Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "c"))) == 2  # a, b
    (_, _, wall), = points(tmp_path / "logdir" / "a" / ".canning" / "trends")
    assert wall == 1e9
    (_, _, wall), = points(tmp_path / "logdir" / "b" / ".canning" / "trends")
    assert wall == 1234.5


class Marked:
    """A Store whose windows of worker "late" are said to be still being written."""
    def __init__(self, store):
        self._store = store

    def windows(self, run, worker):
        wins = self._store.windows(run, worker)
        return [dataclasses.replace(w, status="analysing") for w in wins] if worker == "late" else wins

    def __getattr__(self, name):
        return getattr(self._store, name)


def test_only_ready_windows_unwritten_ones_and_errors_recorded(tmp_path):
    run = tmp_path / "logdir" / "r"
    write(run / "ok.pt.trace.json", trace_text())
    write(run / "late.pt.trace.json", trace_text())
    write(run / "bad.pt.trace.json", '{"traceEvents": [')
    store = Marked(Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "c")))
    assert TrendWriter().write_new(store) == 1
    rec = record(run)
    assert sorted(k.split("\0")[0] for k in rec) == ["bad", "ok"]
    bad = next(v for k, v in rec.items() if k.startswith("bad"))
    assert bad.startswith("error: ") and "bad.pt.trace.json: not JSON" in bad


def test_read_only_runs_remote_stores_and_unwritable_trend_folders_get_none(tmp_path, caplog):
    """Runs in name order: "a_ro" (read-only) and "blocked" come before "ok", which is still written."""
    write(tmp_path / "logdir" / "a_ro" / "w.pt.trace.json", trace_text())
    write(tmp_path / "logdir" / "blocked" / "w.pt.trace.json", trace_text())
    write(tmp_path / "logdir" / "blocked" / ".canning", "a file where the folder would go")
    write(tmp_path / "logdir" / "ok" / "w.pt.trace.json", trace_text())
    ro = tmp_path / "logdir" / "a_ro"
    ro.chmod(0o555)
    try:
        store = Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "c"))
        assert TrendWriter().write_new(store) == 1
        assert os.listdir(ro) == ["w.pt.trace.json"]
        assert [r.getMessage() for r in caplog.records] == [
            f"canning: no trends for blocked: [Errno 20] .canning is a link or not a folder: not written through: "
            f"'{tmp_path / 'logdir' / 'blocked' / '.canning' / 'trends'}'"]
        assert points(tmp_path / "logdir" / "ok" / ".canning" / "trends")
        write(tmp_path / "logdir" / "new" / "w.pt.trace.json", trace_text())
        store.refresh()
        store.remote = object()  # a remote logdir: TensorBoard reads the bucket, not our copy
        assert TrendWriter().write_new(store) == 0
        assert not os.path.exists(tmp_path / "logdir" / "new" / ".canning")
    finally:
        ro.chmod(stat.S_IRWXU)


def test_an_unreadable_record_is_an_empty_one(tmp_path):
    run = tmp_path / "logdir" / "r"
    write(run / "w.pt.trace.json", trace_text())
    write(run / ".canning" / "trends" / "written.json", "{not json")
    assert TrendWriter().write_new(Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "c"))) == 1
    assert list(record(run).values()) == ["written"]


def test_kick_writes_in_a_thread_only_when_turned_on(tmp_path, monkeypatch, caplog):
    run = tmp_path / "logdir" / "r"
    write(run / "w.pt.trace.json", trace_text())
    store = Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "c"))
    writer = TrendWriter()
    writer.join(1)  # nothing started: returns at once
    writer.kick(store)
    assert writer._thread is None  # not turned on
    monkeypatch.setenv("CANNING_WRITE_TRENDS", "yes")
    writer.kick(None)
    assert writer._thread is None
    release, calls = threading.Event(), []
    monkeypatch.setattr(writer, "write_new", lambda s: calls.append(s) or release.wait())
    writer.kick(store)
    first = writer._thread
    assert first.name == "canning-trends" and first.daemon
    writer.kick(store)  # one is writing: not a second
    assert writer._thread is first
    writer.join(0)  # waits no longer than asked
    assert first.is_alive()
    release.set()
    writer.join(None)
    assert calls == [store] and not first.is_alive()
    monkeypatch.setattr(writer, "write_new", lambda s: 1 / 0)
    with caplog.at_level(logging.ERROR, logger="canning_tb.store"):
        writer.kick(store)
        writer.join(None)  # the bug is logged, the thread ends
    assert [r.getMessage() for r in caplog.records] == ["canning: writing trends failed"]


def test_two_writers_in_one_second_write_two_files(tmp_path, monkeypatch):
    """ScalarWriter names its file by the second: the second worker's gets ".1" after the same name."""
    monkeypatch.setattr("canning_tb.util.scalars.time.time", lambda: 1_700_000_000.0)
    run = tmp_path / "logdir" / "r"
    write(run / "a.pt.trace.json", trace_text())
    write(run / "b.pt.trace.json", trace_text())
    TrendWriter().write_new(Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "c")))
    names = sorted(n for n in os.listdir(run / ".canning" / "trends") if n.startswith("events."))
    assert len(names) == 2 and names[1] == names[0] + ".1"
