"""The job's side of a capture (ps.on_demand()): a background thread that reads the run's capture request
and writes this rank's status; the training thread only reads `plan` and sets `step` at each prof.step().

The thread reads `<run>/.canning-capture/request.json` every poll_s and checks it (capture_request.py). A
request it accepts becomes `plan`: the profile starts its profiler when its step reaches the request's start
step - 1 (one warm-up step), so every rank asked records the same steps. What it refuses (malformed,
unknown keys, out of bounds, too soon after the last one, while a capture records) it says in this rank's
status and in the job's output (stderr), and the training goes on. The status is written every
heartbeat_s and at once after each change: the writer plans start steps from it, and people read it.
Nothing here opens a port or runs anything a request names.

A job's own trigger (ps.on_demand(trigger=...)) hands its request to this thread (`ask`): the thread writes
it as the Capture button would (unless a capture is in progress or the rate limit holds) and reads it back at
once, and the other ranks follow it through the run folder as any request. Two ranks that fire together both
write: the file keeps the last one, and a rank that planned the other one takes the file's instead, as long
as neither started recording (both start two polls and more ahead), so all record the same steps.
"""
from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time

from canning_tb.util.identity import dist_info

from . import request as cr
from .files import REQUEST_FILE, CaptureFolder, status_file


def say(message: str) -> None:
    """One line in the job's output: requests are logged where the job's owner looks."""
    print(f"canning: capture: {message}", file=sys.stderr, flush=True)


