"""ingest/window.py by hand (issue 46, mutation testing): which file a manifest's window is read from, the
manifest over the trace (rank, world size, local rank, pid, host, worker, devices, environment), the
checks of its numbers and of the trace's size, the loop's step marks, the torch_npu folder's state; and
the lazy names of ingest/__init__.py, ingest/kineto/__init__.py and ingest/ascend/__init__.py. Each trace
is a one-event Kineto file written here; every expected value is worked out in the test."""
import json
import os
import shutil

import pytest

import canning_tb.ingest as ingest
import canning_tb.ingest.ascend as ascend
import canning_tb.ingest.kineto as kineto
from canning_tb.ingest import table, window
from canning_tb.ingest.table import NONE, InputError, Meta
from canning_tb.ingest.window import read_canning_window

STEM = "rank3.host.42.1"
BASE = 1_700_000_000_000_000_000  # the trace's wall clock at its ts 0 (ns)


def _trace(path, dist=None, devices=None, base=BASE):
    """One cpu_op at 10 µs for 5 µs; distributedInfo and deviceProperties as given."""
    top = {"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1,
                                                 "tid": 1, "ts": 10, "dur": 5}]}
    if dist is not None:
        top["distributedInfo"] = dist
    if devices is not None:
        top["deviceProperties"] = devices
    if base is not None:
        top["baseTimeNanoseconds"] = base
    path.write_text(json.dumps(top))
    return path


def _manifest(tmp_path, name=STEM + ".canning.json", **fields):
    man = {"format_version": 1, "kind": "kineto", "worker": "w", "window": 1, "manifest": name}
    man.update(fields)
    p = tmp_path / name
    p.write_text(json.dumps(man))
    return str(p)


def test_lazy_package_names():
    """Each package's names load their module on first use; anything else is an AttributeError naming it."""
    assert ingest.EventTable is table.EventTable and ingest.NONE == -1 and ingest.Kind is table.Kind
    from canning_tb.ingest.kineto.read import read_kineto
    from canning_tb.ingest.ascend.read import read_ascend
    assert kineto.read_kineto is read_kineto and ascend.read_ascend is read_ascend
    for mod, name in ((ingest, "canning_tb.ingest"), (kineto, "canning_tb.ingest.kineto"),
                      (ascend, "canning_tb.ingest.ascend")):
        with pytest.raises(AttributeError) as e:
            mod.__getattr__("nothing_here")
        assert str(e.value) == f"module '{name}' has no attribute 'nothing_here'"
    assert ingest.__getattr__("Meta") is Meta


def test_a_bad_or_missing_manifest_and_a_missing_trace(tmp_path):
    p = tmp_path / (STEM + ".canning.json")
    p.write_text("")
    with pytest.raises(InputError) as e:
        read_canning_window(str(p))
    assert (e.value.file, e.value.problem) == (str(p), "empty manifest")
    path = _manifest(tmp_path, files=[{"name": STEM + ".pt.trace.json", "bytes": 3}])
    with pytest.raises(InputError) as e:
        read_canning_window(path)
    assert (e.value.file, e.value.problem) == (path, "the trace file named by the manifest is missing")


