"""queries/ranks.py and queries/critical_path.py on digests made by hand (issue 46: fast tests for a mutation run):
which windows /cluster reads, what it refuses, the rows by rank, when a kept answer is served again; the critical
path's pages, categories and longest segments, and the cross-rank path's shaping. Each expected value is worked out
by hand in the test; the cross-rank analysis itself is tests/analysis/test_cluster_mutants.py's."""
import pytest

from _hand_store import Ready, RunStore
from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.digest import analysis_revision
from canning_tb.queries import critical_path, ranks
from canning_tb.queries.errors import BadParameter, NotFound
from canning_tb.store.digest_part import RANKS


def rank_digest(rank: int, step_ns: int) -> pb.Digest:
    d = pb.Digest()
    d.window.rank, d.window.start_ns, d.window.end_ns = rank, 0, 10 * step_ns
    d.steps.add(number=1, start_ns=0, dur_ns=step_ns).breakdown.total_ns = step_ns
    d.average.total_ns = step_ns
    d.average_steps.append(1)
    return d


def two_ranks(tmp_path, run):
    """Workers w0 (rank 1, step 300 ns) and w1 (rank 0, step 200 ns) with windows a, b; w2 (rank 2) with a only."""
    digests = {(run, "w0", "a"): rank_digest(1, 300), (run, "w1", "a"): rank_digest(0, 200),
               (run, "w0", "b"): rank_digest(1, 30), (run, "w1", "b"): rank_digest(0, 20),
               (run, "w2", "a"): rank_digest(2, 500)}
    return RunStore(tmp_path, run, {"w0": (1, ["a", "b"]), "w1": (0, ["a", "b"]), "w2": (2, ["a"])}, digests)


def test_position_of(tmp_path):
    store = two_ranks(tmp_path, "p")
    assert ranks.position_of(store, "p", "w0", "b") == 1 and ranks.position_of(store, "p", "w2", "a") == 0
    with pytest.raises(NotFound, match=r"^unknown run/worker/window: 'p' / 'w2' / 'b'$"):
        ranks.position_of(store, "p", "w2", "b")


def test_the_ranks_rows_by_rank(tmp_path):
    store, ready = two_ranks(tmp_path, "rows"), Ready()
    body = ranks.cluster_impl(store, ready, "rows", 1)
    assert ready.asked == [(("rows", 1), [("rows", "w0", "b"), ("rows", "w1", "b")])]
    assert store.reads == [("rows", "w0", "b", RANKS), ("rows", "w1", "b", RANKS)]
    assert (body["run"], body["window_index"], body["loading"], body["problems"]) == ("rows", 1, False, [])
    assert body["workers"] == [{"worker": "w0", "rank": 1, "window": "b", "digest_rank": 1, "cluster_rank": 1},
                               {"worker": "w1", "rank": 0, "window": "b", "digest_rank": 0, "cluster_rank": 0}]
    rows = body["per_rank"]
    assert [(r["rank"], r["worker"], r["window"], r["step_ns"]) for r in rows] == [(0, "w1", "b", 20),
                                                                                 (1, "w0", "b", 30)]
    step = body["run_summary"]["step_ns"]
    assert body["run_summary"]["ranks"] == 2 and (step["min"], step["min_rank"], step["max_rank"]) == (20, 0, 1)
    assert isinstance(body["findings"], list)


def test_repeated_ranks_are_numbered_by_position(tmp_path):
    digests = {("rep", w, "a"): rank_digest(0, ns) for w, ns in (("w0", 300), ("w1", 200))}
    store = RunStore(tmp_path, "rep", {"w0": (0, ["a"]), "w1": (0, ["a"])}, digests)
    body = ranks.cluster_impl(store, Ready(), "rep", 0)
    assert [w["cluster_rank"] for w in body["workers"]] == [0, 1]
    assert [(r["rank"], r["step_ns"]) for r in body["per_rank"]] == [(0, 300), (1, 200)]


def test_what_cluster_refuses_and_while_loading(tmp_path):
    store = two_ranks(tmp_path, "ref")
    with pytest.raises(NotFound, match=r"^unknown run: 'nope'$"):
        ranks.cluster_impl(store, Ready(), "nope", 0)
    with pytest.raises(NotFound, match=r"^no window at position 2 in run 'ref'$"):
        ranks.cluster_impl(store, Ready(), "ref", 2)
    loading = ranks.cluster_impl(store, Ready({"done": 1, "total": 3}), "ref", 0)
    assert loading == {"run": "ref", "window_index": 0, "loading": True, "done": 1, "total": 3}
    assert store.reads == []