class Watcher:
    def __init__(self, folder: str, schedule, backend: str):
        self.folder = CaptureFolder(folder)
        self.sched = schedule
        self.backend = backend
        self.step = 0            # set by the training thread at each prof.step()
        self.plan = None         # the accepted request, read by the training thread at each prof.step()
        self.since_ns = time.time_ns()
        self._lock = threading.Lock()
        self._wake, self._stop = threading.Event(), threading.Event()
        self._thread = None
        self._status = {"request": None, "state": cr.IDLE, "message": "watching for a capture request",
                        "start_step": None, "end_step": None, "windows": []}
        self._dirty = True
        self._last_raw = None
        self._first_read = True
        self._handled = set()    # ids already decided on, so a request is acted on once
        self._last_accept = None  # time.monotonic() of the last accepted request
        self._rate = None
        self._cycle_s = 0.0      # seconds between two reads of the request, measured (slowly decaying maximum)
        self._last_poll = None
        self._sample = (0, time.monotonic())
        self._failing = set()    # what fails now (read, write): said once per streak
        self.asked = None        # (trigger, steps, step, step_s) handed over by the training thread's trigger
        self.run_bytes = None    # bytes of the run folder's windows (None: not measured yet, or cannot be)
        self._measure = getattr(schedule, "trigger", None) is not None  # measure run_bytes at the next turn

    # -- lifecycle (training thread) -------------------------------------------------------------
    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="canning-capture-watch", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Ends the thread after a last status that says this rank no longer watches."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stop.set()
            self._wake.set()
            thread.join(timeout=self.sched.poll_s + 5)

    # -- what the training thread reports --------------------------------------------------------
    def began(self, plan: dict, step: int) -> None:
        steps = f"{plan['start_step']}-{cr.end_step(plan)}"
        self._set(plan, cr.RECORDING, f"recording steps {steps} (warm-up at step {step})")

    def missed(self, plan: dict, step: int) -> None:
        self.plan = None
        message = f"reached step {step} before the capture could start at step {plan['start_step']}"
        self._set(plan, cr.MISSED, message)
        say(f"request {plan['id']}: {message}; nothing recorded")

    def ask(self, trigger: dict, steps: int, step: int, step_s: float) -> None:
        """The training thread's trigger fired: the thread writes the request (no I/O in the step)."""
        self.asked = (trigger, steps, step, step_s)
        self._wake.set()

    def held(self) -> tuple | None:
        """(key, why) while this rank would refuse a request for its rate limit (min_interval_s), else None:
        a trigger asks it before it asks for a capture (the key names the capture the limit counts from)."""
        last = self._last_accept
        wait = 0.0 if last is None else self.sched.min_interval_s - (time.monotonic() - last)
        if wait <= 0:
            return None
        return last, (f"the job accepts one capture per {self.sched.min_interval_s:g} s (min_interval_s); "
                      f"the next in {wait:.0f} s")

    def ended(self, plan: dict, windows: list, error: str | None = None) -> None:
        self.plan = None
        # the run holds more bytes now: a trigger's budget is checked against them
        self._measure = getattr(self.sched, "trigger", None) is not None
        if error or not windows:
            why = error or "the handler wrote no window (see the warnings above)"
            self._set(plan, cr.FAILED, why, windows)
            say(f"request {plan['id']}: failed: {why}")
            return
        self._set(plan, cr.WRITTEN, f"wrote steps {plan['start_step']}-{cr.end_step(plan)}", windows)
        say(f"request {plan['id']}: wrote steps {plan['start_step']}-{cr.end_step(plan)}: {', '.join(windows)}")

    def _set(self, request: dict | None, state: str, message: str, windows=()) -> None:
        with self._lock:
            self._status = {"request": request["id"] if request else None, "state": state, "message": message,
                            "start_step": request["start_step"] if request else None,
                            "end_step": cr.end_step(request) if request else None, "windows": list(windows)}
            self._dirty = True
        self._wake.set()

    # -- the thread --------------------------------------------------------------------------------
    def _run(self) -> None:
        next_beat = 0.0
        while not self._stop.is_set():
            if self.asked is not None:
                self._write_asked()
            if self._measure:
                self._measure = False
                self._measure_bytes()
            self._poll()
            now = time.monotonic()
            if self._rate is None and self.step > self._sample[0] and now - self._sample[1] >= 1.0:
                self._dirty = True  # the first step rate is known: say it now, the writer needs it to plan
            if self._dirty or now >= next_beat:
                self._beat(now)
                next_beat = now + self.sched.heartbeat_s
            self._wake.wait(max(0.0, min(self.sched.poll_s, next_beat - now)))
            self._wake.clear()
        self._beat(time.monotonic(), watching=False)

    def _write_asked(self) -> None:
        trigger, steps, step, step_s = self.asked
        self.asked = None
        try:
            statuses, _ = self.folder.statuses()
            try:
                previous = self.folder.request()
            except cr.RequestError:
                previous = None  # an unusable file is replaced, as the button does
            now = time.time_ns()
            why = cr.busy_reason(previous, statuses, now)
            follow = previous is not None and previous["by"] == "trigger" and not self._is_done(previous)
            if why is not None and follow:
                say(f"trigger: {trigger['reason']}; another rank's trigger asked already: this rank follows "
                    f"request {previous['id']}")
                return
            if why is not None:
                say(f"trigger: {trigger['reason']}; no capture asked: {why}")
                return
            request = cr.new_triggered_request(trigger, steps, step, step_s, statuses, now, self.sched.poll_s)
            self.folder.write(REQUEST_FILE, json.dumps(request).encode())
        except Exception as e:  # the storage's (or the plan's) failure: the training goes on
            say(f"trigger: {trigger['reason']}; could not ask for a capture: {type(e).__name__}: {e}")
            return
        say(f"trigger: {trigger['reason']}: asked steps {request['start_step']}-{cr.end_step(request)} "
            f"on every rank (request {request['id']})")

    def _is_done(self, request: dict) -> bool:
        return request["id"] in self._handled and self._status["request"] == request["id"] \
            and self._status["state"] in cr.TERMINAL

    def _measure_bytes(self) -> None:
        try:
            self.run_bytes = self.folder.window_bytes()
        except Exception:  # unknown stays unknown: the budget is not checked against a guess
            self.run_bytes = None

    def _poll(self) -> None:
        try:
            raw = self.folder.read(REQUEST_FILE, cr.MAX_REQUEST_BYTES)
            now = time.monotonic()
            if self._last_poll is not None:
                self._cycle_s = max(now - self._last_poll, self._cycle_s * 0.9)
            self._last_poll = now
            self._failing.discard("read")
        except cr.RequestError as e:  # e.g. not a regular file: refused once, as a bad request is
            raw = str(e).encode()
            problem = e
        except OSError as e:
            self._fail("read", f"cannot read {REQUEST_FILE}: {e}")
            return
        else:
            problem = None
        first, self._first_read = self._first_read, False
        if raw is None or raw == self._last_raw:
            return
        self._last_raw = raw
        try:
            if problem is not None:
                raise problem
            request = cr.parse_request(raw)
        except cr.RequestError as e:
            self._set(None, cr.REFUSED, f"request refused: {e}")
            say(f"request refused: {e}; training goes on")
            return
        if request["id"] in self._handled:
            return
        self._handled.add(request["id"])
        if first and request["created_ns"] < self.since_ns:  # left by an earlier run of the job
            say(f"request {request['id']} was there before this process started: not acted upon")
            return
        self._decide(request)

    def _decide(self, request: dict) -> None:
        rank = dist_info()[0]
        steps = f"steps {request['start_step']}-{cr.end_step(request)}"
        if not cr.targets(request, rank):
            self._set(request, cr.NOT_SELECTED, f"rank {rank} was not asked")
            return
        plan = self.plan
        if (plan is not None and "trigger" in plan and "trigger" in request
                and self._status["state"] == cr.SCHEDULED
                and self.step < min(plan["start_step"], request["start_step"]) - 1):
            # two ranks' triggers fired together: the request file keeps one, and every rank takes that one
            self.plan = request
            self._set(request, cr.SCHEDULED, f"{steps} scheduled (read at step {self.step}; it replaces "
                                             f"{plan['id']}, asked at the same time by another rank)")
            say(f"request {request['id']} from trigger: {steps} replaces request {plan['id']} (both ranks' "
                f"triggers fired together; the run folder kept this one); now at step {self.step}")
            return
        why = self._refusal(request)
        if why is None and self.step >= request["start_step"] - 1:
            self._set(request, cr.MISSED, f"read at step {self.step}, too late for {steps}")
            say(f"request {request['id']} from {request['by']} read at step {self.step}, too late for {steps}")
            return
        if why is not None:
            self._set(request, cr.REFUSED, why)
            say(f"request {request['id']} from {request['by']} refused: {why}")
            return
        self._last_accept = time.monotonic()
        self.plan = request
        options = ", ".join(k for k in cr.OPTIONS if request[k]) or "no options"
        self._set(request, cr.SCHEDULED, f"{steps} scheduled (read at step {self.step})")
        say(f"request {request['id']} from {request['by']}: {steps} on rank {rank} "
            f"({'/'.join(request['activities']) or 'the job activities'}; {options}); now at step {self.step}")

    def _refusal(self, request: dict) -> str | None:
        if self.plan is not None or self._status["state"] == cr.RECORDING:
            return f"busy: capture {self._status['request']} ({self._status['message']}) is not finished"
        if request["start_step"] - self.step > cr.MAX_LEAD_STEPS:  # taken, it would hold the job busy for good
            return (f"starts at step {request['start_step']}, more than {cr.MAX_LEAD_STEPS} steps after this rank's "
                    f"step {self.step}: out of reach")
        if request["steps"] > self.sched.max_steps:
            return f"{request['steps']} steps asked; this job records at most {self.sched.max_steps} per capture"
        if self._last_accept is not None:
            wait = self.sched.min_interval_s - (time.monotonic() - self._last_accept)
            if wait > 0:
                return f"rate limited: one capture per {self.sched.min_interval_s:g} s; the next in {wait:.0f} s"
        return None

    def _beat(self, now: float, watching: bool = True) -> None:
        step = self.step
        s0, t0 = self._sample
        if now - t0 >= min(1.0, self.sched.heartbeat_s) or self._rate is None and step > s0:
            measured = (step - s0) / max(now - t0, 1e-6)
            # a pause (a checkpoint, an evaluation) must not make the next plan too short: decay slowly
            self._rate = measured if self._rate is None else max(measured, self._rate * 0.5)
            self._sample = (step, now)
        with self._lock:
            fields, self._dirty = dict(self._status), False
        rank, world, _ = dist_info()
        body = cr.status_dict(rank=rank, world_size=world, host=socket.gethostname(), pid=os.getpid(),
                              time_ns=time.time_ns(), step=step, steps_per_s=self._rate, poll_s=self.sched.poll_s,
                              cycle_s=round(self._cycle_s, 4),
                              heartbeat_s=self.sched.heartbeat_s, min_interval_s=self.sched.min_interval_s,
                              max_steps=self.sched.max_steps, backend=self.backend, watching=watching,
                              watch_since_ns=self.since_ns, **fields)
        try:
            self.folder.write(status_file(rank), json.dumps(body).encode())
            self._failing.discard("write")
        except Exception as e:  # the storage's failure is this rank's, never the training's
            self._fail("write", f"cannot write {status_file(rank)}: {type(e).__name__}: {e}")

    def _fail(self, what: str, message: str) -> None:
        if what not in self._failing:
            self._failing.add(what)
            say(f"{message} (in {self.folder.run_folder}); training goes on, the watch retries")
