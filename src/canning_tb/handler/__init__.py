"""The on_trace_ready handler: writes one window of one rank atomically (see trace_handler for the file names)."""
from .trace_handler import TraceHandler


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=True, digest=False):
    """Return the on_trace_ready callback writing each window into dir_name (a TensorBoard run folder).

    worker_name defaults to rank<R>.<host>.<pid>. digest=True computes the window's digest in a
    background process after the manifest is written; training never waits for it.
    """
    return TraceHandler(dir_name, worker_name=worker_name, use_gzip=use_gzip, digest=digest)


__all__ = ["tensorboard_trace_handler", "TraceHandler"]
