"""Capture on NPU: ps.on_demand() with ProfilerActivity.NPU drives torch_npu's profiler for the steps a
request names, through the same handler (a manifest naming torch_npu's window folder, rank, steps).

torch_npu needs Ascend hardware and CANN: this runs against the FAKE torch_npu of tests/npu_double (written
from torch_npu's source: its profile keeps step_num / current_action and labels steps ProfilerStep#<n>;
its finalize_trace writes the settings it was given into profiler_info.json). Read back with json.
"""
import glob
import json
import os
import time

import pytest

from _capture import manifests, request, status, wait_for, write_request

torch = pytest.importorskip("torch")
from canning import profiling_suite as ps  # noqa: E402
from test_npu import no_double_left, use_double  # noqa: E402,F401  no_double_left: autouse, drops the double

NPU = [ps.ProfilerActivity.CPU, ps.ProfilerActivity.NPU]


@pytest.mark.parametrize("version", ["2.1", "current"])
def test_on_demand_captures_through_torch_npus_profiler(tmp_path, monkeypatch, version):
    use_double(monkeypatch, version, parse_s="0.05")
    run = str(tmp_path / "run")
    net = torch.nn.Linear(8, 4)
    prof = ps.Profile(activities=NPU, schedule=ps.on_demand(poll_s=0.02, heartbeat_s=0.1, min_interval_s=0),
                      on_trace_ready=ps.tensorboard_trace_handler(run, digest=False))
    with prof:
        assert prof.backend == "torch_npu"
        for _ in range(5):
            net(torch.randn(4, 8)).sum()
            prof.step()
        assert not glob.glob(os.path.join(run, "*_ascend_pt"))  # nothing until asked
        asked = request(prof.step_num + 4, steps=2, record_shapes=True, with_stack=True, activities=["NPU", "CUDA"])
        write_request(run, json.dumps(asked).encode())
        wait_for(lambda: (s := status(run)) and s["request"] == asked["id"], "the request read")
        for _ in range(12):
            net(torch.randn(4, 8)).sum()
            prof.step()
        state = wait_for(lambda: (s := status(run)) and s["state"] in ("written", "failed") and s, "the window")
    assert state["state"] == "written" and state["backend"] == "torch_npu", state
    (man,) = manifests(run)
    assert man["kind"] == "ascend_pt" and man["steps"] == [asked["start_step"], asked["start_step"] + 1]
    assert man["settings"]["activities"] == ["NPU"]  # CUDA is no activity of torch_npu's: dropped
    folder = os.path.join(run, man["files"][0]["name"])
    (info_name,) = [n for n in os.listdir(folder) if n.startswith("profiler_info")]
    with open(os.path.join(folder, info_name), encoding="utf-8") as f:
        common = json.load(f)["config"]["common_config"]
    assert common["record_shapes"] is True and common["with_stack"] is True and common["profile_memory"] is False
    assert state["windows"] == [man["manifest"]]


def test_a_job_on_torch_npus_own_dynamic_profile_is_asked_through_its_config(tmp_path, monkeypatch, capsys):
    """msMonitor's file path: the job calls torch_npu's dp.init(folder) / dp.step(); the CLI writes the config in
    torch_npu's format (the double's dynamic_profile.py is written from torch_npu's: whole-second mtimes, start
    when its step count equals start_step) and reads the state back from torch_npu's own logs."""
    from canning_tb.cli.main import main
    from canning_tb.store import Store
    use_double(monkeypatch, "current", parse_s="0.05")
    monkeypatch.setenv("NPU_DOUBLE_DP_POLL_S", "0.01")
    monkeypatch.setenv("RANK", "0")
    logdir = tmp_path / "logdir"
    folder = logdir / "dp"
    folder.mkdir(parents=True)
    config = folder / "profiler_config.json"
    from torch_npu.profiler import dynamic_profile as dp
    template = dict(dp.TEMPLATE, prof_dir=str(folder), analyse=True)  # the user's own edit: windows go here
    config.write_text(json.dumps(template))
    dp.init(str(folder))
    net = torch.nn.Linear(8, 4)

    def steps(n):
        for _ in range(n):
            net(torch.randn(4, 8)).sum()
            dp.step()
    steps(3)
    # torch_npu reads a config whose mtime, in whole seconds, is after the last one it saw
    wait_for(lambda: int(time.time()) > int(os.path.getmtime(config)), "the next second", timeout=30)
    assert main(["capture", "--logdir", str(logdir), "--steps", "2", "--start-step", "8", "--record-shapes"]) == 0
    written = json.loads(config.read_text())
    assert (written["active"], written["start_step"], written["record_shapes"]) == (2, 8, True)
    assert written["is_rank"] is False
    assert written["prof_dir"] == str(folder) and written["experimental_config"] == template["experimental_config"]
    capsys.readouterr()
    steps(12)
    assert main(["capture", "--logdir", str(logdir), "--status", "--format", "json"]) == 0
    out = capsys.readouterr().out
    state = json.loads(out[out.index("{\n"):])  # after what the double prints, as torch_npu does, on stdout
    assert state["kind"] == "torch_npu_dynamic_profile" and state["request"]["state"] == "written", state
    assert state["request"]["ranks"] == [{"rank": 0, "state": "written", "message": "torch_npu recorded steps 8-9",
                                          "windows": [], "step": None}]
    (run,) = Store(str(logdir)).runs()
    (worker,) = Store(str(logdir)).workers(run)
    (win,) = Store(str(logdir)).windows(run, worker.name)
    assert (run, win.format, win.status) == ("dp", "ascend", "ready")


def test_a_trigger_captures_the_slow_steps_through_torch_npus_profiler(tmp_path, monkeypatch):
    """ps.on_demand(trigger=...) with ProfilerActivity.NPU: the job's own slow step asks for the capture, and the
    steps after it are recorded by torch_npu's profiler (the double, as above), the manifest naming the reason."""
    use_double(monkeypatch, "current", parse_s="0.05")
    run = str(tmp_path / "run")
    net = torch.nn.Linear(8, 4)
    # a slow step (0.3 s) fires it; the capture starts the lead after it, counted at that step's pace (two polls
    # and 2 s of storage slack: about 7 steps), so the job steps on until it is written
    trigger = ps.when(lambda step_s, step: step_s > 0.2, steps=2, cooldown_steps=0)
    prof = ps.Profile(activities=NPU, schedule=ps.on_demand(poll_s=0.02, heartbeat_s=0.1, min_interval_s=0,
                                                              trigger=trigger),
                      on_trace_ready=ps.tensorboard_trace_handler(run, digest=False))
    with prof:
        assert prof.backend == "torch_npu"
        for i in range(8):
            net(torch.randn(4, 8)).sum()
            if i == 6:
                time.sleep(0.3)
            prof.step()
        wait_for(lambda: (s := status(run)) and s.get("request"), "the trigger's request read")
        for _ in range(30):
            net(torch.randn(4, 8)).sum()
            prof.step()
            time.sleep(0.01)
        state = wait_for(lambda: (s := status(run)) and s["state"] in ("written", "failed") and s, "the window")
    assert state["state"] == "written" and state["backend"] == "torch_npu", state
    (man,) = manifests(run)
    assert man["kind"] == "ascend_pt" and len(man["steps"]) == 2 and man["steps"][0] > 6
    assert "said so" in json.dumps(man)  # the reason the trigger gave ("the job's rule ... said so"), with the window
