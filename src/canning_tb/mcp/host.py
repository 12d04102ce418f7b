"""What the server holds: one Store over the logdir, built and rescanned in a background thread (the
plugin's Scanner) with its Prefetcher, the timeline's index cache, and the answer for a window whose
digest is not there yet.

Read-only: the Store's caches go to a folder outside the logdir (`--cache-dir`, else $CANNING_CACHE_DIR
or ~/.cache/canning-tb: the viewer's own user cache, so both reuse each other's digests). A call never
waits long for a digest: the window is digested in the background (Prefetcher) and the call answers
that it is being digested, how long that has taken and about how long it takes for its size.
"""
from __future__ import annotations

import os
import threading
import time

from canning_tb.queries.errors import Unavailable, unknown_window
from canning_tb.store.cache import user_cache_root
from canning_tb.store.scanner import ISOLATE_BYTES, Scanner
from canning_tb.util.logdir import normalize_logdir

RESCAN_S = 5.0  # new windows of a running job are seen within this
STORE_WAIT_S = 5.0  # the first scan of the logdir, at most, before a call says "still discovering"
DIGEST_WAIT_S = 1.0  # a call waits this long for a window's digest before it answers "digesting"
# How long a digest takes, for the "digesting" answer (measured on this project's 2-core machine: the
# fixtures here digest at 15-35 MB/s of expanded trace, plus about a second of start; Kineto traces
# expand 17-30x when un-gzipped; the README's benchmark: 1 GB of trace in 23.5 s)
DIGEST_MB_S = 25.0
DIGEST_START_S = 1.0
GZIP_EXPANSION = 20


def estimate_s(files) -> tuple[int, float]:
    """(bytes of the window's files, the seconds a digest of them typically takes here)."""
    size, expanded = 0, 0
    for name in files:
        try:
            one = os.path.getsize(name)
        except OSError:  # not here (yet): a remote window's trace is fetched on demand
            continue
        size += one
        expanded += one * (GZIP_EXPANSION if name.endswith(".gz") else 1)
    return size, round(DIGEST_START_S + expanded / (DIGEST_MB_S * 1e6), 1)


class Host:
    def __init__(self, logdir: str, cache_dir: str | None = None, rescan_s: float = RESCAN_S,
                 digest_wait_s: float = DIGEST_WAIT_S, follow_links: bool = False):
        self.logdir = normalize_logdir(logdir)
        self.follow_links = follow_links  # links out of the logdir are read (canning-prof mcp --follow-links)
        self.cache_dir = cache_dir or user_cache_root()
        self.scanner = Scanner(self.logdir, rescan_s, self._make_store)
        self._lock = threading.Lock()
        self._asked: dict[tuple, float] = {}  # window + digest key -> when a call first found it undigested
        self._timeline = None
        self.digest_wait_s = digest_wait_s

    def _make_store(self, logdir: str):
        from canning_tb.store.store import Store
        return Store(logdir, cache_dir=self.cache_dir, isolate_bytes=ISOLATE_BYTES, timeline_index=True,
                     follow_links=self.follow_links)

    def start(self) -> None:
        """Start the first scan (in the background)."""
        self.scanner.kick()

    def store(self):
        scanner = self.scanner
        scanner.kick()  # a rescan when the last one is older than rescan_s
        if scanner.store is None:
            scanner.wait_first(STORE_WAIT_S)
            if scanner.store is None:
                raise Unavailable(scanner.error or "still discovering the profiles under the logdir: ask again "
                                                       "in a few seconds")
        return scanner.store

    @property
    def prefetcher(self):
        self.store()
        return self.scanner.prefetcher

    @property
    def timeline(self):
        """The timeline's IndexCache (queries/timeline.py): windows' events and level-of-detail index."""
        with self._lock:
            if self._timeline is None:
                from canning_tb.queries.timeline import IndexCache
                self._timeline = IndexCache()
            return self._timeline

    def pending(self, run: str, worker: str, window: str) -> dict | None:
        """None when the window's digest is here (or reading it failed: the selection then says why);
        else the "digesting" answer, the digest started in the background."""
        store = self.store()
        try:
            found = store.window(run, worker, window)
            if store.has_digest(run, worker, window):
                return None
            key = (run, worker, window, store.digest_key(run, found))
        except KeyError:
            raise unknown_window(run, worker, window) from None
        if self.prefetcher.progress(("mcp",) + key, [(run, worker, window)], wait=self.digest_wait_s) is None:
            return None
        with self._lock:
            since = self._asked.setdefault(key, time.monotonic())
        size, typical = estimate_s(found.files)
        elapsed = round(time.monotonic() - since + self.digest_wait_s, 1)
        return {"run": run, "worker": worker, "window": window, "status": "digesting",
                "message": f"{worker} / {found.label} is being digested (for {elapsed} s now); a window of "
                           f"{size / 1e6:.1f} MB of files typically takes about {typical} s here: ask again",
                "elapsed_s": elapsed, "typical_s": typical, "size_bytes": size,
                "retry_after_s": max(1.0, round(min(typical - elapsed, 10.0), 1))}

    def pending_many(self, run: str, items: list[tuple[str, str, str]]) -> dict | None:
        """pending() for many windows: None once all are digested (or failed), else how many are."""
        store = self.store()
        todo = [item for item in items if not store.has_digest(*item)]
        if len(todo) <= 1:
            return self.pending(*todo[0]) if todo else None
        progress = self.prefetcher.progress(("mcp", run, tuple(todo)), todo, wait=self.digest_wait_s)
        if progress is None:
            return None
        done = len(items) - len(todo) + progress["done"]
        return {**digesting_windows(run, -1, done, len(items)), "window_index": None}


def digesting_windows(run: str, position: int, done: int, total: int) -> dict:
    """The answer of a question about many windows while some are still being digested."""
    return {"run": run, "window_index": position, "status": "digesting", "done": done, "total": total,
            "message": f"{done} of {total} windows are digested; the others are being digested in the background: "
                       "ask again", "retry_after_s": 2.0}
