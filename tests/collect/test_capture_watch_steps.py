"""capture/watch.py's Watcher driven one call at a time (no thread, a clock set by hand): which request it takes,
which it refuses and the words of each, what the status file says, the rate it measures, and the trigger's
request written or not (issue 46: fast tests for a mutation run over watch.py; the job's tests run it in a
real profiler's thread). Every expected line is worked out here from the module's doc."""
import json
import os
from types import SimpleNamespace

import pytest
from _capture import request

from canning_tb.capture import request as cr
from canning_tb.capture import watch

T0, NS0 = 1_000.0, 5_000_000_000_000  # monotonic seconds; time_ns at the watcher's start
TRIGGER = {"kind": "slow", "step": 7, "step_ns": 81_000_000, "median_ns": 34_000_000, "reason": "step 7 was slow"}


class Clock:
    def __init__(self):
        self.t, self.ns = T0, NS0

    def monotonic(self):
        return self.t

    def time_ns(self):
        return self.ns


@pytest.fixture
def w(tmp_path, monkeypatch):
    """Rank 1 of 4, polls of 0.5 s, heartbeats of 2 s, one capture per 60 s, 10 steps at most."""
    clock = Clock()
    monkeypatch.setattr(watch, "time", clock)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "4")
    os.makedirs(tmp_path / "run" / ".canning-capture")
    sched = SimpleNamespace(poll_s=0.5, heartbeat_s=2.0, min_interval_s=60.0, max_steps=10, trigger=None)
    watcher = watch.Watcher(str(tmp_path / "run"), sched, "gloo")
    watcher.clock = clock
    return watcher


def put(w, start, steps=3, ident="0123456789abcdef", **fields) -> dict:
    """A request written to the run folder now (after the watcher started unless created_ns is given)."""
    body = request(start, steps=steps, id=ident, created_ns=fields.pop("created_ns", NS0 + 1), **fields)
    with open(os.path.join(w.folder.path, "request.json"), "w") as f:
        json.dump(body, f)
    return body


def state(w) -> tuple:
    return w._status["state"], w._status["message"]


def said(capsys) -> list:
    return [line for line in capsys.readouterr().err.splitlines() if line]


def test_a_request_is_taken_once_and_its_words_said(w, capsys):
    w._poll()
    assert state(w) == ("idle", "watching for a capture request") and w.plan is None
    w.step = 5
    put(w, 20, activities=["CPU"], record_shapes=True, with_stack=True)
    w._poll()
    assert w.plan["id"] == "0123456789abcdef" and state(w) == ("scheduled", "steps 20-22 scheduled (read at step 5)")
    assert {k: w._status[k] for k in ("request", "start_step", "end_step", "windows")} == {
        "request": "0123456789abcdef", "start_step": 20, "end_step": 22, "windows": []}
    assert said(capsys) == ["canning: capture: request 0123456789abcdef from cli: steps 20-22 on rank 1 (CPU; "
                            "record_shapes, with_stack); now at step 5"]
    w.plan = None
    w._poll()  # the same file again: nothing new
    assert w.plan is None and said(capsys) == []


def test_the_job_activities_and_no_options_are_said_so(w, capsys):
    put(w, 20)
    w._poll()
    assert said(capsys)[-1].endswith("steps 20-22 on rank 1 (the job activities; no options); now at step 0")


def test_a_request_left_by_an_earlier_run_is_not_acted_upon(w, capsys):
    put(w, 20, created_ns=NS0 - 1)
    w._poll()
    assert w.plan is None and state(w)[0] == "idle"
    assert said(capsys) == ["canning: capture: request 0123456789abcdef was there before this process started: "
                            "not acted upon"]
    put(w, 20, ident="1123456789abcdef", created_ns=NS0 - 1)  # read after the first read: a new request
    w._poll()
    assert w.plan["id"] == "1123456789abcdef"


def test_a_request_written_at_the_watchers_start_is_taken(w):
    put(w, 20, created_ns=NS0)
    w._poll()
    assert w.plan is not None


