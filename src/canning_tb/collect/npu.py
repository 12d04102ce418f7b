"""What torch_npu does process-wide, handled in one place.

- Its output folder is a process singleton, re-pointed by every call of its tensorboard_trace_handler:
  `claim` lets one running NPU profile own it at a time and refuses clearly otherwise.
- Without its handler it writes raw data into the working directory that nothing ever parses:
  `private_handler` sends it to a temporary folder and analyses it, so the results still work.
- With no schedule, every stop() prints its "Incorrect schedule" warning although nothing is wrong:
  `quiet_stop` drops that one line.
"""
from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import tempfile
import weakref

log = logging.getLogger(__name__)

_owner = None  # (weakref to the running profile, folder) that torch_npu's output points at now
_NO_SCHEDULE_WARNING = "Incorrect schedule: Stop profiler while current state is RECORD"


def claim(profile, dir_name: str) -> None:
    """Let this profile own torch_npu's process-wide output folder, or refuse clearly."""
    global _owner
    other_dir = claimed_elsewhere(dir_name, profile)
    if other_dir is not None:
        raise RuntimeError(
            f"torch_npu writes the output of every profiler of a process into one folder, and a running "
            f"NPU profile already writes into {other_dir!r}; stop it before starting one that writes into "
            f"{dir_name!r} (or use one tensorboard_trace_handler per process)")
    _owner = (weakref.ref(profile), dir_name)


def claimed_elsewhere(dir_name: str, profile=None) -> str | None:
    """The folder another running NPU profile of this process writes into, when it is not dir_name."""
    if _owner is None:
        return None
    other, other_dir = _owner[0](), _owner[1]
    if other is None or other is profile or not getattr(other, "running", False):
        return None
    return other_dir if os.path.realpath(other_dir) != os.path.realpath(dir_name) else None


def needs_private_handler(on_trace_ready) -> bool:
    """No handler that makes torch_npu write and analyse a folder: None, or a callback of the user's own."""
    if on_trace_ready is None:
        return True
    if hasattr(on_trace_ready, "canning_prepare"):  # ours
        return False
    return not (getattr(on_trace_ready, "__module__", None) or "").startswith("torch_npu")  # torch_npu's own


def private_handler(module, profile, folder: str | None = None) -> tuple:
    """(torch_npu's own handler, its folder): a temporary folder, for an NPU profile given no handler of
    ours or torch_npu's (the user's own on_trace_ready still runs, after it).

    Called at each start(): it re-points torch_npu's process-wide output at the same folder.
    """
    if folder is None:
        folder = tempfile.mkdtemp(prefix="canning-npu-")
        log.warning("canning: NPU profile without tensorboard_trace_handler: torch_npu's data goes to %s (pass "
                    "on_trace_ready=ps.tensorboard_trace_handler(dir) to keep it for TensorBoard)", folder)
    claim(profile, folder)
    return module.tensorboard_trace_handler(folder), folder


class _DropLine(io.TextIOBase):
    """A stdout that passes everything through except print()s holding one text (and their newline)."""

    def __init__(self, target, text: str):
        self._target, self._text, self._dropped = target, text, False

    def write(self, s: str) -> int:
        if self._text in s:
            self._dropped = True
            return len(s)
        if self._dropped and s == "\n":
            self._dropped = False
            return len(s)
        self._dropped = False
        return self._target.write(s)

    def flush(self) -> None:
        self._target.flush()


def quiet_stop(profiler) -> None:
    """profiler.stop() without torch_npu's warning for a profile that has no schedule."""
    with contextlib.redirect_stdout(_DropLine(sys.stdout, _NO_SCHEDULE_WARNING)):
        profiler.stop()