def test_the_named_trace_then_the_stem(tmp_path):
    """A named trace is read (its size checked: 3 bytes said, the file's own size found); a named file
    that is no trace is skipped; with nothing named, <stem>.pt.trace.json.gz comes before .pt.trace.json;
    a manifest not named *.canning.json has no stem."""
    t = _trace(tmp_path / "other.pt.trace.json")
    size = os.path.getsize(t)
    (tmp_path / "notes.txt").write_text("x")
    path = _manifest(tmp_path, files=[{"name": "notes.txt"}, {"name": "other.pt.trace.json", "bytes": 3}])
    got = read_canning_window(path)
    assert got.meta.source_files == [path, str(t)]
    assert [(p.file, p.message, p.severity) for p in got.problems] == [
        (path, f"other.pt.trace.json has {size} bytes, the manifest says 3", "warning")]
    path = _manifest(tmp_path, files=[{"name": "other.pt.trace.json", "bytes": size}])
    assert read_canning_window(path).problems == []
    path = _manifest(tmp_path, files=[{"name": "other.pt.trace.json"}])  # no size said: none checked
    assert read_canning_window(path).problems == []
    # by the stem: the gzip one first (here a plain trace under that name, told by its head)
    _trace(tmp_path / (STEM + ".pt.trace.json"), dist={"rank": 5, "world_size": 8})
    path = _manifest(tmp_path, files=[{"name": "notes.txt"}])
    got = read_canning_window(path)
    assert got.meta.source_files == [path, str(tmp_path / (STEM + ".pt.trace.json"))] and got.meta.rank == 5
    _trace(tmp_path / (STEM + ".pt.trace.json.gz"), dist={"rank": 6, "world_size": 8})
    got = read_canning_window(path)
    assert got.meta.source_files[1] == str(tmp_path / (STEM + ".pt.trace.json.gz")) and got.meta.rank == 6
    assert got.problems == []  # found by the stem: no entry, no size to compare
    other = _manifest(tmp_path, name="window.json")
    with pytest.raises(InputError, match="the trace file named by the manifest is missing"):
        read_canning_window(other)
    alone = tmp_path / "alone"
    alone.mkdir()
    # "rank0.window.json" less the 13 characters of ".canning.json" would be the stem "rank"
    _trace(alone / "rank.pt.trace.json")
    other = _manifest(alone, name="rank0.window.json")
    with pytest.raises(InputError, match="the trace file named by the manifest is missing"):
        read_canning_window(other)


def test_the_manifest_over_the_trace(tmp_path):
    """Rank, world size, local rank, pid, host and worker from the manifest; the trace's "no rank"
    warning dropped; the manifest's devices over the trace's (its compute capability kept, its second
    device kept); the environment flattened ("versions.torch"), numbers and lists as JSON, and the
    files / devices / step times / manifest name, None and '' left out."""
    devices = [{"id": 0, "name": "A100", "totalGlobalMem": 1000, "computeMajor": 8, "computeMinor": 0},
               {"id": 1, "name": "B", "totalGlobalMem": 2000, "computeMajor": 9, "computeMinor": 0}]
    _trace(tmp_path / (STEM + ".pt.trace.json"), dist={"world_size": 2}, devices=devices)
    path = _manifest(tmp_path, rank=3, world_size=4, local_rank=1, host="h", worker="rank3.h.42", pid=42,
                     steps=[2, 3], devices=[{"kind": "cuda", "index": 0, "memory": 5}],
                     versions={"torch": "2.13.0"}, settings={"record_shapes": True}, analysis="",
                     step_times_ns=[[1, 2, 3]], wall_start_ns=7)
    got = read_canning_window(path)
    m = got.meta
    assert (m.format, m.rank, m.world_size, m.local_rank, m.pid, m.host, m.worker) == (
        "canning", 3, 4, 1, 42, "h", "rank3.h.42")
    assert got.problems == []
    assert m.devices == [{"kind": "cuda", "index": 0, "name": "A100", "memory": 5, "compute_capability": "8.0"},
                         {"kind": "cuda", "index": 1, "name": "B", "memory": 2000, "compute_capability": "9.0"}]
    env = {k: v for k, v in m.environment.items() if k not in ("schemaVersion", "distributed.world_size",
                                                               "baseTimeNanoseconds")}
    assert env == {"kind": "kineto", "worker": "rank3.h.42", "window": "1", "rank": "3", "world_size": "4",
                   "local_rank": "1", "host": "h", "pid": "42", "steps": "[2, 3]", "wall_start_ns": "7",
                   "versions.torch": "2.13.0", "settings.record_shapes": "true", "format_version": "1"}


