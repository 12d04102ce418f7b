"""ingest/ascend/layout.py under mutation: how a torch_npu folder is recognised by what it holds, and
where its files are; small hand-made folders, every answer worked out from the rules in the module doc."""
from __future__ import annotations

import os

import pytest

from canning_tb.ingest.ascend.layout import (Layout, _is_ascend_trace, _listdir, is_export_folder, locate,
                                             loose_dbs, scan, window_kind)
from canning_tb.ingest.table import InputError

ASCEND_TRACE = b'[{"ph": "X", "name": "a"}]'
KINETO_TRACE = b'{"traceEvents": [{"ph": "X"}]}'


def _put(path, data=b"x") -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


def test_listdir(tmp_path):
    """Files and folders directly inside, hidden ones ('.x') left out; an unreadable folder: nothing."""
    _put(tmp_path / "a.csv")
    _put(tmp_path / ".hidden")
    _put(tmp_path / "sub" / "inner.csv")
    (tmp_path / ".hdir").mkdir()
    assert _listdir(str(tmp_path)) == ({"a.csv"}, {"sub"})
    assert _listdir(str(tmp_path / "missing")) == (set(), set())


@pytest.mark.parametrize("data,want", [
    (ASCEND_TRACE, True),
    (b"\xef\xbb\xbf \t\r\n" + ASCEND_TRACE, True),  # a BOM and white space before the array
    (b"\n" + ASCEND_TRACE, True), (b"\r" + ASCEND_TRACE, True), (b"\t" + ASCEND_TRACE, True),
    (b" " + ASCEND_TRACE, True), (b"\xef\xbb\xbf" + ASCEND_TRACE, True),
    (b"X" + ASCEND_TRACE, False),  # anything else before it: not an array
    (KINETO_TRACE, False),  # Kineto writes an object
    (b"[1, 2, 3]", False),  # an array without events
    (b"[" + b" " * 4091 + b'"ph"', True),  # "ph" ends at byte 4,095: inside the 4,096 read
    (b"[" + b" " * 4092 + b'"ph"', False),  # "ph" ends at byte 4,096: past the head
])
def test_is_ascend_trace(tmp_path, data, want):
    """torch_npu's trace_view.json: a JSON array (after a BOM / white space) with "ph" in its first 4 KiB."""
    assert _is_ascend_trace(_put(tmp_path / "trace_view.json", data)) is want


def test_is_ascend_trace_missing_file(tmp_path):
    assert _is_ascend_trace(str(tmp_path / "trace_view.json")) is False


@pytest.mark.parametrize("name", ["kernel_details.csv", "step_trace_time.csv", "operator_details.csv",
                                  "communication.json", "communication_matrix.json", "npu_module_mem.csv",
                                  "ascend_pytorch_profiler.db", "ascend_pytorch_profiler_12.db"])
def test_export_folder_by_a_signature_file(tmp_path, name):
    """Each file only torch_npu writes makes an export folder (the file's content is not read)."""
    assert is_export_folder(str(tmp_path), {"other.txt", name})


@pytest.mark.parametrize("name", ["op_statistic.csv", "memory_record.csv", "operator_memory.csv",
                                  "ascend_pytorch_profiler_x.db", "xascend_pytorch_profiler.db", "analysis.db"])
def test_not_an_export_folder(tmp_path, name):
    """Files other tools write too, and other db names: no export folder."""
    assert not is_export_folder(str(tmp_path), {name})


def test_export_folder_by_its_trace(tmp_path):
    """trace_view.json alone: an export folder when it is torch_npu's array, not when Kineto's object
    (or when only listed, not there)."""
    _put(tmp_path / "a" / "trace_view.json", ASCEND_TRACE)
    _put(tmp_path / "b" / "trace_view.json", KINETO_TRACE)
    assert is_export_folder(str(tmp_path / "a"), {"trace_view.json"})
    assert not is_export_folder(str(tmp_path / "b"), {"trace_view.json"})
    assert not is_export_folder(str(tmp_path / "a"), {"x.json"})


