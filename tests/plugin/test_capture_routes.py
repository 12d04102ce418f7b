"""The capture routes through TensorBoard's own WSGI app and flag parser: off (403) unless TensorBoard was
started with --canning_capture (or CANNING_CAPTURE=1); then only a well-formed POST writes, to a run whose
job watches, and the request file holds exactly the documented keys. The job is a real torch.profiler
profile with ps.on_demand() stepped in this process (tests/collect/test_capture_job.py)."""
import json
import os

import pytest
from tensorboard import program
from tensorboard.backend import application
from tensorboard.plugins import base_plugin
from tensorboard.plugins.core import core_plugin
from werkzeug.test import Client

from _capture import CAPTURE, status, wait_for
from canning_tb.plugin.loader import CanningLoader
from canning_tb.plugin.plugin import CanningPlugin

ROUTES = [("GET", "/capture"), ("GET", "/capture_state?run=job"), ("POST", "/capture_request")]
HEADERS = {"X-Canning-Capture": "1"}


def client(logdir, flags=None):
    plugin = CanningPlugin(base_plugin.TBContext(logdir=str(logdir), flags=flags), refresh_interval=0.0)
    return Client(application.TensorBoardWSGI([plugin]))


def call(c, method, route, body=None, headers=HEADERS, content_type="application/json"):
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    r = c.open("/data/plugin/canning" + route, method=method, data=data, headers=headers, content_type=content_type)
    return r.status_code, json.loads(r.data), r.headers


def tensorboard_flags(*argv):
    """The flags TensorBoard itself parses, with the plugin's own defined by its loader."""
    tb = program.TensorBoard(plugins=[core_plugin.CorePluginLoader, CanningLoader])
    tb.configure(argv=[None, *argv])
    return tb.flags


@pytest.fixture
def job(tmp_path):
    torch = pytest.importorskip("torch")  # noqa: F841
    from test_capture_job import Job
    j = Job(tmp_path / "logdir" / "job")
    j.step_until(lambda: (s := status(j.run)) and s["steps_per_s"], "a step rate")
    yield j
    j.prof.stop()


def test_without_the_option_every_capture_route_refuses(tmp_path, monkeypatch):
    monkeypatch.delenv("CANNING_CAPTURE", raising=False)
    flags = tensorboard_flags("--logdir", str(tmp_path))
    assert flags.canning_capture is False
    c = client(tmp_path, flags)
    for method, route in ROUTES:
        code, body, _ = call(c, method, route, {"run": "job", "steps": 3})
        assert code == 403 and "--canning_capture" in body["error"] and body["enabled"] is False, (route, body)
    assert not os.path.exists(tmp_path / "job")


def test_the_flag_or_the_environment_turns_it_on(tmp_path, monkeypatch):
    monkeypatch.delenv("CANNING_CAPTURE", raising=False)
    assert call(client(tmp_path, tensorboard_flags("--logdir", str(tmp_path), "--canning_capture")), "GET",
                "/capture")[:2] == (200, {"enabled": True, "runs": [], "limits": {
                    "max_steps": 50, "activities": ["CPU", "CUDA", "NPU"],
                    "options": ["record_shapes", "profile_memory", "with_stack", "with_flops", "with_modules"]}})
    monkeypatch.setenv("CANNING_CAPTURE", "1")
    assert call(client(tmp_path), "GET", "/capture")[0] == 200


