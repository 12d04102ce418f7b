"""ingest/table.py by hand (issue 46, mutation testing): the interned strings, the problems, the table's
check, its cache form (`save` / `load`, lazy or not, sparse metrics, side tables as arrays), the column
builders and the sorts. Every expected value is written out in the test; the cache files are read a
second way (numpy's own `np.load`, `json`)."""
import json

import numpy as np
import pytest

from canning_tb.ingest import side_tables as side
from canning_tb.ingest import table as T
from canning_tb.ingest.table import (EVENT_COLUMNS, MEMORY_COLUMNS, NONE, ColumnBuilder, EventTable, InputError,
                                     Kind, Meta, Problem, Strings)


def test_comm_kernel_names_by_each_of_the_three_patterns():
    """A name at the start (nccl...), a family inside a templated name, an expert-parallel exchange: each
    alone is enough; compute kernels are not collectives."""
    assert T.is_comm_kernel_name("ncclKernel_AllReduce_RING_LL_Sum_float")
    assert T.is_comm_kernel_name("hcom_allReduce__586_0_1")
    assert T.is_comm_kernel_name("void c10d::symmetric_memory::one_shot_all_reduce_kernel<float>")
    assert T.is_comm_kernel_name("void deep_ep::intranode::dispatch<8>(int)")
    assert not T.is_comm_kernel_name("void at::native::vectorized_elementwise_kernel<4>")
    assert not T.is_comm_kernel_name("ampere_sgemm_128x64_nn")
    assert T.is_comm_kernel_name("x") is False  # a bool, not a match object


def test_strings_intern_find_and_index():
    """ids in order of first sight, continuing after the given values; None is NONE (-1) both ways;
    find never interns; the given list is copied."""
    given = ["a", "b"]
    s = Strings(given)
    given.append("zz")
    assert s.values == ["a", "b"] and len(s) == 2
    assert (s.id("b"), s.id("c"), s.id("c"), s.id("d"), s.id(None)) == (1, 2, 2, 3, NONE)
    assert s.values == ["a", "b", "c", "d"] and len(s) == 4
    assert (s.find("a"), s.find("d"), s.find("zz")) == (0, 3, NONE)
    assert s.values == ["a", "b", "c", "d"]  # find added nothing
    assert (s[0], s[3], s[-1]) == ("a", "d", None)
    e = Strings()
    assert (len(e), e.values, e.find("a")) == (0, [], NONE)
    assert (e.id("a"), e.values) == (0, ["a"])


def test_problem_and_input_error_texts():
    p = Problem("f.csv", "bad row")
    assert (str(p), p.severity) == ("f.csv: bad row", "error")
    e = InputError("t.json", "not JSON")
    assert (str(e), e.file, e.problem) == ("t.json: not JSON", "t.json", "not JSON")


def test_an_empty_table_has_every_column_typed():
    t = EventTable()
    assert len(t) == 0 and t.side == {} and t.metrics == {} and t.problems == []
    assert list(t.events) == list(EVENT_COLUMNS) and list(t.memory) == list(MEMORY_COLUMNS)
    for cols, spec in ((t.events, EVENT_COLUMNS), (t.memory, MEMORY_COLUMNS)):
        for k, dt in spec.items():
            assert cols[k].dtype == np.dtype(dt) and cols[k].shape == (0,), k
    t.check()
    got = T._empty({"a": np.int16, "b": np.float64})
    assert list(got) == ["a", "b"] and got["a"].dtype == np.int16 and got["a"].shape == (0,)


def _table(n=4):
    """n events at their defaults (blank_events), names "a", "b", ... by row, one memory record."""
    ev = T.blank_events(n)
    strings = Strings()
    ev["name"] = np.array([strings.id(chr(97 + i)) for i in range(n)], np.int32)
    ev["ts"] = np.array([40, 10, 30, 20][:n], np.int64)
    mem = {k: np.full(1, 7, t) for k, t in MEMORY_COLUMNS.items()}
    return EventTable(events=ev, memory=mem, strings=strings)


