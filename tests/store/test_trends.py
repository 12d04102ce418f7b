"""Trends in TensorBoard's Scalars tab for windows of other formats (store/trends.py), when the user turns
them on (CANNING_WRITE_TRENDS=1; by default the Overview shows them: tests/plugin/test_trends_route.py):
written only into <run>/.canning/trends of writable runs, read back with TensorBoard's own event reader and
through a real TensorBoard's scalars plugin, the values checked against the raw traces; read-only
runs and the user's files untouched; no duplicate points after a restart."""
import gzip
import json
import os
import shutil
import stat
import time

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from _compare_pairs import ACTIVE, write_gelu
from canning_tb.store import Store
from canning_tb.store.trends import TREND_DIR, TrendWriter
from conftest import fixture_path
from test_plugin_routes import fetch_json, start_tensorboard, stop_tensorboard

TAG = "canning/from_trace/step_time_ms"


def raw_steps(folder):
    """(last ProfilerStep number, mean step ms) of the run's one trace, read here."""
    (path,) = folder.glob("*.pt.trace.json.gz")
    with gzip.open(path, "rt") as f:
        steps = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#")]
    assert len(steps) == ACTIVE
    return max(int(e["name"].split("#")[1]) for e in steps), sum(e["dur"] for e in steps) / len(steps) / 1000


def snapshot(folder):
    return sorted((str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*"))


@pytest.fixture
def logdir(tmp_path):
    write_gelu(str(tmp_path / "gelu"), fused=False)
    shutil.copytree(fixture_path("kineto", "resnet50_v100"), tmp_path / "readonly")
    readonly = tmp_path / "readonly"
    for p in [readonly, *readonly.iterdir()]:
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    yield tmp_path
    readonly.chmod(readonly.stat().st_mode | stat.S_IWUSR)


def test_written_for_writable_runs_only_and_once(logdir, tmp_path_factory):
    user_files = snapshot(logdir / "gelu")
    before = snapshot(logdir / "readonly")
    store = Store(str(logdir), cache_dir=str(tmp_path_factory.mktemp("cache")))
    assert TrendWriter().write_new(store) == 1
    assert snapshot(logdir / "readonly") == before  # nothing written into a read-only run
    # the user's files are as they were; ours are all under .canning/
    assert [f for f in snapshot(logdir / "gelu") if not f[0].startswith(".canning")] == user_files
    trends = logdir / "gelu" / TREND_DIR
    events = EventAccumulator(str(trends))
    events.Reload()
    (point,) = events.Scalars(TAG)
    last_step, mean_ms = raw_steps(logdir / "gelu")
    assert point.step == last_step and point.value == pytest.approx(mean_ms, abs=0.01)
    tags = set(events.Tags()["scalars"])
    assert {"canning/from_trace/breakdown_share/host", "canning/from_trace/memory_peak_bytes",
            "canning/from_trace/top_op_ms_per_step"} <= tags
    host, idle = (events.Scalars(f"canning/from_trace/breakdown_share/{c}")[0].value for c in ("host", "idle"))
    assert 0.5 < host <= 1 and host + idle == pytest.approx(1, abs=1e-6)  # a CPU loop: host operators and gaps
    # a restarted plugin adds no second point
    assert TrendWriter().write_new(Store(str(logdir), cache_dir=str(tmp_path_factory.mktemp("cache")))) == 0
    events = EventAccumulator(str(trends))
    events.Reload()
    assert len(events.Scalars(TAG)) == 1


def test_a_real_tensorboard_shows_them_in_scalars(logdir, tmp_path_factory, monkeypatch):
    monkeypatch.setenv("CANNING_WRITE_TRENDS", "1")  # TensorBoard inherits the environment
    proc, url, log = start_tensorboard(logdir, tmp_path_factory.mktemp("tb") / "tb.log")
    try:
        fetch_json(f"{url}/data/plugins_listing")  # TensorBoard asks the plugin is_active(): trends start
        run = "gelu/.canning/trends"
        deadline = time.monotonic() + 120
        while True:
            tags = fetch_json(f"{url}/data/plugin/scalars/tags")
            if TAG in tags.get(run, {}):
                break
            assert time.monotonic() < deadline, tags
            fetch_json(f"{url}/data/plugins_listing")
            time.sleep(1)
        (point,) = fetch_json(f"{url}/data/plugin/scalars/scalars?run={run}&tag={TAG}")
        last_step, mean_ms = raw_steps(logdir / "gelu")
        assert point[1] == last_step and point[2] == pytest.approx(mean_ms, abs=0.01)
        assert not any(name.startswith("readonly") for name in tags)
        assert not os.path.exists(logdir / "readonly" / ".canning")
    finally:
        stop_tensorboard(proc, log)


def test_an_unreadable_window_is_recorded_and_the_others_written(tmp_path):
    write_gelu(str(tmp_path / "gelu"), fused=True)
    broken = tmp_path / "broken"
    broken.mkdir()
    (good,) = (tmp_path / "gelu").glob("*.pt.trace.json.gz")
    (broken / "worker0.1.pt.trace.json.gz").write_bytes(gzip.compress(gzip.decompress(good.read_bytes())[:5000]))
    assert TrendWriter().write_new(Store(str(tmp_path), cache_dir=str(tmp_path / "cache"))) == 1
    record = json.loads((broken / TREND_DIR / "written.json").read_text())
    (state,) = record.values()
    assert state.startswith("error: ") and "worker0.1.pt.trace.json.gz" in state
    assert not list((broken / TREND_DIR).glob("events.out.tfevents.*"))


def test_handler_windows_get_the_full_figures_too(tmp_path, tmp_path_factory):
    """A window written by ps.tensorboard_trace_handler (real torch.profiler on the CPU): the handler
    writes only step time and trace size, the plugin adds the digest's figures under from_trace/."""
    torch = pytest.importorskip("torch")
    from canning import profiling_suite as ps

    run = tmp_path / "handler"
    with ps.Profile(activities=[ps.ProfilerActivity.CPU], schedule=ps.schedule(wait=0, warmup=1, active=3),
                    on_trace_ready=ps.tensorboard_trace_handler(str(run))) as prof:
        x = torch.randn(256, 256)
        for _ in range(4):
            (x @ x).relu().sum()
            prof.step()
    store = Store(str(tmp_path), cache_dir=str(tmp_path_factory.mktemp("cache")))
    assert TrendWriter().write_new(store) == 1
    events = EventAccumulator(str(run / TREND_DIR))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {TAG, "canning/from_trace/breakdown_share/host", "canning/from_trace/top_op_ms_per_step"} <= tags
    (trace,) = run.glob("*.pt.trace.json.gz")
    with gzip.open(trace, "rt") as f:
        steps = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#")]
    (point,) = events.Scalars(TAG)
    assert point.step == max(int(e["name"].split("#")[1]) for e in steps)
    # the digest's step runs from ProfilerStep#N to the later of its host end and its device work
    # (none on the CPU), so the mean equals the raw ranges' mean (trace in µs with ns decimals), kept
    # in whole ns, then written as a float32 scalar (TensorBoard's simple_value)
    mean_ns = round(sum(round(e["dur"] * 1000) for e in steps) / len(steps))
    assert point.value == pytest.approx(mean_ns / 1e6, rel=1e-7)
