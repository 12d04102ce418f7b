"""Where digests and columnar event arrays are kept between opens.

Beside the data (`<run>/.canning/`) when that folder can be written, else in the user cache
(`$CANNING_CACHE_DIR`, `$XDG_CACHE_HOME/canning-tb`, `~/.cache/canning-tb`). Entries are keyed
by the identity of the window's files (path, size, mtime; for a torch_npu folder a manifest names,
every file inside its ASCEND_PROFILER_OUTPUT, which torch_npu may still be writing), so a changed or
new file is re-read and a stale entry is simply never looked up again.
"""
from __future__ import annotations

import hashlib
import os
import re
import stat
import time
from functools import lru_cache

from canning_tb import safe_files
from canning_tb.manifest import DIGEST_SUFFIX

from .discover import Window

CACHE_DIRNAME = ".canning"


@lru_cache(maxsize=1)
def code_revision() -> str:
    """Identity of the code that turns files into digests (readers and analysis).

    A digest cached by an older reader or analysis must not be served after an upgrade that
    changes what they compute, even when the schema is the same.
    """
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha1()
    for sub in ("ingest", "analysis"):
        folder = os.path.join(root, sub)
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                with open(os.path.join(folder, name), "rb") as f:
                    h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()[:12]


def window_key(window: Window, schema: int) -> str:
    """The files' identity, and the window's status: a torch_npu folder can turn from "analysing" to
    "ready" with no file changing (older versions write no end marker), and must then be read again."""
    h = hashlib.sha1(f"v{schema}|{code_revision()}|{window.format}|{window.status}".encode())
    for f in sorted(window.files):
        h.update(_file_identity(f).encode())
    return h.hexdigest()[:20]


_SQLITE_SIDE = ("-shm", "-journal")  # SQLite's own bookkeeping: any reader may touch them


def _file_identity(path: str) -> str:
    """What of a file says its data changed: size and mtime; nothing of SQLite's -shm / -journal,
    and only the size of a -wal (which a reader may create empty or touch, a writer only grows)."""
    name = os.path.basename(path)
    if name.endswith(_SQLITE_SIDE):
        return ""
    try:
        st = os.stat(path)
    except OSError:
        return f"|{name}:missing"
    if name.endswith("-wal"):
        return f"|{name}:{st.st_size}" if st.st_size else ""
    return f"|{name}:{st.st_size}:{st.st_mtime_ns}"


def _writable(folder: str) -> bool:
    # Root passes os.access everywhere, so also honour the owner-write bit: a folder laid out
    # read-only (shared fixtures, a mounted dataset) must not be written into.
    try:
        mode = os.stat(folder).st_mode
    except OSError:
        return False
    return bool(mode & stat.S_IWUSR) and os.access(folder, os.W_OK)


def user_cache_root() -> str:
    env = os.environ.get("CANNING_CACHE_DIR")
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "canning-tb")


def cache_dir_for(run_path: str, override: str | None = None) -> str:
    """The folder holding this run's cache entries (created on demand)."""
    if override:
        d = os.path.join(override, hashlib.sha1(os.path.abspath(run_path).encode()).hexdigest()[:16])
    elif _writable(run_path) and not os.path.islink(os.path.join(run_path, CACHE_DIRNAME)):
        d = os.path.join(run_path, CACHE_DIRNAME)  # a .canning that is a link is never written through
    else:
        d = os.path.join(user_cache_root(), hashlib.sha1(os.path.abspath(run_path).encode()).hexdigest()[:16])
    return d


def digest_file(run_path: str, key: str, override: str | None = None) -> str:
    """The cache file of one window's digest (its columnar events sit beside it, see store.events_prefix)."""
    return os.path.join(cache_dir_for(run_path, override), key + DIGEST_SUFFIX)


def write_atomic(path: str, data: bytes) -> None:
    # safe_files: a .canning that is a link (to outside the logdir) is never written through
    safe_files.atomic_write(path, data)


# -- size budget ------------------------------------------------------------------------------------
BUDGET_ENV = "CANNING_CACHE_MAX_BYTES"
DEFAULT_BUDGET = 4 << 30


_HASH16 = re.compile(r"^[0-9a-f]{16}$")  # a run's folder in the user cache (cache_dir_for)
_ENTRY = re.compile(r"^[0-9a-f]{20}\.")  # a window's entries: <window_key>.<what>


def budget() -> int:
    """Bytes one cache may hold (`CANNING_CACHE_MAX_BYTES`): a run's .canning/, or the whole user cache."""
    try:
        return max(0, int(os.environ.get(BUDGET_ENV, "")))
    except ValueError:
        return DEFAULT_BUDGET


def touch(path: str) -> None:
    """Mark an entry as just used (its mtime is the clock of the least-recently-used eviction; atime
    is not kept by every mount). The time is given in ns: the kernel's own "now" is coarse (a few ms)."""
    now = time.time_ns()
    try:
        os.utime(path, ns=(now, now))
    except OSError:
        pass


def enforce_budget(entry_path: str) -> int:
    """Remove least recently used windows' entries (all files of one key together) until the cache
    that holds entry_path fits the budget; entry_path's own window is kept. Returns bytes removed."""
    folder = os.path.dirname(entry_path)
    keep = os.path.basename(entry_path).split(".", 1)[0]
    if os.path.basename(folder) == CACHE_DIRNAME:
        folders = [folder]
    else:  # the user cache (or --cache-dir): one folder per run, one budget for all
        root = os.path.dirname(folder)
        folders = [e.path for e in _scandir(root) if e.is_dir(follow_symlinks=False) and _HASH16.match(e.name)]
    entries: dict[tuple[str, str], list] = {}  # (folder, key) -> [newest mtime, bytes, paths]
    for sub in folders:
        for e in _scandir(sub):
            if not e.is_file(follow_symlinks=False) or not _ENTRY.match(e.name) or ".tmp" in e.name:
                continue  # not ours, or being written
            st = e.stat(follow_symlinks=False)
            entry = entries.setdefault((sub, e.name.split(".", 1)[0]), [0, 0, []])
            entry[0] = max(entry[0], st.st_mtime_ns)
            entry[1] += st.st_size
            entry[2].append(e.path)
    total, limit, removed = sum(e[1] for e in entries.values()), budget(), 0
    for (sub, key), (_, size, paths) in sorted(entries.items(), key=lambda item: item[1][0]):
        if total <= limit:
            break
        if sub == folder and key == keep:
            continue
        for path in paths:
            try:
                os.unlink(path)
            except OSError:
                continue
        total, removed = total - size, removed + size
    return removed


def _scandir(folder: str) -> list:
    try:
        with os.scandir(folder) as it:
            return list(it)
    except OSError:
        return []
