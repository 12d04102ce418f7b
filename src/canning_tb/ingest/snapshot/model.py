"""One memory snapshot as numpy columns: segments, their blocks, the trace entries of every device, and the
Python frames interned once (a stack is a run of frame ids). Integers are -1 where the file does not say
(ingest.table.NONE): unknown, never 0. Addresses and sizes in bytes; times in µs as the allocator wrote them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# trace entry actions, by code (`Snapshot.trace_action`); anything else the file holds is "other"
ACTIONS = ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map",
           "segment_unmap", "empty_cache", "oom", "snapshot", "other")
ACTION = {name: i for i, name in enumerate(ACTIONS)}
# block states, by code (`Snapshot.block_state`)
STATES = ("inactive", "active_allocated", "active_awaiting_free", "other")
STATE = {name: i for i, name in enumerate(STATES)}
SEGMENT_TYPES = ("small", "large")


def _i64(n: int = 0) -> np.ndarray:
    return np.full(n, -1, dtype=np.int64)


@dataclass
class Snapshot:
    path: str = ""
    flavour: str = "pytorch"  # "pytorch" | "torch_npu" (frames in torch_npu's package)
    # segments (one row per segment)
    seg_device: np.ndarray = field(default_factory=_i64)
    seg_address: np.ndarray = field(default_factory=_i64)
    seg_total: np.ndarray = field(default_factory=_i64)  # reserved bytes
    seg_allocated: np.ndarray = field(default_factory=_i64)
    seg_active: np.ndarray = field(default_factory=_i64)
    seg_requested: np.ndarray = field(default_factory=_i64)
    seg_stream: np.ndarray = field(default_factory=_i64)
    seg_expandable: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    seg_large: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))  # 1 large, 0 small, -1 ?
    seg_pool: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    seg_stack: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    seg_blocks: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))  # CSR offsets into blocks
    # blocks (one row per block, in segment order)
    blk_segment: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    blk_address: np.ndarray = field(default_factory=_i64)
    blk_size: np.ndarray = field(default_factory=_i64)
    blk_requested: np.ndarray = field(default_factory=_i64)
    blk_state: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    blk_stack: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    # trace entries (one row per entry, device after device, each in the allocator's order)
    tr_device: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    tr_action: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    tr_addr: np.ndarray = field(default_factory=_i64)
    tr_size: np.ndarray = field(default_factory=_i64)
    tr_stream: np.ndarray = field(default_factory=_i64)
    tr_time_us: np.ndarray = field(default_factory=_i64)
    tr_device_free: np.ndarray = field(default_factory=_i64)  # oom only: what the device still had free
    tr_stack: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    # frames, interned: frame i is (frame_name[i], frame_file[i], frame_line[i]); stack s is
    # stack_frames[stack_offsets[s]:stack_offsets[s+1]], innermost first (as the allocator records them)
    frame_name: list[str] = field(default_factory=list)
    frame_file: list[str] = field(default_factory=list)
    frame_line: np.ndarray = field(default_factory=_i64)
    stack_offsets: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    stack_frames: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    devices: list[int] = field(default_factory=list)  # devices with segments or trace entries
    warnings: list[str] = field(default_factory=list)

    @property
    def has_times(self) -> bool:
        return bool(len(self.tr_time_us)) and bool((self.tr_time_us >= 0).all())

    def stack(self, stack_id: int) -> list[tuple[str, str, int]]:
        """(name, file, line) of each frame of a stack, innermost first; [] for -1."""
        if stack_id < 0:
            return []
        ids = self.stack_frames[self.stack_offsets[stack_id]:self.stack_offsets[stack_id + 1]]
        return [(self.frame_name[i], self.frame_file[i], int(self.frame_line[i])) for i in ids]

    def frame_text(self, frame_id: int) -> str:
        line = int(self.frame_line[frame_id])
        return f"{self.frame_name[frame_id]} ({self.frame_file[frame_id]}:{line if line >= 0 else '?'})"
