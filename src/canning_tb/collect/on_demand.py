"""Profile(schedule=ps.on_demand()): no profiler runs until a capture request asks for steps.

The Driver counts the steps from start() (the numbers the ranks' statuses report and the requests name),
starts the Watcher (capture_watch.py) and, at each prof.step(), looks at the request it accepted: when the
step reaches the request's start step - 1 it builds a profiler with the request's options (activities,
record_shapes, ...) through the same backend choice as any profile, with the OnDemand schedule itself (one
warm-up step, then the steps asked for, numbered as the job counts them), and after the last step it
stops it. The window goes through the profile's on_trace_ready as every window does (manifest with rank
and world size, atomically, digest at the source); this rank's status then names it.

With a trigger (ps.on_demand(trigger=...), trigger.py) each prof.step() also reads time.perf_counter() and
gives the step's time to the trigger, between captures only (a profiled step is no normal one); when it
fires, the watch thread writes the request (no I/O in the step).
"""
from __future__ import annotations

from time import perf_counter

from canning_tb.capture.request import OPTIONS, end_step

from . import backend as _backend
from .activity import ProfilerActivity

# what each backend can record: an activity a request names outside it is dropped
_ALLOWED = {"torch": ("CPU", "CUDA"), "torch_npu": ("CPU", "NPU")}


class Driver:
    def __init__(self, profile, schedule, on_trace_ready):
        folder = schedule.dir or getattr(on_trace_ready, "dir_name", None)
        if not folder:
            raise ValueError("ps.on_demand() watches the run folder for capture requests: give it the folder, "
                             "ps.on_demand('./log/run1'), or use on_trace_ready=ps.tensorboard_trace_handler(dir)")
        self.prof, self.sched, self.folder = profile, schedule, str(folder)
        self.step = 0
        self.watch = None
        self.job_backend = None   # the profile's own backend choice, kept across captures
        self.capture = None       # the request being recorded
        self.windows: list[str] = []
        self.trigger = getattr(schedule, "trigger", None)
        self._t = None            # perf_counter() at the last prof.step() (None: the next interval is not timed)

    def start(self) -> None:
        from canning_tb.capture.watch import Watcher, say
        self.step = 0
        if self.job_backend is None:
            self.job_backend = self.prof._backend
        if self.watch is None:
            self.watch = Watcher(self.folder, self.sched, self.job_backend.name)
            say(f"ps.on_demand() watches {self.folder} for capture requests "
                f"(TensorBoard's Capture, or canning-prof capture --logdir ...)")
        self.watch.step = 0
        self.watch.start()
        self._t = perf_counter()

    def stop(self) -> None:
        if self.capture is not None:
            self.prof._end_step(self.step)
            self._finish()
        elif self.watch.plan is not None:  # accepted, not started: a restart counts steps from 0 again
            self.watch.missed(self.watch.plan, self.step)
        self.watch.stop()
        flush = getattr(self.prof.on_trace_ready, "canning_flush", None)
        if flush is not None:  # e.g. the uploads of a remote run folder: done when stop() returns
            flush()

    def on_step(self) -> None:
        """prof.step(): between captures a counter and two attribute reads, nothing else."""
        n = self.step = self.step + 1
        watch = self.watch
        watch.step = n
        if self.capture is not None:
            self._record_step(n)
            return
        plan = watch.plan
        if plan is not None:
            self._t = None  # a planned capture: no trigger meanwhile, nor for its warm-up step
            if n >= plan["start_step"] - 1:
                self._begin(plan, n)
            return
        trigger = self.trigger
        if trigger is not None:
            now, last = perf_counter(), self._t
            self._t = now
            if last is not None and watch.asked is None:
                fired = trigger.check(now - last, n - 1, watch.run_bytes, watch.held)  # the step that ended: n - 1
                if fired is not None:
                    watch.ask(fired, trigger.steps, n, now - last)

    def _record_step(self, n: int) -> None:
        prof = self.prof
        now = prof._end_step(n - 1)
        prof._steps[n] = [now, None]
        try:
            prof.profiler.step()  # the step after the last one: on_trace_ready writes the window
        except Exception as e:  # the profiler's failure ends this capture, never the training
            self._finish(f"the profiler failed at step {n}: {type(e).__name__}: {e}")
            return
        if n > end_step(self.capture):
            self._finish()

    def _begin(self, plan: dict, n: int) -> None:
        if n != plan["start_step"] - 1:  # the request was accepted just as the step went past it
            self.watch.missed(plan, n)
            return
        prof = self.prof
        try:
            self.sched.window = (plan["start_step"], plan["steps"], plan["id"])
            prof.capture_trigger = plan.get("trigger")  # the manifest says why the job asked
            prof._backend = self._backend_for(plan)
            prof.settings = {"activities": [a.name for a in prof._backend.activities], "schedule": repr(self.sched),
                             **{k: bool(plan[k]) for k in OPTIONS}}
            self.windows = []
            prof._begin_collection(n)
            align_steps(prof.profiler, n)
            prof.profiler.start()
        except Exception as e:  # e.g. the device is gone: said in the status and the job's output
            self.watch.ended(plan, [], f"could not start the profiler: {type(e).__name__}: {e}")
            return
        self.capture = plan
        self.watch.began(plan, n)

    def _backend_for(self, plan: dict):
        job = self.job_backend
        asked = [ProfilerActivity[a] for a in plan["activities"] if a in _ALLOWED.get(job.name, ("CPU",))]
        kwargs = {**self.prof._kwargs, **{k: plan[k] for k in OPTIONS}}
        return _backend.resolve(asked or list(job.activities), start_on_cpu=self.prof._start_on_cpu,
                                schedule=self.sched, **kwargs)

    def _finish(self, error: str | None = None) -> None:
        plan, self.capture = self.capture, None
        try:
            self.prof.profiler.stop()  # after the last step: nothing left; cut short: writes what it has
        except Exception as e:
            error = error or f"the profiler failed to stop: {type(e).__name__}: {e}"
        written = getattr(self.prof.on_trace_ready, "canning_wait_written", None)
        if written is not None:  # the handler writes in the background: the status names the windows written
            written()
        self.prof.capture_trigger = None
        if self.trigger is not None:
            self.trigger.captured(self.step)
        self._t = None  # this step held the profiler's stop and the window's writing: not a normal one
        self.watch.ended(plan, list(self.windows), error)


def align_steps(profiler, step: int) -> None:
    """Number the backend profiler's steps as the job counts them, from `step` (the warm-up step): its
    trace then says ProfilerStep#<step>..., as the manifest does. torch.profiler and torch_npu's profile
    both keep `step_num` and `current_action` and ask the schedule with step_num + 1 at each step()."""
    profiler.step_num = step
    profiler.current_action = profiler.schedule(step)
    if hasattr(profiler, "_prev_schedule_action"):  # torch >= 2.9 keeps the schedule's own answer too
        profiler._prev_schedule_action = profiler.current_action
