"""Errors a route answers with, and the digest of the window a request names."""
from __future__ import annotations

import os


class RouteError(Exception):
    """Answered as JSON {"error": message, **extra} with HTTP status `code`."""

    def __init__(self, code: int, message: str, **extra):
        super().__init__(message)
        self.code = code
        self.body = {"error": message, **extra}


def unknown_window(run: str, worker: str, window: str) -> RouteError:
    return RouteError(404, f"unknown run/worker/window: {run!r} / {worker!r} / {window!r}")


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


def window_digest(store, run: str, worker: str, window: str, fields: tuple | None = None):
    """The window's digest (only `fields` of it when given: Store.digest_part); 404 for ids the store
    did not discover (they are only ever looked up there, never joined into a path), 422 "<file>:
    <problem>" for unreadable input."""
    from canning_tb.ingest.table import InputError  # numpy: on the first request, not at TensorBoard start

    try:
        found = store.window(run, worker, window)
    except KeyError:
        raise unknown_window(run, worker, window) from None
    if getattr(store, "remote", None) is None and not os.path.lexists(found.path):  # deleted since the last scan: never another's figures
        raise RouteError(404, f"{run} / {worker} / {window} is gone: its files were deleted or moved since the "
                              "logdir was listed")
    try:
        return store.digest_part(run, worker, window, fields) if fields else store.digest(run, worker, window)
    except KeyError:
        raise unknown_window(run, worker, window) from None
    except InputError as e:
        raise RouteError(422, f"{short_path(store, e.file)}: {e.problem}", file=short_path(store, e.file)) from None
