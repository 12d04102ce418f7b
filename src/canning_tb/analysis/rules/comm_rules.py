"""Communication of one window: not hidden by compute vs pipeline send / receive waits, a one-off
parameter broadcast of the first profiled step, small packets, unaligned sizes, bandwidth far below
the link's capacity."""
from __future__ import annotations

import re

import numpy as np

from .. import intervals as iv
from ..summary import window_figures
from . import thresholds as th
from .engine import RuleInput, rule
from .events import per_step
from .finding import Finding, evidence, ms, pct
from .workload import is_inference

# an inference window (no backward, no optimizer step: workload.is_inference) has no gradients to bucket
_INFERENCE_OVERLAP = ("overlap it with compute: split the batch so that one part computes while another "
                      "communicates, or overlap the tensor-parallel collectives with the matmuls around them; "
                      "fewer ranks per model replica.")

P2P_KINDS = {"send", "recv", "sendrecv", "batchsendrecv", "isend", "irecv", "receive"}
# a communicator the files name as the tied-embedding group (Megatron EMBEDDING_GROUP, torch_npu "embd")
EMBEDDING_GROUP_RE = re.compile(r"embd|embedding", re.I)


def is_p2p(kind: str, comm_type: str) -> bool:
    return comm_type == "p2p" or kind.lower() in P2P_KINDS


def _p2p_share(inp: RuleInput) -> float:
    """Share of the window's communication time in pipeline send / receive."""
    cols = inp.digest.communication.collectives
    total = sum(c.total_ns for c in cols)
    return sum(c.total_ns for c in cols if is_p2p(c.kind, c.comm_type)) / total if total > 0 else 0.0


def calls_set(calls) -> tuple:
    """The union of the calls' time ranges (parallel calls on several threads counted once)."""
    return iv.union(np.array([c.start_ns for c in calls], np.int64),
                    np.array([c.start_ns + c.dur_ns for c in calls], np.int64))


def one_off_broadcast(inp: RuleInput) -> list:
    """The Broadcast calls of a parameter sync at the start of training: all in the window's first two
    steps (DDP's construction, then its bucket rebuild after the first iteration) while later steps have none
    (in a window of two steps: the first only), or in a window of one step that is the job's first
    (ProfilerStep#0 or #1). Empty when there is none."""
    d = inp.digest
    casts = [c for c in d.communication.calls if c.kind == "Broadcast"]
    if not casts or not d.steps:
        return []
    numbers = sorted(s.number for s in d.steps)
    first = numbers[0]
    if len(numbers) > 2:  # DDP broadcasts at its construction and again at its bucket rebuild, the next step
        found = casts if all(c.step in numbers[:2] for c in casts) else []
    elif len(numbers) == 2:
        found = casts if all(c.step == first for c in casts) else []
    else:
        found = casts if first <= 1 else []
    if not found:
        return []
    # DDP's construction also all-gathers the parameters' shapes: a kind of the first step only is part of it
    early = {c.step for c in found}
    later = {c.kind for c in d.communication.calls if c.step not in early}
    return found + [c for c in d.communication.calls if c.kind == "AllGather" and c.step in early
                    and "AllGather" not in later]


def _kinds_text(inp: RuleInput, cols) -> str:
    """'AllReduce (4 calls, 2.100 ms per step)': each collective with the time per step during which one of its
    calls runs (calls on parallel threads or streams counted once, so never more than the step)."""
    out = []
    for c in cols:
        calls = [x for x in inp.digest.communication.calls if x.kind == c.kind and x.group == c.group]
        busy = per_step(inp, calls_set(calls)) if calls else -1
        out.append(f"{c.kind} ({c.calls} calls" + (f", running {ms(busy)} per step)" if busy >= 0 else ")"))
    return ", ".join(out)


def _is_embedding(inp: RuleInput, group: str) -> bool:
    """A collective of the pipeline, not of data parallelism: a group the files name as the tied
    embeddings', or one that also carries this window's send / receive (the pipeline's own group: an
    all-reduce there links the stages, e.g. tied weights between the first and last stage)."""
    labels = {g.group: f"{g.name} {g.label}" for g in inp.digest.communication.groups}
    if EMBEDDING_GROUP_RE.search(f"{group} {labels.get(group, '')}"):
        return True
    return any(c.group == group and is_p2p(c.kind, c.comm_type) for c in inp.digest.communication.collectives)


