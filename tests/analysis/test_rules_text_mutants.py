"""The findings as text and JSON (analysis/rules/text.py) on RuleHits made by hand: every line written out here,
the order worked out from the ranking docs/rules.md gives (findings by simulated gain, those without one by
severity, observations apart, unjudged last), and the critical path's lines from hand-made StepPaths."""
from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.rules.text import critical_path_text, findings_json, suggestions_text


def hit(rule, severity="warning", gain_ns=0, **kw):
    return pb.RuleHit(rule=rule, severity=severity, title=kw.pop("title", rule.title()), gain_ns=gain_ns, **kw)


def test_no_hit_at_all():
    assert suggestions_text([]) == "Optimization Suggestions:\n  No problem found by the rules."


def test_one_finding_every_line():
    h = hit("sync", "critical", 5_000_000, title="Synchronisation", seen="5 ms of sync", detail="unused",
            why="the host waits", change_torch="drop .item()", change_npu="drop .item() on npu",
            gain="5.000 ms per step (50.0%)")
    h.evidence.add(view="operators", row="aten::item", label="aten::item: 5 calls")
    h.evidence.add(view="timeline", row="aten::item", label="longest call")  # the timeline's rows are not listed
    h.evidence.add(view="kernels", row="k2", label="")  # no label: its row
    h.evidence.add(view="kernels", row="", label="")  # neither: nothing
    assert suggestions_text([h]).split("\n") == [
        "Optimization Suggestions:",
        "1. [critical] Synchronisation. 5 ms of sync",
        "   Why: the host waits",
        "   Consider: drop .item()",
        "   Consider on Ascend (torch_npu): drop .item() on npu",
        "   Estimated gain: 5.000 ms per step (50.0%)",
        "   Evidence: aten::item: 5 calls; k2",
    ]


def test_the_detail_stands_in_for_what_was_seen_and_unjudged_says_what_it_needs():
    """No why / change lines where empty; `needs` replaces the gain line; five rows show the first four."""
    h = hit("memory", "info", detail="the whole paragraph", needs="profile_memory=True", gain="never shown")
    for i in range(5):
        h.evidence.add(view="memory", row=f"r{i}")
    assert suggestions_text([h]).split("\n") == [
        "Optimization Suggestions:",
        "1. [info] Memory. the whole paragraph",
        "   To enable this check: profile_memory=True",
        "   Evidence: r0; r1; r2; r3",
    ]


def test_findings_ranked_then_observations_numbered_apart():
    """Ranked: gain 3 ms before 2 ms; gain 0 ones by severity (critical before warning before info; an unknown
    severity after info); an unjudged finding after every finding; observations after, numbered from 1."""
    hits = [hit("small", "info", 0, gain="g"), hit("two", "warning", 2_000_000, gain="g"),
            hit("obs", "critical", 9_000_000, observation=True, gain="g"), hit("odd", "odd", 0, gain="g"),
            hit("three", "info", 3_000_000, gain="g"), hit("crit", "critical", 0, gain="g"),
            hit("needs", "critical", 8_000_000, needs="x")]
    lines = [ln for ln in suggestions_text(hits).split("\n") if not ln.startswith("   ")]
    assert lines == ["Optimization Suggestions:", "1. [info] Three. ", "2. [warning] Two. ", "3. [critical] Crit. ",
                     "4. [info] Small. ", "5. [odd] Odd. ", "6. [critical] Needs. ",
                     "Observations (no simulated gain):", "1. [critical] Obs. "]


def test_only_observations():
    text = suggestions_text([hit("obs", "info", observation=True, seen="s", gain="none")])
    assert text.split("\n") == [
        "Optimization Suggestions:",
        "  No change the trace's dependency graph can replay was found worth making.",
        "Observations (no simulated gain):",
        "1. [info] Obs. s",
        "   Estimated gain: none",
    ]


def path(number, dur_ns, **by):
    p = pb.StepPath(number=number, dur_ns=dur_ns)
    p.by_category.update(by)
    return p


def test_critical_path_lines():
    """Step 3 of 4 ms: kernel 3 ms (75 %), host 1 ms (25 %), idle 0 left out; largest first. A step of 0 ns
    divides by 1 ns: its 2 ns of python are 200 %."""
    text = critical_path_text([path(3, 4_000_000, host=1_000_000, kernel=3_000_000, idle=0), path(4, 0, python=2)])
    assert text.split("\n") == [
        "Critical path (what held each step, docs/critical_path.md):",
        "  step 3: 4.000 ms: kernel 3.000 ms (75%), host 1.000 ms (25%)",
        "  step 4: 0.000 ms: python 0.000 ms (200%)",
    ]
    assert critical_path_text([]) == ""


def test_critical_path_times_to_the_microsecond():
    """1,234,567,891 ns = 1234.568 ms (÷ 1e6; ÷ 1,000,001 would give 1234.567); 1 ns of sync is shown (0.000 ms,
    0 %): only a category of 0 ns is left out."""
    text = critical_path_text([path(1, 1_234_567_891, kernel=1_234_567_890, sync=1)])
    assert text.split("\n")[1] == "  step 1: 1234.568 ms: kernel 1234.568 ms (100%), sync 0.000 ms (0%)"


def test_critical_path_shows_eight_steps_then_counts_the_rest():
    paths = [path(i, 1_000_000, kernel=1_000_000) for i in range(11)]
    lines = critical_path_text(paths).split("\n")
    assert len(lines) == 1 + 8 + 1 and lines[8].startswith("  step 7: ") and lines[-1] == "  ... 3 more steps"
    assert critical_path_text(paths, limit=11).split("\n")[-1] == "  step 10: 1.000 ms: kernel 1.000 ms (100%)"
    assert critical_path_text(paths[:8]).split("\n")[-1].startswith("  step 7: ")  # exactly eight: no "more"


def test_findings_json_ranked_with_every_field():
    hits = [hit("b", "info", 1, value=0.5), hit("a", "critical", 2, title="A")]
    out = findings_json(hits)
    assert [d["rule"] for d in out] == ["a", "b"]
    assert out[0]["title"] == "A" and out[0]["severity"] == "critical" and out[0]["gain_ns"] == 2
    assert out[1]["value"] == 0.5 and out[1]["observation"] is False