def test_a_bad_request_is_refused_once(w, capsys):
    with open(os.path.join(w.folder.path, "request.json"), "w") as f:
        f.write("[1]")
    w._poll()
    assert state(w) == ("refused", "request refused: the request must be a JSON object")
    assert w._status["request"] is None
    w._poll()
    assert said(capsys) == ["canning: capture: request refused: the request must be a JSON object; training goes on"]


def test_a_fifo_for_the_request_is_refused_and_polling_goes_on(w, capsys):
    os.mkfifo(os.path.join(w.folder.path, "request.json"))
    w._poll()
    assert state(w)[0] == "refused" and state(w)[1].startswith("request refused: request.json: ")
    assert "not a regular file" in state(w)[1]
    w._poll()
    assert len(said(capsys)) == 1


def test_a_request_for_other_ranks(w):
    put(w, 20, ranks=[0, 2])
    w._poll()
    assert w.plan is None and state(w) == ("not_selected", "rank 1 was not asked")


@pytest.mark.parametrize("step, taken", [(18, True), (19, False)])
def test_a_request_read_at_its_warm_up_step_is_missed(w, capsys, step, taken):
    w.step = step
    put(w, 20)
    w._poll()
    assert (w.plan is not None) is taken
    if not taken:
        assert state(w) == ("missed", "read at step 19, too late for steps 20-22")
        assert said(capsys) == ["canning: capture: request 0123456789abcdef from cli read at step 19, too late for "
                                "steps 20-22"]


def test_refusals_and_their_words(w, capsys):
    w.step = 100
    far = 100 + cr.MAX_LEAD_STEPS
    put(w, far + 1, seen_step=far + 1)
    w._poll()
    assert state(w) == ("refused", f"starts at step {far + 1}, more than 1048576 steps after this rank's step 100: "
                                   "out of reach")
    assert said(capsys)[-1] == (f"canning: capture: request 0123456789abcdef from cli refused: starts at step "
                                f"{far + 1}, more than 1048576 steps after this rank's step 100: out of reach")
    put(w, 200, steps=11, ident="1123456789abcdef")
    w._poll()
    assert state(w) == ("refused", "11 steps asked; this job records at most 10 per capture")
    put(w, far, steps=10, ident="2123456789abcdef", seen_step=far)
    w._poll()
    assert w.plan["id"] == "2123456789abcdef"  # the furthest start and the most steps are taken
    put(w, 300, ident="3123456789abcdef")
    w._poll()
    assert state(w)[0] == "refused" and w.plan["id"] == "2123456789abcdef"
    assert w._status["message"] == (f"busy: capture 2123456789abcdef (steps {far}-{far + 9} scheduled (read at step "
                                    "100)) is not finished")  # the capture in progress named, not the one refused


def test_a_recording_rank_is_busy_without_a_plan(w):
    w.began(request(20, id="0123456789abcdef"), 19)
    w.plan = None
    put(w, 30, ident="1123456789abcdef")
    w._poll()
    assert state(w) == ("refused", "busy: capture 0123456789abcdef (recording steps 20-22 (warm-up at step 19)) is "
                                   "not finished")


def test_one_capture_per_min_interval(w):
    assert w.held() is None
    put(w, 20)
    w._poll()
    w.ended(w.plan, ["a.json"])
    w.clock.t = T0 + 30
    assert w.held() == (T0, "the job accepts one capture per 60 s (min_interval_s); the next in 30 s")
    w.clock.t = T0 + 59.4
    put(w, 30, ident="1123456789abcdef")
    w._poll()
    assert state(w) == ("refused", "rate limited: one capture per 60 s; the next in 1 s")
    w.clock.t = T0 + 60
    assert w.held() is None
    put(w, 40, ident="2123456789abcdef")
    w._poll()
    assert w.plan["id"] == "2123456789abcdef"


