"""read_ascend on the real torch_npu fixtures; expected numbers come from a second, plain reading
(csv / json / sqlite3 by hand) of the same files, never from the reader under test."""
import csv
import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from canning_tb.ingest.ascend.read import read_ascend
from canning_tb.ingest.table import NONE, InputError, Kind

from conftest import fixture_path, read_db

TEXT_LEVELS = ["level0", "level1", "level2"]
RANKS = [0, 1]


def _folder(level, rank):
    return fixture_path("ascend", level, f"rank{rank}_ascend_pt")


def _out(folder):
    return Path(folder) / "ASCEND_PROFILER_OUTPUT"


def _rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _us_ns(s):
    whole, frac = s.strip().split(".")
    return int(whole) * 1000 + int(frac.ljust(3, "0")[:3])


def _kinds(t, *kinds):
    k = t.events["kind"]
    m = np.zeros(len(k), dtype=bool)
    for x in kinds:
        m |= k == x
    return m


@pytest.fixture(scope="module")
def tables():
    cache = {}

    def get(level, rank):
        if (level, rank) not in cache:
            cache[(level, rank)] = read_ascend(str(_folder(level, rank)))
        return cache[(level, rank)]
    return get


@pytest.mark.parametrize("level", TEXT_LEVELS)
@pytest.mark.parametrize("rank", RANKS)
def test_kernels_match_kernel_details(tables, level, rank):
    folder = _folder(level, rank)
    rows = _rows(_out(folder) / "kernel_details.csv")
    t = tables(level, rank)
    t.check()
    m = _kinds(t, Kind.KERNEL, Kind.COMM_KERNEL)
    assert m.sum() == len(rows)
    assert int(t.events["dur"][m].sum()) == sum(_us_ns(r["Duration(us)"]) for r in rows)
    # core counts per Accelerator Core value, as written
    want = Counter(r["Accelerator Core"] for r in rows)
    got = Counter(t.strings[c] for c in t.events["core"][m])
    assert got == want
    # communication tasks are COMM_KERNEL, and carry bytes (count x dtype size from the trace)
    comm = _kinds(t, Kind.COMM_KERNEL)
    assert comm.sum() == sum(1 for r in rows if r["Name"].startswith("hcom_"))
    assert (t.events["bytes"][comm] > 0).all()
    # every device task is linked to a host op through external_id
    assert (t.events["external_id"][m] != NONE).all()
    ext_cpu = set(t.events["external_id"][_kinds(t, Kind.CPU_OP)].tolist()) - {NONE}
    assert set(t.events["external_id"][m].tolist()) <= ext_cpu
    assert t.meta.format == "ascend"
    assert any(p.endswith("kernel_details.csv") for p in t.meta.source_files)


