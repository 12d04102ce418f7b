"""The steps of a snapshot's history, growth per step, and leaks (growth that repeats).

Steps come from the window when they can be tied to it: the window's step ranges (ProfilerStep ranges or the
loop's marks, on the trace's clock) and the snapshot's times put on that clock (join.py). Otherwise from the
trace's own order: a training step allocates the same way each time, so a step starts at each allocation of the
first stack that recurs with steps of like length (the number of allocations between two of its occurrences within
a factor of 2 of each other); the steps are then numbered 1, 2, ... in the snapshot's order, and said to be.

Growth of a step: the bytes allocated in it that are still alive at its end. A leak: a stack that grows in every
step after the first (the first builds what a job keeps: optimizer state, caches) and whose blocks are never
freed in the history; at least two such steps. Its bytes per step are the figure it rests on.
"""
from __future__ import annotations

import numpy as np

from canning_tb.ingest.snapshot.model import Snapshot

from .frames import frame_text, stack_text, top_user_frames, user_frames
from .replay import Replay

SOURCE_TIME, SOURCE_PATTERN, SOURCE_NONE = "window steps, by time", "repeating pattern, by snapshot order", "none"
_MAX_CANDIDATES = 512


def pattern_steps(s: Snapshot, r: Replay) -> list[tuple[int, int, int]]:
    """(step number, first entry, end entry exclusive) from the trace's own repeating pattern (module doc); []
    when there is none."""
    if len(r.allocs) < 4:
        return []
    stacks = s.tr_stack[r.rows[r.allocs]].astype(np.int64)
    uniq, first, counts = np.unique(stacks, return_index=True, return_counts=True)
    order = np.argsort(first, kind="stable")
    tried = 0
    for k in order.tolist():
        if uniq[k] < 0 or counts[k] < 2:
            continue
        tried += 1
        if tried > _MAX_CANDIDATES:
            break
        at = np.nonzero(stacks == uniq[k])[0]
        gaps = np.diff(at)
        if len(gaps) and gaps.min() * 2 >= gaps.max() and gaps.min() >= 2:
            starts = r.allocs[at]
            ends = np.append(starts[1:], r.n)
            return [(i + 1, int(a), int(b)) for i, (a, b) in enumerate(zip(starts, ends))]
    return []


def time_steps(s: Snapshot, r: Replay, steps_ns, offset_ns: int) -> list[tuple[int, int, int]]:
    """Steps [(number, start_ns, end_ns)] on the window's clock, as entry ranges of the trace whose times
    (time_us * 1000 - offset_ns) fall in them; steps holding no entry are left out."""
    t = s.tr_time_us[r.rows] * 1000 - offset_ns
    out = []
    for num, a, b in steps_ns:
        lo, hi = int(np.searchsorted(t, a, side="left")), int(np.searchsorted(t, b, side="left"))
        if hi > lo:
            out.append((int(num), lo, hi))
    return out