def test_name_of_a_row():
    t = _table()
    assert (t.name(0), t.name(3), len(t)) == ("a", "d", 4)
    t.events["name"][1] = NONE
    assert t.name(1) is None


def test_check_names_the_bad_column():
    """A missing column, a wrong dtype, a shorter column (events or memory), an undeclared side table, a
    metric of the wrong dtype or length: each raises, naming it; a sound table passes."""
    t = _table()
    t.metrics = {"m": np.zeros(4)}
    t.side = {"step_marks": [side.row("step_marks", step=1, start_ns=0, end_ns=5)]}
    t.check()
    cases = [
        (lambda u: u.events.pop("dur"), "column dur: missing or not int64"),
        (lambda u: u.events.__setitem__("kind", np.zeros(4, np.int64)), "column kind: missing or not uint8"),
        (lambda u: u.events.__setitem__("stack", np.zeros(3, np.int32)), "column stack: length 3 != 4"),
        (lambda u: u.memory.__setitem__("op", np.zeros(2, np.int32)), "column op: length 2 != 1"),
        (lambda u: u.memory.__setitem__("ts", np.zeros(1, np.int32)), "column ts: missing or not int64"),
        (lambda u: u.metrics.__setitem__("m", np.zeros(4, np.float32)),
         "metric m: not float64 or length 4 != 4"),
        (lambda u: u.metrics.__setitem__("m", np.zeros(5)), "metric m: not float64 or length 5 != 4"),
    ]
    for change, message in cases:
        u = _table()
        u.metrics = {"m": np.zeros(4)}
        change(u)
        with pytest.raises(AssertionError) as e:
            u.check()
        assert str(e.value) == message
    u = _table()
    u.side = {"nope": []}
    with pytest.raises(side.SideTableError, match="'nope' is not declared"):
        u.check()


def _rich():
    """A table of 4 events (ts 40, 10, 30, 20), one memory record, a dense metric "a" (3 of 4 rows
    known: 3 * 3 >= 4, kept whole) and a sparse one "b" (1 of 4: 3 * 1 < 4, kept as rows + values),
    a side table as rows and one as Columns, meta with an int pid key, two problems."""
    t = _table()
    t.metrics = {"b": np.array([np.nan, np.nan, 2.5, np.nan]), "a": np.array([1.0, np.nan, 3.0, 4.0])}
    t.side = {"step_marks": [side.row("step_marks", step=1, start_ns=0, end_ns=5)],
              "npu_module_mem": side.Columns.build("npu_module_mem", component=["APP", "HCCL"], ts_ns=[1, 2],
                                                   reserved_bytes=[10, None], device=["npu:0", "npu:0"])}
    t.meta = Meta(format="kineto", rank=3, process_names={7: "python"}, thread_names={"7:8": "main"},
                  environment={"k": "v"}, start_ns=5)
    t.problems = [Problem("f", "m1", "warning"), Problem("g", "m2")]
    return t


