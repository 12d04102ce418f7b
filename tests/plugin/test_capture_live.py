"""Capture from TensorBoard into a running job: a real 2-process torch.distributed (gloo, CPU) DDP job
(examples/train_on_demand.py, schedule=ps.on_demand()) and a real TensorBoard started with
--canning_capture, asked through the plugin's route, the CLI and the Capture button in Chromium.

Both ranks must record the same steps (the ones the request names), write their windows through the
handler (manifests with rank and world size), and the viewer must list them while the job still runs.
Expected steps come from the request itself; the windows are read back with json / gzip (tests/_capture.py).
"""
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import expect

from _capture import manifests, status, trace_steps, wait_for
from _tb import T, open_plugin, shot
from test_handler_ddp import free_port
from test_plugin_routes import fetch_json, start_tensorboard, stop_tensorboard

pytest.importorskip("torch.distributed")
pytestmark = [pytest.mark.slow, pytest.mark.timed]  # a live job's steps

REPO = Path(__file__).resolve().parents[2]
WORLD = 2


class Live:
    def __init__(self, logdir, procs, logs, url, tb_log):
        self.logdir, self.run = logdir, str(logdir / "job")
        self.procs, self.logs, self.url, self.tb_log = procs, logs, url, tb_log

    def running(self):
        return all(p.poll() is None for p in self.procs)

    def post(self, body, headers=None):
        req = urllib.request.Request(self.url + "/data/plugin/canning/capture_request", data=json.dumps(body).encode(),
                                     method="POST", headers=headers or {"Content-Type": "application/json",
                                                                        "X-Canning-Capture": "1"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(req, timeout=60) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    def state(self):
        return fetch_json(self.url + "/data/plugin/canning/capture_state?run=job")

    def written(self, rid):
        """The request's state once every asked rank is done with it."""
        def done():
            state = self.state()["request"]
            pending = ("waiting", "scheduled", "recording")
            return state if state and state["id"] == rid and state["state"] not in pending else None
        return wait_for(done, f"request {rid} done", timeout=90, every=0.2)

    def cli(self, *args):
        return subprocess.run([sys.executable, "-m", "canning_tb.cli.main", "capture", "--logdir", str(self.logdir),
                               *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("capture_logdir")
    run = logdir / "job"
    port, procs, logs = free_port(), [], []
    for rank in range(WORLD):
        env = {**os.environ, "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(WORLD),
               "LOCAL_WORLD_SIZE": str(WORLD), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        logs.append(open(logdir.parent / f"rank{rank}.log", "w+"))
        procs.append(subprocess.Popen([sys.executable, str(REPO / "examples" / "train_on_demand.py"), str(run),
                                       "--poll", "0.2", "--heartbeat", "0.5", "--min-interval", "1"],
                                      env=env, stdout=logs[-1], stderr=subprocess.STDOUT, text=True))
    tb_log = logdir.parent / "tb.log"
    tb, url, tb_file = start_tensorboard(logdir, tb_log, ["--canning_capture"])
    try:
        for rank in range(WORLD):  # both ranks watch, and their step rate is known: a start can be planned
            wait_for(lambda: (s := status(str(run), rank)) and s["steps_per_s"], f"rank {rank}'s rate", timeout=120)
        yield Live(logdir, procs, logs, url, tb_log)
    finally:
        for p in procs:  # the job would run on: its clean end is not what this module checks
            p.kill()
            p.wait(timeout=60)
        stop_tensorboard(tb, tb_file)


def windows_of(run, rid):
    return sorted((m for m in manifests(run) if rid in m["settings"]["schedule"]), key=lambda m: m["rank"])


def test_route_capture_records_the_same_steps_on_both_ranks_listed_while_the_job_runs(live):
    listed = fetch_json(live.url + "/data/plugin/canning/capture")
    assert [r["run"] for r in listed["runs"]] == ["job"] and listed["runs"][0]["job"]["live_ranks"] == [0, 1]
    code, body = live.post({"run": "job", "steps": 3, "record_shapes": True})
    assert code == 201, body
    asked = body["request"]
    start = asked["start_step"]
    # a request while this one is not written yet is refused, with the reason
    busy = live.cli("--run", "job", "--steps", "2")
    assert busy.returncode == 2 and "a capture is in progress" in busy.stderr, busy
    state = live.written(asked["id"])
    assert state["state"] == "written" and state["written_by"] == [0, 1], state
    wins = windows_of(live.run, asked["id"])
    assert [(m["rank"], m["world_size"]) for m in wins] == [(0, 2), (1, 2)]
    for m in wins:
        assert m["steps"] == [start, start + 1, start + 2] == trace_steps(live.run, m)
        assert m["settings"]["record_shapes"] is True
    assert sorted(w for r in state["ranks"] for w in r["windows"]) == sorted(m["manifest"] for m in wins)

    def listed_windows():
        runs = {r["name"]: r for r in fetch_json(live.url + "/data/plugin/canning/runs")["runs"]}
        job = runs.get("job")
        found = [w for wk in (job or {}).get("workers", []) for w in wk["windows"]
                 if w["label"].endswith(f"(steps {start}-{start + 2})")]
        return len(found) == WORLD and found
    wait_for(listed_windows, "both windows listed by /runs", timeout=30, every=0.5)
    assert live.running()  # the job never stopped for any of it
    assert f"capture {asked['id']} of run 'job' asked from 127.0.0.1" in live.tb_log.read_text()


def _ask_with_cli(live, *args):
    """The CLI, asked again once the job's rate limit (said in the refusal) has passed."""
    for _ in range(5):
        out = live.cli(*args)
        wait = re.search(r"ask again in (\d+) s", out.stderr)
        if out.returncode != 2 or not wait:
            return out
        time.sleep(int(wait.group(1)))
    return out


def test_cli_captures_again_later_on_the_ranks_it_names(live):
    out = _ask_with_cli(live, "--run", "job", "--steps", "2", "--ranks", "1", "--wait", "--format", "json")
    assert out.returncode == 0, out
    state = json.loads(out.stdout)["request"]
    assert [r["rank"] for r in state["ranks"]] == [1] and state["written_by"] == [1]
    (win,) = windows_of(live.run, state["id"])
    assert win["rank"] == 1 and win["steps"] == [state["start_step"], state["start_step"] + 1]
    assert status(live.run, 0)["state"] == "not_selected" and status(live.run, 0)["request"] == state["id"]
    text = live.cli("--run", "job", "--status")
    assert text.returncode == 0 and f"last request: {state['id']} (cli): written" in text.stdout


@pytest.mark.browser
def test_the_capture_button_asks_the_job_and_the_windows_appear(page, live, errors):
    frame = open_plugin(page, live.url)
    expect(frame.locator("#capture-panel")).to_be_hidden()  # folded until asked for
    frame.locator("#capture-open").click()
    expect(frame.locator("#capture-panel")).to_be_visible()
    expect(frame.locator("#capture-run option")).to_have_count(1, timeout=T)
    expect(frame.locator("#capture-job")).to_contain_text("2 of 2 ranks watching")
    # a torch job: no start step to give (that field is for torch_npu's dynamic profiling)
    expect(frame.get_by_text("Start step (torch_npu's count)")).to_be_hidden()
    frame.locator("#capture-steps").fill("3")
    frame.locator("#capture-with-stack").check()
    message = frame.locator("#capture-state .capture-message")
    expect(message).not_to_have_text("", timeout=T)  # the run's last request (or none yet)
    for _ in range(10):  # the job's rate limit since the last test's request: the panel says when to ask again
        before = message.text_content()
        frame.locator("#capture-submit").click()
        expect(message).not_to_have_text(before, timeout=T)
        wait = re.search(r"ask again in (\d+) s", message.text_content() or "")
        if not wait:
            break
        time.sleep(int(wait.group(1)))
    state = frame.locator("#capture-state")
    expect(state).to_have_attribute("data-state", "written", timeout=90_000)
    expect(frame.locator('#capture-state li[data-state="written"]')).to_have_count(2)
    state.scroll_into_view_if_needed()
    shot(page, "capture")
    rid = re.search(r"Capture ([0-9a-f]{16})", state.text_content()).group(1)
    wins = windows_of(live.run, rid)
    assert [m["rank"] for m in wins] == [0, 1] and all(m["settings"]["with_stack"] for m in wins)
    first = wins[0]["steps"][0]
    frame.locator("#run-select").select_option("job")
    options = frame.locator("#window-select option", has_text=f"steps {first}-{first + 2}")
    expect(options).to_have_count(1, timeout=T)  # the shell lists the new window without a reload
    assert live.running()
    assert not errors, errors


def test_the_job_logged_each_request_and_ran_on(live):
    assert live.running()
    for rank, f in enumerate(live.logs):
        f.seek(0)
        text = f.read()
        assert "canning: capture: request" in text and "from tensorboard" in text and "Traceback" not in text, text
        assert ("from cli" in text) == (rank == 1), text  # the CLI asked rank 1 only
