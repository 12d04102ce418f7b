"""queries/compare.py on digests made by hand (issue 46: fast tests for a mutation run): the windows' heads, the
pairing said, the table paged, searched and sorted under the view's column names, what it refuses, and when a kept
comparison is used again (the windows' identities, the name map file, the matching mode). The rows' figures are
analysis/compare's (tests/analysis/test_analysis_compare.py); here only which rows, in which order. Each expected
order is worked out by hand in the test."""
from collections import OrderedDict
from types import SimpleNamespace

import pytest

from _hand_store import HandStore
import canning_tb.analysis.compare.verdict as verdict
from canning_tb.analysis import digest_pb2 as pb
from canning_tb.queries import compare
from canning_tb.queries.errors import BadParameter, NotFound
from canning_tb.queries.pairing import Pairing

BASE, TARGET = ("r", "w", "1"), ("r", "w", "2")


class CompareStore(HandStore):
    """Windows labelled "L<id>" in format "kineto"; `key` each window's digest identity."""

    def __init__(self, logdir, digests):
        super().__init__(logdir, digests)
        self.key = {}

    def window(self, run, worker, window):
        found = super().window(run, worker, window)
        return SimpleNamespace(**vars(found), label=f"L{window}", format="kineto")

    def digest_key(self, run, window):
        if run != window.run:  # Store's key is the run's and the window's
            raise KeyError(run)
        return self.key.get(window.id, "k0")


def side(rank: int, ops: dict) -> pb.Digest:
    """One step of 1000 ns; host-only operators {name: host self ns}, one call each."""
    d = pb.Digest()
    d.window.rank, d.window.start_ns, d.window.end_ns = rank, 0, 1000
    d.steps.add(number=1, start_ns=0, dur_ns=1000).breakdown.total_ns = 1000
    d.average.total_ns = 1000
    d.average_steps.append(1)
    for name, ns in ops.items():
        d.ops_by_name.add(name=name, calls=1, host_self_ns=ns, host_total_ns=ns)
    return d


@pytest.fixture
def store(tmp_path, monkeypatch):
    """Base: mm 100, relu 40; target: mm 400, add 10. Deltas: mm +300, relu -40 (gone), add +10 (new)."""
    monkeypatch.setattr(compare, "_kept", OrderedDict())  # no comparison kept by another test
    return CompareStore(tmp_path, {BASE: side(3, {"aten::mm": 100, "aten::relu": 40}),
                                   TARGET: side(4, {"aten::mm": 400, "aten::add": 10})})


@pytest.fixture
def calls(monkeypatch):
    """Each comparison made, counted."""
    made, real = [], verdict.compare
    monkeypatch.setattr(verdict, "compare", lambda *a, **k: made.append(a[3]) or real(*a, **k))
    return made


def keys(body):
    return [r["key"] for r in body["rows"]]


def test_a_named_baseline_its_heads_and_the_default_order(store, calls):
    body = compare.compare_impl(store, BASE, TARGET)
    assert body["base_window"] == {"run": "r", "worker": "w", "window": "1", "label": "L1", "format": "kineto",
                                   "rank": 3}
    assert body["target_window"]["window"] == "2" and body["target_window"]["rank"] == 4
    assert body["pairing"] == {"rule": "named", "text": "the baseline named", "default": False}
    assert body["name_map"] == {"file": None, "problem": None}
    assert body["tables"] == {"operators": 3, "kernels": 0, "families": 0}
    assert not {"operators", "kernels", "kernel_families"} & set(body)
    # |delta| largest first: mm 300, relu 40, add 10
    assert keys(body) == ["aten::mm", "aten::relu", "aten::add"]
    assert (body["table"], body["all_rows"], body["total"], body["sort"], body["limit"]) == ("operators", 3, 3,
                                                                                           "abs_delta", 1000)
    assert calls == ["name"]


