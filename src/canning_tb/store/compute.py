"""Turning windows into data, and where that work runs: in this process, in one spawned child (a
long-lived host keeps neither the parse's peak memory nor the GIL), in a pool of processes (many
windows at once), or in one low-priority background process (the timeline index). Pure of the
Store: each job takes a Window and the cache paths, so it runs in any process.
"""
from __future__ import annotations

import logging
import multiprocessing as mp
import os
import threading
from concurrent.futures import BrokenExecutor, ProcessPoolExecutor, as_completed
from typing import Callable, Iterator

from canning_tb.util import safe_files
from canning_tb.util.manifest import DIGEST_SUFFIX

from . import cache
from .discover import Window
from .heap import reuse_freed_memory, tune_this_process

log = logging.getLogger("canning_tb.store")


def read_window(window: Window):
    """The EventTable of one window, by its format (readers are imported on first use); its files are
    opened only inside the logdir it was found in (safe_files: this may run in another process)."""
    safe_files.confine(window.root)
    if window.format == "kineto":  # a Kineto object, or a bare array as torch_npu's export_chrome_trace writes
        from canning_tb.ingest.chrome_array import read_chrome_trace
        return read_chrome_trace(window.path)
    if window.format == "canning":
        from canning_tb.ingest.window import read_canning_window
        return read_canning_window(window.path)
    if window.format == "ascend":
        from canning_tb.ingest.ascend.read import read_ascend
        return read_ascend(window.path)
    if window.format == "snapshot":  # a memory snapshot alone: no events; the snapshot is read on its own
        from canning_tb.ingest.snapshot.window import snapshot_only_table
        return snapshot_only_table(window.path)
    raise ValueError(f"unknown window format {window.format!r}")


@reuse_freed_memory()  # the table is freed when the function returns, before the heap is trimmed
def digest_of(window: Window, worker: str = ""):
    """Read and analyse one window (pure; runs in worker processes too)."""
    return _digest_table(read_window(window), worker)


def _digest_table(table, worker: str):
    from canning_tb.analysis.build import build_digest
    digest = build_digest(table)
    if worker and not digest.window.worker:
        digest.window.worker = worker
    return digest


def events_prefix(digest_path: str) -> str:
    """The cache entry of a window's columnar events sits beside its digest."""
    return digest_path[: -len(DIGEST_SUFFIX)] + ".events"


def write_cache(write, path: str) -> None:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write(path)
    except OSError as e:  # a cache we cannot write only costs time
        log.warning("canning: cannot write cache %s: %s", path, e)


@reuse_freed_memory()
def compute_and_cache(window: Window, worker: str, digest_path: str):
    """Read a window once; cache its columnar events and its digest, then keep the cache within its
    budget. The events are written while the digest is built: the write mostly waits on the disk,
    which lets the analysis have the GIL (the digest never changes the table)."""
    table = read_window(window)
    saving = threading.Thread(target=write_cache, args=(table.save, events_prefix(digest_path)),
                              name="canning-save-events")
    saving.start()
    try:
        digest = _digest_table(table, worker)
    finally:
        saving.join()
    write_cache(lambda path: cache.write_atomic(path, digest.SerializeToString()), digest_path)
    cache.enforce_budget(digest_path)
    return digest


@reuse_freed_memory()
def table_into_cache(window: Window, prefix: str):
    """Read a window's events here and cache them (a window digested elsewhere, or a cache lost)."""
    table = read_window(window)
    write_cache(table.save, prefix)
    cache.enforce_budget(prefix + ".npz")
    return table


def build_timeline_index(digest_path: str) -> None:
    """Worker-process job: the timeline's level-of-detail index of a digested window, from its cached
    events, so the first timeline view only loads it (a missing events cache: the view builds it)."""
    from canning_tb.ingest.table import EventTable
    from canning_tb.timeline.index import INDEX_SUFFIX, cached_index
    prefix = events_prefix(digest_path)
    if os.path.exists(prefix + INDEX_SUFFIX) or not os.path.exists(prefix + ".json"):
        return
    write_cache(lambda path: cached_index(EventTable.load(prefix, lazy=True), path), prefix + INDEX_SUFFIX)


