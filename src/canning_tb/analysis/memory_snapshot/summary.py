"""One snapshot explained, as one bounded plain dict (what the query, the CLI and the MCP tool serve).

Per device: the state at the snapshot, the peak with the blocks alive at it (by top user frame, by stack, the
biggest), empty_cache() calls, OOMs, the steps (how they were found), growth per step, leaks, what the peak's
step makes and drops (`transient_at_peak`) and the findings in bytes (findings.py); and how the snapshot is tied
to the window ("joined" or "not joined: why"). Sizes in bytes, -1 unknown; `limit` bounds every
list.
"""
from __future__ import annotations

import numpy as np

from canning_tb.ingest.snapshot.model import ACTIONS, Snapshot

from . import events, findings, join, peak, state, steps
from .replay import replay

SCHEMA = 1


def summarize(s: Snapshot, table=None, limit: int = 20, window_steps=None, base_ns: int | None = None,
              window_span: tuple[int, int] | None = None) -> dict:
    """`window_steps`: [(number, start_ns, end_ns)] on the window's clock, `base_ns`: its wall clock at 0
    (join.py); both None for a snapshot on its own. `table`: the window's EventTable, for operators."""
    devices = []
    for dev in s.devices:
        r = replay(s, dev)
        offset, why = join.clock_offset(s, r, base_ns, window_span)
        found = steps.time_steps(s, r, window_steps, offset) if offset is not None and window_steps else []
        source = steps.SOURCE_TIME if found else steps.SOURCE_NONE
        if not found:
            found = steps.pattern_steps(s, r)
            source = steps.SOURCE_PATTERN if found else steps.SOURCE_NONE
        pk = peak.peak(s, r, limit)
        if offset is not None and table is not None and pk["top_blocks"]:
            names = join.operators_at(s, r, table, offset, np.array([b["entry"] for b in pk["top_blocks"]]))
            for b, name in zip(pk["top_blocks"], names):
                b["operator"] = name
        rel = events.releases(s, r, limit)
        counts = np.bincount(s.tr_action[r.rows].astype(np.int64), minlength=len(ACTIONS))
        device = {
            "device": dev, "entries": int(r.n),
            "actions": {ACTIONS[i]: int(c) for i, c in enumerate(counts) if c},
            "at_snapshot": state.at_snapshot(s, dev),
            "at_peak": state.at_entry(s, r, pk["entry"]) if pk["entry"] >= 0 else None,
            "before_history": {"requested": r.live_before, "reserved": r.reserved_before},
            "peak": pk, "empty_cache": rel, "ooms": events.ooms(s, r, limit),
            "steps_source": source, "steps": len(found), "growth": steps.growth(s, r, found, 5, most=limit),
            "growth_last": (steps.growth(s, r, found[-1:], 5) or [None])[0],
            "leaks": steps.leaks(s, r, found, limit),
            "joined": offset is not None, "join": "joined by time to the window's trace" if offset is not None else why,
            "transient_at_peak": steps.transient_at(s, r, found, pk["entry"], 5) if pk["entry"] >= 0 else None,
        }
        device["findings"] = findings.device_findings(device)
        devices.append(device)
    return {"schema": SCHEMA, "file": s.path, "flavour": s.flavour, "has_times": s.has_times,
            "segments": int(len(s.seg_total)), "blocks": int(len(s.blk_size)), "entries": int(len(s.tr_action)),
            "frames": len(s.frame_name), "devices": devices, "warnings": list(s.warnings)}


def series(s: Snapshot, device: int, points: int = 2000) -> dict:
    """Requested and reserved bytes over the history, at most `points` points per series, each the maximum of
    the entries it stands for (the peak is kept exactly)."""
    r = replay(s, device)
    points = max(2, min(int(points), 100_000))
    if not r.n:
        return {"device": device, "entry": [], "requested": [], "reserved": [], "time_us": []}
    edges = np.linspace(0, r.n, min(points, r.n) + 1).astype(np.int64)
    starts = edges[:-1]
    req = np.maximum.reduceat(r.live, starts)
    res = np.maximum.reduceat(r.reserved, starts)
    return {"device": device, "entry": starts.tolist(), "requested": req.tolist(), "reserved": res.tolist(),
            "time_us": s.tr_time_us[r.rows[starts]].tolist()}
