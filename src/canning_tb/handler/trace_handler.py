"""The on_trace_ready callback: one window of one rank -> files in the run folder, atomically.

File names (window token = 13-digit Unix ms of this handler's first window in this process, then the
5-digit zero-padded window index, so names sort in window order, also across restarts):
    <worker>.<ms><index>.pt.trace.json.gz   Chrome trace (Kineto), gzip ('.json' when use_gzip=False)
    <worker>.<ms><index>.snapshot.pickle    the allocator's memory snapshot at the window's end, with
                                            ps.Profile(memory_snapshot=True) (collect/memory_history.py)
    <worker>.<ms><index>.canning.json       the manifest, written LAST: its presence means the window is complete
    events.out.tfevents.*                   per-window scalars (TensorBoard's own append-only format)
On NPU, torch_npu writes <worker>[_<pid>]_<ts>_ascend_pt/ itself (see npu.py) and the manifest names it.
The manifest's fields are in canning_tb.util.manifest.
Temp files start with '.' and end with '.tmp'; readers skip them; a failed window removes its own, and
the first window of a handler removes those that killed processes of this host left behind.
A remote dir_name (s3://...) is written through a local staging folder, then uploaded in the background,
in order (remote.py): the training step waits for the local write only; stop() and exit wait for the uploads.
The training thread does the export only (local Kineto windows): gzip, the manifest, the scalars and
the digest's start run in one background thread (background.py), in window order; Profile.stop(),
a capture's end and interpreter exit wait for it.
"""
import functools
import logging
import os
import pickle
import socket
import subprocess
import sys
import threading
import time

from canning_tb.collect.npu import claim, claimed_elsewhere
from canning_tb.collect.schedule import recorded_steps
from canning_tb.util import identity
from canning_tb.util.manifest import PROFILER_SETTINGS, FileEntry, Manifest
from canning_tb.util.remote_fs import is_url
from canning_tb.util.scalars import ScalarWriter, preload

from . import files, npu
from .background import Background, untraced
from .remote import MAX_PENDING_UPLOADS, RemoteRun
from .upload_queue import DIGEST_MODULE, child_env

log = logging.getLogger(__name__)
_SHOWN = {"upload": "window", "uploaded scalars": "scalars"}  # what a warning calls each kind of failure


