"""logdir -> runs -> workers (ranks) -> windows: the catalog, and each window's data through it.

The Store is the catalog of what discovery found (ids that come from outside, HTTP requests or the
command line, are only ever looked up here) and the one door to a window's data: its digest is
served from memory (an LRU), a digest at the source or the cache (lookup.py), else computed once
(compute.py: here, in a child process, or many at once in a pool) into the cache (cache.py).
"""
from __future__ import annotations

import logging
import os
import threading
from typing import Callable, Iterable

from canning_tb.util import remote_fs
from canning_tb.util.lru import LRU

from . import cache, lookup
from .chip_digest import build_for_chip, canonical, chip_entry
from .compute import (BackgroundJobs, build_timeline_index, compute_and_cache, compute_in_child, compute_many,
                      digest_of, events_prefix, read_window, table_into_cache, write_cache)
from .discover import Run, Window, Worker, discover

log = logging.getLogger("canning_tb.store")

__all__ = ["Store", "digest_of", "read_window"]


class Store:
    def __init__(self, logdir: str, cache_dir: str | None = None, max_workers: int | None = None,
                 memory_items: int = 64, recursive: bool = True, select=None,
                 isolate_bytes: int | None = None, timeline_index: bool = False, chip: str | None = None,
                 follow_links: bool = False):
        # a remote logdir (s3://...) is read from a local copy (mirror.py); `logdir` is where discovery looks
        self.url = logdir if remote_fs.is_url(logdir) else None
        self.remote = None
        if self.url:
            from .mirror import Mirror
            self.remote = Mirror(self.url)
        self.logdir = self.remote.local if self.remote else logdir
        self._recursive, self._select = recursive, select
        self.follow_links = follow_links  # links out of the logdir are read (canning-prof --follow-links)
        # Windows larger than this are parsed in a child process: a long-lived host (TensorBoard)
        # keeps neither the parse's peak memory nor the GIL while it runs. None: always in-process.
        self.isolate_bytes = isolate_bytes
        # a viewer's store also builds each window's timeline index once the digest is handed back, in a
        # background process (the CLI and batch digests never show a timeline: they skip it)
        self._indexer = BackgroundJobs() if timeline_index else None
        self.cache_dir = cache_dir
        # the chip chosen for every digest this store gives (canning-prof --chip); None: the files' (chip_digest.py)
        self.chip = canonical(chip) if chip else None
        self.max_workers = max_workers or max(1, min(os.cpu_count() or 1, 8))
        self._lock = threading.RLock()
        self._runs: dict[str, Run] = {}
        self._digests = LRU(memory_items)  # window key -> Digest
        self._errors: dict[str, tuple[str, str]] = {}  # key -> (file, problem) of unreadable windows
        self._computing: dict[str, threading.Lock] = {}  # key -> lock: one computation per window
        self._snapshots = LRU(4)  # (path, size, mtime) -> ingest.snapshot Snapshot: a few, they can be big
        self.refresh()

    # -- the catalog ---------------------------------------------------------------------------
    def refresh(self) -> None:
        """Rescan; a remote logdir that cannot be read raises remote_fs.RemoteError (the last listing stays)."""
        if self.remote is not None:
            self.remote.sync()
        runs = discover(self.logdir, self._recursive, self._select, self.follow_links)
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

    # -- where a window's data is ------------------------------------------------------------------
    def local_window(self, run: str, worker: str, window_id: str) -> Window:
        """The window, its files copied here first when the logdir is remote."""
        window = self.window(run, worker, window_id)
        self._fetch(window)
        return window

    def _fetch(self, window: Window, unless_digested: bool = False) -> bool:
        """Copy a remote window's files here (none when its digest at the source is enough); True when copied."""
        if self.remote is None:
            return False
        if unless_digested and lookup.usable_source_digest(window):
            return False
        return self.remote.ensure(window.files)

    def _key(self, run: str, window: Window) -> tuple[str, str]:
        key = cache.window_key(window, lookup.schema(), self.logdir)
        return key, cache.digest_file(self.run(run).path, key, self.cache_dir)

    def digest_key(self, run: str, window: Window) -> str:
        """The identity of a window's digest: it changes when any of the window's files changes."""
        return self._key(run, window)[0]

    def digest_cache_path(self, run: str, worker: str, window_id: str) -> str:
        """The cache file of the window's digest (a digest computed elsewhere is stored there)."""
        return self._key(run, self.window(run, worker, window_id))[1]

    def events_prefix(self, run: str, worker: str, window_id: str) -> str:
        """Where a window's columnar events are cached (other per-window caches sit beside them)."""
        return events_prefix(self._key(run, self.window(run, worker, window_id))[1])

    def has_digest(self, run: str, worker: str, window_id: str, current: bool = False) -> bool:
        """Whether the window's digest is here already (memory, cache, or written at the source), so that
        digest() computes nothing; `current`: and made by this analysis code (lookup.py)."""
        return self._has_digest(run, self.window(run, worker, window_id), current)

    def _has_digest(self, run: str, window: Window, current: bool = False) -> bool:
        key, path = self._key(run, window)
        return key in self._digests or os.path.exists(path) or \
            lookup.usable_source_digest(window, current_only=current) is not None

    # -- digests -------------------------------------------------------------------------------------
    def digest(self, run: str, worker: str, window_id: str, chip: str | None = None):
        """The digest of one window: from memory, the handler's own, the cache, or computed now
        (once, however many threads ask for it at the same time); `chip` (a canonical name, else the
        store's own): the one for that chip (chip_digest.py)."""
        chip = chip or self.chip
        if chip:
            return self._chip_digest(run, worker, window_id, chip)
        window = self.window(run, worker, window_id)
        self._fetch(window, unless_digested=True)
        key, path = self._key(run, window)
        with self._once(key):
            return self._digest(run, window, worker, key, path)

    def _once(self, key: str) -> threading.Lock:
        """The lock of one digest key: threads asking for the same digest at once compute it once."""
        with self._lock:
            return self._computing.setdefault(key, threading.Lock())

    def _digest(self, run: str, window: Window, worker: str, key: str, path: str):
        from canning_tb.analysis import digest_pb2
        from canning_tb.ingest.table import InputError
        found = self._digests.get(key)
        if found is not None:
            return found
        with self._lock:
            if key in self._errors:
                raise InputError(*self._errors[key])
        digest = lookup.load(window, path, digest_pb2.Digest)
        if digest is None and self._fetch(window):  # a remote digest at the source that did not do: the key changed
            key, path = self._key(run, window)
            digest = lookup.load(window, path, digest_pb2.Digest)
        if digest is None:
            try:
                digest = self._compute(window, worker, path, digest_pb2)
            except InputError as e:  # remembered until the files change (the key changes)
                with self._lock:
                    self._errors[key] = (e.file, e.problem)
                raise
            if self._indexer:
                self._indexer.submit(path, build_timeline_index, path)
        return self._digests.put(key, digest)

    def _chip_digest(self, run: str, worker: str, window_id: str, chip: str):
        """The window's digest for a chosen chip: from memory, its own cache entry, else built once
        from the window's cached events (never the digest at the source: that one has the files' chip)."""
        from canning_tb.analysis import digest_pb2
        window = self.window(run, worker, window_id)
        key, path = chip_entry(*self._key(run, window), chip)
        with self._once(key):
            found = self._digests.get(key)
            if found is not None:
                return found
            found = _read_entry(path, digest_pb2.Digest)
            if found is None:  # none yet, or a bad entry: built again
                found = build_for_chip(self.table(run, worker, window_id), worker, chip)
                write_cache(lambda p: cache.write_atomic(p, found.SerializeToString()), path)
                cache.enforce_budget(path)
            return self._digests.put(key, found)

    def digest_part(self, run: str, worker: str, window_id: str, fields: tuple):
        """The window's digest with only `fields` read (store/digest_part.py), for views across many
        ranks; the whole digest when it is in memory or not computed yet (digest() computes it)."""
        from .digest_part import part_class
        if self.chip:
            return self.digest(run, worker, window_id)
        window = self.window(run, worker, window_id)
        self._fetch(window, unless_digested=True)
        key, path = self._key(run, window)
        found = self._digests.get(key)
        with self._lock:
            failed = key in self._errors
        if found is None and not failed:
            found = lookup.load(window, path, part_class(fields))
        return self.digest(run, worker, window_id) if found is None else found

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
        err = compute_in_child(window, worker, path)
        if err:
            raise InputError(*err)
        digest = lookup.load(window, path, digest_pb2.Digest)
        if digest is None:
            raise InputError(window.path, "the digest computed in a child process could not be read back")
        return digest

    def _isolate(self, window: Window) -> bool:
        if self.isolate_bytes is None:
            return False
        return sum(os.path.getsize(f) for f in window.files if os.path.isfile(f)) > self.isolate_bytes

    def wait_timeline_index(self, run: str, worker: str, window_id: str, timeout: float = 60.0) -> None:
        """Until the background build of the window's timeline index (if one runs) is done: the timeline
        then loads it instead of building it a second time."""
        if self._indexer:
            self._indexer.wait(self._key(run, self.window(run, worker, window_id))[1], timeout)

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
        return table_into_cache(window, prefix)

    def snapshot(self, run: str, worker: str, window_id: str, index: int = 0):
        """The window's `index`-th memory snapshot (ingest/snapshot: `Snapshot` columns), read once per version
        of its file; KeyError for a window without one, InputError for a file that is not one."""
        window = self.local_window(run, worker, window_id)
        if not 0 <= index < len(window.snapshots):
            raise KeyError(f"snapshot {index}")
        path = window.snapshots[index]
        try:
            st = os.stat(path)
            key = (path, st.st_size, st.st_mtime_ns)
        except OSError:
            key = (path, -1, -1)
        got = self._snapshots.get(key)
        if got is None:
            from canning_tb.ingest.snapshot.read import read_snapshot
            from canning_tb.util import safe_files
            safe_files.confine(window.root)
            got = self._snapshots.put(key, read_snapshot(path))
        return got

    # -- many windows at once --------------------------------------------------------------------
    def prefetch(self, items: Iterable[tuple[str, str, str]],
                 progress: Callable[[int, int], None] | None = None) -> dict[tuple[str, str, str], str]:
        """Digest many windows in parallel processes (bounded by the cores) into the cache.

        Returns {(run, worker, window): error} for the windows that could not be read.
        """
        todo, keys = [], {}
        for run, worker, wid in items:
            window = self.window(run, worker, wid)
            if self._has_digest(run, window):
                continue  # digested already (here, in the cache, or at the source)
            self._fetch(window)
            key, path = self._key(run, window)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            todo.append(((run, worker, wid), window, path))
            keys[(run, worker, wid)] = key
        errors: dict[tuple[str, str, str], str] = {}
        if progress:
            progress(0, len(todo))
        if not todo:
            return errors
        for done, (ident, err, lasting) in enumerate(compute_many(todo, self.max_workers), 1):
            if err:
                if lasting:  # an input error stays true until the files change (the key changes)
                    with self._lock:
                        self._errors[keys[ident]] = err
                errors[ident] = f"{err[0]}: {err[1]}"
            if progress:
                progress(done, len(todo))
        return errors


def _read_entry(path: str, message):
    """A digest cached at `path`, None when there is none to use (its key has the code revision in it)."""
    from google.protobuf.message import DecodeError
    try:
        with open(path, "rb") as f:
            digest = message.FromString(f.read())
    except (OSError, DecodeError):
        return None
    cache.touch(path)
    return digest if digest.schema_version == lookup.schema() else None