@rule("communication_not_overlapped", "communication")
def communication_not_overlapped(inp: RuleInput):
    share = window_figures(inp.digest)["comm_not_hidden_share"]
    if share is None or share <= th.COMM_NOT_HIDDEN_SHARE or _p2p_share(inp) > th.P2P_WAIT_SHARE:
        return None
    a = inp.digest.average
    casts = one_off_broadcast(inp)
    one_off = {c.kind for c in casts}
    cols = [c for c in inp.digest.communication.collectives if c.kind not in one_off
            and not is_p2p(c.kind, c.comm_type) and not _is_embedding(inp, c.group)]
    kinds = sorted(cols, key=lambda c: -c.total_ns)[:3]
    if not kinds:
        return None  # all of it is a one-off broadcast, send / receive or the pipeline's all-reduce: their findings
    removes = inp.category("communication")
    skip = [c for c in inp.digest.communication.calls
            if c.kind in one_off or is_p2p(c.kind, c.comm_type) or _is_embedding(inp, c.group)]
    if removes is not None and skip:
        removes = iv.subtract(removes, calls_set(skip))
    pipeline = any(is_p2p(c.kind, c.comm_type) for c in inp.digest.communication.collectives)
    return Finding(
        "", "", "warning", "Communication is not hidden by compute",
        f"Communication not hidden by compute takes {pct(share)} of the average step "
        f"(Communication, {ms(a.communication_ns)}); the collectives: {_kinds_text(inp, kinds)}."
        + (" The one-off broadcast of the first step is left out (its own finding)." if casts else ""),
        why="While a collective runs with no compute beside it, the device waits for the network."
            + (" This rank is also a pipeline stage: its send / receive and the pipeline group's all-reduce are "
               "left out here (pipeline_wait, the cross-rank findings)." if pipeline else ""),
        change_torch=_INFERENCE_OVERLAP if is_inference(inp) else
        "overlap it: DDP(bucket_cap_mb=..., gradient_as_bucket_view=True), FSDP backward_prefetch / "
        "forward_prefetch; fewer syncs with gradient accumulation (model.no_sync() on all but the last "
        "micro-batch); compress gradients (DDP comm hooks, fp16 / bf16).",
        change_npu="the same with HCCL" + ("." if is_inference(inp) else "; raise HCCL_BUFFSIZE for large buckets."),
        gain_ns=a.communication_ns, gain_basis="the communication not hidden in the average step", value=share,
        figures={"comm_not_hidden_share": share, "communication_ns": a.communication_ns},
        evidence=[evidence("overview", "Communication", "Average step breakdown: Communication")] +
        [_longest_call(inp, c.kind, c.group) for c in kinds],
        figure="comm_not_hidden_share", figure_value=share, view="overview", threshold=th.COMM_NOT_HIDDEN_SHARE,
        removes=removes, removes_what=["communication"], overlap=True,
        edit="each collective started as the step's backward begins (DDP buckets / FSDP prefetch)")


def _longest_call(inp: RuleInput, kind: str, group: str, among=None):
    """Evidence: the Communication view's row, at the longest call of that collective (of `among`, when given: the
    calls a finding is about)."""
    pool = inp.digest.communication.calls if among is None else among
    calls = [c for c in pool if c.kind == kind and c.group == group]
    top = max(calls, key=lambda c: c.dur_ns, default=None)
    return evidence("communication", kind, f"{kind} {group}".strip(), timeline_name=top.op if top else "",
                    ts_ns=top.start_ns if top else -1, dur_ns=top.dur_ns if top else -1)


