"""Profile: a torch.profiler-style profiler that can be started and stopped many times.

Each start() builds a fresh backend profiler, so every start begins a new collection. Our object,
not the backend's, is handed to on_trace_ready: the handler then sees the step timestamps we keep
and the settings, and user callbacks get op_summary() and friends.
"""
import functools
import time
import warnings
from collections import OrderedDict

from . import backend as _backend
from . import summaries as _summaries

_SETTINGS = ("record_shapes", "profile_memory", "with_stack", "with_flops", "with_modules")
_KEEP_STEPS = 4096  # step timestamps kept; a window is far shorter


class Profile:
    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, start_on_cpu=False, **kwargs):
        self._backend = _backend.resolve(activities, start_on_cpu=start_on_cpu, schedule=schedule, **kwargs)
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.settings = {"activities": [a.name for a in self._backend.activities],
                         "schedule": repr(schedule) if schedule is not None else None,
                         **{k: bool(kwargs.get(k, False)) for k in _SETTINGS}}
        self.profiler = None          # the backend profiler of the current or last collection
        self._running = False
        self._steps = OrderedDict()   # step number -> [begin_ns, end_ns or None], wall clock
        self._digest = None

    # --- lifecycle -------------------------------------------------------------------------------
    @property
    def backend(self) -> str:
        return self._backend.name

    @property
    def activities(self) -> list:
        return list(self._backend.activities)

    @property
    def running(self) -> bool:
        return self._running

    @property
    def step_num(self) -> int:
        return self.profiler.step_num if self.profiler is not None else 0

    def start(self):
        if self._running:
            warnings.warn("Profile.start() called while already running; ignored.", RuntimeWarning, stacklevel=2)
            return self
        self._steps.clear()
        self._digest = None
        prepare = getattr(self.on_trace_ready, "canning_prepare", None)
        if prepare is not None:  # e.g. torch_npu's handler must exist before its profiler is built
            prepare(self)
        self.profiler = self._backend.new_profile(self._trace_ready)
        self._steps[0] = [time.time_ns(), None]
        self.profiler.start()
        self._running = True
        return self

    def stop(self):
        if not self._running:
            return self
        self._running = False
        self._end_step(self.step_num)
        self.profiler.stop()  # may call on_trace_ready for the window in progress
        return self

    def step(self):
        if not self._running:
            return
        now = self._end_step(self.step_num)
        self._steps[self.step_num + 1] = [now, None]
        if len(self._steps) > _KEEP_STEPS:
            self._steps.popitem(last=False)
        self.profiler.step()  # may call on_trace_ready: the step boundaries are already recorded

    def _end_step(self, n):
        now = time.time_ns()
        if n in self._steps and self._steps[n][1] is None:
            self._steps[n][1] = now
        return now

    def step_times_ns(self, steps) -> dict:
        """{step: (begin_ns, end_ns)} wall clock for the finished steps among `steps`."""
        out = {}
        for s in steps:
            b = self._steps.get(s)
            if b and b[1] is not None:
                out[s] = (b[0], b[1])
        return out

    def _trace_ready(self, _backend_prof):
        self._digest = None
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # --- results (of the last collection) ----------------------------------------------------------
    def _require(self):
        if self.profiler is None:
            raise RuntimeError("no collection yet: start() and stop() the profile first")
        return self.profiler

    def key_averages(self, *args, **kwargs):
        return self._require().key_averages(*args, **kwargs)

    def events(self):
        return self._require().events()

    def export_chrome_trace(self, path: str):
        return self._require().export_chrome_trace(path)

    def __getattr__(self, name):
        # Everything else (export_stacks, export_memory_timeline, add_metadata, ...) is the backend's.
        prof = self.__dict__.get("profiler")
        if prof is None or name.startswith("_"):
            raise AttributeError(name)
        return getattr(prof, name)

    def _digest_of_last(self):
        if self._digest is None:
            self._digest = _summaries.digest_of(self._require())
        return self._digest

    def op_summary(self):
        return _summaries.call("op_summary", self._digest_of_last())

    def memory_summary(self):
        return _summaries.call("memory_summary", self._digest_of_last())

    def communication_summary(self):
        return _summaries.call("communication_summary", self._digest_of_last())

    def optimization_suggestions(self):
        return _summaries.call("suggestions", self._digest_of_last())


class profile(Profile):
    """Profile usable as a decorator (each call of the function is one collection) or a context manager.

    @ps.profile(activities=[ps.ProfilerActivity.CPU])
    def train_step(...): ...
    train_step(...); train_step.profile.key_averages()
    """

    def __init__(self, fn=None, **kwargs):
        super().__init__(**kwargs)
        self._fn = fn
        if fn is not None:  # bare @ps.profile
            functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        if self._fn is not None:
            with self:
                return self._fn(*args, **kwargs)
        fn = args[0]

        @functools.wraps(fn)
        def wrapper(*a, **kw):
            with self:
                return fn(*a, **kw)
        wrapper.profile = self
        return wrapper


_current = None


def start(**kwargs) -> Profile:
    """Start a module-level Profile (stops the previous one if it still runs)."""
    global _current
    if _current is not None and _current.running:
        _current.stop()
    _current = Profile(**kwargs).start()
    return _current


def stop():
    """Stop the module-level Profile and return it (None when none was started)."""
    return _current.stop() if _current is not None else None
