"""Device kinds and communication as the trace says them, on traces derived from real ones.

No MTIA / XPU / custom backend, symmetric-memory or DeepEP trace exists here, so each test takes a
real fixture (A100 AlexNet `hta/critical_path/alexnet`, A100 NCCL `hta/nccl_parser_config`) and
changes only what that other backend writes differently (its categories, its process labels,
its kernel names), or removes one piece of evidence to show the others suffice. The expected
numbers come from a second reading of the raw JSON here.
"""
import gzip
import json
from collections import Counter
from decimal import Decimal

import pytest

from _gloo_trace import one_rank_gloo_trace
from conftest import fixture_path

from canning_tb.analysis.build import build_digest
from canning_tb.analysis.kernels import CORE_TENSOR
from canning_tb.ingest.kineto.read import read_kineto
from canning_tb.ingest.table import Kind

ALEXNET = ("hta", "critical_path", "alexnet", "benchmark_result_2869224_1695835535_trace.json.gz")
NCCL = ("hta", "nccl_parser_config", "nccl_data.json.gz")


def load(*parts):
    with gzip.open(fixture_path(*parts), "rt", encoding="utf-8") as f:
        return json.load(f)


def ns(v) -> int:
    return int((Decimal(repr(v)) * 1000).to_integral_value())


def write(tmp_path, trace, name="derived.pt.trace.json"):
    path = tmp_path / name
    path.write_text(json.dumps(trace), encoding="utf-8")
    return path


def kernel_totals(events, cat="kernel"):
    """name -> total ns of the raw events of one category: the hand reading of the kernel table."""
    out = Counter()
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == cat:
            out[e["name"]] += ns(e["dur"])
    return dict(out)


def relabel(trace, cats=None, label_from="GPU", label_to=None, drop_props=False):
    """The trace as another backend writes it: categories renamed, device process labels renamed."""
    for e in trace["traceEvents"]:
        if cats and e.get("cat") in cats:
            e["cat"] = cats[e["cat"]]
        if label_to and e.get("ph") == "M" and e.get("name") == "process_labels":
            lab = e["args"]["labels"]
            if lab.startswith(label_from):
                e["args"]["labels"] = label_to + lab[len(label_from):]
    if drop_props:
        trace.pop("deviceProperties", None)
    return trace


def test_mtia_trace_has_compute_kernels_and_devices(tmp_path):
    """MTIA writes device events as `mtia_ccp_events` and launches as `mtia_runtime` (Kineto's
    ActivityType names), labels its device processes "MTIA N", and has no CUDA deviceProperties."""
    trace = relabel(load(*ALEXNET), {"kernel": "mtia_ccp_events", "cuda_runtime": "mtia_runtime"}, "GPU", "MTIA",
                    drop_props=True)
    raw = trace["traceEvents"]
    hand = kernel_totals(raw, "mtia_ccp_events")
    d = build_digest(read_kineto(write(tmp_path, trace)))
    assert {k.name: k.total_ns for k in d.kernels_by_name} == hand
    assert sum(hand.values()) > 0
    busy = sum(s.breakdown.compute_ns + s.breakdown.overlapped_ns for s in d.steps)
    assert busy > 0  # device time is compute, not host "Runtime"
    pids = sorted({e["pid"] for e in raw if e.get("cat") == "mtia_ccp_events"})
    assert [(dv.kind, dv.index) for dv in d.window.devices] == [("mtia", p) for p in pids]
    assert CORE_TENSOR not in {c.core for c in d.cores}  # no Tensor Core figures for a non-CUDA device
    # the launching operators are found through mtia_runtime's correlation as through cuda_runtime's
    cuda = build_digest(read_kineto(fixture_path(*ALEXNET)))
    assert {o.name: o.device_self_ns for o in d.ops_by_name} == {o.name: o.device_self_ns for o in cuda.ops_by_name}


@pytest.mark.parametrize("runtime_cat", ["xpu_runtime", "privateuse1_runtime", "privateuse1_driver", "hpu_op"])
def test_other_backends_runtime_categories_launch_device_work(tmp_path, runtime_cat):
    trace = relabel(load(*ALEXNET), {"cuda_runtime": runtime_cat})
    raw = trace["traceEvents"]
    d = build_digest(read_kineto(write(tmp_path, trace)))
    table = read_kineto(tmp_path / "derived.pt.trace.json")
    assert int((table.events["kind"] == int(Kind.RUNTIME)).sum()) == sum(1 for e in raw if e.get("cat") == runtime_cat)
    # device work is attributed to its launching op through the renamed runtime's correlation
    cuda = build_digest(read_kineto(fixture_path(*ALEXNET)))
    assert {o.name: o.device_self_ns for o in d.ops_by_name} == {o.name: o.device_self_ns for o in cuda.ops_by_name}


def _strip(trace, labels=False, flows=False, correlation=False):
    for e in list(trace["traceEvents"]):
        if labels and e.get("ph") == "M" and e.get("name") == "process_labels":
            trace["traceEvents"].remove(e)
        if flows and e.get("ph") in ("s", "f"):
            trace["traceEvents"].remove(e)
        if correlation and e.get("cat") == "acme_kernel":
            e["args"].pop("correlation", None)
    return trace


