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

    def define_flags(self, parser):
        parser.add_argument("--canning_capture", action="store_true", default=False,
                            help="canning: allow the Capture action, which asks a running job that uses "
                                 "ps.on_demand() to record steps (it writes a request file into the run folder); "
                                 "off by default, as TensorBoard has no authentication (also CANNING_CAPTURE=1)")

    def load(self, context):
        from .plugin import CanningPlugin

        return CanningPlugin(context)