@pytest.mark.parametrize("files,dirs,want", [
    ({"x"}, {"ASCEND_PROFILER_OUTPUT"}, "window"),
    (set(), {"ASCEND_PROFILER_OUTPUT", "FRAMEWORK"}, "window"),
    ({"profiler_info_0.json"}, {"FRAMEWORK"}, "raw"),
    ({"profiler_info.json"}, {"PROF_000001_20240101120000_ABCdef1"}, "raw"),
    ({"profiler_info_x.json"}, {"FRAMEWORK"}, ""),  # no info file
    ({"profiler_info_0.json"}, {"PROF_1_2_a-b"}, ""),  # no PROF_<n>_<n>_<alnum> folder
    ({"profiler_info_0.json"}, {"XFRAMEWORK"}, ""),
    ({"profiler_info_0.json"}, {"FRAMEWORKX"}, ""),
    ({"profiler_info_0.json"}, {"PROF_1_2_ab_c"}, ""),
    (set(), {"FRAMEWORK"}, ""),  # a raw folder without profiler_info
    ({"kernel_details.csv"}, set(), "export"),
    ({"profiler_info_0.json", "kernel_details.csv"}, set(), "export"),
    ({"readme.txt"}, {"sub"}, ""),
])
def test_window_kind(tmp_path, files, dirs, want):
    assert window_kind(str(tmp_path), files, dirs) == want


