"""The shaping of mcp/path_tool.py's critical_path answers with the routes' bodies made by hand: the arguments it
refuses, which window and step it asks the route for, what it cuts and counts, the clock offsets' order and how
the segments and hops page (issue 46: fast tests for a mutation run over path_tool.py; the figures themselves are
checked against the files in test_mcp_critical_path.py)."""
from types import SimpleNamespace

import pytest

from canning_tb.mcp import path_tool
from canning_tb.queries.errors import BadParameter, NotFound
from _answers import offset_in

STORE, PREFETCHER = object(), object()


def host(pending=None) -> SimpleNamespace:
    """A host whose windows are digested (or `pending`); pending() must name the window asked about."""
    def pend(run, worker, window):
        assert (run, worker, window) in (("r", "w", "7"), ("r", "w", "8"), ("r", "v", "7"), ("s", "w", "7")), window
        return pending

    return SimpleNamespace(pending=pend, store=lambda: STORE, prefetcher=PREFETCHER)


def window_step(number: int, offset: int, limit: int, kept: int = 7) -> dict:
    return {"step": number, "dur_ns": 100, "by_category": {"compute": 60}, "segments_kept": kept,
            "segments": [{"i": i} for i in range(offset, min(kept, offset + limit))], "longest": [1],
            "next_offset": offset + limit if offset + limit < kept else None}


@pytest.fixture
def window_path(monkeypatch):
    asked = []

    def impl(store, run, worker, window, step, offset, limit):
        asked.append((store, run, worker, window, step, offset, limit))
        if step is None:
            return {"steps": [window_step(n, 0, 1) for n in range(55)]}
        return {"steps": [window_step(step, offset, limit)]}

    monkeypatch.setattr(path_tool, "critical_path_impl", impl)
    return asked


WINDOW_NEEDS = "scope window needs worker and window (list_windows names them)"
RANKS_NEED = "scope ranks needs window_index, or worker and window (list_windows names them)"


@pytest.mark.parametrize("args, said", [
    ({"scope": "rank"}, "scope must be one of window, ranks, not 'rank'"),
    ({"limit": 0}, "limit must be between 1 and 200, not 0"),
    ({"limit": 201}, "limit must be between 1 and 200, not 201"),
    ({"worker": None}, WINDOW_NEEDS), ({"window": None}, WINDOW_NEEDS),
    ({"scope": "ranks", "worker": None}, RANKS_NEED), ({"scope": "ranks", "window": None}, RANKS_NEED)])
def test_what_it_refuses_and_why(window_path, args, said):
    with pytest.raises(BadParameter) as e:
        path_tool.critical_path(host(), "r", **{"worker": "w", "window": "7", **args})
    assert str(e.value) == said and window_path == []


def test_a_window_being_digested_answers_that(window_path):
    waiting = {"status": "digesting"}
    assert path_tool.critical_path(host(waiting), "r", "w", "7") is waiting and window_path == []


def test_a_windows_steps_without_their_segments(window_path):
    got = path_tool.critical_path(host(), "r", "w", "7", limit=1)
    assert window_path == [(STORE, "r", "w", "7", None, 0, 1)]
    assert got["steps"] == [{"step": n, "dur_ns": 100, "by_category": {"compute": 60}, "segments_kept": 7}
                            for n in range(50)]
    assert (got["run"], got["worker"], got["window"], got["scope"], got["steps_total"]) == ("r", "w", "7", "window", 55)
    assert got["segments"].startswith("ask with step=N") and got["units"]