@rule("first_step_broadcast", "communication")
def first_step_broadcast(inp: RuleInput):
    """A parameter broadcast at the start of training (DDP / FSDP syncing the model) in the window:
    a one-off, not the communication of a training step."""
    casts = [c for c in one_off_broadcast(inp) if c.kind == "Broadcast"]
    total = int(iv.measure(calls_set(casts), [min(c.start_ns for c in casts)],
                           [max(c.start_ns + c.dur_ns for c in casts)])[0]) if casts else 0
    step_ns = inp.step_ns
    if not casts or step_ns <= 0 or total <= th.MIN_GAIN_SHARE * step_ns:
        return None
    step = min(s.number for s in inp.digest.steps)
    return Finding(
        "", "", "info", "A one-off broadcast in the first profiled step",
        f"{len(casts)} Broadcast calls take {ms(total)} from step {step}, the first step of the window, and in no "
        f"step after the next: parameters or their bucket layout synchronised at the start of training (DDP / FSDP "
        f"construction, DDP's bucket rebuild after the first iteration, a load from rank 0).",
        why="It happens once per job, not per step: it says nothing about the communication of training steps, "
            "and DDP bucket or overlap settings do not change it.",
        change_torch="profile later steps: torch.profiler.schedule(wait=N, warmup=1, active=3) with N past the "
                     "first steps; judge the communication on those.",
        change_npu="the same schedule in torch_npu.profiler.",
        gain_basis="a one-off, not a per-step cost", value=total,
        figures={"broadcast_calls": len(casts), "broadcast_ns": total},
        evidence=[_longest_call(inp, "Broadcast", casts[0].group)],
        figure="comm_total", figure_value=float(total), view="communication", removes_what=["Broadcast"])


@rule("pipeline_wait", "communication")
def pipeline_wait(inp: RuleInput):
    share = window_figures(inp.digest)["comm_not_hidden_share"]
    p2p = _p2p_share(inp)
    if share is None or share <= th.COMM_NOT_HIDDEN_SHARE or p2p <= th.P2P_WAIT_SHARE:
        return None
    a = inp.digest.average
    cols = [c for c in inp.digest.communication.collectives if is_p2p(c.kind, c.comm_type)]
    calls = [c for c in inp.digest.communication.calls if is_p2p(c.kind, c.comm_type)]
    removes = inp.category("communication")
    if removes is not None and calls:
        removes = iv.intersect(removes, calls_set(calls))
    return Finding(
        "", "", "warning", "Pipeline stages wait in send / receive",
        f"Communication not hidden by compute takes {pct(share)} of the average step (Communication), and "
        f"{pct(p2p)} of the communication time is pipeline send / receive ({_kinds_text(inp, cols[:3])}).",
        why="Time in a receive is mostly waiting for the neighbouring stage: a pipeline bubble or a stage slower "
            "than the others, not bandwidth. DDP bucket tuning does not help here.",
        change_torch="balance the layers across stages (compare the stages' compute in the cross-rank view), use "
                     "more micro-batches per step, an interleaved (virtual-stage) 1F1B schedule "
                     "(torch.distributed.pipelining ScheduleInterleaved1F1B).",
        gain_ns=a.communication_ns, gain_basis="the send / receive time not hidden in the average step", value=p2p,
        figures={"comm_not_hidden_share": share, "p2p_share": p2p},
        evidence=[_longest_call(inp, c.kind, c.group) for c in cols[:3]],
        figure="comm_not_hidden_share", figure_value=share, view="overview", threshold=th.COMM_NOT_HIDDEN_SHARE,
        removes=removes if calls else None, removes_what=["communication", "send / receive"])


@rule("small_packets", "communication")
def small_packets(inp: RuleInput):
    calls = [c for c in inp.digest.communication.calls if c.bytes > 0]
    total = sum(c.dur_ns for c in calls)
    small = [c for c in calls if c.bytes < th.SMALL_PACKET_RDMA_BYTES]
    if total <= 0 or len(small) < th.FUSION_MIN_REPEATS or sum(c.dur_ns for c in small) / total <= th.SMALL_PACKET_SHARE:
        return None
    share = sum(c.dur_ns for c in small) / total
    not_hidden = inp.category("communication")
    return Finding(
        "", "", "info", "Communication in small packets",
        f"{len(small)} of {len(calls)} communication calls move less than {th.SMALL_PACKET_RDMA_BYTES // 2 ** 20} MB "
        f"and take {pct(share)} of the communication time (Communication view, Bytes).",
        why="Small transfers pay the per-call latency and never reach the link's bandwidth.",
        change_torch="coalesce them: " + ("" if is_inference(inp) else "larger DDP buckets (bucket_cap_mb), ")
        + "torch.distributed coalescing (all_reduce_coalesced / batch_isend_irecv), fewer, larger tensors.",
        change_npu="the same with HCCL; larger HCCL_BUFFSIZE.",
        gain_ns=-1 if not_hidden is None else 0, gain_basis="at most the not hidden part of these calls", value=share,
        figures={"small_calls": len(small), "small_time_share": share},
        evidence=[_longest_call(inp, small[0].kind, small[0].group, small)],  # a small call, not a large one
        figure="comm_total", figure_value=float(sum(c.dur_ns for c in small)), view="communication",
        removes=iv.intersect(not_hidden, calls_set(small)) if not_hidden is not None else None,
        removes_what=["communication", "small calls"])


