"""Where a window's digest is found without computing it, and whether it may be served:

- the digest our handler wrote at the source (beside the manifest), when it is as new as the window's
  files, and made by this analysis code (Digest.analysis_revision); one made by other code (an older or
  newer canning-tb in the training job) is re-made when the window's files are at hand here, and served
  as it is (the views mark it as old) when they are not (a remote logdir's trace not copied here);
- the viewer's cache entry (store/cache.py: its key holds the code revision, so it is always this code's).
"""
from __future__ import annotations

import os

from google.protobuf.message import DecodeError

from canning_tb.util import manifest, safe_files
from canning_tb.util.lru import LRU

from . import cache
from .discover import Window

_REVISION_FIELDS = (("schema_version", None), ("analysis_revision", None))
_revisions = LRU(8192)  # (path, size, mtime, inode) -> the revision of a source digest ("" unreadable)


def schema() -> int:
    from canning_tb.analysis.digest import SCHEMA_VERSION  # light: no numpy, no analysis modules
    return SCHEMA_VERSION


def current_revision() -> str:
    from canning_tb.analysis.digest import analysis_revision
    return analysis_revision()


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


def files_at_hand(window: Window) -> bool:
    """Every file of the window is here to be read again (a remote logdir: copied here already)."""
    return bool(window.files) and all(os.path.isfile(name) for name in window.files)


def source_revision(path: str) -> str | None:
    """The analysis revision a digest at the source records ("" from code older than the field); None
    when it cannot be read or is of another schema. Read once per version of the file."""
    from .digest_part import part_class
    try:
        st = os.stat(path)
    except OSError:
        return None
    memo = (path, st.st_size, st.st_mtime_ns, st.st_ino)
    found = _revisions.get(memo)
    if found is None:
        try:
            with safe_files.open_file(path) as f:
                head = part_class(_REVISION_FIELDS).FromString(f.read())
            found = head.analysis_revision if head.schema_version == schema() else False
        except (OSError, DecodeError):
            found = False
        _revisions.put(memo, found)
    return found if found is not False else None


def usable_source_digest(window: Window, current_only: bool = False) -> str | None:
    """The source digest the viewer may serve (see the module doc); with `current_only`, only one made
    by this code (what `canning-prof digest` leaves alone)."""
    src = fresh_source_digest(window)
    if src is None:
        return None
    revision = source_revision(src)
    if revision is None:
        return None
    if revision == current_revision():
        return src
    return None if current_only or files_at_hand(window) else src


def load(window: Window, cache_path: str, message):
    """The window's digest (as `message`: a Digest or a part of one) from the source or the cache;
    None when neither has a usable one (a bad entry is just recomputed)."""
    src = usable_source_digest(window)
    for candidate in ([src] if src else []) + [cache_path]:
        try:
            with safe_files.open_file(candidate) as f:  # a regular file, inside the logdir when it is there
                digest = message.FromString(f.read())
        except (OSError, DecodeError):
            continue
        if digest.schema_version == schema():
            if candidate == cache_path:
                cache.touch(cache_path)  # recently used: the last to be evicted
            return digest
    return None
