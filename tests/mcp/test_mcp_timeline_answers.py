"""The shaping of mcp/timeline_tool.py's answer with the routes' bodies made by hand: the range a question names
(a step's, or start_ns / end_ns with their defaults), what it refuses, which tracks it sums over, and what it cuts
and counts (issue 46: fast tests for a mutation run over timeline_tool.py; test_mcp_answers_vs_files.py checks a
step's range against the files)."""
from types import SimpleNamespace

import pytest

from canning_tb.mcp import timeline_tool
from canning_tb.queries.errors import BadParameter, NotFound

STORE, CACHE = object(), object()
STEPS = [{"number": 3, "start_ns": -40, "dur_ns": 50}, {"number": 4, "start_ns": 10, "dur_ns": 1_000},
         {"number": 5, "start_ns": 1_010, "dur_ns": 700}, {"number": 6, "start_ns": 0, "dur_ns": 9}] + \
    [{"number": n, "start_ns": 2_000 + n, "dur_ns": 1} for n in range(7, 60)]
TRACKS = [{"id": i, "name": f"t{i}", "kind": "device" if i % 3 == 0 else "host", "events": 10 * i, "extra": 1}
          for i in range(30)] + [{"id": 30, "name": "py", "kind": "python", "events": 5, "extra": 1}]


def host(pending=None) -> SimpleNamespace:
    """A host whose windows are digested (or `pending`); pending() must name the window asked about."""
    def pend(run, worker, window):
        assert (run, worker, window) == ("r", "w", "7"), (run, worker, window)
        return pending

    return SimpleNamespace(pending=pend, store=lambda: STORE, timeline=CACHE)


@pytest.fixture
def impls(monkeypatch):
    asked = {"tracks": [], "summary": []}

    def tracks_impl(cache, store, run, worker, window, wait_s):
        asked["tracks"].append((cache, store, run, worker, window, wait_s))
        return {"rank": 2, "duration_ns": 5_000, "steps": STEPS, "tracks": TRACKS}

    def summary_impl(cache, store, run, worker, window, start, end, ids):
        asked["summary"].append((cache, store, run, worker, window, start, end, ids))
        return {"start_ns": start, "end_ns": end, "events": 77, "names": 60,
                "rows": [{"name": f"n{i}"} for i in range(60)], "critical_path_share": None}

    monkeypatch.setattr(timeline_tool, "tracks_impl", tracks_impl)
    monkeypatch.setattr(timeline_tool, "summary_impl", summary_impl)
    return asked


def test_the_whole_window_on_all_tracks(impls):
    got = timeline_tool.timeline(host(), "r", "w", "7")
    assert impls["tracks"] == [(CACHE, STORE, "r", "w", "7", 1.0)]
    assert impls["summary"] == [(CACHE, STORE, "r", "w", "7", 0, 5_000, None)]
    assert {k: v for k, v in got.items() if k != "units"} == {
        "run": "r", "worker": "w", "window": "7", "rank": 2, "duration_ns": 5_000, "step": None, "start_ns": 0,
        "end_ns": 5_000, "tracks": "all", "tracks_total": 31,
        "tracks_shown": [{"id": i, "name": f"t{i}", "kind": TRACKS[i]["kind"], "events": 10 * i} for i in range(20)],
        "events": 77, "names": 60, "rows": [{"name": f"n{i}"} for i in range(50)], "steps": STEPS[:50]}
    assert got["units"]["*_ns"].startswith("integer nanoseconds")


def test_a_step_is_its_own_range(impls):
    got = timeline_tool.timeline(host(), "r", "w", "7", step=4, limit=3)
    assert impls["summary"][-1][5:7] == (10, 1_010) and (got["start_ns"], got["end_ns"], got["step"]) == (10, 1_010, 4)
    assert len(got["rows"]) == 3
    timeline_tool.timeline(host(), "r", "w", "7", step=6)  # a step starting at the window's start is in it
    assert impls["summary"][-1][5:7] == (0, 9)


