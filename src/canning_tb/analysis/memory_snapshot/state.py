"""The allocator's state: reserved against allocated bytes, fragmentation, the largest free block.

At the snapshot itself it is read from the segments and their blocks (exact). At an earlier entry it is
rebuilt: the segments' address ranges are the snapshot's, with the segment events after the entry undone, and the
blocks alive there (traced, or from before the history) are placed in them. The trace gives the bytes a tensor
asked for, not its block's rounded size, so the largest gap between them is an upper bound of the largest free
block (`largest_free_block_at_most`), never stated as the block itself. Expandable segments are ranges mapped
piece by piece; adjacent pieces are one segment.

Fragmentation is one figure everywhere: the share of reserved bytes that no tensor asked for (1 - requested /
reserved: free blocks and rounding both), -1 (unknown) with nothing reserved.
"""
from __future__ import annotations

import numpy as np

from canning_tb.ingest.snapshot.model import ACTION, STATE, Snapshot

from .replay import ACTIVE, Replay, alive_at, before_alive_at, device_blocks

_UP = (ACTION["segment_alloc"], ACTION["segment_map"])
_DOWN = (ACTION["segment_free"], ACTION["segment_unmap"])


def _fragmentation(allocated: int, reserved: int) -> float:
    """Share of reserved bytes not allocated; -1 (unknown) with nothing reserved."""
    return round(1.0 - allocated / reserved, 6) if reserved > 0 else -1.0


def at_snapshot(s: Snapshot, device: int) -> dict:
    """The state the snapshot recorded, from its segments and blocks."""
    segs = np.nonzero(s.seg_device == device)[0]
    blocks = device_blocks(s, device)
    inactive = blocks[s.blk_state[blocks] == STATE["inactive"]]
    active = blocks[np.isin(s.blk_state[blocks], ACTIVE)]
    reserved = int(np.maximum(s.seg_total[segs], 0).sum())
    allocated = int(np.maximum(s.seg_allocated[segs], 0).sum())
    requested = int(np.where(s.blk_requested[active] >= 0, s.blk_requested[active],
                             np.maximum(s.blk_size[active], 0)).sum())
    return {"segments": int(len(segs)), "expandable_segments": int(s.seg_expandable[segs].sum()),
            "reserved": reserved, "allocated": allocated, "requested": requested,
            "active": int(np.maximum(s.seg_active[segs], 0).sum()),
            "free": reserved - allocated, "fragmentation": _fragmentation(requested, reserved),
            "largest_free_block": int(s.blk_size[inactive].max()) if len(inactive) else 0,
            "free_blocks": int(len(inactive)),
            "blocks": int(len(blocks))}


def _ranges_at(s: Snapshot, r: Replay, pos: int) -> list[list[int]]:
    """[start, end) of the segments just after entry `pos`: the snapshot's segments with every segment event
    after `pos` undone; the pieces of an expandable segment (segment_map / segment_unmap) that touch are one."""
    segs = np.nonzero(s.seg_device == r.device)[0]
    pieces = [[int(s.seg_address[i]), int(s.seg_address[i] + max(s.seg_total[i], 0)), bool(s.seg_expandable[i])]
              for i in segs]
    act = s.tr_action[r.rows]
    later = np.nonzero(np.isin(act, _UP + _DOWN))[0]
    for p in later[later > pos][::-1].tolist():
        a, n = int(s.tr_addr[r.rows[p]]), int(max(s.tr_size[r.rows[p]], 0))
        mapped = act[p] in (ACTION["segment_map"], ACTION["segment_unmap"])
        if act[p] in _UP:  # made after pos: not there yet
            pieces = _subtract(pieces, a, a + n)
        else:  # released after pos: still there
            pieces.append([a, a + n, mapped])
    return [[a, b] for a, b, _ in _merge(pieces)]


def _merge(pieces: list[list]) -> list[list]:
    out: list[list] = []
    for a, b, grows in sorted(pieces):
        if b <= a:
            continue
        if out and grows and out[-1][2] and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b, grows])
    return out


def _subtract(pieces: list[list], a: int, b: int) -> list[list]:
    out = []
    for x, y, grows in pieces:
        if y <= a or x >= b:
            out.append([x, y, grows])
            continue
        if x < a:
            out.append([x, a, grows])
        if y > b:
            out.append([b, y, grows])
    return out


def at_entry(s: Snapshot, r: Replay, pos: int) -> dict:
    """The state just after entry `pos` of the device's trace (module doc)."""
    ranges = _ranges_at(s, r, pos)
    alive = alive_at(r, pos)
    before = before_alive_at(r, pos)
    rows = r.rows[r.allocs[alive]]
    starts = np.concatenate([s.tr_addr[rows], r.before_addr[before]])
    ends = starts + np.concatenate([np.maximum(s.tr_size[rows], 0), r.before_size[before]])
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    largest, gaps = 0, 0
    for lo, hi in ranges:
        i = np.searchsorted(starts, lo, side="left")
        j = np.searchsorted(starts, hi, side="left")
        cursor = lo
        for a, b in zip(starts[i:j].tolist(), ends[i:j].tolist()):
            if a > cursor:
                largest, gaps = max(largest, a - cursor), gaps + 1
            cursor = max(cursor, b)
        if hi > cursor:
            largest, gaps = max(largest, hi - cursor), gaps + 1
    requested, reserved = int(r.live[pos]), int(r.reserved[pos])
    return {"entry": pos, "time_us": int(s.tr_time_us[r.rows[pos]]), "segments": len(ranges),
            "reserved": reserved, "requested": requested,
            "fragmentation": _fragmentation(requested, reserved), "largest_free_block_at_most": largest, "free_ranges": gaps,
            "blocks": int(len(alive) + len(before))}
