"""The findings corpus: for every real fixture and every real run the tests make, the findings an
engineer expects and the ones that must not be there, written from an independent reading of the
files (the reason beside each; the readings that can be computed are computed here from the raw files,
never from canning-tb's output). `judge(...)` scores what the engine found against it.

Each entry: set name -> {"window": {...}, "ranks": {...}}; each of those: "expect" (rule -> why),
"absent" (rule -> why) and "either" (rule -> why the data cannot decide, e.g. a spread made by this
machine's load between identical ranks): not counted. "window" applies to every rank's window of the
set unless a rank's own entry ("window.<rank>") adds to it. A finding neither expected nor in "either"
counts as a false positive: every finding is judged.
"""
import csv
import gzip
import json
import os
import socket
import subprocess
import sys

from _procs import communicate_all
from conftest import FIXTURES

F = str(FIXTURES)  # the repository's copy (tests/fixtures), or CANNING_FIXTURES


def run_two_ranks(script, out, modes, timeout: int = 400) -> None:
    """Run `script RANK PORT OUT MODES` as the two ranks of one real gloo job; fails with their logs."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, str(script), str(rank), str(port), str(out), ",".join(modes)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for rank in (0, 1)]
    logs = communicate_all(procs, timeout)  # a hung rank (its peer died in a collective) is killed
    assert [p.returncode for p in procs] == [0, 0], [log[-3000:] for log in logs]


def raw_events(path: str) -> list:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        data = json.load(f)
    return [e for e in (data["traceEvents"] if isinstance(data, dict) else data) if e.get("ph") == "X"]


def union_us(spans) -> float:
    out, end = 0.0, None
    for s, e in sorted(spans):
        if end is None or s > end:
            out += e - s
            end = e
        elif e > end:
            out += e - end
            end = e
    return out


def overlap_us(spans, others) -> float:
    """Length of the union of `spans` that lies inside the union of `others`."""
    return union_us(spans) + union_us(others) - union_us(list(spans) + list(others))


def steps_us(events) -> list:
    return sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e["name"].startswith("ProfilerStep#"))


def share_of_steps(events, names) -> float:
    """Union of the events named by `names` (a predicate) inside the steps / the steps' time."""
    steps = steps_us(events)
    spans = [(max(e["ts"], s), min(e["ts"] + e["dur"], t)) for e in events if names(e["name"])
             for s, t in steps if e["ts"] < t and e["ts"] + e["dur"] > s]
    return union_us(spans) / sum(t - s for s, t in steps)


def not_hidden_share(events) -> float:
    """CPU gloo: the worker threads' gloo:* time with no host operator running on the other threads,
    over the steps (an independent join of the raw file)."""
    steps = steps_us(events)
    gloo = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["name"].startswith("gloo:")]
    gloo_tids = {e["tid"] for e in events if e["name"].startswith("gloo:")}
    host = [e for e in events if e.get("cat") == "cpu_op" and e["tid"] not in gloo_tids]
    queueing = [(e["ts"], e["ts"] + e["dur"]) for e in host if e["name"].startswith(("c10d::", "record_param_comms"))]
    ops = [(e["ts"], e["ts"] + e["dur"]) for e in host if not e["name"].startswith(("c10d::", "record_param_comms"))]
    inside = [(max(a, s), min(b, t)) for a, b in gloo for s, t in steps if a < t and b > s]
    # compute = the operators less the collective ops nested in them (an autograd hook queueing an
    # all-reduce is not computing)
    hidden = overlap_us(inside, ops) - overlap_us(inside, [(max(a, c), min(b, d)) for a, b in ops
                                                          for c, d in queueing if a < d and b > c])
    return (union_us(inside) - hidden) / sum(t - s for s, t in steps)


def per_step_ops_us(events) -> list:
    """Per ProfilerStep: the union of the main thread's host operators (its computing on the CPU)."""
    steps = steps_us(events)
    main = max({e["tid"] for e in events}, key=lambda t: sum(1 for e in events if e["tid"] == t and
                                                           e["name"].startswith("ProfilerStep#")))
    ops = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["tid"] == main and e.get("cat") == "cpu_op"
           and not e["name"].startswith(("c10d::", "gloo:"))]
    return [union_us([(max(a, s), min(b, t)) for a, b in ops if a < t and b > s]) for s, t in steps]


def broadcast_steps(events) -> set:
    """The ProfilerStep numbers whose range holds a gloo:broadcast."""
    steps = [(e["ts"], e["ts"] + e["dur"], e["name"]) for e in events if e["name"].startswith("ProfilerStep#")]
    return {n for e in events if e["name"] == "gloo:broadcast" for s, t, n in steps if s <= e["ts"] < t}


