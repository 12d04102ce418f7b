"""Cross-rank and communication figures on torch_npu sets as other clusters write them (tests/_ascend_sets.py):
a 4-rank PP=2 x DP=2 job whose communicators number their members 0..n-1 (not the global ranks) and whose
group ids are the hash of the communicator names profiler_metadata.json declares; a rank without
trace_view.json; a rank with only step_trace_time.csv and kernel_details.csv; a sampled kernel_details.csv;
a kernel list that lists some of the step's HCCL calls only; 2023's HCCL names; msprof-analyze's
communication_group.json.

Expected values are second readings of the files (json / csv, the member numbers mapped by hand from
the set's construction or from the ranks that name each group); msprof-analyze's cluster analysis of
the same 4-rank set is the oracle in test_ascend_cluster.py (one run for both); never the code under test.
"""
import csv
import io
import json
import shutil
from collections import defaultdict
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import pytest

from _ascend_sets import COMM_NAME, DP, OUT, PP, double_hash, group_id, only_step_and_kernels, pipeline_set, \
    sample_kernels
from conftest import fixture_path

from canning_tb.analysis.build import build_digest
from canning_tb.analysis.cluster import analyse_ranks
from canning_tb.ingest.ascend.read import read_ascend

US = 1000


def us_ns(cell: str) -> int:
    """A µs cell (CANN writes float sums like 26675.27399999998) to the nearest ns."""
    return int((Decimal(cell.strip()) * 1000).to_integral_value(ROUND_HALF_EVEN))


def csv_rows(path: Path) -> list[dict]:
    return list(csv.DictReader(io.StringIO(path.read_text(), newline="")))


