"""The logdir TensorBoard was started with, as a local absolute path (or a URI, unchanged)."""
from __future__ import annotations

import os
import re

_URI_RE = re.compile(r"^[A-Za-z0-9+.-]+://")
_DRIVE_RE = re.compile(r"^[A-Za-z]:[\\/]")


def _first_spec_path(spec: str) -> str:
    """The path of the first entry of `--logdir_spec` ("name:path,name2:path2" or "path,...")."""
    first = (spec or "").split(",")[0].strip()
    if ":" in first and not first.startswith("/") and not _URI_RE.match(first) and not _DRIVE_RE.match(first):
        first = first.partition(":")[2]  # "name:path" -> path (TensorBoard's own rule)
    return first


def normalize_logdir(logdir: str | None, flags=None) -> str | None:
    """`context.logdir` is `--logdir` verbatim: maybe "", relative, "~/..." or a URI.

    "" under `--logdir_spec`: the first entry's path is used. Local paths become absolute;
    URIs (s3://, gs://, ...) are returned unchanged.
    """
    path = logdir or ""
    if not path and flags is not None:
        path = _first_spec_path(getattr(flags, "logdir_spec", "") or "")
    if not path:
        return None
    if _URI_RE.match(path):
        return path
    return os.path.abspath(os.path.expanduser(path))