def ascend_step_csv(folder: str) -> dict:
    with open(f"{folder}/ASCEND_PROFILER_OUTPUT/step_trace_time.csv", newline="") as f:
        (row,) = list(csv.DictReader(f))
    return {k: float(v) for k, v in row.items() if k in ("Computing", "Communication(Not Overlapped)", "Free")}


ASCEND_WINDOW = {
    "expect": {
        "communication_not_overlapped": "step_trace_time.csv: Communication(Not Overlapped) is over half of the step "
                                        "(checked in test_rules_corpus), the AllReduce of an 8-card job",
        "unfused_optimizer": "Optimizer.step#SGD.step with aclnnForeach* kernels: msprof-analyze's advisor names "
                             "torch_npu.optim.NpuFusedSGD (tests/analysis/test_rules_fixtures.py)",
        "byte_alignment": "hcom_allReduce sizes 16388000 / 9878784 B, not multiples of 512 (the advisor's check)",
        "trace_inflated": "with_stack: python_function events are over a quarter of the trace (counted in the test)",
    },
    "absent": {"sync_calls": "a few ms of aclrtSynchronize per step: under 5 % of a 140 ms step",
               "tensor_cores_unused": "an NPU", "device_idle": "AI Core busy"},
    "either": {"compilation": "38 aclopCompile calls in some levels' traces, fewer or none in others",
               "dominant_kernel_family": "elementwise kernels 31 % of a kernel time that is a small part of the "
                                         "step (the AllReduce is most of it)",
               "low_bandwidth": "HCCS links at 15 GB/s of 56 GB/s nominal on 58 MiB transfers: the capacity "
                                "yardstick is a data sheet's, not this fabric's measured one"},
}
RESNET = {"expect": {"tensor_cores_unused": "V100, fp32: no kernel name says h884 / s884 / hmma (raw kernels)",
                     "unfused_optimizer": "torch 1.9 SGD: per-parameter aten::add_ / mul_ under Optimizer.step",
                     "dominant_kernel_family": "cuDNN conv kernels over 30 % of the kernel time (raw)"},
          "absent": {"sync_calls": "cudaStreamSynchronize under aten::copy_: microseconds per step",
                     "launch_bound": "runtime under 10 %", "host_bound": "the GPU is 55-64 % busy (the old plugin)",
                     "device_idle": "the old plugin's GPU utilization 55.5 % / 63.6 %: idle under half",
                     "communication_not_overlapped": "one GPU, no collective"}}