def test_what_the_training_thread_reports(w, capsys):
    plan = request(20, id="0123456789abcdef")
    w.plan = plan
    w.began(plan, 19)
    assert state(w) == ("recording", "recording steps 20-22 (warm-up at step 19)")
    w.missed(plan, 25)
    assert w.plan is None and state(w) == ("missed", "reached step 25 before the capture could start at step 20")
    w.plan = plan
    w.ended(plan, ["w1.json", "w2.json"])
    assert w.plan is None and state(w) == ("written", "wrote steps 20-22") and w._status["windows"] == ["w1.json",
                                                                                                       "w2.json"]
    w.ended(plan, [])
    assert state(w) == ("failed", "the handler wrote no window (see the warnings above)")
    w.ended(plan, ["w1.json"], error="disk full")
    assert state(w) == ("failed", "disk full") and w._status["windows"] == ["w1.json"]
    assert said(capsys) == [
        "canning: capture: request 0123456789abcdef: reached step 25 before the capture could start at step 20; "
        "nothing recorded",
        "canning: capture: request 0123456789abcdef: wrote steps 20-22: w1.json, w2.json",
        "canning: capture: request 0123456789abcdef: failed: the handler wrote no window (see the warnings above)",
        "canning: capture: request 0123456789abcdef: failed: disk full"]


def test_an_ended_capture_measures_the_run_again_only_with_a_trigger(w):
    w._measure = False
    w.ended(request(20, id="0123456789abcdef"), ["a"])
    assert w._measure is False
    w.sched.trigger = object()
    w.ended(request(20, id="0123456789abcdef"), ["a"])
    assert w._measure is True
    with open(os.path.join(w.folder.run_folder, "a.pt.trace.json"), "wb") as f:
        f.write(b"x" * 321)
    w._measure_bytes()
    assert w.run_bytes == 321


def status_file(w) -> dict:
    with open(os.path.join(w.folder.path, "rank1.status.json")) as f:
        return json.load(f)


def test_the_status_file_and_the_step_rate(w):
    w.clock.t, w.clock.ns, w.step = T0 + 0.5, NS0 + 7, 0
    w._beat(w.clock.t)
    got = status_file(w)
    assert {k: v for k, v in got.items() if k not in ("host", "pid")} == {
        "format": "canning-capture-status", "rank": 1, "world_size": 4, "time_ns": NS0 + 7, "step": 0,
        "steps_per_s": None, "poll_s": 0.5, "cycle_s": 0.0, "heartbeat_s": 2.0, "min_interval_s": 60.0,
        "max_steps": 10, "backend": "gloo", "watching": True, "watch_since_ns": NS0, "request": None,
        "state": "idle", "message": "watching for a capture request", "start_step": None, "end_step": None,
        "windows": []}
    assert got["pid"] == os.getpid() and cr.parse_status(json.dumps(got).encode())["rank"] == 1
    w.step = 3  # the first steps: a rate at once, 3 steps in 0.5 s
    w._beat(T0 + 0.5)
    assert status_file(w)["steps_per_s"] == 6.0
    w.step = 5  # within a second of the sample: no new rate
    w._beat(T0 + 1.0)
    assert status_file(w)["steps_per_s"] == 6.0
    w._beat(T0 + 1.5)  # 2 steps in 1 s, a pause: the rate decays to half, not to the pause's
    assert status_file(w)["steps_per_s"] == 3.0
    w.step = 25
    w._beat(T0 + 2.5)  # 20 steps in 1 s
    assert status_file(w)["steps_per_s"] == 20.0
    w._beat(T0 + 3.0, watching=False)
    assert status_file(w)["watching"] is False


def test_the_poll_cycle_is_a_slowly_decaying_maximum(w):
    for t in (0.0, 0.5, 3.0, 3.5):
        w.clock.t = T0 + t
        w._poll()
    assert w._cycle_s == 2.5 * 0.9  # 0.5, then 2.5, then max(0.5, 2.25)
    w._beat(T0 + 3.5)
    assert status_file(w)["cycle_s"] == 2.25