def test_pages_searches_and_sorts_under_the_views_names(store, calls):
    page = compare.compare_impl(store, BASE, TARGET, paging={"offset": 1, "limit": 1})
    assert keys(page) == ["aten::relu"] and (page["offset"], page["limit"], page["total"]) == (1, 1, 3)
    assert keys(compare.compare_impl(store, BASE, TARGET, paging={"search": "ADD"})) == ["aten::add"]
    assert keys(compare.compare_impl(store, BASE, TARGET, paging={"sort": "key"})) == ["aten::add", "aten::mm",
                                                                                     "aten::relu"]
    # delta_pct sorts by pct_order: new (add) above every percentage (mm +300 %), gone (relu) below
    by_pct = compare.compare_impl(store, BASE, TARGET, paging={"sort": "delta_pct"})
    assert keys(by_pct) == ["aten::add", "aten::mm", "aten::relu"] and by_pct["sort"] == "delta_pct"
    assert keys(compare.compare_impl(store, BASE, TARGET, paging={"sort": "delta_ns", "order": "asc"})) == [
        "aten::relu", "aten::add", "aten::mm"]  # -40, +10, +300
    assert compare.compare_impl(store, BASE, TARGET, table="kernels")["rows"] == []
    assert calls == ["name"]  # compared once, every page from the kept tables


def test_what_compare_refuses(store):
    for args, said in (({"group_by": "module"}, "group_by must be one of name, shape, stack, not 'module'"),
                       ({"table": "x"}, "table must be one of operators, kernels, families, not 'x'"),
                       ({"paging": {"sort": "zzz"}}, "sort must be one of key, input_shapes, call_stack, status, "
                        "base_calls, target_calls, base_ns, target_ns, delta_ns, abs_delta, delta_pct, not 'zzz'"),
                       ({"paging": {"limit": 0}}, "limit must be from 1 to 1000, not 0")):
        with pytest.raises(BadParameter, match=f"^{said}$"):
            compare.compare_impl(store, BASE, TARGET, **args)
    for base in (("r", "", ""), ("r", "w", ""), ("", "", "1")):
        with pytest.raises(BadParameter, match=r"^name the baseline with base_run, base_worker and base_window, or "
                                               r"none of them \(the default baseline\)$"):
            compare.compare_impl(store, base, TARGET)
    with pytest.raises(NotFound, match=r"^unknown run/worker/window: 'r' / 'w' / '9'$"):
        compare.compare_impl(store, ("r", "w", "9"), TARGET)


def test_without_a_baseline_the_default_pairing(store, monkeypatch):
    asked = []
    monkeypatch.setattr(compare, "window_pairing", lambda s, *t: asked.append((s, t)) or Pairing(
        [BASE, ("r", "w", "7")], [TARGET], "previous window", "the one before"))
    body = compare.compare_impl(store, ("", "", ""), TARGET)
    assert asked == [(store, TARGET)]
    assert body["pairing"] == {"rule": "previous window", "text": "the one before", "default": True}
    assert body["base_window"]["window"] == "1"


def test_a_kept_comparison_and_what_makes_it_new(store, calls, tmp_path):
    compare.compare_impl(store, BASE, TARGET)
    compare.compare_impl(store, BASE, TARGET, table="families")
    assert calls == ["name"]
    compare.compare_impl(store, BASE, TARGET, group_by="shape")
    assert calls == ["name", "shape"]
    store.key["2"] = "k1"  # the target's files changed
    compare.compare_impl(store, BASE, TARGET)
    assert calls == ["name", "shape", "name"]
    store.key["1"] = "k1"  # the base's files changed
    compare.compare_impl(store, BASE, TARGET)
    assert len(calls) == 4
    (tmp_path / "canning_names.json").write_text("{}")  # a name map appears
    body = compare.compare_impl(store, BASE, TARGET)
    assert len(calls) == 5 and body["name_map"] == {"file": "canning_names.json", "problem": None}
    compare.compare_impl(store, BASE, TARGET)
    assert len(calls) == 5