def copy_level1(root: Path) -> Path:
    run = root / "run"
    shutil.copytree(fixture_path("ascend", "level1"), run)
    for p in [run, *run.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return run


def digests_of(run: Path) -> list:
    return [build_digest(read_ascend(str(d))) for d in sorted(run.iterdir()) if d.name.endswith("_ascend_pt")]


def comm_calls(folder: Path) -> list[dict]:
    """communication.json read again: one dict per operator call."""
    raw = json.loads((folder / OUT / "communication.json").read_text())
    out = []
    for kinds in raw.values():
        for kind, ops in kinds.items():
            for key, info in ops.items():
                if "@" not in key:
                    continue
                t = info["Communication Time Info"]
                out.append({"op": key.split("@")[0], "group": key.split("@")[1], "kind": kind,
                            "elapse_ns": round(t["Elapse Time(ms)"] * 1e6), "wait_ns": round(t["Wait Time(ms)"] * 1e6),
                            "transit_ns": round(t["Transit Time(ms)"] * 1e6)})
    return out


def hand_matrix(run: Path, members: dict[str, list[int]]) -> dict:
    """{(src, dst, transport, group): bytes} of every rank's "-total" cells, member numbers mapped by `members`."""
    out: dict = defaultdict(int)
    for d in sorted(run.iterdir()):
        raw = json.loads((d / OUT / "communication_matrix.json").read_text())
        for kinds in raw.values():
            for ops in kinds.values():
                for key, cells in ops.items():
                    name, group = key.split("@")
                    if not name.endswith("-total"):
                        continue
                    for pair, v in cells.items():
                        src, dst = (int(x) for x in pair.split("-"))
                        out[(members[group][src], members[group][dst], v["Transport Type"], group)] += \
                            round(v["Transit Size(MB)"] * 1e6)
    return dict(out)


def ours_matrix(analysis: dict) -> dict:
    return {(m["src"], m["dst"], m["transport"], m["group"]): m["bytes"] for m in analysis["matrix"]}


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """The 4-rank set with profiler_metadata.json's groups; rank 3 without trace_view.json."""
    run = pipeline_set(tmp_path_factory.mktemp("pp"), no_trace=(3,))
    digests = digests_of(run)
    return run, digests, analyse_ranks(digests)


# -- the matrix in global ranks ----------------------------------------------------------------------------


def test_matrix_in_global_ranks_from_the_ranks_that_name_each_group(tmp_path):
    """No parallel_group_info: each communicator's members are the ranks whose files name it; rank 2's
    link "1-0" in the dp group {0, 2} is 2 -> 0, not 1 -> 0 (before: every link on ranks 0 and 1 only)."""
    run = pipeline_set(tmp_path, metadata=False)
    naming: dict[str, set] = defaultdict(set)
    for rank, d in enumerate(sorted(run.iterdir())):
        for call in comm_calls(d):
            naming[call["group"]].add(rank)
    members = {g: sorted(r) for g, r in naming.items()}
    assert members == {group_id(g): m for g, m in {**DP, **PP}.items()}  # the set's premise
    want = hand_matrix(run, members)
    r = analyse_ranks(digests_of(run))
    assert ours_matrix(r) == want
    assert {m["src"] for m in r["matrix"]} == {0, 1, 2, 3} and r["matrix_unmapped"]["links"] == 0
    assert {(0, 2), (2, 0), (1, 3), (3, 1), (0, 1), (2, 3)} <= {(m["src"], m["dst"]) for m in r["matrix"]}
    assert {g["group"]: g["ranks"] for g in r["groups"]} == members
    assert {g["ranks_source"] for g in r["groups"]} == {"member links"}


def test_group_ids_are_the_hash_of_the_declared_names(pipeline):
    """profiler_metadata.json keys its groups by the HCCL comm name, communication.json names its hash:
    the declared names and ranks reach the groups the calls use (before: no call in any declared group)."""
    _, digests, r = pipeline
    groups = {g["group"]: g for g in r["groups"]}
    for name, ranks in {**DP, **PP}.items():
        g = groups[str(double_hash(COMM_NAME[name]))]
        assert (g["name"], g["ranks"], g["calling_ranks"], g["missing"]) == (name[:2], ranks, ranks, [])
        assert g["comm_name"] == COMM_NAME[name] and g["label"] == f"{name[:2]} (ranks {','.join(map(str, ranks))})"
    # each rank's files imply at least the largest rank of its own groups + 1; the run's is every group's
    assert [d.window.world_size for d in digests] == [3, 4, 4, 4] and r["world_size"] == 4


# -- each rank's wait, step and parts ----------------------------------------------------------------------


def test_a_rank_without_host_events_has_its_wait(pipeline):
    """Rank 3 has no trace_view.json: its steps are CANN's, placed on its device tasks; its wait is the sum
    of CANN's waits of its collective calls, its p2p wait that of its receive (before: 0.000)."""
    run, digests, r = pipeline
    calls = comm_calls(run / "rank3_ascend_pt")
    row = next(x for x in r["ranks"] if x["rank"] == 3)
    assert digests[3].step_source == "step_trace_time.csv"
    assert abs(row["wait_ns"] - sum(c["wait_ns"] for c in calls if c["kind"] == "collective")) <= 3
    assert abs(row["p2p_wait_ns"] - sum(c["wait_ns"] for c in calls if c["kind"] == "p2p")) <= 1
    assert row["transfer_ns"] > 0


def test_rank_rows_add_up_to_their_step_preparing_included(pipeline):
    run, _, r = pipeline
    for row in r["ranks"]:
        (st,) = csv_rows(run / f"rank{row['rank']}_ascend_pt" / OUT / "step_trace_time.csv")
        parts = [row[k] for k in ("compute_ns", "overlapped_ns", "communication_ns", "free_ns", "preparing_ns",
                                  "other_ns")]
        assert sum(parts) == row["step_ns"], row["rank"]
        assert (row["preparing_ns"], row["free_ns"]) == (us_ns(st["Preparing"]), us_ns(st["Free"]))
    no_trace = next(x for x in r["ranks"] if x["rank"] == 3)
    (st,) = csv_rows(run / "rank3_ascend_pt" / OUT / "step_trace_time.csv")
    assert no_trace["step_ns"] == sum(us_ns(st[k]) for k in ("Preparing", "Computing", "Communication(Not Overlapped)",
                                                              "Free"))


def test_collective_bytes_are_the_ranks_own(pipeline):
    """The run's collectives carry the bytes the ranks' own tables have (before: -1 or 0 where the events
    name no payload)."""
    _, digests, r = pipeline
    for c in r["collectives"]:
        own = [s.bytes for d in digests for s in d.communication.collectives
               if (s.kind, s.group) == (c["kind"], c["group"]) and s.bytes >= 0]
        assert own and c["bytes"] == sum(own) > 0


def test_only_step_trace_and_kernels(tmp_path):
    """A rank with step_trace_time.csv and kernel_details.csv only: its step is placed on its first task
    (start = first task - Preparing), its AI Core utilisation is known, and its wait comes from its calls
    matched with rank 0's (kernel_details.csv names no communicator; the HCCL op names say which)."""
    run = copy_level1(tmp_path)
    rank1 = run / "rank1_ascend_pt"
    only_step_and_kernels(rank1)
    (st,) = csv_rows(rank1 / OUT / "step_trace_time.csv")
    rows = csv_rows(rank1 / OUT / "kernel_details.csv")
    first = min(us_ns(x["Start Time(us)"]) for x in rows)
    start = first - us_ns(st["Preparing"])
    dur = sum(us_ns(st[k]) for k in ("Preparing", "Computing", "Communication(Not Overlapped)", "Free"))
    busy = sorted((us_ns(x["Start Time(us)"]), us_ns(x["Start Time(us)"]) + us_ns(x["Duration(us)"])) for x in rows
                  if x["Accelerator Core"] not in ("HCCL", "COMMUNICATION", "AI_CPU"))
    covered, end_seen = 0, start
    for a, b in busy:
        a, b = max(a, end_seen), min(b, start + dur)
        if b > a:
            covered += b - a
            end_seen = b
    d0, d1 = digests_of(run)
    assert [(s.start_ns, s.dur_ns) for s in d1.steps] == [(start, dur)]
    (npu,) = d1.npu_efficiency
    assert npu.ai_core_utilization == pytest.approx(covered / dur, abs=1e-9)
    # matched calls: transfer_j = the shorter of the two ranks' j-th call, wait = rank 1's duration - that
    dur0 = {c.op: c.dur_ns for c in d0.communication.calls}
    hccl = [(x["Name"], us_ns(x["Duration(us)"])) for x in rows if x["Name"].startswith("hcom_")]
    r = analyse_ranks([d0, d1])
    row = next(x for x in r["ranks"] if x["rank"] == 1)
    assert row["wait_source"] == "matched calls"
    assert abs(row["wait_ns"] - sum(d - min(d, dur0[op]) for op, d in hccl)) <= len(hccl)
    assert next(x for x in r["ranks"] if x["rank"] == 0)["wait_source"] == "communication.json"


# -- the most complete source ------------------------------------------------------------------------------


def test_a_sampled_kernel_list_is_named_and_op_statistic_used(tmp_path):
    """kernel_details.csv with 40 of its compute rows (no trace): the coverage says so, the op types and the
    cores come from op_statistic.csv, which counts every task (before: the sample taken as the whole)."""
    run = copy_level1(tmp_path)
    d = run / "rank0_ascend_pt"
    (d / OUT / "trace_view.json").unlink()
    sample_kernels(d, 40)
    stats = csv_rows(d / OUT / "op_statistic.csv")
    digest = build_digest(read_ascend(str(d)))
    (f,) = [x for x in digest.coverage.files if x.file == "kernel_details.csv"]
    assert (f.rows, f.of_rows, f.sampled) == (40, sum(int(x["Count"]) for x in stats), True)
    assert sorted((k.name, k.core, k.calls, k.total_ns) for k in digest.kernel_types) == \
        sorted((x["OP Type"], x["Core Type"], int(x["Count"]), us_ns(x["Total Time(us)"])) for x in stats)
    want: dict = defaultdict(int)
    for x in stats:
        want[x["Core Type"]] += us_ns(x["Total Time(us)"])
    for x in csv_rows(d / OUT / "kernel_details.csv"):
        if x["Accelerator Core"] == "HCCL":
            want["HCCL"] += us_ns(x["Duration(us)"])
    assert {c.core: c.total_ns for c in digest.cores} == dict(want)
    assert {x.figure: x.source for x in digest.coverage.figures}["cores"] == "op_statistic.csv"
    (check,) = [c for c in digest.coverage.checks if c.figure == "kernel time"]
    assert not check.agree and check.value_b == sum(us_ns(x["Total Time(us)"]) for x in stats)


def test_calls_the_kernel_list_lacks_come_from_communication_json(tmp_path):
    """A kernel list naming 1 of the step's 4 HCCL calls (no trace): the collectives hold all 4, with
    communication.json's times and waits (before: 1 call)."""
    run = copy_level1(tmp_path)
    d = run / "rank0_ascend_pt"
    (d / OUT / "trace_view.json").unlink()
    path = d / OUT / "kernel_details.csv"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(x for x in lines if "hcom_allReduce__586_" not in x or "586_0_1" in x))
    calls = comm_calls(d)
    digest = build_digest(read_ascend(str(d)))
    (stat,) = digest.communication.collectives
    assert stat.calls == len(calls) == 4
    assert abs(stat.total_ns - sum(c["elapse_ns"] for c in calls)) <= 4 * US
    assert abs(stat.wait_ns - sum(c["wait_ns"] for c in calls)) <= 4
    (f,) = [x for x in digest.coverage.files if x.file == "HCCL operators in the events"]
    assert (f.rows, f.of_rows, f.sampled) == (1, 4, True)