def test_a_failing_read_or_write_is_said_once_per_streak(w, capsys, monkeypatch):
    def fail(*a, **k):
        raise PermissionError(13, "Permission denied")

    read, write = w.folder.read, w.folder.write
    monkeypatch.setattr(w.folder, "read", fail)
    w._poll()
    w._poll()
    monkeypatch.setattr(w.folder, "write", fail)
    w._beat(T0)
    w._beat(T0)
    lines = said(capsys)
    run = w.folder.run_folder
    assert lines == [f"canning: capture: cannot read request.json: [Errno 13] Permission denied (in {run}); "
                     "training goes on, the watch retries",
                     "canning: capture: cannot write rank1.status.json: PermissionError: [Errno 13] Permission "
                     f"denied (in {run}); training goes on, the watch retries"]
    monkeypatch.setattr(w.folder, "read", read)  # the storage back: the streak ends, a new failure is said again
    monkeypatch.setattr(w.folder, "write", write)
    w._poll()
    w._beat(T0)
    assert w._failing == set()
    monkeypatch.setattr(w.folder, "read", fail)
    w._poll()
    assert said(capsys) == [lines[0]]


def live_status(rank: int, **fields) -> dict:
    return cr.status_dict(**{"rank": rank, "world_size": 4, "host": "h", "pid": 1, "time_ns": NS0, "step": 50,
                             "steps_per_s": 10.0, "poll_s": 0.5, "cycle_s": 0.25, "heartbeat_s": 2.0,
                             "min_interval_s": 60.0, "max_steps": 10, "backend": "gloo", "watching": True,
                             "watch_since_ns": 0, "request": None, "state": "idle", "message": "", "start_step": None,
                             "end_step": None, "windows": [], **fields})


def test_a_trigger_writes_a_request_for_every_rank(w, capsys):
    with open(os.path.join(w.folder.path, "rank0.status.json"), "w") as f:
        json.dump(live_status(0), f)
    w.ask(TRIGGER, 4, 40, 0.1)
    assert w.asked == (TRIGGER, 4, 40, 0.1) and w._wake.is_set()
    w._write_asked()
    assert w.asked is None
    with open(os.path.join(w.folder.path, "request.json")) as f:
        written = cr.parse_request(f.read().encode())
    # seen: rank 0's step 50; lead: 2 x 0.5 s polls + 2 s of slack = 3 s, at 0.1 s a step: 30 steps
    assert {k: written[k] for k in ("by", "start_step", "seen_step", "steps", "ranks", "trigger", "created_ns")} == {
        "by": "trigger", "start_step": 80, "seen_step": 50, "steps": 4, "ranks": "all", "trigger": TRIGGER,
        "created_ns": NS0}
    assert said(capsys) == [f"canning: capture: trigger: step 7 was slow: asked steps 80-83 on every rank (request "
                            f"{written['id']})"]
    w.ask(TRIGGER, 4, 41, 0.1)  # another trigger while that one is not done: this rank follows it
    w._write_asked()
    assert said(capsys) == [f"canning: capture: trigger: step 7 was slow; another rank's trigger asked already: this "
                            f"rank follows request {written['id']}"]


def test_a_trigger_behind_a_persons_capture_asks_nothing(w, capsys):
    put(w, 20)
    with open(os.path.join(w.folder.path, "rank0.status.json"), "w") as f:
        json.dump(live_status(0, request="0123456789abcdef", state="scheduled", start_step=20, end_step=22), f)
    w.ask(TRIGGER, 4, 10, 0.1)
    w._write_asked()
    (line,) = said(capsys)
    assert line.startswith("canning: capture: trigger: step 7 was slow; no capture asked: a capture is in progress")
    with open(os.path.join(w.folder.path, "request.json")) as f:
        assert json.load(f)["id"] == "0123456789abcdef"


def test_a_trigger_that_cannot_write_says_why(w, capsys, monkeypatch):
    def fail(*a):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(w.folder, "write", fail)
    w.ask(TRIGGER, 4, 10, 0.1)
    w._write_asked()
    assert said(capsys) == ["canning: capture: trigger: step 7 was slow; could not ask for a capture: PermissionError: "
                            "[Errno 13] Permission denied"]


def trig(start: int, ident: str) -> dict:
    return cr.parse_request(json.dumps(request(start, id=ident, by="trigger", trigger=TRIGGER)).encode())