def test_only_a_well_formed_post_writes_a_request_with_the_documented_keys(job, monkeypatch):
    monkeypatch.setenv("CANNING_CAPTURE", "1")
    logdir = os.path.dirname(job.run)
    c = client(logdir)
    code, listed, _ = call(c, "GET", "/capture")
    assert code == 200 and [r["run"] for r in listed["runs"]] == ["job"]
    assert listed["runs"][0]["kind"] == "on_demand" and listed["runs"][0]["job"]["live_ranks"] == [0]
    assert call(c, "GET", "/capture_request")[0] == 405
    assert call(c, "GET", "/capture_request")[2]["Allow"] == "POST"
    assert call(c, "POST", "/capture")[0] == 405
    good = {"run": "job", "steps": 3}
    assert call(c, "POST", "/capture_request", good, headers={})[0] == 403  # another site's form cannot add it
    assert call(c, "POST", "/capture_request", good, content_type="text/plain")[0] == 403
    assert call(c, "POST", "/capture_request", b"x" * 5000)[0] == 413
    for bad, why in [({"run": "job", "steps": 3, "prof_dir": "/etc"}, "unknown option 'prof_dir'"),
                     ({"run": "job", "steps": 51}, "steps must be a whole number from 1 to 50"),
                     ({"run": "job", "steps": 3, "activities": ["GPU"]}, "unknown activity"),
                     ({"run": "job", "steps": 3, "ranks": "../../etc"}, 'ranks must be "all"'),
                     ({"run": "job", "steps": 3, "ranks": [0, 1]}, "rank 1 is not in this job: its world size is 1"),
                     ({"steps": 3}, "naming the run")]:
        code, body, _ = call(c, "POST", "/capture_request", bad)
        assert code == 400 and why in body["error"], (bad, body)
    code, body, _ = call(c, "POST", "/capture_request", {"run": "../job", "steps": 3})
    assert code == 404 and "no job watches run '../job'" in body["error"]
    assert not os.path.exists(os.path.join(job.run, CAPTURE, "request.json"))

    code, body, _ = call(c, "POST", "/capture_request", {"run": "job", "steps": 2, "profile_memory": True})
    assert code == 201, body
    with open(os.path.join(job.run, CAPTURE, "request.json"), encoding="utf-8") as f:
        written = json.load(f)
    assert sorted(written) == sorted(["format", "version", "id", "by", "created_ns", "start_step", "steps", "seen_step",
                                      "ranks", "activities", "record_shapes", "profile_memory", "with_stack",
                                      "with_flops", "with_modules"])
    assert (written["by"], written["steps"], written["ranks"]) == ("tensorboard", 2, "all")
    assert written["profile_memory"] is True
    assert call(c, "POST", "/capture_request", {"run": "job", "steps": 2})[0] == 429
    wait_for(lambda: (status(job.run) or {}).get("request") == written["id"], "the job read it")
    code, state, _ = call(c, "GET", "/capture_state?run=job")  # recorded and written: test_capture_live.py
    assert code == 200 and state["request"]["id"] == written["id"] and state["request"]["state"] == "scheduled"


def test_a_job_that_stopped_is_not_asked(job, monkeypatch):
    monkeypatch.setenv("CANNING_CAPTURE", "1")
    job.prof.stop()
    wait_for(lambda: status(job.run)["watching"] is False, "the last status")
    code, body, _ = call(client(os.path.dirname(job.run)), "POST", "/capture_request", {"run": "job", "steps": 3})
    assert code == 409 and "no job is watching this run" in body["error"]


# -- torch_npu dynamic_profile folders with damaged or hostile files -------------------------------------------
DP_CONFIG = {"activities": ["CPU", "NPU"], "prof_dir": "./", "active": 1, "start_step": 0}  # the keys it is known by


def dp_folder(logdir, name, sidecar=None, logs=()):
    """A run folder as torch_npu's dp.init() leaves it (profiler_config.json, log/), with the request that
    `canning-prof capture` keeps beside (`.canning-capture/npu-request.json`, as capture/npu.py writes it)."""
    folder = logdir / name
    (folder / "log").mkdir(parents=True)
    (folder / "profiler_config.json").write_text(json.dumps(DP_CONFIG))
    if sidecar is not None:
        (folder / CAPTURE).mkdir()
        (folder / CAPTURE / "npu-request.json").write_text(json.dumps(sidecar))
    for log, text in logs:
        (folder / "log" / log).write_text(text)
    return folder


def sidecar(**changes):
    body = {"id": "0123456789abcdef", "by": "cli", "created_ns": 1, "start_step": 8, "steps": 2, "ranks": "all",
            "logs": {}}
    body.update(changes)
    return {k: v for k, v in body.items() if v is not None}


def answered_within(c, route, seconds=30.0):
    """(code, body) of a GET that must come back: a hang fails the test (the FIFO is opened for writing
    afterwards, so a reader stuck on it is let go) instead of holding the suite."""
    import threading
    got = {}
    thread = threading.Thread(target=lambda: got.update(answer=call(c, "GET", route)[:2]), daemon=True)
    thread.start()
    thread.join(seconds)
    return got.get("answer")


def test_a_fifo_named_like_torch_npus_log_or_config_never_hangs_the_capture_routes(tmp_path, monkeypatch):
    monkeypatch.setenv("CANNING_CAPTURE", "1")
    logdir = tmp_path / "logdir"
    fifo_log = dp_folder(logdir, "dp", sidecar(), [("dp_host_7_rank_1.log", "Start Dynamic Profiler at 8 step.\n"
                                                                           "Stop Dynamic Profiler at 10 step.\n")])
    os.mkfifo(fifo_log / "log" / "dp_host_5_rank_0.log")
    fifo_config = logdir / "dp_config"
    (fifo_config / "log").mkdir(parents=True)
    os.mkfifo(fifo_config / "profiler_config.json")
    c = client(logdir)
    try:
        listed = answered_within(c, "/capture")
        assert listed is not None, "GET /capture hung on a FIFO named profiler_config.json"
        assert listed[0] == 200 and [r["run"] for r in listed[1]["runs"]] == ["dp"], listed
        for _ in range(3):  # every poll answers: none is left waiting on the FIFO
            state = answered_within(c, "/capture_state?run=dp")
            assert state is not None, "GET /capture_state hung on a FIFO named like torch_npu's log"
            code, body = state
            assert code == 200 and body["request"]["state"] == "written", body
            assert [(r["rank"], r["state"]) for r in body["request"]["ranks"]] == [(1, "written")]
    finally:
        for fifo in (fifo_log / "log" / "dp_host_5_rank_0.log", fifo_config / "profiler_config.json"):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # lets a reader stuck on it go
            except OSError:
                pass


