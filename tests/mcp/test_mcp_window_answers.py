"""The shaping of mcp/window_tools.py's answers (overview, operators, kernels, findings) with the route's body
made by hand: what is cut, what is counted, what is passed on, which glossary entries come with it and how the
pages continue (issue 46: fast tests for a mutation run over window_tools.py; the digest-backed tests in
test_mcp_answers_vs_files.py check the figures themselves). Glossary entries are read from glossary.json here."""
from types import SimpleNamespace

import pytest

from canning_tb.mcp import window_tools
from canning_tb.queries import sections
from canning_tb.queries.errors import BadParameter
from _answers import entry, offset_in, recording_host

STORE = object()
WHERE = {"run": "r", "worker": "w", "window": "7"}
BRIEF = ("rule", "severity", "category", "title", "gain_ns", "speedup", "observation")


def host(pending=None) -> SimpleNamespace:
    return recording_host(STORE, pending)


def hit(i: int) -> dict:
    return {"rule": f"r{i}", "severity": "high", "category": "c", "title": f"t{i}", "gain_ns": 100 - i,
            "speedup": 1.5, "observation": False, "evidence": [i], "why": "w"}


def overview_body(gpu=None, npu=None) -> dict:
    return {"info": {"device": "A100", "source_files": ["a", "b", "c"]}, "schema_version": 9,
            "figures": {"average_step_ns": 5}, "average": {"total_ns": 5}, "steps": list(range(53)),
            "gpu_efficiency": gpu, "npu_efficiency": npu, "problems": list(range(22)),
            "rule_hits": [hit(i) for i in range(7)]}


def test_overview_cuts_steps_problems_and_findings_and_counts_them(monkeypatch):
    seen = []
    monkeypatch.setattr(sections, "overview_impl", lambda *a: seen.append(a) or overview_body())
    h = host()
    got = window_tools.overview(h, "r", "w", "7")
    assert seen == [(STORE, "r", "w", "7")] and h.asked == [("r", "w", "7")]
    assert {k: v for k, v in got.items() if k not in ("glossary", "units")} == {
        **WHERE, "info": {"device": "A100", "source_files_total": 3}, "schema_version": 9,
        "figures": {"average_step_ns": 5}, "average": {"total_ns": 5}, "steps": list(range(50)), "steps_total": 53,
        "gpu_efficiency": None, "npu_efficiency": None, "problems": list(range(20)), "problems_total": 22,
        "findings": [{k: hit(i)[k] for k in BRIEF} for i in range(5)], "findings_total": 7}
    assert got["units"]["*_ns"].startswith("integer nanoseconds")
    assert got["glossary"]["average_step_ns"] == entry("step_time")
    assert got["glossary"]["idle_ns"] == entry("idle")  # the step breakdown's
    assert "utilization" not in got["glossary"]  # no device efficiency: its terms are not named


@pytest.mark.parametrize("gpu, npu", [({"utilization": 0.5}, None), (None, {"ai_core_utilization": 0.4})])
def test_overview_names_the_device_terms_when_either_device_has_efficiency(monkeypatch, gpu, npu):
    monkeypatch.setattr(sections, "overview_impl", lambda *a: overview_body(gpu, npu))
    got = window_tools.overview(host(), "r", "w", "7")
    assert got["glossary"]["utilization"] == entry("gpu_utilization")
    assert got["glossary"]["ai_core_utilization"] == entry("ai_core_utilization")


def test_a_window_being_digested_answers_that_and_reads_nothing(monkeypatch):
    def boom(*a):
        raise AssertionError("the route read a window not digested yet")

    for name in ("overview_impl", "operators_impl", "kernels_impl", "suggestions_impl"):
        monkeypatch.setattr(sections, name, boom)
    waiting = {"status": "digesting"}
    for tool in (window_tools.overview, window_tools.operators, window_tools.kernels, window_tools.findings):
        h = host(waiting)
        assert tool(h, "r", "w", "7") is waiting and h.asked == [("r", "w", "7")]