def test_an_unreadable_window_is_listed_and_with_none_readable_not_found(tmp_path):
    store = two_ranks(tmp_path, "bad")
    del store.digests[("bad", "w0", "b")]
    body = ranks.cluster_impl(store, Ready(), "bad", 1)
    assert body["problems"] == [{"worker": "w0", "window": "b",
                                 "message": "unknown run/worker/window: 'bad' / 'w0' / 'b'"}]
    assert [w["worker"] for w in body["workers"]] == ["w1"] and [r["rank"] for r in body["per_rank"]] == [0]
    del store.digests[("bad", "w1", "b")]
    with pytest.raises(NotFound, match=r"^no readable window at position 1 in run 'bad'$") as e:
        ranks.cluster_impl(store, Ready(), "bad", 1)
    assert [p["worker"] for p in e.value.body["problems"]] == ["w0", "w1"]


def test_the_findings_are_judged_on_the_windows_digests(tmp_path, monkeypatch):
    import canning_tb.analysis.rules as rules
    seen = []
    monkeypatch.setattr(rules, "cluster_hits", lambda analysis, digests=(): seen.append(list(digests)) or [])
    store = two_ranks(tmp_path, "hits")
    assert ranks.cluster_impl(store, Ready(), "hits", 1)["findings"] == []
    # the digests as read, in the workers' order (w0 then w1), not sorted by rank
    assert seen == [[store.digests[("hits", "w0", "b")], store.digests[("hits", "w1", "b")]]]


def test_a_kept_answer_is_served_while_no_file_changed(tmp_path):
    store = two_ranks(tmp_path, "kept")
    first = ranks.cluster_impl(store, Ready(), "kept", 1)
    assert ranks.cluster_impl(store, Ready(), "kept", 1) is first and len(store.reads) == 2
    other = ranks.cluster_impl(store, Ready(), "kept", 0)  # another position: its own answer
    assert other is not first and len(store.reads) == 5
    store.key["b"] = "k1"  # window b's files changed
    again = ranks.cluster_impl(store, Ready(), "kept", 1)
    assert again is not first and again == first and len(store.reads) == 7
    assert ranks.cluster_impl(store, Ready(), "kept", 1) is again and len(store.reads) == 7


def test_an_answer_with_problems_is_not_kept(tmp_path):
    store = two_ranks(tmp_path, "nokeep")
    del store.digests[("nokeep", "w2", "a")]
    first = ranks.cluster_impl(store, Ready(), "nokeep", 0)
    assert len(first["problems"]) == 1
    second = ranks.cluster_impl(store, Ready(), "nokeep", 0)
    assert second is not first and len(store.reads) == 4  # read again: two readable windows, twice


def test_answers_are_kept_per_store(tmp_path):
    one, two = two_ranks(tmp_path, "same"), two_ranks(tmp_path, "same")
    two.digests[("same", "w0", "b")] = rank_digest(1, 90)
    assert [r["step_ns"] for r in ranks.cluster_impl(one, Ready(), "same", 1)["per_rank"]] == [20, 30]
    assert [r["step_ns"] for r in ranks.cluster_impl(two, Ready(), "same", 1)["per_rank"]] == [20, 90]


# the critical path of one window

T0 = 5_000


def path_digest() -> pb.Digest:
    d = pb.Digest(analysis_revision=analysis_revision())
    d.window.start_ns, d.window.end_ns = T0, T0 + 10_000
    p = d.critical_path.add(number=7, start_ns=T0 + 100, dur_ns=1000, segments_total=9)
    p.by_category.update({"kernel": 600, "host": 300, "idle": 0, "sync": 300, "memcpy": -1})
    durs = (50, 400, 10, 400, 30, 20, 5)  # in time order, 100 ns apart
    for i, dur in enumerate(durs):
        p.segments.add(lane="L", name=f"s{i}", category="kernel", ts_ns=T0 + 100 * i, dur_ns=dur)
    q = d.critical_path.add(number=8, start_ns=-1, dur_ns=0)
    q.by_category["host"] = 5
    q.segments.add(name="t0", ts_ns=-1, dur_ns=1)
    return d


def path_store(tmp_path):
    return RunStore(tmp_path, "cp", {"w": (0, ["1"])}, {("cp", "w", "1"): path_digest()})


