"""The noise floor's pure helpers (analysis/rules/claims.py `noise_ns`, `t90`), on hand-made series: t(0.90, n - 1)
x the standard error sd / sqrt(n), the sample sd (n - 1) across ranks, the robust sd (1.4826 x MAD) of a window's
steps, fewer than two values unknown. The t values are Student's one-sided 90 % quantiles as printed in the
statistics tables (docs/rules.md "Significance"), written here, not read from the module; sd by the stdlib."""
import math
import statistics

import pytest

from canning_tb.analysis.rules.claims import noise_ns, t90

MS = 1_000_000
# one-sided 90 % quantiles of Student's t (any statistics table)
T_TABLE = {1: 3.078, 2: 1.886, 3: 1.638, 4: 1.533, 5: 1.476, 9: 1.383, 10: 1.372, 15: 1.341, 20: 1.325, 30: 1.310}


@pytest.mark.parametrize("dof, t", [*T_TABLE.items(),
                                    # between tabled rows: the next smaller one (the larger t, the safer floor)
                                    (12, 1.372), (19, 1.341), (25, 1.325), (29, 1.325),
                                    # past 30: the normal's 1.282
                                    (31, 1.282), (1000, 1.282)])
def test_t90_is_the_tables(dof, t):
    assert t90(dof) == t


def test_fewer_than_two_values_have_no_noise_floor():
    assert noise_ns([]) == -1
    assert noise_ns([12 * MS]) == -1
    assert noise_ns([12 * MS], robust=True) == -1


def test_sample_sd_over_sqrt_n():
    # 10, 12, 14, 16 ms: mean 13, squares 9 + 1 + 1 + 9 = 20, sd = sqrt(20 / 3) = 2.582 ms (n - 1);
    # t(0.90, 3) = 1.638; noise = 1.638 x 2.582 / sqrt(4) = 2.1147 ms
    values = [10 * MS, 12 * MS, 14 * MS, 16 * MS]
    assert noise_ns(values) == round(1.638 * math.sqrt(20 / 3) * MS / 2)
    assert noise_ns(values) == round(1.638 * statistics.stdev(values) / 2)
    # 16 values alternating 9 and 11 ms: sd = sqrt(16 / 15) ms, t(0.90, 15) = 1.341, over sqrt(16) = 4
    # (over n = 16 it would be a quarter of that: a floor that lets noise pass as a finding)
    values = [9 * MS, 11 * MS] * 8
    assert noise_ns(values) == round(1.341 * math.sqrt(16 / 15) * MS / 4)


def test_robust_sd_is_the_scaled_median_absolute_deviation():
    # 10, 11, 12, 13, 40 ms: median 12, absolute deviations 2, 1, 0, 1, 28: MAD 1 ms, sd 1.4826 ms;
    # t(0.90, 4) = 1.533; noise = 1.533 x 1.4826 / sqrt(5) = 1.0164 ms (the sample sd, 12.3 ms, would give 8.5 ms)
    values = [10 * MS, 11 * MS, 12 * MS, 13 * MS, 40 * MS]
    assert noise_ns(values, robust=True) == round(1.533 * 1.4826 * MS / math.sqrt(5))
    assert noise_ns(values) == round(1.533 * statistics.stdev(values) / math.sqrt(5))
    # one step disturbed among equal ones: MAD 0, no noise
    assert noise_ns([10 * MS] * 4 + [50 * MS], robust=True) == 0
    # two values: the sample sd (a MAD of two is their half difference, the same scale): 10 and 14 ms,
    # sd = 4 / sqrt(2), t(0.90, 1) = 3.078: 3.078 x 2.828 / sqrt(2) = 6.156 ms
    assert noise_ns([10 * MS, 14 * MS], robust=True) == round(3.078 * 4 * MS / 2)
