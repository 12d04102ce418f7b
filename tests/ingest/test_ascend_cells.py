"""The µs columns of the Ascend readers (ingest/ascend/cells.py) against values worked out by hand: the
fast paths (one byte matrix per cell width, torch_npu's trailing tab, whole µs, JSON durations read by
numpy at once) and the cells they must leave to the scalar rule (N/A, quotes, signs, exponents,
non-ASCII digits, a line end inside a cell) give what csv_io.us_to_ns gives, cell by cell."""
from __future__ import annotations

import pytest

from canning_tb.ingest.ascend.cells import dur_column, us_to_ns_column

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
])
def test_json_durations_give_the_hand_worked_ns(values, expected):
    ns, known = dur_column(values)
    assert [int(v) if k else None for v, k in zip(ns, known)] == expected
