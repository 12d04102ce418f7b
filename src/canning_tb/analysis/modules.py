"""The nn.Module tree of a window: host and device time per module instance path.

Module calls are the host PYTHON_FUNCTION events named `nn.Module: <Class>_<id>` (torch.profiler
and torch_npu with `with_modules=True` / `with_stack=True`). They nest by time on their thread
with the host ops (common.nest); a module call's parent module is the innermost module call
around it. A node of the tree is a path of module names from a root (Net_0/Block_1/Linear_2),
its figures summed over its calls:
- host total = the calls' durations; host self = host total minus the durations of the module
  calls directly inside them;
- device self = the device events (kernels, copies, memsets) launched by the ops whose innermost
  enclosing module call is one of this node's calls (the launching op: context.Context);
  device total = device self plus the device total of the child nodes: each device event counts
  once in a node and once in each of its ancestors;
- operators = the CPU ops directly inside the calls (not inside another op or a child module).
Work outside every module call (the backward pass runs on autograd's threads) is not in the tree.
"""
from __future__ import annotations

import numpy as np

from ..ingest.table import NONE, Kind
from . import digest_pb2 as pb
from .common import nest
from .context import Context

MODULE_PREFIX = "nn.Module: "


def module_rows(ctx: Context) -> np.ndarray:
    t, ev = ctx.table, ctx.ev
    ids = [i for i, s in enumerate(t.strings.values) if s.startswith(MODULE_PREFIX)]
    if not ids:
        return np.zeros(0, np.int64)
    return np.flatnonzero((ev["kind"] == int(Kind.PYTHON_FUNCTION)) & (ev["device"] == NONE) & np.isin(ev["name"], ids))


def _nearest_module(parent: np.ndarray, depth: np.ndarray, is_module: np.ndarray) -> np.ndarray:
    """Per node of a nesting: itself when a module call, else its nearest module ancestor (NONE)."""
    out = np.where(is_module, np.arange(len(parent)), NONE)
    for level in range(1, int(depth.max(initial=0)) + 1):
        sel = np.flatnonzero((depth == level) & ~is_module)
        out[sel] = out[parent[sel]]
    return out


def _paths(names: np.ndarray, module_parent: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, list]:
    """Node id per module call (calls in `order`, parents before children) and the nodes as
    (name id, parent node) in first-seen order."""
    node = np.full(len(names), NONE, np.int64)
    nodes: list[tuple[int, int]] = []
    index: dict[tuple[int, int], int] = {}
    for i in order.tolist():
        key = (int(names[i]), int(node[module_parent[i]]) if module_parent[i] != NONE else NONE)
        found = index.get(key)
        if found is None:
            found = index[key] = len(nodes)
            nodes.append(key)
        node[i] = found
    return node, nodes


def module_tree(ctx: Context) -> list[pb.ModuleNode]:
    """The tree, depth first (children in order of their first call)."""
    mods = module_rows(ctx)
    if len(mods) == 0:
        return []
    ev, h = ctx.ev, ctx.host
    rows = np.concatenate([mods, h.rows])
    n = nest(ctx.table, rows)
    is_module = np.zeros(len(rows), bool)
    is_module[: len(mods)] = True
    nearest = _nearest_module(n.parent, n.depth, is_module)
    up = np.where(n.parent != NONE, nearest[np.maximum(n.parent, 0)], NONE)  # the module around each node
    mparent = up[: len(mods)]
    order = np.lexsort((ev["ts"][mods], n.depth[: len(mods)]))
    node, nodes = _paths(ev["name"][mods], mparent, order)
    return _figures(ctx, mods, rows, n, nearest, up, node, nodes)


def _device_self(ctx: Context, mods: np.ndarray, nearest: np.ndarray, node: np.ndarray, count: int) -> np.ndarray:
    """Per node: device time launched by the ops whose innermost module call is one of its calls."""
    own = ctx.device_owner
    ok = own != NONE
    module_of = nearest[len(mods) + own[ok]]  # host position -> row in the nesting (host rows follow mods)
    hit = module_of != NONE
    dev_dur = ctx.ev["dur"][ctx.device_rows[ok]][hit]
    return np.bincount(node[module_of[hit]], weights=dev_dur, minlength=count).astype(np.int64)


def _figures(ctx, mods, rows, n, nearest, up, node, nodes) -> list[pb.ModuleNode]:
    ev = ctx.ev
    count = len(nodes)
    dur = ev["dur"][mods].astype(np.int64)
    calls = np.bincount(node, minlength=count)
    host_total = np.bincount(node, weights=dur, minlength=count).astype(np.int64)
    up_mod = up[: len(mods)]
    inner = np.bincount(node[up_mod[up_mod != NONE]], weights=dur[up_mod != NONE], minlength=count).astype(np.int64)
    first = np.full(count, np.iinfo(np.int64).max)
    np.minimum.at(first, node, ev["ts"][mods])
    # operators: CPU ops whose direct parent in the nesting is a module call
    direct = (ev["kind"][rows] == int(Kind.CPU_OP)) & (n.parent != NONE) & (n.parent < len(mods))
    direct[: len(mods)] = False
    operators = np.bincount(node[n.parent[direct]], minlength=count)
    device_self = _device_self(ctx, mods, nearest, node, count)
    parent_node = np.array([p for _, p in nodes], np.int64)
    device_total = _sum_up(device_self, parent_node)
    order = _depth_first(parent_node, first)
    position = {i: k for k, i in enumerate(order)}
    out: list[pb.ModuleNode] = []
    for i in order:
        name = (ctx.table.strings[nodes[i][0]] or "")[len(MODULE_PREFIX):]
        up_index = position[int(parent_node[i])] if parent_node[i] != NONE else NONE
        above = out[up_index] if up_index != NONE else None
        out.append(pb.ModuleNode(
            name=name, path=f"{above.path}/{name}" if above else name, depth=above.depth + 1 if above else 0,
            parent=up_index, calls=int(calls[i]), host_total_ns=int(host_total[i]),
            host_self_ns=int(max(host_total[i] - inner[i], 0)), device_self_ns=int(device_self[i]),
            device_total_ns=int(device_total[i]), operators=int(operators[i]), first_start_ns=int(first[i])))
    return out


def _sum_up(values: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Each node's value plus its descendants' (a parent's id is below its children's: found first)."""
    total = values.copy()
    for i in range(len(parent) - 1, -1, -1):
        if parent[i] != NONE:
            total[parent[i]] += total[i]
    return total


def _depth_first(parent: np.ndarray, first: np.ndarray) -> list[int]:
    """Node ids depth first, siblings in the order of their first call."""
    children: dict[int, list[int]] = {}
    for i, p in enumerate(parent.tolist()):
        children.setdefault(p, []).append(i)
    out, stack = [], sorted(children.get(NONE, []), key=lambda i: -first[i])
    while stack:
        i = stack.pop()
        out.append(i)
        stack.extend(sorted(children.get(i, []), key=lambda c: -first[c]))
    return out