@pytest.mark.parametrize("evidence", ["labels", "flows", "correlation"])
def test_unnamed_category_is_device_work_by_one_piece_of_evidence(tmp_path, evidence):
    """A backend Kineto does not name ("acme_kernel"): its events are device work when the trace
    puts them on a device process, at the end of launch flows, or correlated to launches; each
    piece of evidence alone is enough (the other two are removed here)."""
    trace = relabel(load(*ALEXNET), {"kernel": "acme_kernel"})
    _strip(trace, labels=evidence != "labels", flows=evidence != "flows", correlation=evidence != "correlation")
    hand = kernel_totals(trace["traceEvents"], "acme_kernel")
    d = build_digest(read_kineto(write(tmp_path, trace)))
    assert {k.name: k.total_ns for k in d.kernels_by_name} == hand


def test_unnamed_category_without_evidence_is_not_device_work(tmp_path):
    trace = _strip(relabel(load(*ALEXNET), {"kernel": "acme_kernel"}), labels=True, flows=True, correlation=True)
    d = build_digest(read_kineto(write(tmp_path, trace)))
    assert list(d.kernels_by_name) == []


def test_cuda_sync_events_are_not_device_work():
    """`cuda_sync` events (Stream Sync ...) sit on the device process with a correlation, but are
    waits, not work: the kernel table holds exactly the `kernel` category."""
    raw = load(*ALEXNET)["traceEvents"]
    assert any(e.get("cat") == "cuda_sync" for e in raw)
    d = build_digest(read_kineto(fixture_path(*ALEXNET)))
    assert {k.name: k.total_ns for k in d.kernels_by_name} == kernel_totals(raw)


# ------------------------------------------------------------------------------ communication

def _nccl_kernels(trace):
    return [e for e in trace["traceEvents"] if e.get("cat") == "kernel" and e["name"].startswith("nccl")]


def _comm_figures(d):
    calls = sum(c.calls for c in d.communication.collectives)
    steps = sum(s.breakdown.communication_ns + s.breakdown.overlapped_ns for s in d.steps)
    return calls, steps, d.communication.total_ns


@pytest.mark.parametrize("new_name", [
    "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long)",
    "void c10d::symmetric_memory::two_shot_all_reduce_kernel<float, 8>(float**, unsigned long)",
    "void deep_ep::intranode::dispatch<8, 768, 6144>(int4*, float*, int*)",
    "void deep_ep::internode_ll::combine<false, 7168>(void*, void*)",
])
def test_collective_kernel_families_are_communication(tmp_path, new_name):
    trace = load(*NCCL)
    nccl = _nccl_kernels(trace)
    for e in nccl:
        e["name"] = new_name
        for k in ("Collective name", "Process Group Name", "Process Group Description", "Process Group Ranks"):
            e["args"].pop(k, None)  # no collective args: the name alone must say it
        e["args"]["External id"] = -12345  # nor the launching op
    d = build_digest(read_kineto(write(tmp_path, trace)))
    calls, steps, total = _comm_figures(d)
    assert calls == len(nccl) == 21
    kn = {k.name: k for k in d.kernels_by_name}
    assert kn[new_name].communication and kn[new_name].calls == 21
    assert steps == total > 0  # the breakdown and the communication view count the same time


@pytest.mark.parametrize("evidence", ["launcher", "collective args"])
def test_kernel_of_unknown_name_is_communication_by_its_evidence(tmp_path, evidence):
    """A collective kernel with a name no list knows is communication because record_param_comms
    launched it (its External id), or because it carries the collective args."""
    trace = load(*NCCL)
    nccl = _nccl_kernels(trace)
    for e in nccl:
        e["name"] = "custom_reduce_kernel"
        if evidence == "launcher":
            for k in ("Collective name", "Process Group Name", "Process Group Description", "Process Group Ranks"):
                e["args"].pop(k, None)
        else:
            e["args"]["External id"] = -12345
    original = build_digest(read_kineto(fixture_path(*NCCL)))
    d = build_digest(read_kineto(write(tmp_path, trace)))
    assert _comm_figures(d)[0] == len(nccl)
    assert _comm_figures(d)[1:] == _comm_figures(original)[1:]  # same rows, same times as when named nccl


def test_collective_comm_category_on_device_is_communication(tmp_path):
    trace = load(*NCCL)
    nccl = _nccl_kernels(trace)
    for e in nccl:
        e["cat"] = "collective_comm"
    d = build_digest(read_kineto(write(tmp_path, trace)))
    assert _comm_figures(d)[0] == len(nccl)


def test_hccl_host_ranges_are_communication(tmp_path):
    """A real CPU-only gloo run (one rank), its backend ranges renamed as torch_npu's HCCL backend
    writes them (`hccl:all_reduce`): the same collectives, the table and the breakdown agree."""
    path = one_rank_gloo_trace(tmp_path, lambda dist, x: dist.all_reduce(x))
    trace = json.loads(path.read_text(encoding="utf-8"))
    ranges = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e["name"].startswith("gloo:")]
    for e in ranges:
        e["name"] = "hccl:" + e["name"][len("gloo:"):]
    d = build_digest(read_kineto(write(tmp_path, trace, "hccl.pt.trace.json")))
    assert [(c.kind, c.calls) for c in d.communication.collectives] == [("AllReduce", len(ranges))]
    assert len(ranges) == 2
    steps = sum(s.breakdown.communication_ns + s.breakdown.overlapped_ns for s in d.steps)
    assert steps == d.communication.total_ns == sum(ns(e["dur"]) for e in ranges)
