"""The Chrome trace of a torch collection, saved once, and thin calls into ingest/analysis for
Profile.op_summary() and friends (read, digest, report).

torch saves a collection's trace only once ("Trace is already saved" on a second export): the first
export is remembered, later ones copy it, and the summaries read it, whoever asked first.
"""
import gzip
import json
import os
import shutil
import tempfile


class SavedTrace:
    """Where the trace of the current collection lives once it has been exported."""

    def __init__(self):
        self.path = None
        self._tmp = None  # a TemporaryDirectory when we exported for ourselves (removed with this object)
        self._ready = None  # waits until the handler has published the file at `path` (it gzips in the background)

    def forget(self):
        self.path, self._tmp, self._ready = None, None, None

    def moved_to(self, path: str, ready=None):
        """The file we exported is moved to `path` (the handler publishes it, maybe gzipped); `ready()`
        returns once it is there."""
        self.path, self._ready = path, ready

    def _wait(self):
        if self._ready is not None:
            self._ready()

    def export(self, backend_prof, path: str):
        self._wait()
        if self.path is None:
            backend_prof.export_chrome_trace(path)
            self.path = path
        elif os.path.abspath(path) != os.path.abspath(self.path):
            _copy(self.path, path)

    def local(self, backend_prof) -> str:
        """A readable file holding the trace (exported into a temporary folder if nobody did yet)."""
        self._wait()
        if self.path is None or not os.path.exists(self.path):
            if self.path is not None:
                raise RuntimeError(f"the trace of this collection was saved to {self.path}, which is gone; torch "
                                   f"saves a collection's trace only once")
            self._tmp = tempfile.TemporaryDirectory(prefix="canning-")
            self.export(backend_prof, os.path.join(self._tmp.name, "trace.pt.trace.json"))
        return self.path


def _copy(src: str, dst: str) -> None:
    if src.endswith(".gz") and not dst.endswith(".gz"):
        with gzip.open(src, "rb") as fin, open(dst, "wb") as fout:
            shutil.copyfileobj(fin, fout)
    else:
        shutil.copyfile(src, dst)


def digest_of_trace(path: str, step_times=(), settings=None):
    """The digest of a trace; `step_times` ([[step, begin_ns, end_ns]], wall clock): the loop's steps
    when the trace has no ProfilerStep ranges (no schedule); `settings`: the profile's switches, put
    where a manifest's go (settings.<name>), so that an empty summary can say which switch fills it."""
    from canning_tb.analysis.build import build_digest  # lazy: analysis is optional at collection time
    from canning_tb.ingest.kineto.read import read_kineto
    from canning_tb.ingest.step_marks import attach
    from canning_tb.ingest.window import merge_devices
    from canning_tb.util.identity import devices
    table = read_kineto(path)
    attach(table, step_times)
    merge_devices(table.meta, devices())  # the devices the handler writes into the manifest: the same capacities
    for k, v in (settings or {}).items():
        if isinstance(v, bool):
            table.meta.environment[f"settings.{k}"] = json.dumps(v)
    return build_digest(table)


def snapshot_notes(snapshot: dict, top: int = 5) -> list[str]:
    """The allocator snapshot the profile took (a plain dict from the allocator, in this process) explained in text
    lines (analysis/memory_snapshot): what memory_summary() adds to its notes."""
    import copy

    from canning_tb.analysis.memory_snapshot.summary import summarize
    from canning_tb.analysis.memory_snapshot.text import snapshot_text
    from canning_tb.ingest.snapshot.read import snapshot_of
    try:
        s = snapshot_of(copy.deepcopy(snapshot), "the last window's memory snapshot")  # read consumes its input
        return snapshot_text(summarize(s, limit=top), top).splitlines()
    except Exception as e:  # a summary never fails the job
        return [f"memory snapshot: not explained ({type(e).__name__}: {e})"]


def call(name, digest):
    from canning_tb.analysis import report
    return getattr(report, name)(digest)


def empty(name, why: str):
    """The summary `name` with no rows and one note: why there is nothing to summarise."""
    from canning_tb.analysis import digest_pb2
    table = call(name, digest_pb2.Digest())
    table.rows, table.notes = [], [why]
    return table
