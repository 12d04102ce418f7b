"""The rules on real GPU and Ascend fixtures (msprof-analyze's advisor as the oracle on the Ascend
data), one set of findings behind every output, and the thresholds as docs/rules.md lists them."""
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, fixture_path

from canning_tb.analysis.build import build_digest
from canning_tb.analysis.rules import RULES, thresholds
from canning_tb.ingest.ascend.read import read_ascend
from canning_tb.ingest.kineto.read import read_kineto

RESNET = ("kineto", "resnet50_v100", "worker0.1623143089861.pt.trace.json.gz")
# CANNING_PEERS_PYTHON: the peers' interpreter, as tests/oracles/test_peer_oracles.py reads it
PEERS_BIN = Path(os.environ.get("CANNING_PEERS_PYTHON", REPO / ".venv-peers" / "bin" / "python")).parent


def hits(digest):
    return {h.rule: h for h in digest.rule_hits}


@pytest.fixture(scope="module")
def resnet():
    path = fixture_path(*RESNET)
    return build_digest(read_kineto(str(path))), json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]


def test_tensor_core_advice_is_for_the_v100(resnet):
    digest, raw = resnet
    props = json.loads(gzip.decompress(fixture_path(*RESNET).read_bytes()))["deviceProperties"][0]
    # the rule's advice as it detects the problem (whether the step would gain is the replay's: on this
    # host-bound ResNet it would not, test_kineto_figures)
    from canning_tb.analysis.context import Context
    from canning_tb.analysis.rules.engine import RuleInput
    from canning_tb.analysis.rules.runner import candidates
    from canning_tb.analysis.steps import breakdowns
    from canning_tb.ingest.kineto.read import read_kineto
    table = read_kineto(str(fixture_path(*RESNET)))
    ctx = Context(table)
    breakdowns(table, ctx)
    (hit,) = [f for f in candidates(RuleInput(digest, ctx)) if f.rule == "tensor_cores_unused"]
    assert hit.device.startswith(f"cuda cc {props['computeMajor']}.{props['computeMinor']}")
    assert "autocast" in hit.change_torch and "tf32" not in hit.change_torch.lower()  # no TF32 before cc 8.0


def test_blocking_copies_from_pageable_memory_are_under_the_floor(resnet):
    """ResNet's input batches are copied with .to(device) from pageable memory: each aten::copy_
    launches a 'Memcpy HtoD (Pageable -> Device)' and then blocks in cudaStreamSynchronize. Those
    blocks are microseconds per step: under the significance floor, so no finding (and they are not
    launch overhead)."""
    digest, raw = resnet
    # independent: the cudaStreamSynchronize calls inside an aten::copy_ on the same thread
    copies = [e for e in raw if e.get("ph") == "X" and e["name"] == "aten::copy_"]
    syncs = [e for e in raw if e.get("ph") == "X" and e["name"] == "cudaStreamSynchronize"
             and any(c["tid"] == e["tid"] and c["ts"] <= e["ts"] and e["ts"] + e["dur"] <= c["ts"] + c["dur"]
                     for c in copies)]
    assert syncs and any("Pageable" in e["name"] for e in raw if e.get("cat") == "Memcpy")
    steps = [e["dur"] for e in raw if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#")]
    per_step_us = sum(e["dur"] for e in syncs) / len(steps)
    assert per_step_us < thresholds.MIN_GAIN_SHARE * (sum(steps) / len(steps))  # far under 5 % of the step
    assert "sync_calls" not in hits(digest) and "device_wait" not in hits(digest)
    assert "launch_bound" not in hits(digest)  # blocking copies are not launch overhead


@pytest.fixture(scope="module")
def advisor(tmp_path_factory):
    """msprof-analyze's advisor on rank 0 of the Ascend level1 fixture: its report as plain text."""
    exe = PEERS_BIN / "msprof-analyze"
    if not exe.exists():
        pytest.skip(f"{exe} absent: run `make peers` to enable the msprof-analyze oracle")
    tmp = tmp_path_factory.mktemp("advisor")
    rank = tmp / "rank0_ascend_pt"
    shutil.copytree(fixture_path("ascend", "level1", "rank0_ascend_pt"), rank)  # it writes beside its input
    run = subprocess.run([str(exe), "advisor", "all", "-d", str(rank), "-l", "en", "-o", str(tmp / "out")],
                         capture_output=True, text=True, timeout=300, input="")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (html,) = (tmp / "out").glob("mstt_advisor_*.html")
    text = re.sub(r"<script.*?</script>|<style.*?</style>", " ", html.read_text(), flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text))


