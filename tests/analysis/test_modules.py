"""The nn.Module tree (analysis/modules.py) on a real torch.profiler run of a small nested model,
against torch's own record of the calls: the python call tree the trace carries (`Python id` /
`Python parent id` of each python_function event), read here with json and loops."""
import json
from collections import defaultdict
from decimal import Decimal

import pytest
import torch
from torch import nn

from canning_tb.analysis.build import build_digest
from canning_tb.ingest.ascend.read import read_ascend
from canning_tb.ingest.kineto.read import read_kineto
from conftest import fixture_path


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 32)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.first, self.second, self.head = Block(), Block(), nn.Linear(32, 4)

    def forward(self, x):
        return self.head(self.second(self.first(x)))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    path = tmp_path_factory.mktemp("modules") / "trace.json"
    model, x = Net(), torch.randn(8, 32)
    with torch.profiler.profile(with_modules=True, with_stack=True) as prof:
        for _ in range(3):
            model(x).sum().backward()
    prof.export_chrome_trace(str(path))
    return path, build_digest(read_kineto(str(path)))


def _by_hand(path):
    """{module path: [calls, total µs, child-module µs, direct cpu ops]} from the python call tree."""
    events = json.loads(path.read_text())["traceEvents"]
    py = {e["args"]["Python id"]: e for e in events if e.get("cat") == "python_function"}

    def module_parent(e):
        pid = e["args"].get("Python parent id")
        while pid is not None and pid in py:
            if py[pid]["name"].startswith("nn.Module: "):
                return py[pid]
            pid = py[pid]["args"].get("Python parent id")
        return None

    def path_of(e):
        parts = []
        while e is not None:
            parts.append(e["name"][len("nn.Module: "):])
            e = module_parent(e)
        return "/".join(reversed(parts))

    mods = [e for e in py.values() if e["name"].startswith("nn.Module: ")]
    out = defaultdict(lambda: [0, 0.0, 0.0, 0])
    for m in mods:
        row = out[path_of(m)]
        row[0] += 1
        row[1] += m["dur"]
        up = module_parent(m)
        if up is not None:
            out[path_of(up)][2] += m["dur"]
    # direct ops: cpu ops on the module's thread inside it, not inside another op or a child module
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    for op in ops:
        def inside(outer, e=op):
            return outer["tid"] == e["tid"] and outer["ts"] <= e["ts"] and e["ts"] + e["dur"] <= outer["ts"] + outer["dur"]
        around = [m for m in mods if inside(m)]
        if not around:
            continue
        innermost = max(around, key=lambda m: m["ts"])
        if not any(inside(o) and o is not op and o["ts"] >= innermost["ts"] for o in ops):
            out[path_of(innermost)][3] += 1
    return out


def test_module_tree_against_the_python_call_tree(run):
    path, d = run
    expect = _by_hand(path)
    got = {m.path: m for m in d.modules}
    assert set(got) == set(expect) == {
        "Net_0", "Net_0/Block_0", "Net_0/Block_1", "Net_0/Linear_4", "Net_0/Block_0/Linear_0", "Net_0/Block_0/ReLU_0",
        "Net_0/Block_0/Linear_1", "Net_0/Block_1/Linear_2", "Net_0/Block_1/ReLU_1", "Net_0/Block_1/Linear_3"}
    for p, (calls, total_us, inner_us, ops) in expect.items():
        m = got[p]
        assert m.calls == calls == 3
        assert m.host_total_ns == pytest.approx(total_us * 1000, abs=calls)  # µs with 3 decimals -> ns
        assert m.host_self_ns == pytest.approx((total_us - inner_us) * 1000, abs=2 * calls + 2)
        assert m.operators == ops
        assert m.device_total_ns == m.device_self_ns == 0  # a CPU run
    # the order: depth first, siblings by first call; parents index the list
    assert [m.path for m in d.modules][:3] == ["Net_0", "Net_0/Block_0", "Net_0/Block_0/Linear_0"]
    for i, m in enumerate(d.modules):
        if m.parent >= 0:
            assert m.parent < i and m.path.startswith(d.modules[m.parent].path + "/") and m.depth == d.modules[m.parent].depth + 1
        else:
            assert m.depth == 0 and "/" not in m.path


def _ascend_device_self(trace_view):
    """{module path: (device ns, tasks)} from trace_view.json: each torch_to_npu flow from a host op
    to its device task, the task's duration to the innermost module call around the flow's start
    (same thread); module paths from time containment."""
    events = json.loads(trace_view.read_text())

    def ns(value):
        return int(Decimal(str(value)) * 1000)

    mods = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e) for e in events
            if e.get("ph") == "X" and str(e.get("name", "")).startswith("nn.Module: ")]

    def path(m):
        start, end = ns(m["ts"]), ns(m["ts"]) + ns(m["dur"])
        outer = sorted(x for x in mods if x[2] is not m and x[2]["tid"] == m["tid"] and x[0] <= start and end <= x[1])
        return "/".join([x[2]["name"][11:] for x in outer] + [m["name"][11:]])

    device = {(e["pid"], e["tid"], ns(e["ts"])): e for e in events if e.get("ph") == "X"}
    starts = {e["id"]: e for e in events if e.get("ph") == "s" and e.get("cat") == "async_npu"}
    out = defaultdict(lambda: [0, 0])
    for f in (e for e in events if e.get("ph") == "f" and e.get("cat") == "async_npu"):
        s, task = starts.get(f["id"]), device.get((f["pid"], f["tid"], ns(f["ts"])))
        if s is None or task is None:
            continue
        around = [x for x in mods if x[2]["tid"] == s["tid"] and x[0] <= ns(s["ts"]) < x[1]]
        if around:
            row = out[path(max(around, key=lambda x: x[0])[2])]
            row[0] += ns(task["dur"])
            row[1] += 1
    return out


def test_ascend_module_tree_device_times():
    """torch_npu writes the same nn.Module events: the tree of the level2 AlexNet, its device self time
    against trace_view.json's flows (kernel_details.csv's durations differ by < 1 ns per task), and
    the device total summed up the tree, each task once."""
    folder = fixture_path("ascend", "level2", "rank0_ascend_pt")
    d = build_digest(read_ascend(str(folder)))
    expect = _ascend_device_self(folder / "ASCEND_PROFILER_OUTPUT" / "trace_view.json")
    assert d.modules[0].path == "DistributedDataParallel_0"
    for m in d.modules:
        ns, tasks = expect.get(m.path, (0, 0))
        assert abs(m.device_self_ns - ns) <= tasks, m.path
    assert sum(1 for m in d.modules if m.device_self_ns > 0) >= 20
    for i, m in enumerate(d.modules):
        children = [c for c in d.modules if c.parent == i]
        assert m.device_total_ns == m.device_self_ns + sum(c.device_total_ns for c in children)
        assert m.host_self_ns == m.host_total_ns - sum(c.host_total_ns for c in children)
    convs = [m for m in d.modules if m.name.startswith("Conv2d_")]
    assert len(convs) == 5 and all(m.device_self_ns > 0 for m in convs)
    kernels = sum(k.total_ns for k in d.kernels_by_name)
    assert 0 < sum(m.device_total_ns for m in d.modules if m.parent < 0) <= kernels


def test_no_modules_without_module_events():
    d = build_digest(read_kineto(str(fixture_path("kineto", "resnet50_v100", "worker0.1623143089861.pt.trace.json.gz"))))
    assert len(d.modules) == 0
