"""A forked child that reads part of a big file and hands its reader back to the parent.

The reader is mostly numpy columns (hundreds of MB for a GB file). A multiprocessing Connection
pickles it into a growing BytesIO and the parent reads it into another one: four copies, and on this
VM about 110k page faults (1 GB Kineto trace), all on the critical path. Here the child pickles
with protocol 5 and out-of-band buffers, writes each column's memory straight into a pipe, and the
parent reads each into a buffer of its own that the unpickled arrays then use: one copy each way.

Only what the parent asked for comes back: the target's value, or None where the child failed or
died (the caller then reads the part itself, and gives the precise error).

POSIX only, where fork is the safe and usual way (Linux, the BSDs): can_fork() is False on Windows and
macOS (no os.fork, or fork unsafe once system frameworks are loaded), and the callers read in-process.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import struct
import sys
import threading

import numpy as np

_WORD = struct.Struct("<q")
_PIPE_BYTES = 1 << 20  # fewer system calls per column (Linux's default pipe holds 64 KB)


def can_fork() -> bool:
    """Fork only where it is safe: a POSIX process (not macOS) with no other thread, not a daemonic worker,
    and a second CPU to run the child on."""
    return (hasattr(os, "fork") and sys.platform != "darwin" and "fork" in mp.get_all_start_methods()
            and threading.active_count() == 1
            and not mp.current_process().daemon and (os.cpu_count() or 1) > 1)


class Forked:
    """The child process running target(*args); `result()` waits for its value."""

    def __init__(self, target, *args):
        read_end, write_end = os.pipe()
        try:
            import fcntl  # POSIX: imported here, so that the module imports everywhere
            fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        except (ImportError, AttributeError, OSError):  # not Linux, an older kernel or a lower limit: the default works
            pass
        self.proc = mp.get_context("fork").Process(target=_run, args=(write_end, read_end, target, args),
                                                   daemon=True)
        try:
            self.proc.start()
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        self.fd = read_end

    def result(self):
        """The target's value, or None where it raised or the child died before handing it over."""
        try:
            return _receive(self.fd)
        except (EOFError, OSError, pickle.UnpicklingError, ValueError):
            return None
        finally:
            os.close(self.fd)
            self.proc.join()

    def kill(self) -> None:
        """Stop the child (its answer is no longer wanted) and wait for it."""
        self.proc.kill()
        self.result()


def _run(write_end: int, read_end: int, target, args) -> None:
    os.close(read_end)
    try:
        value = target(*args)
    except BaseException:  # the parent reads the part itself and reports what is wrong there
        value = None
    try:
        _send(write_end, value)
    except OSError:  # the parent stopped listening
        pass
    finally:
        os.close(write_end)


def _send(fd: int, value) -> None:
    buffers: list[pickle.PickleBuffer] = []
    head = pickle.dumps(value, protocol=5, buffer_callback=buffers.append)
    views = [memoryview(head)] + [b.raw() for b in buffers]
    _write_all(fd, memoryview(_WORD.pack(len(views)) + b"".join(_WORD.pack(v.nbytes) for v in views)))
    for view in views:
        _write_all(fd, view)


def _receive(fd: int):
    count = _WORD.unpack(_read_exactly(fd, bytearray(_WORD.size)))[0]
    sizes = struct.unpack(f"<{count}q", _read_exactly(fd, bytearray(count * _WORD.size)))
    head = _read_exactly(fd, bytearray(sizes[0]))
    # a buffer per column, numpy's own memory: the unpickled arrays are views of these, and the join
    # that concatenates the columns frees each as it goes (one block would be held to the last)
    buffers = [_read_exactly(fd, np.empty(size, np.uint8)) for size in sizes[1:]]
    return pickle.loads(head, buffers=buffers)


def _write_all(fd: int, view: memoryview) -> None:
    while len(view):
        view = view[os.write(fd, view):]


def _read_exactly(fd: int, buf):
    view, done = memoryview(buf).cast("B"), 0
    while done < len(view):
        got = os.readv(fd, [view[done:]])
        if got == 0:
            raise EOFError("the child ended before handing its reader over")
        done += got
    return buf
