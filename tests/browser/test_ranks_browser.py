"""A many-rank run and a many-operator window in a real TensorBoard and Chromium: the run overview and
the communication view of 64 generated ranks show the heat map and name the rank slowed on purpose;
the operators table pages and sorts on the server. Expected values are computed here (the slowed
rank is chosen by the test; the operators' order by sorting the names and times the test wrote).
Saves docs/screenshots/run-overview-64-ranks.png.
"""
import glob

import pytest
from playwright.sync_api import expect

from _many_ranks import write_many_ranks
from _tb import T, open_plugin, serve, shot
from canning_tb.analysis.build import build_digest
from canning_tb.ingest.kineto.read import read_kineto
from conftest import fixture_path
from test_table_paging import kineto_trace

pytestmark = pytest.mark.browser

RANKS, SLOW = 64, 41
OPS = 450


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    root = tmp_path_factory.mktemp("ranks_logdir")
    traces = sorted(glob.glob(str(fixture_path("param", "dlrm_8ranks") / "*.pt.trace.json.gz")))
    write_many_ranks(str(root / "ranks64"), [build_digest(read_kineto(t)) for t in traces], RANKS, slow={SLOW: 1.8},
                     traces=traces)
    (root / "ops").mkdir()
    kineto_trace(root / "ops" / "worker0.1.pt.trace.json.gz", [f"op_{(i * 7) % OPS:03d}" for i in range(OPS)])
    yield from serve(root, tmp_path_factory)


def choose(frame, run, worker, window):
    expect(frame.locator("#run-select option")).to_have_count(2, timeout=T)
    frame.locator("#run-select").select_option(run)
    frame.locator("#worker-select").select_option(worker)
    frame.locator("#window-select").select_option(window)


def test_run_overview_of_64_ranks_shows_the_heat_map_and_names_the_slow_rank(page, url, errors):
    frame = open_plugin(page, url)
    choose(frame, "ranks64", "rank0", "0")
    frame.locator("#tab-overview").click()
    card = frame.locator("#ov-run-card")
    expect(card).to_have_attribute("data-state", "loaded", timeout=T)
    expect(frame.locator("#ov-run-heatmap")).to_have_attribute("data-ranks", str(RANKS))
    # drawn on canvas (chart.ts: heat maps and many points), not SVG; ECharts 6 paints a chart in up
    # to three canvas layers (below, during and above its incremental elements)
    expect(frame.locator("#ov-run-heatmap canvas").first).to_be_attached()
    expect(frame.locator("#ov-run-heatmap svg")).to_have_count(0)
    computing = frame.locator('#ov-run-outliers li[data-metric="computing_ns"]')
    expect(computing).to_contain_text(f"rank {SLOW} (")
    highest = frame.locator('#ov-run-spread tr[data-metric="computing_ns"] td').nth(6)
    expect(highest).to_contain_text(f"{SLOW},")
    expect(frame.locator("#ov-run-summary tbody tr")).to_have_count(1)  # the whole run, not a row per rank
    expect(frame.locator("#ov-run-every")).not_to_have_attribute("open", "")
    shot(page, "run-overview-64-ranks")

    frame.locator("#tab-communication").click()
    expect(frame.locator("#comm-heatmap")).to_have_attribute("data-ranks", str(RANKS), timeout=T)
    expect(frame.locator('#comm-outliers li[data-metric="computing_ns"]')).to_contain_text(f"rank {SLOW} (")
    expect(frame.locator("#comm-rank-chart")).to_have_count(0)  # no bar per rank
    assert not errors, errors


def test_operators_table_pages_and_sorts_on_the_server(page, url, errors):
    # the trace: one op per name, op_NNN with NNN = 7 i mod 450, lasting 1 + i mod 7 µs (i: its place)
    host_self = {f"op_{(i * 7) % OPS:03d}": 1 + i % 7 for i in range(OPS)}
    by_time = sorted(sorted(host_self), key=lambda name: -host_self[name])  # equal times: by name
    frame = open_plugin(page, url)
    choose(frame, "ops", "worker0", "1")
    frame.locator("#tab-operators").click()
    expect(frame.locator("#canning-root")).to_have_attribute("data-state", "loaded", timeout=T)
    names = frame.locator("#op-table tbody tr td.name")
    expect(frame.locator("#op-count")).to_have_text(f"{OPS} operators")
    pager = frame.locator("#op-pager")
    expect(pager).to_be_visible()
    expect(pager.locator(".pager-text")).to_have_text(f"Rows 1–200 of {OPS}")
    expect(names).to_have_count(200)
    expect(names.first).to_have_text(by_time[0])  # the longest host self time first
    expect(names.nth(199)).to_have_text(by_time[199])
    pager.locator(".pager-next").click()
    expect(pager.locator(".pager-text")).to_have_text(f"Rows 201–400 of {OPS}")
    expect(names.first).to_have_text(by_time[200])
    frame.locator('#op-table th[data-key="name"]').click()  # A to Z, from the first page
    expect(pager.locator(".pager-text")).to_have_text(f"Rows 1–200 of {OPS}")
    expect(names.nth(0)).to_have_text("op_000")
    expect(names.nth(199)).to_have_text("op_199")
    frame.locator("#op-search").fill("op_44")
    expect(frame.locator("#op-count")).to_have_text(f"10 of {OPS} operators match “op_44”")
    expect(names).to_have_text([f"op_44{d}" for d in range(10)])
    expect(pager).to_be_hidden()
    assert not errors, errors
