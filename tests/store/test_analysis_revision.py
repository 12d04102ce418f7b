"""One freshness rule for every digest (store/lookup.py): a digest records the analysis code that made it
(Digest.analysis_revision), the one our handler writes at the source too; one made by other code is
re-made when the window's files are at hand, and served marked as old (the routes' `old_analysis` and
a warning in `problems`) when they are not. The window here is our handler's layout written by hand
(a manifest naming a real Kineto trace), its digest at the source made by source_digest as the
handler's background process does, then rewritten as "other code" would have left it."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from canning_tb.analysis import digest_pb2
from canning_tb.analysis.digest import analysis_revision
from canning_tb.util.manifest import digest_path
from canning_tb.queries.sections import overview_impl
from canning_tb.store import Store, source_digest
from canning_tb.store.digest_part import RANKS

from conftest import fixture_path

PLANTED_NS = 123_456_789  # an average step no real analysis of this trace gives


@pytest.fixture
def window(tmp_path, monkeypatch):
    """(logdir, manifest, trace) of a handler window whose digest at the source came from other code."""
    monkeypatch.setenv("CANNING_CACHE_DIR", str(tmp_path / "usercache"))
    run = tmp_path / "logdir" / "run"
    run.mkdir(parents=True)
    src = next(fixture_path("hta", "cpu_only").glob("*.json.gz"))
    trace = run / "rank0.1700000000000.00000.pt.trace.json.gz"
    shutil.copyfile(src, trace)
    manifest = run / "rank0.1700000000000.00000.canning.json"
    manifest.write_text(json.dumps({"kind": "kineto", "worker": "rank0", "window": 0, "rank": 0, "world_size": 1,
                                    "manifest": manifest.name, "files": [{"name": trace.name,
                                                                          "bytes": trace.stat().st_size}]}))
    made = source_digest.write_digest(str(manifest))
    digest = digest_pb2.Digest.FromString(open(made, "rb").read())
    assert digest.analysis_revision == analysis_revision()  # recorded at the source too
    assert digest.average.total_ns != PLANTED_NS
    digest.analysis_revision = "0123456789ab"  # as an older canning-tb in the training job made it
    digest.average.total_ns = PLANTED_NS
    with open(made, "wb") as f:
        f.write(digest.SerializeToString())
    return tmp_path / "logdir", manifest, trace


def _only(store):
    (run,) = store.runs()
    (worker,) = store.workers(run)
    (win,) = store.windows(run, worker.name)
    return run, worker.name, win.id


def test_a_digest_of_other_code_is_made_again_when_the_trace_is_at_hand(window):
    logdir, manifest, trace = window
    source = open(digest_path(str(manifest)), "rb").read()
    listing = sorted(os.listdir(manifest.parent))
    store = Store(str(logdir))
    ident = _only(store)
    assert not store.has_digest(*ident)  # prefetch and `canning-prof digest` make it again
    digest = store.digest(*ident)
    assert digest.analysis_revision == analysis_revision() and digest.average.total_ns != PLANTED_NS
    assert overview_impl(store, *ident)["old_analysis"] is None
    assert store.has_digest(*ident, current=True)
    # made into the viewer's cache: the handler's digest and the run folder stay as they were
    assert open(digest_path(str(manifest)), "rb").read() == source and sorted(os.listdir(manifest.parent)) == listing
    assert Store(str(logdir)).digest_part(*ident, RANKS).average.total_ns == digest.average.total_ns


def test_without_its_trace_it_is_served_and_marked_old(window):
    logdir, manifest, trace = window
    trace.unlink()  # only the manifests and digests were copied (or the trace is remote and not fetched)
    store = Store(str(logdir))
    ident = _only(store)
    assert store.has_digest(*ident) and not store.has_digest(*ident, current=True)
    assert store.digest(*ident).average.total_ns == PLANTED_NS
    answer = overview_impl(store, *ident)
    assert "0123456789ab" in answer["old_analysis"] and analysis_revision() in answer["old_analysis"]
    assert answer["problems"][0] == {"file": "", "message": answer["old_analysis"], "severity": "warning"}
    part = Store(str(logdir)).digest_part(*ident, RANKS)  # the views across ranks see it as old too
    assert part.analysis_revision == "0123456789ab"


def _revision_of(package_root) -> str:
    code = "from canning_tb.analysis.digest import analysis_revision; print(analysis_revision())"
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.strip()


def test_the_revision_changes_with_any_module_of_ingest_or_analysis(tmp_path):
    """Subpackages included (ingest/kineto/, analysis/communication/): a copy of the package with one
    line added to a module there has another revision; a change outside ingest/ and analysis/ does not."""
    import canning_tb
    copy = tmp_path / "src"
    shutil.copytree(os.path.dirname(canning_tb.__file__), copy / "canning_tb",
                    ignore=shutil.ignore_patterns("__pycache__", "static", "frontend"))
    first = _revision_of(copy)
    assert first == analysis_revision()
    with open(copy / "canning_tb" / "plugin" / "sections.py", "a") as f:
        f.write("\n# not analysis\n")
    assert _revision_of(copy) == first
    with open(copy / "canning_tb" / "ingest" / "kineto" / "read.py", "a") as f:
        f.write("\n# a reader changed\n")
    second = _revision_of(copy)
    assert second != first
    with open(copy / "canning_tb" / "analysis" / "communication" / "collectives.py", "a") as f:
        f.write("\n# an analysis changed\n")
    assert _revision_of(copy) not in (first, second)
