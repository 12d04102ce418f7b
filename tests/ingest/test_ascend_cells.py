"""The µs columns of the Ascend readers (ingest/ascend/csv/cells.py) against values worked out by hand: the
fast paths (one byte matrix per cell width, torch_npu's trailing tab, whole µs, JSON durations read by
numpy at once) and the cells they must leave to the scalar rule (N/A, quotes, signs, exponents,
non-ASCII digits, a line end inside a cell) give what csv_io.us_to_ns gives, cell by cell."""
from __future__ import annotations

import numpy as np
import pytest

from canning_tb.ingest.ascend.csv.cells import dur_column, float_column, int_column, scaled_column, us_to_ns_column

LIMIT_US = (1 << 62) // 1000  # 4611686018427387: the largest whole µs whose ns stay below 2**62

TEXT_CASES = {
    "one width, trailing tab": (["1736412474714258.990\t", "1736412474714259.001\t"],
                                [1736412474714258990, 1736412474714259001]),
    "widths mixed, tab on some": (["5.000\t", "12.345", "7", "0.125\t", "12.345"],
                                  [5000, 12345, 7000, 125, 12345]),
    "whole µs up to the limit": ([str(LIMIT_US), str(LIMIT_US + 1), "0000000000000042"],
                                 [LIMIT_US * 1000, None, 42000]),
    "blanks on some rows only": ([" 12.345", "123.456", "\t1.500 "], [12345, 123456, 1500]),
    "left to the scalar rule": (["N/A", "", '"3.5"', "-2.5", "1e3", "12.3456", "\uff11\uff12", "1\n2"],
                                [None, None, 3500, -2500, 1000000, 12346, 12000, None]),
    "line ends that keep the length": (["1234", "", "5\n78"], [1234000, None, None]),
    # written after mutation testing (docs/mutants.md): the 4th decimal rounds half up; the ns limit is 2**62
    # = 4611686018427387904, exclusive, on every path (3 decimals, a sign, 19 digits past int64)
    "the 4th decimal, half up": (["12.3455", "12.3454", "+12.3455"], [12346, 12345, 12346]),
    # (each list one path: a cell that one path declines sends the whole block of its width to the next)
    "at the ns limit, 3 decimals": (["4611686018427387.903", "4611686018427387.904"], [(1 << 62) - 1, None]),
    "at the ns limit, signed": (["+4611686018427387.950", "+4611686018427387.5", "+9999999999999999999"],
                                [None, 4611686018427387500, None]),
    "19 digits of ns past int64": (["9300000000000000.000"], [None]),
    "20 digits of ns": (["12345678901234567.890"], [None]),
    "negative, 3 decimals": (["-123.456", "-000.001"], [-123456, -1]),
}


@pytest.mark.parametrize("case", sorted(TEXT_CASES))
def test_us_text_columns_give_the_hand_worked_ns(case):
    cells, expected = TEXT_CASES[case]
    ns, known = us_to_ns_column(cells)
    assert [int(v) if k else None for v, k in zip(ns, known)] == expected


@pytest.mark.parametrize("values, expected", [
    ([1, 2, None], [1000, 2000, 0]),
    ([1.25, 3], [1250, 3000]),
    ([0.5, 2.0], [500, 2000]),
    ([1 << 70, 4], [None, 4000]),
    ([LIMIT_US, -LIMIT_US, LIMIT_US + 1], [LIMIT_US * 1000, -LIMIT_US * 1000, None]),
    (["2.5", 1], [2500, 1000]),
    ([], []),
    ([0.5, (1 << 52) + 1], [500, ((1 << 52) + 1) * 1000]),  # an int past float64's exact ns: not through floats
])
def test_json_durations_give_the_hand_worked_ns(values, expected):
    ns, known = dur_column(values)
    assert [int(v) if k else None for v, k in zip(ns, known)] == expected


# Written after mutation testing (docs/mutants.md): the column converters' other paths, each cell worked out by
# hand from the rule the module docstring states (csv_io's scalar rules: µs x 1000 rounded half-even for floats,
# exact for ints, None out of (-2**62, 2**62) ns, for NaN / inf / text that is no number).
@pytest.mark.parametrize("values, expected", [
    ([], []),
    ([1.25, 0.0005, 0.0015, -2.5, float("inf"), float("nan")], [1250, 0, 2, -2500, None, None]),  # half-even
    ([3, -7, LIMIT_US, LIMIT_US + 1], [3000, -7000, LIMIT_US * 1000, None]),
    ([1 << 70, 5], [None, 5000]),                                     # too large for int64: one by one
    (["1.5", 2, 0.25, None, "N/A"], [1500, 2000, 250, None, None]),   # types mixed: each by its own rule
    ([None, None], [None, None]),
    ([True, 4], [None, 4000]),                                        # a bool is no number of µs
])
def test_us_columns_of_numbers_and_mixed_cells(values, expected):
    ns, known = us_to_ns_column(values)
    assert ns.dtype == np.int64 and known.dtype == bool and len(ns) == len(known) == len(expected)
    assert [int(v) if k else None for v, k in zip(ns, known)] == expected


NAN = None  # float_column's NaN, compared as None


@pytest.mark.parametrize("values, expected", [
    (["1.5", " 2.25\t", '"3"', "-0.5", 4, 5.5], [1.5, 2.25, 3.0, -0.5, 4.0, 5.5]),
    (["", "N/A", "NA", "n/a", "None", "null", "-", "nan", "NaN", None], [NAN] * 10),
    (["inf", "-inf", "1e400", float("inf"), "abc", 1 << 2000], [NAN] * 6),
    ([True, "7"], [NAN, 7.0]),                       # to_float: a bool is no measurement
    ([], []),
])
def test_float_column_by_hand(values, expected):
    f = float_column(values)
    assert f.dtype == np.float64
    assert [None if np.isnan(v) else float(v) for v in f] == expected


@pytest.mark.parametrize("values, expected", [
    ([3, -4, (1 << 62) - 1, 1 << 62], [3, -4, (1 << 62) - 1, None]),   # ints: exact, in range
    ([1 << 70, 2], [None, 2]),
    (["3", "2.5", "3.5", "-1.5", "N/A", 7, 8.0], [3, 2, 4, -2, None, 7, 8]),  # rounded half-even, as round()
    (["1e19", None], [None, None]),
    (["4611686018427387904"], [None]),                                  # 2**62 itself, read as a float: unknown
    ([5], [5]),                                                         # a chunk of one row
    ([], []),
])
def test_int_column_by_hand(values, expected):
    a, known = int_column(values)
    assert a.dtype == np.int64 and known.dtype == bool
    assert [int(v) if k else None for v, k in zip(a, known)] == expected


def test_scaled_column_by_hand():
    """MiB -> bytes (x 1024²): 1.5 MiB = 1572864 B, 0.25 MiB = 262144 B; N/A unknown; past 2**62 unknown."""
    a, known = scaled_column(["1.5", 0.25, "N/A", "5e12", 3], 1024 * 1024)
    assert [int(v) if k else None for v, k in zip(a, known)] == [1572864, 262144, None, None, 3145728]
    a, known = scaled_column([4, 2], 1 << 60)  # 4 x 2**60 is the limit itself: unknown
    assert [int(v) if k else None for v, k in zip(a, known)] == [None, 1 << 61]
