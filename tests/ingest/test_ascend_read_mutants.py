"""ingest/ascend/read.py under mutation (docs/mutants.md, issue 46): read_ascend / read_window on small hand-made
windows (torch_npu's layout: <worker>_<pid>_<time>_ascend_pt/ASCEND_PROFILER_OUTPUT/), every expected value worked
out by hand from the files written: which files are used and in what order, the notes for missing files, the side
tables' sources, the communicators of collective kernels, the readers chosen for a text or a db export."""
from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest

from canning_tb.ingest import side_tables as side
from canning_tb.ingest.ascend import read as R
from canning_tb.ingest.ascend.layout import Layout
from canning_tb.ingest.table import NONE, InputError, Kind

OUT = "ASCEND_PROFILER_OUTPUT"
KERNELS = ("Name,Type,Accelerator Core,Start Time(us),Duration(us),Device_id\n"
           "MatMul_1,MatMulV2,AI_CORE,10,1,2\n"
           "hcom_allReduce__1_0_1,hcom_allReduce_,HCCL,12,2,2\n"
           "hcom_broadcast__9_0_1,hcom_broadcast_,HCCL,13,1,2\n")
COMM = {"step1": {"collective": {
    "hcom_allReduce__1_0_1@grpA": {"Communication Time Info": {"Elapse Time(ms)": 0.002},
                                   "Communication Bandwidth Info": {"HCCS": {"Transit Size(MB)": 1,
                                                                             "Size Distribution": {"1": [1, 0.5]}}}},
    "hcom_x__2@": {"Communication Time Info": {"Elapse Time(ms)": 0.001}}}}}
MATRIX = {"step1": {"collective": {"allreduce-total@grpA": {"0-1": {"Transit Size(MB)": 1}}}}}
FILES = {
    "kernel_details.csv": KERNELS,
    "communication.json": json.dumps(COMM),
    "communication_matrix.json": json.dumps(MATRIX),
    "step_trace_time.csv": "Step,Computing\n1,5\n",
    "op_statistic.csv": "OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us)\n"
                        "MatMulV2,AI_CORE,1,1,1,1,1\n",
    "operator_memory.csv": "Name,Size(KB),Allocation Time(us),Release Time(us),Device Type\na,1,1,2,NPU:2\n",
    "npu_module_mem.csv": "Component,Timestamp(us),Total Reserved(MB),Device\nSLOG,1,1,NPU:2\n",
    "memory_record.csv": "Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),"
                         "Device Type\nAPP,3,1,2,1,NPU:2\nAPP,1,1,2,1,NPU:2\n",
    "operator_details.csv": "Name,Input Shapes,Call Stack,Host Self Duration(us)\naten::mm,,,1\n",
}


def _window(tmp_path, files, name="w1_77_20250101_ascend_pt"):
    out = tmp_path / name / OUT
    out.mkdir(parents=True)
    for f, text in files.items():
        (out / f).write_text(text)
    return str(tmp_path / name)


def _notes(t):
    return [(p.file, p.message, p.severity) for p in t.problems]


def test_a_text_window_without_its_trace(tmp_path):
    """Every file but trace_view.json: the files used in read order (communication.json, the side files in their
    order, memory_record, kernel_details, then operator_details since there is no trace); each side table's source
    file; the allReduce kernel takes communicator 'grpA' from communication.json by its name, the broadcast (not in
    it) and MatMul none; memory sorted by time (1 us, 3 us); device 2 from the kernels; one note: the trace."""
    path = _window(tmp_path, FILES)
    t = R.read_ascend(path)
    out = os.path.join(path, OUT)
    assert t.meta.source_files == [os.path.join(out, f) for f in (
        "communication.json", "step_trace_time.csv", "op_statistic.csv", "operator_memory.csv",
        "npu_module_mem.csv", "communication_matrix.json", "memory_record.csv", "kernel_details.csv",
        "operator_details.csv")]
    assert t.meta.format == "ascend" and t.meta.worker == "w1_77"  # <worker>_<time>_ascend_pt, the worker being host_pid
    env = t.meta.environment
    assert env["ascend_source"] == "text" and "ascend_db_ignored" not in env
    assert {k: v for k, v in env.items() if k.startswith("source.")} == {
        "source.comm_ops": "communication.json", "source.comm_bandwidth": "communication.json",
        "source.comm_packets": "communication.json", "source.step_trace": "step_trace_time.csv",
        "source.op_statistic": "op_statistic.csv", "source.operator_memory": "operator_memory.csv",
        "source.npu_module_mem": "npu_module_mem.csv", "source.comm_matrix": "communication_matrix.json",
        "source.operator_details": "operator_details.csv"}
    assert [r["op"] for r in t.side["comm_ops"]] == ["hcom_allReduce__1_0_1", "hcom_x__2"]
    assert [r["computing_ns"] for r in t.side["step_trace"]] == [5000]
    assert [r["name"] for r in t.side["operator_details"]] == ["aten::mm"]
    e = t.events
    names = [t.strings[int(i)] for i in e["name"]]
    assert names == ["MatMul_1", "hcom_allReduce__1_0_1", "hcom_broadcast__9_0_1"]
    assert [t.strings[int(g)] for g in e["group"]] == [None, "grpA", None]
    assert e["kind"].tolist() == [Kind.KERNEL, Kind.COMM_KERNEL, Kind.COMM_KERNEL]
    assert t.memory["ts"].tolist() == [1000, 3000]
    assert [(d["kind"], d["index"]) for d in t.meta.devices] == [("npu", 2)]
    assert t.meta.world_size == 2  # the matrix links ranks 0 and 1
    assert _notes(t) == [("w1_77_20250101_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json",
                          "not present: it would add host operators, ProfilerStep ranges, operator-to-kernel links "
                          "and the timeline", "info")]


