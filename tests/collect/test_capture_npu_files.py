"""capture/npu.py over folders laid out by hand in torch_npu's dynamic_profile formats: its config template
(profiler_config.json with activities, prof_dir, active, start_step), its logs (log/dp_<host>_<pid>_rank_<r>.log with
"Start / Stop Dynamic Profiler at N step.") and our sidecar (issue 46: fast tests for a mutation run over npu.py).
The formats are those torch_npu writes, as tests/npu_double/ writes them too: that stand-in exists only because
torch_npu needs Ascend hardware, and test_capture_routes.py drives it through a real TensorBoard. Expected values are
worked out by hand here; the written files are read back with json."""
import json
import os
import re
import time

import pytest

from canning_tb.capture import npu
from canning_tb.capture import request as cr

NOW = 1_700_000_000_000_000_000
TEMPLATE = {"activities": ["CPU", "NPU"], "prof_dir": "./out", "analyse": False, "async_mode": False,
            "record_shapes": False, "profile_memory": False, "with_stack": False, "with_flops": False,
            "with_modules": False, "active": 1, "warmup": 0, "start_step": 0, "is_rank": False, "rank_list": [],
            "experimental_config": {"profiler_level": "Level0"}, "metadata": {}}
SIDECAR = os.path.join(".canning-capture", "npu-request.json")


def put(path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())


def log(folder, rank: int, text: str, pid: int = 100) -> None:
    path = folder / "log" / f"dp_host-a_{pid}_rank_{rank}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)


def started(step: int) -> str:
    return f"2026-12-05 10:00:00,000 [INFO] [100] dynamic_profile.py: Start Dynamic Profiler at {step} step.\n"


def stopped(step: int) -> str:
    return f"2026-12-05 10:00:09,000 [INFO] [100] dynamic_profile.py: Stop Dynamic Profiler at {step} step.\n"


@pytest.fixture
def job(tmp_path):
    put(tmp_path / "profiler_config.json", TEMPLATE)
    return tmp_path


def config(folder) -> dict:
    return json.loads((folder / "profiler_config.json").read_text())


def test_a_config_is_torch_npus_when_it_has_its_four_keys(tmp_path):
    assert npu.read_config(str(tmp_path)) is None  # none there
    for data in (b"not json", b"[1]", {"activities": [], "prof_dir": "./", "active": 1},
                 {"activities": [], "prof_dir": "./", "start_step": 0}, {"prof_dir": "./", "active": 1,
                                                                         "start_step": 0}):
        put(tmp_path / "profiler_config.json", data)
        assert npu.read_config(str(tmp_path)) is None, data
    four = {"activities": [], "prof_dir": "./", "active": 1, "start_step": 0}
    put(tmp_path / "profiler_config.json", four)
    assert npu.read_config(str(tmp_path)) == four


def test_a_config_of_64_kib_is_read_and_one_byte_more_is_not(tmp_path):
    four = {"activities": [], "prof_dir": "./", "active": 1, "start_step": 0, "pad": ""}
    fill = 64 * 1024 - len(json.dumps(four))
    put(tmp_path / "profiler_config.json", json.dumps({**four, "pad": "x" * fill}).encode())
    assert len(npu.read_config(str(tmp_path))["pad"]) == fill
    put(tmp_path / "profiler_config.json", json.dumps({**four, "pad": "x" * (fill + 1)}).encode())
    assert npu.read_config(str(tmp_path)) is None


def test_a_fifo_named_like_the_config_or_a_log_is_refused_not_waited_on(job):
    (job / "log").mkdir()
    os.mkfifo(job / "log" / "dp_h_1_rank_0.log")
    log(job, 1, started(5))
    npu.ask(str(job), {"steps": 1}, 5, NOW)
    assert [r["rank"] for r in npu.state(str(job), NOW)["ranks"]] == [1]
    fifo = job.parent / "fifo_job"
    fifo.mkdir()
    os.mkfifo(fifo / "profiler_config.json")
    assert npu.read_config(str(fifo)) is None


@pytest.mark.parametrize("step", [0, -1, True, "3", 3.0, None, 2 ** 53 + 1])
def test_the_start_step_is_a_whole_number_from_1(job, step):
    with pytest.raises(cr.RequestError) as refused:
        npu.ask(str(job), {"steps": 2}, step, NOW)
    assert str(refused.value) == ("torch_npu's dynamic_profile starts at a step of its own count: give the start step "
                                  "(canning-prof capture --start-step N), a whole number from 1")
    assert config(job) == TEMPLATE and not (job / SIDECAR).exists()


@pytest.mark.parametrize("step", [1, 2 ** 53])
def test_the_start_steps_ends_are_taken(job, step):
    assert npu.ask(str(job), {"steps": 1}, step, NOW)["start_step"] == step
    assert config(job)["start_step"] == step


