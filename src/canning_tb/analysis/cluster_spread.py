"""How the ranks of one window spread: the views of cluster.analyse_ranks that fit thousands of ranks.

- distributions: per metric of the rank rows (SPREAD_METRICS), over the ranks where it is known
  (not -1; a metric no rank knows is left out): min, quartiles, median, max, mean
  (numpy's linear percentiles), a histogram (HISTOGRAM_BINS equal bins from min to max), the TOP_K
  ranks with the largest and the smallest values (ties: the lower rank first), and the outliers.
- outliers (a robust rule that a few slow ranks cannot hide, unlike the mean and standard
  deviation): deviation = value - median, MAD = median |deviation|; a rank is an outlier when
  |deviation| > 5 % of |median| (SPREAD_RATIO: the slow-rank threshold) and, when MAD > 0, its
  modified z-score 0.6745 x deviation / MAD is beyond +-3.5 (Iglewicz and Hoaglin); `score` is
  null when MAD = 0 (most ranks equal: any rank 5 % away stands out). The OUTLIERS_SHOWN farthest
  from the median are listed, `outliers_total` counts them all; `side` is "high" or "low".
- rank_heatmap: rank x metric, each value over the metric's median (null when the median is 0 or
  the value unknown).
- matrix_bins: the communication matrix with the ranks cut into at most MATRIX_BINS contiguous bins
  of `ranks_per_bin` ranks (in rank order, over the ranks of the view and of the matrix): bytes and
  time summed per (source bin, destination bin); with fewer ranks, one bin per rank.
"""
from __future__ import annotations

import numpy as np

from canning_tb.util.arrays import distinct

SPREAD_METRICS = ("step_ns", "computing_ns", "communication_ns", "free_ns", "wait_ns", "transfer_ns")
SPREAD_RATIO = 0.05
TOP_K = 5
HISTOGRAM_BINS = 20
OUTLIER_Z = 3.5
OUTLIERS_SHOWN = 16
MATRIX_BINS = 64


def distributions(ranks: np.ndarray, cols: dict) -> list[dict]:
    """Per figure, over the ranks that have it (-1: unknown, e.g. wait without a matching call)."""
    out = []
    for metric in SPREAD_METRICS:
        known = cols[metric] >= 0
        if known.any():
            out.append(_distribution(metric, ranks[known], cols[metric][known].astype(np.float64)))
    return out


def _distribution(metric: str, ranks: np.ndarray, values: np.ndarray) -> dict:
    low, q1, median, q3, high = np.percentile(values, [0, 25, 50, 75, 100]).tolist()
    span = (low, high) if high > low else (low - 0.5, low + 0.5)  # all ranks equal: one bin holds them
    counts, edges = np.histogram(values, bins=HISTOGRAM_BINS, range=span)
    outliers = _outliers(ranks, values, median)
    return {"metric": metric, "min": low, "q1": q1, "median": median, "q3": q3, "max": high,
            "mean": float(values.mean()), "histogram": {"edges": edges.tolist(), "counts": counts.tolist()},
            "top": _named(ranks, values, np.lexsort((ranks, -values))[:TOP_K]),
            "bottom": _named(ranks, values, np.lexsort((ranks, values))[:TOP_K]),
            "outliers": outliers[:OUTLIERS_SHOWN], "outliers_total": len(outliers)}


def _named(ranks: np.ndarray, values: np.ndarray, chosen: np.ndarray) -> list[dict]:
    return [{"rank": int(ranks[i]), "value": float(values[i])} for i in chosen.tolist()]


def _outliers(ranks: np.ndarray, values: np.ndarray, median: float) -> list[dict]:
    deviation = values - median
    mad = float(np.median(np.abs(deviation)))
    far = np.abs(deviation) > SPREAD_RATIO * abs(median)
    score = 0.6745 * deviation / mad if mad > 0 else None
    if score is not None:
        far &= np.abs(score) > OUTLIER_Z
    chosen = np.flatnonzero(far)
    chosen = chosen[np.lexsort((ranks[chosen], -np.abs(deviation[chosen])))]
    return [{"rank": int(ranks[i]), "value": float(values[i]), "side": "high" if deviation[i] > 0 else "low",
             "score": None if score is None else round(float(score[i]), 2)} for i in chosen.tolist()]


def rank_heatmap(ranks: np.ndarray, cols: dict) -> dict:
    ratios = []
    for metric in SPREAD_METRICS:
        values = cols[metric].astype(np.float64)
        known = values >= 0
        median = float(np.median(values[known])) if known.any() else 0.0
        ratios.append([round(v / median, 4) if ok and median > 0 else None
                       for v, ok in zip(values.tolist(), known.tolist())])
    return {"metrics": list(SPREAD_METRICS), "ranks": ranks.tolist(), "ratio_to_median": ratios}


def matrix_bins(ranks: np.ndarray, cells) -> dict:
    everyone = distinct(np.concatenate([ranks, cells.src, cells.dst]))
    per_bin = max(1, -(-len(everyone) // MATRIX_BINS))
    bins = [{"first": int(part[0]), "last": int(part[-1])}
            for part in (everyone[i:i + per_bin] for i in range(0, len(everyone), per_bin))]
    if not len(cells.src):
        return {"ranks_per_bin": per_bin, "bins": bins, "cells": []}
    src_bin = np.searchsorted(everyone, cells.src) // per_bin
    dst_bin = np.searchsorted(everyone, cells.dst) // per_bin
    flat = src_bin * len(bins) + dst_bin
    used, inverse = np.unique(flat, return_inverse=True)
    sums = [np.zeros(len(used), np.int64) for _ in range(2)]
    np.add.at(sums[0], inverse.reshape(-1), np.maximum(cells.bytes, 0))
    np.add.at(sums[1], inverse.reshape(-1), np.maximum(cells.time_ns, 0))
    return {"ranks_per_bin": per_bin, "bins": bins,
            "cells": [{"src": cell // len(bins), "dst": cell % len(bins), "bytes": nbytes, "time_ns": ns}
                      for cell, nbytes, ns in zip(used.tolist(), sums[0].tolist(), sums[1].tolist())]}
