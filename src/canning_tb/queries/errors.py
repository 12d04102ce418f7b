"""What a selection raises when it cannot answer, and the digest of the window a request names.

The errors say what went wrong, never how a front door answers it: the plugin maps each kind to an HTTP
status (plugin/boundary.py), the MCP server to a tool error, the CLI to its exit code."""
from __future__ import annotations

import os
import re


class QueryError(Exception):
    """A selection that cannot be answered: `body` is {"error": message, **extra} (extra: what a client
    may act on, e.g. the file, or `loading`)."""

    def __init__(self, message: str, **extra):
        super().__init__(message)
        self.body = {"error": message, **extra}


class BadParameter(QueryError):
    """A parameter that is missing, malformed or out of range."""


class NotFound(QueryError):
    """An id (run, worker, window, operator, device...) that the store did not discover."""


class Unreadable(QueryError):
    """The window's files cannot be read: the message names the file and the problem."""


class UnknownChip(QueryError):
    """A chip name (`chip=`) the peak table does not have: 422, with the known names."""


class Unavailable(QueryError):
    """Not answerable yet (the logdir is still being listed): ask again."""


def unknown_window(run: str, worker: str, window: str) -> NotFound:
    return NotFound(f"unknown run/worker/window: {run!r} / {worker!r} / {window!r}")


def short_path(store, path: str) -> str:
    """A file named relative to the logdir (as the user knows it), else as it is."""
    if store.logdir and path and os.path.isabs(path):
        try:
            rel = os.path.relpath(path, store.logdir)
        except ValueError:  # Windows: another drive
            return path
        if not rel.startswith(".."):
            return rel.replace(os.sep, "/")
    return path


_ABSOLUTE = re.compile(r"(?<![\w.:/])/(?:[^\s'\"():,;]+/)*[^\s'\"():,;]*")


def scrub_paths(text: str, logdir: str | None) -> str:
    """Absolute paths in a message: relative to the logdir when inside it, else only their base name (the
    plugin's error answers and the command line's error lines: where the user's files sit is not said)."""
    def one(match: re.Match) -> str:
        path = match.group(0)
        if logdir and not logdir.startswith(("s3:", "gs:", "hdfs:")):
            for root in {os.path.abspath(logdir), os.path.realpath(logdir)}:
                if path == root:
                    return "."
                if path.startswith(root.rstrip("/") + "/"):
                    return path[len(root.rstrip("/")) + 1:]
        return os.path.basename(path.rstrip("/")) or path
    return _ABSOLUTE.sub(one, text)


def window_digest(store, run: str, worker: str, window: str, fields: tuple | None = None):
    """The window's digest (only `fields` of it when given: Store.digest_part); for ids the store
    did not discover (they are only ever looked up there, never joined into a path): NotFound;
    "<file>: <problem>" for unreadable input: Unreadable."""
    from canning_tb.ingest.table import InputError  # numpy: on the first request, not at TensorBoard start

    try:
        found = store.window(run, worker, window)
    except KeyError:
        raise unknown_window(run, worker, window) from None
    if getattr(store, "remote", None) is None and not os.path.lexists(found.path):  # deleted since the last scan: never another's figures
        raise NotFound(f"{run} / {worker} / {window} is gone: its files were deleted or moved since the "
                              "logdir was listed")
    try:
        return store.digest_part(run, worker, window, fields) if fields else store.digest(run, worker, window)
    except KeyError:
        raise unknown_window(run, worker, window) from None
    except InputError as e:
        raise Unreadable(f"{short_path(store, e.file)}: {e.problem}", file=short_path(store, e.file)) from None
