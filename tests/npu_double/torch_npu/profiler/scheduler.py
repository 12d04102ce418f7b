"""torch_npu's own ProfilerAction and Schedule (FAKE, see the package docstring).

Its profile looks the schedule's answer up in a dict keyed by THIS enum: torch's ProfilerAction
members match nothing there. skip_first_wait exists on the current branches only.
"""
from enum import Enum

from torch_npu import VERSION

from ._config import print_warn_msg


class ProfilerAction(Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


class _Schedule:
    def __init__(self, wait: int, active: int, warmup: int = 0, repeat: int = 0, skip_first: int = 0,
                 skip_first_wait: int = 0) -> None:
        self.wait, self.active, self.warmup = wait, active, warmup
        self.repeat, self.skip_first, self.skip_first_wait = repeat, skip_first, skip_first_wait
        if self.warmup == 0:
            print_warn_msg("Profiler won't be using warmup, this can skew profiler results")

    def __call__(self, step: int) -> ProfilerAction:
        if step < self.skip_first:
            return ProfilerAction.NONE
        step -= self.skip_first
        if self.skip_first_wait != 0:
            step += self.wait
        num_steps = self.wait + self.warmup + self.active
        if self.repeat > 0 and step / num_steps >= self.repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < self.wait:
            return ProfilerAction.NONE
        if mod_step < self.wait + self.warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE


if VERSION == "2.1":
    class Schedule(_Schedule):  # no skip_first_wait on the 2.1 branches
        def __init__(self, wait: int, active: int, warmup: int = 0, repeat: int = 0, skip_first: int = 0):
            super().__init__(wait, active, warmup, repeat, skip_first)
else:
    Schedule = _Schedule


def _default_schedule_fn(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD
