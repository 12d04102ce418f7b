"""Every empty summary says why it is empty and what to pass to fill it (real CPU runs)."""
import warnings

import pytest

torch = pytest.importorskip("torch")
from canning import profiling_suite as ps  # noqa: E402
from canning_tb.analysis import report  # noqa: E402

NET = torch.nn.Linear(32, 8)
CPU = [ps.ProfilerActivity.CPU]


def run(steps=3, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ps.Profile(activities=CPU, **kwargs) as prof:
            for _ in range(steps):
                NET(torch.randn(16, 32)).sum().backward()
                prof.step()
    return prof


def test_memory_summary_without_profile_memory_names_the_switch():
    t = run().memory_summary()
    assert t.rows == [] and "profile_memory=True" in str(t)
    filled = run(profile_memory=True).memory_summary()
    assert filled.rows and not any("profile_memory=True" in n for n in filled.notes)


def test_communication_summary_in_one_process_says_there_is_no_collective():
    t = run().communication_summary()
    assert t.rows == []
    assert "world size 1" in str(t) and "torch.distributed" in str(t)


def test_summaries_after_a_schedule_stopped_before_recording():
    prof = run(steps=2, schedule=ps.schedule(wait=2, warmup=1, active=2))
    for t in (prof.op_summary(), prof.memory_summary(), prof.communication_summary(),
              prof.optimization_suggestions()):
        assert t.rows == []
        text = str(t)
        assert "No window recorded" in text and "first recording step is 3" in text and "step 2" in text
    # once the schedule recorded, the summaries are the window's
    done = run(steps=6, schedule=ps.schedule(wait=2, warmup=1, active=2))
    assert done.op_summary().rows and "No window recorded" not in str(done.op_summary())


def test_suggestions_without_findings_say_why():
    digest = run()._digest_of_last()
    assert len(digest.steps) == 3
    del digest.rule_hits[:]
    t = report.suggestions(digest)
    assert t.rows == [] and "no rule's check crossed its threshold over the 3 steps" in str(t)
    digest.step_source = "window"
    del digest.steps[1:]
    assert "one step" in str(report.suggestions(digest))


def test_memory_capacity_is_the_same_on_the_profile_and_in_the_cli(tmp_path):
    """One source per figure: the capacity the profile object reports is the one the CLI reads from the
    window the handler wrote (the process's devices, host memory included)."""
    import glob
    from canning_tb.analysis.build import build_digest
    from canning_tb.ingest.window import read_canning_window
    from canning_tb.util.identity import devices
    prof = run(profile_memory=True, on_trace_ready=ps.tensorboard_trace_handler(str(tmp_path), digest=False))
    (man,) = glob.glob(str(tmp_path / "*.canning.json"))
    own = {m.device: m.capacity_bytes for m in prof._digest_of_last().memory}
    cli = {m.device: m.capacity_bytes for m in build_digest(read_canning_window(man)).memory}
    assert own == cli and own
    host = next(d["memory"] for d in devices() if d["kind"] == "cpu")
    if host:
        assert own.get("CPU") == host
    assert "unknown" not in str(prof.memory_summary()).split("\n")[3]  # the CPU row's capacity is known