CORPUS = {
    "resnet_v100": {"window": {**RESNET, "expect": {**RESNET["expect"], "dataloader_share": "DataLoader 35 % of "
                                                    "the steps (computed from the raw file)"}}},
    "resnet_v100_w2": {"window": {**RESNET, "expect": {**RESNET["expect"], "dataloader_share": "DataLoader 23 % "
                                                       "of the steps (raw)"}}},
    "resnet_nw4": {"window": {**RESNET, "absent": {**RESNET["absent"], "dataloader_share": "num_workers=4 hides "
                                                   "loading: under 5 % of the steps (raw)"}}},
    "tbp_gpu_metrics": {"window": {
        "expect": {"host_bound": "host operators 65 % of the step, the GPU busy 0.4 %",
                   "device_idle": "24 % of the step has nothing recorded at all: unexplained idle",
                   "dataloader_share": "DataLoader 5.4 % of the step (raw)"},
        "absent": {"launch_bound": "runtime 4.5 %"}}},
    "hta_df_index": {"window": {
        "expect": {"tensor_cores_unused": "V100 volta_sgemm kernels, none on Tensor Cores",
                   "communication_not_overlapped": "NCCL AllReduce not under compute: 21 % of the step",
                   "dominant_kernel_family": "sgemm kernels 67 % of the kernel time",
                   "dominant_op": "aten::mm 36 % of the device self time",
                   "fragmentation": "reserved 11.9 GiB vs 6.2 GiB allocated at the peak"},
        "absent": {"unfused_optimizer": "SGD's 12.5 ms is 3.6 % of a 348 ms step: under the floor",
                   "device_idle": "the GPU is busy"}}},
    "hta_nccl": {"window": {
        "expect": {"host_bound": "host operators 72 % of the step with the GPU idle",
                   "unfused_optimizer": "SGD with multi-tensor kernels: fused=True fuses further",
                   "dominant_kernel_family": "cuDNN conv kernels 42 %"},
        "absent": {"device_idle": "explained by the host-bound finding (residual)", "sync_calls": "microseconds"}}},
    "hta_diff_control": {"window": {
        "expect": {"communication_not_overlapped": "AllToAll / AllReduce 19 % of the step not under compute",
                   "matmul_alignment": "bmm with 647 / 30 dims; *_align1 kernels run (not 'Tensor Cores idle')"},
        "absent": {"unfused_optimizer": "Optimizer.step#FusedAdam.step: apex multi_tensor_apply AdamFunctor",
                   "tensor_cores_unused": "s1688gemm tensorop kernels run"},
        "either": {"dominant_kernel_family": "cutlass tensorop GEMMs 29 % of the compute kernels' time, at the 30 % "
                                             "threshold, once fbgemm's embedding / permute kernels are no longer "
                                             "counted as GEMMs (31 % before, by the substring 'gemm' in 'fbgemm')",
                   "below_roof": "aten::mm at 27 % of its roof by the efficiency models (their FLOPs and bytes are "
                                 "checked by hand in test_roofline_models.py; no second reading here weighs the roof); "
                                 "aten::copy_, mostly Memcpy HtoD / DtoH over PCIe, must not be the one named"}}},
    "hta_diff_test": {"window": {
        "expect": {"dominant_kernel_family": "volta_sgemm 40 % of the kernel time"},
        "absent": {"unfused_optimizer": "FusedAdam: fused by design", "sync_calls": "1.4 ms of 124 ms"},
        "either": {"below_roof": "aten::copy_ (Memcpy DtoD inside the V100) at 41 % of HBM by the models, a gain "
                                 "within the steps' own variation (an info that says so)"}}},
    "hta_filter": {"window": {
        "expect": {"host_bound": "sampled ranks: host 52-54 % with the GPU idle",
                   "communication_not_overlapped": "AllToAll / AllGather / AllReduce 25-27 % of the step",
                   "dominant_kernel_family": "TBE embedding kernels 75-80 %",
                   "matmul_alignment": "bmm with 606 / 20 dims, 59 % of calls"},
        "absent": {"unfused_optimizer": "Shampoo runs _foreach_ ops; torch.optim has no Shampoo(fused=True)"},
        "either": {"dominant_op": "the TBE backward at 37 % on rank 1, under 30 % on rank 0"}},
        "ranks": {"absent": {"slow_rank_computing": "sampled traces (trace_filter): not comparable step by step",
                             "slow_rank_communication": "the same"}}},
    "hta_ns": {"window": {
        "expect": {"tensor_cores_unused": "V100 fp32 cuDNN kernels, none on Tensor Cores",
                   "dominant_kernel_family": "cuDNN conv 58 %", "dominant_op": "convolution_backward 45 %"}}},
    "hta_amd": {"window": {"expect": {"host_bound": "a toy step: launches (hip runtime) 72 % with the GPU idle"},
                           "absent": {"tensor_cores_unused": "an AMD GPU", "matmul_alignment": "0.1 ms at stake"},
                           "either": {"launch_bound": "one real step and a 49 us cut one: the noise floor decides",
                                      "device_idle": "6 % of the step has nothing recorded: the idle no other "
                                                     "finding explains, at the floor"}}},
    "hta_cpu_only": {"window": {
        "expect": {"communication_not_overlapped": "gloo:all_reduce over 85 % of the step, the main thread idle"},
        "absent": {"dominant_op": "aten::empty, 0.004 ms per step"}}},
    "hta_alexnet": {"window": {
        "expect": {"startup": "cudaDeviceGetStreamPriorityRange 30 s: CUDA context creation, no ProfilerStep"},
        "absent": {"launch_bound": "the runtime time is initialisation, not launches",
                   "host_bound": "the same", "allocator_churn": "first allocations of a process",
                   "device_wait": "cudaFree of cuDNN autotuning at start-up", "device_idle": "start-up"}}},
    "dlrm_8": {"window": {
        "expect": {"communication_not_overlapped": "AllToAll / AllReduce not under compute: 13-56 % of the step",
                   "unfused_optimizer": "Adagrad: per-parameter elementwise kernels, 1.4 ms of 13-20 ms"},
        "absent": {"tensor_cores_unused": "0.2 ms per step: under the floor", "matmul_alignment": "under the floor",
                   "sync_calls": "0.1 ms"},
        "either": {"dataloader_share": "5.8-9.8 % on some ranks, under 5 % on others",
                   "host_bound": "rank by rank around the 50 % threshold", "device_idle": "the same",
                   "dominant_kernel_family": "around 30 % rank by rank"}},
        "ranks": {"expect": {"slow_rank_communication": "rank 7 starts the first all-to-all last: every rank's "
                                                        "kernel ends with its (raw start times)"},
                  "absent": {"slow_rank_free": "rank 5 is not the one the others wait for",
                             "slow_rank_computing": "computing 1.0-1.25 ms: under the floor"}}},
    "ascend_level0": {"window": ASCEND_WINDOW, "ranks": {"either": {"slow_rank_communication": "one step per "
                                                                    "rank: a hint, 23 % spread"}}},
    "ascend_level1": {"window": ASCEND_WINDOW, "ranks": {"absent": {"slow_rank_communication": "5.7 % spread, "
                      "5.6 ms of a 150 ms step: under the floor", "slow_link": "15.1-16.0 GB/s: 0.1 ms at stake"}}},
    "ascend_level2": {"window": ASCEND_WINDOW, "ranks": {"absent": {"slow_rank_free": "1.4 ms spread"}}},
    "ascend_db_level0": {"window": ASCEND_WINDOW, "ranks": {}},
    "ascend_db_level1": {"window": ASCEND_WINDOW, "ranks": {}},
    "ascend_db_level2": {"window": ASCEND_WINDOW, "ranks": {"absent": {"slow_rank_communication": "6.2 ms of "
                                                                       "144 ms: under the floor"}}},
    # real 2-rank gloo runs (tests/_rules_corpus_dist.py): the spreads between identical ranks are this
    # machine's load, so slow ranks there are "either"
    "run_ddp": {"window": {
        "absent": {"pipeline_wait": "no send / receive", "tensor_cores_unused": "a CPU",
                   "matmul_alignment": "a CPU: no Tensor Cores", "sync_calls": "a CPU"},
        "either": {"first_step_broadcast": "DDP's bucket-rebuild broadcast in the first step: its size decides",
                   "communication_not_overlapped": "gloo:all_reduce not beside main-thread operators is over 10 % "
                   "of the steps (the independent join in the test), but whether that clears the noise floor "
                   "depends on how much this machine's load stretches the rest of the steps",
                   "unfused_optimizer": "SGD per tensor: its share of a step the load stretches decides",
                   "dominant_op": "the MLP's matmuls hover around 30 % of the host self time"}},
        "ranks": {"absent": {"stage_imbalance": "no pipeline", "embedding_allreduce": "no pipeline"},
                  "either": {"slow_rank_computing": "identical ranks", "slow_rank_communication": "identical ranks",
                             "slow_rank_free": "identical ranks"}}},
    "run_pipeline": {"window": {
        "expect": {"pipeline_wait": "only gloo:send / gloo:recv: the stages wait for each other"},
        "absent": {"communication_not_overlapped": "no DDP advice for send / receive",
                   "first_step_broadcast": "no broadcast"},
        "either": {"dominant_op": "the MLP's matmuls hover around 30 % of the host self time"}},
        "ranks": {"absent": {"slow_rank_computing": "two stages, one rank each: stages are not compared as ranks",
                             "slow_rank_communication": "the same", "slow_rank_free": "the same",
                             "embedding_allreduce": "no all-reduce"},
                  "either": {"stage_imbalance": "4 + 4 layers: balanced by design, this machine's load decides"}}},
    "run_pipeline_unbalanced": {"window": {
        "absent": {"communication_not_overlapped": "no DDP advice for send / receive"},
        "either": {"pipeline_wait": "the last stage computes most of its step: it waits little",
                   "dominant_op": "the MLP's matmuls hover around 30 % of the host self time"}},
        "window.0": {"expect": {"pipeline_wait": "stage 0 (1 layer) waits for stage 1 (7 layers)"}},
        "ranks": {"expect": {"stage_imbalance": "7 layers against 1: stage 1 computes more in every step (raw)",
                             "embedding_allreduce": "the all-reduce of the tied embeddings links only the first and "
                                                    "the last stage"},
                  "absent": {"slow_rank_computing": "the last stage doing its share is not a slow rank",
                             "slow_rank_communication": "the same", "slow_rank_free": "the same"}}},
    "run_broadcast": {"window": {
        "expect": {"first_step_broadcast": "gloo:broadcast in the first profiled step only (raw): DDP's construction"},
        "absent": {"communication_not_overlapped": "the only communication is the one-off broadcast",
                   "pipeline_wait": "no send / receive"},
        "either": {"dominant_op": "aten::mm 38 % of the host self time", "unfused_optimizer": "SGD per tensor; "
                   "its share of a step this machine's load stretches decides"}},
        "ranks": {"absent": {"stage_imbalance": "no pipeline"},
                  "either": {"slow_rank_computing": "identical ranks", "slow_rank_communication": "identical ranks",
                             "slow_rank_free": "identical ranks"}}},
}