def test_save_writes_columns_sparse_metrics_and_side_arrays(tmp_path):
    """The .npz read by numpy: e_/m_ columns, metrics by sorted name (a -> x_0 whole, b -> x_1_rows [2]
    as int32 and x_1_values [2.5]), the Columns side table as s_<table>__<column>; the .json read by json:
    the rows list of the list side table only, the Columns' strings, the metric names, the row count."""
    t = _rich()
    t.save(str(tmp_path / "c"))
    with np.load(tmp_path / "c.npz") as z:
        files = set(z.files)
        assert np.array_equal(z["e_ts"], [40, 10, 30, 20]) and np.array_equal(z["m_ts"], [7])
        assert np.array_equal(z["x_0"], [1.0, np.nan, 3.0, 4.0], equal_nan=True)
        assert z["x_1_rows"].dtype == np.int32 and z["x_1_rows"].tolist() == [2]
        assert z["x_1_values"].tolist() == [2.5]
        assert z["s_npu_module_mem__reserved_bytes"].tolist() == [10, side.INT_NULL]
        assert z["s_npu_module_mem__component"].tolist() == [0, 1]
    want = ({f"e_{k}" for k in EVENT_COLUMNS} | {f"m_{k}" for k in MEMORY_COLUMNS}
            | {"x_0", "x_1_rows", "x_1_values"} | {f"s_npu_module_mem__{c}" for c in
                                                  ("component", "ts_ns", "reserved_bytes", "device")})
    assert files == want
    sidecar = json.loads((tmp_path / "c.json").read_text())
    assert sidecar["strings"] == ["a", "b", "c", "d"] and sidecar["rows"] == 4
    assert sidecar["metrics"] == ["a", "b"]
    assert sidecar["side"] == {"step_marks": [{"step": 1, "start_ns": 0, "end_ns": 5}]}
    assert sidecar["side_columns"] == {"npu_module_mem": {"component": ["APP", "HCCL"], "device": ["npu:0"]}}
    assert sidecar["problems"] == [{"file": "f", "message": "m1", "severity": "warning"},
                                   {"file": "g", "message": "m2", "severity": "error"}]
    assert sidecar["meta"]["rank"] == 3 and sidecar["meta"]["process_names"] == {"7": "python"}


@pytest.mark.parametrize("lazy", [False, True])
def test_load_gives_back_what_was_saved(tmp_path, lazy):
    t = _rich()
    t.save(str(tmp_path / "c"))
    u = EventTable.load(str(tmp_path / "c"), lazy=lazy)
    assert len(u) == 4 and u.events["ts"].tolist() == [40, 10, 30, 20]
    assert u.events["name"].tolist() == [0, 1, 2, 3] and u.events["stack"].tolist() == [NONE] * 4
    assert u.memory["addr"].tolist() == [7] and u.memory["op"].dtype == np.int32
    assert list(u.events) == list(EVENT_COLUMNS) and list(u.memory) == list(MEMORY_COLUMNS)
    assert u.strings.values == ["a", "b", "c", "d"] and u.strings.find("c") == 2
    assert list(u.metrics) == ["a", "b"]
    assert np.array_equal(u.metrics["a"], [1.0, np.nan, 3.0, 4.0], equal_nan=True)
    assert np.array_equal(u.metrics["b"], [np.nan, np.nan, 2.5, np.nan], equal_nan=True)
    assert u.metrics["b"].dtype == np.float64
    assert u.side["step_marks"] == [{"step": 1, "start_ns": 0, "end_ns": 5}]
    mem = u.side["npu_module_mem"]
    assert isinstance(mem, side.Columns) and mem.name == "npu_module_mem"
    assert list(mem) == [{"component": "APP", "ts_ns": 1, "reserved_bytes": 10, "device": "npu:0"},
                         {"component": "HCCL", "ts_ns": 2, "reserved_bytes": None, "device": "npu:0"}]
    assert u.meta.process_names == {7: "python"} and u.meta.thread_names == {"7:8": "main"}
    assert (u.meta.format, u.meta.rank, u.meta.start_ns, u.meta.environment) == ("kineto", 3, 5, {"k": "v"})
    assert [(p.file, p.message, p.severity) for p in u.problems] == [("f", "m1", "warning"), ("g", "m2", "error")]
    u.check()


def test_load_is_eager_unless_asked(tmp_path):
    """By default every column is read at once (plain dicts, the file closed); lazy keeps LazyColumns."""
    _table().save(str(tmp_path / "c"))
    u = EventTable.load(str(tmp_path / "c"))
    assert type(u.events) is dict and type(u.memory) is dict
    assert type(EventTable.load(str(tmp_path / "c"), lazy=True).events) is T.LazyColumns


