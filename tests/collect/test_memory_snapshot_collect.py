"""ps.Profile(memory_snapshot=True): the allocator's history recorded during the window and one snapshot per
window written beside the trace, atomically, listed in the manifest; on the CPU said once, training untouched.

The NPU path runs against the FAKE torch_npu of tests/npu_double (the real one needs Ascend hardware): its
allocator cannot run here, so its `_snapshot()` hands back a REAL snapshot recorded on an Ascend NPU
(tests/fixtures/memory_snapshot, SOURCES.md). The CPU has no allocator history at all: that path is the real one."""
import os
import pickle
import warnings

import pytest

torch = pytest.importorskip("torch")
from canning import profiling_suite as ps  # noqa: E402
from canning_tb.queries.memory_snapshot import snapshot_impl  # noqa: E402
from canning_tb.store import Store  # noqa: E402
from conftest import fixture_path  # noqa: E402
from test_npu import NPU, manifests, use_double, work  # noqa: E402

SNAP = "snapshot_with_empty_cache.pkl"


@pytest.fixture(autouse=True)
def no_double_left():
    yield
    import sys
    for name in [m for m in sys.modules if m == "torch_npu" or m.startswith("torch_npu.")]:
        del sys.modules[name]


def test_npu_windows_get_their_snapshot(tmp_path, monkeypatch):
    use_double(monkeypatch)
    monkeypatch.setenv("NPU_DOUBLE_SNAPSHOT", str(fixture_path("memory_snapshot", SNAP)))
    run = tmp_path / "run"
    with ps.Profile(activities=NPU, schedule=ps.schedule(wait=1, warmup=1, active=2, repeat=2),
                    on_trace_ready=ps.tensorboard_trace_handler(str(run)), memory_snapshot=True,
                    memory_snapshot_entries=5000) as prof:
        work(10, prof)
    import torch_npu
    calls = torch_npu.npu.memory.calls
    assert calls[0] == ("all", 5000) and [c[0] for c in calls] == ["all", None]  # recorded while collecting, then off
    mans = manifests(run)
    assert len(mans) == 2
    with open(fixture_path("memory_snapshot", SNAP), "rb") as f:
        real = pickle.load(f)  # the trusted fixture
    for man in mans:
        (snap,) = [f for f in man["files"] if f["name"].endswith(".snapshot.pickle")]
        assert snap["name"] == man["manifest"].replace(".canning.json", ".snapshot.pickle")
        path = run / snap["name"]
        assert path.stat().st_size == snap["bytes"]
        with open(path, "rb") as f:
            assert pickle.load(f) == real  # ours, just written: what the allocator handed over
    assert not [n for n in os.listdir(run) if n.startswith(".")]  # no temp file left
    store = Store(str(tmp_path))
    (worker,) = store.workers("run")
    wins = store.windows("run", worker.name)
    assert all(len(w.snapshots) == 1 and "with a memory snapshot" in w.label for w in wins)
    got = snapshot_impl(store, "run", worker.name, wins[0].id)
    assert got["segments"] == len(real["segments"]) and got["devices"][0]["entries"] == len(real["device_traces"][0])
    # prof.memory_summary(): the snapshot of the last window explained in its notes (text and to_dict)
    notes = prof.memory_summary().to_dict()["notes"]
    assert any(n.startswith("memory snapshot ") for n in notes)
    assert any("LEAK: train_one_step (" in n for n in notes)  # the fixture's job leaks 40 MiB a step


def test_cpu_says_once_and_writes_no_snapshot(tmp_path):
    run = tmp_path / "run"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):  # two collections of one profile: said once
            prof = ps.Profile(activities=[ps.ProfilerActivity.CPU], schedule=ps.schedule(wait=0, warmup=1, active=1),
                              on_trace_ready=ps.tensorboard_trace_handler(str(run), digest=False), memory_snapshot=True)
            prof.start()
            work(3, prof)
            prof.stop()
    said = [w for w in caught if "no allocator history" in str(w.message)]
    assert len(said) == 2  # once per profile
    mans = manifests(run)
    assert mans and not [f for m in mans for f in m["files"] if f["name"].endswith(".pickle")]
    assert not [n for n in os.listdir(run) if n.endswith(".pickle")]


def test_out_of_memory_writes_the_snapshot(tmp_path, monkeypatch):
    """memory_snapshot_on_oom=True: the double's allocator calls the observer as torch_npu's does before it raises
    (there is no NPU to exhaust here); the snapshot it hands over (the real fixture) lands in the run folder."""
    use_double(monkeypatch)
    monkeypatch.setenv("NPU_DOUBLE_SNAPSHOT", str(fixture_path("memory_snapshot", SNAP)))
    run = tmp_path / "run"
    prof = ps.Profile(activities=NPU, schedule=ps.schedule(wait=0, warmup=1, active=1),
                      on_trace_ready=ps.tensorboard_trace_handler(str(run), worker_name="rank0"),
                      memory_snapshot_on_oom=True)
    prof.start()
    work(3, prof)  # one window written: without memory_snapshot=True it gets no snapshot of its own
    import torch_npu
    torch_npu._C._fake_oom(0, 8 << 30, 60 << 30, 1 << 30)  # asked 8 GiB with 1 GiB free
    prof.stop()
    (name,) = [n for n in os.listdir(run) if n.endswith(".snapshot.pickle") and not n.startswith(".")
               and n.split(".")[1].isdigit() and len(n.split(".")[1]) == 13]
    assert name.startswith("rank0.")
    with open(run / name, "rb") as f, open(fixture_path("memory_snapshot", SNAP), "rb") as g:
        assert pickle.load(f) == pickle.load(g)  # ours, just written, and the trusted fixture
    store = Store(str(tmp_path))
    wins = [w for w in store.windows("run", "rank0") if w.format == "snapshot"]
    assert len(wins) == 1 and "memory snapshot" in wins[0].label
    assert all(not w.snapshots for w in store.windows("run", "rank0") if w.format == "canning")
    assert [m for m in manifests(run) if m["steps"]]  # the window itself was written
