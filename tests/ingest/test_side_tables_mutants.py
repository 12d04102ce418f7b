"""ingest/side_tables.py by hand (issue 46, mutation testing): Columns (build, the rows it reads as, its
check), the row checks and `put` / `row` / `rows`, `where_equal` and `max_by` on rows and on Columns.
Every expected value is written out in the test. No declared table has a bool column: the bool encoding
is checked on a table declared for the test (monkeypatch)."""
import numpy as np
import pytest

from canning_tb.ingest import side_tables as side
from canning_tb.ingest.side_tables import INT_NULL, Column, Columns, SideTableError

MEM = ("component", "ts_ns", "reserved_bytes", "device")


def _mem(component, ts, reserved, device):
    return Columns.build("npu_module_mem", component=component, ts_ns=ts, reserved_bytes=reserved, device=device)


@pytest.fixture
def flags(monkeypatch):
    """A table of a bool, a float and a str column (none declared has a bool)."""
    spec = side._table("t_flags", "test", ("on", "bool", "", "a flag"), ("x", "float", "ratio", "a value"),
                       ("s", "str", "", "a text"))
    monkeypatch.setitem(side.SIDE_TABLES, "t_flags", spec)
    return spec


def test_declarations_are_columns_in_order():
    spec = side.SIDE_TABLES["step_marks"]
    assert spec.name == "step_marks" and spec.column_names == ("step", "start_ns", "end_ns")
    assert spec.columns[1] == Column("start_ns", "int", "ns", "the step's start, on the trace's clock")
    t = side._table("n", "d", ("a", "int", "ns", "doc a"), ("b", "str", "", "doc b"))
    assert (t.name, t.doc, t.columns) == ("n", "d", (Column("a", "int", "ns", "doc a"), Column("b", "str", "", "doc b")))


def test_build_keeps_an_array_of_the_right_type():
    """An int64 array is the column itself (no copy of a big column); an int32 one is cast."""
    ts = np.array([1, 2], np.int64)
    narrow = np.array([3, 4], np.int32)
    c = _mem(["A", "A"], ts, narrow, ["d", "d"])
    assert c.data["ts_ns"] is ts and c.data["reserved_bytes"] is not narrow
    assert c.data["reserved_bytes"].dtype == np.int64


def test_build_from_lists_arrays_and_id_pairs():
    """str from a list (codes in order of first sight), from an (ids, strings) pair; int from a list (None
    is INT_NULL) or an array cast to int64."""
    c = _mem(["APP", "HCCL", "APP", None], np.array([1, 2, 3, 4], np.int32), [5, None, 7, 8],
             (np.array([1, 0, 1, -1], np.int64), ("npu:0", "npu:1")))
    assert c.data["component"].tolist() == [0, 1, 0, -1] and c.data["component"].dtype == np.int32
    assert c.strings["component"] == ["APP", "HCCL"]
    assert c.data["ts_ns"].dtype == np.int64 and c.data["ts_ns"].tolist() == [1, 2, 3, 4]
    assert c.data["reserved_bytes"].tolist() == [5, INT_NULL, 7, 8] and c.data["reserved_bytes"].dtype == np.int64
    assert c.data["device"].dtype == np.int32 and c.strings["device"] == ["npu:0", "npu:1"]
    assert type(c.strings["device"]) is list
    assert len(c) == 4 and c.name == "npu_module_mem" and c.spec is side.SIDE_TABLES["npu_module_mem"]
    assert list(c) == [{"component": "APP", "ts_ns": 1, "reserved_bytes": 5, "device": "npu:1"},
                       {"component": "HCCL", "ts_ns": 2, "reserved_bytes": None, "device": "npu:0"},
                       {"component": "APP", "ts_ns": 3, "reserved_bytes": 7, "device": "npu:1"},
                       {"component": None, "ts_ns": 4, "reserved_bytes": 8, "device": None}]
    c.check()
    assert Columns("npu_module_mem", dict(c.data)).strings == {}


def test_bool_float_and_str_values(flags):
    """bool: int8, -1 None, 0 False, 1 True; float: NaN None; the values are Python's own types."""
    c = Columns.build("t_flags", on=[True, None, False], x=[1, None, 2.5], s=["a", None, "a"])
    assert c.data["on"].dtype == np.int8 and c.data["on"].tolist() == [1, -1, 0]
    assert c.data["x"].dtype == np.float64 and np.array_equal(c.data["x"], [1.0, np.nan, 2.5], equal_nan=True)
    rows = list(c)
    assert rows == [{"on": True, "x": 1.0, "s": "a"}, {"on": None, "x": None, "s": None},
                    {"on": False, "x": 2.5, "s": "a"}]
    assert [type(r["on"]) for r in rows] == [bool, type(None), bool]
    assert type(rows[0]["x"]) is float
    c.check()
    side.check_rows("t_flags", [{"on": True, "x": 1, "s": None}])
    with pytest.raises(SideTableError) as e:  # an int among bools: the row by row check, True passes it
        side.check_rows("t_flags", [{"on": True, "x": 1.0, "s": None}, {"on": 1, "x": 1.0, "s": None}])
    assert str(e.value) == "side table t_flags, row 1: on=1 is not bool"


