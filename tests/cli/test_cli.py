"""canning-prof end to end, as a user runs it (a real subprocess, real files)."""
import csv
import gzip
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections import Counter

import pytest

from conftest import fixture_path

CLI = [sys.executable, "-m", "canning_tb.cli.main"]


def run_cli(*args, cwd=None, env=None, check=True):
    p = subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=300,
                       env={**os.environ, **(env or {})})
    if check:
        assert p.returncode == 0, p.stderr
    return p


def test_view_json_on_ascend_run_has_every_rank(tmp_path):
    src = fixture_path("ascend", "level1")
    out = run_cli("--mode=view", f"--input={src}", "--format=json", "--detail", f"--cache-dir={tmp_path}")
    report = json.loads(out.stdout)
    assert report["schema"] == "canning-prof/2"
    wins = report["windows"]
    assert sorted(w["digest"]["window"]["rank"] for w in wins) == [0, 1]
    # one window per rank, so one cross-rank group holding every rank that wrote a profiler_info file
    infos = sorted(p.name for p in src.glob("*_ascend_pt/profiler_info_*.json"))
    (group,) = report["ranks"]
    assert sorted(r["rank"] for r in group["analysis"]["ranks"]) == [int(n[len("profiler_info_"):-5]) for n in infos]
    for w in wins:
        assert w["error"] is None and w["format"] == "ascend"
        # independent: the kernel rows of kernel_details.csv, counted with the csv module
        rank = w["digest"]["window"]["rank"]
        with open(src / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv",
                  newline="") as f:
            rows = list(csv.DictReader(f))
        calls = sum(k["calls"] for k in w["digest"]["kernels_by_name"])
        assert calls == len(rows)


def test_view_text_on_a_trace_file_names_the_top_operator(tmp_path):
    src = fixture_path("hta", "cpu_only")
    trace = next(p for p in src.iterdir() if p.name.endswith(".gz"))
    out = run_cli("--mode=view", f"--input={trace}", f"--cache-dir={tmp_path}")
    # independent: host total per op name straight from the JSON
    with gzip.open(trace, "rt") as f:
        events = json.load(f)["traceEvents"]
    totals = Counter()
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op":
            totals[e["name"]] += e.get("dur", 0)
    top = totals.most_common(1)[0][0]
    assert top in out.stdout
    assert "Op Type" in out.stdout and "Total(ms)" in out.stdout


def test_bad_input_names_the_file_and_other_windows_still_report(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(fixture_path("hta", "cpu_only"), run)
    bad = run / "broken.1.pt.trace.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1')
    out = run_cli("--mode=view", f"--input={tmp_path}", "--format=json")
    wins = {w["worker"]: w for w in json.loads(out.stdout)["windows"]}
    assert "broken.1.pt.trace.json" in wins["broken"]["error"]
    assert wins["broken"]["digest"] is None
    assert sum(w["digest"] is not None for w in wins.values()) == 1


def test_missing_input_is_a_clear_error(tmp_path):
    p = run_cli("--mode=view", f"--input={tmp_path / 'nope'}", check=False)
    assert p.returncode == 2 and "no such file or folder" in p.stderr


@pytest.mark.slow
def test_performance_mode_profiles_an_unchanged_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        import sys, torch
        model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for step in range(int(sys.argv[1])):
            loss = model(torch.randn(32, 64)).pow(2).mean()
            opt.zero_grad(); loss.backward(); opt.step()
        print("trained", sys.argv[1])
    """))
    out_dir = tmp_path / "prof"
    p = run_cli("--mode=performance", f"--output={out_dir}", "python", str(script), "8", cwd=tmp_path)
    assert "trained 8" in p.stdout
    manifests = [f for f in os.listdir(out_dir) if f.endswith(".canning.json")]
    assert len(manifests) == 1  # wait=0, warmup=1, active=3, repeat=1: one window
    view = run_cli("--mode=view", f"--input={out_dir}", "--format=json")
    (w,) = json.loads(view.stdout)["windows"]
    names = {o["name"] for o in w["digest"]["ops_by_name"]}
    assert {"aten::addmm", "aten::relu", "aten::mean"} <= names
    assert len(w["digest"]["steps"]) == 3
    # the profiling-suite docs' second command works as written: the report is left beside the windows
    assert "canning-prof view --input=" + str(out_dir / "performance.json") in p.stderr  # one grammar: subcommands
    saved = json.loads((out_dir / "performance.json").read_text())
    assert saved["schema"] == "canning-prof/2" and [x["digest"]["steps"] for x in saved["windows"]] == [w["digest"]["steps"]]
    again = run_cli("--mode=view", f"--input={out_dir / 'performance.json'}", "--format=json")
    (w2,) = json.loads(again.stdout)["windows"]
    assert w2["digest"] == w["digest"] and w2["figures"] == w["figures"]
    text = run_cli("--mode=view", f"--input={out_dir / 'performance.json'}")
    assert "aten::addmm" in text.stdout


def test_compare_two_runs(tmp_path):
    a = fixture_path("kineto", "resnet50_v100")
    out = run_cli("--mode=compare", f"--base={a}", f"--input={a}", "--format=json", f"--cache-dir={tmp_path}")
    rep = json.loads(out.stdout)
    assert rep["summary"]["base_step_ms"] == rep["summary"]["exp_step_ms"] > 0
    assert all(r["delta_host_ms_per_step"] == 0 for r in rep["operators"])


def test_a_cpu_window_says_its_efficiency_is_unknown_in_words(tmp_path):
    """A real CPU-only torch.profiler trace: the MFU line says why it is unknown, in words."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from canning_tb.analysis.build import build_digest
    from canning_tb.analysis.efficiency.summary import roofline_lines
    from canning_tb.ingest.kineto.read import read_kineto
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        torch.randn(64, 64) @ torch.randn(64, 64)
    prof.export_chrome_trace(str(tmp_path / "cpu.pt.trace.json"))
    d = build_digest(read_kineto(str(tmp_path / "cpu.pt.trace.json")))
    assert roofline_lines(d) == "MFU and HBM bandwidth: unknown (no accelerator named in the window's files)"


def test_view_json_is_the_same_bytes_in_every_process(tmp_path):
    """Two processes with other string hashes (PYTHONHASHSEED), each digesting afresh into its own cache, write
    the same bytes: every map (a device's peak TFLOP/s per dtype, protobuf maps, dicts built from sets) sorted.
    Two ranks of DLRM (the report across ranks) and an Ascend window (NPU peaks and CANN's maps)."""
    logdir = tmp_path / "logdir"
    (logdir / "dlrm").mkdir(parents=True)
    for trace in sorted(fixture_path("param", "dlrm_8ranks").glob("worker[01]_*.pt.trace.json.gz")):
        shutil.copy(trace, logdir / "dlrm" / trace.name)
    shutil.copytree(fixture_path("ascend", "level1", "rank0_ascend_pt"), logdir / "ascend" / "rank0_ascend_pt")
    outs = [run_cli("--mode=view", f"--input={logdir}", "--format=json", "--detail", f"--cache-dir={tmp_path / seed}",
                    env={"PYTHONHASHSEED": seed}).stdout.encode() for seed in ("1", "2")]
    dlrm = [w for w in json.loads(outs[0])["windows"] if w["run"] == "dlrm"]
    assert len(dlrm) == 2 and len(dlrm[0]["roofline"]["device"]["tflops"]) > 1  # the map the issue saw reordered
    assert outs[0] == outs[1]
