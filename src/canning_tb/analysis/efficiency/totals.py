"""Window, step and module figures (docs/efficiency.md#mfu):
- the units of work counted: the outermost modelled operator calls (a call inside another modelled
  call is in its FLOPs already: aten::addmm inside aten::linear), and the kernels with a model of
  their own that no modelled operator launched (an NPU window without a trace, a conv whose
  operator did not record its stride);
- MFU of a span = sum over its matrix units (matmul, convolution, attention) of FLOPs / the device's
  matrix peak of their dtype, over the span's time: the share of the span the modelled work would
  take at peak. A unit is in the step in which it starts; units of a dtype without a peak are left
  out (a note says so);
- HBM bandwidth used: the mean of the NPU's HBM counters (read + write, every stack) over the step,
  where recorded; else the modelled bytes of the step's units over its time (a lower bound: work
  without a model moves bytes too);
- a module's MFU: its units' time at peak over its device total.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ingest.side_tables import rows as side_rows, where_equal
from ...ingest.table import NONE
from .. import digest_pb2 as pb
from ..context import Context
from ..modules import _nearest_module, _paths, module_rows
from ..common import nest
from .calls import Calls
from .peaks import Peak


@dataclass
class Units:
    ts: np.ndarray  # start ns
    flops: np.ndarray  # NaN unknown
    bytes: np.ndarray
    dtype: np.ndarray
    matrix: np.ndarray
    host_pos: np.ndarray  # position in ctx.host.rows, NONE for a kernel unit

    def peak_ns(self, peak: Peak | None) -> np.ndarray:
        """Per unit: its FLOPs' time at the matrix peak of its dtype, ns (NaN: not a matrix unit or no peak)."""
        tflops = np.array([(peak.matrix.get(d) if peak else None) or np.nan for d in self.dtype], np.float64)
        return np.where(self.matrix, self.flops / tflops / 1e3, np.nan)


def _outermost(ctx: Context, pos: np.ndarray, modelled: np.ndarray) -> np.ndarray:
    """Of the modelled calls, those with no modelled call above them."""
    h = ctx.host
    flag = np.zeros(len(h.rows), bool)
    flag[pos[modelled]] = True
    covered = np.zeros(len(h.rows), bool)
    for depth in range(1, int(h.depth.max(initial=0)) + 1):
        sel = np.flatnonzero(h.depth == depth)
        up = h.parent[sel]
        covered[sel] = flag[up] | covered[up]
    return modelled & ~covered[pos]


def units(ctx: Context, pos: np.ndarray, ops: Calls, dpos: np.ndarray, kernels: Calls, under: np.ndarray,
          tc_rows: set) -> Units:
    """The units of work of the window (module doc); an FP32 matrix call whose row ran on Tensor
    Cores (tc_rows: (name, shapes) of ops_by_shape) counts against the TF32 peak."""
    ev, t = ctx.ev, ctx.table
    top = np.flatnonzero(_outermost(ctx, pos, ops.modelled)) if len(pos) else np.zeros(0, np.int64)
    own = np.flatnonzero(kernels.modelled & (under == NONE))
    dtype = np.concatenate([ops.dtype[top], kernels.dtype[own]]).astype(object)
    host_rows = ctx.host.rows[pos[top]]
    # only the FP32 matrix calls can be TF32: the others are not looked at one by one
    fp32_matrix = np.flatnonzero((dtype[: len(top)] == "fp32") & ops.matrix[top]) if tc_rows else []
    for i in fp32_matrix:
        r = int(host_rows[i])
        if (t.name(r), t.strings[int(ev["shapes"][r])] or "") in tc_rows:
            dtype[i] = "tf32"
    return Units(ts=np.concatenate([ev["ts"][host_rows], ev["ts"][kernels.rows[own]]]),
                 flops=np.concatenate([ops.flops[top], kernels.flops[own]]),
                 bytes=np.concatenate([ops.bytes[top], kernels.bytes[own]]), dtype=dtype,
                 matrix=np.concatenate([ops.matrix[top], kernels.matrix[own]]),
                 host_pos=np.concatenate([pos[top], np.full(len(own), NONE, np.int64)]))


def hbm_samples(table, device: int) -> tuple[np.ndarray, np.ndarray]:
    """(sample times, bytes/s summed over the HBM series) of the NPU's HBM counters for one device."""
    cols = where_equal(side_rows(table.side, "npu_counters"), ("ts_ns", "value"),
                       group="HBM", unit="bytes/s", device=f"npu:{device}")
    if not len(cols["ts_ns"]):
        return np.zeros(0, np.int64), np.zeros(0)
    ts = np.asarray(cols["ts_ns"], np.int64)
    value = np.asarray(cols["value"], np.float64)
    uniq, inverse = np.unique(ts, return_inverse=True)
    return uniq, np.bincount(inverse.reshape(-1), weights=value, minlength=len(uniq))


