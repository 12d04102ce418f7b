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
            for name, kind in _path(op, names):
                node = node.setdefault((name, kind), {})
            leaf = node.setdefault("leaf", [[0.0] * 4, [0.0] * 4])[which]
            for i, value in enumerate((op.calls, op.host_self_ns, op.device_self_ns, op.device_total_ns)):
                leaf[i] += value / side.steps


def _leaf(name: str, raw: dict) -> Node:
    was, now = raw["leaf"]
    base, target = op_time(was[1:], now[1:])
    return Node(name=name, kind="op", base_ns=base, target_ns=target, base_calls=was[0], target_calls=now[0],
                delta_ns=target - base, status=status_of(was[0], now[0], target - base))


def _sums(root: dict) -> dict[int, Node]:
    """id(raw node) -> its Node without children (sums filled), bottom-up with an explicit stack."""
    done: dict[int, Node] = {}
    stack = [("all operators", "root", root, False)]
    while stack:
        name, kind, raw, ready = stack.pop()
        if kind == "op":
            done[id(raw)] = _leaf(name, raw)
            continue
        kids = [(n, k, child) for (n, k), child in ((key, v) for key, v in raw.items() if key != "leaf")]
        if not ready:
            stack.append((name, kind, raw, True))
            stack.extend((n, k, child, False) for n, k, child in kids)
            continue
        nodes = [done[id(child)] for _, _, child in kids]
        done[id(raw)] = _total(name, kind, nodes)
    return done


def _total(name: str, kind: str, nodes: list[Node]) -> Node:
    base, target = sum(c.base_ns for c in nodes), sum(c.target_ns for c in nodes)
    calls = sum(c.base_calls for c in nodes), sum(c.target_calls for c in nodes)
    return Node(name=name, kind=kind, base_ns=base, target_ns=target, base_calls=calls[0], target_calls=calls[1],
                delta_ns=target - base, status=status_of(calls[0], calls[1], target - base))


def operator_tree(base: Side, target: Side, names: NameMap) -> Node:
    """The root of the diffed tree (no children when neither side has operators), bounded (module doc)."""
    root: dict = {}
    _add(root, base, 0, names)
    _add(root, target, 1, names)
    done = _sums(root)
    top = done[id(root)]
    budget, queue = MAX_NODES - 1, [(top, root)]
    for node, raw in queue:  # breadth first: the queue grows while it is walked
        kids = sorted(((done[id(child)], child) for key, child in raw.items() if key != "leaf"),
                      key=lambda pair: (-abs(pair[0].delta_ns), pair[0].name))
        room = max(0, min(MAX_CHILDREN, budget))
        cut = len(kids) if len(kids) <= room else max(room - 1, 0)
        shown, rest = kids[:cut], kids[cut:]
        node.children = [child for child, _ in shown]
        if rest:
            node.children.append(_total(f"({len(rest)} more)", "more", [child for child, _ in rest]))
        budget -= len(node.children)
        queue.extend(pair for pair in shown if pair[0].kind != "op")
    return top
