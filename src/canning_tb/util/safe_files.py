"""Every open of a file of the user's (a logdir's traces, CSVs, dbs, manifests, name map, the cache folders
we keep in it) goes through here: the check is made on what was opened, at open time, never on a path
checked before (a file swapped for a link after it was listed is caught).

Reading (`open_file`, `read_file`):
- the file is opened with O_NONBLOCK, then `fstat` on the descriptor: only a regular file is read (a FIFO,
  socket or device named like a trace would block a reader forever, or read without end); the open of a
  FIFO itself returns at once with O_NONBLOCK, so no open waits for a writer;
- a path under a confinement root (`confine(root)`: a logdir; discovery and the readers register theirs)
  must really be there: the real path of the opened descriptor (/proc/self/fd) lies inside the root's
  real path, so a link to outside it (the shadow password file, /proc/self/environ) is refused, whoever
  made it and whenever. Links inside the logdir are followed. Links out are followed only where the user
  said so: for one logdir and every folder under it, however strict a logdir around it is
  (`confine(root, follow_links=True)`: `canning-prof --follow-links`, passed down as an argument), or for the
  whole process (`CANNING_FOLLOW_LINKS=1` in TensorBoard's environment, only read);
- a whole-file read has a deadline (READ_DEADLINE_S, between blocks): a read that stalls past it fails.

Writing (`atomic_write`, `make_dirs`): our folders inside a logdir (`.canning`, `.canning-capture` and below)
are walked with O_NOFOLLOW from the folder that holds them, so a `.canning` (or `.canning/trends`, or the
capture requests' `.canning-capture`) that is a link makes the write fail rather than land outside; the file is created O_EXCL | O_NOFOLLOW next to its final
name and renamed there through the folder's descriptor. Where descriptors of folders cannot be used so
(Windows: no dir_fd, no O_NOFOLLOW), our folders are made by path, a link among them refused by a check
just before, and the file is written next to its name and renamed by path.

Refusals are OSErrors (`Refused`), so every reader's "cannot read: <reason>" path reports them. Light on
purpose (no numpy, nothing of canning_tb): discovery, the readers, the store, the plugin, the CLI and the
MCP server all use it.
"""
from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
import time

FOLLOW_ENV = "CANNING_FOLLOW_LINKS"
OWN_DIRS = (".canning", ".canning-capture")  # our folders inside a run folder: never reached through a link
READ_DEADLINE_S = float(os.environ.get("CANNING_READ_DEADLINE_S", "600") or 600)
_BLOCK = 8 << 20

# folders walked by descriptor (POSIX); elsewhere (Windows) by path
_BY_FD = {os.open, os.mkdir, os.rename, os.unlink} <= os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")

_roots: dict[str, bool] = {}  # confinement roots (absolute and real forms) -> whether links may lead out of it
_lock = threading.Lock()


class Refused(OSError):
    """A file that may not be opened: not a regular file, or outside the logdir; `strerror` says which."""

    def __init__(self, path: str, why: str, code: int = errno.EPERM):
        super().__init__(code, why, path)


