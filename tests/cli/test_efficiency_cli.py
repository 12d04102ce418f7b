"""The device efficiency figures are the same in canning-prof's JSON and text as in the views'
/overview (one definition, analysis/gpu_metrics.py): a real subprocess on the V100 fixture."""
import json

from canning_tb.analysis.build import build_digest
from canning_tb.analysis.report import device_summary
from canning_tb.util.digest_json import to_plain
from canning_tb.ingest.kineto.read import read_kineto
from canning_tb.queries.sections import device_efficiency
from conftest import fixture_path
from test_cli import run_cli


def test_cli_json_and_text_show_the_views_figures(tmp_path):
    trace = fixture_path("kineto", "resnet50_v100", "worker0.1623143089861.pt.trace.json.gz")
    digest = build_digest(read_kineto(str(trace)))
    view = device_efficiency(digest)  # what /overview sends
    (gpu,) = view["gpu_efficiency"]
    report = json.loads(run_cli("--mode=view", f"--input={trace}", "--format=json", f"--cache-dir={tmp_path}").stdout)
    (window,) = report["windows"]
    assert window["digest"]["gpu_efficiency"] == view["gpu_efficiency"] == [to_plain(g) for g in digest.gpu_efficiency]
    text = run_cli("--mode=view", f"--input={trace}", f"--cache-dir={tmp_path}").stdout
    row = next(line for line in text.splitlines() if line.startswith("GPU 0: Tesla V100-DGXS-32GB"))
    figures = [round(100 * gpu["utilization"], 2), round(100 * gpu["sm_efficiency"], 2),
               round(gpu["achieved_occupancy_pct"], 2), 0.0]
    assert row.split()[-4:] == [f"{v:.3f}" for v in figures]
    assert "Device efficiency" in text


def test_device_summary_unknown_is_not_zero():
    d = build_digest(read_kineto(str(fixture_path("hta", "amd_trace", "mi250_minitoy_train_ROCm6_2_kineto.json.gz"))))
    table = device_summary(d)
    assert table.rows and all(row[2] is None and row[3] is None and row[4] is None for row in table.rows)
    assert "unknown" in str(table)  # report._fmt: None is shown as unknown