def test_at_most_four_comparisons_are_kept_the_last_used_last(store, calls):
    compare.compare_impl(store, BASE, TARGET)  # A
    for key in ("a", "b", "c"):  # B, C, D
        store.key["2"] = key
        compare.compare_impl(store, BASE, TARGET)
    store.key["2"] = "k0"
    compare.compare_impl(store, BASE, TARGET)  # A again: kept, now the last used
    assert len(calls) == 4
    store.key["2"] = "d"
    compare.compare_impl(store, BASE, TARGET)  # E: B, the least recently used, goes
    store.key["2"] = "k0"
    compare.compare_impl(store, BASE, TARGET)  # A still kept
    assert len(calls) == 5
    store.key["2"] = "a"
    compare.compare_impl(store, BASE, TARGET)  # B: compared again
    assert len(calls) == 6 and len(compare._kept) == 4


def test_another_store_is_compared_apart(store, calls, tmp_path):
    other = CompareStore(tmp_path, {BASE: side(0, {"x": 5}), TARGET: side(0, {"x": 5, "y": 1})})
    assert keys(compare.compare_impl(store, BASE, TARGET))[0] == "aten::mm"
    assert keys(compare.compare_impl(other, BASE, TARGET)) == ["y", "x"]  # |delta| 1, 0
    assert len(calls) == 2


def test_a_window_gone_between_the_digest_and_its_key(store):
    def gone(run, window):
        raise KeyError(window.id)
    store.digest_key = gone
    with pytest.raises(NotFound, match=r"^unknown run/worker/window: 'r' / 'w' / '1'$"):
        compare.compare_impl(store, BASE, TARGET)


def test_the_name_maps_identity(tmp_path):
    assert compare._map_identity(None) == (None,)
    path = str(tmp_path / "canning_names.json")
    assert compare._map_identity(str(tmp_path)) == (path,)
    (tmp_path / "canning_names.json").write_text("{}")
    identity = compare._map_identity(str(tmp_path))
    assert identity[:2] == (path, 2) and len(identity) == 4
    (tmp_path / "canning_names.json").write_text("{ }")
    assert compare._map_identity(str(tmp_path))[1] == 3


def test_compared_and_compared_windows(store, calls, tmp_path):
    (tmp_path / "canning_names.json").write_text("[")
    body = compare.compared_windows(store, BASE, TARGET, threshold_pct=5.0, gate_on="total")
    assert body["base_window"]["label"] == "L1" and body["target_window"]["rank"] == 4
    assert body["name_map"]["file"] == "canning_names.json" and body["name_map"]["problem"]
    assert [r["key"] for r in body["operators"]] == ["aten::mm", "aten::relu", "aten::add"]
    assert (body["gate"]["gate_on"], body["gate"]["threshold_pct"], body["mode"]) == ("total", 5.0, "name")
    by_default = compare.compared_windows(store, BASE, TARGET, threshold_pct=3.0)
    assert (by_default["gate"]["gate_on"], by_default["gate"]["threshold_pct"]) == ("code", 3.0)
    assert compare.compared_windows(store, BASE, TARGET)["gate"] is None
    plain = compare.compared(store, side(0, {}), side(0, {}), group_by="stack")
    assert plain["gate"] is None and plain["mode"] == "stack" and "base_window" not in plain
    assert calls == ["name", "name", "name", "stack"]
    with pytest.raises(BadParameter, match=r"^group_by must be one of name, shape, stack, not 'x'$"):
        compare.compared(store, side(0, {}), side(0, {}), group_by="x")
    with pytest.raises(BadParameter, match=r"^gate_on must be one of code, total, not 'x'$"):
        compare.compared(store, side(0, {}), side(0, {}), gate_on="x")


def test_the_logdirs_name_map_is_used(store, tmp_path):
    # relu renamed to add: base relu 40 and target add 10 are one row, aten::add, delta -30
    (tmp_path / "canning_names.json").write_text('{"operators": {"aten::relu": "aten::add"}}')
    assert keys(compare.compare_impl(store, BASE, TARGET)) == ["aten::mm", "aten::add"]
    body = compare.compared(store, store.digests[BASE], store.digests[TARGET])
    assert [r["key"] for r in body["operators"]] == ["aten::mm", "aten::add"]
    assert body["name_map"] == {"file": "canning_names.json", "problem": None}