@pytest.mark.parametrize("step, replaced", [(18, True), (19, False)])
def test_two_ranks_triggers_fired_together_the_file_kept_one(w, capsys, step, replaced):
    own, kept = trig(20, "0123456789abcdef"), trig(21, "1123456789abcdef")
    w._decide(own)
    w.step = step  # replaced only before the warm-up step of the earlier start (19)
    w._decide(kept)
    lines = said(capsys)
    if replaced:
        assert w.plan is kept and w._status["request"] == kept["id"] and w._status["state"] == "scheduled"
        assert w._status["message"] == (f"steps 21-23 scheduled (read at step {step}; it replaces 0123456789abcdef, "
                                        "asked at the same time by another rank)")
        assert lines[-1] == ("canning: capture: request 1123456789abcdef from trigger: steps 21-23 replaces request "
                             "0123456789abcdef (both ranks' triggers fired together; the run folder kept this one); "
                             f"now at step {step}")
    else:
        assert w.plan is own and w._status["state"] == "refused" and w._status["request"] == kept["id"]


@pytest.mark.parametrize("first, second, recording", [
    (request(20, id="0123456789abcdef"), "trigger", False),  # a person's plan: a trigger's request does not replace it
    ("trigger", request(21, id="1123456789abcdef"), False),  # a person's request does not replace a trigger's plan
    ("trigger", "trigger", True)])  # a plan recording already is kept
def test_only_a_scheduled_triggers_plan_gives_way_to_a_triggers_request(w, first, second, recording):
    first = trig(20, "0123456789abcdef") if first == "trigger" else cr.parse_request(json.dumps(first).encode())
    second = trig(21, "1123456789abcdef") if second == "trigger" else cr.parse_request(json.dumps(second).encode())
    w._decide(first)
    if recording:
        w.began(first, 10)
    w._decide(second)
    assert w.plan is first and w._status["state"] == "refused"


def test_a_trigger_after_its_own_capture_is_written_waits_for_the_rate_limit(w, capsys):
    done = put(w, 20, by="trigger", trigger=TRIGGER)
    w._poll()
    w.ended(w.plan, ["a.json"])
    with open(os.path.join(w.folder.path, "rank0.status.json"), "w") as f:
        json.dump(live_status(0, request=done["id"], state="written", start_step=20, end_step=22), f)
    capsys.readouterr()
    w.ask(TRIGGER, 4, 40, 0.1)
    w._write_asked()  # this rank's capture is written: not one to follow, and the limit holds the next
    (line,) = said(capsys)
    assert line.startswith("canning: capture: trigger: step 7 was slow; no capture asked: this job accepts one "
                           "capture per 60 s; ask again in ")


def test_a_trigger_replaces_an_unusable_request_file(w, capsys):
    with open(os.path.join(w.folder.path, "request.json"), "w") as f:
        f.write("{")
    w.ask(TRIGGER, 4, 40, 0.1)
    w._write_asked()
    with open(os.path.join(w.folder.path, "request.json")) as f:
        assert cr.parse_request(f.read().encode())["by"] == "trigger"
    assert "asked steps" in said(capsys)[-1]


def test_the_status_names_the_request_of_each_outcome(w):
    plan = request(20, id="0123456789abcdef")
    for act in (lambda: w.missed(plan, 25), lambda: w.ended(plan, ["a"]), lambda: w.ended(plan, [])):
        w._status["request"] = None
        act()
        assert (w._status["request"], w._status["start_step"], w._status["end_step"]) == ("0123456789abcdef", 20, 22)
    for ranks, step, outcome in (([0], 0, "not_selected"), ("all", 19, "missed"), ("all", 0, "refused")):
        w._status["request"], w.step = None, step
        w.plan = {"id": "f"} if outcome == "refused" else None
        ident = f"{len(w._handled):016x}"
        put(w, 20, ident=ident, ranks=ranks)
        w._poll()
        assert (w._status["state"], w._status["request"]) == (outcome, ident)


def test_a_request_naming_this_rank_is_taken(w, capsys):
    put(w, 20, ranks=[1], activities=["CPU", "CUDA"])
    w._poll()
    assert w.plan is not None and said(capsys)[-1].endswith("on rank 1 (CPU/CUDA; no options); now at step 0")


