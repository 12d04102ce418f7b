"""The shaping of mcp/compare_tool.py's answers with the comparison made by hand (queries/compare's `compared` /
`compared_windows`, the default pairing and the windows' digests stood in for): which windows each side names, what
it refuses, the summary's keys, how a section pages, how the memory curves are thinned, which windows' problems are
said, and when a kept comparison is used again (issue 46: fast tests for a mutation run over compare_tool.py; the
comparison itself is tested in tests/analysis/test_analysis_compare.py and tests/plugin/test_compare_pairing.py)."""
from collections import OrderedDict
from types import SimpleNamespace

import pytest

from canning_tb.mcp import compare_tool
from canning_tb.queries.errors import BadParameter, NotFound, QueryError, Unreadable
from canning_tb.queries.pairing import Pairing
from _answers import offset_in

TABLES = ("breakdown", "operators", "kernels", "kernel_families", "communication", "communication_by_kind", "memory")
SUMMARY = ("name_map", "mode", "base", "target", "verdict", "breakdown", "contributors", "attribution", "gate")


class Store:
    """Runs a (workers w0, w1 with windows 1, 2 and 3), b (worker w0, window 5), empty (a worker, no window)."""

    def __init__(self):
        self.layout = {"a": {"w0": ["1", "2"], "w1": ["3"]}, "b": {"w0": ["5"]}, "empty": {"w0": []}}
        self.version = 0

    def runs(self):
        return list(self.layout)

    def window(self, run, worker, window):
        if window not in self.layout[run].get(worker, []):
            raise KeyError(window)
        return SimpleNamespace(id=window, run=run)

    def workers(self, run):
        return [SimpleNamespace(name=w) for w in self.layout[run]]

    def windows(self, run, worker):
        return [SimpleNamespace(id=w) for w in self.layout[run][worker]]

    def digest_key(self, run, window):
        assert run == window.run, (run, window)  # the store's key is the run's and the window's (store.py)
        return f"{run}/{window.id}@{self.version}"


def rows(section: str, n: int) -> list:
    return [{"section": section, "i": i} for i in range(n)]


def compared_body(**heads) -> dict:
    return {**heads, "metric": "device", **{k: f"<{k}>" for k in SUMMARY if k != "breakdown"},
            **{t: rows(t, 3 + i) for i, t in enumerate(TABLES)}}


@pytest.fixture
def world(monkeypatch):
    """A host over Store(), the comparisons stood in for (each call recorded), no comparison kept yet."""
    store = Store()
    calls = {"windows": [], "many": [], "digests": [], "pending": [], "default": []}
    unreadable = set()

    def compared_windows(s, base, target, group_by, threshold, gate_on):
        calls["windows"].append((s, base, target, group_by, threshold, gate_on))
        return compared_body(base_window={"window": base[2]}, target_window={"window": target[2]})

    def compared(s, base, target, group_by, threshold, gate_on):
        calls["many"].append((s, base, target, group_by, threshold, gate_on))
        return compared_body()

    def window_digest(s, run, worker, window):
        assert s is store
        calls["digests"].append((run, worker, window))
        if (run, worker, window) in unreadable:
            raise Unreadable(f"{run}/{worker}/{window}.json: damaged")
        return f"digest {run}/{worker}/{window}"

    def default_pairing(s, run, worker, window):
        calls["default"].append((s, run, worker, window))
        return Pairing([("a", "w0", "1")], [("a", "w0", "2")], "previous window", "the window before")

    def pending_many(run, keys):
        calls["pending"].append((run, keys))

    for name, fn in (("compared_windows", compared_windows), ("compared", compared), ("window_digest", window_digest),
                     ("default_pairing", default_pairing)):
        monkeypatch.setattr(compare_tool, name, fn)
    monkeypatch.setattr(compare_tool, "_kept", OrderedDict())
    return SimpleNamespace(host=SimpleNamespace(store=lambda: store, pending_many=pending_many), store=store,
                           calls=calls, unreadable=unreadable)


