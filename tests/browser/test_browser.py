"""The plugin in a real TensorBoard (torch hidden), driven by real Chromium through Playwright.

Expected operators come from an independent reading of the raw trace (test_plugin_routes).
"""
import gzip
import json
import re
import shutil

import pytest
from playwright.sync_api import expect

from _tb import T, copy_resnet, open_plugin, serve, shot
from conftest import fixture_path
from test_plugin_routes import (HTA_WINDOW, RESNET_WINDOW, build_logdir, independent_host_self, raw_stacks,
                                start_tensorboard, stop_tensorboard)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def good_logdir(tmp_path_factory):
    """resnet/ and hta/ only: every view loads without an error."""
    root = tmp_path_factory.mktemp("browser_logdir")
    copy_resnet(root / "resnet")
    (root / "hta").mkdir()
    shutil.copy(fixture_path("hta", "df_index_resolver", "df_index_resolver.json.gz"),
                root / "hta" / f"rank1.{HTA_WINDOW}.pt.trace.json.gz")
    return root


@pytest.fixture(scope="module")
def tensorboard_url(good_logdir, tmp_path_factory):
    yield from serve(good_logdir, tmp_path_factory)


def test_operators_view(page, tensorboard_url, good_logdir, errors):
    truth = independent_host_self(good_logdir / "resnet" / f"worker0.{RESNET_WINDOW}.pt.trace.json.gz")
    ranked = [n for n, _ in sorted(truth.items(), key=lambda kv: -kv[1][1]) if not n.startswith("ProfilerStep#")]

    frame = open_plugin(page, tensorboard_url)
    expect(page.get_by_text("Canning Profiler").first).to_be_visible()  # the tab
    expect(frame.locator("#run-select option")).to_have_count(2, timeout=T)
    frame.locator("#run-select").select_option("resnet")
    frame.locator("#worker-select").select_option("worker0")
    expect(frame.locator("#window-select option")).to_have_count(2)
    frame.locator("#window-select").select_option(RESNET_WINDOW)
    expect(frame.locator("#tab-overview")).to_have_attribute("aria-selected", "true")  # the default view
    frame.locator("#tab-operators").click()
    expect(frame.locator("#tab-operators")).to_have_attribute("aria-selected", "true")
    root = frame.locator("#canning-root")
    expect(root).to_have_attribute("data-state", "loaded", timeout=T)

    table = frame.locator("#op-table")
    headers = table.locator("thead th")
    expect(headers).to_have_text(["Name", "Calls", "Host Self (µs)", "Host Total (µs)", "Device Self (µs) ▼",
                                  "Device Total (µs)", "Tensor Cores Eligible", "Tensor Cores Self (%)",
                                  "Tensor Cores Total (%)", "TFLOP/s", "GB/s", "Roof (%)"])  # the work columns (efficiency)
    # sort by host self time: the heaviest operators of the raw trace come first
    table.locator('th[data-key="host_self_ns"]').click()
    expect(table.locator('th[data-key="host_self_ns"]')).to_have_attribute("aria-sort", "descending")
    names = table.locator("tbody tr td.name")
    for i, name in enumerate(ranked[:4]):
        expect(names.nth(i)).to_have_text(name)
    first = table.locator("tbody tr").first.locator("td")
    calls, self_us = truth[ranked[0]]
    expect(first.nth(1)).to_have_text(f"{calls:,}")
    expect(first.nth(2)).to_have_text(f"{self_us:,.1f}")
    expect(frame.locator("#op-chart-title")).to_have_text("Top 10 operators by Host Self (µs)")
    expect(frame.locator("#op-chart")).to_have_attribute("data-items", "10")
    shot(page, "operators")

    check_search(frame, names, truth)
    check_expanded_rows(frame, table, good_logdir)
    check_grouping(frame, table, root)

    # the other views open from their tabs (tests/browser/test_views_browser.py checks them)
    frame.locator("#tab-memory").click()
    expect(root).to_have_attribute("data-state", "loaded", timeout=T)
    expect(frame.locator("#mem-chart")).to_be_visible()
    frame.locator("#tab-operators").click()
    expect(root).to_have_attribute("data-state", "loaded", timeout=T)
    assert not errors, errors


def check_search(frame, names, truth):
    """The search filters by name, case-insensitively."""
    total = names.count()
    frame.locator("#op-search").fill("CONV")
    expected = sorted((n for n in truth if "conv" in n.lower()), key=lambda n: -truth[n][1])
    expect(names).not_to_have_count(total)
    shown = names.all_inner_texts()
    assert shown and all("conv" in n.lower() for n in shown), shown
    assert set(shown) <= set(truth)
    assert shown[0] == expected[0]
    expect(frame.locator("#op-count")).to_contain_text(f"{len(shown)} of {total} operators")
    frame.locator("#op-search").fill("")
    expect(names).to_have_count(total)