def test_a_request_rewritten_with_the_same_id_is_not_decided_again(w):
    put(w, 20)
    w._poll()
    w.plan = None
    put(w, 25)  # other bytes, the same id
    w._poll()
    assert w.plan is None and w._status["start_step"] == 20


def test_two_different_unreadable_request_files_are_each_said(w, capsys):
    path = os.path.join(w.folder.path, "request.json")
    os.mkfifo(path)
    w._poll()
    os.remove(path)
    os.mkdir(path)
    w._poll()
    lines = said(capsys)
    assert lines == ["canning: capture: request refused: request.json: a FIFO, not a regular file; training goes on",
                     "canning: capture: request refused: request.json: a folder, not a regular file; training goes on"]


def test_the_run_bytes_are_measured_first_only_with_a_trigger(tmp_path):
    os.makedirs(tmp_path / "run")
    sched = SimpleNamespace(poll_s=0.5, heartbeat_s=2.0, min_interval_s=60.0, max_steps=10, trigger=None)
    assert watch.Watcher(str(tmp_path / "run"), sched, "gloo")._measure is False
    sched.trigger = object()
    assert watch.Watcher(str(tmp_path / "run"), sched, "gloo")._measure is True
    assert watch.Watcher(str(tmp_path / "run"), SimpleNamespace(), "gloo")._measure is False


def test_run_bytes_that_cannot_be_measured_are_unknown(w, monkeypatch):
    w.run_bytes = 5

    def fail(*a):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(w.folder, "window_bytes", fail)
    w._measure_bytes()
    assert w.run_bytes is None


def test_the_rate_limit_rounds_its_wait_and_a_beat_clears_the_change(w):
    put(w, 20)
    w._poll()
    w.clock.t = T0 + 59.4
    assert w.held() == (T0, "the job accepts one capture per 60 s (min_interval_s); the next in 1 s")
    assert w._dirty is True
    w._beat(w.clock.t)
    assert w._dirty is False
    w._last_poll, w._cycle_s = T0, 0.0
    w.clock.t = T0 + 0.123456
    w._poll()
    w._beat(w.clock.t)
    assert status_file(w)["cycle_s"] == 0.1235


def test_a_new_watcher_has_asked_nothing_and_measured_nothing(w):
    assert (w.plan, w.asked, w.run_bytes, w._dirty, w._thread) == (None, None, None, True, None)


def test_the_thread_starts_once_and_says_it_stopped_watching(w, monkeypatch):
    import threading
    beats, first = [], threading.Event()
    beat = w._beat

    def noted(now, watching=True):
        beats.append(watching)
        beat(now, watching)
        first.set()

    monkeypatch.setattr(w, "_beat", noted)
    w.sched.trigger = object()
    w._measure = True
    w.start()
    thread = w._thread
    w.start()
    assert w._thread is thread and thread.is_alive() and thread.daemon  # a job's exit never waits for it
    assert thread.name == "canning-capture-watch"
    assert first.wait(30)  # the loop's first turn: its status written (an event, not a timer: 30 s is a fail-safe)
    w.stop()  # wakes the thread, which writes a last status and ends
    assert w._thread is None and not thread.is_alive() and status_file(w)["watching"] is False
    assert beats[0] is True and beats[-1] is False
    assert w._measure is False and w.run_bytes == 0  # measured once at the first turn (a run without windows)


def test_a_trigger_follows_another_ranks_request_after_this_ranks_last_capture(w, capsys):
    w.ended(request(5, id="0123456789abcdef"), ["a.json"])  # this rank's last capture: written
    other = put(w, 80, ident="1123456789abcdef", by="trigger", trigger=TRIGGER)  # another rank's, not read yet
    with open(os.path.join(w.folder.path, "rank0.status.json"), "w") as f:
        json.dump(live_status(0, request=other["id"], state="scheduled", start_step=80, end_step=82), f)
    capsys.readouterr()
    w.ask(TRIGGER, 4, 40, 0.1)
    w._write_asked()
    assert said(capsys) == ["canning: capture: trigger: step 7 was slow; another rank's trigger asked already: this "
                            "rank follows request 1123456789abcdef"]