def test_2023_hccl_names_are_grouped_by_kind(tmp_path):
    """2023's per-call names (hcom_allReduce__586_2, two numbers): one kernel family, HCCL's sequence read."""
    run = copy_level1(tmp_path)
    d = run / "rank0_ascend_pt"
    for name in ("trace_view.json", "kernel_details.csv", "communication.json", "communication_matrix.json"):
        p = d / OUT / name
        text = p.read_text()
        for i in range(4):
            text = text.replace(f"hcom_allReduce__586_{i}_1", f"hcom_allReduce__586_{i}")
        p.write_text(text)
    digest = build_digest(read_ascend(str(d)))
    (fam,) = [k for k in digest.kernels_by_name if k.communication]
    assert (fam.name, fam.calls) == ("hcom_allReduce_", 4)
    assert sorted(c.seq for c in digest.communication.calls) == [0, 1, 2, 3]


def test_world_size_from_communication_group_json(tmp_path):
    """msprof-analyze's communication_group.json of a 16-rank job: 16, where the matrix alone implies 8."""
    run = copy_level1(tmp_path)
    before = build_digest(read_ascend(str(run / "rank0_ascend_pt"))).window.world_size
    out = run / "cluster_analysis_output"
    out.mkdir()
    (out / "communication_group.json").write_text(json.dumps({"collective": [list(range(8)), list(range(8, 16))],
                                                              "p2p": []}))
    digests = digests_of(run)
    assert before == 8 and [d.window.world_size for d in digests] == [16, 16]
    r = analyse_ranks(digests)
    assert (r["world_size"], r["world_size_source"]) == (16, "cluster_analysis_output/communication_group.json")