def test_two_named_windows_are_compared_and_the_summary_says_which_and_why(world):
    got = compare_tool.compare(world.host, "a", worker="w0", window="2", base_run="b", base_worker="w0",
                               base_window="5", group_by="stack", fail_on_regression_pct=5.0, gate_on="total")
    assert world.calls["windows"] == [(world.store, ("b", "w0", "5"), ("a", "w0", "2"), "stack", 5.0, "total")]
    assert world.calls["pending"] == [("a", [("b", "w0", "5"), ("a", "w0", "2")])]
    assert world.calls["many"] == [] and world.calls["default"] == []
    assert got["units"]["*_ns"].startswith("integer nanoseconds")
    body = compared_body()
    assert {k: v for k, v in got.items() if k != "units"} == {
        "run": "a", "worker": "w0", "window": "2", "base_run": "b", "base_worker": "w0", "base_window": {"window": "5"},
        "group_by": "stack", "section": "summary", "target_window": {"window": "2"}, "metric": "device",
        "pairing": {"rule": "named", "text": "the baseline named", "default": False},
        **{k: body[k] for k in SUMMARY}, **{f"{t}_total": 3 + i for i, t in enumerate(TABLES)}}


def test_without_a_baseline_the_default_pairing_is_compared_and_said(world):
    got = compare_tool.compare(world.host, "a", worker="w0", window="2")
    assert world.calls["default"] == [(world.store, "a", "w0", "2")]
    assert world.calls["windows"] == [(world.store, ("a", "w0", "1"), ("a", "w0", "2"), "name", None, "code")]
    assert got["pairing"] == {"rule": "previous window", "text": "the window before", "default": True}
    assert (got["base_run"], got["base_worker"], got["base_window"]) == (None, None, {"window": "1"})


BOTH = "name a window with both worker and window, or neither (every window of the run)"
NEED_BASE = "base_worker / base_window need base_run (omit all three for the default baseline)"


@pytest.mark.parametrize("args, error, words", [
    ({"run": "nope"}, NotFound, "unknown run: 'nope' (list_runs names them)"),
    ({"run": "a", "base_run": "nope"}, NotFound, "unknown run: 'nope' (list_runs names them)"),
    ({"run": "a", "worker": "w0", "window": "9"}, NotFound, "unknown run/worker/window: 'a' / 'w0' / '9'"),
    ({"run": "a", "worker": "w9", "window": "1", "base_run": "b"}, NotFound,
     "unknown run/worker/window: 'a' / 'w9' / '1'"),
    ({"run": "a", "worker": "w0"}, BadParameter, BOTH),
    ({"run": "a", "window": "1", "base_run": "b"}, BadParameter, BOTH),
    ({"run": "a", "base_run": "b", "base_worker": "w0"}, BadParameter, BOTH),
    ({"run": "a", "base_window": "5"}, BadParameter, NEED_BASE),
    ({"run": "a", "base_worker": "w0"}, BadParameter, NEED_BASE),
    ({"run": "empty"}, NotFound, "run 'empty' holds no window"),
    ({"run": "a", "base_run": "empty"}, NotFound, "run 'empty' holds no window"),
])
def test_a_side_that_names_no_window_is_refused_in_words(world, args, error, words):
    with pytest.raises(error) as e:
        compare_tool.compare(world.host, **args)
    assert str(e.value) == words and e.value.body["error"] == words
    assert world.calls["default"] == [] and world.calls["pending"] == []  # refused before anything is read


def test_whole_runs_compare_every_readable_window_and_name_the_others(world):
    world.unreadable.add(("a", "w1", "3"))
    got = compare_tool.compare(world.host, "a", base_run="b")
    assert world.calls["pending"] == [("a", [("b", "w0", "5"), ("a", "w0", "1"), ("a", "w0", "2"), ("a", "w1", "3")])]
    assert world.calls["many"] == [(world.store, ["digest b/w0/5"], ["digest a/w0/1", "digest a/w0/2"], "name", None,
                                    "code")]
    assert (got["base_windows"], got["target_windows"], got["problems_total"]) == (1, 2, 1)
    assert got["problems"] == [{"run": "a", "worker": "w1", "window": "3", "message": "a/w1/3.json: damaged"}]
    assert got["base_window"] is None and "target_window" not in got
    assert got["base_run"] == "b" and got["worker"] is None
    assert got["pairing"] == {"rule": "named", "text": "the baseline named", "default": False}
    compare_tool.compare(world.host, "a", base_run="b", group_by="stack", fail_on_regression_pct=2.5, gate_on="total")
    assert world.calls["many"][-1][3:] == ("stack", 2.5, "total")


