"""A window's devices (Meta.devices) made to fit what the digest holds: a device index is an int32 from 0,
a memory size an int64 count of bytes. A number a file gives beyond that (deviceProperties' id 2**70, a
manifest's or a db's device id, totalGlobalMem 2**80) cannot be an index or a size: it is read as unknown
(-1: the device's index, NONE: its memory), said once per file as a warning, and the device (its name, kind
and the rest) and the window stay readable. Without this such a number stops the digest with a bare
"Value out of range" of protobuf, the window's every view a 500."""
from __future__ import annotations

from .table import NONE, Problem

INDEX_MAX = (1 << 31) - 1  # Device.index: int32
BYTES_MAX = (1 << 63) - 1  # Device.memory_bytes: int64
UNKNOWN_INDEX = -1


def _fits(value, lo: int, hi: int) -> bool:
    return not isinstance(value, int) or isinstance(value, bool) or lo <= value <= hi


def fit_devices(devices: list[dict], file: str, problems: list) -> list[dict]:
    """`devices` with each index and memory that cannot be one read as unknown; a warning in `problems`."""
    out, bad = [], []
    for dev in devices:
        dev = dict(dev)
        if not _fits(dev.get("index"), UNKNOWN_INDEX, INDEX_MAX):
            bad.append(f"device index {shown_int(dev['index'])} is no index (0 to {INDEX_MAX})")
            dev["index"] = UNKNOWN_INDEX
        if not _fits(dev.get("memory"), NONE, BYTES_MAX):
            bad.append(f"device memory {shown_int(dev['memory'])} is no size in bytes")
            dev["memory"] = NONE
        out.append(dev)
    if bad:
        more = f" (and {len(bad) - 2} more)" if len(bad) > 2 else ""
        problems.append(Problem(file, f"{'; '.join(bad[:2])}{more}: read as unknown", "warning"))
    return out


def shown_int(value: int) -> str:
    """An int as a message shows it: a huge one (or a reader's stand-in for a digit string too long to
    convert) by its size only; str() of it is slow, and refused past 4,300 digits."""
    if abs(value).bit_length() > 128:
        return "of more than 38 digits"
    text = str(value)
    return text if len(text) <= 24 else f"{text[:10]}...({len(text)} digits)"
