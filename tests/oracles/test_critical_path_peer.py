"""Our critical path against HTA 0.5.0's on the same real trace (a peer tool as the oracle).

The fixture is HTA's own critical-path test trace (A100 AlexNet with `cuda_sync` events,
tests/fixtures/hta/critical_path/alexnet); HTA analyses the range of one annotation instance. We take
HTA's path (run in .venv-peers: tests/peers/hta_critical_path.py), the time range its first and last
event span, and compute ours over exactly that range (graph/critical.py), then compare by class:
- device work on the path: HTA `gpu_compute_bound` = our kernel + memset + memcpy segments (1 µs: both
  read the same integer-µs events);
- launch and kernel-to-kernel gaps: HTA `gpu_kernel_launch_overhead` + `gpu_kernel_kernel_overhead` =
  our `latency` + `idle` segments (10 µs: HTA charges a gap where a launch's edge begins, we where the
  lane stood still);
- the host: HTA `cpu_bound` against our host categories (host, python, runtime, sync, dataloader,
  collective_host). HTA leaves part of its own range unattributed (its path's classes sum to less than
  the range its events span: zero-weight dependency edges), and ours covers the range whole, so the host
  figures may differ by that unattributed part and no more (+ 10 µs).
HTA 0.5.0's critical path needs pandas < 3 (peers.mk pins pandas 2.2.3 for it).
"""
from __future__ import annotations

import gzip
import json
import shutil
from types import SimpleNamespace

import pytest

from conftest import fixture_path
from test_peer_oracles import _run_peer

pytestmark = [pytest.mark.slow, pytest.mark.peer_oracle]

ANNOTATION = "[param|pytorch.model.alex_net|0|0|0|measure|forward]"
HOST = ("host", "python", "runtime", "sync", "dataloader", "collective_host")
DEVICE = ("kernel", "memset", "memcpy", "communication")


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    from canning_tb.analysis.graph.build import build_graph
    from canning_tb.analysis.graph.critical import critical_path, step_spans
    from canning_tb.ingest.kineto.read import read_kineto
    src = fixture_path("hta", "critical_path", "alexnet")
    (trace,) = [f for f in src.iterdir() if f.name.endswith(".json.gz")]
    tmp = tmp_path_factory.mktemp("hta_cp")
    shutil.copytree(src, tmp / "traces")
    raw = json.loads(gzip.decompress(trace.read_bytes()))["traceEvents"]
    ann_ts = sorted(e["ts"] for e in raw if e.get("name") == ANNOTATION and e.get("ph") == "X")
    _run_peer("hta_critical_path.py", tmp / "traces", ANNOTATION, len(ann_ts), tmp / "hta.json")
    theirs = json.loads((tmp / "hta.json").read_text())
    graph = build_graph(read_kineto(str(trace)))
    out = []
    for their, ts in zip(theirs, ann_ts):
        origin = ts - their["annotation_ts_us"]  # HTA's time base against the file's clock (µs)
        lo, hi = their["start_us"] + origin, their["end_us"] + origin
        (span,) = step_spans(graph, [SimpleNamespace(number=0, start_ns=lo * 1000, dur_ns=(hi - lo) * 1000)])
        path = critical_path(graph, span)
        out.append((their, {k: v / 1000 for k, v in path.by_cat.items()}, hi - lo))
    return out


def test_hta_finds_a_path_for_every_instance(compared):
    assert len(compared) == 2 and all(their["ok"] for their, _, _ in compared)


def test_device_work_on_the_path_equals_htas(compared):
    for their, ours, _ in compared:
        assert their["bound_by_us"]["gpu_compute_bound"] > 1000  # the measure step's kernels, not nothing
        assert sum(ours.get(c, 0) for c in DEVICE) == pytest.approx(their["bound_by_us"]["gpu_compute_bound"], abs=1)


def test_launch_and_gap_time_equal_htas_overheads(compared):
    for their, ours, _ in compared:
        hta = their["bound_by_us"].get("gpu_kernel_launch_overhead", 0) + \
            their["bound_by_us"].get("gpu_kernel_kernel_overhead", 0)
        assert ours.get("latency", 0) + ours.get("idle", 0) == pytest.approx(hta, abs=10)


def test_host_time_differs_from_htas_by_no_more_than_what_hta_leaves_unattributed(compared):
    for their, ours, range_us in compared:
        unattributed = range_us - sum(their["bound_by_us"].values())
        assert 0 <= unattributed < 0.02 * range_us
        assert sum(ours.values()) == pytest.approx(range_us, abs=1)  # ours covers the range whole
        assert abs(sum(ours.get(c, 0) for c in HOST) - their["bound_by_us"]["cpu_bound"]) <= unattributed + 10
