"""The handler's work after the export, off the training thread: one thread runs the jobs in the
order they came (so windows, and each window's files, appear in order: the manifest last), ends
when none is left and starts again with the next one. It is not a daemon: the interpreter waits for
it at exit, so a window handed over is written even when the script never calls stop()."""
from __future__ import annotations

import collections
import logging
import sys
import threading

log = logging.getLogger(__name__)


def untraced() -> None:
    """Drop the profile hook torch's Python tracer (with_stack) put on this thread when a window started:
    the tracer hooks every thread alive at its start, so a job of ours still running then would write its
    own frames into the user's trace (an import seen in a DDP run: 77,205 of a window's 79,401 events).
    It acts on a thread of ours only: on any other (the user's, where a job may run inline) it does nothing."""
    if getattr(threading.current_thread(), "canning_background", False):
        sys.setprofile(None)


class Background:
    def __init__(self, name: str = "canning-writer"):
        self._name = name
        self._jobs: collections.deque = collections.deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._unfinished = 0

    def submit(self, job) -> None:
        with self._cond:
            self._jobs.append(job)
            self._unfinished += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=False)
                self._thread.canning_background = True  # untraced() acts on this thread only
                self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._jobs:
                    self._thread = None
                    return
                job = self._jobs.popleft()
            try:
                untraced()
                job()
            except Exception:  # a job reports its own errors; this is a bug's last net: the thread goes on
                log.exception("canning: background job failed")
            finally:
                with self._cond:
                    self._unfinished -= 1
                    self._cond.notify_all()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every job submitted so far is done; False when the timeout came first."""
        if self._thread is threading.current_thread():
            return self._unfinished <= 1  # a job waiting for itself would never return
        with self._cond:
            return self._cond.wait_for(lambda: self._unfinished == 0, timeout)
