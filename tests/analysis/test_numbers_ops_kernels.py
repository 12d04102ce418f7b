"""Operator and kernel tables of the digest against a raw join of the trace (tests/_raw_kineto.py).

The join, by hand: each device event -> its runtime launch (same `correlation`) -> the innermost
operator/annotation enclosing that launch on its thread (a stack walk); an operator's device self
is the time of the device events it launched itself, its device total adds everything launched
inside it (children summed up the stack). Every row of ops_by_name, kernels_by_name,
kernels_by_op and each op's top kernels is compared with exact integers (tolerance 0: the
fixtures' µs become ns exactly).
"""
import functools
import json
import glob
from collections import Counter

import pytest

from _raw_kineto import Trace
from conftest import fixture_path

from canning_tb.analysis.build import build_digest
from canning_tb.ingest.kineto.read import read_kineto

TOP_KERNELS = 5  # the digest keeps an operator's 5 longest kernels (analysis/ops.py)


def _traces():
    v100 = sorted(glob.glob(str(fixture_path("kineto", "resnet50_v100") / "*.pt.trace.json.gz")))
    dlrm = sorted(glob.glob(str(fixture_path("param", "dlrm_8ranks") / "*.pt.trace.json.gz")))
    # worker1 has device events without a launch record (unattributed): both cases covered
    return [v100[0], v100[1]] + [p for p in dlrm if "/worker0_" in p or "/worker1_" in p]


@functools.lru_cache(maxsize=None)
def _raw(path):
    return Trace(path)


@pytest.fixture(params=["v100-w1", "v100-w2", "dlrm-rank0", "dlrm-rank1"])
def pair(request):
    """(raw reading, digest). The digest is built in each test (not cached per module) so that
    mutation testing, which maps each analysis function to the tests that ran it, runs them all."""
    path = _traces()[request.param_index]
    return _raw(path), build_digest(read_kineto(path))


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


def test_op_rows_sorted_and_their_shapes_and_stacks(pair):
    tr, d = pair
    totals = [o.host_total_ns for o in d.ops_by_name]
    assert totals == sorted(totals, reverse=True)
    ops = [o for o in tr.ops if o.cat != "user_annotation" and not o.name.startswith("ProfilerStep#")
           and tr.target[o] is o]  # a redispatched call counts in its parent's row
    with_stack = {o.name for o in ops if o.args.get("Call stack")}
    assert {o.name for o in d.ops_by_name if o.has_call_stack} == with_stack
    # by shape: one row per (name, Input Dims) of the raw events, calls adding up per name
    shapes = Counter((o.name, json_text(o.args.get("Input Dims", o.args.get("Input dims")))) for o in ops)
    assert len(d.ops_by_shape) == len(shapes)
    per_name = Counter()
    for (name, _), n in shapes.items():
        per_name[name] += n
    got = Counter()
    for o in d.ops_by_shape:
        got[o.name] += o.calls
    assert got == per_name
    assert sum(bool(o.input_shapes) for o in d.ops_by_shape) == sum(1 for (_, dims) in shapes if dims not in ("null", "[]"))
    if with_stack:  # by stack: only the operators that have one, calls adding up to theirs
        by_stack = Counter()
        for o in d.ops_by_stack:
            assert o.call_stack
            by_stack[o.name] += o.calls
        assert by_stack == Counter(o.name for o in ops if o.args.get("Call stack"))


def json_text(v):
    return json.dumps(v)


def test_kernel_device_stream_and_blocks(pair):
    tr, d = pair
    per = {}
    for k in tr.device:
        if k.cat == "kernel":
            r = per.setdefault(k.name, {"streams": Counter(), "devices": Counter(), "blocks": []})
            r["streams"][k.args["stream"]] += 1
            r["devices"][k.args["device"]] += 1
            if "grid" in k.args:
                g = k.args["grid"]
                r["blocks"].append(g[0] * g[1] * g[2])
    for k in d.kernels_by_name:
        r = per[k.name]
        assert r["streams"][k.stream] == max(r["streams"].values()), k.name
        assert r["devices"][k.device] == max(r["devices"].values()), k.name
        want = sum(r["blocks"]) / len(r["blocks"]) if r["blocks"] else -1.0
        assert k.mean_blocks == pytest.approx(want, rel=1e-12), k.name


def test_v100_cores_split(pair):
    """On these fp32 runs no kernel uses Tensor Cores (the old TensorBoard plugin's reading of the
    V100 fixture says 0.0 %, SOURCES.md): Tensor Cores 0; the two "Other" parts (under Tensor-Core-
    eligible operators or not, each kernel once) hold every compute kernel."""
    tr, d = pair
    kernels = [k for k in tr.device if k.cat == "kernel" and "nccl" not in k.name.lower()]
    cores = {c.core: (c.calls, c.total_ns) for c in d.cores}
    assert set(cores) == {"Tensor Cores", "Other, under Tensor-Core-eligible operators", "Other"}
    assert cores["Tensor Cores"] == (0, 0)
    others = [cores["Other, under Tensor-Core-eligible operators"], cores["Other"]]
    assert tuple(map(sum, zip(*others))) == (len(kernels), sum(k.dur for k in kernels))
    assert not any(k.tensor_cores or k.core for k in d.kernels_by_name)
    assert {k.name for k in d.kernels_by_name if k.communication} == {k.name for k in tr.device if k.cat == "kernel" and "nccl" in k.name.lower()}