def follow_outside() -> bool:
    return os.environ.get(FOLLOW_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def confine(root: str | None, follow_links: bool = False) -> None:
    """From now on in this process, a path under `root` is only opened when it really is under it, unless
    `follow_links` (the user let links out of this logdir; once said for a root, it stays said)."""
    if not root:
        return
    forms = {os.path.abspath(root), os.path.realpath(root)}
    with _lock:
        for form in forms:
            _roots[form] = _roots.get(form, False) or follow_links


def follows_links(folder: str) -> bool:
    """Whether links under `folder` may lead out of its logdir: what the open-time check will answer for a file
    in it (the process's setting, or that of any registered root that holds it)."""
    return _lets_out(os.path.join(folder, "_"))


def _folders_above(path: str):
    """The folders that hold `path` (lexically), innermost first, up to the file system's root."""
    folder = os.path.dirname(os.path.abspath(path))
    while True:
        yield folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent


def _root_of(path: str) -> str | None:
    """The outermost confinement root that `path` names a file under (lexically), or None."""
    if not _roots:
        return None
    found = None
    for folder in _folders_above(path):
        if folder in _roots:
            found = folder
    return found


def is_inside(real: str, root: str) -> bool:
    root = os.path.realpath(root)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def real_path_of(fd: int, path: str) -> str:
    """Where the opened descriptor really is (Linux: its /proc/self/fd link; elsewhere the path's real
    path, accepted only when it is the same file as the descriptor)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass
    real = os.path.realpath(path)
    mine, theirs = os.fstat(fd), os.stat(real)
    if (mine.st_dev, mine.st_ino) != (theirs.st_dev, theirs.st_ino):
        raise Refused(path, "changed while it was opened")
    return real


def _lets_out(path: str, root: str | None = None) -> bool:
    """Whether links from `path` may lead out: the process's setting, `root`'s, or that of any registered root
    `path` lies under (a folder the user let links out of lets them out even inside a stricter outer logdir, as
    discovery's Policy lists it)."""
    if follow_outside() or (root is not None and _roots.get(os.path.abspath(root), False)):
        return True
    return any(_roots.get(folder, False) for folder in _folders_above(path))


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a plain file"


def open_fd(path: str, root: str | None = None) -> int:
    """A read-only descriptor of a regular file `path`, checked as the module doc says (`root`: the
    confinement root, by default the registered one the path lies under), blocking again once checked."""
    path = os.fspath(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise Refused(path, f"{_kind(mode)}, not a regular file")
        root = root if root is not None else _root_of(path)
        if root and not _lets_out(path, root) and not is_inside(real_path_of(fd, path), root):
            raise Refused(path, f"a link to outside the logdir (set {FOLLOW_ENV}=1 to follow it)")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_file(path: str, mode: str = "rb", root: str | None = None, encoding: str | None = None):
    """open(path, mode) for reading, checked (module doc). Raises OSError (Refused) when refused."""
    if any(c in mode for c in "wax+"):
        raise ValueError("open_file only reads; write with atomic_write")
    fd = open_fd(path, root)
    return os.fdopen(fd, mode, encoding=encoding)


def read_file(path: str, limit: int | None = None, root: str | None = None) -> bytes:
    """The file's bytes (at most `limit`), read a block at a time within READ_DEADLINE_S."""
    with open_file(path, root=root) as f:
        return read_all(f, path, limit)


def read_all(f, path: str, limit: int | None = None) -> bytes:
    """The rest of an open file (at most `limit` bytes) within READ_DEADLINE_S."""
    deadline = time.monotonic() + READ_DEADLINE_S
    parts, got = [], 0
    while limit is None or got < limit:
        block = f.read(_BLOCK if limit is None else min(_BLOCK, limit - got))
        if not block:
            break
        parts.append(block)
        got += len(block)
        if time.monotonic() > deadline:
            raise Refused(path, f"reading took longer than {READ_DEADLINE_S:g} s", errno.ETIMEDOUT)
    return b"".join(parts)


# -- writing into our own folders ------------------------------------------------------------------
def _own_parts(folder: str) -> tuple[str, list[str]]:
    """(the folder reached as it is, the components below it walked without following links): from
    the first of our components (OWN_DIRS) on, when the folder has one; else the folder itself is trusted."""
    parts = os.path.abspath(folder).split(os.sep)
    at = next((i for i, part in enumerate(parts) if part in OWN_DIRS), None)
    if at is not None:
        return os.sep.join(parts[:at]) or os.sep, parts[at:]
    return os.path.abspath(folder), []


@contextlib.contextmanager
def _folder_fd(folder: str, create: bool):
    top, below = _own_parts(folder)
    if create:
        os.makedirs(top, exist_ok=True)
    fd = os.open(top, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        for part in below:
            if create:
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                sub = os.open(part, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                              dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise Refused(os.path.join(top, *below), f"{part} is a link or not a folder: not written through",
                                  e.errno) from None
                raise
            os.close(fd)
            fd = sub
        yield fd
    finally:
        os.close(fd)


def make_dirs(folder: str) -> None:
    """os.makedirs(folder, exist_ok=True), our folders (`.canning` and below) never through a link."""
    if not _BY_FD:
        _make_dirs_by_path(folder)
        return
    with _folder_fd(folder, create=True):
        pass


def _make_dirs_by_path(folder: str) -> None:
    top, below = _own_parts(folder)
    os.makedirs(top, exist_ok=True)
    for part in below:
        top = os.path.join(top, part)
        if os.path.islink(top) or (os.path.exists(top) and not os.path.isdir(top)):
            raise Refused(folder, f"{part} is a link or not a folder: not written through", errno.ELOOP)
        os.makedirs(top, exist_ok=True)


def atomic_write(path: str, data=None, write=None) -> None:
    """Write `data` (bytes), or call `write(file)`, into a new file renamed to `path` when complete."""
    folder, name = os.path.split(os.path.abspath(path))
    if not _BY_FD:
        _atomic_write_by_path(folder, name, data, write)
        return
    with _folder_fd(folder, create=True) as dfd:
        tmp = f".{name}.{os.getpid()}.{threading.get_ident()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o644,
                     dir_fd=dfd)
        try:
            with os.fdopen(fd, "wb") as f:
                if write is not None:
                    write(f)
                else:
                    f.write(data)
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise


def _atomic_write_by_path(folder: str, name: str, data, write) -> None:
    """atomic_write where folders have no descriptors (Windows): the same temp name and rename, by path."""
    _make_dirs_by_path(folder)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "xb") as f:
            if write is not None:
                write(f)
            else:
                f.write(data)
        os.replace(tmp, os.path.join(folder, name))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
