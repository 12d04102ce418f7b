"""Route and CLI values against raw readings of the files, on a GPU and an Ascend fixture.

Through the real TensorBoard WSGI app (the plugin built by its TensorBoard loader) and the real
`canning-prof` console script. Expected numbers come from json / csv readings here and in
tests/_raw_kineto.py, never from canning_tb: step count and average step (the step rule of
analysis/steps.py, by hand), the top kernel by total time, peak allocated memory, the number of
collective calls; and `--mode=compare` of two different DLRM ranks with every delta by hand.
"""
import csv
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import pytest
from tensorboard.backend import application
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from _raw_kineto import Trace, comm_kernel_count, load_events, ns, step_spans
from conftest import fixture_path
from test_numbers_ascend_steps import hand_reading, kernel_family

from canning_tb.plugin.loader import CanningLoader

GPU_FILE = "rank1.1669783687.pt.trace.json.gz"  # hta/df_index_resolver: V100, rank 1 of 2, NCCL, 5 steps
CLI = Path(sys.executable).with_name("canning-prof")


# -- raw readings ------------------------------------------------------------------------------------


def gpu_truth(path):
    tr = Trace(path)
    spans = step_spans(tr)
    kern = tr.kernel_rows()
    top = max(kern, key=lambda k: kern[k][1])
    _, raw = load_events(path)
    peaks = defaultdict(int)
    for e in raw:
        a = e.get("args") or {}
        if e.get("name") == "[memory]" and a.get("Device Type") == 1 and "Total Allocated" in a:
            peaks[f"cuda:{a['Device Id']}"] = max(peaks[f"cuda:{a['Device Id']}"], a["Total Allocated"])
    return {"steps": len(spans), "average": round(sum(e - s for _, s, e in spans) / len(spans)),
            "durations": [e - s for _, s, e in spans], "top_kernel": (top, kern[top][1]),
            "peaks": dict(peaks), "collective_calls": comm_kernel_count(tr)}