@pytest.mark.parametrize("level", TEXT_LEVELS)
@pytest.mark.parametrize("rank", RANKS)
def test_meta_rank_steps_and_cpu_op_ts(tables, level, rank):
    folder = _folder(level, rank)
    t = tables(level, rank)
    info = next(Path(folder).glob("profiler_info_*.json"))
    assert t.meta.rank == int(info.stem.rsplit("_", 1)[1]) == rank
    assert t.meta.devices and t.meta.devices[0]["kind"] == "npu" and "Ascend" in t.meta.devices[0]["name"]
    raw = json.loads((_out(folder) / "trace_view.json").read_text())
    steps = [e for e in raw if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")]
    names = [t.name(i) for i in range(len(t))]
    got_steps = [i for i, n in enumerate(names) if n and n.startswith("ProfilerStep#")]
    assert len(got_steps) == len(steps)
    assert all(t.events["kind"][i] == Kind.USER_ANNOTATION for i in got_steps)
    # a specific cpu_op: the first aten::empty, exact ts from the raw string
    op = next(e for e in raw if e.get("cat") == "cpu_op" and e["name"] == "aten::empty")
    want_ts = _us_ns(op["ts"])
    idx = [i for i, n in enumerate(names) if n == "aten::empty" and t.events["ts"][i] == want_ts]
    assert idx and t.events["kind"][idx[0]] == Kind.CPU_OP
    assert t.meta.start_ns != NONE and t.meta.end_ns > t.meta.start_ns
    assert t.meta.environment["profiler.profiler_level"] == level.capitalize()


@pytest.mark.parametrize("level", TEXT_LEVELS)
@pytest.mark.parametrize("rank", RANKS)
def test_memory_record(tables, level, rank):
    rows = _rows(_out(_folder(level, rank)) / "memory_record.csv")
    t = tables(level, rank)
    assert len(t.memory["ts"]) == len(rows)
    peak = max(round(float(r["Total Allocated(MB)"]) * 1024 * 1024) for r in rows if r["Total Allocated(MB)"])
    assert int(t.memory["allocated"].max()) == peak
    comps = Counter(t.strings[c] for c in t.memory["component"])
    assert comps == Counter(r["Component"] for r in rows)
    assert set(t.strings[d] for d in t.memory["device"]) <= {"npu:%d" % rank, "CPU"}


@pytest.mark.parametrize("level", ["level1", "level2"])
@pytest.mark.parametrize("rank", RANKS)
def test_communication_side_tables(tables, level, rank):
    folder = _folder(level, rank)
    raw = json.loads((_out(folder) / "communication.json").read_text())
    t = tables(level, rank)
    ops = {(r["step"], r["op"]): r for r in t.side["comm_ops"]}
    n_ops = 0
    for step, kinds in raw.items():
        for key, info in kinds["collective"].items():
            if key == "Total Op Info":  # CANN's sum, not a call
                continue
            n_ops += 1
            op, group = key.split("@")
            row = ops[(int(step[4:]), op)]
            assert row["elapse_ns"] == round(info["Communication Time Info"]["Elapse Time(ms)"] * 1e6)
            assert row["group"] == group and row["kind"] == "collective"
            hccs = info["Communication Bandwidth Info"]["HCCS"]
            bw = [b for b in t.side["comm_bandwidth"] if b["op"] == op and b["transport"] == "HCCS"]
            assert bw[0]["size_bytes"] == round(hccs["Transit Size(MB)"] * 1e6)  # decimal MB
    assert len(t.side["comm_ops"]) == n_ops
    mat = json.loads((_out(folder) / "communication_matrix.json").read_text())
    n = sum(len(links) for k in mat.values() for ops in k.values() for links in ops.values())
    assert len(t.side["comm_matrix"]) == n
    n_total = sum(len(links) for k in mat.values() for ops in k.values() for key, links in ops.items()
                  if key.split("@")[0].endswith("-total"))
    assert sum(1 for r in t.side["comm_matrix"] if r["aggregate"] == "total") == n_total
    # op statistic
    st = _rows(_out(folder) / "op_statistic.csv")
    assert len(t.side["op_statistic"]) == len(st)
    assert t.side["op_statistic"][0]["total_ns"] == _us_ns(st[0]["Total Time(us)"])


@pytest.mark.parametrize("level", TEXT_LEVELS)
def test_step_trace_and_overlap(tables, level):
    t = tables(level, 0)
    rows = _rows(_out(_folder(level, 0)) / "step_trace_time.csv")
    assert [s["step"] for s in t.side["step_trace"]] == [int(r["Step"]) for r in rows]
    assert t.side["step_trace"][0]["computing_ns"] == round(float(rows[0]["Computing"]) * 1000)
    raw = json.loads((_out(_folder(level, 0)) / "trace_view.json").read_text())
    pid = next(e["pid"] for e in raw if e.get("ph") == "M" and e["name"] == "process_name"
               and e["args"]["name"] == "Overlap Analysis")
    n = sum(1 for e in raw if e.get("ph") == "X" and e["pid"] == pid)
    assert len(t.side["overlap_analysis"]) == n
    assert "operator_details" not in t.side  # trace present: host ops come from the trace
    om = _rows(_out(_folder(level, 0)) / "operator_memory.csv")
    assert len(t.side["operator_memory"]) == len(om)
    assert t.side["operator_memory"][0]["bytes"] == round(float(om[0]["Size(KB)"]) * 1024)


# -- SQLite export ---------------------------------------------------------------------------------
@pytest.mark.parametrize("rank", RANKS)
def test_db_level1(rank):
    folder = _folder("db_level1", rank)
    t = read_ascend(str(folder))
    t.check()
    assert t.meta.environment["ascend_source"] == "db"
    db = _out(folder) / f"ascend_pytorch_profiler_{rank}.db"
    c = read_db(db)
    n_compute = c.execute("select count(*) from TASK join COMPUTE_TASK_INFO using(globalTaskId)").fetchone()[0]
    n_comm = c.execute("select count(*) from COMMUNICATION_OP").fetchone()[0]
    assert _kinds(t, Kind.KERNEL).sum() == n_compute
    assert _kinds(t, Kind.COMM_KERNEL).sum() == n_comm
    dur = c.execute("select sum(endNs-startNs) from TASK join COMPUTE_TASK_INFO using(globalTaskId)").fetchone()[0]
    assert int(t.events["dur"][_kinds(t, Kind.KERNEL)].sum()) == dur
    n_mem, peak = c.execute("select count(*), max(totalAllocated) from MEMORY_RECORD").fetchone()
    assert len(t.memory["ts"]) == n_mem and int(t.memory["allocated"].max()) == peak
    n_ops = c.execute("select count(*) from PYTORCH_API where type=50001").fetchone()[0]
    assert _kinds(t, Kind.CPU_OP, Kind.USER_ANNOTATION).sum() == n_ops
    steps = c.execute("select id from STEP_TIME").fetchall()
    names = {t.name(i) for i in np.flatnonzero(_kinds(t, Kind.USER_ANNOTATION))}
    assert {f"ProfilerStep#{s}" for (s,) in steps} <= names
    assert t.meta.rank == rank
    m = _kinds(t, Kind.KERNEL, Kind.COMM_KERNEL)
    assert (t.events["external_id"][m] != NONE).mean() > 0.9
    a = read_db(_out(folder) / 'analysis.db')
    n_t = a.execute("select count(*) from CommAnalyzerTime where hccl_op_name != 'Total Op Info'").fetchone()[0]
    assert len(t.side["comm_ops"]) == n_t
    assert len(t.side["comm_matrix"]) == a.execute("select count(*) from CommAnalyzerMatrix").fetchone()[0]


# -- drift and damage ------------------------------------------------------------------------------
def _copy(level, tmp_path, name="rank0_ascend_pt"):
    dst = tmp_path / name
    shutil.copytree(_folder(level, 0), dst)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def _rewrite_csv(path, fn):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    rows = fn(rows)
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)