def check_expanded_rows(frame, table, good_logdir):
    """A row expands in place: the call stacks leading to the operator, one frame per line."""
    stacks = raw_stacks(good_logdir / "resnet" / f"worker0.{RESNET_WINDOW}.pt.trace.json.gz", "aten::conv2d")
    frame.locator("#op-search").fill("aten::conv2d")
    conv = table.locator("tbody tr.op-row", has=frame.locator("td.name", has_text="aten::conv2d")).first
    conv.locator("td.name").click()
    detail = table.locator('tr.op-detail[data-op="aten::conv2d"]')
    expect(detail.locator(".op-detail-body")).to_have_attribute("data-state", "loaded", timeout=T)
    srows = detail.locator(".op-stacks tbody tr")
    expect(srows).to_have_count(len(stacks))
    top_stack, top_calls = stacks.most_common(1)[0]
    frames = top_stack.split(";")
    # each frame shows its package-relative path (torch/nn/...), the whole path on hover
    short = re.sub(r"^.*/site-packages/", "", frames[0])
    assert short.startswith("torch/") and short != frames[0]
    row = srows.filter(has=frame.locator("td.stack", has_text=short)).filter(has_text=f"{top_calls:,}")
    expect(row.first.locator("td.stack .frame")).to_have_count(len(frames))
    expect(row.first.locator("td.stack .frame").first).to_have_text(short)
    expect(row.first.locator("td.stack .frame").first).to_have_attribute("title", frames[0])
    expect(detail.locator(".op-kernels tbody tr")).to_have_text(["This operator launched no kernel itself (its children may have)."])
    # ... and stays open when re-sorted and searched
    table.locator('th[data-key="calls"]').click()
    expect(detail).to_be_visible()
    frame.locator("#op-search").fill("conv")
    expect(detail.locator(".op-stacks tbody tr")).to_have_count(len(stacks))
    conv.locator("button.op-toggle").click()  # the ▸ toggle closes it
    expect(detail).to_have_count(0)
    # the kernels an operator launched
    frame.locator("#op-search").fill("cudnn_convolution")
    cud = table.locator("tbody tr.op-row").first
    expect(cud.locator("td.name")).to_contain_text("cudnn_convolution")  # the search has answered (debounced)
    cud.locator("button.op-toggle").click()
    kd = table.locator("tr.op-detail").first
    expect(kd.locator(".op-detail-body")).to_have_attribute("data-state", "loaded", timeout=T)
    expect(kd.locator(".op-kernels tbody tr td.kname").first).to_be_visible()
    with gzip.open(good_logdir / "resnet" / f"worker0.{RESNET_WINDOW}.pt.trace.json.gz", "rt") as fh:
        raw_kernels = {e["name"] for e in json.load(fh)["traceEvents"] if e.get("cat") in ("Kernel", "kernel")}
    kernel_names = set(kd.locator(".op-kernels td.kname").all_inner_texts())
    assert kernel_names and kernel_names <= raw_kernels, kernel_names - raw_kernels
    frame.locator("#op-search").fill("")
    table.locator('th[data-key="host_self_ns"]').click()


def check_grouping(frame, table, root):
    """Grouping by name + input shapes adds the shapes column."""
    frame.locator("#op-group").select_option("shape")
    expect(table.locator('th[data-key="input_shapes"]')).to_be_visible(timeout=T)
    expect(root).to_have_attribute("data-state", "loaded")
    frame.locator("#op-group").select_option("name")
    expect(table.locator('th[data-key="input_shapes"]')).to_have_count(0, timeout=T)


def test_bad_trace_shows_its_error(page, tmp_path, errors):
    logdir = build_logdir(tmp_path / "logdir")
    proc, url, log = start_tensorboard(logdir, tmp_path / "tb.log")
    try:
        frame = open_plugin(page, url)
        expect(frame.locator("#run-select option")).to_have_count(3, timeout=T)
        frame.locator("#run-select").select_option("broken")
        root = frame.locator("#canning-root")
        expect(root).to_have_attribute("data-state", "error", timeout=T)
        expect(frame.locator("#view-error")).to_contain_text("broken/worker0.1.pt.trace.json.gz: ")
        frame.locator("#run-select").select_option("resnet")  # the other runs still work
        expect(root).to_have_attribute("data-state", "loaded", timeout=T)
        frame.locator("#tab-operators").click()
        expect(frame.locator("#op-table tbody tr").first).to_be_visible(timeout=T)
    finally:
        stop_tensorboard(proc, log)
    # the only console errors are the browser's notes of the 422 answer
    assert all("422" in e for e in errors), errors


def test_empty_logdir_says_why(page, tmp_path, errors):
    proc, url, log = start_tensorboard(tmp_path, tmp_path / "tb.log")
    try:
        frame = open_plugin(page, url)
        expect(frame.locator("#canning-root")).to_have_attribute("data-state", "empty", timeout=T)
        expect(frame.locator("#view-empty")).to_contain_text("No profiles found under the logdir")
        expect(frame.locator("#view-empty")).to_contain_text("tensorboard_trace_handler")
    finally:
        stop_tensorboard(proc, log)
    assert not errors, errors