def test_at_most_twenty_problems_are_listed_and_all_counted(world):
    world.store.layout["a"] = {f"w{i}": ["1"] for i in range(30)}
    world.unreadable.update(("a", f"w{i}", "1") for i in range(1, 25))
    got = compare_tool.compare(world.host, "a", base_run="b")
    assert got["problems_total"] == 24 and got["target_windows"] == 6
    assert [p["worker"] for p in got["problems"]] == [f"w{i}" for i in range(1, 21)]


@pytest.mark.parametrize("side", ["base", "target"])
def test_a_side_with_no_readable_window_is_unreadable_with_its_problems(world, side):
    run = "b" if side == "base" else "a"
    world.unreadable.update((run, w, x) for w, xs in world.store.layout[run].items() for x in xs)
    with pytest.raises(Unreadable) as e:
        compare_tool.compare(world.host, "a", base_run="b")
    assert e.value.body["error"] == f"no readable window in run {run!r}"
    assert e.value.body["problems"][0] == {"run": run, "worker": "w0", "window": world.store.layout[run]["w0"][0],
                                           "message": f"{run}/w0/{world.store.layout[run]['w0'][0]}.json: damaged"}
    assert len(e.value.body["problems"]) == sum(len(xs) for xs in world.store.layout[run].values())
    assert isinstance(e.value, QueryError) and world.calls["many"] == []


def test_a_pending_window_is_answered_as_pending_before_comparing(world):
    waiting = {"status": "digesting"}
    world.host.pending_many = lambda run, keys: waiting
    assert compare_tool.compare(world.host, "a", worker="w0", window="2", base_run="b") is waiting
    assert world.calls["windows"] == [] and world.calls["many"] == []


@pytest.mark.parametrize("section", [t for t in TABLES if t != "memory"])
def test_each_section_pages_its_own_rows(world, section):
    args = {"run": "a", "worker": "w0", "window": "2", "base_run": "b", "base_worker": "w0", "base_window": "5",
            "section": section}
    want = compared_body()[section]
    got = compare_tool.compare(world.host, **args, limit=2)
    assert "verdict" not in got and "operators_total" not in got
    seen = []
    for _ in range(10):  # bounded: a cursor that does not move on fails, never hangs
        assert got["total"] == len(want) and got["offset"] == len(seen) and got["section"] == section
        assert got["metric"] == "device" and got["target_window"] == {"window": "2"} and got["units"]
        seen += got[section]
        if not got["next_cursor"]:
            break
        assert offset_in(got["next_cursor"]) == len(seen)
        got = compare_tool.compare(world.host, **args, cursor=got["next_cursor"], limit=2)
    assert seen == want
    assert len(world.calls["windows"]) == 1  # compared once, the pages read the kept comparison


def test_a_section_gives_twenty_five_rows_by_default(world, monkeypatch):
    body = {**compared_body(base_window={}, target_window={}), "kernels": rows("kernels", 40)}
    monkeypatch.setattr(compare_tool, "compared_windows", lambda *a: body)
    got = compare_tool.compare(world.host, "a", worker="w0", window="2", base_run="b", base_worker="w0",
                               base_window="5", section="kernels")
    assert got["kernels"] == rows("kernels", 25) and offset_in(got["next_cursor"]) == 25


@pytest.mark.parametrize("other", [{"section": "kernels"}, {"group_by": "stack"}, {"window": "1"}, {"worker": "w1",
                                   "window": "3"}, {"base_window": "5", "base_worker": "w0", "base_run": "b"},
                                   {"run": "b", "worker": "w0", "window": "5"}])
def test_a_compare_cursor_pages_only_its_own_question(world, other):
    mine = {"run": "a", "worker": "w0", "window": "2", "section": "operators"}
    cursor = compare_tool.compare(world.host, **mine, limit=1)["next_cursor"]
    assert compare_tool.compare(world.host, **mine, cursor=cursor, limit=1)["offset"] == 1
    with pytest.raises(BadParameter, match="pages another question"):
        compare_tool.compare(world.host, **{**mine, **other}, cursor=cursor, limit=1)


def curve_pair(n_base: int, n_target: int) -> dict:
    """A device's pair: x in ms (10 x the index), bytes rising to a peak at a third of the curve, then falling."""
    def side(n):
        peak = n // 3
        return [10 * i for i in range(n)], [1_000 + i if i <= peak else 1_000 + 2 * peak - i for i in range(n)]

    (bx, bb), (tx, tb) = side(n_base), side(n_target)
    return {"device": "cuda:0", "base_x": bx, "base_bytes": bb, "target_x": tx, "target_bytes": tb, "peak": 7}