def test_iteration_across_blocks(monkeypatch):
    """Blocks of 2 rows over 5: every row once, in order (the last block holds one)."""
    monkeypatch.setattr(Columns, "_BLOCK", 2)
    c = _mem(["A", "B", "C", "D", "E"], [0, 1, 2, 3, 4], [10, 11, None, 13, 14], ["d"] * 5)
    assert [r["component"] for r in c] == ["A", "B", "C", "D", "E"]
    assert [r["reserved_bytes"] for r in c] == [10, 11, None, 13, 14]


def test_index_slice_and_equality():
    c = _mem(["A", "B", "C"], [0, 1, 2], [None, 5, 6], ["d", "d", "e"])
    assert c[0] == {"component": "A", "ts_ns": 0, "reserved_bytes": None, "device": "d"}
    assert c[-1]["component"] == "C" and c[-3]["component"] == "A" and c[2]["device"] == "e"
    for bad in (3, -4):
        with pytest.raises(IndexError) as e:
            c[bad]
        assert e.value.args == (bad,)
    assert [r["component"] for r in c[1:]] == ["B", "C"] and c[::2] == [c[0], c[2]]
    rows = list(c)
    assert c == rows and c == tuple(rows) and not (c == rows[:2]) and not (c == {"a": 1})
    assert not (c == rows[::-1])
    assert c != _mem(["A", "B", "C"], [0, 1, 2], [None, 5, 7], ["d", "d", "e"])
    with pytest.raises(TypeError):
        hash(c)
    assert len(_mem([], [], [], [])) == 0 and list(_mem([], [], [], [])) == []


def test_columns_check_names_what_is_wrong():
    good = _mem(["A"], [0], [1], ["d"])
    cases = [
        ({**good.data, "extra": np.zeros(1)}, good.strings, "columns ['extra'] differ from the declaration"),
        ({k: v for k, v in good.data.items() if k != "device"}, good.strings,
         "columns ['device'] differ from the declaration"),
        ({**good.data, "ts_ns": np.zeros(1, np.int32)}, good.strings, "column ts_ns is not int of 1 rows"),
        ({**good.data, "ts_ns": np.zeros((1, 1), np.int64)}, good.strings, "column ts_ns is not int of 1 rows"),
        ({**good.data, "reserved_bytes": np.zeros(2, np.int64)}, good.strings,
         "column reserved_bytes is not int of 1 rows"),
        ({**good.data, "device": np.array([1], np.int32)}, good.strings, "column device names an unknown string"),
        ({**good.data, "device": np.array([0], np.int32)}, {"component": ["A"]},
         "column device names an unknown string"),
    ]
    for data, strings, message in cases:
        with pytest.raises(SideTableError) as e:
            Columns("npu_module_mem", data, strings).check()
        assert str(e.value) == f"side table npu_module_mem: {message}"
    # the row count is the first column's: a first column of 2 rows makes the second the short one
    with pytest.raises(SideTableError) as e:
        Columns("npu_module_mem", {**good.data, "component": np.array([0, 0], np.int32)}, good.strings).check()
    assert str(e.value) == "side table npu_module_mem: column ts_ns is not int of 2 rows"
    good.check()
    _mem(["A"], [0], [1], [None]).check()  # -1 is None, never an unknown string
    _mem([], [], [], []).check()


def test_codes_and_interning():
    codes = side._Codes()
    assert codes[None] == -1 and codes["b"] == 0 and codes["a"] == 1 and codes["b"] == 0
    with pytest.raises(SideTableError) as e:
        codes[3]
    assert str(e.value) == "side table value 3 is not str"
    ids, texts = side.intern_texts(["b", "a", "b", None])
    assert ids.tolist() == [0, 1, 0, -1] and ids.dtype == np.int32 and texts == ["b", "a"]
    ids, texts = side.intern_texts([])
    assert ids.tolist() == [] and texts == []


