"""Across Ascend ranks: CANN's own figures, collectives matched in their communicator, pipeline waits
told apart, and the slow rank msprof-analyze flags on the same files.

The 4-rank set is tests/_ascend_sets.py's PP=2 x DP=2 job made from the two real level1 ranks (its
communicators number their members inside themselves; rank 3 has no trace_view.json); rank 2's
step_trace_time.csv is given 30 % more Computing (and that much less Free), as a slower card would
write it. msprof-analyze (its own CLI, .venv-peers) reads the same folders, once for the module: its
cluster_step_trace_time.csv rows, per-op waits and cluster matrix are the oracle.
"""
import csv
import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.build import build_digest
from canning_tb.analysis.cluster import analyse_ranks
from canning_tb.ingest.ascend.read import read_ascend

from _ascend_sets import DP, group_id, pipeline_set
from conftest import REPO, fixture_path

OUT = "ASCEND_PROFILER_OUTPUT"
SLOW = 2
PEERS_PY = Path(os.environ.get("CANNING_PEERS_PYTHON", REPO / ".venv-peers" / "bin" / "python"))


def _four_ranks(root: Path) -> Path:
    run = pipeline_set(root, no_trace=(3,))
    _slow_card(run / f"rank{SLOW}_ascend_pt" / OUT / "step_trace_time.csv")
    return run


def _slow_card(path: Path) -> None:
    rows = list(csv.reader(io.StringIO(path.read_text())))
    head = rows[0]
    comp, free = head.index("Computing"), head.index("Free")
    for row in rows[1:]:
        extra = float(row[comp]) * 0.3
        row[comp], row[free] = repr(float(row[comp]) + extra), repr(float(row[free]) - extra)
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    path.write_text(out.getvalue())


@pytest.fixture(scope="module")
def four(tmp_path_factory):
    run = _four_ranks(tmp_path_factory.mktemp("four"))
    digests = [build_digest(read_ascend(str(d))) for d in sorted(run.iterdir())]
    return run, digests


def _ratio(values):
    mean = sum(values) / len(values)
    return (max(values) - min(values)) / mean


def test_cann_figures_decide_the_slow_rank(four):
    run, digests = four
    r = analyse_ranks(digests)
    assert r["breakdown_source"] == "step_trace_time.csv"
    assert [x["rank"] for x in r["ranks"]] == [0, 1, 2, 3]
    # independent: the four step_trace_time.csv files read again
    csv_rows = {}
    for d in sorted(run.iterdir()):
        (row,) = csv.DictReader(io.StringIO((d / OUT / "step_trace_time.csv").read_text()))
        csv_rows[int(d.name.removeprefix("rank").split("_")[0])] = row
    for x in r["ranks"]:
        row = csv_rows[x["rank"]]
        assert abs(x["computing_ns"] - float(row["Computing"]) * 1000) <= 1
        assert abs(x["free_ns"] - float(row["Free"]) * 1000) <= 1
        assert x["source"] == "step_trace_time.csv"
    got = {m["metric"]: m for m in r["slow_ranks"]}
    comp = [float(csv_rows[k]["Computing"]) for k in range(4)]
    assert got["computing"]["ratio"] == pytest.approx(_ratio(comp), rel=1e-6)
    assert got["computing"]["flagged"] and got["computing"]["slowest_rank"] == SLOW


@pytest.fixture(scope="module")
def msprof_four(four, tmp_path_factory):
    """msprof-analyze's cluster analysis of the 4-rank set (tests/peers/msprof_oracle.py), run once."""
    if not PEERS_PY.exists():
        pytest.skip(f"peer tools interpreter {PEERS_PY} absent: run `make peers`")
    run, _ = four
    tmp = tmp_path_factory.mktemp("msprof_four")
    shutil.copytree(run, tmp / "cluster")  # msprof-analyze writes beside its input
    p = subprocess.run([str(PEERS_PY), str(REPO / "tests" / "peers" / "msprof_oracle.py"), str(tmp / "cluster"),
                        str(tmp / "out")], capture_output=True, text=True, timeout=500)
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    return json.loads((tmp / "out" / "oracle.json").read_text())


