"""ingest/ascend/read.py under mutation (docs/mutants.md, issue 46), what test_ascend_read_mutants.py left: the
files read beside a window (CANN's device info under PROF_*, msprof-analyze's communication_group.json in the run
folder), a device index no digest can hold, the communicators given to the trace reader, CANN's Overlap Analysis
process as the overlap_analysis side table, and the bytes read beside a big trace (the split of its read). Small
hand-made windows in torch_npu's layout (<worker>_<pid>_<time>_ascend_pt/ASCEND_PROFILER_OUTPUT/, as
tests/fixtures/ascend); every expected value worked out by hand from the files written."""
from __future__ import annotations

import json
import os

from canning_tb.ingest import side_tables as side
from canning_tb.ingest.ascend import read as R
from canning_tb.ingest.table import Kind

OUT = "ASCEND_PROFILER_OUTPUT"
WINDOW = "w1_77_20250101_ascend_pt"
KERNELS = "Name,Start Time(us),Duration(us),Device_id\nA,100,1,2\n"
# as the real trace_view.json (tests/fixtures/ascend/level2): the device's processes share pid >> 5, the device
# being pid & 31 = 3 here (3170820515 = 99088141 * 32 + 3; + 64 and + 128 keep the low five bits)
HW, HCCL, OVERLAP = 3170820515, 3170820515 + 64, 3170820515 + 128
TRACE = [
    {"ph": "M", "name": "process_name", "pid": HW, "tid": 0, "args": {"name": "Ascend Hardware"}},
    {"ph": "M", "name": "thread_name", "pid": HW, "tid": 2, "args": {"name": "Stream 2"}},
    {"ph": "X", "name": "MatMul_1", "pid": HW, "tid": 2, "ts": "10", "dur": 1, "args": {"Task Type": "AI_CORE"}},
    {"ph": "M", "name": "process_name", "pid": HCCL, "tid": 0, "args": {"name": "HCCL"}},
    {"ph": "M", "name": "thread_name", "pid": HCCL, "tid": 0, "args": {"name": "Group 0 Communication"}},
    {"ph": "M", "name": "thread_name", "pid": HCCL, "tid": 1, "args": {"name": "Plane 0"}},
    {"ph": "X", "name": "hcom_allReduce__1_0_1", "pid": HCCL, "tid": 0, "ts": "12", "dur": 3,
     "args": {"connection_id": 1, "data_type": "FP32", "count": 4}},
    {"ph": "X", "name": "hcom_broadcast__9_0_1", "pid": HCCL, "tid": 0, "ts": "16", "dur": 1,
     "args": {"connection_id": 2, "data_type": "FP32", "count": 1}},
    {"ph": "M", "name": "process_name", "pid": OVERLAP, "tid": 0, "args": {"name": "Overlap Analysis"}},
    {"ph": "M", "name": "thread_name", "pid": OVERLAP, "tid": 0, "args": {"name": "Computing"}},
    {"ph": "M", "name": "thread_name", "pid": OVERLAP, "tid": 3, "args": {"name": "Free"}},
    {"ph": "X", "name": "Computing", "pid": OVERLAP, "tid": 0, "ts": "10", "dur": 5},
    {"ph": "X", "name": "Free", "pid": OVERLAP, "tid": 3, "ts": "15", "dur": 2.5},
    {"ph": "X", "name": "Computing", "pid": OVERLAP, "tid": 0, "ts": "17.5", "dur": 1}]
COMM = {"step1": {"collective": {"hcom_allReduce__1_0_1@grpA": {
    "Communication Time Info": {"Elapse Time(ms)": 0.003}}}}}


def _window(root, files, name=WINDOW):
    out = root / name / OUT
    out.mkdir(parents=True)
    for f, text in files.items():
        (out / f).write_text(text)
    return str(root / name)


def _write(path, obj) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f)
    return str(path)


