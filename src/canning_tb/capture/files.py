"""Where a run's capture files live and how they are read and written: `<run>/.canning-capture/`, on a
local or shared file system or on object storage (remote_fs), every file by an atomic replace.

Light (os, safe_files, and fsspec on first use for a URL): the training job's watcher and the viewer's
route and CLI use it. The formats are in capture_request.py.
"""
from __future__ import annotations

import os
import re

from canning_tb.util import remote_fs, safe_files

from .request import MAX_REQUEST_BYTES, MAX_STATUS_BYTES, RequestError, parse_request, parse_status

CAPTURE_DIR = ".canning-capture"
REQUEST_FILE = "request.json"
MAX_COUNTED = 100_000  # files window_bytes() looks at
STATUS_RE = re.compile(r"^rank(\d{1,7})\.status\.json$")


def status_file(rank: int) -> str:
    return f"rank{rank}.status.json"


def replace_local(folder: str, name: str, data: bytes) -> None:
    """folder/name replaced at once by data: safe_files' atomic write (a `.canning-capture` that is a link
    out of the run folder is refused, not written through)."""
    safe_files.atomic_write(os.path.join(folder, name), data)


class CaptureFolder:
    """`.canning-capture/` of one run folder (a local path or a URL)."""

    def __init__(self, run_folder: str):
        self.run_folder = os.fspath(run_folder)
        self.remote = remote_fs.is_url(self.run_folder)
        if self.remote:
            self.fs, root = remote_fs.open_fs(self.run_folder)
            self.path = f"{root}/{CAPTURE_DIR}"
        else:
            self.fs, self.path = None, os.path.join(self.run_folder, CAPTURE_DIR)

    def _at(self, name: str) -> str:
        return f"{self.path}/{name}" if self.remote else os.path.join(self.path, name)

    # -- bytes ----------------------------------------------------------------------------------
    def read(self, name: str, limit: int) -> bytes | None:
        """Up to limit + 1 bytes of the file (more means too big: the parser says so); None when absent.
        Only a regular file is read: a FIFO or device planted under the name would block the reader."""
        if self.remote:
            try:
                return remote_fs.call(self.run_folder, self.fs.cat_file, self._at(name), start=0, end=limit + 1)
            except remote_fs.RemoteNotFound:
                return None
        path = self._at(name)
        try:
            fd = safe_files.open_fd(path)  # a regular file only (a FIFO never blocks), inside a confined logdir
        except FileNotFoundError:
            return None
        except safe_files.Refused as e:
            raise RequestError(f"{name}: {e.strerror}") from None
        with os.fdopen(fd, "rb") as f:
            return safe_files.read_all(f, path, limit + 1)  # within safe_files' read deadline

    def write(self, name: str, data: bytes) -> None:
        """The file replaced at once: a reader sees the old content or the new, never a part."""
        if self.remote:
            tmp = remote_fs.temp_key(self._at(name))
            remote_fs.call(self.run_folder, self.fs.pipe_file, tmp, data)
            remote_fs.call(self.run_folder, self.fs.mv, tmp, self._at(name))
            return
        replace_local(self.path, name, data)

    def names(self) -> list[str]:
        if self.remote:
            try:
                found = remote_fs.call(self.run_folder, self.fs.ls, self.path, detail=False)
            except remote_fs.RemoteNotFound:
                return []
            return sorted(p.rsplit("/", 1)[-1] for p in found)
        try:
            return sorted(os.listdir(self.path))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def window_bytes(self, limit: int = MAX_COUNTED) -> int:
        """Bytes of the run folder's files (its windows), the capture folder left out: what a trigger's
        byte budget is checked against. At most `limit` files are counted (a huge folder: a bounded walk)."""
        if self.remote:
            root = self.path.rsplit("/", 1)[0]
            found = remote_fs.call(self.run_folder, self.fs.find, root, detail=True)
            return sum(int(v.get("size") or 0) for k, v in found.items() if f"/{CAPTURE_DIR}/" not in k)
        total, counted = 0, 0
        for folder, dirs, names in os.walk(self.run_folder):
            dirs[:] = [d for d in dirs if d != CAPTURE_DIR]
            for n in names:
                try:
                    total += os.lstat(os.path.join(folder, n)).st_size
                except OSError:
                    continue  # gone meanwhile
                counted += 1
                if counted >= limit:
                    return total
        return total

    # -- the two formats ------------------------------------------------------------------------
    def request(self) -> dict | None:
        """The run's current request; RequestError when it is not a usable one."""
        raw = self.read(REQUEST_FILE, MAX_REQUEST_BYTES)
        return None if raw is None else parse_request(raw)

    def statuses(self) -> tuple[list[dict], list[str]]:
        """(every rank's status, one problem per status file that cannot be read)."""
        out, problems = [], []
        for name in self.names():
            if not STATUS_RE.match(name):
                continue
            try:
                raw = self.read(name, MAX_STATUS_BYTES)
                if raw is not None:
                    out.append(parse_status(raw))
            except (RequestError, OSError) as e:
                problems.append(f"{CAPTURE_DIR}/{name}: {e}")
        return out, problems
