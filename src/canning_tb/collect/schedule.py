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
