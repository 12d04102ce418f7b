"""NPU memory: reserved is CANN's Total Reserved, not its Total Active (nor Allocated), in both exports.
Read back here independently: memory_record.csv with the csv module (MB = MiB, rounded to the byte),
the db's MEMORY_RECORD with sqlite3; compared as multisets of (component, bytes) per column."""
import csv
from collections import Counter

import pytest

from conftest import fixture_path, read_db

from canning_tb.ingest.ascend.read import read_ascend
from canning_tb.ingest.table import NONE

MIB = 1024 * 1024


def _ours(t, column):
    return Counter((t.strings[c], int(v)) for c, v in zip(t.memory["component"], t.memory[column]) if v != NONE)


@pytest.mark.parametrize("level", ["level0", "level1", "level2"])
def test_csv_reserved_is_total_reserved(level):
    folder = fixture_path("ascend", level, "rank0_ascend_pt")
    with open(folder / "ASCEND_PROFILER_OUTPUT" / "memory_record.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    t = read_ascend(str(folder))
    for column, header in (("reserved", "Total Reserved(MB)"), ("active", "Total Active(MB)"),
                           ("allocated", "Total Allocated(MB)")):
        want = Counter((r["Component"], round(float(r[header]) * MIB)) for r in rows if r[header].strip())
        assert _ours(t, column) == want, column
    # the fixture tells the columns apart: a swap cannot pass unseen
    assert any(r["Total Reserved(MB)"] != r["Total Active(MB)"] for r in rows)


def test_db_reserved_is_total_reserved():
    folder = fixture_path("ascend", "db_level1", "rank0_ascend_pt")
    (db,) = (folder / "ASCEND_PROFILER_OUTPUT").glob("ascend_pytorch_profiler_*.db")
    con = read_db(db)
    try:
        names = dict(con.execute("SELECT id, value FROM STRING_IDS"))
        rows = con.execute("SELECT component, totalReserved, totalActive, totalAllocated FROM MEMORY_RECORD").fetchall()
    finally:
        con.close()
    t = read_ascend(str(folder))
    for i, column in ((1, "reserved"), (2, "active"), (3, "allocated")):
        want = Counter((names.get(r[0], ""), int(r[i])) for r in rows if r[i] is not None)
        assert _ours(t, column) == want, column
    assert any(r[1] != r[2] for r in rows)
