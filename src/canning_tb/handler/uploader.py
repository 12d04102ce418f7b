"""The upload process of a remote run folder: `python -m canning_tb.handler.uploader URL`.

The handler (upload_queue.py) starts one per run folder and writes one JSON line per staged window
to its stdin; it uploads them in that order and answers one JSON line per window on stdout
({"window", "error", "scalars_error"}), so the training step only ever waits for the local write.
Each window's files are uploaded under hidden temporary keys first (the slow part), then moved to
their names, the manifest last: a process killed while uploading leaves only temporary keys, which
the next uploader of this host removes (killed during the moves, server-side copies of a few ms, it
may leave a whole trace under its name without its manifest: read as a plain torch.profiler trace).
Then the window's digest is started (source_digest), or its staged files are removed. Runs at a low
priority; Ctrl-C is ignored (the handler's stop() still flushes through it); end of stdin means:
finish the windows received, then exit.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time

from canning_tb.util import remote_fs
from canning_tb.util.manifest import Manifest, ascend_status
from canning_tb.util.manifest import load as load_manifest

from . import files
from .upload_queue import DIGEST_MODULE

log = logging.getLogger("canning_tb.upload")
NICENESS = 10
ANALYSIS_WAIT_S = 3600  # torch_npu's background analysis of one window (async_mode): then upload what is there
ANALYSIS_POLL_S = 0.5


class WindowPublisher:
    def __init__(self, url: str):
        self.url = url.rstrip("/")
        self.fs, self.root = remote_fs.open_fs(self.url)
        self._cleaned = False
        self._children: list[subprocess.Popen] = []

    def handle(self, job: dict) -> dict:
        """Upload one staged window (and the scalars file); the answer for the handler."""
        man = load_manifest(job["manifest"])
        stage = os.path.dirname(job["manifest"])
        answer = {"window": man.manifest, "error": None, "scalars_error": None}
        try:
            if man.analysis == "async":
                wait_for_analysis(os.path.join(stage, man.files[0].name))
            self.publish(stage, man)
        except OSError as e:  # RemoteError (network, credentials, bucket) or the staged files
            remote_fs.remove_local(stage, staged_names(man))
            answer["error"] = said(e)
            return answer
        if job.get("scalars"):
            try:
                self.upload_whole(job["scalars"])
            except OSError as e:
                answer["scalars_error"] = said(e)
        if not (job.get("digest") and self._start_digest(job["manifest"])):
            remote_fs.remove_local(stage, staged_names(man))
        return answer

    def publish(self, stage: str, man: Manifest) -> None:
        """Every file under its temporary key, then each moved to its name, the manifest last."""
        if not self._cleaned:  # the temporary keys a killed process of this host left behind
            self._cleaned = True
            self._remove_stale_keys()
        temps = {}
        try:
            for name in staged_names(man):
                local = os.path.join(stage, name)
                temps[name] = remote_fs.temp_key(f"{self.root}/{name}")
                if os.path.isdir(local):
                    remote_fs.call(self.url, self.fs.put, local, temps[name], recursive=True)
                else:  # put_file: one request, where put() first asks whether the key is a folder
                    remote_fs.call(self.url, self.fs.put_file, local, temps[name])
            for name in staged_names(man):  # server-side moves: quick, no reader sees half a window
                self._move(temps[name], f"{self.root}/{name}", os.path.isdir(os.path.join(stage, name)))
                del temps[name]
        except OSError:
            self._remove_keys(temps.values())
            raise

    def _move(self, tmp: str, key: str, folder: bool) -> None:
        """Copy then delete, file by file: fsspec's mv() lists and probes each path first, and its
        recursive move of an S3 prefix looks for the prefix itself as a key (torch_npu's folders)."""
        inner = remote_fs.call(self.url, self.fs.find, tmp) if folder else [tmp]
        for path in inner:
            remote_fs.call(self.url, self.fs.cp_file, path, key + path[len(tmp):])
            remote_fs.call(self.url, self.fs.rm_file, path)

    def upload_whole(self, local: str) -> None:
        """A file that grows (TensorBoard's event file): replaced whole, its readers take a partial record."""
        remote_fs.call(self.url, self.fs.put_file, local, f"{self.root}/{os.path.basename(local)}")

    def _remove_stale_keys(self) -> None:
        host = socket.gethostname()
        try:
            names = [os.path.basename(p.rstrip("/")) for p in remote_fs.call(self.url, self.fs.ls, self.root)]
        except remote_fs.RemoteNotFound:  # a new run folder
            return
        self._remove_keys(f"{self.root}/{name}" for name in names if files.stale_temp(name, host))

    def _remove_keys(self, keys) -> None:
        for key in list(keys):
            try:
                remote_fs.call(self.url, self.fs.rm, key, recursive=True)
            except OSError as e:  # the first failure is the one reported; the next start removes it
                log.debug("could not remove %s: %s", key, e)

    def _start_digest(self, manifest_path: str) -> bool:
        """The window's digest, uploaded beside it by its own low-priority process (which then removes
        the staged files); this process inherits the handler's environment (PYTHONPATH included)."""
        self._children = [c for c in self._children if c.poll() is None]  # no zombies left behind
        try:
            self._children.append(subprocess.Popen(
                [sys.executable, "-m", DIGEST_MODULE, "--publish", self.url, manifest_path],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True))
        except OSError as e:
            log.warning("could not start the background digest for %s: %s", manifest_path, e)
            return False
        return True


def said(err: OSError) -> str:
    """The error for the warning: a RemoteError already names the URL and the reason, without secrets."""
    return str(err) if isinstance(err, remote_fs.RemoteError) else remote_fs.scrub(f"{type(err).__name__}: {err}")


def staged_names(man: Manifest) -> list[str]:
    """The window's files, the manifest last."""
    return [f.name for f in man.files] + [man.manifest]


def wait_for_analysis(folder: str, limit_s: float = ANALYSIS_WAIT_S) -> None:
    """torch_npu analyses the window in the background (async_mode): its folder is uploaded when done."""
    deadline = time.monotonic() + limit_s
    while ascend_status(folder, "async") != "ready":
        if time.monotonic() > deadline:
            log.warning("torch_npu's analysis of %s is not done after %d s; uploading it as it is", folder, limit_s)
            return
        time.sleep(ANALYSIS_POLL_S)


def _answer(out, answer: dict) -> bool:
    """Tell the handler; False once nobody reads (the training process is gone): uploads go on."""
    try:
        out.write(json.dumps(answer) + "\n")
        out.flush()
        return True
    except (BrokenPipeError, ValueError):
        return False


def serve(url: str, lines, out) -> None:
    """Upload the windows read from lines, answering on out."""
    publisher = WindowPublisher(url)
    listening = True
    for line in lines:
        job = json.loads(line)
        try:
            answer = publisher.handle(job)
        except Exception as e:  # process boundary: one window's failure never stops the next
            log.warning("could not upload %s", job.get("manifest"), exc_info=True)
            answer = {"window": os.path.basename(job.get("manifest", "")), "error": remote_fs.scrub(f"{type(e).__name__}: {e}"),
                      "scalars_error": None}
        if answer["error"] is not None and not listening:
            log.warning("could not upload %s: %s", answer["window"], answer["error"])
        listening = listening and _answer(out, answer)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m canning_tb.handler.uploader URL  (jobs as JSON lines on stdin)", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(level=logging.WARNING, format="canning upload: %(message)s")
    try:
        os.nice(NICENESS)
    except (AttributeError, OSError):  # not on this platform: the process still runs apart from training
        pass
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")  # the handler's pipe: answers only
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # anything a library prints goes to stderr
    serve(args[0], sys.stdin, answers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