def test_the_trace_stands_where_the_manifest_does_not_say(tmp_path):
    """No rank in the manifest (-1): the trace's rank, world size and "no rank" warning stay, and the
    manifest's other numbers are not checked; no host, worker or devices: the trace's."""
    _trace(tmp_path / (STEM + ".pt.trace.json"), dist={"world_size": 2})
    path = _manifest(tmp_path, world_size=0, worker="", local_rank=-5)
    got = read_canning_window(path)
    m = got.meta
    assert (m.rank, m.world_size, m.local_rank, m.pid, m.host, m.worker) == (0, 2, NONE, NONE, "", "")
    assert [p.message for p in got.problems] == ["no rank in distributedInfo: assuming rank 0"]


def test_numbers_out_of_range(tmp_path):
    """world_size 0, local_rank -2 and pid 2**63 are each out of range: one warning, the trace's values
    stand (world size 1, local rank NONE, pid NONE); at the edges (world size and local rank 2**31 - 1,
    pid 2**63 - 1) all are used; pid 0 is none given. A rank past 2**31 - 1 is an error."""
    _trace(tmp_path / (STEM + ".pt.trace.json"))
    path = _manifest(tmp_path, rank=0, world_size=0, local_rank=-2, pid=2 ** 63)
    got = read_canning_window(path)
    assert (got.meta.world_size, got.meta.local_rank, got.meta.pid) == (1, NONE, NONE)
    assert [(p.file, p.message, p.severity) for p in got.problems] == [
        (path, "world_size 0, local_rank -2, pid 9223372036854775808: out of range, not used", "warning")]
    top = 2 ** 31 - 1
    path = _manifest(tmp_path, rank=top, world_size=top, local_rank=top, pid=2 ** 63 - 1)
    got = read_canning_window(path)
    assert (got.meta.rank, got.meta.world_size, got.meta.local_rank, got.meta.pid) == (top, top, top, 2 ** 63 - 1)
    assert got.problems == []
    path = _manifest(tmp_path, rank=1, world_size=1, local_rank=-1, pid=-1)
    got = read_canning_window(path)
    assert (got.meta.rank, got.meta.world_size, got.meta.local_rank, got.meta.pid) == (1, 1, NONE, NONE)
    assert got.problems == []
    path = _manifest(tmp_path, rank=1, world_size=top + 1, local_rank=top + 1, pid=0)
    got = read_canning_window(path)
    assert (got.meta.world_size, got.meta.local_rank, got.meta.pid) == (1, NONE, NONE)
    assert [p.message for p in got.problems] == [
        "world_size 2147483648, local_rank 2147483648: out of range, not used"]
    _trace(tmp_path / (STEM + ".pt.trace.json"), dist={"rank": 0, "world_size": 2})
    path = _manifest(tmp_path, rank=0, world_size=1)  # the manifest's 1 over the trace's 2
    assert read_canning_window(path).meta.world_size == 1
    path = _manifest(tmp_path, rank=top + 1)
    with pytest.raises(InputError) as e:
        read_canning_window(path)
    assert (e.value.file, e.value.problem) == (path, "rank 2147483648: not a rank (0 to 2147483647)")


def test_a_manifest_device_out_of_range_is_one_warning(tmp_path):
    _trace(tmp_path / (STEM + ".pt.trace.json"))
    path = _manifest(tmp_path, devices=[{"kind": "cuda", "index": 2 ** 31, "memory": 5}])
    got = read_canning_window(path)
    assert got.meta.devices == [{"kind": "cuda", "index": -1, "memory": 5}]
    assert [(p.file, p.severity) for p in got.problems] == [(path, "warning")]
    assert got.problems[0].message.startswith("device index 2147483648 is no index")


def test_the_loops_step_marks(tmp_path):
    """step_times_ns on the wall clock, minus the trace's base: step 1 at BASE + 100 .. BASE + 250 is
    100 .. 250 on the trace's clock; a trace without a base gets none."""
    _trace(tmp_path / (STEM + ".pt.trace.json"))
    path = _manifest(tmp_path, step_times_ns=[[1, BASE + 100, BASE + 250]])
    got = read_canning_window(path)
    assert got.side["step_marks"] == [{"step": 1, "start_ns": 100, "end_ns": 250}]
    _trace(tmp_path / (STEM + ".pt.trace.json"), base=None)
    assert "step_marks" not in read_canning_window(path).side


