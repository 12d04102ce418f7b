"""The plugin's route functions (`*_impl`) called as plain functions on a real Store: no request,
no werkzeug, no TensorBoard. Expected values from the raw traces read here with json and loops.
"""
import collections
import functools
import gzip
import json
import shutil
import time

import pytest

from conftest import fixture_path
from test_plugin_routes import HTA_WINDOW, RESNET_WINDOW, build_logdir, independent_host_self

from canning_tb.queries import sections
from canning_tb.queries.errors import BadParameter, NotFound, Unreadable
from canning_tb.queries.ranks import cluster_impl, position_of
from canning_tb.store import Store
from canning_tb.store.prefetcher import Prefetcher

RESNET = ("resnet", "worker0", RESNET_WINDOW)
HTA = ("hta", "rank1", HTA_WINDOW)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    return build_logdir(tmp_path_factory.mktemp("logdir"))


@pytest.fixture(scope="module")
def store(logdir):
    return Store(str(logdir))


@functools.lru_cache(maxsize=4)
def raw_trace(logdir, run, name):
    with gzip.open(logdir / run / name, "rt") as f:
        return json.load(f)["traceEvents"]


def test_operators_impl_against_the_raw_trace(store, logdir):
    body = sections.operators_impl(store, *RESNET)
    assert body["group_by"] == "name" and body["has_device"] is True
    truth = independent_host_self(logdir / "resnet" / f"worker0.{RESNET_WINDOW}.pt.trace.json.gz")
    for row in sorted(body["rows"], key=lambda r: -r["host_self_ns"])[:5]:
        calls, self_us = truth[row["name"]]
        assert (row["calls"], row["host_self_ns"]) == (calls, self_us * 1000)
    shapes = sections.operators_impl(store, *RESNET, group_by="shape")
    assert sum(r["calls"] for r in shapes["rows"]) == sum(r["calls"] for r in body["rows"])


def test_kernels_and_overview_impl(store, logdir):
    events = raw_trace(logdir, "resnet", f"worker0.{RESNET_WINDOW}.pt.trace.json.gz")
    # the kernels' share column divides by the window's kernel time: a page of 5 rows keeps it
    kernels = sections.kernels_impl(store, *RESNET, paging={"limit": 5})
    assert len(kernels["kernels_by_name"]) == 5 < kernels["kernels_by_name_all"]
    assert kernels["total_ns"] == 1000 * sum(e["dur"] for e in events if e.get("cat") == "Kernel")
    overview = sections.overview_impl(store, *RESNET)
    steps = sorted(e["ts"] for e in events if e.get("cat") == "Operator" and e["name"].startswith("ProfilerStep#"))
    t0 = overview["info"]["start_ns"]
    # step starts: the ProfilerStep# ranges' starts, relative to the window start
    assert [s["start_ns"] for s in overview["steps"]] == [1000 * ts - t0 for ts in steps]
    assert overview["figures"]["steps"] == len(steps)


def test_memory_range_impl_relative_times(store):
    memory = sections.memory_impl(store, *HTA)
    (cpu,) = [d for d in memory["devices"] if d["device"] == "CPU"]
    duration = memory["info"]["duration_ns"]
    lo, hi = duration // 4, duration // 2
    body = sections.memory_range_impl(store, *HTA, "CPU", lo, hi)
    inside = [e for e in cpu["events"] if lo <= e["alloc_ns"] <= hi]
    assert body["events"] == inside and inside
    assert sum(r["allocations"] for r in body["ops"]) == len(inside)
    assert sum(r["bytes"] for r in body["ops"]) == sum(e["bytes"] for e in inside)
    only_start = sections.memory_range_impl(store, *HTA, "CPU", hi, None)
    assert only_start["events"] == [e for e in cpu["events"] if e["alloc_ns"] >= hi]


@pytest.mark.parametrize("call,kind,text", [
    (lambda s: sections.overview_impl(s, "resnet", "worker0", "42"), NotFound, "unknown run/worker/window"),
    (lambda s: sections.memory_impl(s, "../etc", "worker0", RESNET_WINDOW), NotFound, "unknown run/worker/window"),
    (lambda s: sections.operators_impl(s, *RESNET, group_by="size"), BadParameter, "group_by"),
    (lambda s: sections.operator_detail_impl(s, *RESNET, "no such op"), NotFound, "unknown operator"),
    (lambda s: sections.memory_range_impl(s, *HTA, "CPU", 10, 5), BadParameter, "after"),
    (lambda s: sections.memory_range_impl(s, *HTA, "cuda:7"), NotFound, "unknown device"),
    (lambda s: sections.kernels_impl(s, "broken", "worker0", "1"), Unreadable, "broken/worker0.1.pt.trace.json.gz: "),
])
def test_impl_errors(store, call, kind, text):
    with pytest.raises(kind) as err:
        call(store)
    assert type(err.value) is kind and text in err.value.body["error"]


