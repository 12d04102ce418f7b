"""A backend-neutral schedule with torch.profiler.schedule's semantics.

torch and torch_npu each compare schedule results with their own ProfilerAction enum, so our Schedule
returns action *names*; collect/backend.py adapts it to the backend's enum. Keeping the parameters
lets the handler know which steps a window covered without parsing the trace.
"""
import warnings

NONE, WARMUP, RECORD, RECORD_AND_SAVE = "NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE"
RECORDING = (RECORD, RECORD_AND_SAVE)


class Schedule:
    def __init__(self, *, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
                 skip_first_wait: int = 0):
        if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
            raise ValueError(f"invalid schedule: wait={wait} (>= 0), warmup={warmup} (>= 0), active={active} (> 0), "
                             f"repeat={repeat} (>= 0), skip_first={skip_first} (>= 0)")
        if warmup == 0:
            warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=3)
        self.wait, self.warmup, self.active = wait, warmup, active
        self.repeat, self.skip_first, self.skip_first_wait = repeat, skip_first, skip_first_wait

    def action(self, step: int) -> str:
        if step < 0:
            raise ValueError(f"step must be >= 0, got {step}")
        if step < self.skip_first:
            return NONE
        step -= self.skip_first
        if self.skip_first_wait:  # the first cycle starts without its wait
            step += self.wait
        cycle = self.wait + self.warmup + self.active
        if self.repeat > 0 and step // cycle >= self.repeat:
            return NONE
        mod = step % cycle
        if mod < self.wait:
            return NONE
        if mod < self.wait + self.warmup:
            return WARMUP
        return RECORD if mod < cycle - 1 else RECORD_AND_SAVE

    __call__ = action

    def as_dict(self) -> dict:
        return {"wait": self.wait, "warmup": self.warmup, "active": self.active, "repeat": self.repeat,
                "skip_first": self.skip_first, "skip_first_wait": self.skip_first_wait}

    def __repr__(self) -> str:
        return "schedule(" + ", ".join(f"{k}={v}" for k, v in self.as_dict().items()) + ")"


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Schedule:
    """Same arguments and meaning as torch.profiler.schedule."""
    return Schedule(wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip_first,
                    skip_first_wait=skip_first_wait)


def action_name(sched, step: int):
    """The action name of any schedule callable (ours, torch's, torch_npu's) at a step; None if it fails."""
    try:
        a = sched(step)
    except Exception:
        return None
    return a if isinstance(a, str) else getattr(a, "name", None)


def recorded_steps(sched, step_num: int) -> list:
    """Steps of the window that just ended, given the profiler's step_num when on_trace_ready ran.

    After step() the profiler has already moved to the next step, so the window ends at step_num - 1;
    after stop() in the middle of a recording, it ends at step_num itself.
    """
    if sched is None:
        return list(range(step_num + 1))  # no schedule: every step since start was recorded
    last = step_num if action_name(sched, step_num) in RECORDING else step_num - 1
    steps = []
    s = last
    while s >= 0 and action_name(sched, s) in RECORDING:
        steps.append(s)
        s -= 1
        if steps and action_name(sched, s) == RECORD_AND_SAVE:
            break  # warmup=0 and wait=0: the previous window ended right before
    return steps[::-1]


class OnDemand:
    """`ps.on_demand()`: a schedule that records nothing until a capture request asks for steps.

    The profile watches `<dir>/.canning-capture/` (dir: the handler's run folder, unless given) for a
    request (capture_request.py) from TensorBoard's Capture action or `canning-prof capture`, and for
    the capture it builds a profiler with the request's options; steps are numbered from the profile's
    start, the same on every rank, so every rank that was asked records the same steps. Between
    captures no profiler runs: prof.step() costs a counter and two attribute reads.
    poll_s: how often the request file is read (in a background thread; the step never waits);
    heartbeat_s: how often this rank writes its status (step, rate) for the writer to plan a start;
    min_interval_s: at most one capture accepted per this many seconds (requests are rate-limited);
    max_steps: the most steps one capture may record (at most capture_request.MAX_STEPS);
    trigger: ps.when_slow(...), ps.when_every(...) or ps.when(...): the job asks for captures itself (trigger.py).
    """

    def __init__(self, dir=None, *, poll_s: float = 2.0, heartbeat_s: float = 10.0, min_interval_s: float = 30.0,
                 max_steps: int | None = None, trigger=None):
        from canning_tb.capture.request import MAX_STEPS
        if not 0.01 <= poll_s <= 600 or not 0.05 <= heartbeat_s <= 3600 or not 0 <= min_interval_s <= 86400:
            raise ValueError(f"on_demand: poll_s={poll_s} (0.01..600 s), heartbeat_s={heartbeat_s} (0.05..3600 s), "
                             f"min_interval_s={min_interval_s} (0..86400 s)")
        max_steps = MAX_STEPS if max_steps is None else max_steps
        if not 1 <= max_steps <= MAX_STEPS:
            raise ValueError(f"on_demand: max_steps={max_steps} must be 1..{MAX_STEPS}")
        self.dir = None if dir is None else str(dir)
        self.poll_s, self.heartbeat_s, self.min_interval_s = float(poll_s), float(heartbeat_s), float(min_interval_s)
        self.max_steps = max_steps
        if trigger is not None and not hasattr(trigger, "check"):
            raise ValueError("on_demand: trigger must be ps.when_slow(...), ps.when_every(...) or ps.when(...)")
        if trigger is not None and trigger.steps > max_steps:
            raise ValueError(f"on_demand: the trigger asks for {trigger.steps} steps, over max_steps={max_steps}")
        self.trigger = trigger
        self.window = None  # (first step, steps, request id) of the capture being recorded, or of the last one

    def action(self, step: int) -> str:
        if step < 0:
            raise ValueError(f"step must be >= 0, got {step}")
        if self.window is None:
            return NONE
        first, steps, _ = self.window
        if step == first - 1:
            return WARMUP
        if first <= step < first + steps - 1:
            return RECORD
        return RECORD_AND_SAVE if step == first + steps - 1 else NONE

    __call__ = action

    def as_dict(self) -> dict:
        out = {"on_demand": 1, "poll_s": self.poll_s, "heartbeat_s": self.heartbeat_s,
               "min_interval_s": self.min_interval_s, "max_steps": self.max_steps}
        if self.trigger is not None:
            out["trigger"] = repr(self.trigger)
        if self.window is not None:
            out.update(start_step=self.window[0], steps=self.window[1])
        return out

    def __repr__(self) -> str:
        if self.window is None:
            return "on_demand()"
        first, steps, rid = self.window
        return f"on_demand(capture={rid}, steps {first}-{first + steps - 1})"


def on_demand(dir=None, *, poll_s: float = 2.0, heartbeat_s: float = 10.0, min_interval_s: float = 30.0,
              max_steps: int | None = None, trigger=None) -> OnDemand:
    """A schedule that profiles only when asked from TensorBoard (Capture), `canning-prof capture`, or by the
    job's own trigger (ps.when_slow(), ps.when_every(), ps.when())."""
    return OnDemand(dir, poll_s=poll_s, heartbeat_s=heartbeat_s, min_interval_s=min_interval_s, max_steps=max_steps,
                    trigger=trigger)