def test_save_writes_numpy_scalars_as_json_numbers(tmp_path):
    """A reader's meta may hold numpy scalars and arrays (start_ns, a device's memory): JSON numbers."""
    t = _table()
    t.meta.start_ns = np.int64(5)
    t.meta.devices = [{"memory": np.int64(8), "load": np.float32(0.5), "ids": np.array([1, 2])}]
    t.save(str(tmp_path / "c"))
    sidecar = json.loads((tmp_path / "c.json").read_text())
    assert sidecar["meta"]["start_ns"] == 5 and sidecar["meta"]["devices"] == [{"memory": 8, "load": 0.5,
                                                                                "ids": [1, 2]}]
    assert EventTable.load(str(tmp_path / "c")).meta.start_ns == 5


def test_load_of_a_sidecar_without_the_later_keys(tmp_path):
    """A cache written before metrics and array side tables: no "metrics", "side_columns" (nor "side")
    key reads as none of them."""
    t = _table()
    t.save(str(tmp_path / "c"))
    sidecar = json.loads((tmp_path / "c.json").read_text())
    for key in ("metrics", "side_columns", "side"):
        del sidecar[key]
    (tmp_path / "c.json").write_text(json.dumps(sidecar))
    for lazy in (False, True):
        u = EventTable.load(str(tmp_path / "c"), lazy=lazy)
        assert (u.metrics, u.side, len(u)) == ({}, {}, 4)


def test_lazy_columns_read_once_and_refuse_unknown_names(tmp_path):
    np.savez(tmp_path / "z.npz", e_ts=np.array([1, 2]), e_dur=np.array([3, 4]), other=np.array([9]))
    with np.load(tmp_path / "z.npz") as z:
        cols = T.LazyColumns(z, "e_", {"ts": np.int64, "dur": np.int64})
        assert (len(cols), list(cols)) == (2, ["ts", "dur"])
        first = cols["dur"]
        assert first.tolist() == [3, 4] and cols["dur"] is first
        assert list(cols._read) == ["dur"]  # ts not read yet
        assert cols["ts"].tolist() == [1, 2]
        with pytest.raises(KeyError) as e:
            cols["other"]
        assert e.value.args == ("other",)
        assert dict(cols) == {"ts": cols["ts"], "dur": first}


def test_metric_arrays_at_the_third():
    """3 * known >= rows keeps the column: 1 known of 3 (3 >= 3) whole, 1 of 4 (3 < 4) as rows and
    values; none known of 0 rows (0 >= 0) whole."""
    whole = np.array([np.nan, 5.0, np.nan])
    assert list(T._metric_arrays("k", whole)) == ["k"] and T._metric_arrays("k", whole)["k"] is whole
    sparse = T._metric_arrays("k", np.array([np.nan, np.nan, np.nan, 6.0]))
    assert list(sparse) == ["k_rows", "k_values"]
    assert sparse["k_rows"].tolist() == [3] and sparse["k_rows"].dtype == np.int32
    assert sparse["k_values"].tolist() == [6.0]
    assert list(T._metric_arrays("k", np.zeros(0))) == ["k"]
    hundred = np.full(100, np.nan)
    hundred[[7, 70]] = [1.0, 2.0]  # 3 * 2 < 100; 100 rows is under 2**31: int32 rows
    got = T._metric_arrays("k", hundred)
    assert got["k_rows"].dtype == np.int32 and got["k_rows"].tolist() == [7, 70]


def test_row_numbers_widen_at_two_to_the_31():
    """Row numbers of a sparse metric: int32 (its largest value 2**31 - 1) for columns under 2**31 rows, int64 from
    2**31 rows on (the last row number, 2**31 - 1, would still fit: the bound keeps a row of margin). Checked on
    the count, not on a 16 GiB column."""
    assert T._row_index_dtype(0) is np.int32 and T._row_index_dtype(2 ** 31 - 1) is np.int32
    assert T._row_index_dtype(2 ** 31) is np.int64 and T._row_index_dtype(2 ** 32) is np.int64
    assert np.iinfo(np.int32).max == 2 ** 31 - 1


def test_jsonable_numpy_scalars_and_arrays():
    assert T._jsonable(np.int32(3)) == 3 and type(T._jsonable(np.int32(3))) is int
    assert T._jsonable(np.float32(0.5)) == 0.5 and type(T._jsonable(np.float32(0.5))) is float
    assert T._jsonable(np.array([[1, 2]])) == [[1, 2]]
    with pytest.raises(TypeError) as e:
        T._jsonable({1})
    assert str(e.value) == "not JSON serialisable: set"