def test_a_folder_without_its_config_is_not_ready(tmp_path):
    with pytest.raises(cr.JobNotReady) as refused:
        npu.ask(str(tmp_path), {"steps": 2}, 5, NOW)
    assert str(refused.value) == "profiler_config.json is gone or unreadable: is the job still running dp.init()?"
    with pytest.raises(cr.RequestError, match="unknown option 'nope'"):  # the options are checked first
        npu.ask(str(tmp_path), {"steps": 2, "nope": 1}, 5, NOW)


def test_a_request_rewrites_only_the_keys_it_sets(job):
    log(job, 0, started(3) + stopped(4))
    got = npu.ask(str(job), {"steps": 3, "ranks": [2, 0], "activities": ["cuda", "npu"], "with_stack": True,
                             "record_shapes": True}, 40, NOW)
    assert config(job) == {**TEMPLATE, "activities": ["NPU"], "active": 3, "start_step": 40, "is_rank": True,
                           "rank_list": [0, 2], "record_shapes": True, "with_stack": True}
    sidecar = json.loads((job / SIDECAR).read_text())
    assert re.fullmatch(r"[0-9a-f]{16}", sidecar["id"]) and sidecar == {
        "id": sidecar["id"], "by": "cli", "created_ns": NOW, "start_step": 40, "steps": 3, "ranks": [0, 2],
        "logs": {"dp_host-a_100_rank_0.log": len(started(3) + stopped(4))}}
    assert got["id"] == sidecar["id"] and got["state"] == "waiting"
    assert [(r["rank"], r["state"]) for r in got["ranks"]] == [(0, "waiting"), (2, "waiting")]


def test_every_rank_and_no_npu_activity_keep_the_configs_own(job):
    npu.ask(str(job), {"steps": 2, "activities": ["CUDA"]}, 7, NOW)
    assert config(job) == {**TEMPLATE, "active": 2, "start_step": 7, "is_rank": False, "rank_list": []}
    npu.ask(str(job), {"steps": 2, "activities": ["cpu"], "profile_memory": True}, 7, NOW)
    assert config(job)["activities"] == ["CPU"] and config(job)["profile_memory"] is True


def test_the_config_must_fit_torch_npus_1020_bytes(job):
    ranks = list(range(200))
    # the template without the pad, then padded so that the written config is exactly 1020 bytes
    done = {**TEMPLATE, "active": 1, "start_step": 5, "is_rank": True, "rank_list": ranks[:100]}
    pad = 1020 - len(json.dumps({**done, "metadata": {"p": ""}}))
    put(job / "profiler_config.json", {**TEMPLATE, "metadata": {"p": "x" * pad}})
    npu.ask(str(job), {"steps": 1, "ranks": ranks[:100]}, 5, NOW)
    assert len((job / "profiler_config.json").read_bytes()) == 1020
    put(job / "profiler_config.json", {**TEMPLATE, "metadata": {"p": "x" * (pad + 1)}})
    with pytest.raises(cr.RequestError) as refused:
        npu.ask(str(job), {"steps": 1, "ranks": ranks[:100]}, 5, NOW)
    assert str(refused.value) == "the config would be 1021 bytes; torch_npu reads at most 1020: name fewer ranks"


def test_a_request_without_a_time_given_reads_the_clock(job):
    before = time.time_ns()
    got = npu.ask(str(job), {"steps": 1}, 5)
    assert before <= got["created_ns"] <= time.time_ns()  # a bracket, not a race: any speed passes
    assert json.loads((job / SIDECAR).read_text())["created_ns"] == got["created_ns"]


def test_a_log_that_cannot_be_measured_is_left_out_and_the_others_kept(job):
    (job / "log").mkdir()
    os.symlink(job / "gone", job / "log" / "dp_a_1_rank_0.log")  # listed first, measured never
    log(job, 1, started(2))
    npu.ask(str(job), {"steps": 1}, 5, NOW)
    assert json.loads((job / SIDECAR).read_text())["logs"] == {"dp_host-a_100_rank_1.log": len(started(2))}


def test_a_log_with_bytes_that_are_not_utf8_is_still_read(job):
    npu.ask(str(job), {"steps": 1}, 5, NOW)
    put(job / "log" / "dp_h_1_rank_0.log", b"\xff\xfe garbage\n" + started(5).encode())
    assert npu.state(str(job))["ranks"][0]["state"] == "recording"


def test_no_request_no_state(job):
    assert npu.state(str(job), NOW) is None