@pytest.fixture(scope="module")
def ascend_rank0():
    return build_digest(read_ascend(str(fixture_path("ascend", "level1", "rank0_ascend_pt"))))


def _detected(path: str):
    """The window's findings as the rules detect them, before the replayed gains and the floors judge them (the
    advisor has no such step: it names every problem it detects)."""
    from canning_tb.analysis.context import Context
    from canning_tb.analysis.rules.engine import RuleInput
    from canning_tb.analysis.rules.runner import candidates
    from canning_tb.analysis.steps import breakdowns
    table = read_ascend(path)
    digest = build_digest(table)
    ctx = Context(table)
    breakdowns(table, ctx)
    return {f.rule: f for f in candidates(RuleInput(digest, ctx))}


@pytest.mark.slow  # a peer tool run (~20 s)
def test_affinity_apis_of_the_advisor_are_found(advisor, ascend_rank0):
    apis = set(re.findall(r"torch_npu\.optim\.\w+", advisor))
    assert apis, "the advisor names no affinity API on this data"
    detected = _detected(str(fixture_path("ascend", "level1", "rank0_ascend_pt")))
    ours = " ".join(f.change_npu for f in detected.values())
    assert all(api in ours for api in apis), (apis, ours)


@pytest.mark.slow  # a peer tool run (~20 s)
def test_unaligned_communication_of_the_advisor_is_found(advisor, ascend_rank0):
    section = advisor[advisor.index("Byte Alignment"):]
    theirs = set(re.findall(r"hcom_\w+", section[:2000]))
    assert theirs
    hit = hits(ascend_rank0)["byte_alignment"]
    assert set(re.findall(r"hcom_\w+", hit.seen)) == theirs


@pytest.mark.slow  # a peer tool run (~20 s)
def test_dynamic_shape_of_the_advisor_gets_the_same_advice(advisor, ascend_rank0):
    assert "Dynamic Shape" in advisor and "jit_compile=False" in advisor
    detected = _detected(str(fixture_path("ascend", "level1", "rank0_ascend_pt")))
    assert "jit_compile=False" in detected["compilation"].change_npu