def test_encode_by_kind():
    got = side._encode([None, 2, 1.5], "float")
    assert got.dtype == np.float64 and np.array_equal(got, [np.nan, 2.0, 1.5], equal_nan=True)
    got = side._encode([None, 3, True], "int")
    assert got.dtype == np.int64 and got.tolist() == [INT_NULL, 3, 1]
    got = side._encode([None, True, False], "bool")
    assert got.dtype == np.int8 and got.tolist() == [-1, 1, 0]


def test_check_rows_says_which_row_and_column():
    marks = [side.row("step_marks", step=1, start_ns=0, end_ns=2), side.row("step_marks", step=None,
                                                                          start_ns=3, end_ns=4)]
    side.check_rows("step_marks", marks)
    side.check_rows("step_marks", [])
    with pytest.raises(SideTableError) as e:
        side.check_rows("nope", [])
    assert str(e.value) == "side table 'nope' is not declared"
    with pytest.raises(SideTableError) as e:
        side.check_rows("step_trace", _mem(["A"], [0], [1], ["d"]))
    assert str(e.value) == "side table 'step_trace' holds the columns of 'npu_module_mem'"
    with pytest.raises(SideTableError, match="names an unknown string"):
        side.check_rows("npu_module_mem", Columns("npu_module_mem", {**_mem(["A"], [0], [1], ["d"]).data}, {}))
    with pytest.raises(SideTableError) as e:
        side.check_rows("step_marks", [marks[0], {"step": 1, "start_ns": 0, "end": 1}])
    assert str(e.value) == "side table step_marks, row 1: columns ['end', 'end_ns'] differ from the declaration"
    for bad, shown in (("2", "'2'"), (True, "True"), (2.0, "2.0")):
        with pytest.raises(SideTableError) as e:
            side.check_rows("step_marks", [marks[0], marks[1], {**marks[0], "end_ns": bad}])
        assert str(e.value) == f"side table step_marks, row 2: end_ns={shown} is not int"
    # a float column takes ints and floats, not a bool; a str column only str
    row = side.row("npu_counters", group="HBM", counter="c", unit="MHz", device="npu:0", ts_ns=1, value=3)
    side.check_rows("npu_counters", [row, {**row, "value": 2.5}, {**row, "value": None}])
    with pytest.raises(SideTableError, match=r"row 1: value=False is not float"):
        side.check_rows("npu_counters", [row, {**row, "value": False}])
    with pytest.raises(SideTableError, match=r"row 0: unit=5 is not str"):
        side.check_rows("npu_counters", [{**row, "unit": 5}])


def test_put_checks_and_keeps_only_tables_with_rows():
    store = {}
    side.put(store, "step_marks", [])
    side.put(store, "npu_module_mem", _mem([], [], [], []))
    assert store == {}
    rows = [side.row("step_marks", step=1, start_ns=0, end_ns=2)]
    side.put(store, "step_marks", rows)
    assert store == {"step_marks": rows} and store["step_marks"] is rows
    with pytest.raises(SideTableError):
        side.put(store, "step_marks", [{"step": "x", "start_ns": 0, "end_ns": 1}])
    assert list(store) == ["step_marks"]


def test_row_and_rows():
    assert side.row("step_marks", step=3) == {"step": 3, "start_ns": None, "end_ns": None}
    assert list(side.row("step_marks", end_ns=1, step=3)) == ["step", "start_ns", "end_ns"]
    with pytest.raises(SideTableError) as e:
        side.row("step_marks", step=1, stop=2, extra=3)
    assert str(e.value) == "side table step_marks: undeclared column(s) ['extra', 'stop']"
    kept = [side.row("step_marks", step=1)]
    assert side.rows({"step_marks": kept}, "step_marks") is kept
    assert side.rows({}, "step_marks") == [] and side.rows({"step_marks": None}, "step_marks") == []
    with pytest.raises(SideTableError) as e:
        side.rows({"nope": [1]}, "nope")
    assert str(e.value) == "side table 'nope' is not declared"