def test_cluster_impl_on_two_ascend_ranks(tmp_path):
    shutil.copytree(fixture_path("ascend", "level1"), tmp_path / "ascend")
    store = Store(str(tmp_path))
    prefetcher = Prefetcher(store)
    deadline = time.monotonic() + 180
    while (body := cluster_impl(store, prefetcher, "ascend", 0))["loading"]:
        assert 0 <= body["done"] <= body["total"] == 2 and time.monotonic() < deadline
    assert [r["rank"] for r in body["per_rank"]] == [r["rank"] for r in body["ranks"]] == [0, 1]
    assert [p["step_ns"] for p in body["per_rank"]] == [r["step_ns"] for r in body["ranks"]]
    assert body["run_summary"]["ranks"] == 2 and body["matrix_cells"]
    assert position_of(store, "ascend", "rank1", "default") == 0
    for call in (lambda: cluster_impl(store, prefetcher, "nope", 0), lambda: cluster_impl(store, prefetcher, "ascend", 3),
                 lambda: position_of(store, "ascend", "rank0", "nope")):
        with pytest.raises(NotFound):
            call()


def test_windows_at_is_the_same_position_in_every_worker(tmp_path):
    """Store.windows_at against the folder listing: worker0 has two windows, worker1 one."""
    run = tmp_path / "run"
    run.mkdir()
    resnet = sorted(fixture_path("kineto", "resnet50_v100").glob("*.pt.trace.json.gz"))
    for path in resnet:
        shutil.copy(path, run / path.name)
    shutil.copy(resnet[0], run / resnet[0].name.replace("worker0", "worker1"))
    store = Store(str(tmp_path))
    first = [(w.name, win.id) for w, win in store.windows_at("run", 0)]
    ids = [p.name.split(".")[1] for p in resnet]
    assert first == [("worker0", ids[0]), ("worker1", ids[0])]
    assert [(w.name, win.id) for w, win in store.windows_at("run", 1)] == [("worker0", ids[1])]
    assert store.windows_at("run", 2) == [] and store.windows_at("run", -1) == []
    assert store.position("run", "worker0", ids[1]) == 1
    counts = collections.Counter(w.name for p in range(2) for w, _ in store.windows_at("run", p))
    assert counts == {"worker0": 2, "worker1": 1}


def test_memory_peaks_at_their_time_relative_to_the_window_start(store, logdir):
    """ResNet's 2021 trace records allocations as signed byte counts only: the peak, by hand, is the
    highest running sum per device (Device Type, Device Id) in time order, at the first event reaching it;
    the route sends its time relative to the window's start (its earliest event)."""
    events = raw_trace(logdir, "resnet", f"worker0.{RESNET_WINDOW}.pt.trace.json.gz")
    t0 = 1000 * min(e["ts"] for e in events if "ts" in e)
    running, peak = collections.defaultdict(int), {}
    for e in sorted((e for e in events if e.get("name") == "[memory]"), key=lambda e: e["ts"]):
        key = "CPU" if e["args"]["Device Type"] == 0 else f"cuda:{e['args']['Device Id']}"
        running[key] += e["args"]["Bytes"]
        if key not in peak or running[key] > peak[key][0]:
            peak[key] = (running[key], 1000 * e["ts"] - t0)
    memory = sections.memory_impl(store, *RESNET)
    assert memory["info"]["start_ns"] == t0
    got = {d["device"]: (d["peak_allocated_bytes"], d["peak_ts_ns"]) for d in memory["devices"]}
    assert got == peak
    for d in memory["devices"]:
        assert 0 <= min(d["curve_ts_ns"]) <= max(d["curve_ts_ns"]) <= memory["info"]["duration_ns"]


def test_communication_calls_start_relative_to_the_window_start(store, logdir):
    """HTA's rank 1: the calls are its NCCL kernels, each at its start relative to the window's start."""
    events = raw_trace(logdir, "hta", f"rank1.{HTA_WINDOW}.pt.trace.json.gz")
    t0 = 1000 * min(e["ts"] for e in events if "ts" in e)
    nccl = sorted(1000 * e["ts"] - t0 for e in events if e.get("cat") == "kernel" and e["name"].startswith("ncclKernel"))
    body = sections.communication_impl(store, *HTA)
    assert body["info"]["start_ns"] == t0
    assert sorted(c["start_ns"] for c in body["communication"]["calls"]) == nccl
