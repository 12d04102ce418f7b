"""Classification by structure first (issue 39, class 3): blocking calls of every vendor are device wait,
kernels take their family from the operator that launched them, then from the profiler's category, and
only last from whole name tokens; advice fits the device and what already runs.

Expected figures come from a plain reading of the fixture's JSON in the test (gzip + json), never from
the code under test.
"""
import gzip
import json

from conftest import fixture_path

from canning_tb.analysis.build import build_digest
from canning_tb.ingest.kineto.read import read_kineto

AMD = ("hta", "amd_trace", "mi250_minitoy_train_ROCm6_2_kineto.json.gz")


def _overlap(a0, a1, spans):
    return sum(max(0.0, min(a1, b1) - max(a0, b0)) for b0, b1 in spans)


def test_amd_blocking_copy_is_device_wait_not_launch_overhead():
    """ROCm's hipMemcpyWithStream returns when the copy is done (graph/vendors.BLOCKING): its time in the
    steps is Device wait, less the part the copy itself covers on the device (Memcpy comes first in the
    breakdown's order), never Runtime. Before: Device wait 0 and the calls counted as launches."""
    path = fixture_path(*AMD)
    events = json.load(gzip.open(path))["traceEvents"]
    steps = [(e["ts"], e["ts"] + e["dur"]) for e in events
             if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("cat") == "user_annotation"]
    copies = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "gpu_memcpy"]
    calls = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name") == "hipMemcpyWithStream"]
    assert len(calls) == 2 and steps
    # each blocking call lies inside a step; what of it the device copy does not cover is device wait (us)
    inside = [c for c in calls if any(s0 <= c[0] and c[1] <= s1 for s0, s1 in steps)]
    assert len(inside) == 2
    expected_us = sum((c1 - c0) - _overlap(c0, c1, copies) for c0, c1 in inside)
    d = build_digest(read_kineto(str(path)))
    measured_ns = sum(s.breakdown.device_wait_ns for s in d.steps)
    assert abs(measured_ns - expected_us * 1000) <= 2  # ns rounding of two calls
    assert measured_ns > 50_000


def _attention_step(cast: bool):
    """A hand-written attention: bmm, scale, softmax, dropout, then (cast=True) one aten::to to fp32 before
    the second bmm, as models that run the softmax in another precision do."""
    import torch
    q, k, v = (torch.randn(4, 32, 16) for _ in range(3))

    def attention():
        p = torch.nn.functional.dropout(torch.softmax(torch.bmm(q, k.transpose(1, 2)) / 4.0, -1), 0.1)
        if cast:
            p = p.to(torch.float64).to(torch.float32)  # two real casts (a copy each way)
        return torch.bmm(p, v)

    def step():  # two layers: the rule counts from 5 occurrences in the window
        return attention(), attention()
    return step


def test_fusable_attention_tolerates_a_cast_between_dropout_and_bmm(tmp_path):
    """Before: one aten::to between dropout and bmm hid the pattern. By construction the step holds two
    attentions; _rules_workloads records ACTIVE steps; the finding counts two per step, with or without
    the casts."""
    from _rules_workloads import ACTIVE, profiled
    from canning_tb.analysis.rules.runner import candidates
    for cast in (False, True):
        *_, inp = profiled(tmp_path, f"attn{int(cast)}", _attention_step(cast), rule_input=True)
        found = {f.rule: f for f in candidates(inp)}
        assert "fusable_attention" in found, f"cast={cast}"
        assert found["fusable_attention"].figures["occurrences"] == 2 * ACTIVE
