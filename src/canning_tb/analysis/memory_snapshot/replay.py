"""The trace entries of one device replayed in the allocator's order.

Live (allocated) bytes change at `alloc` (+size) and `free_completed` (-size), as PyTorch's own memory_viz
counts them. A trace entry's size is the size the tensor asked for (a block's `requested_size`: the block itself is
rounded up, on Ascend to 512 bytes after 32 of padding), so live bytes are requested bytes throughout; reserved bytes at `segment_alloc` / `segment_map` (+) and `segment_free` / `segment_unmap` (-).
Both are anchored at the snapshot's own end state (the blocks still active, the segments' sizes), so bytes that
were allocated before the history began (or before its ring buffer wrapped) are counted, as `before` bytes.
Each alloc is paired with the free_completed of the same address that directly follows it among that address's
events (over columns: one sort by address); a free with no alloc before it was allocated before the history began
(its stack is unknown).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from canning_tb.ingest.snapshot.model import ACTION, STATE, Snapshot

ALLOC, FREE_REQ, FREE = ACTION["alloc"], ACTION["free_requested"], ACTION["free_completed"]
SEG_UP = (ACTION["segment_alloc"], ACTION["segment_map"])
SEG_DOWN = (ACTION["segment_free"], ACTION["segment_unmap"])
ACTIVE = (STATE["active_allocated"], STATE["active_awaiting_free"])


@dataclass
class Replay:
    device: int
    rows: np.ndarray  # rows of the snapshot's trace columns for this device, in order
    live: np.ndarray  # allocated bytes after each entry
    reserved: np.ndarray  # reserved bytes after each entry
    live_before: int  # allocated before the first entry
    reserved_before: int
    live_end: int  # at the snapshot (its blocks)
    reserved_end: int
    allocs: np.ndarray  # positions (into rows) of the alloc entries
    freed_at: np.ndarray  # per alloc: position of its free_completed, len(rows) when never freed in the trace
    # blocks alive before the history began: (address, size, position they were freed at or len(rows))
    before_addr: np.ndarray
    before_size: np.ndarray
    before_freed_at: np.ndarray

    @property
    def n(self) -> int:
        return len(self.rows)


def device_blocks(s: Snapshot, device: int) -> np.ndarray:
    """Block rows of the segments of `device`."""
    segs = s.seg_device == device
    return np.nonzero(segs[s.blk_segment])[0] if len(s.blk_segment) else np.zeros(0, dtype=np.int64)


def replay(s: Snapshot, device: int) -> Replay:
    rows = np.nonzero(s.tr_device == device)[0]
    act, size, addr = s.tr_action[rows], np.maximum(s.tr_size[rows], 0), s.tr_addr[rows]
    delta = np.where(act == ALLOC, size, 0) - np.where(act == FREE, size, 0)
    rdelta = np.where(np.isin(act, SEG_UP), size, 0) - np.where(np.isin(act, SEG_DOWN), size, 0)
    blocks = device_blocks(s, device)
    active = blocks[np.isin(s.blk_state[blocks], ACTIVE)]
    asked = np.where(s.blk_requested[active] >= 0, s.blk_requested[active], np.maximum(s.blk_size[active], 0))
    live_end = int(asked.sum())
    reserved_end = int(np.maximum(s.seg_total[s.seg_device == device], 0).sum())
    live_before = live_end - int(delta.sum())
    reserved_before = reserved_end - int(rdelta.sum())
    live = live_before + np.cumsum(delta)
    reserved = reserved_before + np.cumsum(rdelta)

    allocs = np.nonzero(act == ALLOC)[0]
    freed_at = np.full(len(allocs), len(rows), dtype=np.int64)
    # pairing over columns: the events of one address in order; an alloc directly followed by a free_completed
    # of its address is freed there; a free with no alloc before it was allocated before the history
    ev = np.nonzero((act == ALLOC) | (act == FREE))[0]
    order = np.lexsort((ev, addr[ev]))
    pos, at = ev[order], addr[ev][order]
    is_alloc = act[pos] == ALLOC
    same_next = np.zeros(len(pos), dtype=bool)
    same_next[:-1] = at[1:] == at[:-1]
    paired = is_alloc & same_next & np.append(~is_alloc[1:], False)
    slot = np.searchsorted(allocs, pos[paired])
    freed_at[slot] = pos[np.nonzero(paired)[0] + 1]
    prev_alloc = np.zeros(len(pos), dtype=bool)
    prev_alloc[1:] = paired[:-1]
    orphan = pos[~is_alloc & ~prev_alloc]
    b_addr, b_size, b_freed = addr[orphan].tolist(), size[orphan].tolist(), orphan.tolist()
    # blocks still active at the snapshot that no alloc of the trace made: alive since before it
    traced_open = set(addr[allocs[freed_at == len(rows)]].tolist())
    for b, n in zip(active.tolist(), asked.tolist()):
        a = int(s.blk_address[b])
        if a not in traced_open:
            b_addr.append(a), b_size.append(int(n)), b_freed.append(len(rows))
    return Replay(device=device, rows=rows, live=live, reserved=reserved, live_before=live_before,
                  reserved_before=reserved_before, live_end=live_end, reserved_end=reserved_end, allocs=allocs,
                  freed_at=freed_at, before_addr=np.array(b_addr, dtype=np.int64),
                  before_size=np.array(b_size, dtype=np.int64), before_freed_at=np.array(b_freed, dtype=np.int64))


def alive_at(r: Replay, pos: int) -> np.ndarray:
    """Indices into `r.allocs` of the traced allocations alive just after entry `pos`."""
    return np.nonzero((r.allocs <= pos) & (r.freed_at > pos))[0]


def before_alive_at(r: Replay, pos: int) -> np.ndarray:
    """Indices of the blocks from before the history alive just after entry `pos`."""
    return np.nonzero(r.before_freed_at > pos)[0]
