"""The shaping of mcp/efficiency.py's answers (mfu, roofline) with the /roofline route's body made by hand: what mfu
keeps and counts, how roofline filters its points by kind and pages them, the glossary on the first page only, and
the "not in this digest" answer (issue 46: fast tests for a mutation run over efficiency.py; the figures are the
route's, tested in tests/plugin/test_roofline_route.py). Glossary entries are read from glossary.json here."""
import sys
from types import SimpleNamespace

import pytest

from canning_tb.analysis import digest_pb2
from canning_tb.mcp import efficiency
from canning_tb.queries import roofline as roofline_route
from canning_tb.queries.errors import BadParameter
from _answers import entry, offset_in, recording_host

STORE = object()
WHERE = {"run": "r", "worker": "w", "window": "7"}
NOT_HERE = {**WHERE, "status": "not_in_digest"}  # docs/agents.md's answer without the efficiency analysis


def host(pending=None) -> SimpleNamespace:
    return recording_host(STORE, pending)


def point(i: int) -> dict:
    return {"kind": "operator" if i % 3 else "kernel", "name": f"p{i}", "flops": 10 * i, "bound": "memory"}


POINTS = [point(i) for i in range(80)]  # 27 kernels (i = 0, 3, ..., 78), 53 operators
KERNELS = [p for p in POINTS if p["kind"] == "kernel"]
OPERATORS = [p for p in POINTS if p["kind"] == "operator"]


def body() -> dict:
    return {"run": "r", "roofline": {"device": "A100", "mfu": 0.25, "hbm_gbps": 900.0, "points": POINTS},
            "steps": [{"number": n, "roofline": {"mfu": 0.2}} for n in range(53)], "chips": ["A100"]}


@pytest.fixture
def route(monkeypatch):
    asked = []
    monkeypatch.setattr(roofline_route, "roofline_impl", lambda *a: asked.append(a) or body())
    return asked


def test_mfu_keeps_the_figures_without_the_points_and_cuts_the_steps(route):
    h = host()
    got = efficiency.mfu(h, "r", "w", "7")
    assert route == [(STORE, "r", "w", "7")] and h.asked == [("r", "w", "7")]
    assert {k: v for k, v in got.items() if k not in ("glossary", "units")} == {
        **WHERE, "roofline": {"device": "A100", "mfu": 0.25, "hbm_gbps": 900.0}, "points_total": 80,
        "steps": [{"number": n, "roofline": {"mfu": 0.2}} for n in range(50)], "steps_total": 53}
    assert got["glossary"]["mfu"] == entry("mfu") and got["glossary"]["roof_tflops"] == entry("roof")
    assert got["glossary"]["flops_per_step"] == entry("model_flops")
    assert got["units"]["*_gbps"] == "10^9 bytes per second"


@pytest.mark.parametrize("kind, rows", [("all", POINTS), ("operator", OPERATORS), ("kernel", KERNELS)])
def test_roofline_pages_the_points_of_its_kind(route, kind, rows):
    got = efficiency.roofline(host(), "r", "w", "7", kind=kind, limit=20)
    assert {k: v for k, v in got.items() if k not in ("glossary", "units", "next_cursor")} == {
        **WHERE, "kind": kind, "device": "A100", "total": len(rows), "offset": 0, "points": rows[:20]}
    assert got["glossary"]["intensity"] == entry("arithmetic_intensity") and got["units"]
    seen = got["points"]
    for _ in range(10):  # bounded: a cursor that does not move on fails, never hangs
        if not got["next_cursor"]:
            break
        assert offset_in(got["next_cursor"]) == len(seen)
        got = efficiency.roofline(host(), "r", "w", "7", kind=kind, cursor=got["next_cursor"], limit=20)
        assert "glossary" not in got and got["offset"] == len(seen) and got["total"] == len(rows)
        seen += got["points"]
    assert seen == rows


def test_roofline_gives_fifty_points_by_default(route):
    got = efficiency.roofline(host(), "r", "w", "7")
    assert got["kind"] == "all" and got["points"] == POINTS[:50] and offset_in(got["next_cursor"]) == 50


@pytest.mark.parametrize("other", [{"kind": "kernel"}, {"window": "8"}, {"worker": "v"}, {"run": "s"}])
def test_a_roofline_cursor_pages_only_its_own_question(route, other):
    mine = {**WHERE, "kind": "operator"}
    cursor = efficiency.roofline(host(), **mine, limit=5)["next_cursor"]
    assert efficiency.roofline(host(), **mine, cursor=cursor, limit=5)["offset"] == 5
    with pytest.raises(BadParameter, match="pages another question"):
        efficiency.roofline(host(), **{**mine, **other}, cursor=cursor, limit=5)


def test_a_window_being_digested_answers_that_and_reads_nothing(monkeypatch):
    monkeypatch.setattr(roofline_route, "roofline_impl", lambda *a: pytest.fail("read before its digest"))
    waiting = {"status": "digesting"}
    for tool in (efficiency.mfu, efficiency.roofline):
        h = host(waiting)
        assert tool(h, "r", "w", "7") is waiting and h.asked == [("r", "w", "7")]


def not_here(got: dict) -> bool:
    return ({k: v for k, v in got.items() if k != "message"} == NOT_HERE
            and got["message"].startswith("not in this digest: roofline points and MFU come from canning-tb's "
                                          "efficiency analysis (analysis/efficiency)"))


@pytest.mark.parametrize("how", ["no route", "no module", "no section"])
def test_without_the_efficiency_analysis_both_tools_say_it_is_not_in_this_digest(monkeypatch, how):
    if how == "no route":
        monkeypatch.setattr(roofline_route, "roofline_impl", None)
    elif how == "no module":  # an older canning-tb: the import fails
        monkeypatch.setitem(sys.modules, "canning_tb.queries.roofline", None)
    else:  # a digest schema without the roofline section
        monkeypatch.setattr(roofline_route, "roofline_impl", lambda *a: pytest.fail("read without the section"))
        fields = {k: v for k, v in digest_pb2.Digest.DESCRIPTOR.fields_by_name.items() if k != "roofline"}
        monkeypatch.setattr(digest_pb2, "Digest", SimpleNamespace(DESCRIPTOR=SimpleNamespace(fields_by_name=fields)))
    assert not_here(efficiency.mfu(host(), "r", "w", "7"))
    assert not_here(efficiency.roofline(host(), "r", "w", "7", kind="kernel"))