def test_a_steps_categories_segments_and_longest(tmp_path):
    store = path_store(tmp_path)
    store.digests[("cp", "w", "1")].problems.add(file=str(tmp_path / "x" / "a.json"), message="m")
    body = critical_path.critical_path_impl(store, "cp", "w", "1", offset=2, limit=3)
    assert (body["offset"], body["limit"], body["run"], body["worker"], body["window"]) == (2, 3, "cp", "w", "1")
    assert [p["file"] for p in body["problems"]] == ["x/a.json"]
    seven, eight = body["steps"]
    assert (seven["number"], seven["start_ns"], seven["dur_ns"]) == (7, 100, 1000)
    # largest first, equal ones by name; 0 and -1 left out; shares of 1000
    assert seven["categories"] == [{"category": "kernel", "ns": 600, "share": 0.6},
                                   {"category": "host", "ns": 300, "share": 0.3},
                                   {"category": "sync", "ns": 300, "share": 0.3}]
    assert [s["name"] for s in seven["segments"]] == ["s2", "s3", "s4"] and seven["segments"][0]["ts_ns"] == 200
    # the 5 longest: 400 at 100 and at 300 (the earlier first), 50, 30, 20
    assert [s["name"] for s in seven["longest"]] == ["s1", "s3", "s0", "s4", "s5"]
    assert (seven["segments_kept"], seven["segments_total"], seven["next_offset"]) == (7, 9, 5)
    assert (eight["start_ns"], eight["categories"]) == (-1, [{"category": "host", "ns": 5, "share": None}])
    assert eight["segments"] == [] and eight["next_offset"] is None and eight["longest"][0]["ts_ns"] == -1


def test_the_last_page_has_no_next_offset(tmp_path):
    store = path_store(tmp_path)
    body = critical_path.critical_path_impl(store, "cp", "w", "1", step=7, offset=4, limit=3)
    assert [s["number"] for s in body["steps"]] == [7] and body["steps"][0]["next_offset"] is None  # 4 + 3 = 7 kept
    body = critical_path.critical_path_impl(store, "cp", "w", "1", step=7, offset=3, limit=3)
    assert body["steps"][0]["next_offset"] == 6
    whole = critical_path.critical_path_impl(store, "cp", "w", "1", step=8)
    assert (whole["offset"], whole["limit"]) == (0, 50) and [s["name"] for s in whole["steps"][0]["segments"]] == ["t0"]


def test_the_critical_paths_bad_arguments(tmp_path):
    store = path_store(tmp_path)
    with pytest.raises(NotFound, match=r"^step 9 has no critical path in cp / w / 1 \(steps: 7, 8\)$"):
        critical_path.critical_path_impl(store, "cp", "w", "1", step=9)
    many = pb.Digest()
    for n in range(25):
        many.critical_path.add(number=n)
    shown = ", ".join(str(n) for n in range(20))  # the first 20 steps named
    with pytest.raises(NotFound, match=rf"^step 99 has no critical path in m / w / 1 \(steps: {shown}\)$"):
        critical_path.critical_path_impl(RunStore(tmp_path, "m", {"w": (0, ["1"])}, {("m", "w", "1"): many}),
                                         "m", "w", "1", step=99)
    empty = RunStore(tmp_path, "e", {"w": (0, ["1"])}, {("e", "w", "1"): pb.Digest()})
    with pytest.raises(NotFound, match=r"\(steps: none\)$"):
        critical_path.critical_path_impl(empty, "e", "w", "1", step=0)
    for offset, limit, said in ((-1, 5, "offset must be 0 or more, not -1"),
                                (0, 0, "limit must be between 1 and 200, not 0"),
                                (0, 201, "limit must be between 1 and 200, not 201")):
        with pytest.raises(BadParameter, match=f"^{said}$"):
            critical_path.critical_path_impl(store, "cp", "w", "1", offset=offset, limit=limit)
    assert critical_path.critical_path_impl(store, "cp", "w", "1", limit=200)["limit"] == 200
    assert critical_path.critical_path_impl(store, "cp", "w", "1", limit=1)["steps"][0]["next_offset"] == 1
    for name, args in (("offset", {"offset": 1 << 63}), ("limit", {"limit": -(1 << 63)}), ("step", {"step": 1 << 63})):
        with pytest.raises(BadParameter, match=f"^{name} is out of range"):
            critical_path.critical_path_impl(store, "cp", "w", "1", **args)


def test_categories():
    assert critical_path.categories({"b": 2, "a": 2, "c": 1}, 4) == [
        {"category": "a", "ns": 2, "share": 0.5}, {"category": "b", "ns": 2, "share": 0.5},
        {"category": "c", "ns": 1, "share": 0.25}]
    assert critical_path.categories({}, 4) == [] and critical_path.categories({"x": 1}, -1)[0]["share"] is None


