"""A Store that a long-lived host (TensorBoard) builds and refreshes in a background thread.

`Scanner.kick()` starts a scan unless one runs or the last one ended less than `interval`
seconds ago; readers never wait on a big logdir: they read `listing` (the runs, workers and
windows of the last finished scan) and `loading`. The first scan builds the Store (its module,
numpy and the readers are imported then, in the thread, not when the host starts), with its
Prefetcher (background digests of many windows).
"""
from __future__ import annotations

import logging
import math
import os
import threading
import time
from typing import Callable

from canning_tb.util.remote_fs import RemoteError

from .prefetcher import Prefetcher

log = logging.getLogger("canning_tb.store")

ISOLATE_BYTES = 16 << 20  # windows whose files exceed this are digested in a child process


def default_store(logdir: str):
    """A Store that parses big windows in a child process, so the host keeps serving (GIL) and
    does not keep the parse's peak memory, and builds timeline indexes in the background."""
    from .store import Store
    return Store(logdir, isolate_bytes=ISOLATE_BYTES, timeline_index=True)


class Scanner:
    def __init__(self, logdir: str | None, interval: float, store_factory: Callable[[str], object] = default_store):
        self.logdir = logdir
        self.interval = interval
        self._factory = store_factory
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._last = -math.inf
        self._first = threading.Event()
        self.store = None
        self.prefetcher = None  # Prefetcher of the store, built with it
        self.listing: dict | None = None  # {"runs": [...]} of the last finished scan
        self.error: str | None = None

    @property
    def loading(self) -> bool:
        return not self._first.is_set() or (self._thread is not None and self._thread.is_alive())

    def kick(self) -> None:
        """Start a scan unless one runs or the last ended less than `interval` seconds ago."""
        if not self.logdir:
            self._first.set()
            return
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            if time.monotonic() - self._last < self.interval:
                return
            self._thread = threading.Thread(target=self._scan, name="canning-discovery", daemon=True)
            self._thread.start()

    def wait_first(self, timeout: float) -> bool:
        return self._first.wait(timeout)

    def join(self, timeout: float) -> None:
        """Wait for the scan running now, if any."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _scan(self) -> None:
        try:
            if self.store is None:
                store = self._factory(self.logdir)  # the constructor scans once
                self.prefetcher = Prefetcher(store)
                self.store = store
            else:
                self.store.refresh()
            self.listing = listing(self.store)
            self.error = None
        except RemoteError as e:  # bad credentials, no such bucket, network: said as it is, the last listing stays
            log.warning("canning: %s", e)
            self.error = str(e)
        except Exception as e:  # thread boundary: a failed scan must not take the host down
            log.exception("canning: discovery of %s failed", self.logdir)
            self.error = f"discovery of the logdir failed: {type(e).__name__}: {e}"
        finally:
            self._last = time.monotonic()
            self._first.set()


def listing(store) -> dict:
    """{"runs": [{name, workers: [{name, rank, windows: [{id, label, format, status, files, trigger,
    snapshots}]}]}]}
    (file names only, never paths; trigger: why the job asked for the window itself, or null;
    snapshots: how many memory snapshots the window has)."""
    runs = []
    for run in store.runs():
        try:
            workers = [{"name": w.name, "rank": w.rank, "windows": [
                {"id": win.id, "label": win.label, "format": win.format, "status": win.status,
                 "files": [os.path.basename(f) for f in win.files], "trigger": win.trigger or None,
                 "snapshots": len(win.snapshots)}
                for win in store.windows(run, w.name)]}
                for w in store.workers(run)]
        except KeyError:  # the run vanished between runs() and workers()
            continue
        runs.append({"name": run, "workers": workers})
    return {"runs": runs}
