"""The peak of requested (allocated) bytes in the trace and the blocks alive at it, grouped by top user frame and by stack."""
from __future__ import annotations

import numpy as np

from canning_tb.ingest.snapshot.model import Snapshot

from .frames import frame_text, stack_text, top_user_frames, user_frames
from .replay import Replay, alive_at, before_alive_at


def peak_position(r: Replay) -> int:
    """The first entry after which allocated bytes are highest; -1 with no entries."""
    return int(np.argmax(r.live)) if r.n else -1


def groups(s: Snapshot, r: Replay, alive: np.ndarray, limit: int = 20) -> dict:
    """Bytes of the traced allocations `alive` (indices into r.allocs) by top user frame and by stack, the
    biggest first, at most `limit` of each."""
    rows = r.rows[r.allocs[alive]]
    sizes = np.maximum(s.tr_size[rows], 0)
    stacks = s.tr_stack[rows].astype(np.int64)
    user = user_frames(s)
    tops = np.array(top_user_frames(s, stacks, user), dtype=np.int64)
    out = {}
    for name, keys in (("by_frame", tops), ("by_stack", stacks)):
        uniq, inv = np.unique(keys, return_inverse=True)
        total = np.bincount(inv, weights=sizes, minlength=len(uniq)).astype(np.int64)
        count = np.bincount(inv, minlength=len(uniq))
        order = np.lexsort((uniq, -total))[:limit]
        items = []
        for k in order.tolist():
            key = int(uniq[k])
            item = {"bytes": int(total[k]), "blocks": int(count[k])}
            if name == "by_frame":
                item["frame"] = frame_text(s, key)
            else:
                item["stack_id"] = key
                item["frame"] = frame_text(s, top_user_frames(s, [key], user)[0])
                item["stack"] = stack_text(s, key)
            items.append(item)
        out[name] = items
        out[name + "_groups"] = len(uniq)
    return out


def top_blocks(s: Snapshot, r: Replay, alive: np.ndarray, limit: int = 20) -> list[dict]:
    """The biggest traced allocations in `alive`, with their stacks."""
    rows = r.rows[r.allocs[alive]]
    sizes = np.maximum(s.tr_size[rows], 0)
    order = np.lexsort((rows, -sizes))[:limit]
    user = user_frames(s)
    out = []
    for k in order.tolist():
        row, sid = int(rows[k]), int(s.tr_stack[rows[k]])
        out.append({"entry": int(r.allocs[alive[k]]), "addr": int(s.tr_addr[row]), "bytes": int(sizes[k]),
                    "time_us": int(s.tr_time_us[row]), "frame": frame_text(s, top_user_frames(s, [sid], user)[0]),
                    "stack": stack_text(s, sid)})
    return out


def peak(s: Snapshot, r: Replay, limit: int = 20) -> dict:
    """The peak: where (entry, time when known), allocated and reserved bytes there, the blocks alive at it by
    frame and stack, the biggest of them, and the bytes allocated before the history began (no stack)."""
    pos = peak_position(r)
    if pos < 0:
        return {"entry": -1, "requested": r.live_end, "reserved": r.reserved_end, "before_history": r.live_end,
                "by_frame": [], "by_stack": [], "top_blocks": []}
    alive = alive_at(r, pos)
    before = before_alive_at(r, pos)
    out = {"entry": pos, "time_us": int(s.tr_time_us[r.rows[pos]]), "requested": int(r.live[pos]),
           "reserved": int(r.reserved[pos]), "traced_blocks": int(len(alive)),
           "before_history": int(r.before_size[before].sum())}
    out.update(groups(s, r, alive, limit))
    out["top_blocks"] = top_blocks(s, r, alive, limit)
    return out
