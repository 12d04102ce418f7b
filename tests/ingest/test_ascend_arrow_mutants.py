"""ingest/ascend/csv/arrow.py under mutation (docs/mutants.md, issue 46): the columns not in the file, the texts
that mean "no number" in a text column, and a header whose quote is its last byte, each worked out by hand from
what the csv module reads (rows.py's fallback)."""
from __future__ import annotations

import pyarrow as pa

from canning_tb.ingest.ascend.csv import arrow
from canning_tb.ingest.ascend.csv.rows import _MISSING, read_table


def test_a_wanted_column_of_none_is_all_null_text_beside_the_others():
    """wanted [None, 1, None, 0] of 'a,b / 1,2 / 3,4': a null text column of 2 rows, b's cells, again nulls, a's."""
    cols = arrow.read(b"a,b\n1,2\n3,4\n", 2, [None, 1, None, 0], set(), _MISSING)
    assert [c.to_pylist() for c in cols] == [[None, None], ["2", "4"], [None, None], ["1", "3"]]
    assert all(pa.types.is_string(c.type) for c in cols)


def test_missing_texts_stay_text_in_a_text_column():
    """A text column keeps '', 'N/A' and '-' as the csv module reads them (only number columns make them null)."""
    cols = arrow.read(b"a,b\n,N/A\n-,x\n", 2, [0, 1], set(), _MISSING)
    assert [c.to_pylist() for c in cols] == [["", "-"], ["N/A", "x"]]
    cols = arrow.read(b"a,b\n,N/A\n-,2.5\n", 2, [0, 1], {1}, _MISSING)
    assert cols[0].to_pylist() == ["", "-"] and cols[1].to_pylist() == [None, 2.5]


def test_a_quote_at_the_end_of_the_header_line_leaves_the_file_to_the_csv_module(tmp_path):
    """'a,"' opens a quoted cell that runs to the end of the file: the csv module reads the header as
    ['a', '1,2'] (the cell '\\n1,2\\n', stripped) and no row. pyarrow, which would skip line one and read '1,2' as a
    row, must decline."""
    raw = b'a,"\n1,2\n'
    assert arrow.read(raw, 2, [0, 1], set(), _MISSING) is None
    path = tmp_path / "q.csv"
    path.write_bytes(raw)
    table = read_table(str(path), "q.csv", [])
    assert table.header == ["a", "1,2"]
    assert [[c.to_pylist() for c in chunk] for chunk in table.scan([0, 1])] == []
