"""The budget of the digest at the source (python -m canning_tb.store.source_digest), on a training node:
- CPU: nice 10 (source_digest), one core: the readers' second process and numpy's BLAS threads are off;
- memory: a watchdog samples this process's RSS every 50 ms; past the budget the process stops at once
  and that window has no digest at the source (the viewer computes it on first open). The budget is
  `CANNING_DIGEST_MAX_RSS` bytes when set, else 512 MiB plus 1.5x the window's files: our readers
  peak at about the window's size (benchmarks/README.md), so the watchdog only stops what would be a bug.
`apply` is called by the background process's entry point, before numpy is loaded (BLAS reads its thread
settings then); nothing here acts on import, so a process that only imports source_digest is untouched."""
from __future__ import annotations

import logging
import os
import threading
import time

BUDGET_ENV = "CANNING_DIGEST_MAX_RSS"
BASE_BYTES = 512 << 20
PER_BYTE = 1.5
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def apply(manifest_paths: list[str]) -> None:
    """One core and the memory budget, for this process (the background digest)."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    os.environ.setdefault("CANNING_READ_WORKERS", "1")
    watch(budget(manifest_paths))


def window_bytes(manifest_path: str) -> int:
    """Bytes of the files (and folders, such as a torch_npu window) the manifest names."""
    from canning_tb.util.manifest import load
    folder = os.path.dirname(os.path.abspath(manifest_path))
    total = 0
    for entry in load(manifest_path).files:
        path = os.path.join(folder, entry.name)
        if os.path.isdir(path):
            total += sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
        elif os.path.isfile(path):
            total += os.path.getsize(path)
    return total


def budget(manifest_paths: list[str]) -> int:
    env = os.environ.get(BUDGET_ENV)
    if env and env.isdigit():
        return int(env)
    biggest = 0
    for path in manifest_paths:
        try:
            biggest = max(biggest, window_bytes(path))
        except Exception:  # an unreadable manifest is reported by the digest itself
            continue
    return BASE_BYTES + int(PER_BYTE * biggest)


def _rss() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def watch(limit: int, interval: float = 0.05) -> None:
    """Stop this process when its RSS passes limit (a daemon thread; no-op where /proc is missing)."""
    if not _rss():
        return

    def run():
        while True:
            if _rss() > limit:
                logging.warning("digest at the source stopped: its memory passed the budget of %d MiB (%s); the "
                                "viewer will compute the digest on first open", limit >> 20, BUDGET_ENV)
                os._exit(0)
            time.sleep(interval)
    threading.Thread(target=run, name="canning-digest-budget", daemon=True).start()
