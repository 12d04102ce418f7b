"""The critical path through the MCP server (the SDK's own client over stdio to a real `canning-prof mcp`) and the
plugin's routes (TensorBoard's WSGI app), held to plain readings of the trace files written here with json:

- a window's path: the categories of each step sum to the step as the file gives it (ProfilerStep#N's duration on
  DLRM, where the device work ends inside it; the distance to ProfilerStep#N+1's start on ResNet, where the device
  work runs up to the next step); every segment lies inside its step; the pages walk every kept segment once;
- across the 8 DLRM ranks: the rank holding most of the step is the one the others waited for at the collectives
  (the rank whose NCCL kernel starts last, summed over the collectives, read from the raw json), and the path's own
  work follows, collective by collective, the rank that arrived last at the next one; each hop's times, on its
  rank's own clock from its window's start, put the end of an own work at that rank's NCCL kernel start (its arrival)
  and the stretches end to end on each rank; the CLI's text lists the hops the MCP tool gives.
"""
import gzip
import json
import re
import shutil
import subprocess
import sys
import statistics
import threading
import time
from collections import Counter

import pytest
from tensorboard.backend import application
from werkzeug.test import Client

from _mcp import Session, stdio_params
from conftest import fixture_path
from test_plugin_routes import get, make_plugin

from canning_tb.store import Store

RESNET = {"run": "resnet", "worker": "worker0", "window": "1623143089861"}
DLRM0 = {"run": "dlrm", "worker": "worker0_step_12", "window": "1694128201545"}


def ready(session, tool, args, timeout=120):
    deadline = time.monotonic() + timeout
    while True:
        answer = session.answer(tool, args)
        if answer.get("status") not in ("digesting", "indexing"):
            return answer
        assert time.monotonic() < deadline, answer
        time.sleep(0.3)