class TraceHandler:
    def __init__(self, dir_name, worker_name=None, use_gzip=True, digest=True, *, analyse_flag=True,
                 async_mode=False, max_pending_uploads=MAX_PENDING_UPLOADS, npu_handler_factory=None):
        self.dir_name = os.fspath(dir_name)
        # a remote run folder: windows are staged here, then uploaded (RemoteError now if its back-end is missing)
        self.remote = (RemoteRun(self.dir_name, self._uploaded, max_pending_uploads) if is_url(self.dir_name)
                       else None)
        self.local_dir = self.remote.stage if self.remote else self.dir_name
        self.worker_name = worker_name
        self.use_gzip = use_gzip
        self.digest = digest
        self.analyse_flag, self.async_mode = bool(analyse_flag), bool(async_mode)
        self.window = 0                      # index of the next window
        self._token_ms = None
        self._failing = set()                # what is failing now: one warning per streak of errors
        self._static = None                  # devices and versions, computed once
        self._scalars = None
        self._npu_factory = npu_handler_factory or npu.make_torch_npu_handler
        self._npu_fn = None
        self._children = []
        self._background = Background()      # gzip, manifest, scalars, digest: off the training thread
        preload()                            # the scalars' imports, here: never in a window's trace
        identity.host_processor()            # platform runs `uname -p` once: here too, not in the writer
        # A raw torch_npu profile (not ps.Profile) never calls canning_prepare: torch_npu's output folder
        # must point here before its first window starts, unless a running profile writes elsewhere.
        if "torch_npu" in sys.modules and claimed_elsewhere(self.local_dir) is None:
            self._make_npu_handler()

    # Profile.start() calls this before it builds the backend profiler.
    def canning_prepare(self, prof):
        if npu.is_npu(prof):
            claim(prof, self.local_dir)   # raises when another running profile writes elsewhere
            self._make_npu_handler()         # re-points torch_npu's process-wide output here

    def __call__(self, prof):
        t_call = time.time_ns()
        index = self.window
        self.window += 1
        try:
            manifest, finish = self._export_window(prof, index, t_call)
        except Exception as e:  # disk full, read-only, path under a file...: training goes on
            self._warn("window", index, f"{type(e).__name__}: {e}")
            return
        written = getattr(prof, "canning_window_written", None)
        # on the training thread: the export (the profiler's data) and what reads the profile's state;
        # in the background: gzip, the manifest (last), scalars, the digest or the upload
        job = functools.partial(self._finish_window, manifest, finish, written)
        if finish.kind == "kineto" and self.remote is None:
            self._background.submit(job)
        else:  # torch_npu's folder is complete already; a remote run's upload queue makes the step wait when full
            job()

    # a capture's end (collect/on_demand.py) calls this: its windows are written when it returns
    def canning_wait_written(self):
        self._background.flush()

    # Profile.stop() calls this: the windows of the collection are written (and uploaded) when it returns.
    def canning_flush(self):
        self._background.flush()
        if self.remote is not None:
            self.remote.flush()

    # --- one window --------------------------------------------------------------------------------
    def _export_window(self, prof, index, t_call):
        """(manifest without its files, what is left to publish) of a window; the profile's state is read here."""
        rank, world, local = identity.dist_info()
        worker = self.worker_name or identity.default_worker(rank)
        if self._token_ms is None:
            self._token_ms = t_call // 1_000_000
        stem = f"{worker}.{self._token_ms:013d}{index:05d}"
        os.makedirs(self.local_dir, exist_ok=True)
        if index == 0:
            files.remove_stale_temps(self.local_dir)
        if npu.is_npu(prof):
            entries, analysis = self._npu_window(prof, worker)
            finish = _Finish("ascend_pt", entries=entries)
        else:
            analysis = ""
            finish = self._kineto_export(prof, stem)
        finish.snapshot = self._memory_snapshot(prof, stem)
        steps = recorded_steps(getattr(prof, "schedule", None), int(getattr(prof, "step_num", 0) or 0))
        times = prof.step_times_ns(steps) if hasattr(prof, "step_times_ns") else {}
        manifest = Manifest(
            kind=finish.kind, worker=worker, window=index, manifest=f"{stem}.canning.json",
            rank=rank, world_size=world, local_rank=local, host=socket.gethostname(), pid=os.getpid(),
            steps=steps, step_times_ns=[[s, *times[s]] for s in steps if s in times],  # [step, begin, end]
            wall_start_ns=min((b for b, _ in times.values()), default=None),
            wall_end_ns=max((e for _, e in times.values()), default=t_call),
            settings=_settings(prof), analysis=analysis, trigger=_trigger(prof))
        return manifest, finish

    def _kineto_export(self, prof, stem) -> "_Finish":
        """Export the window's trace into a temp file (the profile's summaries wait for it to be published)."""
        name = f"{stem}.pt.trace.json" + (".gz" if self.use_gzip else "")
        dst = os.path.join(self.local_dir, name)
        raw = files.tmp_name(self.local_dir, f"{stem}.pt.trace.json")
        try:
            files.claim_temp(raw)
            prof.export_chrome_trace(raw)
            files.check_complete(raw)
        except BaseException:
            files.discard_temp(raw)  # ours, and the exporter's own <raw>.tmp after a failed write
            raise
        finish = _Finish("kineto", raw=raw, dst=dst, name=name)
        moved = getattr(prof, "canning_trace_moved", None)
        if moved is not None:  # torch saves a trace once: the profile's summaries read it from here, once published
            moved(dst, finish.published.wait)
        return finish

    def _finish_window(self, manifest: Manifest, finish: "_Finish", written) -> None:
        """Publish the trace (gzip), then the manifest (last: its presence means the window is complete),
        then the scalars and the digest or upload. Runs in the background for Kineto windows."""
        try:
            if finish.kind == "kineto":
                try:
                    publish = files.publish_gzip if self.use_gzip else files.publish_plain
                    manifest.trace_events = publish(finish.raw, finish.dst)
                finally:
                    files.discard_temp(finish.raw)
                    finish.published.set()  # a reader waiting for the trace goes on (and finds it, or not)
                finish.entries = [FileEntry(finish.name, os.path.getsize(finish.dst))]
            untraced()  # here and below: a window that started meanwhile hooked this thread; unhook it
            if self._static is None:
                self._static = {"devices": identity.devices(), "versions": identity.versions()}
            manifest.devices, manifest.versions = self._static["devices"], self._static["versions"]
            if finish.snapshot is not None:  # before the manifest, which names it
                finish.entries = finish.entries + self._publish_snapshot(*finish.snapshot, manifest.window)
            manifest.files = finish.entries
            untraced()
            files.publish_json(manifest.to_dict(), os.path.join(self.local_dir, manifest.manifest))
        except Exception as e:  # disk full, read-only, path under a file...: training goes on
            self._warn("window", manifest.window, f"{type(e).__name__}: {e}")
            return
        self._failing.discard("window")
        if written is not None:  # a capture's status names the windows it wrote
            written(manifest.manifest)
        untraced()
        self._write_scalars(manifest)
        untraced()
        if self.remote is not None:  # the uploader waits for torch_npu's background analysis (async)
            scalars = self._scalars.path if self._scalars is not None else None
            self.remote.submit(manifest, scalars, self.digest and manifest.analysis in ("", "sync", "async"))
        elif self.digest and manifest.analysis in ("", "sync"):  # else torch_npu's output is not there yet
            self._start_digest(os.path.join(self.local_dir, manifest.manifest))

    def _memory_snapshot(self, prof, stem) -> tuple | None:
        """(pickled bytes, final path) of the allocator's snapshot of the window (ps.Profile(memory_snapshot=True)),
        taken here on the training thread; None when there is none. A failure only loses the snapshot."""
        take = getattr(prof, "canning_memory_snapshot", None)
        snap = take() if take is not None else None
        if snap is None:
            return None
        try:
            return pickle.dumps(snap, protocol=4), os.path.join(self.local_dir, f"{stem}.snapshot.pickle")
        except Exception as e:
            self._warn("memory snapshot", 0, f"{type(e).__name__}: {e}")
            return None

    # ps.Profile(memory_snapshot_on_oom=True) calls this from the allocator's out-of-memory observer
    def canning_write_oom_snapshot(self, snapshot: dict) -> str | None:
        """The allocator's snapshot at an out-of-memory error, written into the run folder as
        `<worker>.<ms>.snapshot.pickle` (a snapshot-only window for discovery); its path, or None."""
        worker = self.worker_name or identity.default_worker(identity.dist_info()[0])
        dst = os.path.join(self.local_dir, f"{worker}.{time.time_ns() // 1_000_000:013d}.snapshot.pickle")
        try:
            os.makedirs(self.local_dir, exist_ok=True)
            files.publish_bytes(pickle.dumps(snapshot, protocol=4), dst)
        except Exception as e:
            self._warn("memory snapshot", "at the out-of-memory error", f"{type(e).__name__}: {e}")
            return None
        logging.warning("canning: out of memory: the allocator's snapshot is in %s", dst)
        return dst

    def _publish_snapshot(self, data: bytes, dst: str, window) -> list:
        """The snapshot's file, atomically (a temp name, then a rename), as the manifest lists it; [] on failure."""
        try:
            files.publish_bytes(data, dst)
        except Exception as e:  # disk full, read-only...: the window is written without its snapshot
            self._warn("memory snapshot", window, f"{type(e).__name__}: {e}")
            return []
        return [FileEntry(os.path.basename(dst), len(data))]

    def _npu_window(self, prof, worker):
        folder = npu.window_folder(prof, self.local_dir)  # the exact folder of this window, never a guess
        if self._npu_fn is None:
            self._make_npu_handler(worker)
        if self._npu_fn is None:
            raise OSError("torch_npu's tensorboard_trace_handler could not be created; see the debug log")
        self._npu_fn(npu.backend_profiler(prof))  # torch_npu's analysis: prints its errors, never raises
        analysis = npu.analysis_outcome(folder, self.analyse_flag, self.async_mode, npu.handler_accepts("async_mode"))
        entry = FileEntry(os.path.basename(folder), files.tree_bytes(folder), "ascend_pt")
        return [entry], analysis

    def _make_npu_handler(self, worker=None):
        if worker is None:
            worker = self.worker_name or identity.default_worker(identity.dist_info()[0])
        os.makedirs(self.local_dir, exist_ok=True)
        try:
            self._npu_fn = self._npu_factory(self.local_dir, worker, self.analyse_flag, self.async_mode)
        except ImportError as e:  # not on an Ascend machine: the CPU path needs none of it
            log.debug("torch_npu handler not created: %s", e)

    # --- side outputs ------------------------------------------------------------------------------
    def _write_scalars(self, manifest: Manifest):
        times = [(e - b) / 1e6 for _s, b, e in manifest.step_times_ns]
        values = {"step_time_ms": sum(times) / len(times) if times else None,
                  "trace_events": manifest.trace_events,
                  "trace_bytes": sum(f.bytes or 0 for f in manifest.files)}
        step = manifest.steps[-1] if manifest.steps else manifest.window
        try:
            if self._scalars is None:
                self._scalars = ScalarWriter(self.local_dir, manifest.rank, manifest.world_size)
            self._scalars.write(step, values, manifest.wall_end_ns / 1e9)
            self._failing.discard("scalars")
        except Exception as e:
            self._warn("scalars", manifest.window, f"{type(e).__name__}: {e}")

    def _start_digest(self, manifest_path):
        # reaped here, in the thread that starts them (the background writer for Kineto windows): reaping on
        # the training thread raced with this append and could drop a running child from the list
        self._reap()
        try:
            self._children.append(subprocess.Popen(
                [sys.executable, "-m", DIGEST_MODULE, manifest_path], env=child_env(),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True))
        except OSError as e:
            log.warning("canning: could not start the background digest for %s: %s", manifest_path, e)

    def _reap(self):
        self._children = [c for c in self._children if c.poll() is None]  # no zombies left behind

    def _uploaded(self, answer: dict):
        """The uploader's answer for one window (read at a later window's call, or at stop())."""
        window = answer["window"][: -len(".canning.json")]
        for what, error in (("upload", answer["error"]), ("uploaded scalars", answer["scalars_error"])):
            if error is None:
                self._failing.discard(what)
            else:
                self._warn(what, window, error)

    def _warn(self, what: str, window, why: str):
        """One warning per streak of errors of one kind, naming the window and the error."""
        if what in self._failing:
            log.debug("canning: %s of window %s not written to %s: %s", what, window, self.dir_name, why)
            return
        self._failing.add(what)
        logging.warning("canning: could not write profiler %s %s into %r (%s); training continues, "
                        "later windows will retry", _SHOWN.get(what, what), window, self.dir_name, why)


class _Finish:
    """What is left to publish of one window after the export."""

    def __init__(self, kind: str, raw: str = "", dst: str = "", name: str = "", entries=None):
        self.kind, self.raw, self.dst, self.name = kind, raw, dst, name
        self.entries = entries or []
        self.snapshot = None  # (pickled bytes, final path) of the allocator's snapshot, or None
        self.published = threading.Event()  # set once the trace is published (or failed)


def _trigger(prof) -> dict | None:
    """Why the job asked for this window itself (ps.on_demand(trigger=...)); None otherwise."""
    t = getattr(prof, "capture_trigger", None)
    return dict(t) if isinstance(t, dict) else None


def _settings(prof) -> dict:
    s = getattr(prof, "settings", None)
    if isinstance(s, dict):
        return dict(s)
    sched = getattr(prof, "schedule", None)  # a raw torch.profiler.profile
    return {"activities": sorted(getattr(a, "name", str(a)) for a in getattr(prof, "activities", []) or []),
            "schedule": getattr(sched, "__qualname__", repr(sched)) if sched is not None else None,
            **{k: bool(getattr(prof, k, False)) for k in PROFILER_SETTINGS}}
