"""How the ranks spread (analysis/cluster_spread.py) on columns made by hand: the survivors of issue 46's
mutation run over the module. Quartiles are numpy's linear percentiles worked by hand (position p (n - 1)),
histograms 20 equal bins from min to max (the last bin holds the max)."""
import numpy as np
import pytest

from canning_tb.analysis.cluster import Cells
from canning_tb.analysis.cluster_spread import distributions, matrix_bins, rank_heatmap

RANKS = np.array([0, 2, 4, 6, 8, 10])
COLS = {"step_ns": np.array([100, 100, 100, 100, 200, -1]),  # rank 10 unknown
        "computing_ns": np.array([10, 12, 14, 16, 18, 100]),
        "communication_ns": np.array([7, 7, 7, 7, 7, 7]),
        "free_ns": np.array([100, 100, 100, 100, 100, 50]),
        "wait_ns": np.array([-1, -1, -1, -1, -1, -1]),  # no rank knows it: left out
        "transfer_ns": np.array([-1, -1, -1, -1, -1, 0])}


def _named(pairs):
    return [{"rank": r, "value": float(v)} for r, v in pairs]


def _edges(low, high):
    return pytest.approx([low + (high - low) * i / 20 for i in range(21)])


def test_distributions_by_hand():
    got = {d["metric"]: d for d in distributions(RANKS, COLS)}
    assert list(got) == ["step_ns", "computing_ns", "communication_ns", "free_ns", "transfer_ns"]
    step = got["step_ns"]
    # [100, 100, 100, 100, 200]: quartiles 100, mean 600 / 5 = 120; MAD 0: rank 8 is 100 % off, no score
    assert [step[k] for k in ("min", "q1", "median", "q3", "max", "mean")] == [100, 100, 100, 100, 200, 120]
    assert step["histogram"] == {"edges": _edges(100, 200), "counts": [4] + [0] * 18 + [1]}
    assert step["top"] == _named([(8, 200), (0, 100), (2, 100), (4, 100), (6, 100)])  # ties: lower rank first
    assert step["bottom"] == _named([(0, 100), (2, 100), (4, 100), (6, 100), (8, 200)])
    assert (step["outliers"], step["outliers_total"]) == (
        [{"rank": 8, "value": 200.0, "side": "high", "score": None}], 1)
    comp = got["computing_ns"]
    # [10, 12, 14, 16, 18, 100]: q1 at 1.25 = 12.5, median 15, q3 at 3.75 = 17.5, mean 170 / 6; bins of 4.5:
    # 10, 12, 14 < 14.5, then 16, 18 < 19, 100 in the last
    assert [comp[k] for k in ("min", "q1", "median", "q3", "max")] == [10, 12.5, 15, 17.5, 100]
    assert comp["mean"] == pytest.approx(170 / 6)
    assert comp["histogram"] == {"edges": _edges(10, 100), "counts": [3, 2] + [0] * 17 + [1]}
    assert comp["top"] == _named([(10, 100), (8, 18), (6, 16), (4, 14), (2, 12)])  # the 5 largest of 6
    assert comp["bottom"] == _named([(0, 10), (2, 12), (4, 14), (6, 16), (8, 18)])
    # deviations -5 -3 -1 1 3 85, MAD 3; all beyond 5 % of 15 = 0.75, but only 85 has |0.6745 x 85 / 3| = 19.11
    # > 3.5 (-5: 1.12)
    assert comp["outliers"] == [{"rank": 10, "value": 100.0, "side": "high", "score": 19.11}]
    comm = got["communication_ns"]
    # all 7: one bin [6.5, 7.5) cut in 20, 7 in bin 10; nobody off
    assert comm["histogram"] == {"edges": _edges(6.5, 7.5), "counts": [0] * 10 + [6] + [0] * 9}
    assert (comm["outliers"], comm["outliers_total"], comm["mean"]) == ([], 0, 7.0)
    assert comm["top"] == _named([(0, 7), (2, 7), (4, 7), (6, 7), (8, 7)])
    free = got["free_ns"]
    # [50, 100 x 5]: median 100, MAD 0, rank 10 50 % below
    assert [free[k] for k in ("min", "q1", "median", "q3", "max")] == [50, 100, 100, 100, 100]
    assert free["bottom"] == _named([(10, 50), (0, 100), (2, 100), (4, 100), (6, 100)])
    assert free["outliers"] == [{"rank": 10, "value": 50.0, "side": "low", "score": None}]
    transfer = got["transfer_ns"]
    assert [transfer[k] for k in ("min", "median", "max", "mean")] == [0, 0, 0, 0]
    assert transfer["histogram"]["counts"] == [0] * 10 + [1] + [0] * 9
    assert transfer["top"] == transfer["bottom"] == _named([(10, 0)])