def test_each_ranks_state_from_what_its_log_gained_since_the_request(job):
    log(job, 0, started(3) + stopped(4))  # before the request: not this request's
    log(job, 1, "")
    npu.ask(str(job), {"steps": 2}, 40, NOW)
    log(job, 0, started(40))
    log(job, 1, started(40) + stopped(42))
    log(job, 3, "text without a start\n")  # a rank that logs after the request
    got = npu.state(str(job), NOW + 5)
    assert got["ranks"] == [
        {"rank": 0, "state": "recording", "message": "torch_npu started at step 40", "windows": [], "step": None},
        {"rank": 1, "state": "written", "message": "torch_npu recorded steps 40-41", "windows": [], "step": None},
        {"rank": 3, "state": "waiting", "message": "torch_npu has not logged a start since the request",
         "windows": [], "step": None}]
    assert {k: v for k, v in got.items() if k != "ranks"} == {
        "id": got["id"], "by": "cli", "created_ns": NOW, "state": "recording",
        "message": "torch_npu records steps 40-41 on 2 ranks", "start_step": 40, "end_step": 41, "steps": 2,
        "written_by": [1]}


def test_a_request_is_written_once_every_rank_it_names_stopped(job):
    npu.ask(str(job), {"steps": 1, "ranks": [0, 1]}, 9, NOW)
    assert npu.state(str(job))["message"] == "written to profiler_config.json; torch_npu starts at its step 9"
    log(job, 0, started(9) + stopped(10))
    log(job, 2, started(9) + stopped(10))  # a rank not asked for
    half = npu.state(str(job))
    assert (half["state"], half["message"], half["written_by"]) == (
        "recording", "torch_npu records steps 9-9 on 1 ranks", [0])
    assert [r["rank"] for r in half["ranks"]] == [0, 1]
    log(job, 1, started(9) + stopped(10))
    done = npu.state(str(job))
    assert (done["state"], done["message"], done["written_by"], done["end_step"]) == (
        "written", "written by torch_npu: steps 9-9 on 2 ranks", [0, 1], 9)


def test_a_stop_before_the_start_and_a_rotated_log(job):
    log(job, 0, "x" * 500)
    npu.ask(str(job), {"steps": 2}, 5, NOW)
    log(job, 0, stopped(4) + started(5))  # the stop of an older capture, then this one's start
    assert npu.state(str(job))["ranks"][0]["state"] == "recording"
    (job / "log" / "dp_host-a_100_rank_0.log").write_text(started(5) + stopped(7))  # rotated: shorter than before
    assert npu.state(str(job))["ranks"][0]["message"] == "torch_npu recorded steps 5-6"


def test_an_offset_that_is_not_a_size_reads_the_log_from_its_start(job):
    log(job, 0, started(5))
    log(job, 1, started(5))
    log(job, 2, started(5))
    npu.ask(str(job), {"steps": 2}, 5, NOW)
    sidecar = json.loads((job / SIDECAR).read_text())
    names = sorted(sidecar["logs"])
    sidecar["logs"] = {names[0]: "12", names[1]: -1, names[2]: len(started(5))}
    put(job / SIDECAR, sidecar)
    assert [r["state"] for r in npu.state(str(job))["ranks"]] == ["recording", "recording", "waiting"]
    sidecar["logs"] = [1]  # not a mapping: every log from its start
    put(job / SIDECAR, sidecar)
    assert [r["state"] for r in npu.state(str(job))["ranks"]] == ["recording"] * 3


def test_a_log_is_read_for_1_mib_past_the_request(job):
    npu.ask(str(job), {"steps": 1}, 5, NOW)
    line = "Start Dynamic Profiler at 5 step"
    log(job, 0, "x" * ((1 << 20) - len(line)) + line + ".\n")  # the words end at the last byte read
    log(job, 1, "x" * ((1 << 20) - len(line) + 1) + line + ".\n")  # one byte further: "... at 5 ste"
    assert [r["state"] for r in npu.state(str(job))["ranks"]] == ["recording", "waiting"]


def test_only_torch_npus_log_names_count_and_a_negative_rank_is_one(job):
    for name in ("dp_h_1_rank_0.txt", "xdp_h_1_rank_1.log", "dp_h_x_rank_2.log", "dp__1_rank_3.log",
                 "dp_h_1_rank_4.log.1", "dp_h_1_rank_.log"):
        put(job / "log" / name, started(5).encode())
    put(job / "log" / "dp_h_1_rank_-1.log", b"")
    put(job / "log" / "dp_h.x_22_rank_12.log", b"")
    npu.ask(str(job), {"steps": 1}, 5, NOW)
    assert sorted(json.loads((job / SIDECAR).read_text())["logs"]) == ["dp_h.x_22_rank_12.log", "dp_h_1_rank_-1.log"]
    log(job, -1, started(5))
    log(job, 12, started(5))
    assert [r["rank"] for r in npu.state(str(job))["ranks"]] == [-1, 12]


