"""Trends for TensorBoard's Scalars tab: each window's key figures (analysis/trends.py) as scalars, one point per
window at its last step, so Scalars plots them across steps and runs next to the loss.

Only when the user turns it on (`CANNING_WRITE_TRENDS=1`): by default the viewer writes nothing into a
logdir, and the Overview draws the same figures itself (GET /trends). Then written only where the run
folder can be written, and only into a folder of ours,
`<run>/.canning/trends/` (TensorBoard shows it as the run `<run>/.canning/trends`), as new event
files (util/scalars.py's writer), tags `canning/from_trace/<figure>[/rank<R>]`: the
`from_trace/` part marks them as computed by the plugin from a trace, apart from the handler's
own `canning/<figure>`. Read-only folders and the user's files are never touched. Windows written
by our handler get them too: the training process writes only what it knows without analysis (step
time, trace size), and the full figures need the digest. `written.json` there lists the windows already
written, so a restart adds no duplicate points.
"""
from __future__ import annotations

import json
import logging
import os
import threading
import time

from canning_tb.analysis.trends import trend_scalars, trend_step
from canning_tb.util import safe_files
from canning_tb.util.scalars import ScalarWriter

from .cache import CACHE_DIRNAME, _on, _writable

log = logging.getLogger("canning_tb.store")

TREND_DIR = os.path.join(CACHE_DIRNAME, "trends")
TAG_PART = "from_trace/"
RECORD = "written.json"
WRITE_ENV = "CANNING_WRITE_TRENDS"
EPOCH_NS = 10**18  # profiler clocks below this are not wall-clock times (about 2001-09)


def _record(folder: str) -> dict:
    try:
        return json.loads(safe_files.read_file(os.path.join(folder, RECORD)))
    except (OSError, ValueError):
        return {}


def _save_record(folder: str, record: dict) -> None:
    # safe_files: a .canning or .canning/trends that is a link is never written through
    safe_files.atomic_write(os.path.join(folder, RECORD), json.dumps(record).encode())


class TrendWriter:
    def __init__(self):
        self._writers: dict[tuple[str, str], ScalarWriter] = {}
        self._paths: set[str] = set()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def kick(self, store) -> None:
        """Write the new windows' trends in a background thread, unless one is writing (or the user has
        not turned trend files on: `CANNING_WRITE_TRENDS=1`)."""
        with self._lock:
            if store is None or not _on(WRITE_ENV) or (self._thread is not None and self._thread.is_alive()):
                return
            self._thread = threading.Thread(target=self._run, args=(store,), name="canning-trends", daemon=True)
            self._thread.start()

    def join(self, timeout: float) -> None:
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _run(self, store) -> None:
        try:
            self.write_new(store)
        except Exception:  # thread boundary: a bug here must not stop TensorBoard; logged
            log.exception("canning: writing trends failed")

    def write_new(self, store) -> int:
        """Write the trends of every window not written yet; returns how many were written."""
        written = 0
        if getattr(store, "remote", None) is not None:  # TensorBoard reads the remote logdir, not our copy of it
            return written
        for run in store.runs():
            folder = store.run(run).path
            if not _writable(folder):
                continue
            try:
                written += self._write_run(store, run, os.path.join(folder, TREND_DIR))
            except OSError as e:  # a folder we may not write (a link, full, read-only): that run has none
                log.warning("canning: no trends for %s: %s", run, e)
        return written

    def _write_run(self, store, run: str, out: str) -> int:
        record, written = _record(out), 0
        workers = store.workers(run)
        for worker in workers:
            for position, window in enumerate(store.windows(run, worker.name)):
                key = f"{worker.name}\0{window.id}"
                if window.status != "ready" or key in record:
                    continue
                record[key] = self._write_window(store, run, worker, len(workers), window, position, out)
                written += record[key] == "written"
                _save_record(out, record)
        return written

    def _write_window(self, store, run, worker, world_size: int, window, position: int, out: str) -> str:
        from canning_tb.ingest.table import InputError  # numpy: only once there is something to write

        try:
            digest = store.digest(run, worker.name, window.id)
        except InputError as e:
            return f"error: {e}"
        values = {TAG_PART + k: v for k, v in trend_scalars(digest).items()}
        end = digest.window.end_ns
        self._writer(out, run, worker, world_size).write(trend_step(digest, position), values,
                                                         end / 1e9 if end >= EPOCH_NS else time.time())
        return "written"

    def _writer(self, out: str, run: str, worker, world_size: int) -> ScalarWriter:
        key = (run, worker.name)
        if key not in self._writers:
            safe_files.make_dirs(out)  # never through a link (.canning, .canning/trends)
            writer = ScalarWriter(out, max(worker.rank, 0), world_size)
            while writer.path in self._paths:  # two workers in the same second: one file each
                writer.path += ".1"
            self._paths.add(writer.path)
            self._writers[key] = writer
        return self._writers[key]
