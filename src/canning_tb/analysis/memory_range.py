"""The allocations of one device inside a time range, and what each operator allocated there.

`memory_range(mem, start_ns, end_ns)` reads a digest's DeviceMemory (its allocation events);
times are those of the digest (absolute ns). Without bounds the range is the whole window:
every event, and an allocation counts as freed when it is freed at all. With bounds (inclusive;
either may be None = open on that side) an event is in the range when it was allocated inside it
(events allocated before the window, alloc_ns -1, never are), and it counts as freed when its free
is inside the range too.
"""
from __future__ import annotations

from . import digest_pb2 as pb


def _inside(ts: int, start_ns: int | None, end_ns: int | None) -> bool:
    return ts >= 0 and (start_ns is None or ts >= start_ns) and (end_ns is None or ts <= end_ns)


def memory_range(mem: pb.DeviceMemory, start_ns: int | None = None, end_ns: int | None = None) -> dict:
    """{events, events_total, events_truncated, ops} of `mem` in [start_ns, end_ns].

    events: the MemoryEvent messages in the range, in digest order; events_total: how many events
    the digest keeps for the device; events_truncated: the digest kept only the largest ones.
    ops: per allocating operator {name, allocations, bytes, max_bytes, freed}, most bytes first.
    """
    whole = start_ns is None and end_ns is None
    events = [e for e in mem.events if whole or _inside(e.alloc_ns, start_ns, end_ns)]
    ops: dict[str, dict] = {}
    for event in events:
        row = ops.setdefault(event.op, {"name": event.op, "allocations": 0, "bytes": 0, "max_bytes": 0, "freed": 0})
        row["allocations"] += 1
        row["bytes"] += event.bytes
        row["max_bytes"] = max(row["max_bytes"], event.bytes)
        if event.free_ns >= 0 and (whole or _inside(event.free_ns, start_ns, end_ns)):
            row["freed"] += 1
    return {"events": events, "events_total": len(mem.events), "events_truncated": mem.events_truncated,
            "ops": sorted(ops.values(), key=lambda r: (-r["bytes"], r["name"]))}