@pytest.mark.parametrize("data, problem", [
    (b"not json", "the file is not JSON: Expecting value: line 1 column 1 (char 0)"),
    (b"[1]", "not a JSON object"),
    ({"by": "cli", "created_ns": 1, "start_step": 1, "steps": 1, "ranks": "all"}, "lacks 'id'"),
    ({"id": "a", "created_ns": 1, "start_step": 1, "steps": 1, "ranks": "all"}, "lacks 'by'"),
    ({"id": "a", "by": "cli", "start_step": 1, "steps": 1, "ranks": "all"}, "lacks 'created_ns'"),
    ({"id": "a", "by": "cli", "created_ns": 1, "steps": 1, "ranks": "all"}, "lacks 'start_step'"),
    ({"id": "a", "by": "cli", "created_ns": 1, "start_step": 1, "ranks": "all"}, "lacks 'steps'"),
    ({"id": "a", "by": "cli", "created_ns": 1, "start_step": 1, "steps": 1}, "lacks 'ranks'"),
    ({"id": "a", "by": "cli", "created_ns": -1, "start_step": 1, "steps": 1, "ranks": "all"},
     f"created_ns must be a whole number from 0 to {1 << 63}, not -1"),
    ({"id": "a", "by": "cli", "created_ns": 0, "start_step": 0, "steps": 1, "ranks": "all"},
     f"start_step must be a whole number from 1 to {1 << 53}, not 0"),
    ({"id": "a", "by": "cli", "created_ns": 0, "start_step": 1, "steps": 51, "ranks": "all"},
     "steps must be a whole number from 1 to 50, not 51"),
    ({"id": "a", "by": "cli", "created_ns": 0, "start_step": 1, "steps": 1, "ranks": []},
     'ranks must be "all" or a list of rank numbers, not list'),
    (b"x" * 16385, "the file is 16385 bytes, over the limit of 16384")])
def test_a_sidecar_not_ours_is_unusable_and_says_why(job, data, problem):
    put(job / SIDECAR, data)
    with pytest.raises(cr.UnusableFile) as refused:
        npu.state(str(job))
    assert (refused.value.file, refused.value.problem) == (".canning-capture/npu-request.json", problem)


def test_a_sidecar_at_its_ends_is_read_and_its_names_cut(job):
    put(job / SIDECAR, {"id": "i" * 70, "by": "b" * 70, "created_ns": 1 << 63, "start_step": 1 << 53, "steps": 50,
                        "ranks": [3, 1], "logs": None})
    got = npu.state(str(job))
    assert (got["id"], got["by"], got["created_ns"]) == ("i" * 64, "b" * 64, 1 << 63)
    assert (got["start_step"], got["end_step"], got["steps"]) == (1 << 53, (1 << 53) + 49, 50)
    assert [r["rank"] for r in got["ranks"]] == [1, 3] and got["state"] == "waiting"
    put(job / SIDECAR, {"id": "a", "by": 5, "created_ns": 0, "start_step": 1, "steps": 1, "ranks": "all"})
    assert npu.state(str(job))["by"] == "5"
    log(job, 4, started(1))  # no logs mapping: read from the start
    assert npu.state(str(job))["ranks"][0]["state"] == "recording"


def test_a_sidecar_that_cannot_be_opened_names_the_reason(job):
    (job / SIDECAR).mkdir(parents=True)  # a folder where the file should be
    with pytest.raises(cr.UnusableFile) as refused:
        npu.state(str(job))
    assert (refused.value.file, refused.value.problem) == (".canning-capture/npu-request.json",
                                                           "a folder, not a regular file")  # the reason's words
    os.rmdir(job / SIDECAR)
    os.mkfifo(job / SIDECAR)
    with pytest.raises(cr.UnusableFile, match="not a regular file"):
        npu.state(str(job))


def test_a_sidecar_error_without_words_is_named_by_its_kind(job, monkeypatch):
    def fails(*a):
        raise PermissionError()  # an OSError that carries no words

    monkeypatch.setattr(npu.safe_files, "read_file", fails)
    with pytest.raises(cr.UnusableFile) as refused:
        npu.state(str(job))
    assert refused.value.problem == "PermissionError"


def test_the_job_is_the_ranks_that_log(job):
    assert npu.job_summary(str(job)) == {"live_ranks": [], "world_size": 0, "step": None, "steps_per_s": None,
                                         "backend": "torch_npu dynamic_profile", "max_steps": 50,
                                         "last_heartbeat_s": None, "ranks": []}
    log(job, 3, "")
    log(job, 0, "")
    log(job, 3, "", pid=101)  # the same rank restarted: one rank
    put(job / "log" / "other.log", b"")
    got = npu.job_summary(str(job))
    assert got["world_size"] == 2 and got["live_ranks"] == []
    assert got["ranks"] == [{"rank": r, "host": "", "pid": 0, "step": None, "state": "", "live": None} for r in (0, 3)]