def ascend_truth(folder):
    number, start, _, end, _ = hand_reading(folder)
    out = folder / "ASCEND_PROFILER_OUTPUT"
    with open(out / "kernel_details.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    total = defaultdict(int)
    for r in rows:
        total[kernel_family(r)] += ns(r["Duration(us)"])
    top = max(total, key=total.get)
    with open(out / "memory_record.csv", newline="") as f:
        mem = [r for r in csv.DictReader(f) if r["Component"] == "PTA+GE" and r["Total Allocated(MB)"]]
    peak = max(Decimal(r["Total Allocated(MB)"]) for r in mem) * 1024 ** 2
    return {"steps": 1, "average": end - start, "durations": [end - start], "top_kernel": (top, total[top]),
            "peak": peak, "collective_calls": sum(1 for r in rows if r["Name"].startswith("hcom_"))}


# -- a logdir with one GPU run and one Ascend run, served by TensorBoard ------------------------------


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("numbers")
    (root / "gpu").mkdir()
    shutil.copy(fixture_path("hta", "df_index_resolver", "df_index_resolver.json.gz"), root / "gpu" / GPU_FILE)
    shutil.copytree(fixture_path("ascend", "level1", "rank0_ascend_pt"), root / "ascend" / "rank0_ascend_pt")
    return root


@pytest.fixture(scope="module")
def client(logdir):
    plugin = CanningLoader().load(base_plugin.TBContext(logdir=str(logdir)))
    c = Client(application.TensorBoardWSGI([plugin]))
    deadline = time.monotonic() + 120
    while True:
        body = json.loads(c.get("/data/plugin/canning/runs").get_data())
        ready = {r["name"] for r in body["runs"] if any(w["windows"] for w in r["workers"])}
        if {"gpu", "ascend"} <= ready and not body["loading"]:
            return c
        assert time.monotonic() < deadline, body
        time.sleep(0.2)


def get(client, route, run):
    runs = {r["name"]: r for r in json.loads(client.get("/data/plugin/canning/runs").get_data())["runs"]}
    (worker,) = runs[run]["workers"]
    (window,) = worker["windows"]
    resp = client.get(f"/data/plugin/canning/{route}",
                      query_string={"run": run, "worker": worker["name"], "window": window["id"]})
    assert resp.status_code == 200, resp.get_data()
    return json.loads(resp.get_data())


@pytest.fixture(scope="module")
def truths(logdir):
    return {"gpu": gpu_truth(logdir / "gpu" / GPU_FILE), "ascend": ascend_truth(logdir / "ascend" / "rank0_ascend_pt")}


@pytest.mark.parametrize("run", ["gpu", "ascend"])
def test_overview_steps_and_average(client, truths, run):
    want = truths[run]
    body = get(client, "overview", run)
    assert len(body["steps"]) == want["steps"]
    assert [s["dur_ns"] for s in body["steps"]] == want["durations"]
    assert body["average"]["total_ns"] == want["average"]


@pytest.mark.parametrize("run", ["gpu", "ascend"])
def test_kernels_top_kernel(client, truths, run):
    body = get(client, "kernels", run)
    top = body["kernels_by_name"][0]
    assert (top["name"], top["total_ns"]) == truths[run]["top_kernel"]


def test_memory_peak_allocated(client, truths):
    gpu = {d["device"]: d["peak_allocated_bytes"] for d in get(client, "memory", "gpu")["devices"]}
    want = truths["gpu"]["peaks"]
    assert want and {k: gpu[k] for k in want} == want  # exact: the records carry the byte totals
    (npu,) = [d for d in get(client, "memory", "ascend")["devices"] if d["device"].startswith("npu")]
    # memory_record.csv writes MB (MiB) with a few decimals: the file itself is exact to ~1 KiB
    assert abs(npu["peak_allocated_bytes"] - truths["ascend"]["peak"]) <= 1024


@pytest.mark.parametrize("run", ["gpu", "ascend"])
def test_communication_calls(client, truths, run):
    comm = get(client, "communication", run)["communication"]
    assert sum(c["calls"] for c in comm["collectives"]) == truths[run]["collective_calls"] > 0


# -- the same through canning-prof -------------------------------------------------------------------


def cli_json(*args):
    out = subprocess.run([str(CLI), *args, "--format=json"], capture_output=True, text=True, timeout=300,
                         env=os.environ)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("run", ["gpu", "ascend"])
def test_cli_view_values(logdir, truths, run):
    (w,) = cli_json("--mode=view", f"--input={logdir / run}")["windows"]
    d, want = w["digest"], truths[run]
    assert len(d["steps"]) == want["steps"] and d["average"]["total_ns"] == want["average"]
    assert [s["dur_ns"] for s in d["steps"]] == want["durations"]
    top = d["kernels_by_name"][0]
    assert (top["name"], top["total_ns"]) == want["top_kernel"]
    assert sum(c["calls"] for c in d["communication"]["collectives"]) == want["collective_calls"]
    peaks = {m["device"]: m["peak_allocated_bytes"] for m in d["memory"]}
    if run == "gpu":
        assert {k: peaks[k] for k in want["peaks"]} == want["peaks"]
    else:
        (npu,) = [v for k, v in peaks.items() if k.startswith("npu")]
        assert abs(npu - want["peak"]) <= 1024


# -- compare two different windows: DLRM rank 0 (base) and rank 1 -------------------------------------


def per_step(path):
    tr = Trace(path)
    spans = step_spans(tr)
    n = len(spans)
    ops = {k: (v["calls"] / n, v["host_total"] / n, v["device_total"] / n) for k, v in tr.op_rows().items()}
    return sum(e - s for _, s, e in spans) / n, ops


def test_cli_compare_two_ranks_by_hand(tmp_path):
    files = {Path(p).name.split("_")[0]: p for p in fixture_path("param", "dlrm_8ranks").glob("*.pt.trace.json.gz")}
    base, exp = files["worker0"], files["worker1"]
    b_step, b_ops = per_step(base)
    e_step, e_ops = per_step(exp)
    assert b_step != e_step  # two different windows
    body = cli_json("--mode=compare", f"--base={base}", f"--input={exp}")
    s = body["summary"]
    assert s["base_step_ms"] == pytest.approx(b_step / 1e6, abs=1e-9)
    assert s["exp_step_ms"] == pytest.approx(e_step / 1e6, abs=1e-9)
    assert (s["base_windows"], s["exp_windows"]) == (1, 1)
    rows = {r["name"]: r for r in body["operators"]}
    assert set(rows) == set(b_ops) | set(e_ops)
    zero = (0, 0, 0)
    changed = 0
    for name, r in rows.items():
        b, e = b_ops.get(name, zero), e_ops.get(name, zero)
        assert (r["base_calls_per_step"], r["exp_calls_per_step"]) == (b[0], e[0]), name
        assert r["base_host_ms_per_step"] == pytest.approx(b[1] / 1e6, abs=1e-9), name
        assert r["exp_host_ms_per_step"] == pytest.approx(e[1] / 1e6, abs=1e-9), name
        assert r["delta_host_ms_per_step"] == pytest.approx((e[1] - b[1]) / 1e6, abs=1e-9), name
        assert r["base_device_ms_per_step"] == pytest.approx(b[2] / 1e6, abs=1e-9), name
        assert r["exp_device_ms_per_step"] == pytest.approx(e[2] / 1e6, abs=1e-9), name
        changed += e[1] != b[1]
    assert changed > 0
    deltas = [abs(r["delta_host_ms_per_step"]) for r in body["operators"]]
    assert deltas == sorted(deltas, reverse=True)  # largest change first
