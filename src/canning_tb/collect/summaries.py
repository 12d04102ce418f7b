"""Thin calls into ingest/analysis for Profile.op_summary() and friends: export, read, digest, report."""
import os
import tempfile


def digest_of(backend_prof):
    from canning_tb.analysis.build import build_digest  # lazy: analysis is optional at collection time
    from canning_tb.ingest.kineto import read_kineto
    fd, path = tempfile.mkstemp(prefix="canning-", suffix=".pt.trace.json")
    os.close(fd)
    try:
        backend_prof.export_chrome_trace(path)
        return build_digest(read_kineto(path))
    finally:
        os.unlink(path)


def call(name, digest):
    from canning_tb.analysis import report
    return getattr(report, name)(digest)