def test_where_equal_on_rows_and_columns():
    """Rows of component APP on npu:0: the first and fourth; a value no row has gives none."""
    comp, ts, res, dev = ["APP", "HCCL", "APP", "APP"], [1, 2, 3, 4], [10, 20, 30, 40], ["npu:0", "npu:0", "npu:1",
                                                                                          "npu:0"]
    c = _mem(comp, ts, res, dev)
    rows = list(c)
    got = side.where_equal(c, ("ts_ns", "reserved_bytes"), component="APP", device="npu:0")
    assert list(got) == ["ts_ns", "reserved_bytes"]
    assert got["ts_ns"].tolist() == [1, 4] and got["reserved_bytes"].tolist() == [10, 40]
    assert side.where_equal(rows, ("ts_ns", "reserved_bytes"), component="APP", device="npu:0") == {
        "ts_ns": [1, 4], "reserved_bytes": [10, 40]}
    assert side.where_equal(c, ("ts_ns",), component="GE")["ts_ns"].tolist() == []
    assert side.where_equal(rows, ("ts_ns",), component="GE") == {"ts_ns": []}
    assert side.where_equal(c, ("ts_ns",))["ts_ns"].tolist() == [1, 2, 3, 4]
    # a None cell (-1) is not matched by a value the table lacks (-2)
    c2 = _mem(["APP", None], [1, 2], [1, 2], ["d", "d"])
    assert side.where_equal(c2, ("ts_ns",), component="GE")["ts_ns"].tolist() == []
    # a third text has id 2: a value the table lacks must not match it
    c3 = _mem(["APP", "HCCL", "GE"], [1, 2, 3], [1, 2, 3], ["d", "d", "d"])
    assert side.where_equal(c3, ("ts_ns",), component="SLOG")["ts_ns"].tolist() == []
    assert side.where_equal(c3, ("ts_ns",), component="GE")["ts_ns"].tolist() == [3]
    # a str column of None only, no strings kept (as a table built from ids without texts): no row matches
    bare = Columns("npu_module_mem", {"component": np.array([-1], np.int32), "ts_ns": np.array([1]),
                                      "reserved_bytes": np.array([1]), "device": np.array([-1], np.int32)})
    bare.check()
    assert side.where_equal(bare, ("ts_ns",), component="APP")["ts_ns"].tolist() == []


def test_max_by_by_hand():
    """Keys (device, component) in the order first met: (d1, A) max(5, 9) = 9, (None, B): None -> -1,
    (d0, None) 4, (d0, B) 0. With ids device d1=0, d0=1 and component A=0, B=1 (+1 each, None 0):
    key = dev * (max component code 2 + 1) + comp; a multiplier of 2 would merge (d1, B) = 1*2+2 = 4
    with (d0, None) = 2*2+0 = 4."""
    comp = ["A", "B", None, "A", "B", "B"]
    dev = ["d1", None, "d0", "d1", "d0", "d1"]
    res = [5, None, 4, 9, 0, 1]
    want = {("d1", "A"): 9, (None, "B"): -1, ("d0", None): 4, ("d0", "B"): 0, ("d1", "B"): 1}
    c = _mem(comp, list(range(6)), res, dev)
    got = side.max_by(c, ("device", "component"), "reserved_bytes")
    assert list(got.items()) == list(want.items())
    assert all(type(v) is int for v in got.values())
    rows = list(c)
    assert list(side.max_by(rows, ("device", "component"), "reserved_bytes").items()) == list(want.items())
    assert side.max_by(_mem([], [], [], []), ("device", "component"), "reserved_bytes") == {}
    assert side.max_by([], ("device", "component"), "reserved_bytes") == {}
    # a negative value past None's -1 still reads -1 (the floor), a large one is kept
    c = _mem(["A", "A"], [0, 1], [2 ** 40, None], ["d", "d"])
    assert side.max_by(c, ("device", "component"), "reserved_bytes") == {("d", "A"): 2 ** 40}
    c = _mem(["A"], [0], [None], ["d"])
    assert side.max_by(c, ("device", "component"), "reserved_bytes") == {("d", "A"): -1}
    # a value below -1 reads -1 too, on rows and on Columns
    rows = [side.row("npu_module_mem", component="A", ts_ns=0, reserved_bytes=-5, device="d")]
    assert side.max_by(rows, ("device", "component"), "reserved_bytes") == {("d", "A"): -1}
    c = _mem(["A"], [0], [-5], ["d"])
    assert side.max_by(c, ("device", "component"), "reserved_bytes") == {("d", "A"): -1}


def test_max_by_keys_never_merge():
    """Devices d0 (id 0 -> code 1), d1 (1 -> 2), None (0); the only component A (code 1, None 0): the
    key is dev * (1 + 1) + comp, so (d1, None) = 4, (None, A) = 1, (d0, A) = 3: three keys. (A key
    dev / 2 + comp would give (d1, None) = 1.0 = (None, A).)"""
    c = _mem(["A", None, "A", "A"], [0, 1, 2, 3], [1, 2, 3, 4], ["d0", "d1", None, "d0"])
    got = side.max_by(c, ("device", "component"), "reserved_bytes")
    assert list(got.items()) == [(("d0", "A"), 4), (("d1", None), 2), ((None, "A"), 3)]
