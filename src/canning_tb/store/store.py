"""logdir -> runs -> workers (ranks) -> windows, each window's digest computed once and cached.

The store is the only place that turns a discovered window into data: it dispatches to the
reader of the window's format, builds the digest, and keeps both in the cache. Ids that come
from outside (HTTP requests, the command line) are only ever looked up in what discovery found.
"""
from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Callable, Iterable

from google.protobuf.message import DecodeError

from canning_tb import manifest, remote_fs, safe_files

from . import cache
from .discover import Run, Window, Worker, discover

log = logging.getLogger("canning_tb.store")

SOURCE_DIGEST_SUFFIX = manifest.DIGEST_SUFFIX  # cache entries are named like the handler's digests


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
    raise ValueError(f"unknown window format {window.format!r}")


def digest_of(window: Window, worker: str = ""):
    """Read and analyse one window (pure; runs in worker processes too)."""
    return _digest_table(read_window(window), worker)


def _digest_table(table, worker: str):
    from canning_tb.analysis.build import build_digest
    digest = build_digest(table)
    if worker and not digest.window.worker:
        digest.window.worker = worker
    return digest


def _schema() -> int:
    from canning_tb.analysis.digest import SCHEMA_VERSION  # light: no numpy, no analysis modules
    return SCHEMA_VERSION


def source_digest_path(window: Window) -> str | None:
    if window.format != "canning":
        return None
    return manifest.digest_path(window.path)


def fresh_source_digest(window: Window) -> str | None:
    """The handler's digest of the window when there is one of the files there now: their sizes are the
    ones the manifest records (traces are written once, under names no other window has), or, where the
    manifest cannot say (torch_npu's folder), the digest is as new as every file of the window."""
    src = source_digest_path(window)
    if not src or not os.path.exists(src):
        return None
    if window.sizes and all(_size(path) == size for path, size in window.sizes):
        return src
    newest = max((os.stat(name).st_mtime_ns for name in window.files if os.path.exists(name)), default=0)
    return src if os.stat(src).st_mtime_ns >= newest else None


def _size(path: str) -> int | None:
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def events_prefix(digest_path: str) -> str:
    """The cache entry of a window's columnar events sits beside its digest."""
    return digest_path[: -len(SOURCE_DIGEST_SUFFIX)] + ".events"


def _write_cache(write, path: str) -> None:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write(path)
    except OSError as e:  # a cache we cannot write only costs time
        log.warning("canning: cannot write cache %s: %s", path, e)


def compute_and_cache(window: Window, worker: str, digest_path: str):
    """Read a window once; cache its columnar events and its digest, then keep the cache within its
    budget. The events are written while the digest is built: the write mostly waits on the disk,
    which lets the analysis have the GIL (the digest never changes the table)."""
    table = read_window(window)
    saving = threading.Thread(target=_write_cache, args=(table.save, events_prefix(digest_path)),
                              name="canning-save-events")
    saving.start()
    try:
        digest = _digest_table(table, worker)
    finally:
        saving.join()
    _write_cache(lambda path: cache.write_atomic(path, digest.SerializeToString()), digest_path)
    cache.enforce_budget(digest_path)
    return digest


def build_timeline_index(digest_path: str) -> None:
    """Worker-process job: the timeline's level-of-detail index of a digested window, from its cached
    events, so the first timeline view only loads it (a missing events cache: the view builds it)."""
    from canning_tb.ingest.table import EventTable
    from canning_tb.timeline.index import INDEX_SUFFIX, cached_index
    prefix = events_prefix(digest_path)
    if os.path.exists(prefix + INDEX_SUFFIX) or not os.path.exists(prefix + ".json"):
        return
    _write_cache(lambda path: cached_index(EventTable.load(prefix, lazy=True), path), prefix + INDEX_SUFFIX)


def _compute_into_cache(window: Window, worker: str, cache_path: str) -> tuple[str, str] | None:
    """Worker-process job: digest one window into the cache. Returns (file, problem) or None."""
    from canning_tb.ingest.table import InputError
    try:
        compute_and_cache(window, worker, cache_path)
    except InputError as e:
        return (e.file, e.problem)
    return None


