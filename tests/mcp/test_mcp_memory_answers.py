"""The shaping of mcp/memory_tools.py's answers (memory, memory_allocations, memory_snapshot, memory_snapshot_ranks)
with the routes' bodies made by hand: what each device keeps, cuts and counts, which points of a curve are kept
(analysis/memory.downsample's rule worked by hand on small curves), how the allocations page, how stacks are cut
(issue 46: fast tests for a mutation run over memory_tools.py; the figures are the routes', checked against the files
in tests/plugin and test_mcp_memory_snapshot.py). Glossary entries are read from glossary.json here."""
from types import SimpleNamespace

import pytest

from canning_tb.mcp import memory_tools
from canning_tb.queries import memory_snapshot, sections
from canning_tb.queries.errors import BadParameter
from _answers import entry, offset_in, recording_host

STORE = object()
WHERE = {"run": "r", "worker": "w", "window": "7"}
# A curve of 12 points. With points=10 downsample keeps at most 9: 3 buckets of 4 ([0:4], [4:8], [8:12]), each's
# first maximum and first minimum (8 at 2, 2 at 3; 6 at 7, 1 at 6; 9 at 9, 0 at 10), the first, the last, the peak.
ALLOCATED = [5, 3, 8, 2, 4, 4, 1, 6, 7, 9, 0, 2]
KEPT_OF_10 = [0, 2, 3, 6, 7, 9, 10, 11]


def host(pending=None) -> SimpleNamespace:
    return recording_host(STORE, pending)


def device(name: str, allocated: list, active: list | None = None) -> dict:
    n = len(allocated)
    return {"device": name, "peak_allocated_bytes": 9, "capacity_bytes": -1, "events": [{"e": i} for i in range(n + 3)],
            "ops": [{"name": f"op{i}"} for i in range(23)], "components": [{"name": f"c{i}"} for i in range(22)],
            "curve_ts_ns": [10 * i for i in range(n)], "curve_allocated_bytes": allocated,
            "curve_reserved_bytes": [100 + v for v in allocated], "curve_active_bytes": active or []}


@pytest.fixture
def memory_route(monkeypatch):
    asked = []
    devices = [device("cuda:0", ALLOCATED, [50 + v for v in ALLOCATED]), device("cpu", [])]
    monkeypatch.setattr(sections, "memory_impl", lambda *a: asked.append(a) or {"devices": devices, "x": 1})
    return asked


def test_memory_keeps_each_devices_figures_and_counts_its_lists(memory_route):
    h = host()
    got = memory_tools.memory(h, "r", "w", "7", points=10)
    assert memory_route == [(STORE, "r", "w", "7")] and h.asked == [("r", "w", "7")]
    assert got["glossary"] == {"peak_allocated_bytes": entry("memory_peak"),
                               "peak_reserved_bytes": entry("peak_reserved")}
    assert got["units"]["*_bytes, bytes"] == "integer bytes"
    assert {k: v for k, v in got.items() if k not in ("glossary", "units")} == {**WHERE, "devices": [
        {"device": "cuda:0", "peak_allocated_bytes": 9, "capacity_bytes": -1, "events_total": 15,
         "ops": [{"name": f"op{i}"} for i in range(20)], "ops_total": 23,
         "components": [{"name": f"c{i}"} for i in range(20)], "components_total": 22,
         "curve_ts_ns": [10 * i for i in KEPT_OF_10],
         "curve_allocated_bytes": [ALLOCATED[i] for i in KEPT_OF_10],
         "curve_reserved_bytes": [100 + ALLOCATED[i] for i in KEPT_OF_10],
         "curve_active_bytes": [50 + ALLOCATED[i] for i in KEPT_OF_10], "curve_points_total": 12},
        {"device": "cpu", "peak_allocated_bytes": 9, "capacity_bytes": -1, "events_total": 3,
         "ops": [{"name": f"op{i}"} for i in range(20)], "ops_total": 23,
         "components": [{"name": f"c{i}"} for i in range(20)], "components_total": 22,
         "curve_ts_ns": [], "curve_allocated_bytes": [], "curve_reserved_bytes": [], "curve_active_bytes": [],
         "curve_points_total": 0}]}


