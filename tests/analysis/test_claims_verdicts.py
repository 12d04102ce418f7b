"""The claims' verdicts (analysis/rules/claims.py) where mutation showed them unread (issue 46): a gain without an
interval set capped at the step, the simulated gain taken or the finding made an observation, the significance of a
finding with no time gain, one step's sentence, the noise floor's edges, the time two findings share at exactly
SHARED_MIN_SHARE. Hand-made step series; every figure is worked out in the test (docs/rules.md "Significance":
MIN_GAIN_SHARE 5 %, SHARED_MIN_SHARE 1 %, NOISE_MIN_STEPS 2)."""
import numpy as np
import pytest

from canning_tb.analysis.graph.simulate import Simulated
from canning_tb.analysis.rules.claims import kept_steps, noise_ns, settle, significant, simulator
from canning_tb.analysis.rules.finding import Finding
from test_claims_series import digest  # steps made by hand

MS = 1_000_000


def finding(rule="f", spans_ms=None, **kw):
    """A warning; `spans_ms`: the (start, end) ranges it removes, ms."""
    removes = None
    if spans_ms is not None:
        removes = (np.array([round(s * MS) for s, _ in spans_ms], np.int64),
                   np.array([round(e * MS) for _, e in spans_ms], np.int64))
    return Finding(**{"rule": rule, "category": "time", "severity": "warning", "title": rule, "seen": "Seen.",
                      "removes": removes, **kw})


def test_the_kept_steps_are_the_averaged_ones_or_all():
    """Steps at 0, 20, 40 ms of 10, 11, 12 ms; the average keeping 1 and 3, or (none listed) all three."""
    starts, ends = kept_steps(digest([10, 11, 12], skipped=(2,)))
    assert (starts.tolist(), ends.tolist()) == ([0, 40 * MS], [10 * MS, 52 * MS])
    d = digest([10, 11, 12])
    del d.average_steps[:]
    assert kept_steps(d)[1].tolist() == [10 * MS, 31 * MS, 52 * MS]


def test_a_gain_without_an_interval_set_is_capped_at_the_step():
    """Four equal 10 ms steps: a 12 ms gain is cut to the 10 ms step; 9 ms stays; no step known (0): it stays."""
    d = digest([10, 10, 10, 10])
    assert [f.gain_ns for f in settle([finding(gain_ns=12 * MS), finding("g", gain_ns=9 * MS)], d, 10 * MS)] == [
        10 * MS, 9 * MS]
    (kept,) = settle([finding(gain_ns=12 * MS)], d, 0)
    assert kept.gain_ns == 12 * MS


def test_a_gain_without_an_interval_set_has_the_steps_own_noise():
    """Steps of 10, 14, 10, 14, 12 ms: median 12, deviations 2, 2, 2, 2, 0 (MAD 2 ms); 1.533 x 1.4826 x 2 ms / sqrt 5
    = 2.0329 ms; a 3 ms gain above it stays a warning, 2 ms within it becomes an info."""
    d = digest([10, 14, 10, 14, 12])
    noise = round(1.533 * 1.4826 * 2 * MS / 5 ** 0.5)
    above, within = settle([finding("a", gain_ns=3 * MS), finding("w", gain_ns=2 * MS)], d, 12 * MS)
    assert (above.noise_ns, above.severity, within.noise_ns, within.severity) == (noise, "warning", noise, "info")


def test_an_interval_set_longer_than_the_step_is_cut_to_it():
    """One kept step of 10 ms at 0; the finding's time over it all: 10 ms, but the mean step said is 8 ms: 8 ms."""
    (kept,) = settle([finding(spans_ms=[(0, 10)])], digest([10]), 8 * MS)
    assert (kept.removes_ns, kept.gain_ns) == (8 * MS, 8 * MS)


class FakeSim:
    """simulate(f, interval_set): the recorded calls, and the answer given."""

    def __init__(self, answer):
        self.answer, self.calls = answer, []

    def __call__(self, f, interval_set):
        self.calls.append((f.rule, None if interval_set is None else [x.tolist() for x in interval_set]))
        return self.answer


def test_a_replayed_gain_replaces_the_measured_one_capped_at_the_step():
    """Two 10 ms steps; the finding removes [0, 2) ms of each (2 ms a step); the replay says 12 ms (cut to the 10 ms
    step), from 1 to 3 ms, with its words; the gain is then an estimate, not a bound."""
    sim = FakeSim(Simulated(gain_ns=12 * MS, low_ns=MS, high_ns=3 * MS, steps=2, what="the calls removed"))
    (kept,) = settle([finding(spans_ms=[(0, 2), (20, 22)])], digest([10, 10]), 10 * MS, simulate=sim)
    assert sim.calls == [("f", [[0, 20 * MS], [2 * MS, 22 * MS]])]
    assert (kept.gain_ns, kept.gain_low_ns, kept.gain_high_ns, kept.edit, kept.gain_is_bound) == (
        10 * MS, MS, 3 * MS, "the calls removed", False)
    assert (kept.removes_ns, kept.observation) == (2 * MS, False)


