"""torch_npu windows in a folder, recognised by content (ingest/ascend/layout.py), named by the files.

- A sub-folder is a window when it holds ``ASCEND_PROFILER_OUTPUT/`` (any folder name: the
  ``*_ascend_pt`` of torch_npu, the free names of 2023), raw data not analysed yet (status
  "incomplete"), or the exported files themselves (a bare ``ASCEND_PROFILER_OUTPUT/``). A folder
  holding several ``ascend_pytorch_profiler_N.db`` files gives one window per file.
- The rank comes from the files: ``rank_id`` of profiler_info (else the N of profiler_info_N.json,
  msprof-analyze's rule), else ``distributed_args.rank`` of profiler_metadata.json, else the N of
  ``ascend_pytorch_profiler_N.db``; never from a folder name.
- Workers: the windows of one rank are one worker. It is named by what torch_npu put before
  ``[_<timestamp>]_ascend_pt`` when that name is the rank's own, else ``rank<N>``; windows of an
  unknown rank are grouped by that name.
"""
from __future__ import annotations

import json
import os
import re
from functools import lru_cache

from canning_tb.ingest.ascend.layout import DB_RE, OUTPUT_DIR, loose_dbs, scan
from canning_tb.util.safe_files import read_file

_SPAN_RE = re.compile(r"^(?P<worker>.*?)_(?P<span>\d{12,}(?:\.\d+)?)_ascend_(?:pt|ms)$")
_SUFFIX_RE = re.compile(r"_ascend_(?:pt|ms)$")
_INFO_RE = re.compile(r"^profiler_info(?:_(\d+))?\.json$")


def split_name(name: str) -> tuple[str, str]:
    """(worker prefix, timestamp span or '') of a window folder name; the name itself when free."""
    m = _SPAN_RE.match(name)
    if m:
        return m.group("worker") or name, m.group("span")
    return _SUFFIX_RE.sub("", name) or name, ""


def _files(folder: str) -> tuple[str, ...]:
    out = []
    for sub in (folder, os.path.join(folder, OUTPUT_DIR)):
        try:
            out.extend(e.path for e in os.scandir(sub) if e.is_file() and not e.name.startswith("."))
        except OSError:
            pass
    return tuple(sorted(out))


def _refused(folder: str, policy) -> str:
    """Why the reader may not open this folder's files (it opens them by name): a link out of the
    logdir, or a FIFO / socket / device, directly in it or in its ASCEND_PROFILER_OUTPUT; "" when none."""
    for sub in (folder, os.path.join(folder, OUTPUT_DIR)):
        try:
            with os.scandir(sub) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink() and not policy.inside(entry.path):
                return "holds a link to outside the logdir (set CANNING_FOLLOW_LINKS=1 to follow it)"
            if os.path.exists(entry.path) and not (entry.is_file() or entry.is_dir()):
                return f"holds {entry.name}, which is not a regular file"
    return ""


@lru_cache(maxsize=65536)
def _json_rank(path: str, size: int, mtime_ns: int, keys: tuple[str, ...]) -> int:
    """An int rank at keys (a path into the JSON) of a small JSON file; -1 when absent/unreadable."""
    try:
        value = json.loads(read_file(path, 64 << 20).decode("utf-8-sig"))
        for k in keys:
            value = value.get(k) if isinstance(value, dict) else None
        rank = int(value)
    except (OSError, ValueError, TypeError, RecursionError):  # RecursionError: nested past any depth
        return -1
    return rank if 0 <= rank < 1 << 31 else -1


def _rank_in(path: str, keys: tuple[str, ...]) -> int:
    try:
        st = os.stat(path)
    except OSError:
        return -1
    return _json_rank(path, st.st_size, st.st_mtime_ns, keys)


def window_rank(files: tuple[str, ...]) -> int:
    names = {os.path.basename(f): f for f in files}
    for name, path in sorted(names.items()):
        m = _INFO_RE.match(name)
        if m:
            rank = _rank_in(path, ("rank_id",))
            return rank if rank >= 0 else (int(m.group(1)) if m.group(1) else -1)
    if "profiler_metadata.json" in names:
        rank = _rank_in(names["profiler_metadata.json"], ("distributed_args", "rank"))
        if rank >= 0:
            return rank
    for name in sorted(names):
        m = DB_RE.match(name)
        if m and m.group(1):
            return int(m.group(1))
    return -1


def ascend_windows(folder: str, dirs: list[str], policy) -> list[dict]:
    """The torch_npu windows among the sub-folders of folder: dicts with worker prefix, span,
    path, files, status, rank (the caller names workers and makes Windows)."""
    out = []
    for d in dirs:
        if d.startswith("."):
            continue
        out.extend(folder_windows(os.path.join(folder, d), policy))
    return out


def folder_windows(path: str, policy) -> list[dict]:
    """The windows a folder is (none, one, or one per db file); none when it holds a link out of the
    logdir (policy: store/links.py), since the reader opens its files by name."""
    kind = scan(path)
    if not kind:
        return []
    refused = _refused(path, policy)
    if refused:
        policy.refuse(path, refused)
        return []
    files = _files(path)
    dbs = loose_dbs({os.path.basename(f) for f in files if os.path.dirname(f) == path})
    if kind == "export" and dbs:
        return [_db_window(os.path.join(path, db)) for db in dbs]
    name = os.path.basename(path)
    if name == OUTPUT_DIR:  # the output folder given alone: its window folder names it and holds profiler_info
        name = os.path.basename(os.path.dirname(path)) or name
        files = tuple(sorted(set(files) | set(_files(os.path.dirname(path)))))
    prefix, span = split_name(name)
    return [{"prefix": prefix, "span": span, "path": path, "files": files,
             "status": "incomplete" if kind == "raw" else "ready", "rank": window_rank(files)}]


def _db_window(path: str) -> dict:
    rank = window_rank((path,))
    return {"prefix": f"rank{rank}" if rank >= 0 else os.path.basename(path)[: -len(".db")], "span": "",
            "path": path, "files": (path,), "status": "ready", "rank": rank}


def worker_names(found: list[dict]) -> list[str]:
    """A worker name per window: the rank's own prefix, else rank<N>; by prefix for unknown ranks."""
    prefixes_of: dict[int, set[str]] = {}
    for w in found:
        prefixes_of.setdefault(w["rank"], set()).add(w["prefix"])
    owners: dict[str, set[int]] = {}
    for rank, prefixes in prefixes_of.items():
        for p in prefixes:
            owners.setdefault(p, set()).add(rank)
    names = []
    for w in found:
        rank, prefix = w["rank"], w["prefix"]
        own = rank < 0 or (len(prefixes_of[rank]) == 1 and owners[prefix] == {rank})
        names.append(prefix if own else f"rank{rank}")
    return names
