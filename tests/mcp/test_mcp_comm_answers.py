"""The shaping of mcp/comm_tools.py's answers (communication, cross_rank) with the routes' bodies made by hand:
which section answers with which rows, what a summary cuts and counts, how a wide collective row leaves its
per-rank figures out, which window a question names, and how the tables page (issue 46: fast tests for a mutation
run over comm_tools.py; test_mcp_answers_vs_files.py checks the figures against the files)."""
from types import SimpleNamespace

import pytest

from canning_tb.mcp import comm_tools
from canning_tb.queries.errors import BadParameter
from _answers import entry, offset_in

STORE, PREFETCHER = object(), object()


def host(pending=None) -> SimpleNamespace:
    """A host whose windows are digested (or `pending`); pending() must name the window asked about."""
    def pend(run, worker, window):
        assert (run, worker, window) in (("r", "w", "7"), ("r", "w", "9")), (run, worker, window)
        return pending

    return SimpleNamespace(pending=pend, store=lambda: STORE, prefetcher=PREFETCHER)


def comm_body() -> dict:
    comm = {"total_ns": 900, "wait_ns": 100, "collectives": [{"c": i} for i in range(23)],
            "calls": [{"call": i} for i in range(7)], "links": [{"l": 0}], "groups": [{"g": 0}, {"g": 1}]}
    return {"communication": comm, "figures": {"steps": [{"s": i} for i in range(4)], "mean_ns": 50}}


@pytest.fixture
def comm(monkeypatch):
    asked = []
    monkeypatch.setattr(comm_tools, "communication_impl", lambda *a: asked.append(a) or comm_body())
    return asked


def test_the_communication_summary_cuts_the_collectives_and_counts_every_table(comm):
    got = comm_tools.communication(host(), "r", "w", "7")
    assert comm == [(STORE, "r", "w", "7")]
    assert {k: v for k, v in got.items() if k not in ("glossary", "units")} == {
        "run": "r", "worker": "w", "window": "7", "section": "summary", "communication": {"mean_ns": 50},
        "totals": {"total_ns": 900, "wait_ns": 100}, "collectives": [{"c": i} for i in range(20)],
        "collectives_total": 23, "calls_total": 7, "links_total": 1, "groups_total": 2, "steps_total": 4}
    assert got["glossary"]["wait_ns"] == entry("wait") and got["glossary"]["bandwidth_gbps"] == entry("bandwidth")
    assert got["units"]["*_gbps"] == "10^9 bytes per second"


@pytest.mark.parametrize("section, rows", [("steps", [{"s": i} for i in range(4)]),
                                           ("collectives", [{"c": i} for i in range(23)]),
                                           ("calls", [{"call": i} for i in range(7)]),
                                           ("groups", [{"g": 0}, {"g": 1}])])
def test_each_communication_table_pages_its_own_rows(comm, section, rows):
    got, seen = comm_tools.communication(host(), "r", "w", "7", section, limit=3), []
    for _ in range(10):  # bounded: a cursor that does not move on fails, never hangs
        assert got["total"] == len(rows) and got["section"] == section and got["units"]
        seen += got[section]
        if not got["next_cursor"]:
            break
        assert offset_in(got["next_cursor"]) == len(seen)
        got = comm_tools.communication(host(), "r", "w", "7", section, cursor=got["next_cursor"], limit=3)
    assert seen == rows
    with pytest.raises(BadParameter, match="pages another question"):  # a cursor of one section on another
        cursor = comm_tools.communication(host(), "r", "w", "7", "collectives", limit=3)["next_cursor"]
        comm_tools.communication(host(), "r", "w", "7", "calls" if section != "calls" else "steps", cursor=cursor)


def test_a_window_being_digested_answers_that(monkeypatch):
    monkeypatch.setattr(comm_tools, "communication_impl", lambda *a: pytest.fail("read before its digest"))
    waiting = {"status": "digesting"}
    assert comm_tools.communication(host(waiting), "r", "w", "7", "calls") is waiting


