"""Rule hits: facts for the suggestions engine, computed from a Digest only.

Each rule has a stable id, a threshold and a value; a hit is written when the value crosses the
threshold. Thresholds follow the peers where they have one (torch-tb-profiler: dataloader > 5 %,
communication > 10 %, GPU utilisation < 50 %, peak memory > 90 % of capacity; msprof-analyze:
AI_CPU task >= 20 us); the others are ours and stated here.
"""
from __future__ import annotations

from . import digest_pb2 as pb
from .kernels import CORE_ELIGIBLE, CORE_TENSOR
from .summary import has_device_work, step_shares

DATALOADER_SHARE = 0.05
COMM_NOT_OVERLAPPED_SHARE = 0.10
DEVICE_IDLE_SHARE = 0.50
PEAK_MEMORY_SHARE = 0.90
RUNTIME_SHARE = 0.10  # launch-bound: runtime API time (device idle) over step time
DEVICE_WAIT_SHARE = 0.10  # the host blocked waiting for the device (synchronising calls) over step time
TC_ELIGIBLE_SHARE = 0.10  # kernel time under Tensor-Core-eligible operators that could use them
TF32_CC = 8.0  # TF32 exists from compute capability 8.0 (Ampere) on
# breakdown field -> the name the overview's "Average step breakdown" shows it under
CATEGORY_LABELS = {"compute_ns": "Compute", "overlapped_ns": "Overlapped", "communication_ns": "Communication",
                   "memcpy_ns": "Memcpy", "memset_ns": "Memset", "device_wait_ns": "Device wait",
                   "runtime_ns": "Runtime", "dataloader_ns": "DataLoader", "host_ns": "Host", "idle_ns": "Idle (nothing recorded)"}
_NOT_DEVICE = ("device_wait_ns", "runtime_ns", "dataloader_ns", "host_ns", "idle_ns")
TINY_KERNEL_NS = 10_000  # "many tiny kernels": mean kernel time under 10 us ...
TINY_KERNEL_MIN_CALLS = 1000  # ... over at least this many kernels
AI_CPU_NS = 20_000
HOST_SHARE = 0.50


def _cc(s: str) -> float:
    try:
        return float(s)
    except (TypeError, ValueError):
        return 0.0


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _shares(a: pb.Breakdown, fields) -> str:
    """'Runtime 12.0%, Host 30.1%' : the named columns' shares of the average step."""
    return ", ".join(f"{CATEGORY_LABELS[f]} {_pct(getattr(a, f) / a.total_ns)}" for f in fields)


def _device_rules(a: pb.Breakdown, hit) -> None:
    """Rules on how the average step of a window with device work spends the device's time."""
    total = a.total_ns
    idle = step_shares(a, True)["device_idle_share"] or 0.0  # the Overview's "Device idle" figure
    if idle > DEVICE_IDLE_SHARE:
        hit("device_idle", "warning", "The device has no work most of the step",
            f"Device idle {_pct(idle)}: the device has no work in that share of the average step: "
            f"{_shares(a, [f for f in _NOT_DEVICE if getattr(a, f) > 0])}. "
            f"Increase the batch size, or remove the host-side bottleneck named there.", idle)
    wait = a.device_wait_ns / total
    if wait > DEVICE_WAIT_SHARE:
        hit("device_wait", "warning", "The host waits for the device",
            f"Calls that block the host until the device is done (synchronize, blocking device-to-host copies "
            f"such as .item(), .cpu() or .tolist(), cudaFree) take {_pct(wait)} of the average step (Device wait). "
            f"Keep values on the device, read them less often, copy with non_blocking=True into pinned memory, "
            f"and avoid freeing/reallocating device memory inside the loop.", wait)
    runtime = a.runtime_ns / total
    if runtime > RUNTIME_SHARE:
        hit("launch_bound", "warning", "Kernel launches dominate",
            f"Runtime/launch API calls with the device idle take {_pct(runtime)} of the average step (Runtime). "
            f"Fuse small operators (torch.compile), use CUDA/NPU graphs, or larger batches.", runtime)
    host = (a.host_ns + a.runtime_ns) / total
    if host > HOST_SHARE and idle > DEVICE_IDLE_SHARE:
        hit("host_bound", "warning", "The step is host-bound",
            f"Host operators and launches run while the device has no work: {_shares(a, ['host_ns', 'runtime_ns'])} "
            f"of the average step. Move work off the Python thread, use torch.compile or graphs.", host)


def _tensor_core_rule(d: pb.Digest, hit) -> None:
    """Kernels under Tensor-Core-eligible operators, none on Tensor Cores (GPU, Volta on)."""
    cores = {c.core: c.total_ns for c in d.cores}
    kernel_total = sum(cores.values())
    ccs = [_cc(dv.compute_capability) for dv in d.window.devices if dv.kind == "cuda"]
    if CORE_TENSOR not in cores or cores[CORE_TENSOR] > 0 or kernel_total <= 0 or max(ccs, default=0) < 7.0:
        return
    share = cores.get(CORE_ELIGIBLE, 0) / kernel_total
    if share <= TC_ELIGIBLE_SHARE:
        return
    how = "mixed precision (torch.autocast)"
    if max(ccs) >= TF32_CC:
        how += " or TF32 (torch.backends.cuda.matmul.allow_tf32 = True)"
    hit("tensor_cores_unused", "info", "Tensor Cores are not used",
        f"Kernels of Tensor-Core-eligible operators take {_pct(share)} of the kernel time ({CORE_ELIGIBLE}), "
        f"yet no kernel uses Tensor Cores. Enable {how}.", share)


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
                f"Data loading takes {_pct(dl)} of the average step (DataLoader), {a.dataloader_ns / 1e6:.3f} ms of "
                f"{total / 1e6:.3f} ms. Use more DataLoader workers (num_workers), pin_memory=True, or prefetch.", dl)
        if has_device:
            _device_rules(a, hit)
        comm = a.communication_ns / total
        if comm > COMM_NOT_OVERLAPPED_SHARE:
            hit("communication_not_overlapped", "warning", "Communication is not hidden by compute",
                f"Communication not overlapped by compute takes {_pct(comm)} of the average step (Communication). "
                f"Overlap it (DDP bucket size, FSDP prefetch), use gradient accumulation or compression.", comm)
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
                    f"Peak allocated memory on {m.device} is {_pct(m.peak_allocated_bytes / m.capacity_bytes)} of "
                    f"its capacity (Memory peak), {m.peak_reserved_bytes / 2 ** 30:.2f} GiB reserved of "
                    f"{m.capacity_bytes / 2 ** 30:.2f} GiB. Use activation checkpointing, mixed precision, "
                    f"or a smaller batch.", r)
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
    _tensor_core_rule(d, hit)
    return hits
