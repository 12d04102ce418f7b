"""TASK_PMU_INFO of the profiler db: every metric's rows come out of one pass over the table
(db_device._pmu), and the latest row of a task wins, whichever of a metric's name ids it is written
under, as the plain reading (tests/ingest/_ascend_plain, one SQLite row at a time) takes them.

The real db_level2 fixture, with rows appended by hand: a second STRING_IDS id for `aic_total_time`
(a db merged from two exports has such twins), rows that overwrite earlier ones, and values SQLite
holds as text or NULL (no figure: skipped)."""
import shutil
import sqlite3

import numpy as np
import pytest

from _ascend_plain.read import read_ascend as read_plain
from canning_tb.ingest.ascend.read import read_ascend
from canning_tb.ingest.table import METRIC_AIC_TIME

from conftest import fixture_path
from test_ascend_columnar_equality import assert_same


def _db(folder):
    return folder / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db"


@pytest.fixture()
def rank(tmp_path):
    dst = tmp_path / "rank0_ascend_pt"
    shutil.copytree(fixture_path("ascend", "db_level2", "rank0_ascend_pt"), dst)
    return dst


def _name_id(c, text):
    return c.execute("select id from STRING_IDS where value = ?", (text,)).fetchone()[0]


def _tasks_with(c, name_id, n):
    """n tasks having a numeric row of name_id, with their value (the only row each has in the fixture)."""
    return c.execute("select globalTaskId, value from TASK_PMU_INFO where name = ? and value > 0 "
                     "order by globalTaskId limit ?", (name_id, n)).fetchall()


@pytest.mark.parametrize("block_rows", [None, 50])  # one SQL block, or many (db_columns' offsets)
def test_the_latest_row_of_a_task_wins_across_a_metrics_name_ids(rank, monkeypatch, block_rows):
    if block_rows:
        from canning_tb.ingest.ascend.db import columns as db_columns
        monkeypatch.setattr(db_columns, "_BLOCK_ROWS", block_rows)
    before = read_ascend(str(rank)).metrics[METRIC_AIC_TIME]
    with sqlite3.connect(_db(rank)) as c:
        aic, ratio = _name_id(c, "aic_total_time"), _name_id(c, "aic_mac_ratio")
        twin = c.execute("select max(id) + 1 from STRING_IDS").fetchone()[0]
        c.execute("insert into STRING_IDS values (?, 'aic_total_time')", (twin,))
        (g1, v1), (g2, v2), (g3, v3) = _tasks_with(c, aic, 3)
        assert len({v1, v2, v3}) == 3 and not {v1, v2, v3} & {111.0, 222.0, 333.0}
        c.executemany("insert into TASK_PMU_INFO values (?, ?, ?)", [
            (g1, twin, 111.0), (g1, aic, 222.0),  # g1: the twin, then the first id again: 222 is the latest
            (g2, twin, 333.0),  # g2: only the twin, later than its fixture row: 333
            (g3, aic, "n/a"), (g3, twin, None),  # g3: no figure in either: its fixture row stays
            (g1, ratio, "text"),  # a ratio's text: skipped
        ])
    after = read_ascend(str(rank))
    got = after.metrics[METRIC_AIC_TIME]
    changed = np.flatnonzero(~((got == before) | (np.isnan(got) & np.isnan(before))))
    # by hand: exactly g1's and g2's kernels changed, from their fixture values to 222 and 333
    assert sorted(before[changed].tolist()) == sorted([v1, v2])
    assert dict(zip(before[changed].tolist(), got[changed].tolist())) == {v1: 222.0, v2: 333.0}
    assert v3 in got.tolist()
    assert_same(after, read_plain(str(rank)))