@pytest.mark.slow
def test_msprof_analyze_flags_the_same_rank(four, msprof_four):
    run, digests = four
    oracle = msprof_four
    rows = {int(x["index"]): x for x in oracle["step_trace"] if x["type"] == "rank"}
    assert sorted(rows) == [0, 1, 2, 3]
    ours = {m["metric"]: m for m in analyse_ranks(digests)["slow_ranks"]}
    for metric, col, slow_is_max in (("computing", "computing_us", True),
                                     ("communication", "communication_not_overlapped_us", False),
                                     ("free", "free_us", True)):
        values = [rows[k][col] for k in range(4)]
        assert ours[metric]["ratio"] == pytest.approx(_ratio(values), rel=1e-6), metric
        assert ours[metric]["flagged"] == (_ratio(values) > 0.05), metric
        want = max(range(4), key=lambda k: values[k]) if slow_is_max else min(range(4), key=lambda k: values[k])
        assert ours[metric]["slowest_rank"] == want, metric
    # the per-op waits msprof-analyze lists are the ones our ranks carry (communication.json), the rank
    # without trace_view.json too (its steps are CANN's; before, its wait was 0.000)
    ranks = {x["rank"]: x for x in analyse_ranks(digests)["ranks"]}
    for rank in range(4):
        ops = [o for o in oracle["ops"] if int(o["rank"]) == rank]
        theirs = sum(o["wait_ms"] for o in ops) * 1e6
        assert abs(ranks[rank]["wait_ns"] + ranks[rank]["p2p_wait_ns"] - theirs) <= 10 * len(ops), rank
    assert ranks[3]["wait_ns"] > 0 and ranks[3]["wait_source"] == "communication.json"


@pytest.mark.slow
def test_matrix_in_global_ranks_equals_msprof_analyze(four, msprof_four):
    """communication_matrix.json numbers each dp group's members 0, 1 (rank 2 is member 1 of {0, 2}):
    msprof-analyze maps them through each rank's own link; its cluster matrix of the dp groups is ours
    (before: 0 -> 0 summed over the ranks, ranks 2 and 3 with no link). The sends have no own link: it
    leaves them out; ours are checked by hand in test_xrank_sets.py."""
    _, digests = four
    theirs = {(c["src"], c["dst"], c["transport"], c["op"].split("@")[1]): round(c["size_mb"] * 1e6)
              for c in msprof_four["matrix"]}
    dp = {group_id(g) for g in DP}
    assert theirs and {k[3] for k in theirs} == dp
    ours = {(m["src"], m["dst"], m["transport"], m["group"]): m["bytes"] for m in analyse_ranks(digests)["matrix"]
            if m["group"] in dp}
    assert ours.keys() == theirs.keys()
    assert all(abs(ours[k] - theirs[k]) <= 1000 for k in theirs)


# -- matching and p2p on digests made by hand ------------------------------------------------------------
def _digest(rank: int, calls: list[tuple]) -> pb.Digest:
    d = pb.Digest()
    d.window.rank = rank
    d.steps.add(number=1, start_ns=0, dur_ns=1000)  # a rank's wait / transfer are per step: one spanning the calls
    d.average_steps.append(1)
    for kind, group, seq, start, dur, ctype in calls:
        d.communication.calls.add(kind=kind, group=group, seq=seq, start_ns=start, dur_ns=dur, bytes=-1,
                                  comm_type=ctype, wait_ns=-1, transit_ns=-1, synchronization_ns=-1)
    return d


def test_calls_are_matched_in_their_group_by_sequence():
    # two communicators; rank 1 logs the group B call earlier than rank 0 does, and its calls of
    # group A out of start order: HCCL's sequence, not the start order nor an index over groups, pairs them
    r0 = _digest(0, [("AllReduce", "A", 0, 100, 50, "collective"), ("AllReduce", "A", 1, 300, 20, "collective"),
                     ("AllReduce", "B", 0, 400, 40, "collective")])
    r1 = _digest(1, [("AllReduce", "B", 0, 50, 10, "collective"), ("AllReduce", "A", 1, 150, 60, "collective"),
                     ("AllReduce", "A", 0, 200, 30, "collective")])
    r = analyse_ranks([r0, r1])
    a = next(c for c in r["collectives"] if c["group"] == "A")
    # call 0: 50 vs 30 -> transfer 30; call 1: 20 vs 60 -> transfer 20
    assert a["per_rank"]["0"] == {"calls": 2, "total_ns": 70, "wait_ns": (50 - 30) + (20 - 20), "transfer_ns": 50}
    assert a["per_rank"]["1"] == {"calls": 2, "total_ns": 90, "wait_ns": (30 - 30) + (60 - 20), "transfer_ns": 50}
    b = next(c for c in r["collectives"] if c["group"] == "B")
    assert (b["per_rank"]["0"]["wait_ns"], b["per_rank"]["1"]["wait_ns"]) == (30, 0)
    assert a["wait_source"] == "matched calls"


