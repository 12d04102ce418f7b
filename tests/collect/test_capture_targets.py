"""capture/targets.py, the viewer's side of a capture (issue 46: the survivors of a mutation run over it): which
folders of a logdir a capture can be asked of (laid out here by hand: status files, torch_npu's config, the
folders a scan skips, its bound), what the ranks' statuses say about the job (worked out by hand), and a request
written and read back with json."""
import json

import pytest

from test_capture_request_edges import NOW, S, status

from canning_tb.capture import npu as capture_npu
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
    assert ct.job_summary([status(0, age_s=1.234)], NOW)["last_heartbeat_s"] == 1.2  # tenths of a second
    # a job whose ranks have not stepped twice yet: its rate is unknown, not 0 steps/s
    assert ct.job_summary([status(0, rate=None), status(1, rate=None)], NOW)["steps_per_s"] is None


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


def test_the_scan_counts_each_folder_once_and_follows_no_link_out(tmp_path, monkeypatch):
    root, outside = tmp_path / "log", tmp_path / "outside"
    for run in (root, root / "a", root / "a" / "b"):  # walked in this order: each holds the next
        status_file(run)
    status_file(outside / "job")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    assert set(ct.targets(str(root))) == {".", "a", "a/b"}
    monkeypatch.setattr(ct, "MAX_FOLDERS", 2)
    assert set(ct.targets(str(root))) == {".", "a"}


def test_without_a_time_given_the_clock_is_read(logdir):
    import time
    put(logdir / "now" / ".canning-capture" / "rank0.status.json",
        {"format": cr.STATUS_FORMAT, **status(), "time_ns": time.time_ns()})  # a heartbeat of this instant
    target = ct.targets(str(logdir))["now"]
    assert ct.ask(target, {"steps": 1}, "cli")["state"] == "waiting"
    assert ct.run_state(target)["request"]["state"] == "waiting"


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
    job = capture_npu.job_summary(str(logdir / "npu"))
    assert ct.summary(target, NOW) == {"kind": DYNAMIC_PROFILE, "job": job, "problems": []}
    assert ct.run_state(target, NOW) == {"kind": DYNAMIC_PROFILE, "job": job, "request": None, "problems": []}
    with pytest.raises(cr.RequestError, match="start step"):
        ct.ask(target, {"steps": 2}, "cli", NOW)
    got = ct.ask(target, {"steps": 2, "start_step": 40}, "cli", NOW)
    assert (got["start_step"], got["end_step"]) == (40, 41)
    with open(logdir / "npu" / "profiler_config.json", encoding="utf-8") as f:
        assert json.load(f)["start_step"] == 40
    assert ct.run_state(target, NOW)["problems"] == []


def test_remote_targets_are_found_by_their_status_files():
    """A logdir on a remote file system (fsspec's in-memory one: the same globbing as S3's, without a server)."""
    try:
        fs, _ = ct.remote_fs.open_fs("memory://capture_targets_log")
    except ct.remote_fs.RemoteError:
        pytest.skip("fsspec (the remote extra) is not installed")
    names = (".canning-capture/rank0.status.json", "jobX/.canning-capture/rank1.status.json",
             "x/y/.canning-capture/rank12.status.json", "jobB/.canning-capture/request.json")
    for name in names:
        fs.pipe(f"/capture_targets_log/{name}", b"{}")
    try:
        assert ct.targets("memory://capture_targets_log") == {
            ".": Target("memory://capture_targets_log", ON_DEMAND),
            "jobX": Target("memory://capture_targets_log/jobX", ON_DEMAND),
            "x/y": Target("memory://capture_targets_log/x/y", ON_DEMAND)}
    finally:
        fs.rm("/capture_targets_log", recursive=True)


class Unreachable:
    """A remote file system whose listing fails (from the second glob on, when `first_ok`)."""

    def __init__(self, first_ok):
        self.calls, self.first_ok = 0, first_ok

    def glob(self, pattern):
        self.calls += 1
        if self.first_ok and self.calls == 1:
            return []
        raise OSError("connection refused")


@pytest.mark.parametrize("first_ok", [False, True])
def test_a_remote_logdir_that_cannot_be_listed_is_named_in_the_error(monkeypatch, first_ok):
    monkeypatch.setattr(ct.remote_fs, "open_fs", lambda url: (Unreachable(first_ok), "bucket/log"))
    with pytest.raises(ct.remote_fs.RemoteError, match="s3://bucket/log"):
        ct.targets("s3://bucket/log")