def table_body(total: int, offset: int, limit: int, **extra) -> dict:
    return {"has_device": True, "has_stacks": False, "all_rows": 40, "total": total, "offset": offset,
            "limit": limit, "sort": "s", "order": "o", "search": "q",
            "rows": [{"name": f"op{i}"} for i in range(offset, min(total, offset + limit))], **extra}


def test_operators_pass_only_the_paging_asked_for_and_page_on(monkeypatch):
    asked = []

    def impl(store, run, worker, window, group_by, paging):
        asked.append((store, run, worker, window, group_by, paging))
        return table_body(12, paging["offset"], paging["limit"])

    monkeypatch.setattr(sections, "operators_impl", impl)
    first = window_tools.operators(host(), "r", "w", "7", group_by="stack", limit=5)
    assert asked[-1] == (STORE, "r", "w", "7", "stack", {"offset": 0, "limit": 5})
    assert {k: v for k, v in first.items() if k not in ("glossary", "units", "next_cursor")} == {
        **WHERE, "group_by": "stack", "has_device": True, "has_stacks": False, "all_rows": 40, "total": 12,
        "offset": 0, "limit": 5, "sort": "s", "order": "o", "search": "q",
        "rows": [{"name": f"op{i}"} for i in range(5)]}
    assert set(first["glossary"]) == {"host_self_ns", "host_total_ns", "device_self_ns", "device_total_ns",
                                      "tc_eligible", "tc_self_share", "tc_total_share"}
    assert first["glossary"]["device_total_ns"] == entry("device_total")
    assert offset_in(first["next_cursor"]) == 5
    args = {"group_by": "stack", "sort": "device_self_ns", "order": "asc", "search": "mm"}
    second = window_tools.operators(host(), "r", "w", "7", **args, limit=5)  # a first page again: other arguments
    assert asked[-1][5] == {"sort": "device_self_ns", "order": "asc", "search": "mm", "offset": 0, "limit": 5}
    page = window_tools.operators(host(), "r", "w", "7", **args, cursor=second["next_cursor"], limit=5)
    assert asked[-1][5]["offset"] == 5 and "glossary" not in page  # the glossary comes with the first page only
    last = window_tools.operators(host(), "r", "w", "7", **args, cursor=page["next_cursor"], limit=5)
    assert asked[-1][5]["offset"] == 10 and last["next_cursor"] is None and len(last["rows"]) == 2


@pytest.mark.parametrize("other", [{"group_by": "name"}, {"sort": "x"}, {"order": "desc"}, {"search": "y"},
                                   {"window": "8"}, {"worker": "v"}, {"run": "s"}])
def test_a_table_cursor_pages_only_its_own_question(monkeypatch, other):
    monkeypatch.setattr(sections, "operators_impl", lambda s, r, w, win, g, paging: table_body(12, 0, 5))
    mine = {**WHERE, "group_by": "stack", "sort": "a", "order": "asc", "search": "m"}
    cursor = window_tools.operators(host(), **mine, limit=5)["next_cursor"]
    with pytest.raises(BadParameter, match="pages another question"):
        window_tools.operators(host(), **{**mine, **other}, cursor=cursor, limit=5)
    monkeypatch.setattr(sections, "kernels_impl", lambda s, r, w, win, paging: kernel_body(0, 5))
    with pytest.raises(BadParameter, match="pages another question"):  # the same arguments on another tool
        window_tools.kernels(host(), **mine, cursor=cursor, limit=5)
    mine["group_by"] = "op"
    cursor = window_tools.kernels(host(), **mine, limit=5)["next_cursor"]
    assert window_tools.kernels(host(), **mine, cursor=cursor, limit=5)["next_cursor"]  # taken on its own question
    with pytest.raises(BadParameter, match="pages another question"):
        window_tools.kernels(host(), **{**mine, **other, "group_by": other.get("group_by", "op")}, cursor=cursor)
    if "group_by" in other:
        with pytest.raises(BadParameter, match="pages another question"):
            window_tools.kernels(host(), **{**mine, "group_by": "name"}, cursor=cursor)