def test_pipeline_waits_are_told_apart():
    r0 = _digest(0, [("AllReduce", "dp", 0, 0, 40, "collective"), ("Send", "pp", 0, 100, 90, "p2p")])
    r1 = _digest(1, [("AllReduce", "dp", 0, 0, 10, "collective"), ("Send", "pp", 0, 100, 30, "p2p")])
    rows = {x["rank"]: x for x in analyse_ranks([r0, r1])["ranks"]}
    assert (rows[0]["wait_ns"], rows[0]["p2p_wait_ns"]) == (30, 60)
    assert (rows[1]["wait_ns"], rows[1]["p2p_wait_ns"]) == (0, 0)


def test_cann_waits_win_when_every_rank_measured_them():
    r0 = _digest(0, [("AllReduce", "g", 0, 0, 40, "collective")])
    r1 = _digest(1, [("AllReduce", "g", 0, 0, 10, "collective")])
    for d, (wait, transit) in ((r0, (7, 3)), (r1, (2, 8))):
        d.communication.calls[0].wait_ns, d.communication.calls[0].transit_ns = wait, transit
        d.communication.source = "communication.json"
    r = analyse_ranks([r0, r1])
    rows = {x["rank"]: x for x in r["ranks"]}
    assert (rows[0]["wait_ns"], rows[0]["transfer_ns"], rows[1]["wait_ns"], rows[1]["transfer_ns"]) == (7, 3, 2, 8)
    assert r["collectives"][0]["wait_source"] == "communication.json"


# -- communicators from the files -------------------------------------------------------------------------
def _two_ranks(root: Path, metadata: dict | None = None) -> list[Path]:
    out = []
    for r in (0, 1):
        d = root / f"rank{r}_ascend_pt"
        shutil.copytree(fixture_path("ascend", "level1", f"rank{r}_ascend_pt"), d)
        for p in [d, *d.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        if metadata is not None:
            (d / "profiler_metadata.json").write_text(json.dumps(metadata))
        out.append(d)
    return out


def test_groups_from_the_metadata(tmp_path):
    raw = json.loads((fixture_path("ascend", "level1", "rank0_ascend_pt") / OUT / "communication.json").read_text())
    (group,) = {k.split("@")[1] for st in raw.values() for k in st["collective"] if "@" in k}
    meta = {"parallel_group_info": {group: {"group_name": "dp", "group_rank": 0, "global_ranks": [0, 1, 2, 3]}}}
    digests = [build_digest(read_ascend(str(d))) for d in _two_ranks(tmp_path, meta)]
    (g,) = digests[0].communication.groups
    assert (g.group, g.name, list(g.ranks), g.source) == (group, "dp", [0, 1, 2, 3], "profiler_metadata.json")
    (cg,) = analyse_ranks(digests)["groups"]
    assert cg["calling_ranks"] == [0, 1] and cg["missing"] == [] and cg["ranks"] == [0, 1, 2, 3]


@pytest.mark.slow
def test_groups_from_msprof_communication_group_json(tmp_path):
    if not PEERS_PY.exists():
        pytest.skip(f"peer tools interpreter {PEERS_PY} absent: run `make peers`")
    folders = _two_ranks(tmp_path / "run")
    exe = PEERS_PY.parent / "msprof-analyze"
    p = subprocess.run([str(exe), "-d", str(tmp_path / "run"), "-m", "all"], capture_output=True, text=True, timeout=500)
    written = tmp_path / "run" / "cluster_analysis_output" / "communication_group.json"
    assert written.exists(), (p.stdout + p.stderr)[-3000:]
    info = json.loads(written.read_text())["comm_group_parallel_info"]
    t = read_ascend(str(folders[1]))
    assert sorted((g["group"], g["ranks"]) for g in t.side["comm_groups"]) == \
        sorted((x["group_name"], ",".join(map(str, sorted(x["rank_set"])))) for x in info)
    assert t.meta.environment["source.comm_groups"].endswith("communication_group.json")
    # discovery does not take msprof-analyze's output folder for a window
    from canning_tb.store.discover import discover
    (run,) = discover(str(tmp_path)).values()
    assert sorted(w.rank for w in run.workers.values()) == [0, 1]
