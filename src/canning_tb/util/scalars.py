"""Per-window scalars into a TensorBoard event file in the run folder, so the Scalars tab shows them.

Written synchronously, without tensorboard's EventFileWriter: its background thread would show up
in the next window's Python stacks. Event files are append-only by TensorBoard's design (readers
tolerate a partial last record), so this is the one file not published by rename.
Name: events.out.tfevents.<unix s>.<host>.<pid>.canning (one per handler and process).
"""
import os
import socket
import time


def _modules():
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter
    return event_pb2, summary_pb2, RecordWriter


def preload() -> None:
    """Import what writing needs now, on the caller's thread (the handler's maker, before any window
    records): imported later on the writer thread, during the next window, the imports' thousands of
    Python frames would land in that window's trace (with_stack)."""
    try:
        _modules()
    except ImportError:  # written without TensorBoard: the write says so, once
        pass


class ScalarWriter:
    PREFIX = "events.out.tfevents."

    def __init__(self, dir_name: str, rank: int, world_size: int):
        self._suffix = f"/rank{rank}" if world_size > 1 else ""  # one line per rank in a multi-rank run
        self.path = os.path.join(dir_name, f"{self.PREFIX}{int(time.time()):010d}."
                                           f"{socket.gethostname()}.{os.getpid()}.canning")
        self._started = False

    def write(self, step: int, values: dict, wall_time: float):
        event_pb2, summary_pb2, RecordWriter = _modules()
        events = []
        if not self._started:
            events.append(event_pb2.Event(wall_time=wall_time, file_version="brain.Event:2"))
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=f"canning/{k}{self._suffix}",
                                                                        simple_value=float(v))
                                             for k, v in values.items() if v is not None])
        events.append(event_pb2.Event(wall_time=wall_time, step=int(step), summary=summary))
        with open(self.path, "ab") as f:
            w = RecordWriter(f)
            for e in events:
                w.write(e.SerializeToString())
        self._started = True
