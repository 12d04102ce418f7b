"""The overview's GPU / NPU efficiency card, the measured kernel columns and the Modules view in a
real TensorBoard driven by real Chromium. Expected values: the raw files read here (json / csv) and
a real torch.profiler run with modules, made in the test; the card shows what /overview sends
(whose figures tests/analysis/test_gpu_efficiency.py checks against the old plugin and by hand)."""
import csv
import json
import shutil
from collections import defaultdict

import pytest
import torch
from playwright.sync_api import expect
from torch import nn

from _tb import T, copy_resnet, open_plugin, serve, shot
from conftest import fixture_path
from test_plugin_routes import RESNET_WINDOW
from test_views_browser import loaded, open_view

pytestmark = pytest.mark.browser


class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, 16), nn.ReLU())
        self.head = nn.Linear(16, 2)

    def forward(self, x):
        return self.head(self.encoder(x))


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("efficiency_views")
    copy_resnet(root / "resnet")
    shutil.copytree(fixture_path("ascend", "level2", "rank0_ascend_pt"), root / "ascend" / "rank0_ascend_pt")
    handler = torch.profiler.tensorboard_trace_handler(str(root / "modules"), worker_name="worker0")
    model, x = Tower(), torch.randn(4, 16)
    with torch.profiler.profile(with_modules=True, with_stack=True, on_trace_ready=handler,
                                schedule=torch.profiler.schedule(wait=0, warmup=1, active=2)) as prof:
        for _ in range(3):
            model(x).sum().backward()
            prof.step()
    return root


@pytest.fixture(scope="module")
def url(logdir, tmp_path_factory):
    yield from serve(logdir, tmp_path_factory)


def window_of(folder):
    (trace,) = sorted(folder.glob("*.pt.trace.json*"))
    return trace, trace.name.split(".")[1]


def test_gpu_card_and_kernel_columns(page, url, errors):
    frame = open_view(page, url, "resnet", "worker0", RESNET_WINDOW, "overview")
    loaded(frame)
    card = frame.locator("#ov-gpu-efficiency")
    expect(card.locator("thead th").nth(1)).to_have_text("GPU 0: Tesla V100-DGXS-32GB")
    rows = card.locator("tbody tr")
    expect(rows.nth(0).locator("th")).to_have_text("GPU utilization (%)")
    for i in range(4):
        expect(rows.nth(i).locator("td")).not_to_have_text("–")
    expect(rows.nth(3).locator("td")).to_have_text("0.0")  # no Tensor Core kernel in this fp32 run
    frame.locator("#tab-kernels").click()
    loaded(frame)
    table = frame.locator("#kernel-table")
    expect(table.locator('th[data-key="mean_blocks_per_sm"]')).to_be_visible()
    expect(table.locator('th[data-key="registers_per_thread"]')).to_be_visible()
    assert errors == []


def test_npu_card_and_pmu_columns(page, url, logdir, errors):
    path = logdir / "ascend" / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    with open(path, newline="") as f:
        pmu = [c for c in next(csv.reader(f)) if c.startswith(("aic_", "aiv_")) and c.endswith(("_ratio", "_rate"))]
    frame = open_plugin(page, url)
    expect(frame.locator("#run-select option")).to_have_count(3, timeout=T)
    frame.locator("#run-select").select_option("ascend")
    frame.locator("#tab-overview").click()
    loaded(frame)
    card = frame.locator("#ov-npu-efficiency")
    expect(card).to_be_visible(timeout=T)
    labels = card.locator("tbody th").all_inner_texts()
    assert labels[0] == "AI Core utilisation (%)" and set(pmu) <= set(labels)
    frame.locator("#tab-kernels").click()
    loaded(frame)
    table = frame.locator("#kernel-pmu-table")  # the PMU ratios: a table of their own under the kernels
    expect(table.locator('th[data-key="pmu:aic_mac_ratio"]')).to_be_visible(timeout=T)
    assert errors == []


def test_modules_view(page, url, logdir, errors):
    trace, window = window_of(logdir / "modules")
    events = json.loads(trace.read_text())["traceEvents"]
    mods = [e for e in events if e.get("cat") == "python_function" and e["name"].startswith("nn.Module: ")]
    calls = defaultdict(int)
    for m in mods:
        calls[m["name"][len("nn.Module: "):]] += 1
    frame = open_view(page, url, "modules", "worker0", window, "modules")
    loaded(frame)
    table = frame.locator("#module-table")
    names = table.locator("tbody td.name").all_inner_texts()
    assert sorted(names) == sorted(calls)
    assert names[0] == "Tower_0"
    expect(table.locator('tbody tr[data-path="Tower_0/Sequential_0/Linear_0"]')).to_be_visible()
    first = table.locator("tbody tr").first.locator("td")
    expect(first.nth(1)).to_have_text(str(calls["Tower_0"]))
    expect(frame.locator("#module-flame")).to_have_attribute("data-items", str(len(calls)), timeout=T)
    shot(page, "modules")
    # a window without module events: the empty state says how to record them
    frame.locator("#run-select").select_option("resnet")
    expect(frame.locator("#view-empty")).to_contain_text("with_modules=True", timeout=T)
    assert errors == []
