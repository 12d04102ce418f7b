"""Ascend step span and breakdown against ProfilerStep#N in trace_view.json and an interval union
computed here by hand, not against step_trace_time.csv (whose own columns only check each other).

The rule (analysis/steps.py): the step runs from the start of ProfilerStep#N to the later of its
host end and the end of the device work launched in it; each instant of it goes to the first
category covering it: device compute / communication (kernel_details.csv rows: HCCL rows are
communication, the others compute), memcpy (MEMCPY_ASYNC tasks of the Ascend Hardware process),
runtime (CANN API events), dataloader, host (the Python process's cpu_op events, ProfilerStep
excluded), idle the rest. Times are µs with 3 decimals in the files: exact in ns (tolerance 0).
"""
import csv
import json
import re
from decimal import Decimal

import pytest

from _spans import inter, length_in, minus, union
from conftest import fixture_path

from canning_tb.analysis.build import build_digest
from canning_tb.ingest.ascend.read import read_ascend

COMPUTE_TASKS = {"AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV", "AI_CPU", "DSA_SQE"}
MEMCPY_TASKS = {"PCIE_DMA_SQE", "SDMA_SQE"}
DATALOADER = ("enumerate(DataLoader)#", "enumerate(DataPipe)#", "DataLoader")


HCCL_CALL = re.compile(r"_\d+_\d+_\d+$")  # hcom_allReduce__586_0_1: HCCL numbers each call of an op


def kernel_family(row) -> str:
    """The kernel name a row is grouped under: HCCL calls by their op family (hcom_allReduce_)."""
    name = row["Name"]
    return HCCL_CALL.sub("", name) if name.startswith("hcom_") else name


def ns(v) -> int:
    return int((Decimal(str(v).strip()) * 1000).to_integral_value())


def hand_reading(folder):
    out = folder / "ASCEND_PROFILER_OUTPUT"
    with open(out / "trace_view.json") as f:
        events = json.load(f, parse_float=Decimal)
    procs = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    xs = [e for e in events if e.get("ph") == "X"]

    def span(e):
        return ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])

    (step,) = [e for e in xs if procs[e["pid"]] == "Python" and e["name"].startswith("ProfilerStep#")]
    host_ops = [e for e in xs if procs[e["pid"]] == "Python" and e.get("cat") == "cpu_op" and e is not step]
    runtime = [e for e in xs if procs[e["pid"]] == "CANN"]
    hw = [e for e in xs if procs[e["pid"]] == "Ascend Hardware"]
    with open(out / "kernel_details.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    tasks = [(ns(r["Start Time(us)"]), ns(r["Start Time(us)"]) + ns(r["Duration(us)"]), r) for r in rows]
    comm_rows = [(s, e) for s, e, r in tasks if r["Accelerator Core"] in ("HCCL", "COMMUNICATION") or r["Name"].startswith("hcom_")]
    comp_rows = [(s, e) for s, e, r in tasks if (s, e) not in set(comm_rows)]
    memcpy = [span(e) for e in hw if e["args"].get("Task Type") in MEMCPY_TASKS]
    # device work launched in the step (its CANN launch starts inside the host range) extends the step
    s0, e0 = span(step)
    launch = {e["args"]["connection_id"]: span(e)[0] for e in runtime if "connection_id" in e["args"]}
    ends = [e0]
    for e in hw:
        if e["args"].get("Task Type") in COMPUTE_TASKS | MEMCPY_TASKS:
            t = launch.get(e["args"].get("connection_id"), span(e)[0])
            if s0 <= t < e0:
                ends.append(span(e)[1])
    comm_ends = [e for s, e in comm_rows if s0 <= s < e0]
    end = max(ends + comm_ends)
    K, C, M = union(comp_rows), union(comm_rows), union(memcpy)
    # runtime calls that wait for the device are device wait, the rest launch overhead: aclrtSynchronize*, and
    # CANN's synchronous copy aclrtMemcpy (its Async twin returns at once)
    def blocks(e):
        name = e["name"].removeprefix("AscendCL@")
        return "synchroni" in name.lower() or name == "aclrtMemcpy"
    W = union(span(e) for e in runtime if blocks(e))
    R = union(span(e) for e in runtime if not blocks(e))
    D = union(span(e) for e in host_ops if e["name"].startswith(DATALOADER))
    H = union(span(e) for e in host_ops)
    taken = union(K + C)
    cats = {"compute": minus(K, C), "overlapped": inter(K, C), "communication": minus(C, K)}
    for name, iv in (("memcpy", M), ("device_wait", W), ("runtime", R), ("dataloader", D), ("host", H)):
        cats[name] = minus(iv, taken)
        taken = union(taken + iv)
    got = {k: length_in(v, s0, end) for k, v in cats.items()}
    got["idle"] = (end - s0) - length_in(taken, s0, end)
    return int(step["name"].split("#")[1]), s0, e0, end, got


@pytest.mark.parametrize("level", ["level1", "level2"])
@pytest.mark.parametrize("rank", [0, 1])
def test_ascend_step_span_host_idle_by_hand(level, rank):
    folder = fixture_path("ascend", level, f"rank{rank}_ascend_pt")
    number, start, host_end, end, want = hand_reading(folder)
    d = build_digest(read_ascend(folder))
    (s,) = d.steps
    assert s.number == number
    assert s.start_ns == start  # ProfilerStep#N's start, exactly
    assert s.dur_ns == end - start and end >= host_end
    b = s.breakdown
    assert b.total_ns == s.dur_ns
    got = {k: getattr(b, f"{k}_ns") for k in want}
    assert got == want
    assert want["host"] > 0 and want["idle"] > 0  # both are exercised
    assert d.average.total_ns == s.dur_ns and d.average.idle_ns == want["idle"] and d.average.host_ns == want["host"]


@pytest.mark.parametrize("level", ["level1", "level2"])
def test_ascend_cores_and_kernel_rows_from_kernel_details(level):
    """Per accelerator core (kernel_details.csv's Accelerator Core, as written): calls and time;
    per kernel name (HCCL calls by op family): calls, total, min, max and its most frequent core."""
    folder = fixture_path("ascend", level, "rank0_ascend_pt")
    with open(folder / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    cores, kernels = {}, {}
    for r in rows:
        dur = ns(r["Duration(us)"])
        c = cores.setdefault(r["Accelerator Core"], [0, 0])
        c[0] += 1
        c[1] += dur
        k = kernels.setdefault(kernel_family(r), {"durs": [], "cores": {}})
        k["durs"].append(dur)
        k["cores"][r["Accelerator Core"]] = k["cores"].get(r["Accelerator Core"], 0) + 1
    d = build_digest(read_ascend(folder))
    assert {c.core: [c.calls, c.total_ns] for c in d.cores} == cores
    assert [c.total_ns for c in d.cores] == sorted((c.total_ns for c in d.cores), reverse=True)
    assert {k.name for k in d.kernels_by_name} == set(kernels)
    for k in d.kernels_by_name:
        durs = kernels[k.name]["durs"]
        assert (k.calls, k.total_ns, k.min_ns, k.max_ns) == (len(durs), sum(durs), min(durs), max(durs)), k.name
        assert kernels[k.name]["cores"][k.core] == max(kernels[k.name]["cores"].values()), k.name
