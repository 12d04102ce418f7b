"""GET /roofline: one window's roofline section (analysis/efficiency: peaks, MFU, HBM bandwidth, the
points of the Roofline view) and each step's MFU and HBM bandwidth, as the digest holds them; step
starts relative to the window start; `chips`: the names the UI's chip selector offers (docs/http_api.md)."""
from __future__ import annotations

from canning_tb.util.digest_json import to_plain

from .errors import window_digest
from .sections import _head, relative


def roofline_impl(store, run: str, worker: str, window: str) -> dict:
    digest = window_digest(store, run, worker, window)
    t0 = digest.window.start_ns
    steps = [{"number": s.number, "start_ns": relative(s.start_ns, t0), "dur_ns": s.dur_ns,
              "roofline": to_plain(s.roofline)} for s in digest.steps]
    return {**_head(store, run, worker, window, digest), "roofline": to_plain(digest.roofline), "steps": steps,
            "chips": chip_choices(digest)}


def chip_choices(digest) -> list[str]:
    """The chips the UI offers for this window: the table's rows for its accelerators' kinds."""
    from canning_tb.analysis.efficiency.peaks import chip_names
    kinds = {p.kind.lower() for p in digest.roofline.peaks}
    return [name for kind in sorted(kinds) for name in chip_names(kind)]