def test_a_change_the_graph_cannot_replay_is_an_observation_with_its_time_kept():
    """The replay gives None: the 2 ms a step becomes the time the finding is about (at_most_ns), its gain -1, its
    edit dropped; still above the 1 ms floor (5 % of 20 ms), so it is kept."""
    sim = FakeSim(None)
    (kept,) = settle([finding(spans_ms=[(0, 2), (40, 42)], edit="x")], digest([20, 20], gap_ms=40), 20 * MS,
                     simulate=sim)
    assert (kept.observation, kept.edit, kept.at_most_ns, kept.gain_ns) == (True, "", 2 * MS, -1)


def test_a_finding_with_no_gain_is_not_replayed_and_keeps_its_time():
    """A gain of -1 with 3 ms a step it is about: no replay asked; an observation about 3 ms (above the 0.5 ms floor
    of a 10 ms step); one that needs data is neither replayed nor changed."""
    sim = FakeSim(Simulated(gain_ns=MS, low_ns=MS, high_ns=MS, steps=2, what="w"))
    d = digest([10, 10])
    (kept,) = settle([finding(gain_ns=-1, at_most_ns=3 * MS)], d, 10 * MS, simulate=sim)
    assert sim.calls == [] and (kept.observation, kept.at_most_ns, kept.gain_ns) == (True, 3 * MS, -1)
    (needs,) = settle([finding(needs="shapes", gain_ns=-1)], d, 10 * MS, simulate=sim)
    assert sim.calls == [] and (needs.observation, needs.gain_ns, needs.severity) == (False, -1, "warning")


def test_a_measured_gain_of_zero_is_still_replayed():
    """0 ns measured (no interval set), the replay says 2 ms of a 10 ms step: the 2 ms stand."""
    sim = FakeSim(Simulated(gain_ns=2 * MS, low_ns=2 * MS, high_ns=2 * MS, steps=2, what="w"))
    (kept,) = settle([finding(gain_ns=0)], digest([10, 10]), 10 * MS, simulate=sim)
    assert (kept.gain_ns, kept.observation) == (2 * MS, False)


def test_the_time_removed_per_step_is_whole_ns():
    """1 ns of step 1 and 2 ns of step 2: 3 ns over two steps, 1 ns a step (not 1.5); under the floor, but settled."""
    f = finding(spans_ms=[(0, 1e-6), (20, 20 + 2e-6)])
    assert settle([f], digest([10, 10]), 10 * MS) == []
    assert f.removes_ns == 1 and type(f.removes_ns) is int


def test_without_a_graph_there_is_no_simulator():
    assert simulator(None) is None


@pytest.mark.parametrize("at_most,floor,kept", [(-1, 500, True), (500, 500, True), (499, 500, False), (0, 500, False)])
def test_a_finding_with_no_gain_is_judged_by_the_time_it_is_about(at_most, floor, kept):
    """No time known (-1): judged by its threshold alone, kept; 500 ns against a 500 ns floor kept, 499 and 0 not."""
    assert significant(finding(gain_ns=-1, at_most_ns=at_most, floor_ns=floor)) is kept


def test_a_gain_at_the_floor_is_kept_and_one_under_it_is_not():
    assert significant(finding(gain_ns=500, floor_ns=500, noise_ns=0, steps=2))
    assert not significant(finding(gain_ns=499, floor_ns=500, noise_ns=0, steps=2))


def test_one_step_says_its_variation_is_unknown():
    f = finding(gain_ns=MS, floor_ns=0, noise_ns=-1, steps=1)
    assert significant(f) and f.severity == "warning"
    assert f.seen == ("Seen. One step in the window: its step-to-step variation is unknown, so this cannot be told "
                      "from noise; profile more steps (schedule active=3 or more) to confirm it.")
    two = finding(gain_ns=MS, floor_ns=0, noise_ns=-1, steps=2)  # no noise known, yet two steps: no sentence
    assert significant(two) and two.seen == "Seen."


@pytest.mark.parametrize("gain,noise,severity", [(MS, MS, "info"), (MS + 1, MS, "warning"), (0, 0, "info"),
                                                 (1, 0, "warning")])
def test_a_gain_within_the_noise_floor_is_an_info_that_says_so(gain, noise, severity):
    """A gain equal to the noise is within it (0 ns against 0 ns too); 1 ns more is above it."""
    f = finding(gain_ns=gain, floor_ns=0, noise_ns=noise, steps=3)
    assert significant(f) and f.severity == severity
    if severity == "info":
        assert f.seen == (f"Seen. The rest of the step varies from step to step by more than this over the 3 steps "
                          f"(noise floor {noise / 1e6:.3f} ms): profile more steps to confirm it.")
    else:
        assert f.seen == "Seen."


def test_three_steps_already_take_the_robust_deviation():
    """10, 10, 16 ms: median 10, deviations 0, 0, 6: MAD 0, so no noise (the sample sd, 3.46 ms, would give some)."""
    assert noise_ns([10 * MS, 10 * MS, 16 * MS], robust=True) == 0