def test_a_steps_segments_page_to_the_segments_kept(window_path):
    got = path_tool.critical_path(host(), "r", "w", "7", step=4, limit=200)
    assert window_path[-1] == (STORE, "r", "w", "7", 4, 0, 200)  # 200, MAX_PAGE, is a limit it takes
    got = path_tool.critical_path(host(), "r", "w", "7", step=4, limit=3)
    assert got["step"] == {"step": 4, "dur_ns": 100, "by_category": {"compute": 60}, "segments_kept": 7,
                           "longest": [1]}
    assert (got["offset"], got["segments"], got["scope"]) == (0, [{"i": 0}, {"i": 1}, {"i": 2}], "window")
    assert got["units"]["*_ns"].startswith("integer nanoseconds")
    seen = got["segments"]
    for _ in range(10):  # bounded: a cursor that does not move on fails, never hangs
        if not got["next_cursor"]:
            break
        assert offset_in(got["next_cursor"]) == len(seen)
        got = path_tool.critical_path(host(), "r", "w", "7", step=4, cursor=got["next_cursor"], limit=3)
        assert window_path[-1][5] == got["offset"]
        seen += got["segments"]
    assert seen == [{"i": i} for i in range(7)] and got["next_cursor"] is None and got["offset"] == 6  # 3 pages
    cursor = path_tool.critical_path(host(), "r", "w", "7", step=4, limit=3)["next_cursor"]
    for other in ({"step": 5}, {"window": "8"}, {"worker": "v"}):
        with pytest.raises(BadParameter, match="pages another question"):
            path_tool.critical_path(host(), "r", **{"worker": "w", "window": "7", "step": 4, **other}, cursor=cursor)
    with pytest.raises(BadParameter, match="pages another question"):
        path_tool.critical_path(host(), "s", "w", "7", step=4, cursor=cursor)


def rank_step(number: int, offset: int, limit: int, hops: int = 5, ranks: int = 18) -> dict:
    return {"step": number, "dur_ns": 90, "held_by": 3, "by_rank": [{"rank": r} for r in range(ranks)],
            "hops_total": hops, "hops": [{"h": i} for i in range(offset, min(hops, offset + limit))],
            "next_offset": offset + limit if offset + limit < hops else None}


def offsets() -> list:
    """Ranks' clock offsets: those moved or not aligned come first, then by rank."""
    return [{"rank": 0, "offset_ns": 0, "aligned": True}, {"rank": 1, "offset_ns": 5, "aligned": True},
            {"rank": 2, "offset_ns": 0, "aligned": False}, {"rank": 3, "offset_ns": -4, "aligned": False}] + \
        [{"rank": r, "offset_ns": 0, "aligned": True} for r in range(4, 70)]


@pytest.fixture
def ranks_path(monkeypatch):
    asked = []

    def impl(store, prefetcher, run, position, offset, limit):
        asked.append((store, prefetcher, run, position, offset, limit))
        return {"ranks_total": 70, "problems": list(range(24)), "clock_offsets": offsets()[::-1],
                "steps": [rank_step(n, offset, limit) for n in (2, 3, 4)] + [rank_step(n, 0, 1) for n in range(5, 60)]}

    monkeypatch.setattr(path_tool, "cross_rank_path_impl", impl)
    monkeypatch.setattr(path_tool, "position_of", lambda store, run, worker, window: {
        (STORE, "r", "w", "7"): 1, (STORE, "r", "w", "9"): 6}[store, run, worker, window])
    return asked


