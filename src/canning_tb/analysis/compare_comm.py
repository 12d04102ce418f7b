"""Communication of two sides per step: per collective kind and group, and per kind over all
groups (group names are often ids that differ between runs, kinds do not), with deltas.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from .compare_side import Side

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
    was, now = _sums(base, by_group), _sums(target, by_group)
    rows = []
    for kind, group in was.keys() | now.keys():
        left, right = was.get((kind, group)), now.get((kind, group))
        a, b = left or [0.0, 0.0, -1.0], right or [0.0, 0.0, -1.0]
        status = "added" if left is None else "removed" if right is None else "same" if a[1] == b[1] else "changed"
        rows.append(CollectiveDelta(kind=kind, group=group, base_calls=a[0], target_calls=b[0], base_ns=a[1],
                                    target_ns=b[1], base_bytes=a[2], target_bytes=b[2], delta_ns=b[1] - a[1],
                                    status=status))
    rows.sort(key=lambda r: (-abs(r.delta_ns), r.kind, r.group))
    return rows
