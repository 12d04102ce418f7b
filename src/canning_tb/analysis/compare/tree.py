"""The operator tree of two sides, diffed: the call-stack hierarchy (outermost Python frame first,
the operator as the leaf) built from `ops_by_stack`, as the old PyTorch plugin's Diff view showed
its module / operator tree.

A leaf's time is its operator's self time per step by the rule of compare_ops (device self time
for operators with device work on either side, else host self time); a frame's time is the sum
of the leaves below it, so a parent is exactly the sum of its children. Frames are matched
without line numbers. Operators recorded without a call stack hang under one "(no call stack)"
frame.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .ops import op_time, status_of, strip_lines
from .side import Side
from ..names import NameMap
from ..summary import STEP_RANGE_PREFIX

NO_STACK = "(no call stack)"


@dataclass
class Node:
    name: str
    kind: str                       # "root" | "frame" | "op"
    base_ns: float = 0.0            # per step
    target_ns: float = 0.0
    base_calls: float = 0.0         # per step; a frame: the calls of the operators below it
    target_calls: float = 0.0
    delta_ns: float = 0.0
    status: str = "same"            # "added" | "removed" | "changed" | "same"
    children: list["Node"] = field(default_factory=list)


def _path(op, names: NameMap) -> list[tuple[str, str]]:
    frames = [f.strip() for f in strip_lines(op.call_stack).split(";") if f.strip()] if op.has_call_stack else []
    frames = list(reversed(frames)) or [NO_STACK]  # the digest lists the innermost frame first
    return [(f, "frame") for f in frames] + [(names.operator(op.name), "op")]


def _add(root: dict, side: Side, which: int, names: NameMap) -> None:
    """Leaves hold per side [calls, host self, device self, device total] per step."""
    for digest in side.digests:
        for op in digest.ops_by_stack:
            if op.name.startswith(STEP_RANGE_PREFIX):
                continue
            node = root
            for name, kind in _path(op, names):
                node = node.setdefault((name, kind), {})
            leaf = node.setdefault("leaf", [[0.0] * 4, [0.0] * 4])[which]
            for i, value in enumerate((op.calls, op.host_self_ns, op.device_self_ns, op.device_total_ns)):
                leaf[i] += value / side.steps


def _node(name: str, kind: str, raw: dict) -> Node:
    if kind == "op":
        was, now = raw["leaf"]
        base, target = op_time(was[1:], now[1:])
        return Node(name=name, kind=kind, base_ns=base, target_ns=target, base_calls=was[0], target_calls=now[0],
                    delta_ns=target - base, status=status_of(was[0], now[0], target - base))
    children = [_node(n, k, child) for (n, k), child in raw.items()]
    children.sort(key=lambda c: (-abs(c.delta_ns), c.name))
    base, target = sum(c.base_ns for c in children), sum(c.target_ns for c in children)
    calls = sum(c.base_calls for c in children), sum(c.target_calls for c in children)
    return Node(name=name, kind=kind, base_ns=base, target_ns=target, base_calls=calls[0], target_calls=calls[1],
                delta_ns=target - base, status=status_of(calls[0], calls[1], target - base), children=children)


def operator_tree(base: Side, target: Side, names: NameMap) -> Node:
    """The root of the diffed tree (no children when neither side has operators)."""
    root: dict = {}
    _add(root, base, 0, names)
    _add(root, target, 1, names)
    return _node("all operators", "root", root)
