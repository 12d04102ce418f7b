"""The window's roofline figures for people and tools: one definition for the CLI's text lines,
its JSON and the profile's op_summary() columns (docs/efficiency.md)."""
from __future__ import annotations

from .. import digest_pb2 as pb


def _known(x: float) -> float | None:
    return None if x < 0 else float(x)


def roofline_figures(d: pb.Digest) -> dict | None:
    """MFU, HBM bandwidth used, what they are judged against, and the notes (None unknown); None for
    a digest read in part (store/digest_part.py RANKS: the windows the CLI sums up across ranks)."""
    try:
        r = d.roofline
    except AttributeError:
        return None
    peak = next((p for p in r.peaks if p.device == r.device), None)
    return {"mfu": _known(r.mfu), "flops_per_step": _known(r.flops_per_step), "hbm_gbps": _known(r.hbm_gbps),
            "hbm_source": r.hbm_source or None, "hbm_share": _known(r.hbm_share),
            "modelled_share": _known(r.modelled_share), "steps": int(r.steps),
            "device": None if peak is None else {"name": peak.name, "matched": peak.matched or None,
                                                 "tflops": dict(sorted(peak.tflops.items())), "hbm_gbps": _known(peak.hbm_gbps),
                                                 "source": peak.source or None, "origin": peak.origin or None},
            "notes": list(r.notes)}


def _pct(x: float | None) -> str:
    return "unknown" if x is None else f"{100 * x:.1f} %"


def roofline_lines(d: pb.Digest) -> str:
    """MFU and HBM bandwidth as text lines (canning-prof --mode=view)."""
    f = roofline_figures(d)
    dev = f["device"]
    if dev is None:  # a CPU-only window, or a device the files do not name: nothing to judge against
        return "MFU and HBM bandwidth: unknown (no accelerator named in the window's files)"
    origin = {"chosen": ", chosen with --chip", "manifest": ", the manifest's chip", "setting": ", CANNING_DEVICE_PEAKS",
              "files": ", from the files"}.get(dev["origin"] or "", "")
    against = f"{dev['name']} ({dev['matched'] or 'no peak known'}{origin})"
    hbm = "unknown" if f["hbm_gbps"] is None else f"{f['hbm_gbps']:.1f} GB/s ({f['hbm_source'].replace('_', ' ')})"
    lines = [f"MFU {_pct(f['mfu'])} of {against}; HBM bandwidth used {hbm}, {_pct(f['hbm_share'])} of its peak; "
             f"modelled share of kernel time {_pct(f['modelled_share'])}"]
    return "\n".join(lines + [f"  {note}" for note in f["notes"]])


def op_columns(o: pb.OpStat) -> list:
    """op_summary()'s work columns of one row: GFLOP, TFLOP/s, share of roof (%), None unknown."""
    w = o.work
    if not w.model:
        return [None, None, None]
    return [None if w.flops < 0 else float(f"{w.flops / 1e9:.6g}"), None if w.tflops < 0 else float(f"{w.tflops:.6g}"),
            None if w.roof_share < 0 else round(100 * w.roof_share, 1)]
