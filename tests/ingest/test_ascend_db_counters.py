"""The profiler db's counter tables (counters.db_counter_rows) read in one pass per table for all its value
columns: a sample whose value is NULL costs that sample only, not the row's other columns, and is no sample
of 0 (db_columns.select read NULL reals as 0.0 before: SQLite's printf prints NULL so).

The real db_level2 fixture with one ACC_PMU row appended by hand: readBwLevel NULL, the other three set."""
import shutil
import sqlite3

from canning_tb.ingest.ascend.read import read_ascend

from conftest import fixture_path


def test_a_null_counter_value_costs_that_sample_only(tmp_path):
    dst = tmp_path / "rank0_ascend_pt"
    shutil.copytree(fixture_path("ascend", "db_level2", "rank0_ascend_pt"), dst)
    before = list(read_ascend(str(dst)).side["npu_counters"])
    with sqlite3.connect(dst / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db") as c:
        ts, dev = c.execute("select max(timestampNs) + 1000, min(deviceId) from ACC_PMU").fetchone()
        c.execute("insert into ACC_PMU (accId, readBwLevel, writeBwLevel, readOstLevel, writeOstLevel, timestampNs, "
                  "deviceId) values (7, NULL, 11, 12, 13, ?, ?)", (ts, dev))
    after = list(read_ascend(str(dst)).side["npu_counters"])
    added = [r for r in after if r["ts_ns"] == ts]
    # by hand: the three set columns as three samples of acc 7, none for the NULL one
    assert sorted((r["counter"], r["value"]) for r in added) == [
        ("read_ost acc_id 7", 12.0), ("write_band_width acc_id 7", 11.0), ("write_ost acc_id 7", 13.0)]
    assert all(r["group"] == "Acc PMU" and r["device"] == f"npu:{dev}" for r in added)
    assert len(after) == len(before) + 3


def test_select_reads_null_reals_as_nan_and_keeps_every_digit():
    """db_columns.select by hand on an in-memory table: NULL -> NaN (SQLite's printf alone prints 0.0), ints
    NULL -> INT_NULL, a real's 17 digits and infinities kept."""
    import numpy as np

    from canning_tb.ingest.ascend.db import columns as q
    c = sqlite3.connect(":memory:")
    c.execute("create table t (a integer, x real)")
    c.executemany("insert into t values (?, ?)", [(1, None), (None, 0.1), (3, 1e308 * 10), (4, -2.5)])
    got = q.select(c, "t", ints=["a"], reals=["x"])
    assert got["a"].tolist() == [1, q.INT_NULL, 3, 4]
    assert np.isnan(got["x"][0]) and got["x"][1:].tolist() == [0.1, float("inf"), -2.5]


def _db_copy(tmp_path):
    dst = tmp_path / "rank0_ascend_pt"
    shutil.copytree(fixture_path("ascend", "db_level2", "rank0_ascend_pt"), dst)
    return dst, dst / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db"


def test_a_sample_without_a_device_is_dropped_and_names_no_device(tmp_path):
    """A NULL deviceId: the row's samples are dropped (no device to put them on), as the text reading drops a
    sample of no device; no 'npu:<NULL code>' device appears."""
    dst, db = _db_copy(tmp_path)
    before = list(read_ascend(str(dst)).side["npu_counters"])
    with sqlite3.connect(db) as c:
        ts = c.execute("select max(timestampNs) + 1000 from ACC_PMU").fetchone()[0]
        c.execute("insert into ACC_PMU (accId, readBwLevel, writeBwLevel, readOstLevel, writeOstLevel, timestampNs, "
                  "deviceId) values (7, 10, 11, 12, 13, ?, NULL)", (ts,))
        devices = {f"npu:{d}" for (d,) in c.execute("select distinct deviceId from ACC_PMU where deviceId is not null")}
    after = list(read_ascend(str(dst)).side["npu_counters"])
    assert after == before
    assert {r["device"] for r in after} <= devices | {r["device"] for r in before}


def test_a_counter_table_without_one_value_column_reads_the_others(tmp_path):
    """An ACC_PMU without writeOstLevel (another CANN's schema): its other three series are read as before,
    that one is absent (unknown, never 0), and the rest of the db is read, not 'SQLite error, partly read'."""
    dst, db = _db_copy(tmp_path)
    whole = read_ascend(str(dst))
    before = list(whole.side["npu_counters"])
    with sqlite3.connect(db) as c:
        c.execute("alter table ACC_PMU drop column writeOstLevel")
    cut = read_ascend(str(dst))
    after = list(cut.side["npu_counters"])
    expected = [r for r in before if not r["counter"].startswith("write_ost acc_id")]
    assert len(expected) < len(before) and after == expected
    assert not any("SQLite error" in p.message for p in cut.problems), cut.problems
    assert len(cut.events["ts"]) == len(whole.events["ts"])


def test_a_counter_table_without_its_key_column_is_not_read_and_the_others_are(tmp_path):
    """An ACC_PMU without accId: its series cannot be named, so none of it is read; the other tables' are."""
    dst, db = _db_copy(tmp_path)
    before = list(read_ascend(str(dst)).side["npu_counters"])
    with sqlite3.connect(db) as c:
        c.execute("alter table ACC_PMU drop column accId")
    cut = read_ascend(str(dst))
    expected = [r for r in before if r["group"] != "Acc PMU"]
    assert len(expected) < len(before) and list(cut.side["npu_counters"]) == expected
    assert not any("SQLite error" in p.message for p in cut.problems), cut.problems