def test_block_num_no_device_id_and_bad_row(tmp_path):
    d = _copy("level1", tmp_path, "host_1234_20260920075211024_ascend_pt")
    kd = _out(d) / "kernel_details.csv"
    orig = _rows(kd)

    def edit(rows):
        h = rows[0]
        h[h.index("Block Dim")] = "Block Num"
        h.insert(1, "Device_id")
        body = [r[:1] + ["3"] + r[1:] for r in rows[1:]]
        body[4] = body[4][:5]  # wrong column count
        return [h] + body
    _rewrite_csv(kd, edit)
    t = read_ascend(str(d))
    assert t.meta.worker == "host_1234"
    m = _kinds(t, Kind.KERNEL, Kind.COMM_KERNEL)
    # the skipped row's task survives from trace_view.json (unmatched trace tasks stay), so nothing is lost
    assert m.sum() == len(orig)
    m &= t.events["cat"] == t.strings.find("kernel_details")
    assert m.sum() == len(orig) - 1
    assert set(t.events["device"][m].tolist()) == {3}
    want_blocks = sorted(int(r["Block Dim"]) for i, r in enumerate(orig) if i != 4)
    assert sorted(t.events["blocks"][m].tolist()) == want_blocks
    warn = [p for p in t.problems if p.file.endswith("kernel_details.csv") and p.severity == "warning"]
    assert len(warn) == 1 and "1 row" in warn[0].message and "line 6" in warn[0].message


