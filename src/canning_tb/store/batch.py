"""Digest jobs for many windows at once (`canning-prof digest`): one job per window, run in local
processes or on the workers of a Dask cluster, each reading its own files from the shared or object
storage and writing the digest beside them.

A job carries everything it needs (the window, where its files are, where its digest goes) and
nothing of the Store, so it pickles small and runs anywhere canning_tb is installed.
"""
from __future__ import annotations

import dataclasses
import os
import tempfile

from canning_tb.util import remote_fs
from canning_tb.util.manifest import digest_path

from .cache import _writable, write_atomic
from .discover import Window


@dataclasses.dataclass(frozen=True)
class Job:
    ident: tuple[str, str, str]  # (run, worker, window id)
    window: Window
    beside: str | None  # where the digest goes beside the data: a path, or a URL (None: the caller's cache)
    url: str | None = None  # the logdir's URL when the window's files are remote
    local_root: str = ""  # the local folder the window's paths are relative to (a remote logdir's copy)


@dataclasses.dataclass(frozen=True)
class Outcome:
    ident: tuple[str, str, str]
    digest: bytes | None  # the serialized digest, None on failure
    written: str | None  # where the job wrote it (None: the caller keeps it)
    error: str | None  # "<file>: <problem>" for unreadable input


def run_job(job: Job) -> Outcome:
    """Read and digest one window where this process runs; an unreadable window is an Outcome with its error."""
    from canning_tb.ingest.table import InputError

    from .compute import digest_of
    if not job.url:
        try:
            data = digest_of(job.window, job.ident[1]).SerializeToString()
        except InputError as e:
            return Outcome(job.ident, None, None, f"{e.file}: {e.problem}")
        return Outcome(job.ident, data, _write_beside(job, data), None)
    with tempfile.TemporaryDirectory(prefix="canning-job-") as tmp:
        def shown(path: str) -> str:  # a file as the user knows it: its URL, not this job's copy
            inside = path.startswith(tmp + os.sep)
            return remote_fs.join(job.url, os.path.relpath(path, tmp).replace(os.sep, "/")) if inside else path
        try:
            digest = digest_of(_fetched(job, tmp), job.ident[1])
        except InputError as e:
            return Outcome(job.ident, None, None, f"{shown(e.file)}: {e.problem}")
        rename_files(digest, shown)
        data = digest.SerializeToString()
    return Outcome(job.ident, data, _write_beside(job, data), None)


def rename_files(digest, shown) -> None:
    """The files a digest names, through shown(path) (a copy's path -> the URL of the original)."""
    digest.window.source_files[:] = [shown(f) for f in digest.window.source_files]
    for problem in digest.problems:
        problem.file = shown(problem.file)


def _fetched(job: Job, tmp: str) -> Window:
    """The window with its files copied from the remote logdir into tmp (the same layout below it)."""
    fs, root = remote_fs.open_fs(job.url)

    def local(path: str) -> str:
        return os.path.join(tmp, os.path.relpath(path, job.local_root))

    def remote(path: str) -> str:
        return f"{root}/{os.path.relpath(path, job.local_root).replace(os.sep, '/')}"

    window = job.window
    if window.format == "ascend" and not window.path.endswith(".db"):  # a torch_npu folder: the reader walks it
        remote_fs.call(job.url, fs.get, remote(window.path), local(window.path), recursive=True)
    else:
        for path in window.files:
            os.makedirs(os.path.dirname(local(path)), exist_ok=True)
            if remote_fs.call(job.url, fs.exists, remote(path)):
                remote_fs.call(job.url, fs.get_file, remote(path), local(path))
    return dataclasses.replace(window, path=local(window.path), files=tuple(local(f) for f in window.files))


def _write_beside(job: Job, data: bytes) -> str | None:
    """Write the digest beside the data; None when it cannot be written there (read-only storage)."""
    if not job.beside:
        return None
    try:
        if remote_fs.is_url(job.beside):
            fs, path = remote_fs.open_fs(job.beside)
            with tempfile.TemporaryDirectory(prefix="canning-job-") as tmp:
                local = os.path.join(tmp, os.path.basename(path))
                with open(local, "wb") as f:
                    f.write(data)
                remote_fs.call(job.beside, remote_fs.put_atomic, fs, local, path)
        else:
            write_atomic(job.beside, data)
    except OSError:  # read-only storage: the caller keeps the digest in its cache
        return None
    return job.beside


def beside_of(window: Window, url: str | None, local_root: str) -> str | None:
    """Where a window's digest goes beside its data: our handler's windows only (beside the manifest,
    where the viewer looks first); other formats go to the cache, keyed by their files."""
    if window.format != "canning":
        return None
    out = digest_path(window.path)
    if url:
        return remote_fs.join(url, os.path.relpath(out, local_root).replace(os.sep, "/"))
    return out if _writable(os.path.dirname(out)) else None
