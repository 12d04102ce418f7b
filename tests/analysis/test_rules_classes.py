"""Classes of wrong findings, each on a hand-made window with the names the real profilers write
(CUDA graph capture, a torchrec-style optimizer wrapper, other libraries' optimizer classes, the
collective op that launches NCCL kernels): what the findings must and must not say. The real-data
cases of the same classes are in the corpus (tests/analysis/test_rules_corpus.py)."""
from _synthetic import ev, table

from canning_tb.analysis.build import build_digest
from canning_tb.ingest.table import Kind as K

MS = 1_000_000
CUDA = [{"kind": "cuda", "index": 0, "compute_capability": "8.0", "name": "A100"}]


def rules(t) -> dict:
    return {h.rule: h for h in build_digest(t).rule_hits}


def test_a_graph_capture_is_not_a_host_bound_step():
    """cudaStreamBeginCapture ... cudaGraphInstantiate: kernels launched meanwhile are recorded, not run;
    an idle device there is by design (the issue's window: 'host-bound, up to 2052x')."""
    launches = [ev("cudaLaunchKernel", K.RUNTIME, 1 * MS + i * 40_000, 30_000) for i in range(200)]
    ops = [ev("aten::mm", K.CPU_OP, 1 * MS + i * 40_000, 35_000) for i in range(200)]
    t = table([ev("ProfilerStep#1", K.USER_ANNOTATION, 0, 10 * MS), ev("cudaStreamBeginCapture", K.RUNTIME, 0, 20_000),
               *launches, *ops, ev("cudaStreamEndCapture", K.RUNTIME, 9 * MS, 50_000),
               ev("cudaGraphInstantiate", K.RUNTIME, 9_100_000, 800_000), ev("gemm", K.KERNEL, 9_950_000, 10_000)],
              devices=CUDA)
    found = rules(t)
    assert "graph_capture" in found
    assert not {"host_bound", "launch_bound", "device_idle", "tiny_kernels"} & set(found)


def _optimizer_window(outer: str, inner: list[str]) -> list:
    """A 10 ms step whose optimizer range `outer` (if any) holds the ranges `inner`, each running one
    aten::add_ per parameter (unfused, 100 calls of 5 us, the Python loop's 9 us between them): 1.5 ms each, one
    after the other."""
    out = [ev("ProfilerStep#1", K.USER_ANNOTATION, 0, 10 * MS)]
    if outer:
        out.append(ev(f"Optimizer.step#{outer}.step", K.USER_ANNOTATION, 5 * MS, 4 * MS))
    for i, kind in enumerate(inner):
        start = 5 * MS + 500_000 + i * 1_500_000
        out.append(ev(f"Optimizer.step#{kind}.step", K.USER_ANNOTATION, start, 1_500_000))
        out += [ev("aten::add_", K.CPU_OP, start + 10_000 + j * 14_000, 5_000) for j in range(100)]
    return out


def test_a_wrapper_is_judged_by_its_inner_optimizers_and_gains_are_not_summed():
    """torchrec's CombinedOptimizer holds an SGD and an Adam step: no advice for the wrapper (it has no
    fused argument), one finding per inner class, each gain its own range (never the nested sum)."""
    found = [h for h in build_digest(table(_optimizer_window("CombinedOptimizer", ["SGD", "Adam"]))).rule_hits
             if h.rule == "unfused_optimizer"]
    assert sorted(h.title for h in found) == ["The Adam optimizer runs unfused", "The SGD optimizer runs unfused"]
    assert all("CombinedOptimizer" not in h.change_torch for h in found)
    assert {h.change_torch for h in found} == {"torch.optim.SGD(..., fused=True) (or foreach=True)",
                                                "torch.optim.Adam(..., fused=True) (or foreach=True)"}
    # its own range, not the wrapper's 4 ms: fused (a CPU window: the calls stay, the multi-tensor path still
    # calls one operator per tensor), the 1.5 ms range keeps its 100 x 5 us of calls, its edges (10 us before the
    # first call, 1,500 - 1,401 = 99 us after the last) and one call's share of the 99 x 9 = 891 us of glue
    # between them: 1,500 - (500 + 109 + 8.91) = 882.09 us gained
    assert all(abs(h.gain_ns - 882_090) <= 1 for h in found), [h.gain_ns for h in found]


def test_other_libraries_classes_get_no_argument_they_do_not_have():
    t = table(_optimizer_window("", ["Shampoo", "RMSprop", "FusedAdam"]))
    found = {h.title: h for h in build_digest(t).rule_hits if h.rule == "unfused_optimizer"}
    assert "The FusedAdam optimizer runs unfused" not in found  # apex / DeepSpeed FusedAdam: fused by design
    assert "fused=True" not in found["The Shampoo optimizer runs unfused"].change_torch
    assert "torch.optim.Shampoo" not in found["The Shampoo optimizer runs unfused"].change_torch
    assert found["The RMSprop optimizer runs unfused"].change_torch.startswith("torch.optim.RMSprop(..., foreach=True)")


def test_the_collective_op_is_not_an_operator_to_make_faster():
    """record_param_comms launches the NCCL kernel: its device time is communication, never 'dominates:
    try autocast'."""
    t = table([ev("ProfilerStep#1", K.USER_ANNOTATION, 0, 10 * MS),
               ev("record_param_comms", K.CPU_OP, 0, 100_000, external_id=1),
               ev("aten::mm", K.CPU_OP, 200_000, 100_000, external_id=2),
               ev("ncclDevKernel_AllReduce_Sum_f32_RING_LL", K.COMM_KERNEL, 100_000, 7 * MS, external_id=1),
               ev("sgemm_128x64_nn", K.KERNEL, 7_200_000, 2 * MS, external_id=2)], devices=CUDA)
    found = rules(t)
    assert "dominant_op" not in found or not found["dominant_op"].title.startswith("record_param_comms")
