"""Atomic file writing: every file appears complete, by rename from a temp name readers skip
(.<name>.<host>.<pid>.tmp). A failed write removes its temp file, and the one torch's exporter writes
beside it (Kineto writes `<name>.tmp`, renamed when complete: `.<name>.<host>.<pid>.tmp.tmp`); the temp
files of a killed process are removed by the next handler on the same host (remove_stale_temps)."""
import errno
import gzip
import json
import os
import re
import socket

from .background import untraced

_COUNT_TOKEN = b'"ph":'  # one per Chrome trace event; cheap to count while the bytes stream by
_CHUNK = 1 << 20


_TEMP_RE = re.compile(r"^\..+\.(?P<pid>\d+)\.tmp(?:\.tmp)?$")
EXPORTER_SUFFIX = ".tmp"  # what torch's exporter (Kineto) writes before renaming to the name it was given


def tmp_name(dir_name: str, final: str) -> str:
    return os.path.join(dir_name, f".{final}.{socket.gethostname()}.{os.getpid()}.tmp")


def remove_stale_temps(dir_name: str) -> list[str]:
    """Remove the temp files that processes of this host, no longer running, left in dir_name (a rank
    killed while writing); returns their names. Other hosts' temp files are theirs to remove."""
    host = socket.gethostname()
    removed = []
    try:
        names = os.listdir(dir_name)
    except OSError:
        return removed
    for name in names:
        if not stale_temp(name, host):
            continue
        try:
            os.remove(os.path.join(dir_name, name))
            removed.append(name)
        except OSError:
            pass
    return removed


def stale_temp(name: str, host: str) -> bool:
    """A temp file name of a process of this host that no longer runs."""
    found = _TEMP_RE.match(name)
    mine = name.endswith((f".{host}.{found.group('pid')}.tmp", f".{host}.{found.group('pid')}.tmp.tmp")) if found else False
    return mine and not alive(int(found.group("pid")))


def alive(pid: int) -> bool:
    if os.name == "nt":  # there os.kill(pid, 0) would end the process: its temp files are kept
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """Ended but not yet reaped (a killed rank's child, until init reaps it): it writes nothing more."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):  # no /proc here: as alive as kill() says
        return False


def claim_temp(path: str) -> None:
    """Create the file the profiler exports into: a folder we cannot write (read-only, full, no
    permission) fails here with its real OS error, not later on a missing file."""
    with open(path, "wb"):
        pass


def check_complete(path: str) -> None:
    """The profiler logs a failed write and leaves a cut file (file too large, disk full): a Chrome
    trace ends with '}'. Said as the OS error the next byte meets (the cut file is the exporter's own
    `<path>.tmp` when it never got to rename it); a cut at the process's file-size limit is EFBIG."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        f.seek(max(0, size - 256))
        tail = f.read()
    if tail.rstrip().endswith((b"}", b"]")):
        return
    cut = path + EXPORTER_SUFFIX if os.path.exists(path + EXPORTER_SUFFIX) else path
    cut_size = os.path.getsize(cut)
    limit = _file_size_limit()
    if limit is not None and cut_size + _CHUNK >= limit:  # the writer's next buffer would not fit
        raise OSError(errno.EFBIG, f"File too large: the trace reached the file-size limit of {limit} bytes "
                                   f"({cut_size} bytes written)")
    with open(cut, "ab") as f:  # EFBIG, ENOSPC, EROFS... surface here
        f.write(b" ")
        f.flush()
        os.fsync(f.fileno())
    raise OSError(errno.EIO, f"the profiler wrote an incomplete trace ({cut_size} bytes)")


def _file_size_limit() -> int | None:
    """The process's file-size limit (RLIMIT_FSIZE) in bytes, None when unlimited or unknown."""
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    except (ImportError, OSError, ValueError, AttributeError):
        return None
    return None if soft == resource.RLIM_INFINITY else soft


def discard_temp(path: str) -> None:
    """Remove a temp file of ours and what the exporter left beside it (`<path>.tmp`)."""
    for name in (path, path + EXPORTER_SUFFIX):
        _remove(name)


def is_temp(name: str) -> bool:
    return name.startswith(".") or name.endswith(".tmp")


def publish_gzip(src: str, dst: str, level: int = 6) -> int:
    """Gzip src into dst atomically; returns the number of trace events seen. src is removed."""
    tmp = tmp_name(os.path.dirname(dst), os.path.basename(dst))
    events, tail = 0, b""
    try:
        with open(src, "rb") as fin, open(tmp, "wb") as raw, \
                gzip.GzipFile(filename="", mode="wb", compresslevel=level, fileobj=raw, mtime=0) as fout:
            while chunk := fin.read(_CHUNK):
                untraced()  # a window started meanwhile hooked the writer thread: its frames are not the user's
                data = tail + chunk
                events += data.count(_COUNT_TOKEN)
                tail = chunk[-(len(_COUNT_TOKEN) - 1):]  # too short to hold a token: a split one counts once
                fout.write(chunk)
        os.replace(tmp, dst)
    finally:
        _remove(tmp)
        _remove(src)
    return events


def publish_plain(src: str, dst: str) -> int:
    events, tail = 0, b""
    with open(src, "rb") as f:
        while chunk := f.read(_CHUNK):
            data = tail + chunk
            events += data.count(_COUNT_TOKEN)
            tail = chunk[-(len(_COUNT_TOKEN) - 1):]
    os.replace(src, dst)
    return events


def publish_json(obj, dst: str) -> int:
    return publish_bytes(json.dumps(obj, indent=1, sort_keys=False).encode(), dst)


def publish_bytes(data: bytes, dst: str) -> int:
    """`data` into dst atomically (a temp file beside it, then a rename); returns its size."""
    tmp = tmp_name(os.path.dirname(dst), os.path.basename(dst))
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, dst)
    finally:
        _remove(tmp)
    return len(data)


def tree_bytes(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for root, _dirs, names in os.walk(path):
        for n in names:
            try:
                total += os.path.getsize(os.path.join(root, n))
            except OSError:
                pass
    return total


def _remove(path: str):
    try:
        os.remove(path)
    except OSError:
        pass