def test_a_curve_without_active_bytes_keeps_that_curve_empty(monkeypatch):
    monkeypatch.setattr(sections, "memory_impl", lambda *a: {"devices": [device("npu:0", ALLOCATED)]})
    (got,) = memory_tools.memory(host(), "r", "w", "7", points=10)["devices"]
    assert got["curve_active_bytes"] == [] and got["curve_allocated_bytes"] == [ALLOCATED[i] for i in KEPT_OF_10]


@pytest.mark.parametrize("points, allocated, kept", [
    (13, ALLOCATED, list(range(12))),   # 12 at most: the whole curve
    # 11 at most: 4 buckets of 3 ([0:3], [3:6], [6:9], [9:12]): 8 at 2, 3 at 1; 4 at 4, 2 at 3; 7 at 8, 1 at 6;
    # 9 at 9, 0 at 10; with the first and the last
    (12, ALLOCATED, [0, 1, 2, 3, 4, 6, 8, 9, 10, 11]),
    (10, ALLOCATED, KEPT_OF_10),
    (2, [1, 2, 3], [0, 2]),             # 2 at most, as for 3: one bucket, its first minimum, the last (the peak)
    (3, [1, 2, 3], [0, 2]),
    (4, [1, 2, 3], [0, 1, 2]),
])
def test_the_curve_keeps_at_most_points_minus_one_by_the_digests_rule(monkeypatch, points, allocated, kept):
    monkeypatch.setattr(sections, "memory_impl", lambda *a: {"devices": [device("cuda:0", allocated)]})
    (got,) = memory_tools.memory(host(), "r", "w", "7", points=points)["devices"]
    assert got["curve_allocated_bytes"] == [allocated[i] for i in kept]
    assert got["curve_ts_ns"] == [10 * i for i in kept] and got["curve_points_total"] == len(allocated)


def test_the_curve_keeps_199_points_by_default(monkeypatch):
    curves = {199: list(range(199)), 200: list(range(200))}
    for n, allocated in curves.items():
        monkeypatch.setattr(sections, "memory_impl", lambda *a: {"devices": [device("cuda:0", allocated)]})
        (got,) = memory_tools.memory(host(), "r", "w", "7")["devices"]
        whole = got["curve_allocated_bytes"] == allocated
        assert whole == (n == 199) and got["curve_points_total"] == n
        assert got["curve_allocated_bytes"][0] == 0 and got["curve_allocated_bytes"][-1] == n - 1  # first, peak


def test_a_window_being_digested_answers_that_and_reads_nothing(monkeypatch):
    for name in ("memory_impl", "memory_range_impl"):
        monkeypatch.setattr(sections, name, lambda *a: pytest.fail("read before its digest"))
    waiting = {"status": "digesting"}
    h = host(waiting)
    assert memory_tools.memory(h, "r", "w", "7") is waiting and h.asked == [("r", "w", "7")]
    h = host(waiting)
    assert memory_tools.memory_allocations(h, "r", "w", "7", "cuda:0") is waiting and h.asked == [("r", "w", "7")]


EVENTS = [{"op": f"o{i}", "bytes": i} for i in range(130)]


@pytest.fixture
def range_route(monkeypatch):
    asked = []

    def impl(*a):
        asked.append(a)
        return {"events": EVENTS, "events_total": 10_000, "events_truncated": True, "x": 1,
                "ops": [{"name": f"op{i}"} for i in range(25)]}

    monkeypatch.setattr(sections, "memory_range_impl", impl)
    return asked


def test_allocations_page_the_events_of_the_range_asked(range_route):
    got = memory_tools.memory_allocations(host(), "r", "w", "7", "cuda:1", start_ns=5, end_ns=900, limit=60)
    assert range_route == [(STORE, "r", "w", "7", "cuda:1", 5, 900)]
    assert {k: v for k, v in got.items() if k not in ("units", "next_cursor")} == {
        **WHERE, "device": "cuda:1", "start_ns": 5, "end_ns": 900, "total": 130, "offset": 0, "events_total": 10_000,
        "events_truncated": True, "ops": [{"name": f"op{i}"} for i in range(20)], "ops_total": 25,
        "events": EVENTS[:60]}
    assert got["units"]["*_ns"].startswith("integer nanoseconds") and offset_in(got["next_cursor"]) == 60
    seen = got["events"]
    for _ in range(5):  # bounded: a cursor that does not move on fails, never hangs
        if not got["next_cursor"]:
            break
        got = memory_tools.memory_allocations(host(), "r", "w", "7", "cuda:1", start_ns=5, end_ns=900,
                                              cursor=got["next_cursor"], limit=60)
        assert got["offset"] == len(seen) and got["total"] == 130
        seen += got["events"]
    assert seen == EVENTS