def _compute_in_child(window: Window, worker: str, digest_path: str) -> tuple[str, str] | None:
    """compute_and_cache in one spawned process; (file, problem) for unreadable input.

    A crash of the child is not an input error: it is raised here, and nothing is remembered.
    """
    import multiprocessing as mp
    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        return pool.submit(_compute_into_cache, window, worker, digest_path).result()


class _BackgroundJobs:
    """Jobs run one at a time in one spawned low-priority process, started on first use; a failed job
    is logged and costs only itself (the timeline then builds its index on demand)."""

    def __init__(self):
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._pending: dict[str, object] = {}  # key -> Future of the job not yet done

    def submit(self, key: str, job: Callable, *args) -> None:
        import multiprocessing as mp
        with self._lock:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn"),
                                                 initializer=_lower_priority)
            future = self._pending[key] = self._pool.submit(job, *args)
        future.add_done_callback(_log_failure)
        future.add_done_callback(lambda done: self._forget(key, done))

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
    except OSError:  # not allowed here: run at the same priority
        pass


def _log_failure(future) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.warning("canning: background job failed: %s", future.exception())


class Store:
    def __init__(self, logdir: str, cache_dir: str | None = None, max_workers: int | None = None,
                 memory_items: int = 64, recursive: bool = True, select=None,
                 isolate_bytes: int | None = None, timeline_index: bool = False):
        # a remote logdir (s3://...) is read from a local copy (mirror.py); `logdir` is where discovery looks
        self.url = logdir if remote_fs.is_url(logdir) else None
        self.remote = None
        if self.url:
            from .mirror import Mirror
            self.remote = Mirror(self.url)
        self.logdir = self.remote.local if self.remote else logdir
        self._recursive, self._select = recursive, select
        # Windows larger than this are parsed in a child process: a long-lived host (TensorBoard)
        # keeps neither the parse's peak memory nor the GIL while it runs. None: always in-process.
        self.isolate_bytes = isolate_bytes
        # a viewer's store also builds each window's timeline index once the digest is handed back, in a
        # background process (the CLI and batch digests never show a timeline: they skip it)
        self._indexer = _BackgroundJobs() if timeline_index else None
        self.cache_dir = cache_dir
        self.max_workers = max_workers or max(1, min(os.cpu_count() or 1, 8))
        self._lock = threading.RLock()
        self._runs: dict[str, Run] = {}
        self._digests: OrderedDict[str, object] = OrderedDict()  # key -> Digest, LRU
        self._errors: dict[str, tuple[str, str]] = {}  # key -> (file, problem) of unreadable windows
        self._computing: dict[str, threading.Lock] = {}  # key -> lock: one computation per window
        self._memory_items = memory_items
        self.refresh()

    # -- discovery -------------------------------------------------------------------------
    def refresh(self) -> None:
        """Rescan; a remote logdir that cannot be read raises remote_fs.RemoteError (the last listing stays)."""
        if self.remote is not None:
            self.remote.sync()
        runs = discover(self.logdir, self._recursive, self._select)
        with self._lock:
            self._runs = runs

    def runs(self) -> list[str]:
        with self._lock:
            return sorted(self._runs)

    def run(self, run: str) -> Run:
        with self._lock:
            return self._runs[run]

    def workers(self, run: str) -> list[Worker]:
        return sorted(self.run(run).workers.values(), key=lambda w: (w.rank < 0, w.rank, w.name))

    def windows(self, run: str, worker: str) -> list[Window]:
        return list(self.run(run).workers[worker].windows)

    def window(self, run: str, worker: str, window_id: str) -> Window:
        for w in self.windows(run, worker):
            if w.id == window_id:
                return w
        raise KeyError(window_id)

    def position(self, run: str, worker: str, window_id: str) -> int:
        """The index of a window among its worker's windows (KeyError for unknown ids)."""
        ids = [w.id for w in self.windows(run, worker)]
        if window_id not in ids:
            raise KeyError(window_id)
        return ids.index(window_id)

    def windows_at(self, run: str, position: int) -> list[tuple[Worker, Window]]:
        """The window at `position` of every worker of the run that has one (workers in order):
        the windows that cross-rank analysis compares."""
        out = []
        for worker in self.workers(run):
            windows = self.windows(run, worker.name)
            if 0 <= position < len(windows):
                out.append((worker, windows[position]))
        return out

    # -- data ----------------------------------------------------------------------------------
    def local_window(self, run: str, worker: str, window_id: str) -> Window:
        """The window, its files copied here first when the logdir is remote."""
        window = self.window(run, worker, window_id)
        self._fetch(window)
        return window

    def _fetch(self, window: Window, unless_digested: bool = False) -> bool:
        """Copy a remote window's files here (none when its digest at the source is enough); True when copied."""
        if self.remote is None:
            return False
        if unless_digested and fresh_source_digest(window):
            return False
        return self.remote.ensure(window.files)

    def _key(self, run: str, window: Window) -> tuple[str, str]:
        key = cache.window_key(window, _schema())
        return key, cache.digest_file(self.run(run).path, key, self.cache_dir)

    def digest_key(self, run: str, window: Window) -> str:
        """The identity of a window's digest: it changes when any of the window's files changes."""
        return self._key(run, window)[0]

    def digest(self, run: str, worker: str, window_id: str):
        """The digest of one window: from memory, the handler's own, the cache, or computed now
        (once, however many threads ask for it at the same time)."""
        window = self.window(run, worker, window_id)
        self._fetch(window, unless_digested=True)
        key, path = self._key(run, window)
        with self._lock:
            lock = self._computing.setdefault(key, threading.Lock())
        with lock:
            return self._digest(run, window, worker, key, path)

    def _digest(self, run: str, window: Window, worker: str, key: str, path: str):
        from canning_tb.analysis import digest_pb2
        from canning_tb.ingest.table import InputError
        with self._lock:
            if key in self._digests:
                self._digests.move_to_end(key)
                return self._digests[key]
            if key in self._errors:
                raise InputError(*self._errors[key])
        digest = self._load_cached(window, path, digest_pb2.Digest)
        if digest is None and self._fetch(window):  # a remote digest at the source that did not do: the key changed
            key, path = self._key(run, window)
            digest = self._load_cached(window, path, digest_pb2.Digest)
        if digest is None:
            try:
                digest = self._compute(window, worker, path, digest_pb2)
            except InputError as e:  # remembered until the files change (the key changes)
                with self._lock:
                    self._errors[key] = (e.file, e.problem)
                raise
            if self._indexer:
                self._indexer.submit(path, build_timeline_index, path)
        with self._lock:
            self._digests[key] = digest
            while len(self._digests) > self._memory_items:
                self._digests.popitem(last=False)
        return digest

    def digest_part(self, run: str, worker: str, window_id: str, fields: tuple):
        """The window's digest with only `fields` read (store/digest_part.py), for views across many
        ranks; the whole digest when it is in memory or not computed yet (digest() computes it)."""
        from .digest_part import part_class
        window = self.window(run, worker, window_id)
        self._fetch(window, unless_digested=True)
        key, path = self._key(run, window)
        with self._lock:
            found, failed = self._digests.get(key), key in self._errors
        if found is None and not failed:
            found = self._load_cached(window, path, part_class(fields))
        return self.digest(run, worker, window_id) if found is None else found

    def wait_timeline_index(self, run: str, worker: str, window_id: str, timeout: float = 60.0) -> None:
        """Until the background build of the window's timeline index (if one runs) is done: the timeline
        then loads it instead of building it a second time."""
        if self._indexer:
            self._indexer.wait(self._key(run, self.window(run, worker, window_id))[1], timeout)

    def has_digest(self, run: str, worker: str, window_id: str) -> bool:
        """Whether the window's digest is already here (memory, cache, or written at the source)."""
        return self._has_digest(run, self.window(run, worker, window_id))

    def digest_cache_path(self, run: str, worker: str, window_id: str) -> str:
        """The cache file of the window's digest (a digest computed elsewhere is stored there)."""
        return self._key(run, self.window(run, worker, window_id))[1]

    def _has_digest(self, run: str, window: Window) -> bool:
        """Whether the window's digest is in memory, in the cache or at the source (as new as its files)."""
        key, path = self._key(run, window)
        with self._lock:
            if key in self._digests:
                return True
        return os.path.exists(path) or fresh_source_digest(window) is not None

    def _compute(self, window: Window, worker: str, path: str, digest_pb2):
        """Digest a window here, or in a child process when its files are (or expand to) more than
        `isolate_bytes`: a gzip file is only known to be big while it is decompressed."""
        from canning_tb.ingest import _json
        from canning_tb.ingest.table import InputError
        if not self._isolate(window):
            try:
                with _json.host_limit(self.isolate_bytes):
                    return compute_and_cache(window, worker, path)
            except _json.TooBigForThisProcess:
                pass
        err = _compute_in_child(window, worker, path)
        if err:
            raise InputError(*err)
        digest = self._load_cached(window, path, digest_pb2.Digest)
        if digest is None:
            raise InputError(window.path, "the digest computed in a child process could not be read back")
        return digest

    def _isolate(self, window: Window) -> bool:
        if self.isolate_bytes is None:
            return False
        return sum(os.path.getsize(f) for f in window.files if os.path.isfile(f)) > self.isolate_bytes

    @staticmethod
    def _load_cached(window: Window, path: str, message):
        src = fresh_source_digest(window)
        for candidate in ([src] if src else []) + [path]:
            try:
                with safe_files.open_file(candidate) as f:  # a regular file, inside the logdir when it is there
                    digest = message.FromString(f.read())
            except (OSError, DecodeError):  # a bad entry is just recomputed
                continue
            if digest.schema_version == _schema():
                if candidate == path:
                    cache.touch(path)  # recently used: the last to be evicted
                return digest
        return None

    def events_prefix(self, run: str, worker: str, window_id: str) -> str:
        """Where a window's columnar events are cached (other per-window caches sit beside them)."""
        return events_prefix(self._key(run, self.window(run, worker, window_id))[1])

    def table(self, run: str, worker: str, window_id: str):
        """The columnar events of one window (cached as .npz beside the digest)."""
        from canning_tb.ingest.table import EventTable
        window = self.local_window(run, worker, window_id)
        prefix = self.events_prefix(run, worker, window_id)
        try:
            table = EventTable.load(prefix)
            cache.touch(prefix + ".npz")
            return table
        except (OSError, ValueError, KeyError):
            pass
        if self.isolate_bytes is not None:  # a long-lived host: big windows are parsed in a child, as for digests
            from canning_tb.analysis import digest_pb2
            self._compute(window, worker, self._key(run, window)[1], digest_pb2)
            try:
                return EventTable.load(prefix)
            except (OSError, ValueError, KeyError):  # the cache cannot be written: read it here
                pass
        table = read_window(window)
        _write_cache(table.save, prefix)
        cache.enforce_budget(prefix + ".npz")
        return table

    # -- many windows at once --------------------------------------------------------------------
    def prefetch(self, items: Iterable[tuple[str, str, str]],
                 progress: Callable[[int, int], None] | None = None) -> dict[tuple[str, str, str], str]:
        """Digest many windows in parallel processes (bounded by the cores) into the cache.

        Returns {(run, worker, window): error} for the windows that could not be read.
        """
        import multiprocessing as mp
        todo = []
        keys: dict[tuple[str, str, str], str] = {}
        for run, worker, wid in items:
            window = self.window(run, worker, wid)
            if self._has_digest(run, window):
                continue  # digested already (here, in the cache, or at the source)
            self._fetch(window)
            key, path = self._key(run, window)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            todo.append(((run, worker, wid), window, path))
            keys[(run, worker, wid)] = key

        def results():
            """(ident, error or None, lasting) of each window, as they finish."""
            if len(todo) == 1 or self.max_workers == 1:
                for ident, window, path in todo:
                    yield ident, _compute_into_cache(window, ident[1], path), True
                return
            workers = min(self.max_workers, len(todo))
            with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn")) as pool:
                futures = {pool.submit(_compute_into_cache, w, ident[1], p): ident for ident, w, p in todo}
                for fut in as_completed(futures):
                    ident = futures[fut]
                    try:
                        err, lasting = fut.result(), True
                    except Exception as e:  # process boundary: a crash in one window must not stop the others
                        log.warning("canning: digest of %s crashed", ident, exc_info=True)
                        err, lasting = (ident[2], f"{type(e).__name__}: {e}"), False
                    yield ident, err, lasting

        errors: dict[tuple[str, str, str], str] = {}
        total = len(todo)
        if progress:
            progress(0, total)
        if not todo:
            return errors
        for done, (ident, err, lasting) in enumerate(results(), 1):
            if err:
                if lasting:  # an input error stays true until the files change (the key changes)
                    with self._lock:
                        self._errors[keys[ident]] = err
                errors[ident] = f"{err[0]}: {err[1]}"
            if progress:
                progress(done, total)
        return errors
