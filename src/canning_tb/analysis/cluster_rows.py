"""Each rank's row of the cross-rank model: its step and the parts of it, from one source for all ranks.

- CANN (every rank carries step_trace_time.csv / analysis.db StepTraceTime, Digest.cann_steps): the
  parts are CANN's own, the mean over the steps the rank's average keeps (all of CANN's steps where
  none of their numbers is among them): computing (compute = computing - overlapped, overlapped),
  communication not overlapped, free, Preparing (the host step's start to its first device task), and
  `other_ns` = the rest of the rank's step outside them (the host's tail after its last device task),
  so compute + overlapped + communication + free + preparing + other = step_ns, the digest's mean step
  (what every per-rank view shows); `cann_step_ns` = CANN's device step (computing + communication not
  overlapped + free), `bubble_ns` its pipeline receives. A figure the rank's file does not write (its
  columns differ between torch_npu / CANN versions: Preparing, Bubble) is unknown (-1), never 0; the rest of
  the step (`other_ns`) then holds it.
- trace (otherwise): the digest's mean step breakdown: compute (host operators on a CPU-only run),
  overlapped, communication (not overlapped), free = the rest of the step; Preparing unknown (-1),
  other 0.
Each row names its `source`; `per_step` rows get the same split of their own step.
"""
from __future__ import annotations

import numpy as np

ROW_FIELDS = ("step_ns", "compute_ns", "overlapped_ns", "communication_ns", "free_ns", "preparing_ns", "other_ns",
              "computing_ns")
CANN_FIELDS = ("cann_step_ns", "bubble_ns")


def _column(digests: list, read) -> np.ndarray:
    return np.fromiter((read(d) for d in digests), np.int64, len(digests))


def trace_columns(digests: list, on_host: bool) -> dict:
    """Per-rank arrays from each rank's mean step."""
    step = _column(digests, lambda d: d.average.total_ns)
    comp = _column(digests, (lambda d: d.average.host_ns) if on_host else (lambda d: d.average.compute_ns))
    ov = _column(digests, lambda d: d.average.overlapped_ns)
    comm = _column(digests, lambda d: d.average.communication_ns)
    rest = np.maximum(step - comp - ov - comm, 0)
    return {"step_ns": step, "compute_ns": comp, "overlapped_ns": ov, "communication_ns": comm, "free_ns": rest,
            "preparing_ns": np.full(len(digests), -1, np.int64), "other_ns": np.zeros(len(digests), np.int64),
            "computing_ns": comp + ov}


def _kept_cann(digest) -> list:
    kept = set(digest.average_steps)
    return [s for s in digest.cann_steps if s.step in kept] or list(digest.cann_steps)


def _cann_mean(digests: list, field: str) -> np.ndarray:
    """Per rank, the mean of `field` over the kept steps that know it; -1 where none does."""
    def mean(digest) -> int:
        known = [v for v in (getattr(s, field) for s in _kept_cann(digest)) if v >= 0]
        return int(round(sum(known) / len(known))) if known else -1
    return _column(digests, mean)


def _known(x):
    """A figure (array or int) with unknown (-1) counted as nothing."""
    return np.maximum(x, 0)


def _cann_split(step, computing, ov, comm, free, preparing) -> dict:
    """The split of one step (arrays or ints) from CANN's figures (module doc): an unknown figure (-1) stays
    unknown and counts as nothing in the others, so `other_ns` takes its time."""
    compute = np.where(np.asarray(computing) < 0, -1, np.maximum(_known(computing) - _known(ov), 0))
    rest = step - _known(computing) - _known(comm) - _known(free) - _known(preparing)
    return {"compute_ns": compute, "overlapped_ns": ov, "communication_ns": comm, "free_ns": free,
            "preparing_ns": preparing, "other_ns": np.maximum(rest, 0), "computing_ns": computing}


def cann_columns(digests: list) -> dict:
    """Per-rank arrays from CANN's own step trace (module doc), as msprof-analyze reads it."""
    computing, ov = _cann_mean(digests, "computing_ns"), _cann_mean(digests, "overlapped_ns")
    comm, free = _cann_mean(digests, "communication_not_overlapped_ns"), _cann_mean(digests, "free_ns")
    preparing, step = _cann_mean(digests, "preparing_ns"), _column(digests, lambda d: d.average.total_ns)
    return {"step_ns": step, **_cann_split(step, computing, ov, comm, free, preparing),
            "cann_step_ns": _known(computing) + _known(comm) + _known(free),
            "bubble_ns": _cann_mean(digests, "bubble_ns")}


def rank_rows(ranks: np.ndarray, cols: dict, digests: list, cann: bool, figures: list, on_host: bool) -> list[dict]:
    """The rows of `ranks`: the columns, and each rank's wait / transfer figures (wait_transfer.py:
    mean step, window_* and per_step, whose steps get their split here)."""
    fields = ROW_FIELDS + (CANN_FIELDS if cann else ())
    lists = {name: cols[name].tolist() for name in fields}
    sources = [d.cann_steps[0].source for d in digests] if cann else ["trace"] * len(digests)
    rows = []
    for i, rank in enumerate(ranks.tolist()):
        _step_splits(figures[i]["per_step"], digests[i], cann, on_host)
        rows.append({"rank": rank, "steps": len(digests[i].steps), **{name: lists[name][i] for name in fields},
                     "source": sources[i], **figures[i]})
    return rows


def _step_splits(rows: list[dict], digest, cann: bool, on_host: bool) -> None:
    """Each `per_step` row gets its step's split as the mean step's (CANN's row of that step number
    where the rank has one, else the trace's breakdown)."""
    by_number = {s.number: s.breakdown for s in digest.steps}
    cann_steps = {s.step: s for s in digest.cann_steps} if cann else {}
    for row in rows:
        b = by_number[row["step"]]
        c = cann_steps.get(row["step"])
        if c is not None:
            parts = [getattr(c, f) for f in ("computing_ns", "overlapped_ns", "communication_not_overlapped_ns",
                                             "free_ns", "preparing_ns")]
            row.update(step_ns=b.total_ns, **{k: int(v) for k, v in _cann_split(b.total_ns, *parts).items()})
            continue
        comp = b.host_ns if on_host else b.compute_ns
        rest = max(b.total_ns - comp - b.overlapped_ns - b.communication_ns, 0)
        row.update(step_ns=b.total_ns, compute_ns=comp, overlapped_ns=b.overlapped_ns,
                   communication_ns=b.communication_ns, free_ns=rest, preparing_ns=-1, other_ns=0,
                   computing_ns=comp + b.overlapped_ns)
