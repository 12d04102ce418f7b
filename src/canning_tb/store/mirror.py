"""A local copy of a remote logdir (s3://, gs://, hdfs://, az://...), which discovery and the readers
then read like any local folder.

Why a copy and not reading through fsspec: the readers stream, seek and memory-map local files and
open SQLite exports, and the second open of a window must not cost a download; a file is copied once
per version (its etag, size and modification time), into the local cache folder.

What is copied when:
- at every sync: the manifests, the digests written at the source (a few KB per rank: the viewer reads
  these instead of the traces) and every file of the other formats (torch.profiler traces, torch_npu
  folders), which discovery recognises by their content;
- on demand (`ensure`): the trace files a manifest names, when a view needs the events (timeline, or
  a window with no digest at the source).
A run folder's manifests and digests come from its pack (pack.py: one object, one request) when
enough of them are missing here and the pack holds them as listed; the others one request each.
Listing: the whole prefix at the first sync and every `full_every` seconds; in between only the root
and the folders that hold windows (one short listing each), so new windows of a running job appear
without listing the whole bucket on every refresh. Hidden names and temporary keys are never copied:
a window is visible once its manifest is, and the handler uploads the manifest last.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import threading
import time
from datetime import datetime

from canning_tb.util import remote_fs
from canning_tb.util.manifest import MANIFEST_SUFFIX, ManifestError
from canning_tb.util.manifest import load as load_manifest

from . import pack
from .cache import user_cache_root

log = logging.getLogger("canning_tb.store")

INDEX = "mirror.json"


def _skipped(rel: str) -> bool:
    """Hidden names (temporary keys, caches) and TensorBoard's own event files are not ours to copy."""
    parts = rel.split("/")
    return any(p.startswith(".") for p in parts) or parts[-1].endswith(".tmp") \
        or parts[-1].startswith("events.out.tfevents.")


def _identity(info: dict) -> str:
    return f"{pack.tag(info)}|{info.get('size')}|{_mtime(info)}"


def _mtime(info: dict) -> float | None:
    for key in ("LastModified", "mtime", "updated", "last_modified", "modification_time", "created"):
        value = info.get(key)
        if isinstance(value, datetime):
            return value.timestamp()
        if isinstance(value, (int, float)):
            return float(value) / (1000.0 if value > 1e11 else 1.0)  # hdfs gives ms
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return None


def default_root(url: str) -> str:
    return os.path.join(user_cache_root(), "remote", hashlib.sha1(url.encode()).hexdigest()[:16])