def kernel_body(offset: int, limit: int) -> dict:
    return {"kernels_by_name": [{"name": f"k{i}"} for i in range(offset, min(9, offset + limit))],
            "kernels_by_name_all": 30, "total": 9,
            "kernels_by_op": [{"name": "k", "op_name": f"o{i}"} for i in range(offset, min(14, offset + limit))],
            "kernels_by_op_all": 31, "kernels_by_op_total": 14, "offset": offset, "limit": limit, "sort": None,
            "order": None, "search": "", "total_ns": 12345, "cores": ["AI Core"]}


@pytest.mark.parametrize("group_by, table, total, all_rows", [("name", "kernels_by_name", 9, 30),
                                                               ("op", "kernels_by_op", 14, 31)])
def test_kernels_answer_the_table_asked_for_with_its_own_total(monkeypatch, group_by, table, total, all_rows):
    asked = []

    def impl(store, run, worker, window, paging):
        asked.append((store, run, worker, window, paging))
        return kernel_body(paging["offset"], paging["limit"])

    monkeypatch.setattr(sections, "kernels_impl", impl)
    got = window_tools.kernels(host(), "r", "w", "7", group_by=group_by, sort="total_ns", order="asc", search="k",
                               limit=4)
    assert asked == [(STORE, "r", "w", "7", {"sort": "total_ns", "order": "asc", "search": "k", "offset": 0,
                                             "limit": 4})]
    assert {k: v for k, v in got.items() if k not in ("glossary", "units", "next_cursor")} == {
        **WHERE, "group_by": group_by, "all_rows": all_rows, "total": total, "offset": 0, "limit": 4, "sort": None,
        "order": None, "search": "", "kernel_total_ns": 12345, "cores": ["AI Core"],
        "rows": kernel_body(0, 4)[table]}
    assert got["glossary"]["calls"] == entry("kernel_calls") and got["glossary"]["max_ns"] == entry("kernel_max")
    rows, cursor = got["rows"], got["next_cursor"]
    while cursor and len(rows) < 50:  # bounded: a cursor that does not move on fails
        page = window_tools.kernels(host(), "r", "w", "7", group_by=group_by, sort="total_ns", order="asc",
                                    search="k", cursor=cursor, limit=4)
        assert "glossary" not in page and page["total"] == total
        rows, cursor = rows + page["rows"], page["next_cursor"]
    assert rows == kernel_body(0, 99)[table]  # every row once, the pages ending at the table's own total


def test_findings_page_the_whole_findings(monkeypatch):
    found = [hit(i) for i in range(7)]
    asked = []
    monkeypatch.setattr(sections, "suggestions_impl", lambda *a: asked.append(a) or {"findings": found})
    first = window_tools.findings(host(), "r", "w", "7", limit=3)
    assert asked == [(STORE, "r", "w", "7")]
    assert {k: v for k, v in first.items() if k not in ("units", "next_cursor")} == {
        **WHERE, "total": 7, "offset": 0, "findings": found[:3]}
    assert offset_in(first["next_cursor"]) == 3
    second = window_tools.findings(host(), "r", "w", "7", cursor=first["next_cursor"], limit=3)
    assert (second["offset"], second["findings"], offset_in(second["next_cursor"])) == (3, found[3:6], 6)
    last = window_tools.findings(host(), "r", "w", "7", cursor=second["next_cursor"], limit=3)
    assert (last["offset"], last["findings"], last["next_cursor"]) == (6, found[6:], None)
    assert window_tools.findings(host(), "r", "w", "7")["findings"] == found[:5]  # five by default
    for other in (("r", "w", "8"), ("r", "v", "7"), ("s", "w", "7")):
        with pytest.raises(BadParameter, match="pages another question"):
            window_tools.findings(host(), *other, cursor=first["next_cursor"])
