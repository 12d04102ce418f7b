"""The work of every operator call and kernel of a window (docs/efficiency.md#attribution):
- an operator call: its model over its inputs; without one, the FLOPs the profiler counted itself
  (torch_npu's `flops` arg with with_flops=True), bytes unknown;
- a kernel: its own model where the files give its tensors (NPU kernel tables); else the work of
  the nearest modelled operator it was launched under, when that operator's calls launched this one
  compute kernel and no other (a GEMM launched by aten::mm): a kernel of an operator that launches
  several has no share of it, none is guessed.
Models run once per distinct (name, input shapes, args).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ingest.table import METRIC_FLOPS, NONE, Kind
from ..context import Context
from ..ops import _op_positions
from . import dtypes
from .inputs import parse
from .registry import OPERATORS, work_of

MATRIX_OPERATORS = frozenset(name for name, fn in OPERATORS.items()
                             if fn.__module__.endswith(("models_matmul", "models_conv", "models_attention")))


@dataclass
class Calls:
    """Parallel arrays over some event rows: NaN where unknown."""
    rows: np.ndarray
    flops: np.ndarray
    bytes: np.ndarray
    dtype: np.ndarray  # object: the dtype class
    model: np.ndarray  # object: the model's name, "" none
    matrix: np.ndarray  # bool

    @classmethod
    def empty(cls, rows: np.ndarray) -> "Calls":
        n = len(rows)
        return cls(rows, np.full(n, np.nan), np.full(n, np.nan), np.full(n, "", object), np.full(n, "", object),
                   np.zeros(n, bool))

    @property
    def modelled(self) -> np.ndarray:
        return (self.model != "") & (~np.isnan(self.flops) | ~np.isnan(self.bytes))


def distinct(cols: list[np.ndarray], size: int) -> tuple[list, np.ndarray]:
    """The distinct tuples of id columns (each id in [-1, size - 1)) and each row's index into them;
    one int64 key per row where it fits (np.unique on 1-D sorts far faster than on rows)."""
    if size ** len(cols) < 1 << 62:
        key = np.zeros(len(cols[0]), np.int64)
        for c in cols:
            key = key * size + c.astype(np.int64) + 1
        uniq, inverse = np.unique(key, return_inverse=True)
        out = []
        for k in uniq.tolist():
            parts = []
            for _ in cols:
                k, r = divmod(k, size)
                parts.append(r - 1)
            out.append(tuple(reversed(parts)))
        return out, inverse.reshape(-1)
    uniq, inverse = np.unique(np.stack(cols, axis=1).astype(np.int64), axis=0, return_inverse=True)
    return [tuple(u) for u in uniq.tolist()], inverse.reshape(-1)


def _evaluate(ctx: Context, rows: np.ndarray) -> Calls:
    t = ctx.table
    out = Calls.empty(rows)
    if not len(rows):
        return out
    ev = ctx.ev
    keys, inverse = distinct([ev[c][rows] for c in ("name", "shapes", "args")], len(t.strings) + 1)
    found = Calls.empty(np.zeros(len(keys), np.int64))  # per distinct key, then spread to the rows
    for u, (name, shapes, args) in enumerate(keys):
        work = work_of(parse(t.strings[name] or "", t.strings[shapes], t.strings[args]))
        if work is not None:
            found.flops[u] = np.nan if work.flops is None else work.flops
            found.bytes[u] = np.nan if work.bytes is None else work.bytes
            found.dtype[u], found.model[u], found.matrix[u] = work.dtype, work.model, work.matrix
    for name in ("flops", "bytes", "dtype", "model", "matrix"):
        setattr(out, name, getattr(found, name)[inverse])
    return out


def _profiler_flops(ctx: Context, calls: Calls) -> None:
    """Calls no model knows: the FLOPs the profiler counted, where it wrote them."""
    counted = ctx.table.metrics.get(METRIC_FLOPS)
    if counted is None:
        return
    t = ctx.table
    values = counted[calls.rows]
    use = (calls.model == "") & ~np.isnan(values) & (values > 0)
    for i in np.flatnonzero(use).tolist():
        row = int(calls.rows[i])
        x = parse(t.name(row) or "", t.strings[int(t.events["shapes"][row])], t.strings[int(t.events["args"][row])])
        calls.flops[i], calls.model[i] = values[i], "profiler"
        calls.dtype[i], calls.matrix[i] = dtypes.peak_class(x.dtype(0)), x.name in MATRIX_OPERATORS


def operator_calls(ctx: Context) -> tuple[np.ndarray, Calls]:
    """(positions in ctx.host.rows of the operator calls of the tables, their Calls)."""
    pos = _op_positions(ctx)
    calls = _evaluate(ctx, ctx.host.rows[pos])
    _profiler_flops(ctx, calls)
    return pos, calls


def _nearest_modelled(ctx: Context, owner: np.ndarray, modelled_pos: np.ndarray) -> np.ndarray:
    """Per kernel: the host position of the nearest modelled operator at or above its launching op."""
    is_modelled = np.zeros(len(ctx.host.rows), bool)
    is_modelled[modelled_pos] = True
    out = np.full(len(owner), NONE, np.int64)
    cur = owner.copy()
    alive = np.flatnonzero(cur != NONE)
    while len(alive):
        hit = is_modelled[cur[alive]]
        out[alive[hit]] = cur[alive[hit]]
        alive = alive[~hit]
        cur[alive] = ctx.host.parent[cur[alive]]
        alive = alive[cur[alive] != NONE]
    return out


def kernel_calls(ctx: Context, op_pos: np.ndarray, ops: Calls) -> tuple[np.ndarray, Calls, np.ndarray]:
    """(positions in ctx.device_rows of the compute kernels, their Calls, per kernel the host position
    of the modelled operator it is under, NONE none)."""
    kind = ctx.ev["kind"][ctx.device_rows]
    dpos = np.flatnonzero(kind == int(Kind.KERNEL))
    own = _evaluate(ctx, ctx.device_rows[dpos])
    under = np.full(len(dpos), NONE, np.int64)
    if len(ctx.host.rows) and len(dpos):
        modelled = ops.modelled
        under = _nearest_modelled(ctx, ctx.op_owner[dpos], op_pos[modelled])
        by_pos = np.full(len(ctx.host.rows), -1, np.int64)
        by_pos[op_pos[modelled]] = np.flatnonzero(modelled)
        counts = np.bincount(under[under != NONE], minlength=len(ctx.host.rows))
        inherit = (under != NONE) & ~own.modelled
        inherit[inherit] = counts[under[inherit]] == 1
        src = by_pos[under[inherit]]
        for name in ("flops", "bytes", "dtype", "model", "matrix"):
            getattr(own, name)[inherit] = getattr(ops, name)[src]
    return dpos, own, under
