"""Operator and kernel tables of the digest against a raw join of the trace (tests/_raw_kineto.py).

The join, by hand: each device event -> its runtime launch (same `correlation`) -> the innermost
operator/annotation enclosing that launch on its thread (a stack walk); an operator's device self
is the time of the device events it launched itself, its device total adds everything launched
inside it (children summed up the stack). Every row of ops_by_name, kernels_by_name,
kernels_by_op and each op's top kernels is compared with exact integers (tolerance 0: the
fixtures' µs become ns exactly).
"""
import glob

import pytest

from _raw_kineto import Trace
from conftest import fixture_path

from canning_tb.analysis.build import build_digest
from canning_tb.ingest.kineto import read_kineto

TOP_KERNELS = 5  # the digest keeps an operator's 5 longest kernels (analysis/ops.py)


def _traces():
    v100 = sorted(glob.glob(str(fixture_path("kineto", "resnet50_v100") / "*.pt.trace.json.gz")))
    dlrm = sorted(glob.glob(str(fixture_path("param", "dlrm_8ranks") / "*.pt.trace.json.gz")))
    # worker1 has device events without a launch record (unattributed): both cases covered
    return [v100[0], v100[1]] + [p for p in dlrm if "/worker0_" in p or "/worker1_" in p]


@pytest.fixture(scope="module", params=["v100-w1", "v100-w2", "dlrm-rank0", "dlrm-rank1"])
def pair(request):
    paths = _traces()
    path = paths[request.param_index]
    return Trace(path), build_digest(read_kineto(path))


def test_op_device_self_and_total_by_hand(pair):
    tr, d = pair
    truth = tr.op_rows()
    assert {o.name for o in d.ops_by_name} == set(truth)
    for o in d.ops_by_name:
        t = truth[o.name]
        assert (o.calls, o.host_total_ns) == (t["calls"], t["host_total"]), o.name
        assert o.device_self_ns == t["device_self"], o.name
        assert o.device_total_ns == t["device_total"], o.name
    # the fixture exercises the difference: operators whose kernels run in their children
    assert any(t["device_total"] > t["device_self"] for t in truth.values())
    assert sum(t["device_self"] for t in truth.values()) > 0


def test_op_top_kernels_in_order(pair):
    tr, d = pair
    truth = tr.op_rows()
    checked = 0
    for o in d.ops_by_name:
        own = truth[o.name]["kernels"]
        want = sorted((v[1] for v in own.values()), reverse=True)[:TOP_KERNELS]
        assert [k.total_ns for k in o.kernels] == want, o.name  # longest first, ties in any order
        for k in o.kernels:
            assert [k.calls, k.total_ns] == own[k.name], (o.name, k.name)
        checked += len(own) > 1
    assert checked > 0  # operators with several kernels, so the order is tested


def test_kernels_by_name_calls_min_max_mean(pair):
    tr, d = pair
    truth = tr.kernel_rows()
    assert {k.name for k in d.kernels_by_name} == set(truth)
    for k in d.kernels_by_name:
        calls, total, lo, hi = truth[k.name]
        assert (k.calls, k.total_ns, k.min_ns, k.max_ns) == (calls, total, lo, hi), k.name
        assert k.total_ns / k.calls == total / calls  # the mean the views show
    # sorted by total time, longest first
    assert [k.total_ns for k in d.kernels_by_name] == sorted((v[1] for v in truth.values()), reverse=True)
    assert any(v[2] < v[3] for v in truth.values())  # kernels whose min and max differ


def test_kernels_by_launching_op(pair):
    tr, d = pair
    truth = tr.kernel_rows(by_op=True)
    assert {(k.name, k.op_name) for k in d.kernels_by_op} == set(truth)
    for k in d.kernels_by_op:
        assert [k.calls, k.total_ns, k.min_ns, k.max_ns] == truth[(k.name, k.op_name)], (k.name, k.op_name)


def test_device_time_is_conserved(pair):
    """Every attributed device event counts once in the device self column, so the sum over all
    operators and annotations equals the sum of the owned device events' durations."""
    tr, d = pair
    owned = sum(ev.dur for ev in tr.owner)
    by_annotation = sum(ev.dur for ev, op in tr.owner.items() if op.cat == "user_annotation" or op.name.startswith("ProfilerStep#"))
    assert sum(o.device_self_ns for o in d.ops_by_name) == owned - by_annotation
