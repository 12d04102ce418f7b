"""The digest's roofline section: peaks, every row's work and rates, step / module MFU, HBM
bandwidth, roofline points (docs/efficiency.md). Called by build.py once the operator, kernel, step
and module sections exist (it adds to them), before the rules run (they read it)."""
from __future__ import annotations

import json

import numpy as np

from ...ingest.table import Kind
from .. import digest_pb2 as pb
from ..context import Context
from . import rows, totals
from .links import mark_link_copies
from .calls import kernel_calls, operator_calls
from .peaks import Peak, window_peaks

MAX_POINTS = 300  # per kind, longest first


def _primary(d: pb.Digest, peaks: list[Peak]) -> Peak | None:
    """The accelerator with the most kernel time (the first one when none ran kernels)."""
    if not peaks:
        return None
    time: dict[int, int] = {}
    for k in d.kernels_by_name:
        time[k.device] = time.get(k.device, 0) + k.total_ns
    best = max(time, key=time.get) if time else peaks[0].device
    return next((p for p in peaks if p.device == best), peaks[0])


def _peak_message(p: Peak) -> pb.DevicePeak:
    m = pb.DevicePeak(device=p.device, kind=p.kind, name=p.name, matched=p.matched, source=p.source, note=p.note,
                      origin=p.origin,
                      vector_tflops=-1.0 if p.vector is None else p.vector, hbm_gbps=-1.0 if p.hbm is None else p.hbm)
    m.tflops.update(p.matrix)
    return m


def _points(r: pb.Roofline, d: pb.Digest) -> None:
    def usable(w: pb.WorkRates) -> bool:
        return w.flops > 0 and w.bytes > 0 and w.time_ns > 0

    ops = sorted((o for o in d.ops_by_shape if usable(o.work)), key=lambda o: -o.work.time_ns)[:MAX_POINTS]
    kernels = sorted((k for k in d.kernels_by_name if usable(k.work)), key=lambda k: -k.work.time_ns)[:MAX_POINTS]
    for o in ops:
        r.points.add(kind="operator", name=o.name, input_shapes=o.input_shapes, calls=o.calls).work.CopyFrom(o.work)
    for k in kernels:
        r.points.add(kind="kernel", name=k.name, calls=k.calls).work.CopyFrom(k.work)


def _modelled_share(ctx: Context, dpos: np.ndarray, kernels, under: np.ndarray) -> float:
    dur = ctx.ev["dur"][ctx.device_rows[dpos]].astype(np.float64)
    total = dur.sum()
    covered = kernels.modelled | (under >= 0)
    return float(dur[covered].sum() / total) if total > 0 else -1.0


def _notes(r: pb.Roofline, peak: Peak | None, u: totals.Units, has_device: bool, shapes: bool) -> None:
    if not shapes:
        r.notes.append("no input shapes in the files: the FLOPs / bytes models need them (profile with "
                       "record_shapes=True; torch_npu: record_shapes=True, profiler_level Level1 or Level2 for the "
                       "kernels' shapes)")
    if peak is not None and peak.note:
        r.notes.append(peak.note)
    if has_device and peak is None:
        r.notes.append("no accelerator named in the files: no peak to judge the rates against")
    if peak is not None:
        missing = sorted({d or "unknown dtype" for d, m, f in zip(u.dtype, u.matrix, u.flops)
                          if m and not np.isnan(f) and not peak.matrix.get(d)})
        if missing and peak.matrix:
            r.notes.append(f"matrix work in {', '.join(missing)} has no peak on {peak.matched or peak.name}: "
                           f"left out of MFU")
    if r.modelled_share >= 0:
        r.notes.append(f"{r.modelled_share:.0%} of the kernel time ran under a modelled operator or kernel; "
                       f"MFU counts the modelled matrix work only")


# the chip the handler's manifest names (ps.Profile(chip=...)): its settings are in the environment (ingest/window.py)
MANIFEST_CHIP = "settings.chip"


def _manifest_chip(env: dict) -> str | None:
    """The manifest's chip: as written from the manifest (plain), or JSON-quoted (collect/summaries.py)."""
    value = env.get(MANIFEST_CHIP)
    if isinstance(value, str) and value.startswith('"'):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, str) and value else None


def roofline_section(ctx: Context, d: pb.Digest, chip: str | None = None) -> None:
    """chip: the one chosen for this view (URL / CLI), before the manifest's, the setting's and the files'."""
    t = ctx.table
    peaks = window_peaks(t.meta.devices, chip, _manifest_chip(t.meta.environment or {}))
    peak = _primary(d, peaks)
    r = d.roofline
    r.peaks.extend(_peak_message(p) for p in peaks)
    r.device = peak.device if peak else -1
    pos, ops = operator_calls(ctx)
    kind = t.events["kind"]
    has_device = bool(np.isin(kind, [int(Kind.KERNEL), int(Kind.COMM_KERNEL), int(Kind.MEMCPY)]).any())
    host_time = not has_device
    rows.fill_operators(ctx, d.ops_by_name, pos, ops, False, peak, host_time)
    rows.fill_operators(ctx, d.ops_by_shape, pos, ops, True, peak, host_time)
    mark_link_copies(ctx, d)  # copies over PCIe / NVLink: not judged against HBM
    for o in d.ops_by_stack:  # not modelled by call stack: unknown, not 0
        rows.no_work(o.work)
    dpos, kernels, under = kernel_calls(ctx, pos, ops)
    by_device = {p.device: p for p in peaks}
    rows.fill_kernels(ctx, d.kernels_by_name, dpos, kernels, False, by_device)
    rows.fill_kernels(ctx, d.kernels_by_op, dpos, kernels, True, by_device)
    tc_rows = {(o.name, o.input_shapes) for o in d.ops_by_shape if o.tc_total_share > 0.5}
    u = totals.units(ctx, pos, ops, dpos, kernels, under, tc_rows)
    hbm = totals.hbm_samples(t, peak.device) if peak is not None and peak.kind == "npu" else (np.zeros(0), np.zeros(0))
    r.mfu, r.flops_per_step, r.hbm_source, r.hbm_gbps, r.steps = totals.step_figures(d, u, peak, hbm, has_device)
    r.hbm_share = r.hbm_gbps / peak.hbm if peak is not None and peak.hbm and r.hbm_gbps >= 0 else -1.0
    totals.module_figures(ctx, d, u, peak)
    r.modelled_share = _modelled_share(ctx, dpos, kernels, under) if len(dpos) else -1.0
    _points(r, d)
    shapes = bool((t.events["shapes"][ctx.host.rows[pos]] >= 0).any()) or bool((t.events["args"] >= 0).any())
    _notes(r, peak, u, has_device, shapes)