def rank_row(i: int, n: int = 2) -> dict:
    return {"name": f"c{i}", "per_rank": {str(r): r for r in range(n)}}


def cluster_body() -> dict:
    ranks = [{"rank": r, "step_ns": 10 + r, "computing_ns": 5, "p2p_wait_ns": 1, "bubble_ns": 2, "free_ns": 3,
              "wait_ns": 4} for r in range(3)]
    del ranks[2]["bubble_ns"]  # a field a rank does not have is left out, never made 0
    findings = [{"rule": "stage_imbalance" if i == 1 else f"r{i}", "severity": "low", "title": f"t{i}",
                 "gain_ns": i, "observation": False, "evidence": []} for i in range(7)]
    dist = [{"metric": "step_ns", "median": 11, "outliers": list(range(8)), "outliers_total": 8, "extra": 1}]
    return {"workers": ["a", "b", "c"], "problems": list(range(25)), "run_summary": {"x": 1}, "slow_ranks": [2],
            "distributions": dist, "compute_source": "cs", "breakdown_source": "bs", "matrix_source": "ms",
            "matrix_truncated": True, "findings": findings, "per_rank": [{"rank": r} for r in range(4)],
            "ranks": ranks, "groups": [{"g": 0}], "matrix_cells": [{"cell": i} for i in range(5)],
            "collectives": [rank_row(0, 32), rank_row(1, 33)]}


@pytest.fixture
def cluster(monkeypatch):
    asked = []
    monkeypatch.setattr(comm_tools, "cluster_impl", lambda *a: asked.append(a) or cluster_body())
    monkeypatch.setattr(comm_tools, "position_of", lambda store, run, worker, window: {
        (STORE, "r", "w", "7"): 2, (STORE, "r", "w", "9"): 4}[store, run, worker, window])
    return asked


def test_the_cross_rank_summary_cuts_and_counts(cluster):
    got = comm_tools.cross_rank(host(), "r", 3)
    assert cluster == [(STORE, PREFETCHER, "r", 3)]
    body = cluster_body()
    assert {k: v for k, v in got.items() if k not in ("glossary", "units")} == {
        "run": "r", "window_index": 3, "section": "summary", "workers_total": 3, "problems": list(range(20)),
        "problems_total": 25, "run_summary": {"x": 1}, "slow_ranks": [2],
        "outliers": [{"metric": "step_ns", "median": 11, "outliers": [0, 1, 2, 3, 4], "outliers_total": 8}],
        "compute_source": "cs", "breakdown_source": "bs", "matrix_source": "ms", "matrix_truncated": True,
        "findings": [{k: f[k] for k in ("rule", "severity", "title", "gain_ns", "observation")}
                     for f in body["findings"][:5]], "findings_total": 7, "ranks_total": 4}
    assert got["glossary"]["free_ns"] == entry("free") and got["glossary"]["computing_ns"] == entry("computing")


