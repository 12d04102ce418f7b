"""Every arg the trace file holds, in the slice details: the args store built from the window's files
(Kineto's object, torch_npu's bare array) gives back each event's args exactly as a second reading
of the raw file (json) has them; the route says "pending" while it is built in its own process."""
import gzip
import json
import time
from decimal import Decimal

import numpy as np
import pytest

from canning_tb.queries import timeline
from canning_tb.store.store import Store
from canning_tb.timeline.raw_args import build_raw_args, match_rows, read_raw_args
from conftest import fixture_path


def raw_complete_events(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return [e for e in events if e.get("ph") == "X"]


def ns(ts):
    return int((Decimal(str(ts)) * 1000).to_integral_value())


@pytest.mark.parametrize("parts", [("kineto", "resnet50_v100"), ("ascend", "level1")])
def test_each_events_args_are_the_files(parts, tmp_path):
    store = Store(str(fixture_path(*parts)), cache_dir=str(tmp_path))
    run = store.runs()[0]
    worker = store.workers(run)[0].name
    window = store.windows(run, worker)[0].id
    table = store.table(run, worker, window)
    prefix = str(tmp_path / "w")
    matched = build_raw_args(table, table.meta.source_files, prefix)
    trace = next(f for f in table.meta.source_files if f.endswith((".gz", "trace_view.json")))
    raw = raw_complete_events(trace)
    by_key = {}
    for event in raw:
        by_key.setdefault((ns(event["ts"]), event["name"]), []).append(event.get("args", {}))
    ev = table.events
    checked = 0
    for row in np.linspace(0, len(table) - 1, 300).astype(int).tolist():
        candidates = by_key.get((int(ev["ts"][row]), table.name(row)))
        if candidates is None:
            continue  # an event the reader took from another file (kernel_details.csv)
        assert read_raw_args(prefix, row) in candidates, (row, table.name(row))
        checked += 1
    assert checked > 200
    if parts[0] == "kineto":  # every event of a Kineto window comes from its one file
        assert matched == len(table)


def test_equal_keys_pair_in_order_and_missing_ones_stay_unmatched():
    table = np.array([[5, 1, 0], [5, 1, 0], [7, 2, 1], [9, 0, 2]], np.int64)
    file = np.array([[7, 2, 1], [5, 1, 0], [1, 1, 1], [5, 1, 0]], np.int64)
    assert match_rows(table, file).tolist() == [1, 3, 0, -1]


def test_the_slice_route_says_pending_then_gives_every_arg(tmp_path):
    store = Store(str(fixture_path("kineto", "resnet50_v100")), cache_dir=str(tmp_path))
    run = store.runs()[0]
    worker = store.workers(run)[0].name
    window = store.windows(run, worker)[0].id
    cache = timeline.IndexCache()
    loaded = cache.get(store, run, worker, window)
    raw = raw_complete_events(next(f for f in store.window(run, worker, window).files if f.endswith(".gz")))
    kernel = next(e for e in raw if e.get("cat") == "Kernel" and "grid" in e["args"])
    ev = loaded.table.events
    row = next(r for r in np.flatnonzero(ev["ts"] == ns(kernel["ts"])).tolist()
               if loaded.table.name(r) == kernel["name"])
    first = timeline.slice_impl(cache, store, run, worker, window, row)
    assert first["raw_args_state"] in ("pending", "ready")
    deadline = time.monotonic() + 120
    answer = first
    while answer["raw_args_state"] == "pending" and time.monotonic() < deadline:
        time.sleep(0.5)
        answer = timeline.slice_impl(cache, store, run, worker, window, row)
    assert answer["raw_args_state"] == "ready"
    assert answer["raw_args"] == kernel["args"]  # grid, block, registers per thread ... as written
