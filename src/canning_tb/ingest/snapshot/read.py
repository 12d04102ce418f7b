"""`read_snapshot(path) -> Snapshot`: a memory snapshot pickle (PyTorch's or torch_npu's, expandable segments or
not, any number of devices) as numpy columns (model.py).

Recognised by content, whatever its name: a dict holding "segments" and/or "device_traces" (what
`torch.cuda.memory._snapshot()` and `torch_npu.npu.memory._snapshot()` return), or a bare list of segment dicts
(the older `torch.cuda.memory_snapshot()`). Anything else, or a pickle naming a global, is an InputError naming
the file (unpickle.py). A value of the wrong type is unknown (-1) and counted in one warning, never a crash.

Frames are interned twice over: a frames list the pickle shares (its memo) is walked once (by identity), and
equal stacks get one id. Every walk is over objects the file made, so the work is linear in its size.
"""
from __future__ import annotations

import numpy as np

from ..table import InputError
from .model import ACTION, STATE, Snapshot
from .unpickle import load_plain

_I64_MAX = (1 << 63) - 1
_OTHER = ACTION["other"]


class _Reader:
    def __init__(self, path: str):
        self.path = path
        self.bad = 0  # values of the wrong type, read as unknown
        self.frame_ids: dict[tuple, int] = {}
        self.names: list[str] = []
        self.files: list[str] = []
        self.lines: list[int] = []
        self.stack_ids: dict[tuple, int] = {}
        self.stacks: list[tuple] = []
        # id(frames list) -> (the list, its stack id): the list is held, so its id is never reused meanwhile
        self.by_identity: dict[int, tuple] = {}
        self.npu = False

    def int_of(self, d: dict, key: str) -> int:
        v = d.get(key)
        if v is None:
            return -1
        if type(v) is int and -_I64_MAX <= v <= _I64_MAX:
            return v
        if type(v) is bool:
            return int(v)
        self.bad += 1
        return -1

    def frame(self, f) -> int:
        if not isinstance(f, dict):
            self.bad += 1
            f = {}  # an unknown frame of its own ("?"): a frame id of -1 in a stack would index the last frame
        name, filename, line = f.get("name"), f.get("filename"), f.get("line")
        key = (name if isinstance(name, str) else "?", filename if isinstance(filename, str) else "?",
               line if type(line) is int and 0 <= line <= _I64_MAX else -1)
        fid = self.frame_ids.get(key)
        if fid is None:
            fid = self.frame_ids[key] = len(self.names)
            self.names.append(key[0])
            self.files.append(key[1])
            self.lines.append(key[2])
            if "torch_npu" in key[1]:
                self.npu = True
        return fid

    def stack(self, frames) -> int:
        if not frames:
            return -1
        known = self.by_identity.get(id(frames))
        if known is not None:
            return known[1]
        if not isinstance(frames, (list, tuple)):
            self.bad += 1
            return -1
        key = tuple(self.frame(f) for f in frames)
        sid = self.stack_ids.get(key)
        if sid is None:
            sid = self.stack_ids[key] = len(self.stacks)
            self.stacks.append(key)
        self.by_identity[id(frames)] = (frames, sid)
        return sid

    def dicts(self, items, what: str) -> list[dict]:
        if items is None:
            return []
        if not isinstance(items, list):
            raise InputError(self.path, f"not a memory snapshot: {what} is a {type(items).__name__}, not a list")
        kept = [x for x in items if isinstance(x, dict)]
        self.bad += len(items) - len(kept)
        return kept


def _top(obj, path: str) -> tuple[list, list]:
    if isinstance(obj, dict) and ("segments" in obj or "device_traces" in obj):
        return obj.get("segments"), obj.get("device_traces")
    if isinstance(obj, list) and obj and all(isinstance(s, dict) and "total_size" in s for s in obj[:16]):
        return obj, None  # torch.cuda.memory_snapshot(): the segments alone
    kind = type(obj).__name__
    raise InputError(path, f"not a memory snapshot: a pickled {kind} without 'segments' or 'device_traces'")


