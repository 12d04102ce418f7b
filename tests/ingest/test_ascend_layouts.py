"""torch_npu output in the shapes users have it, each derived from a real fixture by the change users
make (trace_view.json left behind, CSVs dropped, folders renamed, ranks copied, dbs collected).
Expected numbers come from reading the files again here with csv / json / sqlite3."""
import csv
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from canning_tb.analysis.build import build_digest
from canning_tb.ingest.ascend.read import read_ascend
from canning_tb.store.discover import discover

from conftest import fixture_path

OUT = "ASCEND_PROFILER_OUTPUT"
CLI = [sys.executable, "-m", "canning_tb.cli.main"]


def copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def rank_folder(level: str, rank: int) -> Path:
    return fixture_path("ascend", level, f"rank{rank}_ascend_pt")


def csv_rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def us_ns(cell: str) -> int:
    whole, _, frac = cell.strip().partition(".")
    return int(whole) * 1000 + int(frac.ljust(3, "0")[:3])


def cli_json(path: Path, cache: Path) -> dict:
    p = subprocess.run([*CLI, "--mode=view", f"--input={path}", "--format=json", "--detail", f"--cache-dir={cache}"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def cann_step_ns(folder: Path) -> list[tuple[int, int]]:
    """(step, Preparing + computing + communication not overlapped + free) of step_trace_time.csv, in ns:
    the host step's start to its first device task, then CANN's device step."""
    return [(int(r["Step"]), us_ns(r["Preparing"]) + us_ns(r["Computing"]) + us_ns(r["Communication(Not Overlapped)"])
             + us_ns(r["Free"])) for r in csv_rows(folder / OUT / "step_trace_time.csv")]


# -- kernel_details.csv without trace_view.json ------------------------------------------------------
def test_no_trace_view_gives_a_report(tmp_path):
    d = copy(rank_folder("level1", 0), tmp_path / "run" / "rank0_ascend_pt")
    (d / OUT / "trace_view.json").unlink()
    digest = build_digest(read_ascend(str(d)))
    rows = csv_rows(d / OUT / "kernel_details.csv")
    assert sum(k.calls for k in digest.kernels_by_name) == len(rows)
    # hcom operators are one kernel family, not one row per call
    hcom = [r for r in rows if r["Name"].startswith("hcom_")]
    (fam,) = [k for k in digest.kernels_by_name if k.communication]
    assert fam.name == "hcom_allReduce_" and fam.calls == len(hcom)
    assert fam.total_ns == sum(us_ns(r["Duration(us)"]) for r in hcom)
    # no ProfilerStep range: the steps CANN measured, and the digest says so
    assert digest.step_source == "step_trace_time.csv"
    assert [(s.number, s.dur_ns) for s in digest.steps] == cann_step_ns(d)
    assert any(p.severity == "info" and "trace_view.json" in p.file for p in digest.problems)
    # operators: the calls operator_details.csv lists, summed by name
    ops = csv_rows(d / OUT / "operator_details.csv")
    want = {}
    for r in ops:
        calls, total = want.get(r["Name"], (0, 0))
        want[r["Name"]] = (calls + 1, total + us_ns(r["Host Total Duration(us)"]))
    assert {o.name: (o.calls, o.host_total_ns) for o in digest.ops_by_name} == want
    # the communicator comes from communication.json when the kernel list names none
    raw = json.loads((d / OUT / "communication.json").read_text())
    groups = {k.split("@")[1] for st in raw.values() for k in st["collective"] if "@" in k}
    assert {c.group for c in digest.communication.collectives} == groups


def test_one_window_without_trace_does_not_stop_the_others(tmp_path):
    run = tmp_path / "run"
    copy(rank_folder("level1", 1), run / "rank1_ascend_pt")
    d = copy(rank_folder("level1", 0), run / "rank0_ascend_pt")
    (d / OUT / "trace_view.json").unlink()
    report = cli_json(run, tmp_path / "cache")
    assert sorted((w["digest"]["window"]["rank"], w["error"]) for w in report["windows"]) == [(0, None), (1, None)]
    (group,) = report["ranks"]
    assert sorted(r["rank"] for r in group["analysis"]["ranks"]) == [0, 1]


# -- Level0 / analysis off: only the summaries -------------------------------------------------------
SUMMARIES = {"step_trace_time.csv", "communication.json", "communication_matrix.json"}


def summaries_only(tmp_path: Path, level: str = "level1") -> Path:
    d = copy(rank_folder(level, 0), tmp_path / "rank0_ascend_pt")
    for f in (d / OUT).iterdir():
        if f.name not in SUMMARIES:
            f.unlink()
    (d / "profiler_metadata.json").unlink()
    return d


def test_summaries_only_show_steps_and_communication(tmp_path):
    d = summaries_only(tmp_path)
    digest = build_digest(read_ascend(str(d)))
    assert [(s.number, s.dur_ns) for s in digest.steps] == cann_step_ns(d)
    (st,) = csv_rows(d / OUT / "step_trace_time.csv")
    b = digest.steps[0].breakdown
    assert b.communication_ns == us_ns(st["Communication(Not Overlapped)"])
    assert b.compute_ns + b.overlapped_ns == us_ns(st["Computing"])
    assert b.idle_ns == us_ns(st["Free"]) and b.host_ns == us_ns(st["Preparing"])
    assert digest.cann_steps[0].bubble_ns == us_ns(st["Bubble"]) and digest.cann_steps[0].source == "step_trace_time.csv"
    raw = json.loads((d / OUT / "communication.json").read_text())
    ops = {k: v for st_ in raw.values() for k, v in st_["collective"].items() if k != "Total Op Info"}
    (coll,) = digest.communication.collectives
    assert coll.calls == len(ops) == len(digest.communication.calls)
    assert coll.total_ns == sum(round(v["Communication Time Info"]["Elapse Time(ms)"] * 1e6) for v in ops.values())
    assert coll.transfer_ns == sum(round(v["Communication Time Info"]["Transit Time(ms)"] * 1e6) for v in ops.values())
    assert coll.wait_ns == sum(round(v["Communication Time Info"]["Wait Time(ms)"] * 1e6) for v in ops.values())
    # bytes: what CANN saw on the links (SDMA = HCCS + PCIE + SIO, plus RDMA), decimal MB
    transit = sum(round((v["Communication Bandwidth Info"]["SDMA"]["Transit Size(MB)"]
                         + v["Communication Bandwidth Info"]["RDMA"]["Transit Size(MB)"]) * 1e6) for v in ops.values())
    assert abs(coll.transit_bytes - transit) <= len(ops)
    assert coll.bytes == coll.transit_bytes  # no payload size without the trace: the bytes CANN saw
    assert coll.source == digest.communication.source == "communication.json"
    assert [c.seq for c in sorted(digest.communication.calls, key=lambda c: c.start_ns)] == list(range(len(ops)))
    missing = {p.file.rsplit("/", 1)[-1] for p in digest.problems if p.severity == "info"}
    assert {"trace_view.json", "kernel_details.csv", "memory_record.csv"} <= missing


def test_links_are_cann_totals_never_twice(tmp_path):
    d = summaries_only(tmp_path)
    digest = build_digest(read_ascend(str(d)))
    mat = json.loads((d / OUT / "communication_matrix.json").read_text())
    total = [cell for st in mat.values() for ops in st.values() for k, links in ops.items()
             if k.split("@")[0].endswith("-total") for cell in links.values()]
    assert len(digest.communication.links) == len(total)
    assert sum(x.bytes for x in digest.communication.links) == sum(round(c["Transit Size(MB)"] * 1e6) for c in total)


def test_2023_matrix_with_total_op_info_is_not_counted_twice(tmp_path):
    """2023 exports key the matrix by operator, plus CANN's sum under "Total Op Info"."""
    d = summaries_only(tmp_path)
    path = d / OUT / "communication_matrix.json"
    mat = json.loads(path.read_text())
    old = {}
    for step, kinds in mat.items():
        old[step] = {}
        for kind, ops in kinds.items():
            per_op: dict = {}
            total = {}
            for key, links in ops.items():
                name, group = key.split("@")
                if name.endswith("-total"):
                    total = links
                elif not name.rsplit("-", 1)[-1].startswith(("top", "middle", "bottom")):
                    continue
                else:
                    for pair, cell in links.items():
                        per_op.setdefault(f"{cell['Op Name']}@{group}", {})[pair] = cell
            old[step][kind] = {**per_op, **({"Total Op Info": total} if total else {})}
    path.write_text(json.dumps(old))
    digest = build_digest(read_ascend(str(d)))
    # the per-operator cells name their communicator (the cross-rank view maps its member numbers):
    # they are taken, and the group-less sum of them is not added on top
    want = [(c, key.split("@")[1]) for st in old.values() for ops in st.values() for key, cells in ops.items()
            if key != "Total Op Info" for c in cells.values()]
    assert want and len(digest.communication.links) == len(want)
    assert sum(x.bytes for x in digest.communication.links) == sum(round(c["Transit Size(MB)"] * 1e6) for c, _ in want)
    assert sorted(x.group for x in digest.communication.links) == sorted(g for _, g in want)


# -- recognised by content, ranks from the files -------------------------------------------------------
def _workers(logdir: Path) -> dict[tuple[str, str], int]:
    return {(run, w.name): w.rank for run, r in discover(str(logdir)).items() for w in r.workers.values()}


def test_free_names_of_2023(tmp_path):
    copy(rank_folder("level2", 0), tmp_path / "run" / "alexnet experiment")
    copy(rank_folder("level2", 1), tmp_path / "run" / "node3-gpu1")
    assert _workers(tmp_path) == {("run", "alexnet experiment"): 0, ("run", "node3-gpu1"): 1}


def test_bare_output_folder(tmp_path):
    src = rank_folder("level1", 1) / OUT
    bare = copy(src, tmp_path / "copied_output")
    runs = discover(str(bare))
    (run,) = runs.values()
    (worker,) = run.workers.values()
    (win,) = worker.windows
    t = read_ascend(win.path)
    assert len(csv_rows(bare / "kernel_details.csv")) == sum(1 for k in t.events["kind"] if k in (5, 9))
    # no profiler_info: the rank comes from the data (the matrix's self link names this rank)
    mat = json.loads((bare / "communication_matrix.json").read_text())
    selfs = {int(p.split("-")[0]) for st in mat.values() for ops in st.values() for links in ops.values()
             for p in links if p.split("-")[0] == p.split("-")[1]}
    assert selfs == {t.meta.rank}


def test_four_ranks_named_rank_n_are_four_workers(tmp_path):
    run = tmp_path / "run"
    for r in range(4):
        d = copy(rank_folder("level1", r % 2), run / f"rank_{r}_ascend_pt")
        (info,) = d.glob("profiler_info_*.json")
        j = json.loads(info.read_text())
        j["rank_id"] = r
        info.unlink()
        (d / f"profiler_info_{r}.json").write_text(json.dumps(j))
    assert sorted(_workers(tmp_path).values()) == [0, 1, 2, 3]
    report = cli_json(run, tmp_path / "cache")
    (group,) = report["ranks"]
    assert [r["rank"] for r in group["analysis"]["ranks"]] == [0, 1, 2, 3]
    # world size from the files: the matrix links 8 ranks of the job
    mat = json.loads((run / "rank_0_ascend_pt" / OUT / "communication_matrix.json").read_text())
    linked = {int(x) for st in mat.values() for ops in st.values() for links in ops.values() for p in links
              for x in p.split("-")}
    assert {w["digest"]["window"]["world_size"] for w in report["windows"]} == {max(linked) + 1}


def test_profiler_dbs_alone(tmp_path):
    dbs = tmp_path / "dbs"
    dbs.mkdir()
    for r in (0, 1):
        shutil.copy(rank_folder("db_level1", r) / OUT / f"ascend_pytorch_profiler_{r}.db", dbs)
    got = _workers(tmp_path)
    assert sorted(got.values()) == [0, 1]
    for (run, name), rank in got.items():
        (win,) = discover(str(tmp_path))[run].workers[name].windows
        t = read_ascend(win.path)
        c = sqlite3.connect(f"file:{win.path}?mode=ro", uri=True)
        (rank_in_db,) = c.execute("select rankId from RANK_DEVICE_MAP").fetchone()
        n_compute = c.execute("select count(*) from TASK join COMPUTE_TASK_INFO using(globalTaskId)").fetchone()[0]
        assert t.meta.rank == rank_in_db == rank
        assert sum(1 for k in t.events["kind"] if k == 5) == n_compute


def test_logdir_is_one_rank_folder(tmp_path):
    d = copy(rank_folder("level0", 1), tmp_path / "whatever")
    runs = discover(str(d))
    assert [(name, [w.rank for w in r.workers.values()]) for name, r in runs.items()] == [(".", [1])]


def test_metadata_groups_and_world_size(tmp_path):
    d = copy(rank_folder("level1", 0), tmp_path / "r")
    (d / "profiler_metadata.json").write_text(json.dumps({
        "distributed_args": {"world_size": 16, "rank": 9},
        "parallel_group_info": {"17522688603477080586": {"group_name": "dp", "group_rank": 0,
                                                         "global_ranks": list(range(8))}}}))
    t = read_ascend(str(d))
    assert t.meta.world_size == 16
    assert t.meta.rank == 0  # profiler_info's rank_id wins over the metadata
    (g,) = t.side["comm_groups"]
    assert g["name"] == "dp" and g["ranks"] == ",".join(map(str, range(8)))


def test_ascend_analysis_reads_no_file_format():
    """analysis/ knows side tables in ns and bytes, never a CSV header or a file unit."""
    import canning_tb.analysis as pkg
    folder = Path(pkg.__file__).parent
    for f in folder.glob("*.py"):
        if f.name == "digest_pb2.py":
            continue
        text = f.read_text()
        for header in ("(us)", "(MB)", "(KB)", "Size(", "Time(", "extras"):
            assert header not in text, f"{f.name} mentions {header!r}"


def test_side_tables_are_checked_when_written():
    from canning_tb.ingest import side_tables as side
    from canning_tb.ingest.table import EventTable
    with pytest.raises(side.SideTableError):
        side.row("step_trace", step=1, computing_us=3)
    with pytest.raises(side.SideTableError):
        side.put({}, "step_trace", [{"step": 1}])
    bad = side.row("step_trace", step=1)
    bad["computing_ns"] = 1.5  # ns are integers
    with pytest.raises(side.SideTableError):
        side.put({}, "step_trace", [bad])
    t = EventTable()
    t.side["nonsense"] = []
    with pytest.raises(side.SideTableError):
        t.check()
    for name, spec in side.SIDE_TABLES.items():
        assert spec.doc and all(c.doc for c in spec.columns), name
        assert all(c.unit == "ns" for c in spec.columns if c.name.endswith("_ns")), name


def test_side_tables_survive_the_cache(tmp_path):
    t = read_ascend(str(rank_folder("level1", 0)))
    t.save(str(tmp_path / "t"))
    back = type(t).load(str(tmp_path / "t"))
    assert back.side == t.side
    back.check()


def test_numpy_values_in_side_rows_survive_the_cache(tmp_path):
    """Readers may leave numpy scalars and arrays in side-table rows and metadata; the sidecar writes them
    as the plain numbers and lists they hold (written after mutation testing: no fixture row has one)."""
    import numpy as np
    t = read_ascend(str(rank_folder("level1", 0)))
    t.side["odd_rows"] = [{"n": np.int64(7), "x": np.float64(2.5), "v": np.array([1, 2, 3], np.int32)}]
    t.meta.devices = [{"kind": "npu", "index": np.int64(1), "memory": np.int64(1 << 36)}]
    t.save(str(tmp_path / "t"))
    back = type(t).load(str(tmp_path / "t"))
    assert back.side["odd_rows"] == [{"n": 7, "x": 2.5, "v": [1, 2, 3]}]
    assert back.meta.devices == [{"kind": "npu", "index": 1, "memory": 1 << 36}]


@pytest.mark.parametrize("lazy", [False, True])
def test_metrics_survive_the_cache(tmp_path, lazy):
    """The PMU metrics (on the kernel rows only: kept as rows and values) and a dense one come back equal,
    NaN where the file had none."""
    import numpy as np
    t = read_ascend(str(rank_folder("level2", 0)))
    t.metrics["dense"] = np.arange(len(t), dtype=np.float64)
    t.save(str(tmp_path / "t"))
    with np.load(tmp_path / "t.npz") as z:
        assert any(k.endswith("_rows") for k in z.files) and any(k.startswith("x_") and k[2:].isdigit() for k in z.files)
    back = type(t).load(str(tmp_path / "t"), lazy=lazy)
    assert sorted(back.metrics) == sorted(t.metrics) and len(t.metrics) > 5
    for name, column in t.metrics.items():
        assert np.array_equal(back.metrics[name], column, equal_nan=True), name
    assert 0 < np.count_nonzero(~np.isnan(t.metrics["aic_mac_ratio"])) < len(t) / 3


def test_ascend_ingest_modules_are_small_and_acyclic():
    """No function of the Ascend reader over ~60 lines; no import cycle among ingest modules."""
    import ast
    import canning_tb.ingest as pkg
    folder = Path(pkg.__file__).parent
    graph = {}
    for f in folder.glob("*.py"):
        tree = ast.parse(f.read_text())
        if f.name.startswith(("ascend", "side_tables")):
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    assert node.end_lineno - node.lineno < 62, f"{f.name}:{node.name} is {node.end_lineno - node.lineno} lines"
        graph[f.stem] = {n.module.split(".")[0] for n in ast.walk(tree)
                         if isinstance(n, ast.ImportFrom) and n.level == 1 and n.module}
    def reach(start, seen):
        for nxt in graph.get(start, ()):
            if nxt not in seen:
                seen.add(nxt)
                reach(nxt, seen)
        return seen
    for mod in graph:
        assert mod not in reach(mod, set()), f"import cycle through {mod}"