def test_column_builder_defaults_and_freeze():
    """Events: ts, dur, kind default 0, the rest NONE; memory: ts and bytes 0, the rest NONE; an empty
    builder freezes to typed empty columns."""
    b = ColumnBuilder(EVENT_COLUMNS)
    assert len(b) == 0
    empty = b.freeze()
    assert all(empty[k].dtype == np.dtype(t) and len(empty[k]) == 0 for k, t in EVENT_COLUMNS.items())
    b.add(ts=5, name=2, kind=Kind.KERNEL)
    b.add(dur=3)
    assert len(b) == 2
    cols = b.freeze()
    assert cols["ts"].tolist() == [5, 0] and cols["dur"].tolist() == [0, 3] and cols["kind"].tolist() == [5, 0]
    assert cols["name"].tolist() == [2, NONE] and cols["device"].tolist() == [NONE, NONE]
    assert all(cols[k].dtype == np.dtype(t) for k, t in EVENT_COLUMNS.items())
    m = ColumnBuilder(MEMORY_COLUMNS)
    assert m.defaults == {k: (0 if k in ("ts", "bytes") else NONE) for k in MEMORY_COLUMNS}
    m.add(addr=9)
    got = m.freeze()
    assert (got["ts"].tolist(), got["bytes"].tolist(), got["addr"].tolist(), got["allocated"].tolist()) == (
        [0], [0], [9], [NONE])
    assert got["device"].dtype == np.int32


def test_blank_events():
    ev = T.blank_events(2)
    assert list(ev) == list(EVENT_COLUMNS)
    for k, t in EVENT_COLUMNS.items():
        assert ev[k].dtype == np.dtype(t)
        assert ev[k].tolist() == ([0, 0] if k in ("ts", "dur", "kind") else [NONE, NONE]), k


def test_sorts_are_by_start_and_stable():
    """ts [3, 1, 3, 0]: order 3, 1, then the two 3s as they came (0, 2)."""
    cols = {"ts": np.array([3, 1, 3, 0]), "name": np.array([0, 1, 2, 3])}
    got = T.sort_by_time(cols)
    assert got["ts"].tolist() == [0, 1, 3, 3] and got["name"].tolist() == [3, 1, 0, 2]
    ev, met = T.sort_with_metrics(cols, {"m": np.array([0.0, 0.1, 0.2, 0.3])})
    assert ev["name"].tolist() == [3, 1, 0, 2] and met["m"].tolist() == [0.3, 0.1, 0.0, 0.2]
    # 300 rows of ts i % 3 (past the small arrays a quicksort orders by insertion, stably): the rows of
    # ts 0 are 0, 3, 6, ..., then ts 1: 1, 4, ..., then ts 2: 2, 5, ...
    many = {"ts": np.arange(300) % 3, "name": np.arange(300)}
    want = list(range(0, 300, 3)) + list(range(1, 300, 3)) + list(range(2, 300, 3))
    assert T.sort_by_time(many)["name"].tolist() == want
    ev, met = T.sort_with_metrics(many, {"m": np.arange(300.0)})
    assert ev["name"].tolist() == want and met["m"].tolist() == [float(i) for i in want]


def test_metric_columns_from_pairs():
    """Row 0 has a, row 2 has a and b, row 1 nothing: a = [1, NaN, 3], b = [NaN, NaN, 2], names sorted."""
    got = T.metric_columns([(2, {"b": 2.0, "a": 3.0}), (1, {}), (0, {"a": 1.0})], 3)
    assert list(got) == ["a", "b"]
    assert np.array_equal(got["a"], [1.0, np.nan, 3.0], equal_nan=True)
    assert np.array_equal(got["b"], [np.nan, np.nan, 2.0], equal_nan=True)
    assert T.metric_columns([(0, {}), (1, None)], 2) == {}