def test_merge_devices():
    m = Meta(devices=[{"kind": "cuda", "index": 1, "name": "B"}, {"kind": "cuda", "index": 0, "cc": "8.0",
                                                                  "memory": 1}])
    window.merge_devices(m, [])
    assert [d["index"] for d in m.devices] == [1, 0]
    window.merge_devices(m, [{"kind": "cuda", "index": 0, "memory": 9}, {"kind": "cpu", "index": 0}])
    assert m.devices == [{"kind": "cuda", "index": 0, "cc": "8.0", "memory": 9}, {"kind": "cpu", "index": 0},
                         {"kind": "cuda", "index": 1, "name": "B"}]
    assert window._text("a") == "a" and window._text(None) == "null" and window._text({"a": 1}) == '{"a": 1}'


def _ascend_manifest(tmp_path, folder, kind="ascend_pt", file_kind="ascend_pt", analysis=""):
    entry = {"name": folder}
    if file_kind:
        entry["kind"] = file_kind
    return _manifest(tmp_path, kind=kind, analysis=analysis, rank=0, files=[entry])


def test_a_torch_npu_folder_not_analysed(tmp_path):
    """A folder without ASCEND_PROFILER_OUTPUT: being analysed (async), or raw data only (analysis off,
    or skipped); a folder entry goes this way even where the manifest's kind says kineto, and a manifest
    of kind ascend_pt whatever its entry."""
    folder = "rank0_ascend_pt"
    (tmp_path / folder).mkdir()
    cases = [
        ("ascend_pt", "ascend_pt", "async",
         f"torch_npu is still analysing {folder} (its ASCEND_PROFILER_OUTPUT is being written); open it again "
         f"when it is done"),
        ("kineto", "ascend_pt", "async", None),
        ("ascend_pt", "ascend_pt", "off",
         f"{folder} holds torch_npu's raw data only (analyse_flag=False); parse it with "
         f"torch_npu.profiler.profiler.analyse({str(tmp_path / folder)!r}) on a machine with CANN"),
        ("ascend_pt", "ascend_pt", "", f"{folder} holds torch_npu's raw data only (torch_npu skipped its analysis)"),
    ]
    for kind, file_kind, analysis, message in cases:
        path = _ascend_manifest(tmp_path, folder, kind, file_kind, analysis)
        with pytest.raises(InputError) as e:
            read_canning_window(path)
        assert e.value.file == path
        assert e.value.problem.startswith(message or "torch_npu is still analysing"), e.value.problem
    # kind ascend_pt, the entry a trace file: still torch_npu's way (a file has no ASCEND_PROFILER_OUTPUT)
    _trace(tmp_path / "x.pt.trace.json")
    path = _manifest(tmp_path, kind="ascend_pt", analysis="async", files=[{"name": "x.pt.trace.json"}])
    with pytest.raises(InputError, match="torch_npu is still analysing x.pt.trace.json"):
        read_canning_window(path)


def test_an_analysed_torch_npu_folder(tmp_path):
    """The fixture's db_level0 rank 0 folder, analysed (sync): read by the Ascend reader, the manifest
    over it; its manifest's size of a folder is not compared."""
    fixtures = os.environ.get("CANNING_FIXTURES") or os.path.join(os.path.dirname(__file__), "..", "fixtures")
    shutil.copytree(os.path.join(fixtures, "ascend", "db_level0", "rank0_ascend_pt"), tmp_path / "r_ascend_pt")
    path = _manifest(tmp_path, kind="ascend_pt", analysis="sync", rank=0, world_size=2, host="npu-host",
                     files=[{"name": "r_ascend_pt", "kind": "ascend_pt", "bytes": 1}])
    got = read_canning_window(path)
    assert (got.meta.format, got.meta.world_size, got.meta.host) == ("canning", 2, "npu-host")
    assert len(got) > 0 and got.meta.source_files[0] == path
    assert any(f.endswith("ascend_pytorch_profiler_0.db") for f in got.meta.source_files)
    assert not any("bytes, the manifest says" in p.message for p in got.problems)