def _step_of(r: Replay, steps: list[tuple[int, int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """(per alloc: the index of the step it was made in or -1, per step: its end entry, exclusive)."""
    starts = np.array([a for _, a, _ in steps], dtype=np.int64)
    ends = np.array([b for _, _, b in steps], dtype=np.int64)
    k = np.searchsorted(starts, r.allocs, side="right") - 1
    inside = (k >= 0) & (r.allocs < ends[np.maximum(k, 0)]) if len(steps) else np.zeros(len(r.allocs), bool)
    return np.where(inside, k, -1), ends


def growth(s: Snapshot, r: Replay, steps: list[tuple[int, int, int]], limit: int = 5, most: int | None = None) -> list[dict]:
    """Per step (the first `most`): live bytes at its start and end, and the bytes born in it and alive at its
    end, by top frame."""
    steps = steps[:most] if most is not None else steps
    if not steps:
        return []
    user = user_frames(s)
    sizes = np.maximum(s.tr_size[r.rows[r.allocs]], 0)
    stacks = s.tr_stack[r.rows[r.allocs]].astype(np.int64)
    k, ends = _step_of(r, steps)
    born = np.nonzero((k >= 0) & (r.freed_at >= ends[np.maximum(k, 0)]))[0]
    step_of = k[born]
    tops = np.array(top_user_frames(s, stacks[born], user), dtype=np.int64)
    total = np.bincount(step_of, weights=sizes[born], minlength=len(steps)).astype(np.int64)
    count = np.bincount(step_of, minlength=len(steps))
    out = []
    for i, (num, a, b) in enumerate(steps):
        mine = step_of == i
        by = _sum_by(tops[mine], sizes[born][mine])
        top = sorted(by.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
        out.append({"step": num, "first_entry": a, "last_entry": b - 1,
                    "live_start": int(r.live[a - 1]) if a > 0 else r.live_before, "live_end": int(r.live[b - 1]),
                    "grown": int(total[i]), "grown_blocks": int(count[i]),
                    "by_frame": [{"frame": frame_text(s, f), "bytes": int(v)} for f, v in top]})
    return out


def leaks(s: Snapshot, r: Replay, steps: list[tuple[int, int, int]], limit: int = 10) -> list[dict]:
    """Stacks that grow in every step after the first, never freed in the history (module doc)."""
    if len(steps) < 3:
        return []
    later = steps[1:]
    sizes = np.maximum(s.tr_size[r.rows[r.allocs]], 0)
    stacks = s.tr_stack[r.rows[r.allocs]].astype(np.int64)
    k, _ = _step_of(r, later)
    pick = np.nonzero((k >= 0) & (r.freed_at >= r.n) & (stacks >= 0))[0]
    if not len(pick):
        return []
    key = stacks[pick] * len(later) + k[pick]
    uniq, inv = np.unique(key, return_inverse=True)
    per = np.bincount(inv, weights=sizes[pick]).astype(np.int64)
    stack_of, step_idx = uniq // len(later), uniq % len(later)
    grows = per > 0
    every, counts = np.unique(stack_of[grows], return_counts=True)
    user = user_frames(s)
    out = []
    for sid in every[counts == len(later)].tolist():
        mine = (stack_of == sid) & grows
        by = np.zeros(len(later), dtype=np.int64)
        by[step_idx[mine]] = per[mine]
        out.append({"stack_id": int(sid), "frame": frame_text(s, top_user_frames(s, [sid], user)[0]),
                    "stack": stack_text(s, sid), "bytes_per_step": by.tolist()[:64], "bytes": int(by.sum()),
                    "steps": [num for num, _, _ in later][:64]})
    out.sort(key=lambda x: (-x["bytes"], x["stack_id"]))
    return out[:limit]


def _sum_by(keys: np.ndarray, values: np.ndarray) -> dict:
    if not len(keys):
        return {}
    uniq, inv = np.unique(keys, return_inverse=True)
    return dict(zip(uniq.tolist(), np.bincount(inv, weights=values).astype(np.int64).tolist()))


def transient_at(s: Snapshot, r: Replay, steps: list[tuple[int, int, int]], pos: int, limit: int = 5) -> dict:
    """At entry `pos` (the peak): the bytes alive there that were allocated in the same step and are freed before
    it ends: what the step makes and drops (activations, temporaries), by top user frame. Without steps: None
    fields (unknown)."""
    step = next(((num, a, b) for num, a, b in steps if a <= pos < b), None)
    if step is None:
        return {"step": None, "bytes": -1, "by_frame": []}
    num, a, b = step
    sizes = np.maximum(s.tr_size[r.rows[r.allocs]], 0)
    pick = np.nonzero((r.allocs >= a) & (r.allocs <= pos) & (r.freed_at > pos) & (r.freed_at < b))[0]
    stacks = s.tr_stack[r.rows[r.allocs[pick]]].astype(np.int64)
    user = user_frames(s)
    tops = np.array(top_user_frames(s, stacks, user), dtype=np.int64)
    by = _sum_by(tops, sizes[pick])
    order = sorted(by.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    return {"step": num, "bytes": int(sizes[pick].sum()),
            "by_frame": [{"frame": frame_text(s, k), "bytes": int(v)} for k, v in order]}
