"""empty_cache() calls and the segments they released; the allocator's OOM entries.

A release is a run of consecutive segment_free / segment_unmap entries (an explicit `empty_cache` entry where a
backend writes one). It is an empty_cache() call when a frame of its stack is named `empty_cache`; right after
an `oom` entry it is the allocator freeing its cache before giving up; else the allocator's own release."""
from __future__ import annotations

import numpy as np

from canning_tb.ingest.snapshot.model import ACTION, Snapshot

from .frames import frame_text, stack_text, top_user_frames, user_frames
from .replay import Replay

_RELEASE = (ACTION["segment_free"], ACTION["segment_unmap"], ACTION["empty_cache"])
OOM = ACTION["oom"]
WARNING = ("empty_cache() was called while this history was recorded: the cache it released is allocated again "
           "afterwards, and a peak of reserved memory read across the calls is not the job's real need")


def releases(s: Snapshot, r: Replay, limit: int = 50) -> dict:
    act = s.tr_action[r.rows]
    hits = np.nonzero(np.isin(act, _RELEASE))[0]
    runs: list[list[int]] = []
    for p in hits.tolist():
        if runs and p == runs[-1][-1] + 1:
            runs[-1].append(p)
        else:
            runs.append([p])
    user = user_frames(s)
    calls, out = 0, []
    released = 0
    for run in runs:
        rows = r.rows[run]
        sid = int(next((x for x in s.tr_stack[rows] if x >= 0), -1))
        names = {n for n, _, _ in s.stack(sid)}
        prev = run[0] - 1
        kind = ("empty_cache" if "empty_cache" in names or act[run[0]] == ACTION["empty_cache"]
                else "oom_retry" if prev >= 0 and act[prev] == OOM else "allocator")
        size = int(np.maximum(s.tr_size[rows], 0).sum())
        released += size if kind == "empty_cache" else 0
        calls += kind == "empty_cache"
        if len(out) < limit:
            out.append({"entry": run[0], "time_us": int(s.tr_time_us[rows[0]]), "kind": kind,
                        "segments": len(run), "bytes": size,
                        "reserved_before": int(r.reserved[run[0]] + np.maximum(s.tr_size[rows[0]], 0)),
                        "reserved_after": int(r.reserved[run[-1]]),
                        "frame": frame_text(s, top_user_frames(s, [sid], user)[0]), "stack": stack_text(s, sid)})
    return {"empty_cache_calls": calls, "empty_cache_bytes": released, "releases": out, "release_count": len(runs),
            "warning": WARNING if calls else ""}


def ooms(s: Snapshot, r: Replay, limit: int = 20) -> list[dict]:
    """Each OOM: the request that failed, what the device still had free, allocated and reserved there."""
    act = s.tr_action[r.rows]
    user = user_frames(s)
    out = []
    for p in np.nonzero(act == OOM)[0][:limit].tolist():
        row, sid = int(r.rows[p]), int(s.tr_stack[r.rows[p]])
        out.append({"entry": p, "time_us": int(s.tr_time_us[row]), "requested": int(s.tr_size[row]),
                    "device_free": int(s.tr_device_free[row]), "allocated": int(r.live[p]),
                    "reserved": int(r.reserved[p]), "frame": frame_text(s, top_user_frames(s, [sid], user)[0]),
                    "stack": stack_text(s, sid)})
    return out
