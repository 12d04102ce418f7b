"""capture/targets.py, the viewer's side of a capture (issue 46: the survivors of a mutation run over it): which
folders of a logdir a capture can be asked of (laid out here by hand: status files, torch_npu's config, the
folders a scan skips, its bound), what the ranks' statuses say about the job (worked out by hand), and a request
written and read back with json."""
import json

import pytest

from test_capture_request_edges import NOW, S, status

from canning_tb.capture import request as cr
from canning_tb.capture import targets as ct
from canning_tb.capture.targets import DYNAMIC_PROFILE, ON_DEMAND, Target

NPU_CONFIG = {"activities": ["CPU", "NPU"], "prof_dir": "./", "active": 1, "start_step": 0}


def put(path, data=b"{}"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())


def status_file(run, rank=0, **fields):
    put(run / ".canning-capture" / f"rank{rank}.status.json", {"format": cr.STATUS_FORMAT, **status(rank, **fields)})


def test_the_job_summary_of_live_and_dead_ranks():
    live0 = status(0, step=100, rate=10.0, max_steps=20, age_s=1.0)
    live1 = status(1, step=120, rate=None, max_steps=30, age_s=0.3)  # just started: rate unknown
    dead2 = status(2, step=500, rate=99.0, max_steps=5, age_s=60.0, world=4)  # stopped: its numbers do not count
    old1 = status(1, step=1, age_s=0.5)
    got = ct.job_summary([live0, old1, live1, dead2], NOW)
    assert got == {"live_ranks": [0, 1], "world_size": 4, "step": 120, "steps_per_s": 10.0, "backend": "gloo",
                   "max_steps": 20, "last_heartbeat_s": 0.3,
                   "ranks": [{"rank": 0, "host": "h", "pid": 1, "step": 100, "state": "idle", "live": True},
                             {"rank": 1, "host": "h", "pid": 1, "step": 120, "state": "idle", "live": True},
                             {"rank": 2, "host": "h", "pid": 1, "step": 500, "state": "idle", "live": False}]}
    assert ct.job_summary([], NOW) == {"live_ranks": [], "world_size": 0, "step": None, "steps_per_s": None,
                                       "backend": None, "max_steps": 50, "last_heartbeat_s": None, "ranks": []}
    only_dead = ct.job_summary([dead2], NOW)
    assert (only_dead["step"], only_dead["steps_per_s"], only_dead["max_steps"], only_dead["last_heartbeat_s"]) == (
        None, None, 50, 60.0)
    ahead = ct.job_summary([{**status(0), "time_ns": NOW + 5 * S}], NOW)  # a clock ahead of ours: 0, not negative
    assert ahead["last_heartbeat_s"] == 0.0


@pytest.fixture
def logdir(tmp_path):
    root = tmp_path / "log"
    status_file(root)  # the logdir itself watches
    status_file(root / "jobA", rank=3)
    put(root / "jobA" / "profiler_config.json", NPU_CONFIG)  # both: the status wins
    put(root / "jobB" / ".canning-capture" / "request.json")  # no status: a request alone is no job
    put(root / "jobB" / ".canning-capture" / "rank0.status.json.tmp")
    put(root / "npu" / "profiler_config.json", NPU_CONFIG)
    put(root / "npu2" / "profiler_config.json", {"activities": []})  # not torch_npu's keys
    status_file(root / "a" / "b")
    for skipped in ("node_modules", "__pycache__", "ASCEND_PROFILER_OUTPUT", "FRAMEWORK", ".hidden", "r0_ascend_pt",
                    "PROF_000001"):
        status_file(root / "a" / skipped / "job")
    return root


def test_targets_are_the_folders_whose_job_watches(logdir, tmp_path):
    assert ct.targets(str(logdir)) == {".": Target(str(logdir), ON_DEMAND),
                                       "jobA": Target(str(logdir / "jobA"), ON_DEMAND),
                                       "npu": Target(str(logdir / "npu"), DYNAMIC_PROFILE),
                                       "a/b": Target(str(logdir / "a" / "b"), ON_DEMAND)}
    assert ct.targets(str(tmp_path / "nowhere")) == {}


def test_a_scan_looks_at_max_folders_at_most(logdir, monkeypatch):
    monkeypatch.setattr(ct, "MAX_FOLDERS", 1)
    assert list(ct.targets(str(logdir))) == ["."]  # the logdir itself, and no folder below it


def test_the_state_of_a_run_and_a_request_written_as_the_format_says(logdir):
    target = ct.targets(str(logdir))["a/b"]
    assert ct.run_state(target, NOW) == {"kind": ON_DEMAND, "job": ct.job_summary([status(0)], NOW), "request": None,
                                         "problems": []}
    assert ct.summary(target, NOW) == {"kind": ON_DEMAND, "job": ct.job_summary([status(0)], NOW), "problems": []}
    asked = ct.ask(target, {"steps": 2}, "cli", NOW)
    with open(logdir / "a" / "b" / ".canning-capture" / "request.json", encoding="utf-8") as f:
        written = json.load(f)
    assert (written["by"], written["steps"], written["start_step"], written["seen_step"]) == ("cli", 2, 130, 100)
    assert asked == cr.request_state(written, [status(0)], NOW) and asked["state"] == "waiting"
    assert ct.run_state(target, NOW)["request"] == asked
    with pytest.raises(ct.CaptureBusy, match="a capture is in progress"):
        ct.ask(target, {"steps": 2}, "cli", NOW)
    put(logdir / "a" / "b" / ".canning-capture" / "request.json", b"not json")
    broken = ct.run_state(target, NOW)
    assert broken["request"] is None and broken["problems"][0].startswith(".canning-capture/request.json: ")
    assert ct.ask(target, {"steps": 1}, "tensorboard", NOW)["state"] == "waiting"  # an unusable file is replaced
    put(logdir / "a" / "b" / ".canning-capture" / "rank1.status.json", b"[]")
    assert ct.summary(target, NOW)["problems"] == [".canning-capture/rank1.status.json: not a capture status"]


def test_a_torch_npu_folder_is_asked_with_its_own_start_step(logdir):
    target = ct.targets(str(logdir))["npu"]
    assert ct.summary(target, NOW)["kind"] == DYNAMIC_PROFILE and ct.run_state(target, NOW)["request"] is None
    with pytest.raises(cr.RequestError, match="start step"):
        ct.ask(target, {"steps": 2}, "cli", NOW)
    got = ct.ask(target, {"steps": 2, "start_step": 40}, "cli", NOW)
    assert (got["start_step"], got["end_step"]) == (40, 41)
    with open(logdir / "npu" / "profiler_config.json", encoding="utf-8") as f:
        assert json.load(f)["start_step"] == 40
    assert ct.run_state(target, NOW)["problems"] == []


def test_remote_targets_are_found_by_their_status_files():
    """A logdir on a remote file system (fsspec's in-memory one: the same globbing as S3's, without a server)."""
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    names = (".canning-capture/rank0.status.json", "jobA/.canning-capture/rank1.status.json",
             "x/y/.canning-capture/rank12.status.json", "jobB/.canning-capture/request.json")
    for name in names:
        fs.pipe(f"/capture_targets_log/{name}", b"{}")
    try:
        assert ct.targets("memory://capture_targets_log") == {
            ".": Target("memory://capture_targets_log", ON_DEMAND),
            "jobA": Target("memory://capture_targets_log/jobA", ON_DEMAND),
            "x/y": Target("memory://capture_targets_log/x/y", ON_DEMAND)}
    finally:
        fs.rm("/capture_targets_log", recursive=True)
