"""The Overview's input pipeline card (issue 45) in a real TensorBoard, driven by real Chromium, on the
ResNet-50 run with a 4-worker DataLoader (kineto/resnet50_num_workers_4): the DataLoader's kind, its
workers unknown ("–", with why: the profiler records the main process only), and per step the time
waiting for the next batch and the host-to-device copies, against a second reading of the raw trace
(json/gzip) inside the steps' boundaries."""
import gzip
import json

import pytest
from playwright.sync_api import expect

from _tb import T, open_plugin, serve, shot
from conftest import fixture_path

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    yield from serve(fixture_path("kineto", "resnet50_num_workers_4"), tmp_path_factory)


def union_inside(intervals, lo, hi):
    total, reach = 0, lo
    for s, e in sorted(intervals):
        s, e = max(s, reach, lo), min(e, hi)
        if e > s:
            total += e - s
            reach = e
    return total


def test_the_overview_shows_the_input_pipeline(page, url, errors):
    frame = open_plugin(page, url)
    expect(frame.locator("#canning-root")).to_have_attribute("data-state", "loaded", timeout=T)
    window = frame.locator("#window-select").input_value()
    path = next(p for p in fixture_path("kineto", "resnet50_num_workers_4").glob("*.pt.trace.json.gz") if window in p.name)
    with gzip.open(path, "rt") as f:
        raw = json.load(f)["traceEvents"]
    ns = lambda e: (round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000))  # noqa: E731
    nexts = [ns(e) for e in raw if e.get("ph") == "X" and e["name"].startswith("enumerate(DataLoader)#")]
    copies = [ns(e) for e in raw if e.get("ph") == "X" and e["name"].startswith("Memcpy HtoD")]
    card = frame.locator("#ov-input")
    expect(card).to_be_visible(timeout=T)
    values = {th.inner_text(): td.inner_text() for th, td in zip(card.locator("tbody th").all(), card.locator("tbody td").all())}
    assert values["DataLoader"] == "multiprocessing"
    assert values["Workers seen"] == "– (worker processes, not in the trace)"
    assert values["DataLoader next() calls"] == str(len(nexts))
    # the steps' boundaries as the Overview's route gives them (absolute: start_ns is relative to the window)
    ov = page.evaluate("""async (q) => (await (await fetch(`/data/plugin/canning/overview?${q}`)).json())""",
                       f"run=.&worker=worker0&window={window}")
    origin = ov["info"]["start_ns"]
    rows = frame.locator("#ov-input-steps tbody tr")
    expect(rows).to_have_count(len(ov["steps"]))
    for i, step in enumerate(ov["steps"]):
        lo = origin + step["start_ns"]
        hi = lo + step["dur_ns"]
        cells = rows.nth(i).locator("td").all_inner_texts()
        assert cells[0] == f"#{step['number']}"
        assert cells[2] == f"{union_inside(nexts, lo, hi) / 1e6:,.3f}", cells
        assert cells[4] == f"{union_inside(copies, lo, hi) / 1e6:,.3f}", cells
    frame.locator("#ov-input-steps").scroll_into_view_if_needed()
    shot(page, "overview-input-pipeline")
    assert errors == []
