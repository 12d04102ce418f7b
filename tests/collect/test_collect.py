"""Collection API on the real torch.profiler (CPU)."""
import json
import subprocess
import sys
import warnings

import pytest

from _raw_kineto import Trace

torch = pytest.importorskip("torch")
from canning import profiling_suite as ps  # noqa: E402
from canning_tb.collect import NpuUnavailableError  # noqa: E402

NET = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def work():
    NET(torch.randn(8, 16)).sum().backward()


def names(prof):
    return {e.key for e in prof.key_averages()}


def test_public_names_only():
    public = {n for n in dir(ps) if not n.startswith("_")}
    assert public == {"Profile", "profile", "start", "stop", "ProfilerActivity", "schedule", "on_demand",
                      "when_slow", "when_every", "when", "tensorboard_trace_handler"}
    assert {a.name for a in ps.ProfilerActivity} == {"CPU", "CUDA", "NPU"}


def test_import_does_not_pull_torch():
    code = ("import sys, canning, canning_tb.handler, canning_tb.collect\n"
            "from canning import profiling_suite\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_context_manager_and_table():
    with ps.Profile(activities=[ps.ProfilerActivity.CPU], record_shapes=True) as prof:
        work()
    assert "aten::addmm" in names(prof)
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)
    assert "aten::addmm" in table and "Self CPU" in table
    assert len(prof.events()) > 0


def test_decorator_profiles_each_call():
    @ps.profile(activities=[ps.ProfilerActivity.CPU])
    def fwd():
        return NET(torch.randn(2, 16)).sum()

    fwd()
    first = fwd.profile.profiler
    assert "aten::addmm" in names(fwd.profile)
    fwd()
    assert fwd.profile.profiler is not first  # a fresh collection per call

    @ps.profile
    def bare():
        work()
    bare()
    assert "aten::addmm" in names(bare)


def test_module_start_stop_and_repeated_collections(tmp_path):
    prof = ps.start(activities=[ps.ProfilerActivity.CPU])
    work()
    assert ps.stop() is prof
    assert "aten::addmm" in names(prof)
    # start again: only the new work is in the new collection
    p2 = ps.Profile(activities=[ps.ProfilerActivity.CPU])
    p2.start()
    torch.ones(3).mul(2)
    assert p2.stop() is p2
    first = names(p2)
    assert "aten::mul" in first and "aten::addmm" not in first
    p2.start()
    work()
    second = names(p2.stop())
    assert "aten::addmm" in second and "aten::mul" not in second
    path = tmp_path / "t.json"
    p2.export_chrome_trace(str(path))
    assert any(e.get("name") == "aten::addmm" for e in json.loads(path.read_text())["traceEvents"])


def test_keyword_forwarding_and_unknown_keyword():
    prof = ps.Profile(activities=[ps.ProfilerActivity.CPU], record_shapes=True, profile_memory=True,
                      with_stack=True, with_flops=True, acc_events=True)
    with prof:
        work()
    inner = prof.profiler
    assert (inner.record_shapes, inner.profile_memory, inner.with_stack, inner.with_flops, inner.acc_events) == \
        (True, True, True, True, True)
    assert prof.settings["record_shapes"] and prof.settings["activities"] == ["CPU"]
    with pytest.warns(RuntimeWarning, match="no_such_option"):
        ps.Profile(activities=[ps.ProfilerActivity.CPU], no_such_option=1)


def test_schedule_matches_torch():
    for kw in [dict(wait=1, warmup=1, active=2, repeat=2), dict(wait=2, warmup=1, active=3, skip_first=3),
               dict(wait=3, warmup=1, active=1, repeat=1, skip_first=1, skip_first_wait=1)]:
        ours, theirs = ps.schedule(**kw), torch.profiler.schedule(**kw)
        assert [ours(s) for s in range(30)] == [theirs(s).name for s in range(30)], kw


def test_schedule_steps_and_step_num():
    seen = []
    with ps.Profile(activities=[ps.ProfilerActivity.CPU], schedule=ps.schedule(wait=1, warmup=1, active=2, repeat=1),
                    on_trace_ready=lambda p: seen.append((p.step_num, names(p)))) as prof:
        for _ in range(6):
            work()
            prof.step()
    assert prof.step_num == 6
    assert len(seen) == 1 and seen[0][0] == 4 and "ProfilerStep*" in seen[0][1]


def test_npu_without_torch_npu_says_what_to_install():
    with pytest.raises(NpuUnavailableError) as err:
        ps.Profile(activities=[ps.ProfilerActivity.CPU, ps.ProfilerActivity.NPU])
    msg = str(err.value)
    assert "torch_npu" in msg and "CANN" in msg and "set_env.sh" in msg
    with pytest.warns(RuntimeWarning, match="CPU only"):
        prof = ps.Profile(activities=[ps.ProfilerActivity.NPU], start_on_cpu=True)
    assert prof.backend == "torch" and prof.activities == [ps.ProfilerActivity.CPU]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the fallback when CUDA is absent")
def test_cuda_without_cuda_warns_and_profiles_cpu():
    with pytest.warns(RuntimeWarning, match="CUDA"):
        prof = ps.Profile(activities=[ps.ProfilerActivity.CPU, ps.ProfilerActivity.CUDA])
    with prof:
        work()
    assert prof.activities == [ps.ProfilerActivity.CPU] and "aten::addmm" in names(prof)


def test_torch_activity_enum_accepted():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prof = ps.Profile(activities=[torch.profiler.ProfilerActivity.CPU])
    assert prof.activities == [ps.ProfilerActivity.CPU]


def test_summaries_read_the_real_trace(tmp_path):
    """op_summary() runs the project's own reader and analysis on the collection just made: its calls
    and totals per operator agree with a plain json reading of the same collection's Chrome trace."""
    with ps.Profile(activities=[ps.ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as prof:
        for _ in range(3):
            work()
    rows = {r[0]: r for r in prof.op_summary().rows}  # first: it saves the trace, which torch does once
    path = tmp_path / "t.json"
    prof.export_chrome_trace(str(path))  # so this one copies that file
    # a plain reading: nested per thread, a redispatched call (aten::sum inside aten::sum) counted in
    # its parent as key_averages() counts it (tests/_raw_kineto.py)
    truth = Trace(path).op_rows()
    calls = {name: row["calls"] for name, row in truth.items()}
    assert {n: r[1] for n, r in rows.items() if n in calls} == calls and calls["aten::addmm"] == 6  # 2 Linear x 3 calls
    for name in ("aten::addmm", "aten::linear", "aten::relu"):
        assert rows[name][2] == pytest.approx(truth[name]["host_total"] / 1e6, abs=0.002), name
    assert prof.memory_summary().rows and str(prof.optimization_suggestions())
    assert prof.communication_summary().rows == []  # no collective in this collection
