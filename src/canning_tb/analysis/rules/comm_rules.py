"""Communication of one window: not hidden by compute vs pipeline send / receive waits, small
packets, unaligned sizes, bandwidth far below the link's capacity."""
from __future__ import annotations

from ..summary import window_figures
from . import thresholds as th
from .engine import RuleInput, rule
from .finding import Finding, evidence, ms, pct

P2P_KINDS = {"send", "recv", "sendrecv", "batchsendrecv", "isend", "irecv", "receive"}


def is_p2p(kind: str, comm_type: str) -> bool:
    return comm_type == "p2p" or kind.lower() in P2P_KINDS


def _p2p_share(inp: RuleInput) -> float:
    """Share of the window's communication time in pipeline send / receive."""
    cols = inp.digest.communication.collectives
    total = sum(c.total_ns for c in cols)
    return sum(c.total_ns for c in cols if is_p2p(c.kind, c.comm_type)) / total if total > 0 else 0.0


@rule("communication_not_overlapped", "communication")
def communication_not_overlapped(inp: RuleInput):
    share = window_figures(inp.digest)["comm_not_hidden_share"]
    if share is None or share <= th.COMM_NOT_HIDDEN_SHARE or _p2p_share(inp) > th.P2P_WAIT_SHARE:
        return None
    a = inp.digest.average
    kinds = sorted(inp.digest.communication.collectives, key=lambda c: -c.total_ns)[:3]
    return Finding(
        "", "", "warning", "Communication is not hidden by compute",
        f"Communication not hidden by compute takes {pct(share)} of the average step "
        f"(Communication, {ms(a.communication_ns)}); most time in "
        f"{', '.join(f'{c.kind} ({ms(c.total_ns)})' for c in kinds)}.",
        why="While a collective runs with no compute beside it, the device waits for the network.",
        change_torch="overlap it: DDP(bucket_cap_mb=..., gradient_as_bucket_view=True), FSDP backward_prefetch / "
                     "forward_prefetch; fewer syncs with gradient accumulation (model.no_sync() on all but the last "
                     "micro-batch); compress gradients (DDP comm hooks, fp16 / bf16).",
        change_npu="the same with HCCL; raise HCCL_BUFFSIZE for large buckets.",
        gain_ns=a.communication_ns, gain_basis="the communication not hidden in the average step", value=share,
        figures={"comm_not_hidden_share": share, "communication_ns": a.communication_ns},
        evidence=[evidence("overview", "Communication", "Average step breakdown: Communication")] +
        [evidence("communication", c.kind, f"{c.kind} {c.group}", timeline_name="") for c in kinds])


@rule("pipeline_wait", "communication")
def pipeline_wait(inp: RuleInput):
    share = window_figures(inp.digest)["comm_not_hidden_share"]
    p2p = _p2p_share(inp)
    if share is None or share <= th.COMM_NOT_HIDDEN_SHARE or p2p <= th.P2P_WAIT_SHARE:
        return None
    a = inp.digest.average
    cols = [c for c in inp.digest.communication.collectives if is_p2p(c.kind, c.comm_type)]
    return Finding(
        "", "", "warning", "Pipeline stages wait in send / receive",
        f"Communication not hidden by compute takes {pct(share)} of the average step (Communication), and "
        f"{pct(p2p)} of the communication time is pipeline send / receive "
        f"({', '.join(f'{c.kind} {ms(c.total_ns)}' for c in cols[:3])}).",
        why="Time in a receive is mostly waiting for the neighbouring stage: a pipeline bubble or a stage slower "
            "than the others, not bandwidth. DDP bucket tuning does not help here.",
        change_torch="balance the layers across stages (compare the stages' compute in the cross-rank view), use "
                     "more micro-batches per step, an interleaved (virtual-stage) 1F1B schedule "
                     "(torch.distributed.pipelining ScheduleInterleaved1F1B).",
        gain_ns=a.communication_ns, gain_basis="the communication not hidden in the average step", value=p2p,
        figures={"comm_not_hidden_share": share, "p2p_share": p2p},
        evidence=[evidence("communication", c.kind, f"{c.kind} {c.group}") for c in cols[:3]])


@rule("small_packets", "communication")
def small_packets(inp: RuleInput):
    calls = [c for c in inp.digest.communication.calls if c.bytes > 0]
    total = sum(c.dur_ns for c in calls)
    small = [c for c in calls if c.bytes < th.SMALL_PACKET_RDMA_BYTES]
    if total <= 0 or len(small) < th.FUSION_MIN_REPEATS or sum(c.dur_ns for c in small) / total <= th.SMALL_PACKET_SHARE:
        return None
    share = sum(c.dur_ns for c in small) / total
    return Finding(
        "", "", "info", "Communication in small packets",
        f"{len(small)} of {len(calls)} communication calls move less than {th.SMALL_PACKET_RDMA_BYTES // 2 ** 20} MB "
        f"and take {pct(share)} of the communication time (Communication view, Bytes).",
        why="Small transfers pay the per-call latency and never reach the link's bandwidth.",
        change_torch="coalesce them: larger DDP buckets (bucket_cap_mb), torch.distributed coalescing "
                     "(all_reduce_coalesced / batch_isend_irecv), fewer, larger tensors.",
        change_npu="the same with HCCL; larger HCCL_BUFFSIZE.",
        gain_basis="latency per call is not in the trace", value=share,
        figures={"small_calls": len(small), "small_time_share": share},
        evidence=[evidence("communication", small[0].kind, f"{small[0].kind} {small[0].group}")])


@rule("byte_alignment", "communication")
def byte_alignment(inp: RuleInput):
    """msprof-analyze's check on HCCL: data sizes not a multiple of 512 B."""
    if inp.digest.window.format != "ascend":
        return None
    odd = [c for c in inp.digest.communication.calls if c.bytes > 0 and c.bytes % th.BYTE_ALIGNMENT]
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
        evidence=[evidence("communication", c.kind, c.op or c.kind, timeline_name=c.op) for c in odd[:3]])


@rule("low_bandwidth", "communication")
def low_bandwidth(inp: RuleInput):
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
        f"{len(slow)} links run under {pct(th.LOW_BANDWIDTH_SHARE)} of their nominal capacity; slowest: "
        f"{link.src} -> {link.dst} over {link.transport} at {link.bandwidth_gbps:.1f} GB/s of {cap:.0f} GB/s.",
        why="A link that slow points at contention, a wrong route (PCIe instead of HCCS / NVLink), or small "
            "transfers.",
        change_torch="check the topology (nvidia-smi topo -m), NCCL_P2P / NCCL_IB settings, and transfer sizes.",
        change_npu="check the HCCS / RDMA links (hccn_tool), HCCL_INTRA_PCIE_ENABLE / HCCL_INTRA_ROCE_ENABLE, "
                   "and transfer sizes.",
        gain_basis="the time at full bandwidth is not a bound the data gives", value=link.bandwidth_gbps / cap,
        figures={"bandwidth_gbps": link.bandwidth_gbps, "capacity_gbps": cap},
        evidence=[evidence("communication", f"{link.src}->{link.dst}", f"{link.transport} link")])
