"""Freed memory kept for reuse while a window is read and digested (glibc only; elsewhere nothing changes).

A digest allocates and frees many big numpy arrays one after another. glibc returns each one over its
mmap threshold (128 KiB at first, at most 32 MiB) to the system when it is freed, so the next one is
fresh memory again and costs a page fault per page when first written: 594k faults on the 1 GB bench
trace, 4.7 s of system time on this project's 2-core VM (about 7 µs a fault). With the threshold and the
trim threshold at 1 GiB for the digest's duration, freed blocks are reused from the heap: 238k faults,
2.1-2.9 s of system time, the cold digest 6.3-7.5 s against 8.9-9.1 s (both in one run), the peak RSS
the same within 5 % (the peak is the live columns, not the freed ones). At the end the defaults are
set again and the free heap is given back (malloc_trim).

Only in a process that exits when its work is done, and only where that process asked for it
(tune_this_process: the CLI's batch commands, the spawned digest children, the background digest at the
source). Setting M_MMAP_THRESHOLD by hand turns glibc's adaptive threshold off for the rest of the
process, and there is no call that turns it back on: in TensorBoard or the MCP server every later big
array would then fault its pages afresh (a 4 MiB numpy array written 300 times after a digest: 154k
faults instead of a few hundred, tests/store/test_heap.py). Such hosts never call tune_this_process, so reuse_freed_memory changes nothing there.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import threading
from typing import Iterator

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_KEEP = 1 << 30  # bytes: blocks below this are served from the heap and kept there when freed
_DEFAULT = 128 << 10  # glibc's initial mmap and trim thresholds

_lock = threading.Lock()
_active = 0
_tuning = False  # set by tune_this_process(): this process exits when its work is done


def _glibc():
    """The C library when it is glibc (it has mallopt and malloc_trim), else None."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.gnu_get_libc_version  # glibc's own symbol: musl and others have none
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except (OSError, AttributeError):
        return None


_LIBC = _glibc()


def tune_this_process() -> None:
    """Let reuse_freed_memory tune the allocator in this process from now on. Call it only in a process
    that exits after its work (a CLI batch command, a child process): never in a long-lived host."""
    global _tuning
    _tuning = True


@contextlib.contextmanager
def reuse_freed_memory() -> Iterator[None]:
    """Within: freed big blocks stay in the heap for the next allocation. Nested and threaded uses share
    one setting; the last one out restores the defaults and trims the heap. Nothing changes unless this
    process called tune_this_process()."""
    global _active
    if _LIBC is None or not _tuning:
        yield
        return
    with _lock:
        if _active == 0:
            _LIBC.mallopt(_M_MMAP_THRESHOLD, _KEEP)
            _LIBC.mallopt(_M_TRIM_THRESHOLD, _KEEP)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                _LIBC.mallopt(_M_MMAP_THRESHOLD, _DEFAULT)
                _LIBC.mallopt(_M_TRIM_THRESHOLD, _DEFAULT)
                _LIBC.malloc_trim(0)