def test_the_communicators_given_to_the_trace_reader(tmp_path):
    """communication.json names the allReduce's communicator grpA: the trace reader is given it, and it wins over
    the HCCL thread's name 'Group 0 Communication'; the broadcast, which communication.json does not name, keeps
    the thread's name. Both are collective kernels on device 3 (pid & 31) at 12 us and 16 us."""
    t = R.read_ascend(_window(tmp_path, {"trace_view.json": json.dumps(TRACE), "communication.json": json.dumps(COMM)}))
    e = t.events
    comm = [i for i, k in enumerate(e["kind"].tolist()) if k == Kind.COMM_KERNEL]
    assert [t.strings[int(e["name"][i])] for i in comm] == ["hcom_allReduce__1_0_1", "hcom_broadcast__9_0_1"]
    assert [t.strings[int(e["group"][i])] for i in comm] == ["grpA", "Group 0 Communication"]
    assert [int(e["ts"][i]) for i in comm] == [12000, 16000] and [int(e["device"][i]) for i in comm] == [3, 3]
    assert not any(p.severity == "error" for p in t.problems)


def test_the_overlap_analysis_process_is_a_side_table(tmp_path):
    """CANN's Overlap Analysis process (Computing 10-15 us, Free 15-17.5 us, Computing 17.5-18.5 us) becomes the
    overlap_analysis side table, each name's intervals together in the order the names first come (Computing, then
    Free), in ns: 10 us -> 10000, 10 + 5 = 15 us -> 15000, 17.5 + 1 = 18.5 us -> 18500; its source trace_view.json."""
    t = R.read_ascend(_window(tmp_path, {"trace_view.json": json.dumps(TRACE)}))
    rows = [(r["name"], r["start_ns"], r["end_ns"]) for r in side.rows(t.side, "overlap_analysis")]
    assert rows == [("Computing", 10000, 15000), ("Computing", 17500, 18500), ("Free", 15000, 17500)]
    assert t.meta.environment["source.overlap_analysis"] == "trace_view.json"


def test_the_bytes_read_beside_the_trace_set_its_split(tmp_path, monkeypatch):
    """The trace's read is begun early (Started) with the bytes of the files read beside it: kernel_details.csv
    ('Name,Start Time(us),Duration(us),Device_id\\n': 4 + 1 + 14 + 1 + 12 + 1 + 9 + 1 = 43 bytes, + 'A,100,1,2\\n'
    10 = 53) and step_trace_time.csv ('Step,Computing\\n' 15 + '1,5\\n' 4 = 19): 53 + 19 = 72; operator_details.csv
    is not among them (read only without a usable trace). The stand-in records the value and begins the real read,
    which then gives MatMul_1."""
    seen = []

    class Recorded(R.Started):
        def __init__(self, path, besides=-1):
            seen.append((os.path.basename(path), besides))
            super().__init__(path, besides)
    monkeypatch.setattr(R, "Started", Recorded)
    t = R.read_ascend(_window(tmp_path, {"trace_view.json": json.dumps(TRACE[:3]), "kernel_details.csv": KERNELS,
                                         "step_trace_time.csv": "Step,Computing\n1,5\n",
                                         "operator_details.csv": "Name,Host Self Duration(us)\naten::mm,1\n"}))
    assert seen == [("trace_view.json", 72)]
    assert "MatMul_1" in [t.strings[int(i)] for i in t.events["name"]]
    R.read_ascend(_window(tmp_path / "b", {"kernel_details.csv": KERNELS}))  # no trace_view.json: no read begun
    assert len(seen) == 1


def test_the_read_begun_early_is_the_one_finished(tmp_path, monkeypatch):
    """The trace reader finishes the read begun early, not a second read of its own: a stand-in Started whose begun
    read failed ('cannot read: stand-in') makes the trace unusable with that error (and operator_details.csv read),
    though the file itself is a good trace."""
    class Failed(R.Started):
        def __init__(self, path, besides=0):
            super().__init__(path, besides)
            self.error = "cannot read: stand-in"
    monkeypatch.setattr(R, "Started", Failed)
    t = R.read_ascend(_window(tmp_path, {"trace_view.json": json.dumps(TRACE[:3]), "kernel_details.csv": KERNELS,
                                         "operator_details.csv": "Name,Host Self Duration(us)\naten::mm,1\n"}))
    d = WINDOW + "/" + OUT + "/trace_view.json"
    assert [(p.file, p.message.split(":")[0]) for p in t.problems if p.severity == "error"] == [
        (d, "cannot read"), (d, "trace unusable")]
    assert [r["name"] for r in t.side["operator_details"]] == ["aten::mm"]
    assert [t.strings[int(i)] for i in t.events["name"]] == ["A"]