def test_the_notes_of_a_window_of_kernels_only(tmp_path):
    """kernel_details.csv alone, one card (no matrix, no communicator): notes for the trace, step_trace_time.csv
    and memory_record.csv, in that order; nothing about communication."""
    t = R.read_ascend(_window(tmp_path, {"kernel_details.csv": KERNELS}))
    d = "w1_77_20250101_ascend_pt/ASCEND_PROFILER_OUTPUT/"
    assert _notes(t) == [
        (d + "trace_view.json", "not present: it would add " + R.WHAT_IT_ADDS["trace_view.json"], "info"),
        (d + "step_trace_time.csv", "not present: it would add CANN's own split of each step (computing, "
                                    "communication not overlapped, free)", "info"),
        (d + "memory_record.csv", "not present: it would add the memory curve (profile_memory=True)", "info")]
    assert t.side.get("comm_ops") is None and t.memory["ts"].tolist() == []


def test_the_notes_of_a_multi_card_window(tmp_path):
    """The matrix (ranks 0 and 1) without communication.json: 'communication.json not present (Level0 does not
    write it)'. communication.json giving a kernel its communicator, without the matrix: the matrix's note."""
    files = {"kernel_details.csv": KERNELS, "communication_matrix.json": json.dumps(MATRIX),
             "step_trace_time.csv": "Step,Computing\n1,5\n", "memory_record.csv": FILES["memory_record.csv"]}
    t = R.read_ascend(_window(tmp_path / "a", files))
    d = "w1_77_20250101_ascend_pt/ASCEND_PROFILER_OUTPUT/"
    assert _notes(t)[1:] == [
        (d + "communication.json", "not present (Level0 does not write it): it would add CANN's transit / wait / "
                                   "synchronization times and bytes per link type of each collective", "info")]
    files = {"kernel_details.csv": KERNELS, "communication.json": json.dumps(COMM),
             "step_trace_time.csv": "Step,Computing\n1,5\n", "memory_record.csv": FILES["memory_record.csv"]}
    t = R.read_ascend(_window(tmp_path / "b", files))
    assert t.meta.world_size == -1  # no file says it: unknown
    assert _notes(t)[1:] == [(d + "communication_matrix.json", "not present: it would add the link matrix between "
                                                               "ranks", "info")]


def test_an_unusable_trace_reads_operator_details(tmp_path):
    """trace_view.json cut short: an error saying host operators come from operator_details.csv, which is then
    read; no 'not present' note for the trace (it is there)."""
    t = R.read_ascend(_window(tmp_path, {"kernel_details.csv": KERNELS, "trace_view.json": '[{"ph": "X", "na',
                                         "operator_details.csv": FILES["operator_details.csv"],
                                         "step_trace_time.csv": "Step\n1\n", "memory_record.csv": "Timestamp(us)\n"}))
    msgs = [(p.file, p.message, p.severity) for p in t.problems if "trace unusable" in p.message]
    assert msgs == [("w1_77_20250101_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json",
                     "trace unusable: the folder may be truncated or still being written; host operators come from "
                     "operator_details.csv only", "error")]
    assert [r["name"] for r in t.side["operator_details"]] == ["aten::mm"]
    assert not any("not present" in p.message for p in t.problems)
    assert t.meta.source_files[-1].endswith("operator_details.csv")
    assert [t.strings[int(i)] for i in t.events["name"]][0] == "MatMul_1"


