"""Entry point TensorBoard loads (`tensorboard_plugins: canning = canning_tb.plugin.loader:CanningLoader`).

TensorBoard imports entry points unguarded: an import error here would stop TensorBoard itself.
So this module, and `plugin.py` which it imports on load(), import only the standard library,
TensorBoard, Werkzeug, protobuf and the parts of canning_tb built on those alone. numpy, the
readers and the analysis that needs them are imported lazily (in the discovery thread, or on the
first request that needs them); torch is never imported by the plugin.
"""
from __future__ import annotations

from tensorboard.plugins import base_plugin


class CanningLoader(base_plugin.TBLoader):
    """Builds the plugin; TensorBoard skips it (and keeps running) if this returns None."""

    def load(self, context):
        from .plugin import CanningPlugin

        return CanningPlugin(context)
