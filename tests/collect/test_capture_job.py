"""The job's side of a capture on the real torch.profiler (CPU), in this process: ps.on_demand() records
nothing until a request asks, then exactly the steps it names; bad, hostile or untimely requests are
refused (said in the status and on stderr) and the training goes on; a job without ps.on_demand() writes
nothing when asked. Requests are written by hand as the format says (tests/_capture.py), statuses and
traces read back with json / gzip."""
import itertools
import json
import os
import stat
import time

import pytest

from _capture import manifests, request, status, trace_steps, wait_for, window_files, write_request

torch = pytest.importorskip("torch")
from canning import profiling_suite as ps  # noqa: E402
from canning_tb.capture.targets import ON_DEMAND, CaptureBusy, Target, ask  # noqa: E402

X = torch.randn(32, 32)


class Job:
    """A training loop stepped by the test: each step() is a small matmul and prof.step()."""

    def __init__(self, run, schedule=None, **kw):
        self.run = str(run)
        sched = schedule or ps.on_demand(poll_s=0.02, heartbeat_s=0.1, min_interval_s=kw.pop("min_interval_s", 0))
        self.prof = ps.Profile(activities=[ps.ProfilerActivity.CPU], schedule=sched,
                               on_trace_ready=ps.tensorboard_trace_handler(self.run, digest=False), **kw)
        self.prof.start()
        self.steps = 0

    def step(self, n=1):
        for _ in range(n):
            (X @ X).sum()
            self.prof.step()
            self.steps += 1

    def step_until(self, cond, what, limit=5000, seconds=120.0):
        """Steps until cond() holds (checked after each step): `limit` steps at full speed, then a step
        every 10 ms until `seconds` have passed. The status is written by the job's own threads (the watch
        thread's beat, the writer), which a loaded machine may hold back for longer than a few hundred
        matmul steps take (CI once saw "wrote steps" on stderr with the status not yet saying so)."""
        deadline = time.monotonic() + seconds
        for taken in itertools.count():
            got = cond()
            if got:
                return got
            if taken >= limit and time.monotonic() > deadline:
                raise AssertionError(f"{what}: not after {taken} steps and {seconds:.0f} s")
            if taken >= limit:
                time.sleep(0.01)
            self.step()

    def state(self, rid=None):
        s = status(self.run)
        return s["state"] if s and (rid is None or s["request"] == rid) else None

    def read(self, rid):
        """The watch thread's answer to request rid, waited for without stepping (it reads on its own)."""
        return wait_for(lambda: (s := status(self.run)) and s["request"] == rid and s, f"request {rid} read")


@pytest.fixture
def job(tmp_path):
    j = Job(tmp_path / "run")
    wait_for(lambda: status(j.run), "the first heartbeat")
    yield j
    j.prof.stop()


def test_nothing_is_recorded_until_asked_then_exactly_the_steps_named(job, capsys):
    job.step(30)
    assert window_files(job.run) == []  # no profiler ran: no window, no scalars
    beat = job.step_until(lambda: (s := status(job.run)) and s["steps_per_s"] and s, "a step rate")
    assert beat["rank"] == 0 and beat["world_size"] == 1 and beat["watching"] is True and beat["state"] == "idle"
    start = job.steps + 40
    req = request(start, steps=3, record_shapes=True)
    write_request(job.run, json.dumps(req).encode())
    assert job.read(req["id"])["state"] == "scheduled"
    job.step_until(lambda: job.state(req["id"]) == "written", "the capture written", limit=400)
    (man,) = manifests(job.run)
    assert man["steps"] == [start, start + 1, start + 2] == trace_steps(job.run, man)
    assert man["settings"]["record_shapes"] is True and man["settings"]["profile_memory"] is False
    assert req["id"] in man["settings"]["schedule"]
    s = status(job.run)
    assert s["windows"] == [os.path.basename(man["manifest"])]
    assert (s["start_step"], s["end_step"]) == (start, start + 2)
    err = capsys.readouterr().err
    assert f"request {req['id']} from cli: steps {start}-{start + 2}" in err and "wrote steps" in err
    job.step(20)
    assert len(manifests(job.run)) == 1  # one capture, one window


def test_the_writer_plans_a_start_every_rank_reaches(job):
    job.step_until(lambda: (s := status(job.run)) and s["steps_per_s"], "a step rate")
    state = ask(Target(job.run, ON_DEMAND), {"steps": 2}, "cli")
    assert state["start_step"] > job.steps
    assert job.read(state["id"])["state"] == "scheduled"
    job.step_until(lambda: job.state(state["id"]) == "written", "the planned capture", limit=state["start_step"] + 10)
    (man,) = manifests(job.run)
    assert man["steps"] == [state["start_step"], state["start_step"] + 1]


