"""Rule hits: facts for the suggestions engine, computed from a Digest only.

Each rule has a stable id, a threshold and a value; a hit is written when the value crosses the
threshold. Thresholds follow the peers where they have one (torch-tb-profiler: dataloader > 5 %,
communication > 10 %, GPU utilisation < 50 %, peak memory > 90 % of capacity; msprof-analyze:
AI_CPU task >= 20 us); the others are ours and stated here.
"""
from __future__ import annotations

from . import digest_pb2 as pb
from .summary import has_device_work

DATALOADER_SHARE = 0.05
COMM_NOT_OVERLAPPED_SHARE = 0.10
DEVICE_IDLE_SHARE = 0.50
PEAK_MEMORY_SHARE = 0.90
RUNTIME_SHARE = 0.10  # launch-bound: runtime API time (device idle) over step time
TINY_KERNEL_NS = 10_000  # "many tiny kernels": mean kernel time under 10 us ...
TINY_KERNEL_MIN_CALLS = 1000  # ... over at least this many kernels
AI_CPU_NS = 20_000
HOST_SHARE = 0.50


def _device_share(b: pb.Breakdown) -> float:
    busy = b.compute_ns + b.overlapped_ns + b.communication_ns + b.memcpy_ns + b.memset_ns
    return busy / b.total_ns if b.total_ns else 0.0


def _cc(s: str) -> float:
    try:
        return float(s)
    except (TypeError, ValueError):
        return 0.0


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def rule_hits(d: pb.Digest) -> list:
    hits = []
    a = d.average
    total = a.total_ns
    has_device = has_device_work(d)

    def hit(rule, severity, title, detail, value):
        hits.append(pb.RuleHit(rule=rule, severity=severity, title=title, detail=detail, value=float(value)))

    if total > 0:
        dl = a.dataloader_ns / total
        if dl > DATALOADER_SHARE:
            hit("dataloader_share", "warning", "Data loading takes a large share of the step",
                f"The DataLoader takes {_pct(dl)} of the average step ({a.dataloader_ns / 1e6:.3f} ms of "
                f"{total / 1e6:.3f} ms). Use more DataLoader workers (num_workers), pin_memory=True, or prefetch.", dl)
        if has_device:
            idle = 1.0 - _device_share(a)
            if idle > DEVICE_IDLE_SHARE:
                hit("device_idle", "warning", "The device is idle most of the step",
                    f"The device is busy only {_pct(1 - idle)} of the average step (idle {_pct(idle)}). "
                    f"Increase the batch size, or remove host-side bottlenecks.", idle)
            rt = a.runtime_ns / total
            if rt > RUNTIME_SHARE:
                hit("launch_bound", "warning", "Kernel launches dominate",
                    f"Runtime/launch API calls with the device idle take {_pct(rt)} of the step. "
                    f"Fuse small operators (torch.compile), use CUDA/NPU graphs, or larger batches.", rt)
            host = (a.host_ns + a.runtime_ns) / total
            if host > HOST_SHARE and idle > DEVICE_IDLE_SHARE:
                hit("host_bound", "warning", "The step is host-bound",
                    f"Host operators run while the device waits for {_pct(host)} of the step. "
                    f"Move work off the Python thread, use torch.compile or graphs.", host)
    share = d.communication.not_overlapped_share
    if share > COMM_NOT_OVERLAPPED_SHARE:
        hit("communication_not_overlapped", "warning", "Communication is not hidden by compute",
            f"Communication not overlapped with compute takes {_pct(share)} of the step time. "
            f"Overlap it (DDP bucket size, FSDP prefetch), use gradient accumulation or compression.", share)
    kcalls = sum(k.calls for k in d.kernels_by_name if not k.communication)
    ktime = sum(k.total_ns for k in d.kernels_by_name if not k.communication)
    if kcalls >= TINY_KERNEL_MIN_CALLS and ktime / kcalls < TINY_KERNEL_NS:
        mean = ktime / kcalls
        hit("tiny_kernels", "info", "Many tiny kernels",
            f"{kcalls} kernels with a mean of {mean / 1000:.1f} us each; launch overhead may dominate. "
            f"Fuse operators (torch.compile) or use larger batches.", mean)
    for m in d.memory:
        if m.capacity_bytes > 0 and m.peak_allocated_bytes > 0:
            r = max(m.peak_allocated_bytes, m.peak_reserved_bytes) / m.capacity_bytes
            if r > PEAK_MEMORY_SHARE:
                hit("peak_memory", "warning", f"Memory of {m.device} is nearly full",
                    f"Peak memory on {m.device} is {_pct(r)} of its capacity. Use activation checkpointing, "
                    f"mixed precision, or a smaller batch.", r)
    n_empty = max((m.empty_cache_calls for m in d.memory), default=0)
    if n_empty > 0:
        hit("empty_cache", "warning", "empty_cache is called",
            f"empty_cache was called {n_empty} times in the window. It frees cached blocks that the allocator "
            f"then has to get back, slowing the following steps; remove it from the training loop.", n_empty)
    ai_cpu = [k for k in d.kernels_by_name if k.core.upper() == "AI_CPU" and k.max_ns >= AI_CPU_NS]
    if ai_cpu:
        worst = max(ai_cpu, key=lambda k: k.max_ns)
        names = ", ".join(k.name for k in sorted(ai_cpu, key=lambda k: -k.total_ns)[:5])
        hit("ai_cpu", "warning", "Operators run on AI_CPU",
            f"{len(ai_cpu)} operators run as AI_CPU tasks of at least 20 us (longest {worst.max_ns / 1000:.1f} us): "
            f"{names}. Change their data types (e.g. double -> float) or shapes so they run on AI Core.",
            worst.max_ns)
    # Tensor Cores: eligible ops with device time but no Tensor Core kernels (GPU only)
    tc_total = sum(c.total_ns for c in d.cores if c.core == "Tensor Cores")
    elig = sum(o.device_total_ns for o in d.ops_by_name if o.tc_eligible)
    dev_total = sum(k.total_ns for k in d.kernels_by_name)
    volta_plus = any(dv.kind == "cuda" and _cc(dv.compute_capability) >= 7.0 for dv in d.window.devices)
    if volta_plus and any(c.core == "Tensor Cores" for c in d.cores) and tc_total == 0 and dev_total > 0 and elig / dev_total > 0.1:
        hit("tensor_cores_unused", "info", "Tensor Cores are not used",
            f"Operators eligible for Tensor Cores take {_pct(elig / dev_total)} of the device time, yet no kernel "
            f"uses Tensor Cores. Enable mixed precision (torch.autocast) or TF32.", elig / dev_total)
    return hits
