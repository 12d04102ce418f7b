"""Windows for a remote run folder (s3://bucket/prefix/run, gs://, hdfs://, az://...): written into a
local staging folder as usual, then uploaded, each file under a temporary key then moved to its name,
the manifest last, so discovery never shows half a window. The staged files are removed once uploaded
(by the background digest when it runs, after it has read them)."""
from __future__ import annotations

import os
import tempfile

from canning_tb import remote_fs
from canning_tb.manifest import Manifest


class RemoteRun:
    def __init__(self, url: str):
        self.url = url.rstrip("/")
        self.fs, self.root = remote_fs.open_fs(self.url)  # RemoteError now when the back-end is missing
        self.stage = tempfile.mkdtemp(prefix="canning-stage-")

    def publish(self, manifest: Manifest) -> None:
        """Upload the window's files, then its manifest; RemoteError says why it failed."""
        for name in [f.name for f in manifest.files] + [manifest.manifest]:
            self.upload(os.path.join(self.stage, name))

    def upload(self, local: str) -> None:
        name = os.path.basename(local)
        remote_fs.call(self.url, remote_fs.put_atomic, self.fs, local, f"{self.root}/{name}")

    def upload_appended(self, local: str) -> None:
        """A file that grows (TensorBoard's event file): replaced whole, its readers take a partial record."""
        remote_fs.call(self.url, self.fs.put_file, local, f"{self.root}/{os.path.basename(local)}")


def drop_staged(folder: str, manifest: Manifest) -> None:
    """Remove a window's staged files once they are uploaded."""
    remote_fs.remove_local(folder, [f.name for f in manifest.files] + [manifest.manifest])