HOSTILE = [
    (b'{"steps": 3', "not JSON"),
    (b"[1, 2, 3]", "must be a JSON object"),
    (b"x" * 5000, "over the limit"),
    ("unknown key", "unknown key"),
    ("huge steps", "steps must be a whole number from 1 to 50"),
    ("steps as true", "steps must be a whole number"),
    ("a path as the ranks", 'ranks must be "all"'),
    ("a path as an activity", "unknown activity"),
    ("a path as the id", "id must be 16"),
    ("code in by", "by must be one of"),
    ("NaN start", "not a number a request may hold"),
    ("duplicate key", "duplicate key"),
]


def _hostile(case, start):
    good = request(start)
    if isinstance(case, bytes):
        return case
    if case == "unknown key":
        good["prof_dir"] = "/etc"  # torch_npu's key for a folder: a path never goes through
    elif case == "huge steps":
        good["steps"] = 10 ** 9
    elif case == "steps as true":
        good["steps"] = True
    elif case == "a path as the ranks":
        good["ranks"] = "/etc/passwd"
    elif case == "a path as an activity":
        good["activities"] = ["../../CPU"]
    elif case == "a path as the id":
        good["id"] = "../../../etc/x"
    elif case == "code in by":
        good["by"] = "__import__('os').system('touch pwned')"
    elif case == "NaN start":
        return json.dumps(good).replace(f'"start_step": {start}', '"start_step": NaN').encode()
    elif case == "duplicate key":
        return json.dumps(good)[:-1].encode() + b', "steps": 50}'
    return json.dumps(good).encode()


def test_malformed_oversized_or_hostile_requests_are_refused_and_the_job_goes_on(job, capsys):
    for case, why in HOSTILE:
        before = job.steps
        write_request(job.run, _hostile(case, job.steps + 50))
        s = wait_for(lambda: (s := status(job.run)) and s["state"] == "refused" and why in s["message"] and s,
                     f"{case!r} refused")
        job.step(5)
        assert s["request"] is None and job.steps > before  # the job goes on stepping
        write_request(job.run, b"{}")  # the next case must be a new file content
        wait_for(lambda: "lacks" in (status(job.run) or {}).get("message", ""), "the reset")
    assert window_files(job.run) == [] and not os.path.exists("pwned")
    assert capsys.readouterr().err.count("request refused") == len(HOSTILE) * 2


def test_a_fifo_as_the_request_file_never_blocks_the_job(job):
    os.mkfifo(os.path.join(job.run, ".canning-capture", "request.json"))
    s = wait_for(lambda: (s := status(job.run)) and "not a regular file" in s["message"] and s, "the FIFO refused")
    job.step(10)
    assert s["state"] == "refused"
    assert stat.S_ISFIFO(os.stat(os.path.join(job.run, ".canning-capture", "request.json")).st_mode)


def test_a_request_during_a_capture_is_refused_and_one_too_late_is_missed(job):
    first = request(job.steps + 10, steps=5)
    write_request(job.run, json.dumps(first).encode())
    job.read(first["id"])
    job.step_until(lambda: job.prof._on_demand.capture is not None, "the first capture started", limit=2000)
    wait_for(lambda: job.state(first["id"]) == "recording", "the first capture said recording")  # no step meanwhile
    second = request(job.steps + 20)
    write_request(job.run, json.dumps(second).encode())
    # the training thread does not step: the watch thread answers on its own
    s = wait_for(lambda: (s := status(job.run)) and s["request"] == second["id"] and s, "the second request read")
    assert s["state"] == "refused" and s["message"].startswith(f"busy: capture {first['id']}")
    job.step_until(lambda: len(manifests(job.run)) == 1, "the first capture written", limit=100)
    assert manifests(job.run)[0]["steps"] == list(range(first["start_step"], first["start_step"] + 5))
    late = request(job.steps)  # its start step is the step the job is at: too late to warm up
    write_request(job.run, json.dumps(late).encode())
    s = wait_for(lambda: (s := status(job.run)) and s["request"] == late["id"] and s, "the late request read")
    assert s["state"] == "missed"
    job.step(30)
    assert len(manifests(job.run)) == 1


