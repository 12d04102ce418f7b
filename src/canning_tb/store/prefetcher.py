"""Background prefetches: digest many windows (Store.prefetch, parallel processes) in a thread,
one prefetch per key at a time, and say how far each has got."""
from __future__ import annotations

import logging
import threading
from typing import Hashable

log = logging.getLogger("canning_tb.store")


class Prefetcher:
    def __init__(self, store):
        self.store = store
        self._lock = threading.Lock()
        self._jobs: dict[Hashable, dict] = {}  # key -> {"thread", "items", "done", "total"}

    def progress(self, key: Hashable, items: list[tuple[str, str, str]], wait: float = 0.3) -> dict | None:
        """Start (or follow) the prefetch of `items` (run, worker, window) under `key`; waits up to
        `wait` seconds. None once they are all digested; else {"done", "total"} so far."""
        with self._lock:
            job = self._jobs.get(key)
            if job is None or (not job["thread"].is_alive() and job["items"] != items):
                job = self._start(key, items)
        job["thread"].join(wait)  # digests already cached: answer at once
        if not job["thread"].is_alive():
            return None
        return {"done": job["done"], "total": job["total"]}

    def _start(self, key: Hashable, items: list) -> dict:
        job = {"items": items, "done": 0, "total": len(items)}
        count = len(items)

        def progress(done: int, todo: int) -> None:  # windows already digested count as done
            job["done"], job["total"] = count - todo + done, count

        def work() -> None:
            try:
                self.store.prefetch(items, progress)
            except Exception:  # thread boundary: the digests are then computed one by one on request
                log.exception("canning: prefetch of %s failed", key)

        job["thread"] = threading.Thread(target=work, name=f"canning-prefetch-{key}", daemon=True)
        self._jobs[key] = job
        job["thread"].start()
        return job