@rule("byte_alignment", "communication")
def byte_alignment(inp: RuleInput):
    """msprof-analyze's check on HCCL: data sizes not a multiple of 512 B."""
    if inp.digest.window.format != "ascend":
        return None
    # a call under BYTE_ALIGNMENT_MIN_BYTES is latency-bound (a scalar, a flag): its tail costs nothing measurable
    odd = [c for c in inp.digest.communication.calls
           if c.bytes >= th.BYTE_ALIGNMENT_MIN_BYTES and c.bytes % th.BYTE_ALIGNMENT]
    if not odd:
        return None
    odd.sort(key=lambda c: -c.dur_ns)
    return Finding(
        "", "", "info", "Communication sizes not aligned to 512 bytes",
        f"{len(odd)} communication calls move a size that is not a multiple of {th.BYTE_ALIGNMENT} B: "
        + ", ".join(f"{c.op or c.kind} ({c.bytes} B)" for c in odd[:3]) + ".",
        why="HCCL's SDMA moves 512-byte blocks: an unaligned tail costs extra transfers.",
        change_npu="pad the communicated tensors (bucket sizes) to multiples of 512 bytes.",
        gain_basis="the cost of the unaligned tail is not in the trace", value=len(odd),
        figures={"unaligned_calls": len(odd)},
        evidence=[evidence("communication", c.kind, c.op or c.kind, timeline_name=c.op, ts_ns=c.start_ns,
                           dur_ns=c.dur_ns) for c in odd[:3]],
        figure="bytes", figure_value=float(odd[0].bytes), view="communication")


@rule("low_bandwidth", "communication")
def low_bandwidth(inp: RuleInput):
    """Links of a known transport under LOW_BANDWIDTH_SHARE of its capacity, judged on transfers of
    at least LOW_BANDWIDTH_MIN_BYTES each (below, the time is latency, not bandwidth)."""
    slow = []
    for link in inp.digest.communication.links:
        cap = th.LINK_CAPACITY_GBPS.get(link.transport.upper())
        if cap and link.bytes >= th.LOW_BANDWIDTH_MIN_BYTES and 0 < link.bandwidth_gbps < th.LOW_BANDWIDTH_SHARE * cap:
            slow.append((link, cap))
    if not slow:
        return None
    slow.sort(key=lambda lc: lc[0].bandwidth_gbps / lc[1])
    link, cap = slow[0]
    return Finding(
        "", "", "warning", "Bandwidth far below the link's capacity",
        f"{len(slow)} transfers of at least {th.LOW_BANDWIDTH_MIN_BYTES // 2 ** 20} MiB run under "
        f"{pct(th.LOW_BANDWIDTH_SHARE)} of their link's nominal capacity; slowest: {link.src} -> {link.dst} over "
        f"{link.transport} at {link.bandwidth_gbps:.1f} GB/s of {cap:.0f} GB/s ({link.bytes / 2 ** 20:.1f} MiB"
        f"{' in ' + link.op if link.op else ''}).",
        why="A link that slow on large transfers points at contention or a wrong route (PCIe instead of HCCS / "
            "NVLink).",
        change_torch="check the topology (nvidia-smi topo -m), NCCL_P2P / NCCL_IB settings, and transfer sizes.",
        change_npu="check the HCCS / RDMA links (hccn_tool), HCCL_INTRA_PCIE_ENABLE / HCCL_INTRA_ROCE_ENABLE, "
                   "and transfer sizes.",
        gain_basis="the time at full bandwidth is not a bound the data gives", value=link.bandwidth_gbps / cap,
        figures={"bandwidth_gbps": link.bandwidth_gbps, "capacity_gbps": cap},
        evidence=[evidence("communication", f"{link.src}->{link.dst}", f"{link.transport} link")],
        figure="bandwidth", figure_value=link.bandwidth_gbps, view="communication",
        threshold=th.LOW_BANDWIDTH_SHARE * cap)
