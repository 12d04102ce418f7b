"""Windows for a remote run folder (s3://bucket/prefix/run, gs://, hdfs://, az://...): written into a
local staging folder as usual, then uploaded, each file under a temporary key then moved to its name,
the manifest last, so discovery never shows half a window. The staged files are removed once uploaded
(by the background digest when it runs, after it has read them)."""
from __future__ import annotations

import os
import shutil
import socket
import tempfile

from canning_tb import remote_fs
from canning_tb.manifest import Manifest

from . import files


STAGE_PREFIX = "canning-stage-"


class RemoteRun:
    def __init__(self, url: str):
        self.url = url.rstrip("/")
        self.fs, self.root = remote_fs.open_fs(self.url)  # RemoteError now when the back-end is missing
        _remove_stale_stages()
        self.stage = tempfile.mkdtemp(prefix=f"{STAGE_PREFIX}{os.getpid()}-")
        self._cleaned = False

    def publish(self, manifest: Manifest) -> None:
        """Upload the window's files, then its manifest; RemoteError says why it failed."""
        if not self._cleaned:  # the temporary keys a killed process of this host left behind
            self._cleaned = True
            self._remove_stale_keys()
        for name in [f.name for f in manifest.files] + [manifest.manifest]:
            self.upload(os.path.join(self.stage, name))

    def _remove_stale_keys(self) -> None:
        host = socket.gethostname()
        try:
            names = [os.path.basename(p.rstrip("/")) for p in remote_fs.call(self.url, self.fs.ls, self.root)]
        except remote_fs.RemoteNotFound:  # a new run folder
            return
        for name in names:
            if files.stale_temp(name, host):
                remote_fs.call(self.url, self.fs.rm, f"{self.root}/{name}", recursive=True)

    def upload(self, local: str) -> None:
        name = os.path.basename(local)
        remote_fs.call(self.url, remote_fs.put_atomic, self.fs, local, f"{self.root}/{name}")

    def upload_appended(self, local: str) -> None:
        """A file that grows (TensorBoard's event file): replaced whole, its readers take a partial record."""
        remote_fs.call(self.url, self.fs.put_file, local, f"{self.root}/{os.path.basename(local)}")


def drop_staged(folder: str, manifest: Manifest) -> None:
    """Remove a window's staged files once they are uploaded."""
    remote_fs.remove_local(folder, [f.name for f in manifest.files] + [manifest.manifest])


def _remove_stale_stages() -> None:
    """The staging folders of processes that no longer run (a killed rank's)."""
    root = tempfile.gettempdir()
    for name in os.listdir(root):
        pid = name[len(STAGE_PREFIX):].split("-", 1)[0]
        if name.startswith(STAGE_PREFIX) and pid.isdigit() and not files.alive(int(pid)):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