@pytest.mark.parametrize("body,says", [
    (sidecar(ranks=None), "lacks 'ranks'"),
    (sidecar(start_step="8"), "start_step must be a whole number"),
    (sidecar(steps=10 ** 40), "steps must be a whole number from 1 to 50"),
    ([1, 2], "not a JSON object"),
])
def test_a_malformed_npu_request_is_a_422_naming_it_and_other_runs_still_answer(tmp_path, monkeypatch, capsys, body,
                                                                               says):
    monkeypatch.setenv("CANNING_CAPTURE", "1")
    logdir = tmp_path / "logdir"
    dp_folder(logdir, "bad", body)
    dp_folder(logdir, "good", sidecar(ranks=[0]), [("dp_h_1_rank_0.log", "Start Dynamic Profiler at 8 step.\n")])
    c = client(logdir)
    code, answer, _ = call(c, "GET", "/capture_state?run=bad")
    assert code == 422, answer
    assert answer["error"] == f"bad/.canning-capture/npu-request.json: {answer['error'].split(': ', 1)[1]}"
    assert says in answer["error"] and answer["file"] == "bad/.canning-capture/npu-request.json", answer
    code, answer, _ = call(c, "GET", "/capture_state?run=good")
    assert code == 200 and answer["request"]["state"] == "recording", answer
    code, answer, _ = call(c, "GET", "/capture")
    assert code == 200 and [r["run"] for r in answer["runs"]] == ["bad", "good"], answer
    from canning_tb.cli.main import main  # the command line says the same words
    assert main(["capture", "--logdir", str(logdir), "--run", "bad", "--status"]) == 2
    err = capsys.readouterr().err
    assert ".canning-capture/npu-request.json: " in err and says in err and str(tmp_path) not in err, err


def _post_from(c, host):
    """POST /capture_request with every header a page of TensorBoard's own would send, addressed to `host`."""
    return call(c, "POST", "/capture_request", {"run": "job", "steps": 3}, headers={**HEADERS, "Host": host})


@pytest.mark.parametrize("argv,taken,refused", [
    ((), ["localhost:6006", "127.0.0.1:6006", "[::1]:6006", "LOCALHOST", "10.1.2.3:6006", "[fe80::1]:80"],
     ["evil.example:6006", "evil.example", "localhost.evil.example:6006", "", "127.0.0.1.nip.io:6006"]),
    (("--host", "tb.lab.example"), ["tb.lab.example:6006", "tb.lab.example.", "localhost:6006"],
     ["evil.example:6006", "lab.example:6006"]),
    (("--bind_all",), ["localhost:6006", f"{__import__('socket').gethostname()}:6006"], ["evil.example:6006"]),
])
def test_the_capture_post_answers_only_the_address_tensorboard_serves(tmp_path, monkeypatch, argv, taken, refused):
    """DNS rebinding: a page of evil.example whose name now resolves to this machine sends Host: evil.example.
    Refused with 403 before anything is read or written; the names TensorBoard serves (its --host, loopback,
    with --bind_all this machine's name) and IP literals (nothing resolved) go on to the next check (no job
    watches run 'job' here: 404)."""
    monkeypatch.delenv("CANNING_CAPTURE_HOSTS", raising=False)
    c = client(tmp_path, tensorboard_flags("--logdir", str(tmp_path), "--canning_capture", *argv))
    for host in taken:
        code, body, _ = _post_from(c, host)
        assert code == 404 and "no job watches run 'job'" in body["error"], (host, code, body)
    for host in refused:
        code, body, _ = _post_from(c, host)
        assert code == 403 and "must be addressed to the address TensorBoard serves" in body["error"], (host, body)
    assert call(c, "GET", "/capture", headers={"Host": "evil.example"})[0] == 200  # reading is not what it guards
    monkeypatch.setenv("CANNING_CAPTURE_HOSTS", "proxy.example, evil.example")
    c = client(tmp_path, tensorboard_flags("--logdir", str(tmp_path), "--canning_capture", *argv))
    assert _post_from(c, "evil.example:443")[0] == 404