def test_the_noise_floor_is_written_in_ms_to_the_microsecond():
    """2,000,501 ns is 2.001 ms (2.0005 rounds up)."""
    f = finding(gain_ns=MS, floor_ns=0, noise_ns=2_000_501, steps=3)
    assert significant(f) and "(noise floor 2.001 ms)" in f.seen


def test_a_critical_finding_within_the_noise_stays_critical():
    f = finding(gain_ns=MS, floor_ns=0, noise_ns=2 * MS, steps=3, severity="critical")
    assert significant(f) and f.severity == "critical" and "noise floor 2.000 ms" in f.seen


def test_time_shared_is_named_only_above_one_percent_of_the_step():
    """Four 10 ms steps (1 % = 0.1 ms); a removes [0, 3) ms of each, b [2.9, 5), c [2, 4.9): a and b share 0.1 ms a
    step (exactly 1 %: not named), a and c 1 ms, b and c 2 ms."""
    steps = [0, 20, 40, 60]
    a = finding("a", [(s, s + 3) for s in steps])
    b = finding("b", [(s + 2.9, s + 5) for s in steps])
    c = finding("c", [(s + 2, s + 4.9) for s in steps])
    kept = {f.rule: f for f in settle([a, b, c], digest([10, 10, 10, 10]), 10 * MS)}
    assert kept["a"].shared == [("c", "c", MS)]
    assert kept["b"].shared == [("c", "c", 2 * MS)]
    assert kept["c"].shared == [("a", "a", MS), ("b", "b", 2 * MS)]


class FakeGraph:
    """What simulator() reads of a WindowGraph: a graph with a length, its table, spans and kept steps."""
    graph, table, spans, kept = [1], "table", ["span"], "kept"  # a graph of one node is a graph


@pytest.fixture
def edits(monkeypatch):
    """The graph's edits and its replay recorded: each edit returns (its name, its arguments); gain returns the edit
    with what it was given."""
    from canning_tb.analysis.graph import simulate as sim
    for name in ("overlap_edit", "fuse_edit", "shrink_edit", "scale_edit", "interval_edit"):
        monkeypatch.setattr(sim, name, lambda *a, _n=name: (_n, a))
    monkeypatch.setattr(sim, "gain", lambda g, spans, edit, kept: (g, spans, edit, kept))


def replay(f, interval_set=None):
    g, spans, edit, kept = simulator(FakeGraph())(f, interval_set)
    assert (g, spans, kept) == (FakeGraph.graph, FakeGraph.spans, "kept")
    return edit


def arrays(edit):
    """An edit's arguments with numpy arrays as (dtype, list), to compare by hand."""
    name, args = edit
    return name, [(str(a.dtype), a.tolist()) if isinstance(a, np.ndarray) else a for a in args]


def test_the_replay_takes_the_findings_own_change_first(edits):
    """Overlap before a fusion before a shrink before a scale before the time removed; each edit gets the graph, the
    finding's own words or its default words."""
    g = FakeGraph.graph
    both = finding(overlap=True, fuse=("cuts", "rescale"), scale=([1], 0.5))
    assert replay(both) == ("overlap_edit", (g, "table", ["span"], "the collectives started as the backward begins"))
    assert replay(finding(overlap=True, edit="own")) == ("overlap_edit", (g, "table", ["span"], "own"))
    assert replay(finding(fuse=("cuts", "rescale"), shrink=("h", 0.5, [1], 0.25))) == (
        "fuse_edit", (g, "cuts", "the operators fused", "rescale"))
    assert replay(finding(fuse=("cuts", "rescale"), edit="own"))[1][2] == "own"
    assert arrays(replay(finding(shrink=("host", 0.5, [3, 4], 0.25), scale=([1], 0.5)))) == (
        "shrink_edit", [g, "host", 0.5, ("int64", [3, 4]), 0.25, "the work shrunk"])
    assert replay(finding(shrink=("host", 0.5, [3], 0.25), edit="own"))[1][-1] == "own"
    assert arrays(replay(finding(scale=([5, 6], 1), removes=([0], [1])), ([0], [1]))) == (
        "scale_edit", [g, ("int64", [5, 6]), 1.0, "the work shrunk"])
    assert type(replay(finding(scale=([5], 1)))[1][2]) is float
    assert replay(finding(scale=([5], 0.5), edit="own"))[1][-1] == "own"


def test_the_time_removed_is_replayed_with_its_words(edits):
    g, iset = FakeGraph.graph, ([0], [5])
    assert replay(finding(removes_what=["waits", 2]), iset) == (
        "interval_edit", (g, iset, ["waits", "2"], "the waits / 2 time taken away"))
    assert replay(finding(), iset) == ("interval_edit", (g, iset, [], "the claimed time taken away"))
    assert replay(finding(removes_what=["waits"], edit="own"), iset)[1][-1] == "own"


def test_nothing_to_replay_is_none(edits):
    assert simulator(FakeGraph())(finding(), None) is None


@pytest.mark.parametrize("graph,spans", [([], ["span"]), ([1], [])])
def test_an_empty_graph_or_no_spans_replays_nothing(graph, spans):
    wg = FakeGraph()
    wg.graph, wg.spans = graph, spans
    assert simulator(wg) is None