def test_no_device_id_column_lf_and_trailing_tabs(tmp_path):
    d = _copy("level0", tmp_path)
    kd = _out(d) / "kernel_details.csv"
    orig = _rows(kd)
    assert orig[0]["Start Time(us)"].endswith("\t")  # the real quirk is present
    _rewrite_csv(kd, lambda rows: [[c.rstrip("\t") for c in r] for r in rows])
    t = read_ascend(str(d))
    m = _kinds(t, Kind.KERNEL, Kind.COMM_KERNEL)
    assert sorted(t.events["ts"][m].tolist()) == sorted(_us_ns(r["Start Time(us)"]) for r in orig)
    assert not [p for p in t.problems if p.severity == "error"]


def test_truncated_trace_view(tmp_path):
    d = _copy("level1", tmp_path)
    tv = _out(d) / "trace_view.json"
    data = tv.read_bytes()
    tv.write_bytes(data[: len(data) // 2])
    t = read_ascend(str(d))
    errs = [p for p in t.problems if p.file.endswith("trace_view.json") and p.severity == "error"]
    assert errs
    rows = _rows(_out(d) / "kernel_details.csv")
    assert _kinds(t, Kind.KERNEL, Kind.COMM_KERNEL).sum() == len(rows)
    assert len(t.side["operator_details"]) == len(_rows(_out(d) / "operator_details.csv"))
    assert len(t.memory["ts"]) > 0


def test_empty_kernel_details_uses_trace_tasks(tmp_path):
    d = _copy("level1", tmp_path)
    (_out(d) / "kernel_details.csv").write_text("")
    t = read_ascend(str(d))
    assert any(p.file.endswith("kernel_details.csv") and p.severity == "error" for p in t.problems)
    raw = json.loads((_out(d) / "trace_view.json").read_text())
    pn = {e["pid"]: e["args"]["name"] for e in raw if e.get("ph") == "M" and e["name"] == "process_name"}
    hcom = sum(1 for e in raw if e.get("ph") == "X" and pn.get(e["pid"]) == "HCCL" and e["name"].startswith("hcom_"))
    assert _kinds(t, Kind.COMM_KERNEL).sum() == hcom
    hw_compute = sum(1 for e in raw if e.get("ph") == "X" and pn.get(e["pid"]) == "Ascend Hardware"
                     and e["args"].get("Task Type") in ("AI_CORE", "AI_VECTOR_CORE", "MIX_AIV", "MIX_AIC", "DSA_SQE"))
    assert _kinds(t, Kind.KERNEL).sum() == hw_compute


def test_nothing_usable_raises(tmp_path):
    d = tmp_path / "rank0_ascend_pt"
    d.mkdir()
    with pytest.raises(InputError):
        read_ascend(str(d))
    (d / "ASCEND_PROFILER_OUTPUT").mkdir()
    (d / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").write_text("[{")
    with pytest.raises(InputError):
        read_ascend(str(d))


def test_rank_id_string_and_metadata(tmp_path):
    d = _copy("level1", tmp_path)
    info = d / "profiler_info_0.json"
    j = json.loads(info.read_text())
    j["rank_id"] = "5"
    info.write_text(json.dumps(j))
    (d / "profiler_metadata.json").write_text(json.dumps({
        "ENV_VARIABLES": {"HCCL_ALGO": "ring"},
        "parallel_group_info": {"c1": {"group_name": "dp", "group_rank": 0, "global_ranks": [0, 1, 2, 3]}}}))
    t = read_ascend(str(d))
    assert t.meta.rank == 5 and t.meta.world_size == 4
    assert t.meta.environment["env.HCCL_ALGO"] == "ring"
