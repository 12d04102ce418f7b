"""The run over one window (analysis/rules/runner.py) with rules made here in place of the registry: what it fills in
on each finding, the shapes a rule may answer in, and the order and floor of what it returns (issue 46: mutation
showed these unread). Times in ns; the window's mean step 10 ms, so the floor is 0.5 ms (MIN_GAIN_SHARE 5 %)."""
from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.rules import runner
from canning_tb.analysis.rules.engine import RuleInput
from canning_tb.analysis.rules.finding import Finding

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
    monkeypatch.setattr(runner, "RULES", {"one": ("time", lambda inp: f(title="a")),
                                          "many": ("memory", lambda inp: [own, f(title="b")]),
                                          "none": ("x", lambda inp: None), "empty": ("x", lambda inp: [])})
    found = runner.candidates(RuleInput(digest()))
    assert [(x.rule, x.category, x.device, x.step_ns, x.title) for x in found] == [
        ("one", "time", "cuda cc 8.0 A100", 10 * MS, "a"), ("own", "mine", "npu", 5, "t"),
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
