"""MCP tool answers (and the HTTP routes beside them) held to an independent reading of the trace files, not to
each other: cross_rank on window position 1 (not 0), timeline(step=N) over ProfilerStep#N's own range, the
kernels-by-operator total and pages, a cursor of one window refused on another. The run is hand-written
(tests/mcp/_two_windows.py: 2 ranks x 2 windows); the expected figures are read back here with json."""
import json
import time
from collections import Counter

import pytest
from tensorboard.backend import application
from werkzeug.test import Client

from _mcp import Session
from _two_windows import write_run
from test_plugin_routes import get, make_plugin

from canning_tb.mcp.server import build
from canning_tb.store import Store


def trace(path) -> list:
    return [e for e in json.loads(path.read_text())["traceEvents"] if e.get("ph") == "X"]


def steps_of(path) -> dict:
    """{N: (ts, dur)} of ProfilerStep#N, in µs as the file has them."""
    return {int(e["name"].split("#")[1]): (e["ts"], e["dur"]) for e in trace(path) if e["name"].startswith("ProfilerStep#")}


def kernels_by_op(path) -> Counter:
    """{(kernel, launching operator): calls}: a kernel joined to the cpu_op of the same External id."""
    events = trace(path)
    op_of = {e["args"]["External id"]: e["name"] for e in events if e["cat"] == "cpu_op"}
    return Counter((e["name"], op_of[e["args"]["External id"]]) for e in events if e["cat"] == "kernel")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("two_windows")
    paths = write_run(root / "log" / "two")
    app, _ = build(str(root / "log"), str(root / "cache"), digest_wait_s=60)
    session = Session(app)
    try:
        plugin = make_plugin(root / "log", store_factory=lambda logdir: Store(logdir, cache_dir=str(root / "cache")))
        yield {"paths": paths, "s": session, "http": Client(application.TensorBoardWSGI([plugin]))}
    finally:
        session.close()


def ready(s, tool, args, timeout=120):
    deadline = time.monotonic() + timeout
    while True:
        answer = s.answer(tool, args)
        if answer.get("status") not in ("digesting", "indexing"):
            return answer
        assert time.monotonic() < deadline, answer
        time.sleep(0.3)


def where(rank, window):
    return {"run": "two", "worker": f"rank{rank}", "window": ("1700000000100", "1700000000200")[window]}


def mean_step_ns(path) -> int:
    durs = [dur for _, dur in steps_of(path).values()]
    return sum(durs) * 1000 // len(durs)  # µs -> ns


def test_cross_rank_answers_the_window_position_it_was_asked(world):
    paths = world["paths"]
    for position in (1, 0):
        want = {rank: mean_step_ns(paths[(rank, position)]) for rank in (0, 1)}
        answer = ready(world["s"], "cross_rank", {"run": "two", "window_index": position, "section": "ranks"})
        assert answer["window_index"] == position
        assert {r["rank"]: r["step_ns"] for r in answer["ranks"]} == want
        assert {r["window"] for r in answer["ranks"]} == {where(0, position)["window"]}
        # the same position named by one of its windows
        named = ready(world["s"], "cross_rank", {**where(1, position), "section": "ranks"})
        assert {r["rank"]: r["step_ns"] for r in named["ranks"]} == want
        code, body = get(world["http"], "cluster", run="two", window_index=str(position))
        for _ in range(600):
            if code != 202:
                break
            time.sleep(0.2)
            code, body = get(world["http"], "cluster", run="two", window_index=str(position))
        assert code == 200, body
        assert {r["rank"]: r["step_ns"] for r in body["per_rank"]} == want
    # window 1 differs by rank (3000 vs 4000 µs steps), window 0 does not: the answers cannot be swapped
    assert mean_step_ns(paths[(0, 1)]) != mean_step_ns(paths[(1, 1)])


def test_timeline_step_takes_that_steps_range(world):
    for rank, window in ((0, 0), (1, 1)):
        path = world["paths"][(rank, window)]
        origin = min(e["ts"] for e in trace(path))  # the window starts at its first event
        steps = steps_of(path)
        for n, (ts, dur) in steps.items():
            answer = ready(world["s"], "timeline", {**where(rank, window), "step": n})
            assert (answer["start_ns"], answer["end_ns"]) == ((ts - origin) * 1000, (ts - origin + dur) * 1000)
            names = {r["name"]: r["total_ns"] for r in answer["rows"]}
            # this step's kernels, whole; no other step's
            inside = {e["name"]: e["dur"] * 1000 for e in trace(path)
                      if e["cat"] == "kernel" and ts <= e["ts"] and e["ts"] + e["dur"] <= ts + dur}
            assert {k: names.get(k) for k in inside} == inside
            assert not {f"gemm_s{m}" for m in steps if m != n} & set(names)
        # a step of another window is not this window's
        other = next(iter(steps_of(world["paths"][(rank, 1 - window)])))
        failed, text, _ = world["s"].call("timeline", {**where(rank, window), "step": other})
        assert failed and f"no step {other}" in text


def test_kernels_by_operator_total_and_pages(world):
    path = world["paths"][(1, 1)]
    want = kernels_by_op(path)
    assert len(want) == len({k for k, _ in want}) + 1  # copy_kernel under two operators: one row more than by name
    args = {**where(1, 1), "group_by": "op", "limit": 2}
    first = ready(world["s"], "kernels", args)
    assert first["total"] == len(want)
    rows, page = list(first["rows"]), first
    while page.get("next_cursor"):
        page = world["s"].answer("kernels", {**args, "cursor": page["next_cursor"]})
        assert page["total"] == len(want) and len(page["rows"]) <= 2
        rows += page["rows"]
    assert Counter({(r["name"], r["op_name"]): r["calls"] for r in rows}) == want
    searched = world["s"].answer("kernels", {**args, "search": "copy_kernel"})
    assert searched["total"] == sum(1 for k, _ in want if k == "copy_kernel") == 2
    code, body = get(world["http"], "kernels", **where(1, 1), limit="2")
    assert code == 200
    assert (body["kernels_by_op_total"], body["kernels_by_op_all"]) == (len(want), len(want))
    assert body["kernels_by_name_all"] == len({k for k, _ in want})


def test_a_cursor_of_one_window_is_refused_on_another(world):
    args = {"group_by": "op", "limit": 2}
    cursor = ready(world["s"], "kernels", {**where(0, 0), **args})["next_cursor"]
    assert cursor
    ready(world["s"], "kernels", {**where(0, 1), **args})
    for other in (where(0, 1), where(1, 0)):
        failed, text, _ = world["s"].call("kernels", {**other, **args, "cursor": cursor})
        assert failed and "cursor" in text, text
    assert not world["s"].call("kernels", {**where(0, 0), **args, "cursor": cursor})[0]  # its own window: taken
