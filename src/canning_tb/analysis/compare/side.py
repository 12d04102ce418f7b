"""One side of a comparison (one or more windows' digests) put per step, so that windows of
different lengths compare.

steps = the sum over windows of max(number of steps, 1); every time, call count and byte count of
the side is its sum over the windows divided by `steps`. The step time and its breakdown are the
windows' `average` (the Overview's figures), weighted by their steps. The breakdown's categories
are the fields of `Breakdown` (all but total_ns), read from the descriptor so that a category
added to the digest is compared without a change here.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import digest_pb2 as pb
from ..summary import has_device_work

CATEGORIES = [f.name[:-3] for f in pb.Breakdown.DESCRIPTOR.fields if f.name != "total_ns"]
BATCH_SIZE_KEY = "batch_size"  # WindowInfo.environment: samples per step, where the job says it


@dataclass
class Side:
    digests: list
    windows: int
    steps: int
    step_ns: float                  # mean step time
    breakdown: dict[str, float]     # category -> ns per step
    has_device: bool
    batch_size: float | None        # samples per step, None unknown


def _batch_size(digests: list) -> float | None:
    sizes = set()
    for digest in digests:
        text = digest.window.environment.get(BATCH_SIZE_KEY, "")
        try:
            sizes.add(float(text))
        except ValueError:
            return None
    return sizes.pop() if len(sizes) == 1 else None


def side_of(digests) -> Side:
    """A Side of one digest or a list of digests."""
    digests = [digests] if isinstance(digests, pb.Digest) else list(digests)
    if not digests:
        raise ValueError("a side of a comparison needs at least one window")
    weights = [max(len(d.steps), 1) for d in digests]
    steps = sum(weights)

    def mean(field: str) -> float:
        return sum(getattr(d.average, field) * w for d, w in zip(digests, weights)) / steps

    breakdown = {c: mean(f"{c}_ns") for c in CATEGORIES}
    return Side(digests=digests, windows=len(digests), steps=steps, step_ns=mean("total_ns"), breakdown=breakdown,
                has_device=any(has_device_work(d) for d in digests), batch_size=_batch_size(digests))
