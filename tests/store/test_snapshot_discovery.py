"""Memory snapshots in a logdir (issue 41): a run folder holding only a snapshot is a run (it said "no profiles
found"); a snapshot named like a trace is attached to that window; a pickle that is no snapshot is no window; a
hostile one is listed, then refused with the file named, and nothing runs. Real files: the Ascend snapshots and
the Kineto traces of tests/fixtures (SOURCES.md)."""
import os
import pickle
import shutil

import pytest

from canning_tb.queries.errors import NotFound, Unreadable
from canning_tb.queries.memory_snapshot import snapshot_impl, snapshot_series_impl, snapshot_state_impl
from canning_tb.store import Store
from conftest import fixture_path

SNAP = "snapshot_with_empty_cache.pkl"


def copy_snapshot(folder, name=SNAP, as_name=None):
    os.makedirs(folder, exist_ok=True)
    shutil.copy(fixture_path("memory_snapshot", name), os.path.join(folder, as_name or name))


def test_a_folder_with_a_snapshot_alone_is_a_run(tmp_path):
    copy_snapshot(tmp_path / "job")
    store = Store(str(tmp_path))
    assert store.runs() == ["job"]
    (worker,) = store.workers("job")
    (win,) = store.windows("job", worker.name)
    assert win.format == "snapshot" and "memory snapshot" in win.label and len(win.snapshots) == 1
    assert store.digest("job", worker.name, win.id).window.format == "snapshot"  # every view opens, empty
    got = snapshot_impl(store, "job", worker.name, win.id, limit=3)
    with open(fixture_path("memory_snapshot", SNAP), "rb") as f:
        plain = pickle.load(f)  # the trusted fixture, read plainly
    assert got["segments"] == len(plain["segments"]) and got["file"] == "job/" + SNAP
    dev = got["devices"][0]
    assert dev["joined"] is False and "no times" in dev["join"]
    assert len(dev["peak"]["by_frame"]) <= 3 and len(dev["peak"]["top_blocks"]) <= 3
    series = snapshot_series_impl(store, "job", worker.name, win.id, points=10)
    assert len(series["requested"]) == 10
    state = snapshot_state_impl(store, "job", worker.name, win.id, entry=0)
    assert state["entry"] == 0
    with pytest.raises(NotFound):
        snapshot_series_impl(store, "job", worker.name, win.id, device=5)


def test_a_snapshot_named_like_a_trace_joins_its_window(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    trace = "worker0.1623143089861.pt.trace.json.gz"
    shutil.copy(fixture_path("kineto", "resnet50_v100", trace), run / trace)
    copy_snapshot(run, as_name="worker0.1623143089861.snapshot.pickle")
    store = Store(str(tmp_path))
    (worker,) = store.workers("run")
    (win,) = store.windows("run", "worker0")
    assert win.format == "kineto" and [os.path.basename(p) for p in win.snapshots] == [
        "worker0.1623143089861.snapshot.pickle"]
    assert "with a memory snapshot" in win.label
    got = snapshot_impl(store, "run", "worker0", win.id)
    # the Ascend snapshot carries no times: never placed on the trace's steps by a guess
    assert got["devices"][0]["joined"] is False


def test_pickles_that_are_not_snapshots_are_not_windows(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "losses.pkl").write_bytes(pickle.dumps({"loss": [0.5, 0.4]}))
    (run / "notes.pickle").write_bytes(b"just text")
    assert Store(str(tmp_path)).runs() == []


class _RunsCode:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_hostile_snapshot_is_refused_with_its_name(tmp_path):
    marker = tmp_path / "ran"
    run = tmp_path / "run"
    run.mkdir()
    (run / "rank0.pickle").write_bytes(pickle.dumps({"segments": [], "device_traces": [_RunsCode(marker)]}))
    store = Store(str(tmp_path))
    (win,) = store.windows("run", "rank0")
    with pytest.raises(Unreadable) as err:
        snapshot_impl(store, "run", "rank0", win.id)
    assert "run/rank0.pickle" in str(err.value) and "refused" in str(err.value)
    from canning_tb.ingest import InputError
    with pytest.raises(InputError):
        store.digest("run", "rank0", win.id)
    assert not marker.exists()


def test_a_snapshot_with_times_is_joined_to_the_trace(tmp_path, fresh_trace):
    """A real torch.profiler trace of this torch (it gives baseTimeNanoseconds) and beside it a snapshot written in
    the test whose entries carry wall-clock times inside the trace's ProfilerStep ranges (the CPU has no allocator
    to record one). The steps and operators expected are read from the raw trace here, independently."""
    import gzip
    import json
    raw = json.load(gzip.open(fresh_trace))
    base = int(raw["baseTimeNanoseconds"])
    steps = sorted((int(e["name"].split("#")[1]), int(e["ts"] * 1000), int((e["ts"] + e["dur"]) * 1000))
                   for e in raw["traceEvents"] if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#"))
    assert len(steps) == 2
    ops = [e for e in raw["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    frames = [{"name": "train", "filename": "/job/train.py", "line": 9}]
    trace = []
    want_ops = []
    for num, start, end in steps:  # one 1 MiB block per step, never freed, allocated in the middle of the step's
        # longest operator (the step's middle may fall between operators on a loaded machine: then none is open)
        inside = [e for e in ops if start <= e["ts"] * 1000 and (e["ts"] + e["dur"]) * 1000 <= end]
        longest = max(inside, key=lambda e: e["dur"])
        at_ns = int((longest["ts"] + longest["dur"] / 2) * 1000)
        trace.append({"action": "alloc", "addr": num << 20, "size": 1 << 20, "stream": 0, "frames": frames,
                      "time_us": (base + at_ns) // 1000})
        t_ns = (base + at_ns) // 1000 * 1000 - base  # the µs the allocator keeps, back on the trace's clock
        open_ = [e for e in ops if e["ts"] * 1000 <= t_ns <= (e["ts"] + e["dur"]) * 1000]
        want_ops.append(max(open_, key=lambda e: e["ts"])["name"] if open_ else "")
    snap = {"segments": [{"device": 0, "address": 0, "total_size": 64 << 20, "allocated_size": 2 << 20,
                          "active_size": 2 << 20, "requested_size": 2 << 20, "stream": 0, "segment_type": "large",
                          "blocks": [{"address": n << 20, "size": 1 << 20, "requested_size": 1 << 20,
                                      "state": "active_allocated"} for n, _, _ in steps]}],
            "device_traces": [trace]}
    run = tmp_path / "run"
    run.mkdir()
    name = os.path.basename(fresh_trace)
    shutil.copy(fresh_trace, run / name)
    stem = name[:-len(".pt.trace.json.gz")]
    (run / f"{stem}.snapshot.pickle").write_bytes(pickle.dumps(snap))
    store = Store(str(tmp_path))
    (worker,) = store.workers("run")
    (win,) = store.windows("run", worker.name)
    assert len(win.snapshots) == 1
    dev = snapshot_impl(store, "run", worker.name, win.id)["devices"][0]
    assert dev["joined"] and dev["steps_source"] == "window steps, by time"
    assert [(g["step"], g["grown"]) for g in dev["growth"]] == [(n, 1 << 20) for n, _, _ in steps]
    tops = sorted(dev["peak"]["top_blocks"], key=lambda b: b["entry"])
    assert any(want_ops) and [b.get("operator", "") for b in tops] == want_ops
