"""Windows for a remote run folder (s3://bucket/prefix/run, gs://, hdfs://, az://...): written into a
local staging folder as usual, then uploaded in the background by an uploader process (uploader.py,
fed through upload_queue.py), in order, each window published atomically (temporary keys, then moved,
the manifest last), so the training step waits only for the local write. stop() and interpreter exit
wait for the uploads; a failed upload is said once per streak, naming the window and the error.
The staged files are removed once uploaded (by the background digest when it runs, after it has read them)."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile

from canning_tb.util import remote_fs
from canning_tb.util.manifest import Manifest
from canning_tb.util.scalars import ScalarWriter

from . import files
from .upload_queue import UploadQueue

STAGE_PREFIX = "canning-stage-"
MAX_PENDING_UPLOADS = 4  # staged windows waiting for their upload before a window's call waits


class RemoteRun:
    def __init__(self, url: str, on_answer, max_pending: int = MAX_PENDING_UPLOADS):
        """on_answer(answer): see UploadQueue."""
        self.url = url.rstrip("/")
        remote_fs.open_fs(self.url)  # RemoteError now when the back-end is missing, not in the uploader
        self.queue = UploadQueue(self.url, max_pending, on_answer)
        _remove_stale_stages()
        self.stage = tempfile.mkdtemp(prefix=f"{STAGE_PREFIX}{os.getpid()}-")
        atexit.register(self.close)  # the last windows are uploaded before the interpreter exits

    def submit(self, manifest: Manifest, scalars: str | None, digest: bool) -> None:
        self.queue.submit(self.stage, manifest, scalars, digest)

    def flush(self) -> None:
        self.queue.flush()

    def close(self) -> None:
        """At exit, once every window is uploaded: the staged scalars file goes, and the staging folder
        with it unless a background digest still reads a window there (it removes that window itself;
        the next run's _remove_stale_stages takes the empty folder)."""
        self.flush()
        try:
            for name in os.listdir(self.stage):
                if name.startswith(ScalarWriter.PREFIX):
                    os.remove(os.path.join(self.stage, name))
            os.rmdir(self.stage)
        except OSError:
            pass


def drop_staged(folder: str, manifest: Manifest) -> None:
    """Remove a window's staged files (it will not be uploaded)."""
    remote_fs.remove_local(folder, [f.name for f in manifest.files] + [manifest.manifest])


def _remove_stale_stages() -> None:
    """The staging folders of processes that no longer run (a killed rank's)."""
    root = tempfile.gettempdir()
    for name in os.listdir(root):
        pid = name[len(STAGE_PREFIX):].split("-", 1)[0]
        if name.startswith(STAGE_PREFIX) and pid.isdigit() and not files.alive(int(pid)):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
