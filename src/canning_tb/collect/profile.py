"""Profile: a torch.profiler-style profiler that can be started and stopped many times.

Each start() builds a fresh backend profiler, so every start begins a new collection. Our object,
not the backend's, is handed to on_trace_ready: the handler then sees the step timestamps we keep
and the settings, and user callbacks get op_summary() and friends.
On NPU, results (key_averages, events, the summaries) come from the folder torch_npu's handler
wrote for the last window (npu_results.py), since torch_npu's profile has no key_averages().
With schedule=ps.on_demand() no profiler runs until a capture request asks for steps (on_demand.py).
"""
import functools
import os
import time
import warnings
from collections import OrderedDict

from canning_tb.util.manifest import PROFILER_SETTINGS

from . import backend as _backend
from . import npu as _npu
from . import npu_results as _npu_results
from . import on_demand as _on_demand
from .memory_history import DEFAULT_ENTRIES, MemoryHistory
from . import summaries as _summaries
from .activity import ProfilerActivity
from .schedule import RECORDING, OnDemand, action_name, recorded_steps
from .user_warning import warn_user

_KEEP_STEPS = 4096  # step timestamps kept; a window is far shorter


class Profile:
    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, start_on_cpu=False,
                 memory_snapshot=False, memory_snapshot_entries=DEFAULT_ENTRIES, memory_snapshot_on_oom=False,
                 chip=None, **kwargs):
        # the allocator's history while collecting, a snapshot per window, and on OOM (memory_history.py)
        self._memory_history = MemoryHistory(memory_snapshot, memory_snapshot_entries, memory_snapshot_on_oom)
        self._last_snapshot = None  # the last window's snapshot (a plain dict from the allocator), for memory_summary
        # on demand: each capture builds its own profiler (on_demand.py); this one says which backend
        self._on_demand = _on_demand.Driver(self, schedule, on_trace_ready) if isinstance(schedule, OnDemand) else None
        self._backend = _backend.resolve(activities, start_on_cpu=start_on_cpu,
                                         schedule=None if self._on_demand else schedule, **kwargs)
        self._start_on_cpu, self._kwargs = start_on_cpu, kwargs
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.settings = {"activities": [a.name for a in self._backend.activities],
                         "schedule": repr(schedule) if schedule is not None else None,
                         **{k: bool(kwargs.get(k, False)) for k in PROFILER_SETTINGS}}
        if chip:  # the chip the files may not name (torch_npu names the family): into the manifest's settings
            self.settings["chip"] = _chip_name(chip)
        self.profiler = None          # the backend profiler of the current or last collection
        self._running = False
        self._steps = OrderedDict()   # step number -> [begin_ns, end_ns or None], wall clock
        self._digest = None
        self._trace = _summaries.SavedTrace()  # torch: the collection's Chrome trace, saved once
        self._npu_folder = None       # torch_npu's folder of the last window (its prof_if.prof_path)
        self._private_handler = None  # torch_npu's own handler when an NPU profile was given none
        self._private_dir = None      # ... and the temporary folder it writes into
        self._analysed_here = None    # the folder analyse() finished (offline analysis)
        self._windows = 0             # windows delivered by the backend in the current collection

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
        if self._on_demand is not None:  # steps count from start(), whether a capture runs or not
            return self._on_demand.step
        return self.profiler.step_num if self.profiler is not None else 0

    def start(self):
        if self._running:
            warnings.warn("Profile.start() called while already running; ignored.", RuntimeWarning, stacklevel=2)
            return self
        if self._on_demand is not None:  # no profiler until a capture asks for one
            self._running = True
            self._on_demand.start()
            return self
        self._begin_collection(0)
        self.profiler.start()
        self._steps[0][0] = time.time_ns()  # step 0 begins once the profiler records, not before its start-up
        self._running = True
        return self

    def _begin_collection(self, step: int) -> None:
        """A new backend profiler for a collection whose first step is `step` (started by the caller)."""
        self._steps.clear()
        self._digest = None
        self._trace.forget()
        prepare = getattr(self.on_trace_ready, "canning_prepare", None)
        if prepare is not None:  # e.g. torch_npu's handler must exist before its profiler is built
            prepare(self)
        elif self.backend == "torch_npu" and _npu.needs_private_handler(self.on_trace_ready):
            self._private_handler, self._private_dir = _npu.private_handler(self._backend.module, self,
                                                                            self._private_dir)
        self.profiler = self._new_backend_profile()
        oom_write = getattr(self.on_trace_ready, "canning_write_oom_snapshot", None)
        if oom_write is not None:
            self._memory_history.write_oom_to(oom_write)
        self._memory_history.start(self.backend, self._backend.activities)
        self._windows = 0  # windows the backend delivered (on_trace_ready) in this collection
        self._steps[step] = [time.time_ns(), None]

    def stop(self):
        if not self._running:
            return self
        self._running = False
        if self._on_demand is not None:
            self._on_demand.stop()  # a capture that records is cut short: its window is still written
            return self
        self._end_step(self.step_num)
        if self.backend == "torch_npu" and self.schedule is None:
            _npu.quiet_stop(self.profiler)  # may call on_trace_ready for the window in progress
        else:
            self.profiler.stop()  # may call on_trace_ready for the window in progress
        self._memory_history.stop()
        flush = getattr(self.on_trace_ready, "canning_flush", None)
        if flush is not None:  # e.g. the uploads of a remote run folder: done when stop() returns
            flush()
        return self

    def canning_memory_snapshot(self) -> dict | None:
        """The allocator's snapshot at the end of the window the handler is writing (memory_snapshot=True), or
        None (not asked, or no allocator history here)."""
        self._last_snapshot = self._memory_history.snapshot()
        return self._last_snapshot

    def step(self):
        if not self._running:
            return
        if self._on_demand is not None:
            self._on_demand.on_step()
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

    def recorded_step_times(self) -> list:
        """[[step, begin_ns, end_ns]] wall clock of the finished steps of the last window (as the handler
        writes them into the manifest)."""
        times = self.step_times_ns(recorded_steps(self.schedule, self.step_num))
        return [[s, *times[s]] for s in sorted(times)]

    def _new_backend_profile(self):
        try:
            return self._backend.new_profile(self._trace_ready)
        except _backend.NpuUnavailableError as e:  # torch_npu found no device only now
            self._drop_private_dir()
            if not self._start_on_cpu:
                raise
            warn_user(f"{e} Profiling the CPU only (start_on_cpu=True).")
            kwargs = {k: v for k, v in self._kwargs.items() if k != "experimental_config"}
            self._backend = _backend.resolve([ProfilerActivity.CPU], schedule=self.schedule, **kwargs)
            self.settings["activities"] = ["CPU"]
            self._private_handler = None  # torch_npu's, for torch_npu's profile only
            return self._backend.new_profile(self._trace_ready)

    def _drop_private_dir(self) -> None:
        """The temporary folder made for torch_npu's output, while torch_npu has written nothing there."""
        if self._private_dir is not None:
            try:
                os.rmdir(self._private_dir)  # fails when not empty: an earlier window's data stays
                self._private_dir = None
            except OSError:
                pass

    def _trace_ready(self, backend_prof):
        self._windows += 1
        self._digest = None
        self._trace.forget()  # a new window: a new trace to save
        if self.backend == "torch_npu":  # the window that just ended: torch_npu made its folder at its start
            self._npu_folder = getattr(getattr(backend_prof, "prof_if", None), "prof_path", None) or None
        if self._private_handler is not None:
            self._private_handler(backend_prof)
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

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0, **kwargs):
        """torch's EventList averages; on NPU the last window's operators (npu_results.KeyAverages)."""
        if self.backend == "torch_npu":
            return _npu_results.KeyAverages.from_digest(self._digest_of_last(), group_by_input_shape,
                                                        group_by_stack_n)
        return self._require().key_averages(group_by_input_shape=group_by_input_shape,
                                            group_by_stack_n=group_by_stack_n, **kwargs)

    def events(self):
        """torch's events; on NPU the last window's columnar EventTable (canning_tb.ingest)."""
        if self.backend == "torch_npu":
            return _npu_results.window_table(self._npu_folder, self._npu_analysis())
        return self._require().events()

    def analyse(self):
        """NPU: run torch_npu's offline analysis of the last window (after analyse_flag=False)."""
        if self.backend != "torch_npu":
            raise RuntimeError("analyse() is for NPU profiles: torch.profiler's results need no analysis")
        _npu_results.offline_analyse(self._npu_folder)
        self._digest = None
        self._analysed_here = self._npu_folder  # blocking: its output is complete now

    def _npu_analysis(self) -> str:
        """How torch_npu analysed the last window ("sync", "async", "off"): from the handler's options."""
        if self._private_handler is not None or self._analysed_here == self._npu_folder:
            return "sync"
        if getattr(self.on_trace_ready, "analyse_flag", True) is False:
            return "off"
        return "async" if getattr(self.on_trace_ready, "async_mode", False) else "sync"

    def export_chrome_trace(self, path: str):
        """The trace of the last collection (torch saves it once; later calls copy that file)."""
        if self.backend == "torch_npu":  # torch_npu re-runs its whole analysis here: slow, but asked for
            return self._require().export_chrome_trace(path)
        return self._trace.export(self._require(), path)

    def canning_trace_moved(self, path: str, ready=None):
        """The handler moves the exported trace (publishes it, gzipped, maybe in the background: `ready()`
        returns once it is there): the summaries read it there."""
        self._trace.moved_to(path, ready)

    def canning_window_written(self, manifest_name: str):
        """The handler wrote a window (its manifest's name): a capture's status names it."""
        if self._on_demand is not None:
            self._on_demand.windows.append(manifest_name)

    def __getattr__(self, name):
        # Everything else (export_stacks, export_memory_timeline, add_metadata, ...) is the backend's.
        prof = self.__dict__.get("profiler")
        if prof is None or name.startswith("_"):
            raise AttributeError(name)
        return getattr(prof, name)

    def _digest_of_last(self):
        if self._digest is None:
            if self.backend == "torch_npu":  # what torch_npu's handler wrote, not its slow export_chrome_trace
                self._digest = _npu_results.window_digest(self._npu_folder, self._npu_analysis())
            else:
                self._digest = _summaries.digest_of_trace(self._trace.local(self._require()),
                                                          self.recorded_step_times(), self.settings)
        return self._digest

    def _no_window(self) -> str | None:
        """Why a scheduled collection has nothing to summarise: it stopped before its schedule recorded."""
        if self.schedule is None or self._on_demand is not None or self._windows or self.profiler is None:
            return None
        first = next((s for s in range(self.step_num, self.step_num + 100_000)
                      if action_name(self.schedule, s) in RECORDING), None)
        when = f"its first recording step is {first}" if first is not None else "it records no later step"
        return (f"No window recorded: the profile stopped at step {self.step_num} and the schedule "
                f"{self.schedule!r} had not recorded yet ({when}). Run the loop past it, calling prof.step() once "
                f"per step, or shorten wait / warmup (or skip_first).")

    def _summary(self, name: str):
        why = self._no_window()
        return _summaries.empty(name, why) if why else _summaries.call(name, self._digest_of_last())

    def op_summary(self):
        return self._summary("op_summary")

    def memory_summary(self):
        table = self._summary("memory_summary")
        if self._last_snapshot is not None:  # memory_snapshot=True: the last window's snapshot explained, as notes
            table.notes = list(table.notes) + _summaries.snapshot_notes(self._last_snapshot)
        return table

    def communication_summary(self):
        return self._summary("communication_summary")

    def optimization_suggestions(self):
        return self._summary("suggestions")


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


def _chip_name(chip: str) -> str:
    """The peak table's name of a chip (analysis/efficiency/peaks.py): a wrong one fails here, at once,
    rather than in the viewer, with the known names."""
    from canning_tb.analysis.efficiency.peaks import chip_name, chip_row
    return chip_name(chip_row(str(chip)))


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
