"""Where digests and columnar event arrays are kept between opens, and under which key.

In the user's cache folder (`$CANNING_CACHE_DIR`, `$XDG_CACHE_HOME/canning-tb`, `~/.cache/canning-tb`),
one folder per run: nothing is written into a logdir by the viewer. With `CANNING_CACHE_BESIDE_DATA=1`
(an option the user turns on, to share the caches between viewers of one logdir) they go into
`<run>/.canning/` where that folder can be written. Entries are keyed by the window's identity
(`window_key`): the code revision, its format and status, and per file its path within the logdir,
size, mtime and (in the user's cache) its device and inode; for a torch_npu folder a manifest names,
every file inside its ASCEND_PROFILER_OUTPUT, which torch_npu may still be writing. So a changed,
replaced or new file is re-read, two runs never share an entry, and a stale entry is simply never
looked up again.
"""
from __future__ import annotations

import hashlib
import os
import re
import stat
import time

from canning_tb.util import safe_files
from canning_tb.util.manifest import DIGEST_SUFFIX

from .discover import Window

CACHE_DIRNAME = ".canning"
BESIDE_ENV = "CANNING_CACHE_BESIDE_DATA"


def _on(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def beside_data() -> bool:
    """The user asked for caches beside the data (`CANNING_CACHE_BESIDE_DATA=1`)."""
    return _on(BESIDE_ENV)


def code_revision() -> str:
    """Identity of the code that turns files into digests (readers and analysis: analysis/digest.py).

    A digest cached by an older reader or analysis must not be served after an upgrade that
    changes what they compute, even when the schema is the same.
    """
    from canning_tb.analysis.digest import analysis_revision  # light: hashlib and os only
    return analysis_revision()


def window_key(window: Window, schema: int, root: str) -> str:
    """The files' identity (paths relative to the logdir `root`), and the window's status: a torch_npu
    folder can turn from "analysing" to "ready" with no file changing (older versions write no end
    marker), and must then be read again."""
    h = hashlib.sha1(f"v{schema}|{code_revision()}|{window.format}|{window.status}".encode())
    device = not beside_data()
    for f in sorted(window.files):
        h.update(_file_identity(f, root, device).encode())
    return h.hexdigest()[:20]


_SQLITE_SIDE = ("-shm", "-journal")  # SQLite's own bookkeeping: any reader may touch them


def _file_identity(path: str, root: str, device: bool = True) -> str:
    """What of a file says its data changed or is another file: its path within the logdir, size, mtime
    and inode (and device, where the cache is this machine's own: NFS clients number one export's
    device differently, so caches beside the data, shared between machines, leave it out); nothing of
    SQLite's -shm / -journal, and only the size of a -wal (which a reader may create empty or touch,
    a writer only grows)."""
    name = os.path.relpath(path, root).replace(os.sep, "/")
    if name.endswith(_SQLITE_SIDE):
        return ""
    try:
        st = os.stat(path)
    except OSError:
        return f"|{name}:missing"
    if name.endswith("-wal"):
        return f"|{name}:{st.st_size}" if st.st_size else ""
    node = f":{st.st_dev if device else ''}:{st.st_ino}" if st.st_ino else ""  # 0 where the system has none
    return f"|{name}:{st.st_size}:{st.st_mtime_ns}{node}"


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


def _run_folder(root: str, run_path: str) -> str:
    return os.path.join(root, hashlib.sha1(os.path.abspath(run_path).encode()).hexdigest()[:16])


def cache_dir_for(run_path: str, override: str | None = None) -> str:
    """The folder holding this run's cache entries (created on demand): `override` (--cache-dir), else
    the user's cache folder, or `<run>/.canning/` when the user asked for caches beside the data."""
    if override:
        return _run_folder(override, run_path)
    if beside_data() and _writable(run_path) and not os.path.islink(os.path.join(run_path, CACHE_DIRNAME)):
        return os.path.join(run_path, CACHE_DIRNAME)  # a .canning that is a link is never written through
    return _run_folder(user_cache_root(), run_path)


def digest_file(run_path: str, key: str, override: str | None = None) -> str:
    """The cache file of one window's digest (its columnar events sit beside it, see compute.events_prefix)."""
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