def test_allocations_default_to_an_open_range_and_a_hundred_events(range_route):
    got = memory_tools.memory_allocations(host(), "r", "w", "7", "cuda:1")
    assert range_route == [(STORE, "r", "w", "7", "cuda:1", None, None)]
    assert (got["start_ns"], got["end_ns"], got["events"], offset_in(got["next_cursor"])) == (
        None, None, EVENTS[:100], 100)


@pytest.mark.parametrize("other", [{"device": "cuda:0"}, {"start_ns": 6}, {"end_ns": 901}, {"window": "8"},
                                   {"worker": "v"}, {"run": "s"}])
def test_an_allocations_cursor_pages_only_its_own_question(range_route, other):
    mine = {**WHERE, "device": "cuda:1", "start_ns": 5, "end_ns": 900}
    cursor = memory_tools.memory_allocations(host(), **mine, limit=5)["next_cursor"]
    assert memory_tools.memory_allocations(host(), **mine, cursor=cursor, limit=5)["offset"] == 5
    with pytest.raises(BadParameter, match="pages another question"):
        memory_tools.memory_allocations(host(), **{**mine, **other}, cursor=cursor, limit=5)


def frames(n: int) -> list:
    return [f"f{i} (a.py:{i})" for i in range(n)]


def test_snapshot_stacks_are_cut_to_eight_frames_wherever_they_are(monkeypatch):
    asked = []
    body = {"schema": 1, "stack": frames(9), "devices": [
        {"peak": {"by_stack": [{"bytes": 5, "stack": frames(8)}, {"bytes": 4, "stack": frames(20)}],
                  "top_blocks": [[{"stack": frames(9), "n": 1}], {"stack": "not a list of frames" * 5}]},
         "leaks": [], "ooms": 0}]}
    monkeypatch.setattr(memory_snapshot, "snapshot_impl", lambda *a: asked.append(a) or body)
    got = memory_tools.memory_snapshot(host(), "r", "w", "7")
    assert asked == [(STORE, "r", "w", "7", 0, 5)]  # the first snapshot, 5 rows per list by default
    assert {k: v for k, v in got.items() if k != "units"} == {
        "schema": 1, "stack": frames(8), "stack_more": 1, "devices": [
            {"peak": {"by_stack": [{"bytes": 5, "stack": frames(8)},
                                   {"bytes": 4, "stack": frames(8), "stack_more": 12}],
                      "top_blocks": [[{"stack": frames(8), "stack_more": 1, "n": 1}],
                                     {"stack": "not a list of frames" * 5}]},
             "leaks": [], "ooms": 0}]}
    assert got["units"]["-1 or null"] == "unknown (never 0)"
    assert body["stack"] == frames(9)  # the route's body is left as it was
    memory_tools.memory_snapshot(host(), "r", "w", "7", index=2, limit=1)
    assert asked[-1] == (STORE, "r", "w", "7", 2, 1)


def test_snapshot_ranks_are_cut_to_the_limit_and_counted(monkeypatch):
    asked = []
    body = {"window_index": 3, "ranks": [{"rank": i} for i in range(130)], "findings": [{"rank": 4}]}
    monkeypatch.setattr(memory_snapshot, "snapshot_ranks_impl", lambda *a: asked.append(a) or body)
    got = memory_tools.memory_snapshot_ranks(host(), "r", window_index=3, limit=7)
    assert asked == [(STORE, "r", 3)]
    assert {k: v for k, v in got.items() if k != "units"} == {
        "window_index": 3, "ranks": [{"rank": i} for i in range(7)], "ranks_total": 130, "findings": [{"rank": 4}]}
    assert got["units"]["*_share"] == "fraction of 1"
    got = memory_tools.memory_snapshot_ranks(host(), "r")
    assert asked[-1] == (STORE, "r", 0) and got["ranks"] == [{"rank": i} for i in range(100)]