def test_the_device_info_beside_the_window(tmp_path):
    """CANN's PROF_*/device_0/info.json.0 in the window folder: 24 AI Cores at 1800 MHz, in the environment and on
    the window's one NPU (device 2 from kernel_details.csv); the file is the first source (read before the export)."""
    path = _window(tmp_path, {"kernel_details.csv": KERNELS})
    info = _write(os.path.join(path, "PROF_000001_20250101000000_ABCDEFG", "device_0", "info.json.0"),
                  {"DeviceInfo": [{"id": 0, "ai_core_num": 24, "aic_frequency": 1800}]})
    t = R.read_ascend(path)
    env = t.meta.environment
    assert env["npu.ai_core_num"] == "24" and env["npu.aic_frequency_mhz"] == "1800.0"
    assert [(d["index"], d["ai_core_num"], d["aic_frequency_mhz"]) for d in t.meta.devices] == [(2, "24", "1800.0")]
    assert t.meta.source_files == [info, os.path.join(path, OUT, "kernel_details.csv")]


def test_a_device_index_no_digest_holds(tmp_path):
    """A db giving device index 2**40 = 1099511627776 (past int32's 2147483647): read as unknown (-1), with one
    warning naming the window's folder."""
    path = _window(tmp_path, {"ascend_pytorch_profiler_0.db": ""})

    def db(lay, table, used):
        table.meta.devices = [{"kind": "npu", "index": 1 << 40}]
    t = R.read_window(path, None, db)
    assert [d["index"] for d in t.meta.devices] == [-1]
    assert [(p.file, p.message, p.severity) for p in t.problems] == [
        (path, "device index 1099511627776 is no index (0 to 2147483647): read as unknown", "warning")]


GROUPS = {"collective": [[0, 1]], "p2p": [],
          "comm_group_parallel_info": [{"type": "collective", "rank_set": [0, 1], "group_name": "grpA",
                                        "group_id": "10.0.0.1%enp_60000_0_1", "pg_name": "dp"}]}


def test_the_group_file_of_the_run_folder(tmp_path):
    """run/cluster_analysis_output/communication_group.json beside the window run/<window>: its communicator grpA
    (dp, ranks 0,1; this rank 1 from profiler_info_1.json is its index 1) into comm_groups, the world size 1 + 1 = 2,
    the file the last source."""
    path = _window(tmp_path / "run", {"kernel_details.csv": KERNELS})
    _write(os.path.join(path, "profiler_info_1.json"), {"rank_id": 1})
    group_file = _write(tmp_path / "run" / "cluster_analysis_output" / "communication_group.json", GROUPS)
    t = R.read_ascend(path)
    assert list(side.rows(t.side, "comm_groups")) == [{"group": "grpA", "name": "dp", "rank_in_group": 1,
                                                      "ranks": "0,1"}]
    assert t.meta.world_size == 2
    assert t.meta.environment["source.comm_groups"] == "cluster_analysis_output/communication_group.json"
    assert t.meta.source_files[-1] == group_file


def test_a_db_alone_reads_no_group_file(tmp_path):
    """One db file of two in a folder (a window alone): the folder above is no run folder of its own, so its
    communication_group.json is not read (no comm_groups, no source); the db's own sources only."""
    folder = tmp_path / "run" / "dbs"
    folder.mkdir(parents=True)
    for n in ("ascend_pytorch_profiler_0.db", "ascend_pytorch_profiler_1.db"):
        (folder / n).write_text("")
    _write(tmp_path / "run" / "cluster_analysis_output" / "communication_group.json", GROUPS)

    def db(lay, table, used):
        used.append("x.db")
    t = R.read_window(str(folder / "ascend_pytorch_profiler_0.db"), None, db)
    assert list(side.rows(t.side, "comm_groups")) == []
    assert "source.comm_groups" not in t.meta.environment and t.meta.source_files == ["x.db"]
