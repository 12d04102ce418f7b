"""The on_trace_ready handler on the real torch.profiler (CPU), and the NPU path with a fake profiler."""
import gzip
import json
import logging
import os
import re
import shutil
import socket
import threading
import time

import pytest

torch = pytest.importorskip("torch")
from canning import profiling_suite as ps  # noqa: E402
from canning_tb.analysis.digest import analysis_revision  # noqa: E402
from canning_tb.analysis.digest_pb2 import Digest  # noqa: E402
from canning_tb.handler import TraceHandler  # noqa: E402
from canning_tb.ingest.table import InputError  # noqa: E402
from canning_tb.store import Store, source_digest  # noqa: E402

TRACE_RE = re.compile(r"^(?P<worker>.+?)\.(?P<window>\d+)\.pt\.trace\.json(\.gz)?$")
NET = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))


def train(handler, windows=2, wait=1, warmup=1, active=2, steps=None, **kw):
    sched = ps.schedule(wait=wait, warmup=warmup, active=active, repeat=windows)
    with ps.Profile(activities=[ps.ProfilerActivity.CPU], schedule=sched, on_trace_ready=handler, **kw) as prof:
        for _ in range(steps or windows * (wait + warmup + active) + 1):
            NET(torch.randn(16, 32)).sum().backward()
            prof.step()
    return prof


@pytest.fixture(autouse=True)
def single_process_env(monkeypatch):
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)


def listing(d):
    return sorted(n for n in os.listdir(d) if not n.startswith("."))


def test_files_per_window_and_manifest(tmp_path):
    run = tmp_path / "run"
    train(ps.tensorboard_trace_handler(str(run)), windows=3, record_shapes=True, profile_memory=True)
    names = listing(run)
    traces = [n for n in names if TRACE_RE.match(n)]
    manifests = [n for n in names if n.endswith(".canning.json")]
    assert len(traces) == 3 and len(manifests) == 3  # one per window of the schedule (repeat=3)
    assert not [n for n in os.listdir(run) if n.endswith(".tmp")]
    for i, (t, m) in enumerate(zip(traces, manifests)):
        g = TRACE_RE.match(t)
        assert g["worker"] == f"rank0.{socket.gethostname()}.{os.getpid()}"
        assert m == f"{g['worker']}.{g['window']}.canning.json"
        man = json.loads((run / m).read_text())
        trace = json.loads(gzip.decompress((run / t).read_bytes()))
        steps = sorted(int(e["name"].split("#")[1]) for e in trace["traceEvents"]
                       if e.get("name", "").startswith("ProfilerStep#"))
        assert man["format_version"] == 1 and man["window"] == i
        assert (man["rank"], man["world_size"], man["local_rank"]) == (0, 1, 0)
        assert man["pid"] == os.getpid() and man["host"] == socket.gethostname()
        assert man["steps"] == steps == [4 * i + 2, 4 * i + 3]
        assert man["files"] == [{"name": t, "bytes": (run / t).stat().st_size}]
        assert man["trace_events"] == len(trace["traceEvents"])
        assert man["wall_start_ns"] < man["wall_end_ns"] and len(man["step_times_ns"]) == 2
        assert man["versions"]["torch"] == torch.__version__
        assert man["devices"][0]["kind"] == "cpu"
        assert man["settings"]["record_shapes"] and man["settings"]["profile_memory"]
        assert man["settings"]["activities"] == ["CPU"] and "active=2" in man["settings"]["schedule"]
    # scalars: readable by TensorBoard, x = last profiled step of each window
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    ea = EventAccumulator(str(run))
    ea.Reload()
    st = ea.Scalars("canning/step_time_ms")
    assert [s.step for s in st] == [3, 7, 11] and all(s.value > 0 for s in st)


def test_plain_json_custom_worker_and_raw_torch_profile(tmp_path):
    h = ps.tensorboard_trace_handler(str(tmp_path), worker_name="w.x", use_gzip=False)
    sched = torch.profiler.schedule(wait=0, warmup=1, active=1, repeat=2)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                on_trace_ready=h) as prof:
        for _ in range(5):
            NET(torch.randn(4, 32)).sum()
            prof.step()
    h.canning_flush()  # a raw torch profile never calls it (ps.Profile.stop() does): the writes run in the background
    traces = [n for n in listing(tmp_path) if TRACE_RE.match(n)]
    assert len(traces) == 2 and all(n.endswith(".pt.trace.json") and TRACE_RE.match(n)["worker"] == "w.x"
                                    for n in traces)
    mans = [json.loads((tmp_path / n).read_text()) for n in listing(tmp_path) if n.endswith(".canning.json")]
    assert [m["steps"] for m in mans] == [[1], [3]]
    assert "traceEvents" in json.loads((tmp_path / traces[0]).read_text())


