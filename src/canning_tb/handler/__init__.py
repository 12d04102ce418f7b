"""The on_trace_ready handler: writes one window of one rank atomically (see trace_handler for the file names)."""
from .remote import MAX_PENDING_UPLOADS
from .trace_handler import TraceHandler


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=True, digest=True, *, analyse_flag=True,
                              async_mode=False, max_pending_uploads=MAX_PENDING_UPLOADS):
    """Return the on_trace_ready callback writing each window into dir_name (a TensorBoard run folder,
    or a remote one: s3://bucket/prefix/run, gs://, hdfs://, az://... through fsspec's back-ends).

    worker_name defaults to rank<R>.<host>.<pid>. digest=True (the default) computes the window's
    digest in a low-priority background process after the manifest is written, so the viewer reads a
    few KB instead of the trace; training never waits for it. digest=False turns it off.
    On NPU, torch_npu analyses each window into its *_ascend_pt folder: analyse_flag=False skips that
    (parse later with torch_npu.profiler.profiler.analyse(folder)), async_mode=True runs it in the
    background (the viewer shows the window as "analysing" until it is done).
    A remote run folder is written through a local staging folder and uploaded in the background, in
    order (the training step waits for the local write only); at most max_pending_uploads windows wait
    for their upload before the next window's step waits too. Profile.stop() and interpreter exit wait
    for the uploads; a failed upload is logged as a warning naming the window, and later windows retry.
    """
    return TraceHandler(dir_name, worker_name=worker_name, use_gzip=use_gzip, digest=digest,
                        analyse_flag=analyse_flag, async_mode=async_mode, max_pending_uploads=max_pending_uploads)


__all__ = ["tensorboard_trace_handler", "TraceHandler"]
