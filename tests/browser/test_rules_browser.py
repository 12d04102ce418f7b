"""The Suggestions view in real Chromium against a real TensorBoard: the findings in the route's
order with their parts, links to the table rows and the Timeline, and the cross-rank findings."""
import json
import shutil
import urllib.parse
import urllib.request

import pytest
from playwright.sync_api import expect

from _tb import T, copy_resnet, open_window, serve, shot
from conftest import fixture_path
from test_plugin_routes import RESNET_WINDOW

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("rules_logdir")
    copy_resnet(root / "resnet")
    shutil.copytree(fixture_path("ascend", "level1"), root / "ascend")
    return root


@pytest.fixture(scope="module")
def url(logdir, tmp_path_factory):
    yield from serve(logdir, tmp_path_factory)


def route(url, **params):
    query = urllib.parse.urlencode(params)
    with urllib.request.urlopen(f"{url}/data/plugin/canning/suggestions?{query}") as r:
        return json.load(r)


def open_suggestions(page, url, run, worker, window):
    return open_window(page, url, run, worker, window, "suggestions")


def test_findings_in_order_with_their_parts_and_links(page, url, logdir, errors):
    data = route(url, run="resnet", worker="worker0", window=RESNET_WINDOW)
    # observations (no simulated gain) are listed apart: tests/browser/test_critical_path_browser.py
    judged = [f for f in data["findings"] if not f["needs"] and not f["observation"]]
    frame = open_suggestions(page, url, "resnet", "worker0", RESNET_WINDOW)
    items = frame.locator("#sg > li")
    expect(items).to_have_count(len(judged))
    for i, finding in enumerate(judged):
        expect(items.nth(i)).to_have_attribute("data-rule", finding["rule"])
    first = items.nth(0)
    expect(first.locator(".finding-title")).to_have_text(judged[0]["title"])
    # the share shown is the Overview's DataLoader figure, under the same name
    with urllib.request.urlopen(f"{url}/data/plugin/canning/overview?run=resnet&worker=worker0&window={RESNET_WINDOW}") as r:
        overview = json.load(r)
    (loader,) = [i for i, f in enumerate(judged) if f["rule"] == "dataloader_share"]
    shown = items.nth(loader).locator(".seen").inner_text()
    assert f"{100 * overview['figures']['dataloader_share']:.1f}% of the average step (DataLoader)" in shown
    expect(first.locator(".gain")).to_contain_text("ms per step")
    # ranked by the time each can remove: the gains shown fall down the list
    gains = [f["gain_ns"] for f in judged if f["gain_ns"] >= 0]
    assert gains == sorted(gains, reverse=True) and gains
    shot(page, "suggestions")
    # a table row link: the data-loading finding opens the Overview (its breakdown row), then the Timeline
    frame.locator(f"#sg-{loader}-row-0").click()
    expect(frame.locator("#view")).to_have_attribute("data-view", "overview")
    frame.locator("#tab-suggestions").click()
    expect(frame.locator("#canning-root")).to_have_attribute("data-state", "loaded", timeout=T)
    frame.locator(f"#sg-{loader} .timeline-link").first.click()
    expect(frame.locator("#view")).to_have_attribute("data-view", "timeline")
    expect(frame.locator("#canning-root")).to_have_attribute("data-state", "loaded", timeout=T)
    # the Overview lists the same judged findings in the same order, and leads here
    frame.locator("#tab-overview").click()
    expect(frame.locator("#ov-suggestions > li")).to_have_count(len(judged), timeout=T)
    for i, finding in enumerate(judged):
        expect(frame.locator("#ov-suggestions > li").nth(i)).to_have_attribute("data-rule", finding["rule"])
    frame.locator("#ov-all-suggestions").click()
    expect(frame.locator("#view")).to_have_attribute("data-view", "suggestions")
    assert not errors, errors


def test_cross_rank_findings_of_a_two_rank_run(page, url, errors):
    frame = open_suggestions(page, url, "ascend", "rank0", "default")
    expect(frame.locator("#suggestions-root")).to_contain_text("Across ranks", timeout=T)
    expect(frame.locator("#sg-ranks-loading")).to_have_count(0, timeout=T)
    cluster = json.load(urllib.request.urlopen(f"{url}/data/plugin/canning/cluster?run=ascend&window_index=0"))
    found = [f for f in cluster["findings"] if not f["observation"]]
    expect(frame.locator("#sg-ranks > li")).to_have_count(len(found))
    expect(frame.locator("#sg-ranks-obs > li")).to_have_count(len(cluster["findings"]) - len(found))
    # byte alignment is an observation now (no edit of the graph states it): listed apart, not among the findings
    expect(frame.locator("#sg-obs > li[data-rule='byte_alignment']")).to_have_count(1)
    expect(frame.locator("#sg > li[data-rule='byte_alignment']")).to_have_count(0)
    assert not errors, errors