# Whether these findings stand is the dependency graph's replay now (docs/rules.md "Gains"): a problem the files
# show may gain less than the floor once the rest of the step is replayed (a collective that waits for another
# rank, an optimizer or kernels off the critical path of a host-bound step). No reading here can replay the graph
# independently: the findings lab (tests/lab) proves these rules by experiment instead. Per set, the rules whose
# hand-written verdict the replay overrules, and why the data alone cannot decide them.
REPLAYED = {
    "communication_not_overlapped": "multi-rank collectives wait for the other ranks, or start as the backward "
                                    "begins already: whether overlapping gains is the replay's",
    "unfused_optimizer": "the optimizer's per-call cost is off the steps' critical path (the host launches slower "
                         "than the device runs, or the device holds the step): whether fusing gains is the replay's",
    "tensor_cores_unused": "the kernels trail the host's launches: faster kernels gain what the replay says "
                           "(test_kineto_figures checks the ResNet case from the raw launches)",
    "host_bound": "the host's time on the path against the device's is the replay's",
    "python_on_path": "untraced time on the step's thread: Python, or a wait the trace does not name",
    "sync_calls": "a sync that waits while the device computes stops the host from running ahead: the replay "
                  "can gain more than the Device wait column",
    "slow_rank_communication": "balancing is replayed over the ranks' collectives",
    "slow_rank_computing": "balancing is replayed over the ranks' collectives",
}
REPLAY_DECIDES = {
    "resnet_v100": ("tensor_cores_unused", "unfused_optimizer"), "resnet_v100_w2": ("tensor_cores_unused",
                                                                                    "unfused_optimizer"),
    "resnet_nw4": ("tensor_cores_unused", "unfused_optimizer", "python_on_path"),
    "hta_df_index": ("communication_not_overlapped", "tensor_cores_unused"), "hta_nccl": ("unfused_optimizer",),
    "hta_diff_control": ("communication_not_overlapped",), "hta_filter": ("communication_not_overlapped",
                                                                          "host_bound"),
    "hta_ns": ("tensor_cores_unused",), "dlrm_8": ("communication_not_overlapped", "unfused_optimizer", "sync_calls"),
    **{f"ascend_{level}": ("communication_not_overlapped", "unfused_optimizer", "sync_calls")
       for level in ("level0", "level1", "level2", "db_level0", "db_level1", "db_level2")},
    **{f"run_{mode}": ("python_on_path",) for mode in ("ddp", "pipeline", "pipeline_unbalanced", "broadcast")},
}
REPLAY_DECIDES_RANKS = {"hta_filter": ("slow_rank_communication", "slow_rank_computing"),
                        "dlrm_8": ("slow_rank_communication",)}