# the path across ranks: the cluster analysis stood in for

def cluster_body():
    hops = [{"rank": r, "i": i} for i, r in enumerate((0, 1, 0, 1, 0, 1))]
    return {"run": "x", "loading": False, "problems": [{"worker": "w9"}], "per_rank": [{}, {}, {}],
            "workers": [{"worker": "wa", "window": "1", "digest_rank": 4},
                        {"worker": "wb", "window": "2", "digest_rank": 3}],
            "clock_offsets": [{"rank": 3, "offset_ns": 7}, {"rank": 9, "offset_ns": 1}],
            "critical_path": [{"step": 2, "dur_ns": 100, "by_rank": {"3": 30, "0": 20, "5": 70, "1": 30},
                               "hops": hops, "hops_total": 11},
                              {"step": 3, "dur_ns": 0, "by_rank": {}, "hops": [], "hops_total": 0}]}


def test_the_cross_rank_path(monkeypatch):
    asked = []
    monkeypatch.setattr(critical_path, "cluster_impl", lambda *a: asked.append(a) or cluster_body())
    body = critical_path.cross_rank_path_impl("S", "P", "x", 4, offset=1, limit=2)
    assert asked == [("S", "P", "x", 4)]
    assert (body["run"], body["window_index"], body["loading"], body["offset"], body["limit"]) == ("x", 4, False, 1, 2)
    two, three = body["steps"]
    # held longest: rank 5 (70); then 1 and 3 with 30 each, by rank; then 0 (20)
    assert (two["step"], two["dur_ns"], two["held_by"]) == (2, 100, 5)
    assert two["by_rank"] == [{"rank": 5, "ns": 70, "share": 0.7}, {"rank": 1, "ns": 30, "share": 0.3},
                              {"rank": 3, "ns": 30, "share": 0.3}, {"rank": 0, "ns": 20, "share": 0.2}]
    assert [h["i"] for h in two["hops"]] == [1, 2] and two["hops_total"] == 11 and two["next_offset"] == 3
    assert (three["held_by"], three["by_rank"], three["hops"], three["next_offset"]) == (None, [], [], None)
    # ranks 4 and 3 as the digests say (no repeat): rank 3 is wb's window 2; rank 9 names no worker
    assert body["clock_offsets"] == [{"rank": 3, "offset_ns": 7, "worker": "wb", "window": "2"},
                                     {"rank": 9, "offset_ns": 1}]
    assert body["problems"] == [{"worker": "w9"}] and body["ranks_total"] == 3
    last = critical_path.cross_rank_path_impl("S", "P", "x", 4, offset=4, limit=2)
    assert last["steps"][0]["next_offset"] is None  # 4 + 2 = the 6 hops
    whole = critical_path.cross_rank_path_impl("S", "P", "x", 4)
    assert (whole["offset"], whole["limit"]) == (0, 50) and [h["i"] for h in whole["steps"][0]["hops"]] == [0, 1, 2, 3,
                                                                                                           4, 5]


def test_the_cross_rank_path_while_loading_or_of_nothing(monkeypatch):
    monkeypatch.setattr(critical_path, "cluster_impl", lambda *a: {"loading": True, "done": 0})
    assert critical_path.cross_rank_path_impl("S", "P", "x", 0) == {"loading": True, "done": 0}
    monkeypatch.setattr(critical_path, "cluster_impl", lambda *a: {"loading": False})
    body = critical_path.cross_rank_path_impl("S", "P", "x", 0)
    assert (body["steps"], body["clock_offsets"], body["problems"], body["ranks_total"]) == ([], [], [], 0)
    with pytest.raises(BadParameter, match="^limit must be between 1 and 200, not 0$"):
        critical_path.cross_rank_path_impl("S", "P", "x", 0, limit=0)


def test_repeated_digest_ranks_name_workers_by_position(monkeypatch):
    body = cluster_body()
    for member in body["workers"]:
        member["digest_rank"] = 0  # repeated: numbered 0, 1 by position
    body["clock_offsets"] = [{"rank": 1, "offset_ns": 2}]
    monkeypatch.setattr(critical_path, "cluster_impl", lambda *a: body)
    named = critical_path.cross_rank_path_impl("S", "P", "x", 0)["clock_offsets"]
    assert named == [{"rank": 1, "offset_ns": 2, "worker": "wb", "window": "2"}]