def test_nothing_usable_names_the_problems(tmp_path):
    """kernel_details.csv without its columns and nothing else: InputError naming the folder and the problem."""
    path = _window(tmp_path, {"kernel_details.csv": "A,B\n1,2\n"})
    with pytest.raises(InputError) as e:
        R.read_ascend(path)
    assert str(e.value) == (f"{os.path.join(path, OUT)}: nothing usable: w1_77_20250101_ascend_pt/"
                            "ASCEND_PROFILER_OUTPUT/kernel_details.csv: missing column(s) Name, Start Time(us), "
                            "Duration(us)")


def test_nothing_usable_and_no_problem_says_why(tmp_path):
    """_unlistable: a folder that lists and its ASCEND_PROFILER_OUTPUT too: no file torch_npu exports; a window
    whose output folder is gone: 'cannot list ASCEND_PROFILER_OUTPUT: No such file or directory'."""
    (tmp_path / "w" / OUT).mkdir(parents=True)
    assert R._unlistable(str(tmp_path / "w")) == "no file torch_npu exports was found"
    (tmp_path / "v").mkdir()
    assert R._unlistable(str(tmp_path / "v")) == "cannot list ASCEND_PROFILER_OUTPUT: No such file or directory"
    assert R._unlistable(str(tmp_path / "u")) == "cannot list u: No such file or directory"


def test_read_window_chooses_the_reader(tmp_path):
    """A text export beside a profiler db: the text reader, the db named as ignored; a db alone: the db reader
    given, environment ascend_source 'db', the side tables' sources analysis.db or the db."""
    seen = []
    path = _window(tmp_path / "a", {"kernel_details.csv": KERNELS, "ascend_pytorch_profiler_0.db": "",
                                    "ascend_pytorch_profiler_1.db": ""})

    def text(r):
        seen.append(("text", sorted(r.lay.names)))
        r.table.side["step_trace"] = [side.row("step_trace", step=1)]
    t = R.read_window(path, text, None)
    assert seen == [("text", ["ascend_pytorch_profiler_0.db", "ascend_pytorch_profiler_1.db", "kernel_details.csv"])]
    assert t.meta.environment["ascend_source"] == "text"
    assert t.meta.environment["ascend_db_ignored"] == "ascend_pytorch_profiler_0.db,ascend_pytorch_profiler_1.db"
    assert t.meta.environment["source.step_trace"] == "step_trace_time.csv"

    path = _window(tmp_path / "b", {"ascend_pytorch_profiler_3.db": ""})

    def db(lay, table, used):
        seen.append(("db", lay.db))
        used.append("x.db")
        used.append("x.db")
        table.side.update({"comm_ops": [], "operator_memory": [], "comm_groups": []})
    t = R.read_window(path, None, db)
    assert seen[-1] == ("db", "ascend_pytorch_profiler_3.db")
    env = t.meta.environment
    assert env["ascend_source"] == "db" and "ascend_db_ignored" not in env
    assert env["source.comm_ops"] == "analysis.db" and env["source.operator_memory"] == "ascend_pytorch_profiler_3.db"
    assert "source.comm_groups" not in env and t.meta.source_files == ["x.db"]


def test_bytes_beside_the_trace(tmp_path):
    """_bytes: the sizes of the named files the window has (3 + 5 bytes); a name it lacks adds nothing, a file
    gone since the listing adds nothing."""
    (tmp_path / "a.csv").write_text("abc")
    (tmp_path / "b.json").write_text("12345")
    lay = Layout(str(tmp_path), str(tmp_path), "w", frozenset({"a.csv", "b.json", "gone.csv"}))
    assert R._bytes(lay, ("a.csv", "b.json", "c.csv", "gone.csv", "a.csv")) == 8
    assert R._bytes(lay, ()) == 0
    assert set(R._BESIDE_TRACE) == {"communication.json", "step_trace_time.csv", "op_statistic.csv",
                                    "operator_memory.csv", "npu_module_mem.csv", "communication_matrix.json",
                                    "memory_record.csv", "kernel_details.csv"}