def test_across_the_ranks_each_step_names_who_held_it(ranks_path):
    got = path_tool.critical_path(host(), "r", window_index=2, scope="ranks", limit=10)
    assert ranks_path == [(STORE, PREFETCHER, "r", 2, 0, 10)]
    assert (got["run"], got["window_index"], got["scope"], got["ranks_total"]) == ("r", 2, "ranks", 70)
    assert got["problems"] == list(range(20))
    ranks = [o["rank"] for o in got["clock_offsets"]]
    assert ranks == [1, 2, 3, 0] + list(range(4, 64)) and got["clock_offsets_total"] == 70
    assert got["steps"][0] == {"step": 2, "dur_ns": 90, "held_by": 3, "by_rank": [{"rank": r} for r in range(16)],
                               "by_rank_total": 18, "hops_total": 5}
    assert [s["step"] for s in got["steps"]] == [2, 3, 4] + list(range(5, 52)) and got["steps_total"] == 58
    assert got["hops"] == ("ask with step=N for that step's hops (which rank, own work or transfer, after which "
                           "collective)") and got["units"]["*_ns"].startswith("integer nanoseconds")
    cursor = path_tool.critical_path(host(), "r", window_index=2, scope="ranks", step=3, limit=2)["next_cursor"]
    path_tool.critical_path(host(), "r", window_index=5, scope="ranks", cursor=cursor)  # no step: no page, not read
    assert ranks_path[-1][3:] == (5, 0, 50)
    assert path_tool.critical_path(host(), "r", "w", "9", scope="ranks")["window_index"] == 6
    assert ranks_path[-1][3] == 6
    assert path_tool.critical_path(host(), "r", "w", "9", 0, scope="ranks")["window_index"] == 0  # the index wins


def test_one_steps_hops_across_the_ranks_page_on(ranks_path):
    got = path_tool.critical_path(host(), "r", "w", "7", scope="ranks", step=3, limit=2)
    assert ranks_path[-1] == (STORE, PREFETCHER, "r", 1, 0, 2)
    assert got["step"] == {"step": 3, "dur_ns": 90, "held_by": 3, "by_rank": [{"rank": r} for r in range(16)],
                           "hops_total": 5}
    seen = got["hops"]
    for _ in range(10):  # bounded: a cursor that does not move on fails, never hangs
        if not got["next_cursor"]:
            break
        assert offset_in(got["next_cursor"]) == len(seen)
        got = path_tool.critical_path(host(), "r", "w", "7", scope="ranks", step=3, cursor=got["next_cursor"], limit=2)
        assert (ranks_path[-1][4], got["offset"]) == (len(seen), len(seen))
        seen += got["hops"]
    assert seen == [{"h": i} for i in range(5)] and got["next_cursor"] is None and got["offset"] == 4  # 3 pages
    cursor = path_tool.critical_path(host(), "r", window_index=1, scope="ranks", step=3, limit=2)["next_cursor"]
    for other in ({"step": 4}, {"window_index": 2}):
        with pytest.raises(BadParameter, match="pages another question"):
            path_tool.critical_path(host(), "r", **{"window_index": 1, "step": 3, **other}, scope="ranks",
                                    cursor=cursor)
    with pytest.raises(BadParameter, match="pages another question"):  # the same step of one window
        path_tool.critical_path(host(), "r", "w", "7", step=3, cursor=cursor)


def test_a_step_with_no_path_across_the_ranks_names_the_steps_there(ranks_path):
    with pytest.raises(NotFound) as e:
        path_tool.critical_path(host(), "r", window_index=2, scope="ranks", step=99)
    assert str(e.value) == ("step 99 has no critical path across the ranks of r at 2 (steps: "
                            + ", ".join(str(n) for n in [2, 3, 4] + list(range(5, 22))) + ")")


def test_no_steps_across_the_ranks_says_none(monkeypatch):
    monkeypatch.setattr(path_tool, "cross_rank_path_impl", lambda *a: {
        "ranks_total": 2, "problems": [], "clock_offsets": [], "steps": []})
    with pytest.raises(NotFound, match=r"step 1 has no critical path across the ranks of r at 0 \(steps: none\)"):
        path_tool.critical_path(host(), "r", window_index=0, scope="ranks", step=1)


def test_windows_still_being_digested_are_counted(monkeypatch):
    monkeypatch.setattr(path_tool, "cross_rank_path_impl", lambda *a: {"loading": True, "done": 1, "total": 4})
    got = path_tool.critical_path(host(), "r", window_index=3, scope="ranks", step=2)
    assert (got["run"], got["window_index"], got["status"], got["done"], got["total"]) == ("r", 3, "digesting", 1, 4)