def events(path) -> list:
    return [e for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"] if e.get("ph") == "X"]


def profiler_steps(path) -> list:
    """[(N, ts µs, dur µs)] of the ProfilerStep#N ranges, in time order."""
    return sorted(((int(e["name"].split("#")[1]), e["ts"], e["dur"]) for e in events(path)
                   if e["name"].startswith("ProfilerStep#")), key=lambda x: x[1])


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("cp_logdir")
    cache = tmp_path_factory.mktemp("cp_cache")
    shutil.copytree(fixture_path("param", "dlrm_8ranks"), root / "dlrm")
    (root / "resnet").mkdir()
    name = f"worker0.{RESNET['window']}.pt.trace.json.gz"
    shutil.copy(fixture_path("kineto", "resnet50_v100", name), root / "resnet" / name)
    store = Store(str(root), cache_dir=str(cache))
    items = [(run, w.name, win.id) for run in store.runs() for w in store.workers(run)
             for win in store.windows(run, w.name)]
    started = {}
    starting = threading.Thread(target=lambda: started.update(session=Session(stdio_params(root, cache))))
    starting.start()
    try:
        assert store.prefetch(items) == {}
        starting.join(120)
        plugin = make_plugin(root, store_factory=lambda logdir: Store(logdir, cache_dir=str(cache)))
        yield {"root": root, "cache": cache, "s": started["session"],
               "http": Client(application.TensorBoardWSGI([plugin]))}
    finally:
        starting.join(120)
        if "session" in started:
            started["session"].close()


def test_each_steps_categories_sum_to_the_step_the_file_gives(world):
    # DLRM rank 0: one step, its device work inside ProfilerStep#10
    ((number, _, dur),) = profiler_steps(world["root"] / "dlrm" / "worker0_step_12.1694128201545.pt.trace.json.gz")
    answer = ready(world["s"], "critical_path", DLRM0)
    assert [s["number"] for s in answer["steps"]] == [number]
    assert sum(c["ns"] for c in answer["steps"][0]["categories"]) == answer["steps"][0]["dur_ns"] == dur * 1000
    # ResNet: the device runs up to the next step's start: a step is start to next start (the last one is
    # stretched by the window's end, so it is left out here)
    marks = profiler_steps(world["root"] / "resnet" / f"worker0.{RESNET['window']}.pt.trace.json.gz")
    want = {n: (b_ts - a_ts) * 1000 for (n, a_ts, _), (_, b_ts, _) in zip(marks, marks[1:])}
    answer = ready(world["s"], "critical_path", RESNET)
    got = {s["number"]: sum(c["ns"] for c in s["categories"]) for s in answer["steps"]}
    assert len(want) == 5 and {n: got[n] for n in want} == want
    for s in answer["steps"]:
        assert [c["ns"] for c in s["categories"]] == sorted((c["ns"] for c in s["categories"]), reverse=True)
        assert abs(sum(c["share"] for c in s["categories"]) - 1) < 1e-9
    # the route answers the same figures
    code, body = get(world["http"], "critical_path", **RESNET)
    assert code == 200, body
    assert [(s["number"], s["dur_ns"], s["categories"]) for s in body["steps"]] == \
           [(s["number"], s["dur_ns"], s["categories"]) for s in answer["steps"]]


def test_a_steps_segments_lie_inside_it_and_the_pages_walk_each_once(world):
    answer = ready(world["s"], "critical_path", RESNET)
    step = answer["steps"][2]
    seen, cursor, pages = [], None, 0
    while True:
        page = world["s"].answer("critical_path", {**RESNET, "step": step["number"], "limit": 37,
                                                   **({"cursor": cursor} if cursor else {})})
        seen += page["segments"]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == -(-step["segments_kept"] // 37) and len(seen) == step["segments_kept"] > 0
    assert step["segments_kept"] <= step["segments_total"]
    starts = [s["ts_ns"] for s in seen]
    assert starts == sorted(starts)
    names = {c["category"] for c in step["categories"]}
    for s in seen:
        assert step["start_ns"] <= s["ts_ns"] and s["ts_ns"] + s["dur_ns"] <= step["start_ns"] + step["dur_ns"], s
        assert s["category"] in names and s["dur_ns"] > 0
    # no two segments of the path overlap (the path is one line through the step)
    for a, b in zip(seen, seen[1:]):
        assert a["ts_ns"] + a["dur_ns"] <= b["ts_ns"], (a, b)
    # the route's page is the tool's
    code, body = get(world["http"], "critical_path", **RESNET, step=str(step["number"]), limit="37")
    assert code == 200 and body["steps"][0]["segments"] == seen[:37] and body["steps"][0]["next_offset"] == 37


def last_arrivals(root) -> tuple[list, Counter]:
    """Per collective, in order, the rank whose NCCL kernel started last (the one the others waited for), and how
    long the others waited for each rank (its start minus the median start of the others), from the raw json."""
    starts = {}
    for path in sorted((root / "dlrm").glob("*.pt.trace.json.gz")):
        doc = json.loads(gzip.decompress(path.read_bytes()))
        rank = doc["distributedInfo"]["rank"]
        starts[rank] = sorted(e["ts"] for e in doc["traceEvents"]
                              if e.get("ph") == "X" and e.get("cat") == "kernel" and e["name"].startswith("ncclKernel"))
    count = {len(v) for v in starts.values()}
    assert len(starts) == 8 and len(count) == 1
    order, waited = [], Counter()
    for k in range(count.pop()):
        at = {rank: s[k] for rank, s in starts.items()}
        last = max(at, key=at.get)
        order.append(last)
        waited[last] += at[last] - statistics.median(v for r, v in at.items() if r != last)
    return order, waited


def test_the_rank_holding_the_path_is_the_one_the_others_waited_for(world):
    order, waited = last_arrivals(world["root"])
    answer = ready(world["s"], "critical_path", {"run": "dlrm", "scope": "ranks", "window_index": 0})
    assert answer["ranks_total"] == 8 and answer["clock_offsets_total"] == 8
    (step,) = answer["steps"]
    assert step["held_by"] == waited.most_common(1)[0][0]
    assert sum(r["ns"] for r in step["by_rank"]) == step["dur_ns"]
    # the hops of the step, every page: the own work after each collective is the next collective's last arrival
    hops, cursor = [], None
    while True:
        page = world["s"].answer("critical_path", {"run": "dlrm", "scope": "ranks", "window_index": 0,
                                                   "step": step["step"], "limit": 5,
                                                   **({"cursor": cursor} if cursor else {})})
        hops += page["hops"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(hops) == step["hops_total"]
    own = [h["rank"] for h in hops if h["what"] == "own work"]
    assert own[:len(order)] == order
    # the route: the same step, the same offsets, named by a window of that position
    code, body = get(world["http"], "critical_path_ranks", run="dlrm", worker=DLRM0["worker"], window=DLRM0["window"])
    assert code == 200, body
    assert body["steps"][0]["held_by"] == step["held_by"] and body["steps"][0]["hops"][:5] == hops[:5]
    assert sorted(o["rank"] for o in body["clock_offsets"]) == list(range(8))


def test_bad_questions_get_clear_errors(world):
    failed, text, _ = world["s"].call("critical_path", {**RESNET, "step": 99})
    assert failed and "step 99" in text and "5, 6" in text
    failed, text, _ = world["s"].call("critical_path", {"run": "resnet"})
    assert failed and "worker and window" in text
    code, body = get(world["http"], "critical_path", **RESNET, limit="0")
    assert code == 400 and "limit" in body["error"]
    code, body = get(world["http"], "critical_path", **RESNET, offset="-3")
    assert code == 400 and "offset" in body["error"]
    code, body = get(world["http"], "critical_path_ranks", run="dlrm")
    assert code == 400 and "window_index" in body["error"]
    code, body = get(world["http"], "critical_path", run="resnet", worker="nobody", window="1")
    assert code == 404


def all_hops(session, step) -> list:
    hops, cursor = [], None
    while True:
        page = session.answer("critical_path", {"run": "dlrm", "scope": "ranks", "window_index": 0, "step": step,
                                                "limit": 50, **({"cursor": cursor} if cursor else {})})
        hops += page["hops"]
        cursor = page["next_cursor"]
        if cursor is None:
            return hops


def test_each_hops_times_lie_on_its_ranks_own_clock(world):
    (step,) = ready(world["s"], "critical_path", {"run": "dlrm", "scope": "ranks", "window_index": 0})["steps"]
    hops = all_hops(world["s"], step["step"])
    code, body = get(world["http"], "timeline_ranks", **DLRM0)
    assert code == 200, body
    window_start = {r["rank"]: r["start_ns"] for r in body["ranks"]}
    kernels = {}
    for path in sorted((world["root"] / "dlrm").glob("*.pt.trace.json.gz")):
        doc = json.loads(gzip.decompress(path.read_bytes()))
        kernels[doc["distributedInfo"]["rank"]] = [round(e["ts"] * 1000) for e in doc["traceEvents"] if e.get("ph") == "X"
                                                   and e.get("cat") == "kernel" and e["name"].startswith("ncclKernel")]
    for h in hops:
        assert h["end_ns"] - h["start_ns"] == h["ns"] > 0
    arrivals = [(h, nxt) for h, nxt in zip(hops, hops[1:]) if h["what"] == "own work" and nxt["what"] == "transfer"]
    assert arrivals
    for h, transfer in arrivals:  # own work runs until that rank reaches the collective: its NCCL kernel starts
        at = h["end_ns"] + window_start[h["rank"]]
        assert min(abs(at - k) for k in kernels[h["rank"]]) <= 1000, (h, at)
        assert transfer["waited_for"] == h["rank"]
    for a, b in zip(hops, hops[1:]):  # on one rank, each stretch starts where the one before ended
        if a["rank"] == b["rank"]:
            assert b["start_ns"] == a["end_ns"]


HOP_LINE = re.compile(r"^    rank (\d+) (-?[\d.]+) to (-?[\d.]+) ms \(([\d.]+) ms\): (.*)$")


def test_the_cli_text_lists_the_hops_the_mcp_tool_gives(world):
    (step,) = ready(world["s"], "critical_path", {"run": "dlrm", "scope": "ranks", "window_index": 0})["steps"]
    hops = all_hops(world["s"], step["step"])
    cli = subprocess.run([sys.executable, "-m", "canning_tb.cli.main", "--mode=view", "--cache-dir", str(world["cache"]),
                          "--input", str(world["root"] / "dlrm")], capture_output=True, text=True, timeout=600)
    assert cli.returncode == 0, cli.stderr[-2000:]
    text = cli.stdout.split("Critical path across ranks", 1)[1]
    assert f"step {step['step']}: " in text
    lines = [HOP_LINE.match(line) for line in text.splitlines()]
    shown = [m for m in lines if m]
    assert len(shown) == min(len(hops), 16)
    for m, h in zip(shown, hops):
        assert int(m[1]) == h["rank"]
        assert [float(m[2]), float(m[3]), float(m[4])] == pytest.approx(
            [h["start_ns"] / 1e6, h["end_ns"] / 1e6, h["ns"] / 1e6], abs=0.0006)
        assert ("transfer" in m[5]) == (h["what"] == "transfer") and h["after"] in m[5]
        if h["what"] == "transfer":
            assert f"rank {h['waited_for']} arrived" in m[5]