def test_scan(tmp_path):
    """scan lists the folder itself: a window, a raw window, an export, nothing, a trace_view.json alone
    (torch_npu's: an export; Kineto's: nothing)."""
    (tmp_path / "w" / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    _put(tmp_path / "r" / "profiler_info_1.json")
    (tmp_path / "r" / "FRAMEWORK").mkdir()
    _put(tmp_path / "e" / "step_trace_time.csv")
    (tmp_path / "n").mkdir()
    _put(tmp_path / "t" / "trace_view.json", ASCEND_TRACE)  # known by its content: the folder is read
    _put(tmp_path / "k" / "trace_view.json", KINETO_TRACE)
    assert [scan(str(tmp_path / x)) for x in "wrentk"] == ["window", "raw", "export", "", "export", ""]
    assert window_kind(str(tmp_path / "t"), {"trace_view.json"}, set()) == "export"


def test_loose_dbs():
    """Two or more profiler dbs, sorted, are several windows; one is none."""
    assert loose_dbs({"ascend_pytorch_profiler_1.db", "ascend_pytorch_profiler_0.db", "x.db"}) == [
        "ascend_pytorch_profiler_0.db", "ascend_pytorch_profiler_1.db"]
    assert loose_dbs({"ascend_pytorch_profiler_1.db", "analysis.db"}) == []
    assert loose_dbs(set()) == []


def test_layout_paths():
    """path joins out_dir; display is '<root's name>/<out_dir's name when another folder>/<name>'."""
    lay = Layout(root="/r/w", out_dir="/r/w/ASCEND_PROFILER_OUTPUT", base="w", names=frozenset())
    assert lay.path("k.csv") == "/r/w/ASCEND_PROFILER_OUTPUT/k.csv"
    assert lay.display("k.csv") == "w/ASCEND_PROFILER_OUTPUT/k.csv"
    bare = Layout(root="/r/e", out_dir="/r/e", base="e", names=frozenset())
    assert bare.display("k.csv") == "e/k.csv"
    assert bare.display("") == "e"


def test_locate_a_db_file(tmp_path):
    """A profiler db given alone: its folder is root and out_dir, it is the one name read, alone."""
    p = _put(tmp_path / "ascend_pytorch_profiler_3.db")
    _put(tmp_path / "kernel_details.csv")
    assert locate(p) == Layout(root=str(tmp_path), out_dir=str(tmp_path), base="ascend_pytorch_profiler_3.db",
                               names=frozenset({"ascend_pytorch_profiler_3.db"}), db="ascend_pytorch_profiler_3.db",
                               alone=True)


def test_locate_not_a_folder(tmp_path):
    """A file that is no profiler db, a missing path: 'not a folder'."""
    p = _put(tmp_path / "other.db")
    for path in (p, str(tmp_path / "missing")):
        with pytest.raises(InputError) as e:
            locate(path)
        assert e.value.problem == "not a folder" and e.value.file == path


def test_locate_a_window(tmp_path):
    """A window folder: root is it, out_dir its ASCEND_PROFILER_OUTPUT, the names those in out_dir (not the
    root's); the db beside the text files is ignored."""
    w = tmp_path / "w_ascend_pt"
    _put(w / "profiler_info_0.json")
    _put(w / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv")
    _put(w / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db")
    out = str(w / "ASCEND_PROFILER_OUTPUT")
    assert locate(str(w)) == Layout(root=str(w), out_dir=out, base="w_ascend_pt",
                                    names=frozenset({"kernel_details.csv", "ascend_pytorch_profiler_0.db"}),
                                    ignored_dbs=("ascend_pytorch_profiler_0.db",))
    # the bare output folder inside its window: profiler_info is looked for one level up
    assert locate(out) == Layout(root=str(w), out_dir=out, base="w_ascend_pt",
                                 names=frozenset({"kernel_details.csv", "ascend_pytorch_profiler_0.db"}),
                                 ignored_dbs=("ascend_pytorch_profiler_0.db",))


def test_locate_an_export_folder(tmp_path):
    """A bare export folder of any other name: it is root and out_dir."""
    e = tmp_path / "copied"
    _put(e / "step_trace_time.csv")
    assert locate(str(e)) == Layout(root=str(e), out_dir=str(e), base="copied",
                                    names=frozenset({"step_trace_time.csv"}))


def test_locate_a_trace_view_alone(tmp_path):
    """A folder holding only torch_npu's trace_view.json is an export folder (its content read)."""
    e = tmp_path / "t"
    _put(e / "trace_view.json", ASCEND_TRACE)
    assert locate(str(e)) == Layout(root=str(e), out_dir=str(e), base="t", names=frozenset({"trace_view.json"}))


def test_locate_dbs_only(tmp_path):
    """Only dbs: the first (sorted) is read, with analysis.db beside it; the others are not ignored text."""
    w = tmp_path / "w"
    for n in ("ascend_pytorch_profiler_1.db", "ascend_pytorch_profiler_0.db", "analysis.db", "notes.txt"):
        _put(w / "ASCEND_PROFILER_OUTPUT" / n)
    assert locate(str(w)) == Layout(root=str(w), out_dir=str(w / "ASCEND_PROFILER_OUTPUT"), base="w",
                                    names=frozenset({"ascend_pytorch_profiler_0.db", "analysis.db"}),
                                    db="ascend_pytorch_profiler_0.db")
    v = tmp_path / "v"
    _put(v / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler.db")
    assert locate(str(v)).names == frozenset({"ascend_pytorch_profiler.db"})


def test_locate_an_empty_window(tmp_path):
    """ASCEND_PROFILER_OUTPUT with nothing in it: a text Layout with no names (the reader says what lacks)."""
    w = tmp_path / "w"
    (w / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    assert locate(str(w)) == Layout(root=str(w), out_dir=str(w / "ASCEND_PROFILER_OUTPUT"), base="w",
                                    names=frozenset())


def test_locate_nothing(tmp_path):
    """A folder holding no export: the error says what is missing and what to do."""
    (tmp_path / "x").mkdir()
    _put(tmp_path / "x" / "profiler_info_0.json")
    with pytest.raises(InputError) as e:
        locate(str(tmp_path / "x"))
    assert e.value.file == str(tmp_path / "x")
    assert e.value.problem == ("no ASCEND_PROFILER_OUTPUT folder and no exported files (truncated, still being "
                               "written, or profiled with analysis off: run torch_npu.profiler.profiler.analyse on it)")
