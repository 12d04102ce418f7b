"""The training side of the background upload: one uploader process (uploader.py) per remote run
folder, fed one JSON line per staged window, in order.

A process, not a thread: its Python calls would show in the next window's stacks (with_stack traces
every thread) and compete with training for the GIL. At most `limit` windows wait for their upload:
past that the next window's call waits (back-pressure, instead of staging without bound). The
answers are read without blocking at every window, and all of them at flush() (the handler's stop(),
interpreter exit): then stdin is closed, the uploader finishes and exits; the next window starts a
new one. The answers are waited for with select() on the pipe; where select() takes only sockets (Windows)
a daemon thread reads them into a queue instead (there, and only there, it shows in with_stack traces).
"""
from __future__ import annotations

import json
import logging
import os
import queue
import select
import subprocess
import sys
import threading

from canning_tb.util import remote_fs
from canning_tb.util.manifest import Manifest

log = logging.getLogger(__name__)
UPLOADER_MODULE = "canning_tb.handler.uploader"
DIGEST_MODULE = "canning_tb.store.source_digest"  # the one background-digest entry point
SELECT_PIPES = os.name != "nt"  # select() waits on pipes (POSIX); else a reader thread


def child_env() -> dict:
    """The environment of a background process: it must run this very canning_tb (a checkout may
    shadow the installed one)."""
    src_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src_root, env.get("PYTHONPATH")) if p)
    return env


class UploadQueue:
    def __init__(self, url: str, limit: int, on_answer):
        """on_answer(answer dict) for every window: {"window", "error", "scalars_error"}."""
        if limit < 1:
            raise ValueError(f"max_pending_uploads must be at least 1, not {limit}")
        self.url, self.limit, self._on_answer = url, limit, on_answer
        self._proc: subprocess.Popen | None = None
        self._waiting: dict[str, tuple[str, Manifest]] = {}  # window -> (staging folder, manifest), in order
        self._unread = b""
        self._said_full = False
        self._chunks: queue.SimpleQueue | None = None  # the reader thread's bytes (no select on pipes)

    def submit(self, stage: str, manifest: Manifest, scalars: str | None, digest: bool) -> None:
        """Queue a staged window; waits only while `limit` windows already wait for their upload."""
        if self._proc is not None:
            self._read(block=False)
        while self._proc is not None and len(self._waiting) >= self.limit:
            if not self._said_full:
                self._said_full = True
                log.warning("canning: %d profiler windows wait for their upload to %s: training waits for the "
                            "upload (it is slower than the windows)", len(self._waiting), remote_fs.scrub(self.url))
            self._read(block=True)
        line = (json.dumps({"manifest": os.path.join(stage, manifest.manifest), "scalars": scalars,
                            "digest": digest}) + "\n").encode()
        why = self._send(line)
        self._waiting[manifest.manifest] = (stage, manifest)
        if why is not None:
            self._give_up(why)

    def _send(self, line: bytes) -> str | None:
        """Write a job to the uploader, starting one if needed; a dead one (killed, crashed) is said
        and replaced once. None when sent, else why not."""
        for _attempt in range(2):
            if self._proc is None:
                try:
                    self._start()
                except OSError as e:  # no process left to start (limits, memory)
                    return f"could not start the upload process: {e}"
            try:
                self._proc.stdin.write(line)
                self._proc.stdin.flush()
                return None
            except BrokenPipeError:  # it died meanwhile: its answers, then the windows it never answered for
                self.flush()
        return "the upload process exited at once, twice"

    def flush(self) -> None:
        """Wait until every queued window is uploaded (or failed), then let the uploader exit."""
        if self._proc is None:
            return
        try:
            self._proc.stdin.close()
        except BrokenPipeError:
            pass
        while self._proc is not None:
            self._read(block=True)

    def _start(self) -> None:
        self._proc = subprocess.Popen([sys.executable, "-m", UPLOADER_MODULE, self.url], env=child_env(),
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self._unread = b""
        self._chunks = None
        if not SELECT_PIPES:
            self._chunks = queue.SimpleQueue()
            threading.Thread(target=_pump, args=(self._proc.stdout.fileno(), self._chunks), daemon=True,
                             name="canning-upload-answers").start()

    def _take(self, block: bool) -> bytes | None:
        """The bytes that arrived (b"" at the end), None when none yet and not waiting for them."""
        if self._chunks is not None:
            try:
                return self._chunks.get(block)
            except queue.Empty:
                return None
        out = self._proc.stdout
        ready, _, _ = select.select([out], [], [], None if block else 0)
        return os.read(out.fileno(), 1 << 16) if ready else None

    def _read(self, block: bool) -> None:
        """Take the answers that arrived (block: wait for at least some bytes, or the end)."""
        data = self._take(block)
        if data is None:
            return
        if not data:
            self._ended()
            return
        *lines, self._unread = (self._unread + data).split(b"\n")
        for line in lines:
            try:
                answer = json.loads(line)
                self._waiting.pop(answer["window"])
            except (ValueError, KeyError, TypeError):  # not one of its answers: the window stays waiting
                log.debug("canning: unexpected line from the upload process: %r", line[:200])
                continue
            self._on_answer(answer)

    def _ended(self) -> None:
        """The uploader exited: at flush, or killed / crashed with windows it never answered for."""
        code = self._proc.wait()
        self._proc.stdout.close()
        self._proc = None
        self._give_up(f"the upload process exited (code {code}) before uploading it")

    def _give_up(self, why: str) -> None:
        """Every waiting window is not uploaded: its staged files are removed, each one said."""
        for window, (stage, manifest) in list(self._waiting.items()):
            remote_fs.remove_local(stage, [f.name for f in manifest.files] + [manifest.manifest])
            self._on_answer({"window": window, "error": why, "scalars_error": None})
        self._waiting.clear()


def _pump(fd: int, chunks: queue.SimpleQueue) -> None:
    """The uploader's answers into `chunks` as they arrive, b"" at the end (the reader thread)."""
    while True:
        try:
            data = os.read(fd, 1 << 16)
        except OSError:  # closed by _ended
            data = b""
        chunks.put(data)
        if not data:
            return
