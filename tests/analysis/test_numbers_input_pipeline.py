"""The input pipeline section (analysis/input_pipeline.py) against a second reading of the raw trace:
the ResNet-50 run with a 4-worker DataLoader (kineto/resnet50_num_workers_4, the old plugin's DataLoader
sample). Per step, the time inside the DataLoader's next() ranges and inside the host-to-device
copies, and the bytes those copies moved, summed here from the file's events (json/gzip) inside the
digest's step boundaries; the loader's kind from the iterator's name; its workers unknown (the
profiler records the main process only), never 0. And a digest made without the section reads."""
import gzip
import json

import pytest

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.queries.sections import overview_impl
from canning_tb.store.store import Store
from conftest import fixture_path


def union_inside(intervals, lo, hi):
    """Length of the union of [s, e) intervals clipped to [lo, hi), by a plain sweep."""
    total, reach = 0, lo
    for s, e in sorted(intervals):
        s, e = max(s, reach, lo), min(e, hi)
        if e > s:
            total += e - s
            reach = e
    return total


@pytest.fixture(scope="module")
def window(tmp_path_factory):
    store = Store(str(fixture_path("kineto", "resnet50_num_workers_4")),
                  cache_dir=str(tmp_path_factory.mktemp("cache")))
    run = store.runs()[0]
    worker = store.workers(run)[0].name
    win = store.windows(run, worker)[0]
    path = next(f for f in win.files if f.endswith(".gz"))
    with gzip.open(path, "rt") as f:
        raw = json.load(f)["traceEvents"]
    return store, run, worker, win.id, raw


def test_per_step_waits_copies_and_bytes_match_the_raw_file(window):
    store, run, worker, win, raw = window
    digest = store.digest(run, worker, win)
    ip = digest.input_pipeline
    ns = lambda e: (round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000))  # noqa: E731
    nexts = [ns(e) for e in raw if e.get("ph") == "X" and e["name"].startswith("enumerate(DataLoader)#")]
    copies = [(ns(e), e["args"]["bytes"]) for e in raw if e.get("ph") == "X" and e["name"].startswith("Memcpy HtoD")]
    assert len(nexts) == ip.next_calls == 6 and copies
    assert ip.loader == "multiprocessing"  # _MultiProcessingDataLoaderIter.__next__
    assert ip.workers == -1 and list(ip.worker_names) == []  # worker processes: not in the trace
    assert [s.step for s in ip.steps] == [s.number for s in digest.steps]
    checked = 0
    for step, mine in zip(digest.steps, ip.steps):
        lo, hi = step.start_ns, step.start_ns + step.dur_ns
        assert mine.step_ns == step.dur_ns
        assert mine.next_ns == union_inside(nexts, lo, hi)
        assert mine.h2d_ns == union_inside([c for c, _ in copies], lo, hi)
        assert mine.h2d_bytes == sum(b for (s, _), b in copies if lo <= s < hi)
        assert mine.pin_ns == 0  # no pin_memory operator in this file
        checked += mine.next_ns > 0 and mine.h2d_ns > 0
    assert checked >= 5
    kept = [s for s in ip.steps if s.step in set(digest.average_steps)]
    assert ip.next_ns == round(sum(s.next_ns for s in kept) / len(kept))
    assert ip.next_share == pytest.approx(ip.next_ns / ip.step_ns)


def test_a_digest_without_the_section_reads_as_none(window):
    store, run, worker, win, _ = window
    digest = store.digest(run, worker, win)
    old = pb.Digest()
    old.CopyFrom(digest)
    old.ClearField("input_pipeline")  # what code older than the section wrote
    again = pb.Digest.FromString(old.SerializeToString())
    assert not again.HasField("input_pipeline")

    class Old:
        """The store's door, handing back that older digest."""

        def __getattr__(self, name):
            return getattr(store, name)

        def digest(self, *args, **kwargs):
            return again

    assert overview_impl(Old(), run, worker, win)["input_pipeline"] is None
    assert overview_impl(store, run, worker, win)["input_pipeline"]["next_calls"] == 6