def test_cross_rank_sections_answer_their_rows(cluster):
    body = cluster_body()
    got = comm_tools.cross_rank(host(), "r", 1, "distributions")
    assert got == {"run": "r", "window_index": 1, "section": "distributions", "units": got["units"],
                   "distributions": body["distributions"]}
    matrix = comm_tools.cross_rank(host(), "r", 1, "matrix", limit=2)
    assert (matrix["matrix_source"], matrix["matrix_truncated"], matrix["total"]) == ("ms", True, 5)
    assert matrix["matrix_cells"] == [{"cell": 0}, {"cell": 1}] and offset_in(matrix["next_cursor"]) == 2
    stages = comm_tools.cross_rank(host(), "r", 1, "stages", limit=2)
    assert stages["findings"] == [body["findings"][1]] and offset_in(stages["next_cursor"]) == 2
    last = comm_tools.cross_rank(host(), "r", 1, "stages", cursor=stages["next_cursor"], limit=2)
    assert last["ranks"] == [{"rank": 2, "step_ns": 12, "computing_ns": 5, "p2p_wait_ns": 1, "free_ns": 3}]
    stages["ranks"] += last["ranks"]
    assert stages["ranks"] == [{"rank": 0, "step_ns": 10, "computing_ns": 5, "p2p_wait_ns": 1, "bubble_ns": 2,
                                "free_ns": 3}, {"rank": 1, "step_ns": 11, "computing_ns": 5, "p2p_wait_ns": 1,
                                                "bubble_ns": 2, "free_ns": 3},
                               {"rank": 2, "step_ns": 12, "computing_ns": 5, "p2p_wait_ns": 1, "free_ns": 3}]
    for section, key in (("ranks", "per_rank"), ("rank_figures", "ranks"), ("groups", "groups"),
                         ("findings", "findings")):
        got = comm_tools.cross_rank(host(), "r", 1, section, limit=50)
        assert (got[section], got["total"], got["next_cursor"]) == (body[key], len(body[key]), None)


def test_a_collective_row_lists_its_ranks_up_to_32(cluster):
    rows = comm_tools.cross_rank(host(), "r", 0, "collectives")["collectives"]
    assert rows[0] == rank_row(0, 32)
    assert rows[1] == {"name": "c1", "per_rank": None, "per_rank_total": 33}
    assert comm_tools._collective({"name": "x"}) == {"name": "x"}  # a row without per-rank figures as it is


def test_the_window_is_its_position_or_the_named_windows(cluster):
    assert comm_tools.cross_rank(host(), "r", worker="w", window="9")["window_index"] == 4
    assert cluster[-1] == (STORE, PREFETCHER, "r", 4)
    assert comm_tools.cross_rank(host(), "r", 0, worker="w", window="9")["window_index"] == 0  # the index wins
    for named in ({}, {"worker": "w"}, {"window": "9"}):
        with pytest.raises(BadParameter) as e:
            comm_tools.cross_rank(host(), "r", **named)
        assert str(e.value) == "give window_index, or worker and window (list_windows names them)"
    got = comm_tools.communication(host(), "r", "w", "7", "ranks", limit=2)  # this window's position: 2
    assert (got["window_index"], got["section"]) == (2, "rank_figures")
    assert got["rank_figures"] == cluster_body()["ranks"][:2]
    assert cluster[-1] == (STORE, PREFETCHER, "r", 2)
    got = comm_tools.communication(host(), "r", "w", "9", "matrix", limit=3)
    assert (got["window_index"], got["section"], got["total"]) == (4, "matrix", 5)
    nxt = comm_tools.communication(host(), "r", "w", "9", "matrix", cursor=got["next_cursor"], limit=3)
    assert nxt["matrix_cells"] == [{"cell": 3}, {"cell": 4}]  # the cursor of cross_rank's question


def test_a_cross_rank_cursor_pages_only_its_window_and_section(cluster):
    cursor = comm_tools.cross_rank(host(), "r", 1, "matrix", limit=2)["next_cursor"]
    assert comm_tools.cross_rank(host(), "r", 1, "matrix", cursor=cursor, limit=2)["offset"] == 2
    for args in ((2, "matrix"), (1, "groups")):
        with pytest.raises(BadParameter, match="pages another question"):
            comm_tools.cross_rank(host(), "r", *args, cursor=cursor)


def test_windows_still_being_digested_are_counted(monkeypatch):
    monkeypatch.setattr(comm_tools, "cluster_impl", lambda *a: {"loading": True, "done": 3, "total": 8})
    got = comm_tools.cross_rank(host(), "r", 5, "matrix")
    assert (got["run"], got["window_index"], got["status"], got["done"], got["total"]) == ("r", 5, "digesting", 3, 8)
    assert "3 of 8 windows are digested" in got["message"]