def step_figures(d: pb.Digest, u: Units, peak: Peak | None, hbm: tuple,
                 has_device: bool) -> tuple[float, float, str, float, int]:
    """Fill Step.roofline; (window MFU, mean FLOPs per kept step, HBM source, mean HBM GB/s, kept
    steps). No HBM figure on a window without device work (a CPU profile)."""
    peak_ns = u.peak_ns(peak)
    kept = set(d.average_steps)
    sums = {"peak": 0.0, "dur": 0, "flops": 0.0, "hbm": [], "n": 0}
    source = "hbm_counters" if len(hbm[0]) else ("modelled_bytes" if has_device and (~np.isnan(u.bytes)).any() else "")
    by_start = np.argsort(u.ts, kind="stable")
    starts = u.ts[by_start]
    for s in d.steps:
        lo, hi = np.searchsorted(starts, [s.start_ns, s.start_ns + s.dur_ns])
        inside = np.sort(by_start[lo:hi])  # the units starting in the step, in their own order (equal sums)
        matrix = inside[u.matrix[inside] & ~np.isnan(u.flops[inside])]
        r = s.roofline
        r.flops = float(u.flops[matrix].sum()) if len(matrix) else -1.0
        timed = matrix[~np.isnan(peak_ns[matrix])]
        r.mfu = float(peak_ns[timed].sum() / s.dur_ns) if len(timed) and s.dur_ns > 0 else -1.0
        r.hbm_gbps = _hbm_of(s, u, inside, hbm, source)
        if s.number in kept:
            sums["n"] += 1
            sums["dur"] += s.dur_ns
            sums["peak"] += float(peak_ns[timed].sum()) if len(timed) else 0.0
            sums["flops"] += max(r.flops, 0.0)
            if r.hbm_gbps >= 0:
                sums["hbm"].append(r.hbm_gbps)
    has_peak = bool((u.matrix & ~np.isnan(peak_ns)).any())
    mfu = sums["peak"] / sums["dur"] if has_peak and sums["dur"] > 0 else -1.0
    flops = sums["flops"] / sums["n"] if sums["n"] and (u.matrix & ~np.isnan(u.flops)).any() else -1.0
    hbm_mean = float(np.mean(sums["hbm"])) if sums["hbm"] else -1.0
    return mfu, flops, source if hbm_mean >= 0 else "", hbm_mean, sums["n"]


def _hbm_of(s: pb.Step, u: Units, inside: np.ndarray, hbm: tuple, source: str) -> float:
    """`inside`: positions of the units that start in the step."""
    if source == "hbm_counters":
        ts, value = hbm  # sample times sorted (hbm_samples)
        lo, hi = np.searchsorted(ts, [s.start_ns, s.start_ns + s.dur_ns])
        return float(value[lo:hi].mean() / 1e9) if hi > lo else -1.0
    known = inside[~np.isnan(u.bytes[inside])]
    return float(u.bytes[known].sum() / s.dur_ns) if source and len(known) and s.dur_ns > 0 else -1.0


def module_figures(ctx: Context, d: pb.Digest, u: Units, peak: Peak | None) -> None:
    """Fill ModuleNode.roofline: the matrix units inside each module's calls (its descendants' too)."""
    for m in d.modules:
        m.roofline.flops = m.roofline.mfu = -1.0
    mods = module_rows(ctx)
    unit_rows = ctx.host.rows[u.host_pos[u.host_pos != NONE]] if len(ctx.host.rows) else np.zeros(0, np.int64)
    if len(mods) == 0 or len(unit_rows) == 0 or not len(d.modules):
        return
    sel = np.flatnonzero(u.host_pos != NONE)
    rows = np.concatenate([mods, unit_rows])
    n = nest(ctx.table, rows)
    is_module = np.zeros(len(rows), bool)
    is_module[: len(mods)] = True
    nearest = _nearest_module(n.parent, n.depth, is_module)
    up = np.where(n.parent != NONE, nearest[np.maximum(n.parent, 0)], NONE)
    order = np.lexsort((ctx.ev["ts"][mods], n.depth[: len(mods)]))
    node, nodes = _paths(ctx.ev["name"][mods], up[: len(mods)], order)
    paths = _node_paths(ctx, nodes)
    at = {m.path: i for i, m in enumerate(d.modules)}
    flops, peak_ns = np.zeros(len(d.modules)), np.zeros(len(d.modules))
    unit_peak = u.peak_ns(peak)[sel]
    calls = up[len(mods):]
    # the matrix units with FLOPs inside a module call, in unit order (the sums add up as before)
    counted = np.flatnonzero((calls != NONE) & u.matrix[sel] & ~np.isnan(u.flops[sel]))
    for k, call in zip(counted.tolist(), calls[counted].tolist()):
        j = sel[k]
        target = at.get(paths[int(node[call])])
        while target is not None and target >= 0:  # the module and each of its ancestors
            flops[target] += u.flops[j]
            peak_ns[target] += 0.0 if np.isnan(unit_peak[k]) else unit_peak[k]
            target = d.modules[target].parent
    for i, m in enumerate(d.modules):
        if flops[i] > 0:
            m.roofline.flops = float(flops[i])
            if peak_ns[i] > 0 and m.device_total_ns > 0:
                m.roofline.mfu = float(peak_ns[i] / m.device_total_ns)


def _node_paths(ctx: Context, nodes: list) -> list[str]:
    from ..modules import MODULE_PREFIX
    paths: list[str] = []
    for name_id, parent in nodes:
        name = (ctx.table.strings[name_id] or "")[len(MODULE_PREFIX):]
        paths.append(f"{paths[parent]}/{name}" if parent != NONE else name)
    return paths
