"""Entry point TensorBoard loads (`tensorboard_plugins: canning = canning_tb.plugin.loader:CanningLoader`).

TensorBoard imports entry points unguarded: an import error here would stop TensorBoard itself.
So this module, and `plugin.py` which it imports on load(), use only the standard library,
TensorBoard and Werkzeug at import time. The store (numpy, readers, analysis) is imported
lazily, in a background thread, the first time the plugin looks at the logdir; torch is never
imported by the plugin.
"""
from __future__ import annotations

import logging
import os
import re

from tensorboard.plugins import base_plugin

log = logging.getLogger("canning_tb.plugin")

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


class CanningLoader(base_plugin.TBLoader):
    """Builds the plugin; TensorBoard skips it (and keeps running) if this returns None."""

    def load(self, context):
        from .plugin import CanningPlugin  # stdlib + tensorboard + werkzeug only

        return CanningPlugin(context)