def test_memory_curves_are_thinned_to_a_hundred_points_a_side_with_their_peak(world, monkeypatch):
    pairs = [curve_pair(99, 100), curve_pair(0, 1_000), curve_pair(1, 101)]
    body = {**compared_body(base_window={}, target_window={}), "memory": pairs}
    monkeypatch.setattr(compare_tool, "compared_windows", lambda *a: body)
    got = compare_tool.compare(world.host, "a", worker="w0", window="2", base_run="b", base_worker="w0",
                               base_window="5", section="memory")
    assert got["total"] == 3 and got["next_cursor"] is None
    whole, thinned = got["memory"][0], got["memory"][1]
    assert {k: whole[k] for k in ("device", "base_x", "base_bytes", "peak", "base_points_total")} == {
        **{k: pairs[0][k] for k in ("device", "base_x", "base_bytes", "peak")}, "base_points_total": 99}
    assert (whole["target_points_total"], thinned["base_points_total"], thinned["target_points_total"]) == (
        100, 0, 1_000)
    assert (thinned["base_x"], thinned["base_bytes"]) == ([], [])
    for pair, side in ((whole, "target"), (thinned, "target"), (got["memory"][2], "target")):
        n = pair[f"{side}_points_total"]
        x, b = pair[f"{side}_x"], pair[f"{side}_bytes"]
        assert 2 <= len(x) < 100 and len(b) == len(x)
        assert x[0] == 0 and x[-1] == 10 * (n - 1) and x == sorted(x)  # the first and the last point, in order
        assert all(b[k] == curve_pair(1, n)["target_bytes"][x[k] // 10] for k in range(len(x)))  # x and bytes paired
        assert 1_000 + n // 3 in b  # the peak
    assert got["memory"][2]["base_bytes"] == [1_000] and len(pairs[0]["target_x"]) == 100  # the body unchanged


def test_a_kept_comparison_is_used_again_until_a_digest_changes(world):
    ask = {"run": "a", "worker": "w0", "window": "2", "base_run": "b", "base_worker": "w0", "base_window": "5"}
    compare_tool.compare(world.host, **ask)
    compare_tool.compare(world.host, **ask, section="kernels")
    assert len(world.calls["windows"]) == 1
    world.store.version = 1  # a window digested again: another digest key
    compare_tool.compare(world.host, **ask)
    assert len(world.calls["windows"]) == 2
    compare_tool.compare(world.host, **ask, group_by="stack")
    compare_tool.compare(world.host, **ask, fail_on_regression_pct=3.0)
    compare_tool.compare(world.host, **ask, gate_on="total")
    assert [c[3:] for c in world.calls["windows"][2:]] == [("stack", None, "code"), ("name", 3.0, "code"),
                                                          ("name", None, "total")]
    compare_tool.compare(world.host, **ask, group_by="stack")  # kept: the fourth newest
    assert len(world.calls["windows"]) == 5


def test_four_comparisons_are_kept_the_oldest_dropped_first(world):
    asks = [{"run": "a", "worker": w, "window": x, "base_run": "b", "base_worker": "w0", "base_window": "5"}
            for w, x in (("w0", "1"), ("w0", "2"), ("w1", "3"))]
    asks += [{"run": "b", "worker": "w0", "window": "5", "base_run": "a", "base_worker": w, "base_window": x}
             for w, x in (("w0", "1"), ("w0", "2"))]
    for ask in asks:
        compare_tool.compare(world.host, **ask)
    assert len(world.calls["windows"]) == 5
    for ask in asks[1:]:  # the four newest kept
        compare_tool.compare(world.host, **ask)
    assert len(world.calls["windows"]) == 5
    compare_tool.compare(world.host, **asks[0])  # the oldest was dropped: compared again
    assert len(world.calls["windows"]) == 6
    assert len(compare_tool._kept) == 4


def test_a_comparison_of_another_store_is_not_used(world):
    ask = {"run": "a", "worker": "w0", "window": "2", "base_run": "b", "base_worker": "w0", "base_window": "5"}
    compare_tool.compare(world.host, **ask)
    other = Store()
    world.host.store = lambda: other
    compare_tool.compare(world.host, **ask)
    assert [c[0] for c in world.calls["windows"]] == [world.store, other]