def test_comm_groups_by_hand():
    """Only COMM_KERNEL rows without a group take one, by their name; a name not in the map stays NONE."""
    import numpy as np

    from canning_tb.ingest.table import Strings
    s = Strings(["a", "b", "g_old", "c"])
    cols = {"kind": np.array([Kind.COMM_KERNEL, Kind.COMM_KERNEL, Kind.KERNEL, Kind.COMM_KERNEL, Kind.COMM_KERNEL]),
            "group": np.array([NONE, NONE, NONE, 2, NONE], np.int32),
            "name": np.array([0, 1, 0, 0, 3], np.int32)}
    table = SimpleNamespace(strings=s)
    R._comm_groups(table, cols, {"a": "gA", "c": "", "z": "gz"})
    assert [s[int(g)] for g in cols["group"]] == ["gA", None, None, "g_old", None]
    before = cols["group"].copy()
    R._comm_groups(table, cols, {})
    assert cols["group"].tolist() == before.tolist()


def test_a_world_of_two_declared_by_the_metadata_is_multi_card(tmp_path):
    """profiler_metadata.json says world_size 2 and names communicator grpA (dp of ranks 0 and 1), no matrix, no
    communicator in the files: the window is one of two cards, so both communication files' notes are written
    (world_size > 1)."""
    path = _window(tmp_path, {"kernel_details.csv": KERNELS, "step_trace_time.csv": "Step,Computing\n1,5\n",
                              "memory_record.csv": FILES["memory_record.csv"]})
    with open(os.path.join(path, "profiler_metadata.json"), "w") as f:
        json.dump({"distributed_args": {"world_size": 2, "rank": 1},
                   "parallel_group_info": {"grpA": {"group_name": "dp", "global_ranks": [0, 1]}}}, f)
    t = R.read_ascend(path)
    assert t.meta.world_size == 2
    # the communicators come first (from the metadata) and keep their own source; the next tables get theirs
    env = t.meta.environment
    assert list(t.side)[0] == "comm_groups" and env["source.comm_groups"] == "profiler_metadata.json"
    assert env["source.step_trace"] == "step_trace_time.csv"
    d = "w1_77_20250101_ascend_pt/ASCEND_PROFILER_OUTPUT/"
    assert [(p.file, p.message.split(":")[0]) for p in t.problems if p.severity == "info"] == [
        (d + "trace_view.json", "not present"),
        (d + "communication.json", "not present (Level0 does not write it)"),
        (d + "communication_matrix.json", "not present")]


PID = 3170820515  # a device process: its device is pid & 31 = 3 (3170820515 = 99088141 * 32 + 3) when no hint
TRACE = json.dumps([
    {"ph": "M", "name": "process_name", "pid": PID, "tid": 0, "args": {"name": "Ascend Hardware"}},
    {"ph": "X", "name": "MatMul_1", "pid": PID, "tid": 2, "ts": "10.5", "dur": 1.5, "args": {"Task Type": "AI_CORE"}},
    {"ph": "X", "name": "hcom_allReduce__1_0_1", "pid": PID, "tid": 2, "ts": "12", "dur": 2,
     "args": {"Task Type": "HCCL"}}])


def test_a_window_of_its_trace_only(tmp_path):
    """trace_view.json and communication.json: the trace's two device tasks are the events (10.5 us -> 10500 ns,
    12 us -> 12000), on device 3 (pid & 31), the allReduce in communicator grpA; the devices list that device."""
    t = R.read_ascend(_window(tmp_path, {"trace_view.json": TRACE, "communication.json": json.dumps(COMM)}))
    e = t.events
    assert [t.strings[int(i)] for i in e["name"]] == ["MatMul_1", "hcom_allReduce__1_0_1"]
    assert e["ts"].tolist() == [10500, 12000] and e["device"].tolist() == [3, 3]
    assert [t.strings[int(g)] for g in e["group"]] == [None, "grpA"]
    assert [(d["kind"], d["index"]) for d in t.meta.devices] == [("npu", 3)]
    assert not any(p.severity == "error" for p in t.problems)


def test_the_devices_of_the_kernels_and_of_the_trace(tmp_path):
    """kernel_details.csv on devices 2 and 5 (two devices: no hint for the trace) and the trace on device 3: the
    window's devices are all three, 2, 3, 5."""
    kernels = "Name,Type,Accelerator Core,Start Time(us),Duration(us),Device_id\nA,A,AI_CORE,100,1,2\nB,B,AI_CORE,101,1,5\n"
    t = R.read_ascend(_window(tmp_path, {"trace_view.json": TRACE, "kernel_details.csv": kernels}))
    assert sorted(d["index"] for d in t.meta.devices) == [2, 3, 5]


