"""NPU efficiency (analysis/npu_metrics.py) and the NPU kernel columns against a second reading of the
level2 fixtures: kernel_details.csv with csv + Decimal, the SQLite export with sqlite3."""
import csv
import shutil
from collections import defaultdict
from decimal import Decimal

import pytest

from canning_tb.analysis.build import build_digest
from canning_tb.ingest.ascend.read import read_ascend
from conftest import fixture_path, read_db

COMM_CORES = {"HCCL", "COMMUNICATION"}


def _us_ns(cell: str) -> int:
    return int((Decimal(cell.strip()) * 1000).to_integral_value())


def _csv_tasks(folder):
    """Compute tasks of kernel_details.csv (communication rows left out) as dicts."""
    with open(folder / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return [r for r in rows if r["Accelerator Core"] not in COMM_CORES and not r["Type"].startswith("hcom")
            and not r["Name"].startswith("hcom")]


def _weighted(tasks, ratio, base):
    num = den = 0.0
    for r in tasks:
        try:
            value, weight = float(r[ratio]), float(r[base])
        except ValueError:  # N/A
            continue
        if weight > 0:
            num, den = num + value * weight, den + weight
    return num / den


@pytest.fixture(scope="module")
def level2():
    folder = fixture_path("ascend", "level2", "rank0_ascend_pt")
    return folder, build_digest(read_ascend(str(folder)))


def test_pmu_ratios_from_the_csv(level2):
    folder, d = level2
    (npu,) = d.npu_efficiency
    tasks = _csv_tasks(folder)
    pmu = {m.name: m for m in npu.pmu}
    assert set(pmu) >= {"aic_mac_ratio", "aic_mte2_ratio", "aiv_vec_ratio", "aiv_mte2_ratio", "cube_utilization_pct"}
    for name in ("aic_mac_ratio", "aic_mte2_ratio", "aic_scalar_ratio"):
        assert pmu[name].value == pytest.approx(_weighted(tasks, name, "aicore_time(us)"), rel=1e-9)
        assert pmu[name].tasks == sum(1 for r in tasks if r[name] != "N/A") > 100
    for name in ("aiv_vec_ratio", "aiv_mte2_ratio", "aiv_mte3_ratio"):
        assert pmu[name].value == pytest.approx(_weighted(tasks, name, "aiv_time(us)"), rel=1e-9)
    # a ratio of time: the window's aic_mac_ratio is its mac time over its cube time (3 decimals in the file)
    known = [r for r in tasks if r["aicore_time(us)"] != "N/A"]
    mac = sum(float(r["aic_mac_time(us)"]) for r in known) / sum(float(r["aicore_time(us)"]) for r in known)
    assert pmu["aic_mac_ratio"].value == pytest.approx(mac, abs=2e-3)
    assert pmu["cube_utilization_pct"].value == pytest.approx(_weighted(tasks, "cube_utilization(%)", "Duration(us)"))


def test_core_times_and_ai_core_utilisation_from_the_csv(level2):
    folder, d = level2
    (npu,) = d.npu_efficiency
    span = [(s.start_ns, s.start_ns + s.dur_ns) for s in d.steps if s.number in d.average_steps]
    span_ns = sum(b - a for a, b in span)

    def inside(a, b):
        return sum(max(0, min(b, hi) - max(a, lo)) for lo, hi in span)

    per_core = defaultdict(int)
    busy = []
    for r in _csv_tasks(folder):
        start = _us_ns(r["Start Time(us)"])
        end = start + _us_ns(r["Duration(us)"])
        per_core[r["Accelerator Core"]] += inside(start, end)
        if r["Accelerator Core"] != "AI_CPU":
            busy.append([start, end])
    busy.sort()
    merged = []
    for a, b in busy:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    assert npu.span_ns == span_ns
    assert npu.cube_ns == per_core["AI_CORE"] and npu.vector_ns == per_core["AI_VECTOR_CORE"]
    assert npu.mix_ns == per_core["MIX_AIC"] + per_core["MIX_AIV"] and npu.ai_cpu_ns == per_core["AI_CPU"]
    assert npu.cube_share == pytest.approx(npu.cube_ns / (npu.cube_ns + npu.vector_ns + npu.mix_ns))
    assert npu.ai_core_busy_ns == sum(inside(a, b) for a, b in merged)
    assert npu.ai_core_utilization == pytest.approx(npu.ai_core_busy_ns / span_ns)
    assert 0 < npu.ai_core_utilization < 1


def test_kernel_columns_from_the_csv(level2):
    folder, d = level2
    by_name = defaultdict(list)
    for r in _csv_tasks(folder):
        by_name[r["Name"]].append(r)
    checked = 0
    for k in d.kernels_by_name:
        tasks = by_name.get(k.name)
        if not tasks or k.communication:
            continue
        blocks = [int(r["Block Dim"]) for r in tasks]
        assert k.mean_blocks == pytest.approx(sum(blocks) / len(blocks))
        assert k.core == tasks[0]["Accelerator Core"]
        for ratio, base in (("aic_mac_ratio", "aicore_time(us)"), ("aiv_vec_ratio", "aiv_time(us)")):
            if any(r[base] not in ("N/A", "0", "0.0") for r in tasks):
                assert k.pmu[ratio] == pytest.approx(_weighted(tasks, ratio, base))
            else:
                assert ratio not in k.pmu
        assert k.mean_blocks_per_sm == k.mean_occupancy_pct == -1  # GPU figures: unknown on the NPU
        checked += 1
    assert checked >= 20


def test_pmu_ratios_from_the_sqlite_export():
    folder = fixture_path("ascend", "db_level2", "rank0_ascend_pt")
    d = build_digest(read_ascend(str(folder)))
    (npu,) = d.npu_efficiency
    db = next((folder / "ASCEND_PROFILER_OUTPUT").glob("ascend_pytorch_profiler_*.db"))
    con = read_db(db)
    values = defaultdict(dict)
    for gid, name, value in con.execute(
            "select p.globalTaskId, s.value, p.value from TASK_PMU_INFO p join STRING_IDS s on s.id = p.name "
            "join COMPUTE_TASK_INFO c on c.globalTaskId = p.globalTaskId "
            "join STRING_IDS n on n.id = c.name where n.value not like 'hcom%'"):
        values[gid][name] = value

    def weighted(ratio, base):
        pairs = [(v[ratio], v[base]) for v in values.values() if ratio in v and v.get(base, 0) > 0]
        return sum(r * w for r, w in pairs) / sum(w for _, w in pairs)

    pmu = {m.name: m.value for m in npu.pmu}
    assert pmu["aic_mac_ratio"] == pytest.approx(weighted("aic_mac_ratio", "aic_total_time"), rel=1e-9)
    assert pmu["aiv_vec_ratio"] == pytest.approx(weighted("aiv_vec_ratio", "aiv_total_time"), rel=1e-9)
    # the db's core times are ns: the ratio of the summed times says the same
    mac = sum(v["aic_mac_time"] for v in values.values()) / sum(v["aic_total_time"] for v in values.values())
    assert pmu["aic_mac_ratio"] == pytest.approx(mac, rel=1e-3)


def test_level0_without_pmu():
    """Level0 collects no PMU and writes N/A core types: no PMU figures, utilisation still known."""
    d = build_digest(read_ascend(str(fixture_path("ascend", "level0", "rank0_ascend_pt"))))
    for npu in d.npu_efficiency:
        assert len(npu.pmu) == 0
        assert 0 <= npu.ai_core_utilization <= 1
    assert all(len(k.pmu) == 0 for k in d.kernels_by_name)


def test_ai_cpu_tasks_are_not_ai_core_time(tmp_path):
    """The fixtures ran nothing on the AI CPU: level2 rank 0 with its 12 longest vector tasks written as
    AI_CPU tasks in kernel_details.csv (as CANN files an operator it runs on the control CPU). AI Core
    busy time is the union of the other compute tasks, AI CPU time those 12, by hand from the csv."""
    src = fixture_path("ascend", "level2", "rank0_ascend_pt")
    folder = tmp_path / src.name
    shutil.copytree(src, folder)
    path = folder / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    path.chmod(0o644)
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, list(reader)
    vector = sorted((r for r in rows if r["Accelerator Core"] == "AI_VECTOR_CORE"),
                    key=lambda r: -_us_ns(r["Duration(us)"]))
    for r in vector[:12]:
        r["Accelerator Core"] = "AI_CPU"
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    d = build_digest(read_ascend(str(folder)))
    (npu,) = d.npu_efficiency
    span = [(s.start_ns, s.start_ns + s.dur_ns) for s in d.steps if s.number in d.average_steps]

    def inside(a, b):
        return sum(max(0, min(b, hi) - max(a, lo)) for lo, hi in span)

    tasks = [(_us_ns(r["Start Time(us)"]), _us_ns(r["Start Time(us)"]) + _us_ns(r["Duration(us)"]), r)
             for r in _csv_tasks(folder)]
    merged = []
    for a, b, _ in sorted(t for t in tasks if t[2]["Accelerator Core"] != "AI_CPU"):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    ai_cpu = sum(inside(a, b) for a, b, r in tasks if r["Accelerator Core"] == "AI_CPU")
    assert ai_cpu > 0 and npu.ai_cpu_ns == ai_cpu
    assert npu.ai_core_busy_ns == sum(inside(a, b) for a, b in merged)
    assert npu.ai_core_utilization == pytest.approx(npu.ai_core_busy_ns / sum(b - a for a, b in span))