def compute_into_cache(window: Window, worker: str, cache_path: str) -> tuple[str, str] | None:
    """Worker-process job: digest one window into the cache. Returns (file, problem) or None."""
    from canning_tb.ingest.table import InputError
    try:
        compute_and_cache(window, worker, cache_path)
    except InputError as e:
        return (e.file, e.problem)
    return None


class ChildStartError(OSError):
    """No process could be started to read a window (process or memory limits): an answer about that
    window's file that is not remembered, since the next request may well start one."""


def compute_in_child(window: Window, worker: str, digest_path: str) -> tuple[str, str] | None:
    """compute_and_cache in one spawned process; (file, problem) for unreadable input.

    A crash of the child is not an input error: it is raised here, and nothing is remembered.
    """
    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn"), initializer=tune_this_process) as pool:
        try:
            future = pool.submit(compute_into_cache, window, worker, digest_path)
        except OSError as e:  # the spawn itself failed (EAGAIN, ENOMEM): no child ever ran
            raise ChildStartError(e.errno, _no_process(e), window.path) from e
        return future.result()


def _no_process(e: OSError) -> str:
    return (f"no process could be started to read it ({e.strerror or e}); "
            "try again when the machine has processes or memory to spare")


def compute_many(todo: list[tuple[tuple, Window, str]], max_workers: int) -> Iterator[tuple[tuple, object, bool]]:
    """Digest each (ident, window, cache path) of `todo` into the cache, in up to `max_workers` spawned
    processes; yields (ident, (file, problem) or None, lasting) as they finish. `lasting`: False when
    the job crashed rather than found its input unreadable (nothing to remember then)."""
    if len(todo) == 1 or max_workers == 1:
        for ident, window, path in todo:
            yield ident, compute_into_cache(window, ident[1], path), True
        return
    # the children exit with the pool: they may tune the allocator (heap.py), the caller may not
    with ProcessPoolExecutor(max_workers=min(max_workers, len(todo)), mp_context=mp.get_context("spawn"),
                             initializer=tune_this_process) as pool:
        futures, unstarted = {}, []
        for ident, w, p in todo:
            try:
                futures[pool.submit(compute_into_cache, w, ident[1], p)] = ident
            except OSError as e:  # the spawn failed (EAGAIN, ENOMEM): this window and the rest wait for a retry
                unstarted = [(i, (w.path, _no_process(e))) for i, w, _ in todo[len(futures):]]
                break
        for ident, err in unstarted:
            log.warning("canning: digest of %s not started: %s", ident, err[1])
            yield ident, err, False
        for future in as_completed(futures):
            ident = futures[future]
            try:
                yield ident, future.result(), True
            except Exception as e:  # process boundary: a crash in one window must not stop the others
                log.warning("canning: digest of %s crashed", ident, exc_info=True)
                yield ident, (ident[2], f"{type(e).__name__}: {e}"), False


class BackgroundJobs:
    """Jobs run one at a time in one spawned low-priority process, started on first use; a failed job
    is logged and costs only itself (the timeline then builds its index on demand)."""

    def __init__(self):
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._pending: dict[str, object] = {}  # key -> Future of the job not yet done

    def submit(self, key: str, job: Callable, *args) -> None:
        with self._lock:
            for fresh in (False, True):
                try:
                    future = self._pending[key] = self._started().submit(job, *args)
                    break
                except (BrokenExecutor, OSError) as e:  # the process died (killed for memory), or none started
                    self._pool = None  # (limits): a fresh one, once; else the job is skipped
                    if fresh or isinstance(e, OSError):
                        log.warning("canning: background job %s not started: %s", key, e)
                        return
        future.add_done_callback(_log_failure)
        future.add_done_callback(lambda done: self._forget(key, done))

    def _started(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn"),
                                             initializer=_lower_priority)
        return self._pool

    def wait(self, key: str, timeout: float) -> None:
        """Until the job under `key` is done (or `timeout` seconds); at once when there is none."""
        from concurrent.futures import wait
        with self._lock:
            future = self._pending.get(key)
        if future is not None:
            wait([future], timeout=timeout)

    def _forget(self, key: str, done) -> None:
        with self._lock:
            if self._pending.get(key) is done:
                del self._pending[key]


def _lower_priority() -> None:
    try:
        os.nice(10)
    except (AttributeError, OSError):  # not allowed here, or no os.nice (Windows): the same priority
        pass


def _log_failure(future) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.warning("canning: background job failed: %s", future.exception())
