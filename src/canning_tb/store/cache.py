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
import stat
import tempfile
from functools import lru_cache

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
        try:
            st = os.stat(f)
            h.update(f"|{os.path.basename(f)}:{st.st_size}:{st.st_mtime_ns}".encode())
        except OSError:
            h.update(f"|{os.path.basename(f)}:missing".encode())
    return h.hexdigest()[:20]


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
    elif _writable(run_path):
        d = os.path.join(run_path, CACHE_DIRNAME)
    else:
        d = os.path.join(user_cache_root(), hashlib.sha1(os.path.abspath(run_path).encode()).hexdigest()[:16])
    return d


def digest_file(run_path: str, key: str, override: str | None = None) -> str:
    """The cache file of one window's digest (its columnar events sit beside it, see store.events_prefix)."""
    return os.path.join(cache_dir_for(run_path, override), key + DIGEST_SUFFIX)


def write_atomic(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