def snapshot_of(obj, path: str) -> Snapshot:
    """The columns of an already loaded plain-data snapshot (`obj`, as the unpickler made it). The trace entries of
    `obj` are replaced by None as they are read (their memory is given back while the columns grow)."""
    r = _Reader(path)
    seg_list, traces = _top(obj, path)
    segs = r.dicts(seg_list, "'segments'")
    s = Snapshot(path=path)
    n = len(segs)
    cols = {k: [] for k in ("device", "address", "total_size", "allocated_size", "active_size", "requested_size",
                            "stream")}
    expandable, large, pool, seg_stack, offsets = [], [], [], [], [0]
    b_seg, b_addr, b_size, b_req, b_state, b_stack = [], [], [], [], [], []
    for i, seg in enumerate(segs):
        for k, col in cols.items():
            col.append(r.int_of(seg, k))
        expandable.append(seg.get("is_expandable") is True)
        kind = seg.get("segment_type")
        large.append(1 if kind == "large" else 0 if kind == "small" else -1)
        p = seg.get("segment_pool_id")
        pool.append(tuple(v if type(v) is int and abs(v) <= _I64_MAX else -1 for v in p[:2])
                    if isinstance(p, (tuple, list)) and len(p) >= 2 else (-1, -1))
        seg_stack.append(r.stack(seg.get("frames")))
        for b in r.dicts(seg.get("blocks"), "a segment's 'blocks'"):
            b_seg.append(i)
            b_addr.append(r.int_of(b, "address"))
            b_size.append(r.int_of(b, "size"))
            b_req.append(r.int_of(b, "requested_size"))
            st = b.get("state")
            b_state.append(STATE.get(st, STATE["other"]) if isinstance(st, str) else STATE["other"])
            b_stack.append(r.stack(b.get("frames") or _history_frames(b)))
        offsets.append(len(b_seg))
    for k, col in cols.items():
        setattr(s, {"device": "seg_device", "address": "seg_address", "total_size": "seg_total",
                    "allocated_size": "seg_allocated", "active_size": "seg_active",
                    "requested_size": "seg_requested", "stream": "seg_stream"}[k], np.array(col, dtype=np.int64))
    s.seg_expandable = np.array(expandable, dtype=bool)
    s.seg_large = np.array(large, dtype=np.int8)
    s.seg_pool = np.array(pool, dtype=np.int64).reshape(n, 2)
    s.seg_stack = np.array(seg_stack, dtype=np.int32)
    s.seg_blocks = np.array(offsets, dtype=np.int64)
    s.blk_segment = np.array(b_seg, dtype=np.int32)
    s.blk_address, s.blk_size, s.blk_requested = (np.array(c, dtype=np.int64) for c in (b_addr, b_size, b_req))
    s.blk_state = np.array(b_state, dtype=np.int8)
    s.blk_stack = np.array(b_stack, dtype=np.int32)

    other_actions: set[str] = set()
    if traces is not None and not isinstance(traces, list):
        raise InputError(path, f"not a memory snapshot: 'device_traces' is a {type(traces).__name__}, not a list")
    parts: list[list[np.ndarray]] = []
    for dev, entries in enumerate(traces or []):
        if not isinstance(entries, list):
            r.bad += 1
            continue
        for at in range(0, len(entries), _CHUNK):
            parts.append(_entries(r, dev, entries[at:at + _CHUNK], other_actions))
            entries[at:at + _CHUNK] = [None] * len(entries[at:at + _CHUNK])  # their dicts freed as we go
    cols = [np.concatenate([p[k] for p in parts]) if parts else np.zeros(0, dtype=t)
            for k, t in enumerate((np.int32, np.int8, np.int64, np.int64, np.int64, np.int64, np.int64, np.int32))]
    (s.tr_device, s.tr_action, s.tr_addr, s.tr_size, s.tr_stream, s.tr_time_us, s.tr_device_free,
     s.tr_stack) = cols

    s.frame_name, s.frame_file, s.frame_line = r.names, r.files, np.array(r.lines, dtype=np.int64)
    lengths = np.array([len(k) for k in r.stacks], dtype=np.int64)
    s.stack_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    s.stack_frames = np.array([f for k in r.stacks for f in k], dtype=np.int32)
    s.flavour = "torch_npu" if r.npu else "pytorch"
    s.devices = sorted(set(s.seg_device[s.seg_device >= 0].tolist()) | set(np.unique(s.tr_device).tolist()))
    if r.bad:
        s.warnings.append(f"{r.bad} values of the wrong type were read as unknown")
    if other_actions:
        s.warnings.append("trace actions not known here, kept as 'other': " + ", ".join(sorted(other_actions)[:8]))
    return s


_CHUNK = 1 << 16  # trace entries turned into columns at once, then freed


def _entries(r: _Reader, dev: int, entries: list, other_actions: set) -> list[np.ndarray]:
    """One chunk of a device's trace entries as columns (device, action, addr, size, stream, time_us,
    device_free, stack)."""
    act, addr, size, stream, time_us, free, stack = [], [], [], [], [], [], []
    int_of = r.int_of
    for e in entries:
        if not isinstance(e, dict):
            r.bad += 1
            continue
        a = e.get("action")
        code = ACTION.get(a, _OTHER) if isinstance(a, str) else _OTHER
        if code == _OTHER:
            other_actions.add(str(a)[:40])
        act.append(code)
        addr.append(int_of(e, "addr"))
        size.append(int_of(e, "size"))
        stream.append(int_of(e, "stream"))
        time_us.append(int_of(e, "time_us"))
        free.append(int_of(e, "device_free"))
        stack.append(r.stack(e.get("frames")))
    n = len(act)
    return [np.full(n, dev, dtype=np.int32), np.array(act, dtype=np.int8)] + [
        np.array(c, dtype=np.int64) for c in (addr, size, stream, time_us, free)] + [np.array(stack, dtype=np.int32)]


def _history_frames(block: dict):
    """Older snapshots (PyTorch 2.0) keep a block's stack in `history[-1].frames`."""
    h = block.get("history")
    if isinstance(h, list) and h and isinstance(h[-1], dict):
        return h[-1].get("frames")
    return None


def read_snapshot(path: str) -> Snapshot:
    """The snapshot at `path` as columns; InputError naming the file for anything that is not one."""
    return snapshot_of(load_plain(path), path)
