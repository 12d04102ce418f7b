"""Communication of two sides per step: per collective kind and group, and per kind over all
groups (group names are often ids that differ between runs, kinds do not), with deltas.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from .side import Side

ALL_GROUPS = "*"


@dataclass
class CollectiveDelta:
    kind: str
    group: str                      # ALL_GROUPS in the per-kind rows
    base_calls: float               # per step
    target_calls: float
    base_ns: float
    target_ns: float
    base_bytes: float               # -1: unknown on that side
    target_bytes: float
    delta_ns: float
    status: str                     # "added" | "removed" | "changed" | "same"


def _sums(side: Side, by_group: bool) -> dict:
    out: dict = defaultdict(lambda: [0.0, 0.0, 0.0])
    for digest in side.digests:
        for stat in digest.communication.collectives:
            acc = out[(stat.kind, stat.group if by_group else ALL_GROUPS)]
            acc[0] += stat.calls / side.steps
            acc[1] += stat.total_ns / side.steps
            acc[2] = -1.0 if stat.bytes < 0 or acc[2] < 0 else acc[2] + stat.bytes / side.steps
    return out


def collective_deltas(base: Side, target: Side, by_group: bool = True) -> list[CollectiveDelta]:
    base_sums, target_sums = _sums(base, by_group), _sums(target, by_group)
    rows = []
    for kind, group in base_sums.keys() | target_sums.keys():
        left, right = base_sums.get((kind, group)), target_sums.get((kind, group))
        was, now = left or [0.0, 0.0, -1.0], right or [0.0, 0.0, -1.0]
        status = "added" if left is None else "removed" if right is None else "same" if was[1] == now[1] else "changed"
        rows.append(CollectiveDelta(kind=kind, group=group, base_calls=was[0], target_calls=now[0], base_ns=was[1],
                                    target_ns=now[1], base_bytes=was[2], target_bytes=now[2], delta_ns=now[1] - was[1],
                                    status=status))
    rows.sort(key=lambda r: (-abs(r.delta_ns), r.kind, r.group))
    return rows