def expectations(name: str, scope: str) -> dict:
    """{"expect", "absent", "either"} for a set and a scope ("window", "window.<rank>", "ranks")."""
    entry = CORPUS[name]
    base = entry.get("window" if scope.startswith("window") else "ranks", {})
    own = entry.get(scope, {}) if scope.startswith("window.") else {}
    out = {}
    for part in ("expect", "absent", "either"):
        merged = {**base.get(part, {}), **own.get(part, {})}
        out[part] = merged
    for rule in out["expect"]:  # a rank's own expectation wins over the set's "either"
        out["either"].pop(rule, None)
    decided = REPLAY_DECIDES_RANKS.get(name, ()) if scope == "ranks" else REPLAY_DECIDES.get(name, ())
    for rule in decided:
        out["expect"].pop(rule, None)
        out["absent"].pop(rule, None)
        out["either"][rule] = REPLAYED[rule]
    return out


def judge(name: str, scope: str, found: set) -> dict:
    """Counts of one window or cross-rank list against the corpus (needs_* rules are not judged)."""
    e = expectations(name, scope)
    found = {r for r in found if not r.startswith("needs_")}
    judged = found - set(e["either"])
    return {"tp": sorted(judged & set(e["expect"])), "fn": sorted(set(e["expect"]) - found),
            "fp": sorted(judged - set(e["expect"])), "tn": sorted(set(e["absent"]) - found),
            "either": sorted(found & set(e["either"]))}
