"""The allocation timeline as bands: the traced allocations alive in a range of the history, the largest
`limit` of them, each a band from its alloc entry to its free entry (the history's end when never freed), laid
on lanes so that no two bands of a lane overlap (the first free lane, in alloc order), coloured by top user frame.
Bounded on the server as the timeline's tiles are: a history of millions of entries never reaches the browser."""
from __future__ import annotations

import heapq

import numpy as np

from canning_tb.ingest.snapshot.model import Snapshot

from .frames import frame_text, top_user_frames, user_frames
from .replay import Replay


def bands(s: Snapshot, r: Replay, start: int, end: int, limit: int = 1000) -> dict:
    start, end = max(0, start), min(end, r.n - 1)
    sizes = np.maximum(s.tr_size[r.rows[r.allocs]], 0)
    alive = np.nonzero((r.allocs <= end) & (r.freed_at >= start))[0] if r.n and end >= start else np.zeros(0, int)
    order = np.lexsort((alive, -sizes[alive]))[:limit]
    pick = np.sort(alive[order])  # by alloc entry
    alloc, free = r.allocs[pick], r.freed_at[pick]
    tops = top_user_frames(s, s.tr_stack[r.rows[alloc]], user_frames(s))
    frames: dict[int, int] = {}
    frame_idx = [frames.setdefault(f, len(frames)) for f in tops]
    lanes: list[int] = []
    free_lanes: list[int] = []  # heap of lanes free again
    ends: list[tuple[int, int]] = []  # heap of (free entry, lane) of the bands still open
    used = 0
    for a, f in zip(alloc.tolist(), free.tolist()):
        while ends and ends[0][0] < a:
            heapq.heappush(free_lanes, heapq.heappop(ends)[1])
        if free_lanes:
            lane = heapq.heappop(free_lanes)
        else:
            lane, used = used, used + 1
        lanes.append(lane)
        heapq.heappush(ends, (f, lane))
    return {"start_entry": start, "end_entry": end, "entries": r.n, "alive": int(len(alive)), "shown": int(len(pick)),
            "alive_bytes": int(sizes[alive].sum()), "shown_bytes": int(sizes[pick].sum()),
            "lanes": used,
            "frames": [frame_text(s, f) for f in frames],
            "alloc": alloc.tolist(), "free": free.tolist(), "bytes": sizes[pick].tolist(), "frame": frame_idx,
            "lane": lanes}
