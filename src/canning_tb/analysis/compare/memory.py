"""Memory of two sides: peaks per device and the allocated-bytes curves on a step-aligned axis.

Devices are paired by role: CPU with CPU, and the accelerators in their order ("cuda:0" with
"npu:0"). A side of several windows shows its first window's curve (curves of different windows
are not one timeline); the peak is the highest over its windows.

Step-aligned axis: an instant inside step i (0-based, in window order) is at i + its fraction of
that step; before the first step it is measured in first-step lengths (negative), after the last
in last-step lengths (beyond the step count). So two windows with different step times overlay
step on step. A window without steps falls back to the time from its start, in units of the
whole window (0..1).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

from .side import Side


@dataclass
class MemoryPair:
    device: str                     # "cuda:0" or "cuda:0 / npu:0" when the names differ
    base_device: str
    target_device: str
    base_peak_bytes: int            # -1: the side has no such device
    target_peak_bytes: int
    ratio: float | None             # target / base peak
    base_x: list[float]             # step-aligned axis
    base_bytes: list[int]
    target_x: list[float]
    target_bytes: list[int]


def _devices(side: Side) -> dict[str, list]:
    """role -> [DeviceMemory of each window] where role is "CPU" or "accelerator N"."""
    roles: dict[str, list] = {}
    for digest in side.digests:
        accelerators = [m for m in digest.memory if m.device.upper() != "CPU"]
        for mem in digest.memory:
            role = "CPU" if mem.device.upper() == "CPU" else f"accelerator {accelerators.index(mem)}"
            roles.setdefault(role, []).append((digest, mem))
    return roles


def step_axis(digest, timestamps) -> list[float]:
    """`timestamps` (profiler clock ns) on the step-aligned axis of the module doc."""
    steps = [s for s in digest.steps if s.dur_ns > 0]
    if not steps:
        start, span = digest.window.start_ns, max(1, digest.window.end_ns - digest.window.start_ns)
        return [(ts - start) / span for ts in timestamps]
    starts = [s.start_ns for s in steps]
    out = []
    for ts in timestamps:
        index = min(max(bisect.bisect_right(starts, ts) - 1, 0), len(steps) - 1)
        out.append(index + (ts - steps[index].start_ns) / steps[index].dur_ns)
    return out


def memory_pairs(base: Side, target: Side) -> list[MemoryPair]:
    was, now = _devices(base), _devices(target)
    pairs = []
    for role in sorted(was.keys() | now.keys(), key=lambda r: (r == "CPU", r)):
        left, right = was.get(role, []), now.get(role, [])
        peaks = [max((m.peak_allocated_bytes for _, m in side), default=-1) for side in (left, right)]
        names = [side[0][1].device if side else "" for side in (left, right)]
        curves = [(step_axis(side[0][0], side[0][1].curve_ts_ns), list(side[0][1].curve_allocated_bytes))
                  if side else ([], []) for side in (left, right)]
        pairs.append(MemoryPair(
            device=names[0] if names[0] == names[1] or not names[1] else " / ".join(n for n in names if n),
            base_device=names[0], target_device=names[1], base_peak_bytes=peaks[0], target_peak_bytes=peaks[1],
            ratio=peaks[1] / peaks[0] if peaks[0] > 0 and peaks[1] >= 0 else None,
            base_x=curves[0][0], base_bytes=curves[0][1], target_x=curves[1][0], target_bytes=curves[1][1]))
    return pairs