def test_a_window_of_side_files_only_is_usable(tmp_path):
    """step_trace_time.csv alone, or beside a kernel_details.csv of no row: no events, the side table read, no error."""
    t = R.read_ascend(_window(tmp_path / "a", {"step_trace_time.csv": "Step,Computing\n1,5\n"}))
    assert len(t.events["ts"]) == 0 and [r["computing_ns"] for r in t.side["step_trace"]] == [5000]
    t = R.read_ascend(_window(tmp_path / "b", {"step_trace_time.csv": "Step,Computing\n1,5\n",
                                               "kernel_details.csv": "Name,Start Time(us),Duration(us)\n"}))
    assert len(t.events["ts"]) == 0 and len(t.side["step_trace"]) == 1


def test_nothing_usable_names_five_problems_or_why_there_are_none(tmp_path):
    """Eight empty files: eight errors, the first five in read order joined by '; '. An empty output folder: no
    problem, so the reason is the folder's: no file torch_npu exports."""
    names = ["kernel_details.csv", "communication.json", "communication_matrix.json", "step_trace_time.csv",
             "op_statistic.csv", "operator_memory.csv", "npu_module_mem.csv", "memory_record.csv"]
    path = _window(tmp_path / "a", {n: "" for n in names})
    d = "w1_77_20250101_ascend_pt/ASCEND_PROFILER_OUTPUT/"
    with pytest.raises(InputError) as e:
        R.read_ascend(path)
    assert str(e.value) == (
        f"{os.path.join(path, OUT)}: nothing usable: {d}communication.json: not valid JSON (truncated or still being "
        f"written?): Expecting value: line 1 column 1 (char 0); {d}step_trace_time.csv: empty file (no header); "
        f"{d}op_statistic.csv: empty file (no header); {d}operator_memory.csv: empty file (no header); "
        f"{d}npu_module_mem.csv: empty file (no header)")
    path = _window(tmp_path / "b", {})
    with pytest.raises(InputError) as e:
        R.read_ascend(path)
    assert str(e.value) == f"{os.path.join(path, OUT)}: nothing usable: no file torch_npu exports was found"


def test_the_hint_of_one_device_and_of_none(tmp_path):
    """kernel_details.csv on device 2 alone: the trace's tasks take that device (the hint), not pid & 31 = 3; a
    kernel file without a device column: its kernel on no device (NONE), and the trace's on 3."""
    kernels = "Name,Type,Accelerator Core,Start Time(us),Duration(us),Device_id\nA,A,AI_CORE,100,1,2\n"
    t = R.read_ascend(_window(tmp_path / "a", {"trace_view.json": TRACE, "kernel_details.csv": kernels}))
    assert sorted(set(t.events["device"].tolist())) == [2]
    kernels = "Name,Start Time(us),Duration(us)\nA,100,1\n"
    t = R.read_ascend(_window(tmp_path / "b", {"trace_view.json": TRACE, "kernel_details.csv": kernels}))
    names = [t.strings[int(i)] for i in t.events["name"]]
    assert dict(zip(names, t.events["device"].tolist())) == {"A": NONE, "MatMul_1": 3, "hcom_allReduce__1_0_1": 3}


def test_a_broken_communication_file_is_no_missing_one(tmp_path):
    """A multi-card window (the matrix links ranks 0 and 1) whose communication.json is not JSON: its error, and no
    'not present' note for it (it is there)."""
    t = R.read_ascend(_window(tmp_path, {"kernel_details.csv": KERNELS, "communication.json": "{",
                                         "communication_matrix.json": json.dumps(MATRIX)}))
    assert [p.message.split(" (")[0] for p in t.problems if p.file.endswith("communication.json")] == ["not valid JSON"]


def test_the_counters_of_the_trace(tmp_path):
    """A counter event of an HBM process in the trace: the npu_counters side table, its source trace_view.json;
    1 MB/s = 1048576 B/s at 11 us."""
    trace = json.loads(TRACE) + [
        {"ph": "M", "name": "process_name", "pid": PID + 1, "tid": 0, "args": {"name": "HBM"}},
        {"ph": "C", "name": "HBM 0", "pid": PID + 1, "tid": 0, "ts": "11", "args": {"Read(MB/s)": 1}}]
    t = R.read_ascend(_window(tmp_path, {"trace_view.json": json.dumps(trace)}))
    assert [(r["counter"], r["ts_ns"], r["value"]) for r in t.side["npu_counters"]] == [("HBM 0", 11000, 1048576.0)]
    assert t.meta.environment["source.npu_counters"] == "trace_view.json"