@pytest.mark.parametrize("step", [3, 2])
def test_a_step_before_the_window_or_not_there_is_not_found(impls, step):
    with pytest.raises(NotFound) as e:
        timeline_tool.timeline(host(), "r", "w", "7", step=step)
    assert str(e.value) == (f"no step {step} with a start in this window (its steps: "
                            f"{[s['number'] for s in STEPS][:50]})")
    assert impls["summary"] == []


@pytest.mark.parametrize("args, start, end", [({"start_ns": 100}, 100, 5_000), ({"end_ns": 300}, 0, 300),
                                              ({"start_ns": 299, "end_ns": 300}, 299, 300),
                                              ({"start_ns": 0, "end_ns": 6_000}, 0, 6_000)])
def test_a_range_in_ns_and_its_defaults(impls, args, start, end):
    got = timeline_tool.timeline(host(), "r", "w", "7", **args)
    assert impls["summary"][-1][5:7] == (start, end) and (got["start_ns"], got["end_ns"]) == (start, end)


@pytest.mark.parametrize("args, said", [
    ({"start_ns": 300, "end_ns": 300}, r"end_ns \(300\) must be after start_ns \(300\)"),
    ({"start_ns": 5_000}, r"end_ns \(5000\) must be after start_ns \(5000\)"),
    ({"end_ns": 0}, r"end_ns \(0\) must be after start_ns \(0\)"),
    ({"step": 4, "start_ns": 10}, "^give either step or start_ns / end_ns, not both$"),
    ({"step": 4, "end_ns": 10}, "^give either step or start_ns / end_ns, not both$")])
def test_a_range_that_is_not_one_is_refused(impls, args, said):
    with pytest.raises(BadParameter, match=said):
        timeline_tool.timeline(host(), "r", "w", "7", **args)
    assert impls["summary"] == []


def test_one_kind_of_tracks(impls):
    got = timeline_tool.timeline(host(), "r", "w", "7", tracks="device")
    device = [i for i in range(30) if i % 3 == 0]
    assert impls["summary"][-1][7] == device
    assert (got["tracks"], got["tracks_total"]) == ("device", 10)
    assert [t["id"] for t in got["tracks_shown"]] == device
    got = timeline_tool.timeline(host(), "r", "w", "7", tracks="python")
    assert impls["summary"][-1][7] == [30] and got["tracks_shown"] == [{"id": 30, "name": "py", "kind": "python",
                                                                        "events": 5}]


def test_a_kind_with_no_tracks_sums_nothing(impls, monkeypatch):
    monkeypatch.setattr(timeline_tool, "tracks_impl", lambda *a: {"rank": -1, "duration_ns": 900, "steps": [],
                                                                 "tracks": TRACKS[1:3]})
    got = timeline_tool.timeline(host(), "r", "w", "7", start_ns=5, tracks="python")
    assert impls["summary"] == []
    assert {k: got[k] for k in ("rank", "start_ns", "end_ns", "tracks_total", "tracks_shown", "events", "names",
                                "rows", "steps")} == {
        "rank": -1, "start_ns": 5, "end_ns": 900, "tracks_total": 0, "tracks_shown": [], "events": 0, "names": 0,
        "rows": [], "steps": []}


def test_a_window_being_digested_or_indexed_says_so(impls, monkeypatch):
    waiting = {"status": "digesting"}
    assert timeline_tool.timeline(host(waiting), "r", "w", "7") is waiting and impls["tracks"] == []
    monkeypatch.setattr(timeline_tool, "tracks_impl", lambda *a: {"loading": True, "stage": "index", "elapsed_s": 3.5,
                                                                 "other": 1})
    got = timeline_tool.timeline(host(), "r", "w", "7")
    assert {k: v for k, v in got.items() if k != "message"} == {
        "run": "r", "worker": "w", "window": "7", "status": "indexing", "stage": "index", "elapsed_s": 3.5,
        "retry_after_s": 2.0}
    assert got["message"] == "the window's events are being loaded and indexed for the timeline: ask again"
    monkeypatch.setattr(timeline_tool, "tracks_impl", lambda *a: {"loading": True})  # no progress known yet
    got = timeline_tool.timeline(host(), "r", "w", "7")
    assert "stage" not in got and "elapsed_s" not in got and got["status"] == "indexing"
    assert impls["summary"] == []