def test_atomic_publication_seen_by_a_poller(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    stop, problems, seen = threading.Event(), [], set()

    def poll():
        while True:
            last = stop.is_set()  # one more pass after training ended: it sees the last window too
            names = os.listdir(run)
            for n in names:
                if n.startswith(".") or n.endswith(".tmp") or n in seen or n.startswith("events."):
                    continue
                try:
                    if n.endswith(".gz"):
                        assert "traceEvents" in json.loads(gzip.decompress((run / n).read_bytes()))
                    elif n.endswith(".canning.json"):
                        man = json.loads((run / n).read_text())
                        for f in man["files"]:  # the trace was there before its manifest
                            assert f["name"] in names, f"{n} visible before {f['name']}"
                    seen.add(n)
                except Exception as e:  # noqa: BLE001  any failure here is a torn or early file
                    problems.append(f"{n}: {type(e).__name__}: {e}")
            if last:
                return

    t = threading.Thread(target=poll, daemon=True)
    t.start()
    try:
        train(ps.tensorboard_trace_handler(str(run)), windows=4, wait=0, record_shapes=True)
    finally:
        stop.set()
        t.join()
    assert not problems, problems
    assert len([n for n in seen if n.endswith(".canning.json")]) == 4


def test_unwritable_directory_warns_once_and_later_windows_retry(tmp_path, caplog):
    blocker = tmp_path / "afile"
    blocker.write_text("a file where the run folder's parent should be")  # fails even for root
    run = blocker / "run"
    h = ps.tensorboard_trace_handler(str(run))
    with caplog.at_level(logging.WARNING):
        prof = train(h, windows=3, wait=0, warmup=1, active=1)
    assert prof.step_num == 7  # training went on through every window
    warns = [r for r in caplog.records if r.levelno == logging.WARNING and "canning" in r.getMessage()]
    assert len(warns) == 1 and str(run) in warns[0].getMessage()
    blocker.unlink()  # the disk is writable again: the next window is written
    caplog.clear()
    train(h, windows=1, wait=0)
    assert len([n for n in listing(run) if n.endswith(".canning.json")]) == 1
    assert json.loads((run / [n for n in listing(run) if n.endswith(".canning.json")][0]).read_text())["window"] == 3  # windows 0-2 failed


def test_digest_in_background_never_blocks(tmp_path):
    h = TraceHandler(str(tmp_path), digest=True)
    train(h, windows=1)
    assert len(h._children) == 1
    assert h._children[0].wait(timeout=90) == 0  # exits quietly even when the digest cannot be built
    assert source_digest.main([str(tmp_path / "missing.canning.json")]) == 0
    assert [n for n in listing(tmp_path) if n.endswith(".digest.pb")], listing(tmp_path)


def test_a_copy_that_changed_the_times_keeps_the_digests_written_at_the_source(tmp_path):
    """cp -r and aws s3 sync give every file a new time, in no particular order: a digest may then look
    older than its trace. The sizes the manifest records still say it is the same window, so the viewer
    reads the digest instead of the trace; a trace of another size is read again."""
    run = tmp_path / "logs" / "run"
    h = TraceHandler(str(run), digest=True)
    train(h, windows=2)
    # the digests still running exit cleanly (one done before the next window is reaped by then: on a fast
    # machine only the second is left); both digests are checked to exist below
    assert [c.wait(timeout=120) for c in h._children] == [0] * len(h._children) and len(h._children) in (1, 2)
    copy = tmp_path / "copy" / "run"
    shutil.copytree(run, copy, copy_function=shutil.copyfile)  # new times, as a plain copy gives
    later = time.time() + 3600
    digests = sorted(copy.glob("*.digest.pb"))
    traces = sorted(p for p in copy.iterdir() if TRACE_RE.match(p.name))
    assert len(digests) == len(traces) == 2
    # the digests at the source record the analysis code that made them (store/lookup.py's freshness rule)
    assert {Digest.FromString(p.read_bytes()).analysis_revision for p in digests} == {analysis_revision()}
    for trace in traces:
        trace.write_bytes(b"\0" * trace.stat().st_size)  # same size, no longer a trace: reading it fails
        os.utime(trace, (later, later))  # ... and newer than the digests
    store = Store(str(copy.parent), cache_dir=str(tmp_path / "cache"))
    (name,) = store.runs()
    (worker,) = store.workers(name)
    windows = store.windows(name, worker.name)
    assert len(windows) == 2
    for win in windows:
        digest = copy / os.path.basename(win.path).replace(".canning.json", ".digest.pb")
        assert store.digest(name, worker.name, win.id) == Digest.FromString(digest.read_bytes())
    with open(traces[1], "ab") as f:  # a trace that changed since its digest: read again
        f.write(b"\0")
    fresh = Store(str(copy.parent), cache_dir=str(tmp_path / "cache2"))
    with pytest.raises(InputError):
        fresh.digest(name, worker.name, fresh.windows(name, worker.name)[1].id)