def test_a_start_out_of_reach_is_refused_and_the_next_capture_is_taken(job, capsys):
    """A start step no job reaches (2**53, the largest a request may name) is refused, whether its writer
    says it saw a step far behind it (refused as read) or claims one just before it (refused by the rank,
    which knows its own step): taken, it would have held the job "busy" and every later capture refused."""
    job.step(5)
    behind = request(2 ** 53, seen_step=0)
    write_request(job.run, json.dumps(behind).encode())
    s = wait_for(lambda: (s := status(job.run)) and "out of reach" in s["message"] and s, "the far start refused")
    assert s["state"] == "refused" and f"start_step {2 ** 53} is not within 1048576 steps after" in s["message"]
    claimed = request(2 ** 53, seen_step=2 ** 53 - 10)
    write_request(job.run, json.dumps(claimed).encode())
    s = job.read(claimed["id"])
    assert s["state"] == "refused" and s["message"].startswith(f"starts at step {2 ** 53}, more than 1048576 steps "
                                                               "after this rank's step"), s
    good = request(job.steps + 40)
    write_request(job.run, json.dumps(good).encode())
    assert job.read(good["id"])["state"] == "scheduled"
    job.step_until(lambda: job.state(good["id"]) == "written", "the next capture", limit=200)


def test_requests_are_rate_limited(tmp_path):
    job = Job(tmp_path / "run", min_interval_s=3600)
    try:
        wait_for(lambda: status(job.run), "the first heartbeat")
        first = request(job.steps + 5, steps=1)
        write_request(job.run, json.dumps(first).encode())
        job.read(first["id"])
        job.step_until(lambda: job.state(first["id"]) == "written", "the first capture", limit=2000)
        again = request(job.steps + 5, steps=1)
        write_request(job.run, json.dumps(again).encode())
        s = job.read(again["id"])
        assert s["state"] == "refused" and "rate limited: one capture per 3600 s" in s["message"]
        with pytest.raises(CaptureBusy, match="one capture per 3600 s"):  # the writer says so before writing
            ask(Target(job.run, ON_DEMAND), {"steps": 1}, "cli")
        assert len(manifests(job.run)) == 1
    finally:
        job.prof.stop()


def test_a_request_left_from_before_the_job_started_is_not_acted_upon(tmp_path):
    run = tmp_path / "run"
    old = request(5, created_ns=1)
    write_request(str(run), json.dumps(old).encode())
    job = Job(run)
    try:
        job.step(60)
        wait_for(lambda: (status(job.run) or {}).get("step", 0) >= 40, "a heartbeat past step 5")
        assert status(job.run)["request"] is None and manifests(job.run) == []
    finally:
        job.prof.stop()
    assert status(job.run)["watching"] is False  # the last status says the rank stopped watching


def test_a_job_without_on_demand_writes_nothing_when_asked(tmp_path):
    run = str(tmp_path / "plain")
    write_request(run, json.dumps(request(3)).encode())
    before = sorted(os.listdir(os.path.join(run, ".canning-capture")))
    with ps.Profile(activities=[ps.ProfilerActivity.CPU], schedule=ps.schedule(wait=1000, warmup=1, active=1),
                    on_trace_ready=ps.tensorboard_trace_handler(run)) as prof:
        for _ in range(30):
            (X @ X).sum()
            prof.step()
    assert window_files(run) == [] and sorted(os.listdir(os.path.join(run, ".canning-capture"))) == before


def test_on_demand_needs_a_folder_to_watch():
    with pytest.raises(ValueError, match="watches the run folder"):
        ps.Profile(activities=[ps.ProfilerActivity.CPU], schedule=ps.on_demand())
    with pytest.raises(ValueError, match="max_steps"):
        ps.on_demand(max_steps=51)


def test_a_capture_folder_that_is_a_link_out_is_not_written_through(tmp_path):
    """`<run>/.canning-capture` made a link to a folder outside the run (by whoever can write the logdir):
    the request is refused, nothing lands outside; a real folder takes it."""
    from canning_tb.capture.files import REQUEST_FILE, CaptureFolder
    from canning_tb.util.safe_files import Refused
    outside, run = tmp_path / "outside", tmp_path / "logdir" / "run"
    outside.mkdir()
    run.mkdir(parents=True)
    (run / ".canning-capture").symlink_to(outside, target_is_directory=True)
    with pytest.raises(Refused, match="link"):
        CaptureFolder(str(run)).write(REQUEST_FILE, b"{}")
    assert list(outside.iterdir()) == []
    (run / ".canning-capture").unlink()
    CaptureFolder(str(run)).write(REQUEST_FILE, b"{}")
    assert (run / ".canning-capture" / REQUEST_FILE).read_bytes() == b"{}"
    assert [p.name for p in (run / ".canning-capture").iterdir()] == [REQUEST_FILE]  # no temporary left