def test_one_set_of_findings_behind_every_output(tmp_path):
    """prof.optimization_suggestions(), canning-prof --mode=view (text and JSON) and the plugin's
    /suggestions all show the findings of the same rules, in the same order."""
    torch = pytest.importorskip("torch")
    from canning import profiling_suite as ps
    from canning_tb.queries.sections import suggestions_impl
    from canning_tb.store import Store
    from _rules_workloads import linear_step, sleepy_loader
    it, step = sleepy_loader(0.003), linear_step(64, 64, 2, item=True)
    logdir = tmp_path / "run"
    with ps.Profile(activities=[ps.ProfilerActivity.CPU], schedule=ps.schedule(wait=0, warmup=1, active=2),
                    on_trace_ready=ps.tensorboard_trace_handler(str(logdir))) as prof:
        for _ in range(3):
            next(it), step()
            prof.step()
    table = prof.optimization_suggestions()
    ordered = [f["rule"] for f in table.to_dict()["findings"]]
    assert {"dataloader_share", "needs_device"} <= set(ordered)
    assert str(table).startswith("Optimization Suggestions:\n1. ")
    cli = subprocess.run([sys.executable, "-m", "canning_tb.cli.main", "--mode=view", f"--input={tmp_path}",
                          "--format=json"], capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    (window,) = json.loads(cli.stdout)["windows"]
    assert [h["rule"] for h in window["digest"]["rule_hits"]] == ordered
    text = subprocess.run([sys.executable, "-m", "canning_tb.cli.main", "--mode=view", f"--input={tmp_path}"],
                          capture_output=True, text=True, timeout=120).stdout
    titles = re.findall(r"^\d+\. \[\w+\] (.+?)\. ", text, re.M)
    assert titles == [f["title"] for f in table.to_dict()["findings"]]
    store = Store(str(tmp_path))
    (run,) = store.runs()
    (worker,) = store.workers(run)
    (win,) = store.windows(run, worker.name)
    route = suggestions_impl(store, run, worker.name, win.id)
    assert [f["rule"] for f in route["findings"]] == ordered
    assert route["findings"][0]["gain_ns"] >= route["findings"][1]["gain_ns"]  # ranked by estimated gain


def test_every_threshold_and_rule_is_documented():
    doc = (REPO / "docs" / "rules.md").read_text()
    names = [n for n in dir(thresholds) if n.isupper()]
    assert names and not [n for n in names if f"`{n}`" not in doc]
    rule_ids = set(RULES) - {"fusable_ops"} | {"fusable_rms_norm", "fusable_rotary", "fusable_swiglu",
                                              "fusable_attention", "slow_rank_computing", "slow_link",
                                              "stage_imbalance"}
    assert not [r for r in sorted(rule_ids) if f"`{r}`" not in doc]


def test_dominant_kernel_family_on_the_resnet(resnet):
    digest, raw = resnet
    hit = hits(digest)["dominant_kernel_family"]
    # independent: cuDNN's convolution kernels (fprop implicit gemm, dgrad, wgrad, winograd) of the raw trace
    kernels = [e for e in raw if e.get("ph") == "X" and e.get("cat") == "Kernel"]
    conv = sum(e["dur"] for e in kernels if re.search(r"conv|dgrad|wgrad|winograd|implicit_gemm|scudnn", e["name"], re.I))
    assert hit.title.startswith("convolution") and conv / sum(e["dur"] for e in kernels) > 0.3
    assert "channels_last" in hit.change_torch


def test_cross_rank_spread_under_the_floor_in_the_cli(tmp_path):
    """canning-prof --mode=view (JSON and text) on the Ascend 2-rank fixture: msprof-analyze's slow-rank
    ratio of the communication is over 5 %, but the spread is under 5 % of the step (and one step per
    rank shows no variation): no finding, and the text says why beside the ratio."""
    src = fixture_path("ascend", "level1")
    run = subprocess.run([sys.executable, "-m", "canning_tb.cli.main", "--mode=view", f"--input={src}",
                          "--format=json"], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr
    (group,) = json.loads(run.stdout)["ranks"]
    # independent: the communication (not overlapped) and the step of each rank as CANN wrote them
    import csv
    comm, step = [], []
    for rank in (0, 1):
        with open(src / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv") as f:
            (row,) = list(csv.DictReader(f))
        comm.append(float(row["Communication(Not Overlapped)"]))
        step.append(float(row["Computing"]) + float(row["Communication(Not Overlapped)"]) + float(row["Free"]))
    ratio = (max(comm) - min(comm)) / (sum(comm) / 2)
    assert ratio > thresholds.SLOW_RANK_RATIO and max(comm) - min(comm) < thresholds.MIN_GAIN_SHARE * max(step)
    assert "slow_rank_communication" not in {f["rule"] for f in group["findings"]}
    (row,) = [r for r in group["analysis"]["slow_ranks"] if r["metric"] == "communication"]
    assert row["ratio"] == pytest.approx(ratio, rel=1e-3)
    text = subprocess.run([sys.executable, "-m", "canning_tb.cli.main", "--mode=view", f"--input={src}"],
                          capture_output=True, text=True, timeout=180).stdout
    assert re.search(r"communication +0\.05\d+ +yes +no: under the significance floors", text), text
