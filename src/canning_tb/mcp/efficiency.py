"""roofline / mfu: how far one window's work is from the hardware (analysis/efficiency: device peaks,
MFU, HBM bandwidth, roofline points), as the plugin's /roofline answer holds it
(queries/roofline.roofline_impl). Digests without that section (a version of canning-tb before
analysis/efficiency, or a digest written at the source by one) answer that it is not in this digest."""
from __future__ import annotations

from .bounds import UNITS, first, offset_of, paged
from .terms import EFFICIENCY, glossary

NOT_HERE = ("not in this digest: roofline points and MFU come from canning-tb's efficiency analysis "
            "(analysis/efficiency), which this digest (or this version of canning-tb) does not have")
POINT_KINDS = ("all", "operator", "kernel")
STEPS_SHOWN = 50


def _roofline(host, run: str, worker: str, window: str) -> tuple[dict | None, dict | None]:
    """(the /roofline answer of the window, None) or (None, the answer to give instead: the window is
    being digested, or its digest has no roofline section)."""
    pending = host.pending(run, worker, window)
    if pending:
        return None, pending
    from canning_tb.analysis import digest_pb2 as pb
    try:
        from canning_tb.queries.roofline import roofline_impl
    except ImportError:
        roofline_impl = None
    if roofline_impl is None or "roofline" not in pb.Digest.DESCRIPTOR.fields_by_name:
        return None, {"run": run, "worker": worker, "window": window, "status": "not_in_digest", "message": NOT_HERE}
    return roofline_impl(host.store(), run, worker, window), None


def mfu(host, run: str, worker: str, window: str) -> dict:
    """The window's MFU, matrix FLOPs per step, HBM bandwidth used, the device peaks they are judged
    against and each step's MFU; -1 where unknown, with the notes that say what would give it."""
    body, instead = _roofline(host, run, worker, window)
    if body is None:
        return instead
    figures = {k: v for k, v in body["roofline"].items() if k != "points"}
    return {"run": run, "worker": worker, "window": window, "roofline": figures,
            "points_total": len(body["roofline"]["points"]), **first(body["steps"], STEPS_SHOWN, "steps"),
            "glossary": glossary(EFFICIENCY), "units": UNITS}


def roofline(host, run: str, worker: str, window: str, kind: str = "all", cursor: str | None = None,
             limit: int = 50) -> dict:
    """The roofline points (operators by name + shapes, kernels) with their FLOPs, bytes, achieved
    rates, roof and bound, longest first, paged."""
    body, instead = _roofline(host, run, worker, window)
    if body is None:
        return instead
    question = {"tool": "roofline", "run": run, "worker": worker, "window": window, "kind": kind}
    offset = offset_of(cursor, question)
    points = [p for p in body["roofline"]["points"] if kind == "all" or p["kind"] == kind]
    answer = {"run": run, "worker": worker, "window": window, "kind": kind, "device": body["roofline"]["device"],
              "total": len(points), "offset": offset, "points": points[offset:offset + limit], "units": UNITS}
    if offset == 0:
        answer["glossary"] = glossary(EFFICIENCY)
    return paged(answer, "points", question, offset, len(points))
