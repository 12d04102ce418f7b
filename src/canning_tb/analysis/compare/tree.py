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

import heapq
from dataclasses import dataclass, field

from .ops import op_time, status_of, strip_lines
from .side import Side
from ..names import NameMap
from ..summary import STEP_RANGE_PREFIX

NO_STACK = "(no call stack)"
MAX_DEPTH = 64
MAX_CHILDREN = 100
MAX_NODES = 20_000


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
    if not op.has_call_stack:
        return [(NO_STACK, "frame"), (names.operator(op.name), "op")]
    frames = [f.strip() for f in strip_lines(op.call_stack).split(";") if f.strip()] if op.has_call_stack else []
    frames = list(reversed(frames)) or [NO_STACK]  # the digest lists the innermost frame first
    if len(frames) > MAX_DEPTH:
        keep = MAX_DEPTH // 2
        frames = frames[:keep] + [f"… {len(frames) - 2 * keep + 1} frames …"] + frames[-keep + 1:]
    return [(f, "frame") for f in frames] + [(names.operator(op.name), "op")]


def _add(root: dict, side: Side, which: int, names: NameMap) -> None:
    """Leaves hold per side [calls, host self, device self, device total] per step."""
    for digest in side.digests:
        for op in digest.ops_by_stack:
            if op.name.startswith(STEP_RANGE_PREFIX):
                continue
            node = root
            for step in _path(op, names):
                node = node.get(step) or node.setdefault(step, {})
            leaf = node.get("leaf") or node.setdefault("leaf", [[0.0] * 4, [0.0] * 4])
            leaf = leaf[which]
            steps = side.steps
            leaf[0] += op.calls / steps
            leaf[1] += op.host_self_ns / steps
            leaf[2] += op.device_self_ns / steps
            leaf[3] += op.device_total_ns / steps


def _leaf_sums(raw: dict) -> tuple[float, float, float, float]:
    """(base_ns, target_ns, base_calls, target_calls) of an operator leaf."""
    was, now = raw["leaf"]
    base, target = op_time(was[1:], now[1:])
    return base, target, was[0], now[0]


def _sums(root: dict) -> dict[int, tuple]:
    """id(raw node) -> (base_ns, target_ns, base_calls, target_calls), bottom-up with an explicit stack
    (no Node is made for what is not shown)."""
    done: dict[int, tuple] = {}
    stack = [(root, False)]
    while stack:
        raw, ready = stack.pop()
        kids = [child for key, child in raw.items() if key != "leaf"]
        if "leaf" in raw:
            done[id(raw)] = _leaf_sums(raw)
        elif not ready:
            stack.append((raw, True))
            stack.extend((child, False) for child in kids)
        else:
            sums = [done[id(child)] for child in kids]
            done[id(raw)] = tuple(sum(s[i] for s in sums) for i in range(4))
    return done


def _node(name: str, kind: str, sums: tuple) -> Node:
    base, target, base_calls, target_calls = sums
    return Node(name=name, kind=kind, base_ns=base, target_ns=target, base_calls=base_calls, target_calls=target_calls,
                delta_ns=target - base, status=status_of(base_calls, target_calls, target - base))


def operator_tree(base: Side, target: Side, names: NameMap) -> Node:
    """The root of the diffed tree (no children when neither side has operators), bounded (module doc)."""
    root: dict = {}
    _add(root, base, 0, names)
    _add(root, target, 1, names)
    done = _sums(root)
    top = _node("all operators", "root", done[id(root)])
    budget, queue = MAX_NODES - 1, [(top, root)]
    for node, raw in queue:  # breadth first: the queue grows while it is walked
        kids = [(key, child, done[id(child)]) for key, child in raw.items() if key != "leaf"]
        room = max(0, min(MAX_CHILDREN, budget))
        cut = len(kids) if len(kids) <= room else max(room - 1, 0)
        order = heapq.nsmallest(cut, range(len(kids)), key=lambda i: (-abs(kids[i][2][1] - kids[i][2][0]), kids[i][0][0]))
        for i in order:
            (name, kind), child, sums = kids[i]
            shown = _node(name, kind, sums)
            node.children.append(shown)
            if kind != "op":
                queue.append((shown, child))
        if len(kids) > cut:
            chosen = set(order)
            rest = [kids[i][2] for i in range(len(kids)) if i not in chosen]
            node.children.append(_node(f"({len(rest)} more)", "more", tuple(sum(s[i] for s in rest) for i in range(4))))
        budget -= len(node.children)
    return top