def test_outliers_farthest_first_and_capped():
    # ranks 0-20 at 100, ranks 21-39 at 100 + 10 (i - 20), rank 40 at 10: median 100, MAD 0 (21 of 41 off by 0),
    # 20 ranks more than 5 away; listed by |deviation| (190, 180, ... ; 90 twice: rank 29 before rank 40), 16 shown
    values = [100] * 21 + [100 + 10 * (i - 20) for i in range(21, 40)] + [10]
    cols = {name: np.full(41, -1) for name in COLS}
    cols["step_ns"] = np.array(values)
    (step,) = distributions(np.arange(41), cols)
    assert step["outliers_total"] == 20
    assert [(o["rank"], o["side"]) for o in step["outliers"]] == (
        [(r, "high") for r in range(39, 28, -1)] + [(40, "low")] + [(r, "high") for r in range(28, 24, -1)])


def test_rank_heatmap_over_each_metrics_median():
    got = rank_heatmap(RANKS, COLS)
    assert got["metrics"] == ["step_ns", "computing_ns", "communication_ns", "free_ns", "wait_ns", "transfer_ns"]
    assert got["ranks"] == [0, 2, 4, 6, 8, 10]
    # medians 100, 15, 7, 100, none, 0 (no ratio over 0); 10 / 15 = 0.6667, 14 / 15 = 0.9333 (4 decimals)
    assert got["ratio_to_median"] == [[1.0, 1.0, 1.0, 1.0, 2.0, None],
                                      [0.6667, 0.8, 0.9333, 1.0667, 1.2, 6.6667],
                                      [1.0] * 6,
                                      [1.0] * 5 + [0.5],
                                      [None] * 6,
                                      [None] * 6]


def test_matrix_bins_of_many_ranks():
    # ranks 0-129 and rank 200 (only in the matrix): 131 ranks, ceil(131 / 64) = 3 a bin, 44 bins, the last
    # ranks 129 and 200. Cells: 0 -> 129 and 2 -> 129 in bins (0, 43); 5 -> 4 in (1, 1); 200 -> 0 in (43, 0)
    cells = Cells(np.array([0, 5, 200, 2]), np.array([129, 4, 0, 129]), ["x"] * 4, [""] * 4,
                  np.array([10, -1, 4, 6]), np.array([2, 3, -5, 1]))
    got = matrix_bins(np.arange(130), cells)
    assert got["ranks_per_bin"] == 3 and len(got["bins"]) == 44
    assert got["bins"][0] == {"first": 0, "last": 2} and got["bins"][-1] == {"first": 129, "last": 200}
    # negative bytes / time count 0
    assert got["cells"] == [{"src": 0, "dst": 43, "bytes": 16, "time_ns": 3},
                            {"src": 1, "dst": 1, "bytes": 0, "time_ns": 3},
                            {"src": 43, "dst": 0, "bytes": 4, "time_ns": 0}]
    assert all(type(c[k]) is int for c in got["cells"] for k in c)


def _outliers_of(values):
    cols = {name: np.full(len(values), -1) for name in COLS}
    cols["step_ns"] = np.array(values)
    (step,) = distributions(np.arange(len(values)), cols)
    return [(o["rank"], o["side"], o["score"]) for o in step["outliers"]]


def test_outlier_bounds():
    # median 100, MAD 0: 105 is exactly 5 % off, not beyond it
    assert _outliers_of([100, 100, 100, 105]) == []
    # |deviations| 1 0 1 0 200: MAD 1 (> 0): rank 4 scores 0.6745 x 200 / 1 = 134.9
    assert _outliers_of([99, 100, 101, 100, 300]) == [(4, "high", 134.9)]
    # median 1000, MAD 0.5: 1040 scores 0.6745 x 40 / 0.5 = 53.96 but is 4 % off (under 5 %): not an outlier
    assert _outliers_of([1000, 1000, 1001, 999, 1000, 1040]) == []
    # median 10000, |deviations| 0 0 674 674 675 675 3500 4000: MAD 674.5; 13500 scores 0.6745 x 3500 / 674.5 = 3.5,
    # not beyond 3.5; 6000 scores -4
    assert _outliers_of([10000, 10000, 10674, 9326, 10675, 9325, 13500, 6000]) == [(7, "low", -4.0)]
    # median 0: 1 ns above it is high
    assert _outliers_of([0, 0, 0, 1]) == [(3, "high", None)]


def test_rank_heatmap_zero_and_small_medians():
    cols = {name: np.array([-1, -1, -1]) for name in COLS}
    cols["step_ns"] = np.array([0, 4, 4])  # a known 0: median 4, ratio 0
    cols["free_ns"] = np.array([1, 1, 2])  # median 1
    got = dict(zip(rank_heatmap(np.arange(3), cols)["metrics"], rank_heatmap(np.arange(3), cols)["ratio_to_median"]))
    assert got["step_ns"] == [0.0, 1.0, 1.0] and got["free_ns"] == [1.0, 1.0, 2.0]
