"""The run over one window (analysis/rules/runner.py) with rules made here in place of the registry: what it fills in
on each finding, the shapes a rule may answer in, and the order and floor of what it returns (issue 46: mutation
showed these unread). Times in ns; the window's mean step 10 ms, so the floor is 0.5 ms (MIN_GAIN_SHARE 5 %)."""
import numpy as np
import pytest

from _synthetic import ev, table

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.build import build_digest
from canning_tb.analysis.rules import runner
from canning_tb.analysis.rules.engine import RuleInput
from canning_tb.analysis.rules.finding import Finding
from canning_tb.ingest.table import Kind as K

MS = 1_000_000


def digest() -> pb.Digest:
    """Two equal steps of 10 ms on an A100 (cc 8.0)."""
    d = pb.Digest()
    for n in range(2):
        d.steps.add(number=n + 1, start_ns=n * 20 * MS, dur_ns=10 * MS)
    d.average.total_ns = 10 * MS
    d.window.devices.add(kind="cuda", compute_capability="8.0", name="A100")
    return d


def f(**kw) -> Finding:
    return Finding(**{"rule": "", "category": "", "severity": "warning", "title": "t", "seen": "s.", **kw})


def test_candidates_fill_in_what_a_rule_left_out(monkeypatch):
    """A rule's id, category, the device and the mean step where the finding leaves them empty; its own kept; a rule
    may answer with one finding, a list, an empty list or None."""
    own = f(rule="own", category="mine", device="npu", step_ns=5)
    monkeypatch.setattr(runner, "RULES", {"one": ("time", lambda inp: f(title=inp.digest.window.devices[0].name)),
                                          "many": ("memory", lambda inp: [own, f(title="b")]),
                                          "none": ("x", lambda inp: None), "empty": ("x", lambda inp: [])})
    found = runner.candidates(RuleInput(digest()))
    assert [(x.rule, x.category, x.device, x.step_ns, x.title) for x in found] == [
        ("one", "time", "cuda cc 8.0 A100", 10 * MS, "A100"), ("own", "mine", "npu", 5, "t"),
        ("many", "memory", "cuda cc 8.0 A100", 10 * MS, "b")]


def test_run_rules_ranks_by_gain_and_drops_what_is_under_the_floor(monkeypatch):
    """Gains 1 ms, 3 ms and 0.4 ms of a 10 ms step: 3 ms first, 1 ms next, 0.4 ms under the 0.5 ms floor dropped;
    without events no graph replays them, so they are written as measured."""
    monkeypatch.setattr(runner, "RULES", {"small": ("time", lambda inp: f(gain_ns=MS, title="1")),
                                          "big": ("time", lambda inp: f(gain_ns=3 * MS, title="3")),
                                          "tiny": ("time", lambda inp: f(gain_ns=400_000, title="0.4"))})
    hits = runner.run_rules(RuleInput(digest()))
    assert [(h.rule, h.gain_ns, h.claim.floor_ns, h.device) for h in hits] == [
        ("big", 3 * MS, 500_000, "cuda cc 8.0 A100"), ("small", MS, 500_000, "cuda cc 8.0 A100")]
    assert hits[0].gain == "at most 3.000 ms per step (): up to 1.43x"  # 10 / 7


def test_a_start_up_finding_without_events_keeps_the_others(monkeypatch):
    """Without events (no table to look for steps in) a start-up finding leaves the others as they are: both 1 ms
    gains are kept."""
    monkeypatch.setattr(runner, "RULES", {"startup": ("profiling", lambda inp: f(gain_ns=MS)),
                                          "other": ("time", lambda inp: f(gain_ns=MS))})
    assert sorted(h.rule for h in runner.run_rules(RuleInput(digest()))) == ["other", "startup"]


STARTUP_RULES = {"startup": ("profiling", lambda inp: f(gain_ns=MS)), "timed": ("time", lambda inp: f(gain_ns=MS)),
                 "removing": ("time", lambda inp: f(gain_ns=-1, removes=(np.array([0]), np.array([MS])))),
                 "plain": ("time", lambda inp: f(gain_ns=-1))}
NO_STEP = [ev("cudaGetDeviceCount", K.RUNTIME, 0, MS), ev("aten::add", K.CPU_OP, MS, 4 * MS)]
ONE_STEP = [ev("ProfilerStep#1", K.USER_ANNOTATION, 0, 5 * MS), ev("cudaGetDeviceCount", K.RUNTIME, 0, MS)]


@pytest.mark.parametrize("events,with_startup,kept", [
    # nothing but start-up measured: only the start-up finding and those claiming no time stay
    (NO_STEP, True, ["plain", "startup"]),
    (NO_STEP, False, ["plain", "timed"]),  # no start-up finding: nothing is filtered
    (ONE_STEP, True, ["plain", "startup", "timed"]),  # a step: nothing is filtered
])
def test_a_window_of_nothing_but_start_up_keeps_no_claim_on_training_time(monkeypatch, events, with_startup, kept):
    """Rules made here, run on a real window (events, so its graph replays them): 1 ms gains of startup and timed,
    1 ms removed by removing (the start-up call's own [0, 1) ms, which is no step's time, so it is dropped in any
    window), none by plain. No replay states these changes, so what is kept is an observation without a gain."""
    rules = {k: v for k, v in STARTUP_RULES.items() if with_startup or k != "startup"}
    monkeypatch.setattr(runner, "RULES", rules)
    hits = build_digest(table(events)).rule_hits
    assert sorted(h.rule for h in hits) == kept
    assert all(h.observation and h.gain_ns == -1 for h in hits)
