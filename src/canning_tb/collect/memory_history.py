"""`ps.Profile(..., memory_snapshot=True)`: the allocator's history recorded while the profile collects, and a
snapshot of it taken at the end of each window (the handler writes it beside the trace, handler/trace_handler.py).

The allocator is the backend's: torch_npu's (`torch_npu.npu.memory._record_memory_history` / `_snapshot`) for an
NPU profile, CUDA's (`torch.cuda.memory`) when CUDA is profiled and present. The CPU has no allocator history:
that is said once, and nothing is recorded. Nothing here may fail the training: a backend that refuses is said
once, and the window is written without a snapshot. History is bounded (`max_entries`, the allocator's own ring).

`memory_snapshot_on_oom=True` also attaches an out-of-memory observer to the allocator
(`torch._C._cuda_attach_out_of_memory_observer` / `torch_npu._C._npu_attach_out_of_memory_observer`): when the job
runs out of memory, the allocator's snapshot at that moment (its last entries hold the failed request) is handed
to the handler, which writes it into the run folder (`<worker>.<ms>.snapshot.pickle`). Attached once per process
(the allocator keeps its observers).
"""
from __future__ import annotations

import logging

from .user_warning import warn_user

log = logging.getLogger("canning_tb.collect")

DEFAULT_ENTRIES = 100_000
NO_HISTORY = ("memory_snapshot=True: the CPU has no allocator history (only CUDA's and torch_npu's allocators "
              "record one): no snapshot is written")


class MemoryHistory:
    def __init__(self, enabled: bool, max_entries: int = DEFAULT_ENTRIES, on_oom: bool = False):
        self.on_oom = bool(on_oom)
        self.per_window = bool(enabled)  # a snapshot at each window's end
        self.enabled = self.per_window or self.on_oom  # the history is recorded for either
        self._oom_write = None  # where an OOM snapshot goes (the handler's), set by the profile
        self._attached = False
        self.max_entries = max(1, int(max_entries))
        self._memory = None  # the allocator's module while recording
        self._said: set[str] = set()

    def _say(self, key: str, text: str) -> None:
        if key not in self._said:
            self._said.add(key)
            warn_user(text)

    def _module(self, backend: str, activities) -> object | None:
        names = {getattr(a, "name", str(a)) for a in activities}
        try:
            if backend == "torch_npu":
                import torch_npu  # noqa: F401  (the backend imported it already)
                import torch_npu.npu
                return getattr(torch_npu.npu, "memory", None)
            if "CUDA" in names:
                import torch
                if torch.cuda.is_available():
                    return torch.cuda.memory
        except Exception as e:  # an accelerator stack that fails to load: no history, training goes on
            log.debug("no allocator history: %s", e)
        return None

    def start(self, backend: str, activities) -> None:
        """Record the allocator's history from now on (the backend's allocator), or say once why not."""
        if not self.enabled or self._memory is not None:
            return
        memory = self._module(backend, activities)
        if memory is None or not hasattr(memory, "_record_memory_history"):
            self._say("cpu", NO_HISTORY)
            return
        try:
            memory._record_memory_history(max_entries=self.max_entries)
        except Exception as e:
            self._say("start", f"memory_snapshot=True: the allocator would not record its history "
                               f"({type(e).__name__}: {e}); no snapshot is written")
            return
        self._memory = memory
        if self.on_oom and not self._attached:
            self._attach(backend)

    def write_oom_to(self, write) -> None:
        """`write(snapshot: dict)` is called with the allocator's snapshot when the job runs out of memory."""
        self._oom_write = write

    def _attach(self, backend: str) -> None:
        memory = self._memory

        def observer(device, alloc, device_allocated, device_free):
            write = self._oom_write
            if write is None:
                return
            try:
                write(memory._snapshot())
            except Exception as e:  # the job is failing already: never a second error from us
                log.warning("canning: the out-of-memory snapshot could not be written: %s", e)
        try:
            if backend == "torch_npu":
                import torch_npu
                torch_npu._C._npu_attach_out_of_memory_observer(observer)
            else:
                import torch
                torch._C._cuda_attach_out_of_memory_observer(observer)
        except Exception as e:
            self._say("oom", f"memory_snapshot_on_oom=True: the allocator takes no out-of-memory observer here "
                             f"({type(e).__name__}: {e})")
            return
        self._attached = True

    def snapshot(self) -> dict | None:
        """The allocator's snapshot now (segments, blocks and the history so far), or None."""
        if self._memory is None or not self.per_window:
            return None
        try:
            return self._memory._snapshot()
        except Exception as e:
            self._say("snapshot", f"memory_snapshot=True: the allocator's snapshot failed ({type(e).__name__}: {e}); "
                                  "windows are written without one")
            return None

    def stop(self) -> None:
        if self._memory is None:
            return
        memory, self._memory = self._memory, None
        try:
            memory._record_memory_history(enabled=None)
        except Exception as e:
            log.debug("stopping the allocator's history: %s", e)