class Mirror:
    def __init__(self, url: str, local_root: str | None = None, full_every: float = 60.0):
        self.url = url.rstrip("/")
        self.fs, self.root = remote_fs.open_fs(self.url)
        base = local_root or default_root(self.url)
        self.local = os.path.join(base, "logdir")
        self._index_path = os.path.join(base, INDEX)
        self.full_every = full_every
        self._lock = threading.RLock()
        self._remote: dict[str, dict] = {}  # rel path -> listing info, as last listed
        self._copied: dict[str, str] = self._load_index()  # rel path -> identity of the local copy
        self._lazy: set[str] = set()  # rel paths of traces a manifest names: copied on demand
        self._names: dict[str, tuple[str | None, tuple[str, ...]]] = {}  # manifest -> (its version, names)
        self._last_full = -math.inf

    # -- listing ---------------------------------------------------------------------------------
    def sync(self) -> None:
        """List what changed and copy what discovery needs; RemoteError when the logdir cannot be read."""
        with self._lock:
            if time.monotonic() - self._last_full >= self.full_every:
                self._remote = self._list_all()
                self._last_full = time.monotonic()
            else:
                self._list_windows_folders()
            self._copy_eager()

    def _rel(self, path: str) -> str:
        path = path.rstrip("/")
        return path[len(self.root) + 1:] if path.startswith(self.root + "/") else ""

    def _list_all(self) -> dict[str, dict]:
        fs = self.fs
        remote_fs.call(self.url, fs.invalidate_cache, self.root)
        if not remote_fs.call(self.url, fs.exists, self.root):
            bucket = self.root.split("/", 1)[0]
            if bucket == self.root or not remote_fs.call(self.url, fs.exists, bucket):
                raise remote_fs.RemoteNotFound(remote_fs.scrub(f"{self.url}: no such bucket or path"))
            return {}  # the bucket is there, the job has not written yet: nothing to show, no error
        found = remote_fs.call(self.url, fs.find, self.root, detail=True)
        return {rel: info for path, info in found.items()
                if info.get("type", "file") == "file" and (rel := self._rel(path)) and not _skipped(rel)}

    def _list_windows_folders(self) -> None:
        """One listing of the root and of each folder that holds files: new windows of running jobs."""
        folders = {""} | {rel.rsplit("/", 1)[0] for rel in self._remote if "/" in rel}
        known = {"/".join(rel.split("/")[:depth]) for rel in self._remote for depth in range(1, rel.count("/") + 1)}
        for folder in sorted(folders):
            path = f"{self.root}/{folder}" if folder else self.root
            remote_fs.call(self.url, self.fs.invalidate_cache, path)
            try:
                entries = remote_fs.call(self.url, self.fs.ls, path, detail=True)
            except remote_fs.RemoteNotFound:
                if not folder:
                    raise
                entries = []  # the folder went away: its files too (any other failure keeps the last listing)
            prefix = f"{folder}/" if folder else ""
            for rel in [r for r in self._remote if r.startswith(prefix) and "/" not in r[len(prefix):]]:
                del self._remote[rel]
            for info in entries:
                rel = self._rel(info["name"])
                if not rel or _skipped(rel):
                    continue
                if info.get("type") == "directory":
                    if rel not in known:  # a new folder: list it whole
                        found = remote_fs.call(self.url, self.fs.find, info["name"], detail=True)
                        self._remote.update({r: i for p, i in found.items() if i.get("type", "file") == "file"
                                             and (r := self._rel(p)) and not _skipped(r)})
                else:
                    self._remote[rel] = info

    # -- copying -----------------------------------------------------------------------------------
    def _copy_eager(self) -> None:
        small = sorted(rel for rel in self._remote if pack.packable(rel))  # manifests and digests: first, together
        self._unpack(small)
        self._copy(small)
        manifests = [rel for rel in small if rel.endswith(MANIFEST_SUFFIX)]
        self._lazy = self._named_by_manifests(manifests)
        self._copy(sorted(rel for rel in self._remote if rel not in self._lazy and not pack.is_pack(rel)))
        for rel in [r for r in self._copied if r not in self._remote]:  # gone remotely: gone here
            self._drop(rel)
        self._save_index()

    def _named_by_manifests(self, manifests: list[str]) -> set[str]:
        """The trace files the manifests name (a torch_npu folder a manifest names is copied whole)."""
        lazy = set()
        for rel in manifests:
            ident = self._copied.get(rel)
            if self._names.get(rel, (None,))[0] != ident:  # read once per version of the manifest
                try:
                    man = load_manifest(self.local_path(rel))
                    names = tuple(f.name for f in man.files if f.kind != "ascend_pt")
                except ManifestError:
                    names = ()
                self._names[rel] = (ident, names)
            folder = rel.rsplit("/", 1)[0] + "/" if "/" in rel else ""
            lazy.update(folder + name for name in self._names[rel][1])
        return lazy

    def local_path(self, rel: str) -> str:
        return os.path.join(self.local, *rel.split("/"))

    def _stale(self, rel: str) -> bool:
        """A listed file whose listed version is not here."""
        return rel in self._remote and not (
            self._copied.get(rel) == _identity(self._remote[rel]) and os.path.isfile(self.local_path(rel)))

    def _copy(self, rels: list[str]) -> bool:
        """Copy the remote files whose version is not here yet, many at a time (the back-end's own
        concurrent transfers: a thousand digests of a few KB each); True when any was copied."""
        todo = [rel for rel in rels if self._stale(rel)]
        if not todo:
            return False
        tmps = [os.path.join(os.path.dirname(self.local_path(rel)), f".{os.path.basename(rel)}.{os.getpid()}.tmp")
                for rel in todo]
        for tmp in tmps:
            os.makedirs(os.path.dirname(tmp), exist_ok=True)
        try:
            remote_fs.call(self.url, self.fs.get, [f"{self.root}/{rel}" for rel in todo], tmps)
            for rel, tmp in zip(todo, tmps):
                self._place(rel, tmp)
        finally:
            for tmp in tmps:
                if os.path.exists(tmp):
                    os.remove(tmp)
        return True

    def _place(self, rel: str, tmp: str) -> None:
        """Move the copy of a listed file (written at tmp) into place, with the remote time."""
        mtime = _mtime(self._remote[rel])
        if mtime is not None:  # the remote time: a digest written after its trace stays newer
            os.utime(tmp, (mtime, mtime))
        os.replace(tmp, self.local_path(rel))
        self._copied[rel] = _identity(self._remote[rel])

    # -- packs of digests (pack.py) -----------------------------------------------------------------
    def _unpack(self, rels: list[str]) -> None:
        """Copy from each folder's pack the files among `rels` that it holds as listed, when enough of
        them are missing here; each version of a pack is fetched once."""
        by_folder: dict[str, list[str]] = {}
        for rel in rels:
            if self._stale(rel):
                by_folder.setdefault(rel.rsplit("/", 1)[0] if "/" in rel else "", []).append(rel)
        for folder, todo in sorted(by_folder.items()):
            packed = f"{folder}/{pack.PACK_NAME}" if folder else pack.PACK_NAME
            info = self._remote.get(packed)
            if info is None or len(todo) < pack.WORTH or self._copied.get(packed) == _identity(info):
                continue
            self._unpack_one(packed, todo)
            self._copied[packed] = _identity(info)  # this version is used up: not fetched again

    def _unpack_one(self, packed: str, todo: list[str]) -> None:
        folder = os.path.dirname(self.local_path(packed))
        os.makedirs(folder, exist_ok=True)
        local = pack.local_tmp(folder)
        prefix = packed[: -len(pack.PACK_NAME)]
        try:
            try:
                remote_fs.call(self.url, self.fs.get_file, f"{self.root}/{packed}", local)
            except remote_fs.RemoteNotFound:  # removed since the listing: the files come one by one
                return
            wanted = {rel[len(prefix):]: self._remote[rel] for rel in todo}
            for name, data in pack.read(local, wanted, remote_fs.join(self.url, packed)):
                tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
                with open(tmp, "wb") as f:
                    f.write(data)
                self._place(prefix + name, tmp)
        finally:
            if os.path.exists(local):
                os.remove(local)

    def write_packs(self) -> list[str]:
        """Write a pack of the manifests and digests of each folder that holds windows (the copies
        here must be of the listed versions: call after sync); the URLs of the packs written."""
        by_folder: dict[str, dict[str, tuple[str, dict]]] = {}
        with self._lock:
            for rel, info in self._remote.items():
                if pack.packable(rel) and pack.tag(info) and not self._stale(rel):
                    folder, name = rel.rsplit("/", 1) if "/" in rel else ("", rel)
                    by_folder.setdefault(folder, {})[name] = (self.local_path(rel), info)
        written = []
        for folder, files in sorted(by_folder.items()):
            if not any(name.endswith(MANIFEST_SUFFIX) for name in files):
                continue
            packed = f"{folder}/{pack.PACK_NAME}" if folder else pack.PACK_NAME
            local = pack.local_tmp(os.path.dirname(self.local_path(packed)))
            try:
                pack.write(local, files)
                remote_fs.call(self.url, remote_fs.put_atomic, self.fs, local, f"{self.root}/{packed}")
            finally:
                if os.path.exists(local):
                    os.remove(local)
            written.append(remote_fs.join(self.url, packed))
        return written

    def _drop(self, rel: str) -> None:
        self._copied.pop(rel, None)
        try:
            os.remove(self.local_path(rel))
        except OSError:
            pass

    def ensure(self, paths) -> bool:
        """Copy the files among `paths` (local paths of this mirror) that are not here yet; True when
        any was copied. RemoteError when the remote logdir cannot be read."""
        rels = [os.path.relpath(path, self.local).replace(os.sep, "/") for path in paths]
        with self._lock:
            copied = self._copy([rel for rel in rels if rel in self._lazy])
            if copied:
                self._save_index()
        return copied

    def url_of(self, path: str) -> str:
        """The remote URL of a local path of this mirror."""
        return remote_fs.join(self.url, os.path.relpath(path, self.local).replace(os.sep, "/"))

    # -- index of the copies -------------------------------------------------------------------------
    def _load_index(self) -> dict[str, str]:
        try:
            with open(self._index_path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError, RecursionError):
            return {}
        return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)} \
            if isinstance(data, dict) else {}

    def _save_index(self) -> None:
        os.makedirs(os.path.dirname(self._index_path), exist_ok=True)
        tmp = f"{self._index_path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self._copied, f)
        os.replace(tmp, self._index_path)
