"""The Memory view of a window that is an allocator snapshot alone (a real Ascend snapshot,
tests/fixtures/memory_snapshot), in a real TensorBoard driven by real Chromium: the state, the empty_cache()
warning, the leak and the live allocations at the peak are what /memory_snapshot sends, and the reserved
figure is the plain reading of the pickle."""
import json
import pickle
import shutil
import urllib.parse
import urllib.request

import pytest
from playwright.sync_api import expect

from _tb import T, open_plugin, serve, shot
from conftest import fixture_path
from test_views_browser import loaded

pytestmark = pytest.mark.browser
SNAP = "snapshot_with_empty_cache.pkl"


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    root = tmp_path_factory.mktemp("snapshot_view")
    (root / "job").mkdir()
    shutil.copy(fixture_path("memory_snapshot", SNAP), root / "job" / "rank0.pickle")
    shutil.copy(fixture_path("memory_snapshot", "snapshot_1768383987920985470.pkl"), root / "job" / "rank1.pickle")
    yield from serve(root, tmp_path_factory)


def answer(url):
    query = urllib.parse.urlencode({"run": "job", "worker": "rank0", "window": "default", "limit": 20})
    with urllib.request.urlopen(f"{url}/data/plugin/canning/memory_snapshot?{query}", timeout=120) as r:
        return json.load(r)


def bands(url):
    query = urllib.parse.urlencode({"run": "job", "worker": "rank0", "window": "default", "limit": 800})
    with urllib.request.urlopen(f"{url}/data/plugin/canning/memory_snapshot_bands?{query}", timeout=120) as r:
        return json.load(r)


def test_memory_view_shows_the_snapshot(page, url, errors):
    frame = open_plugin(page, url)
    frame.locator("#tab-memory").click()
    expect(frame.locator("#view")).to_have_attribute("data-view", "memory")
    loaded(frame)
    section = frame.locator("#memory-snapshot")
    expect(section).to_have_attribute("data-state", "loaded", timeout=T)
    with open(fixture_path("memory_snapshot", SNAP), "rb") as f:
        plain = pickle.load(f)  # the trusted fixture, read plainly
    reserved_mb = sum(s["total_size"] for s in plain["segments"]) / 1048576
    expect(frame.locator("#snap-state tr", has_text="Reserved (MB)").locator("td")).to_have_text(f"{reserved_mb:.1f}")
    dev = answer(url)["devices"][0]
    expect(frame.locator("#snap-empty-cache")).to_contain_text("empty_cache() was called 3 times")
    expect(frame.locator("#snap-leaks")).to_contain_text("train_one_step")
    expect(frame.locator("#snap-by-frame tbody tr")).to_have_count(len(dev["peak"]["by_frame"]))
    expect(frame.locator("#snap-top-blocks details")).to_have_count(len(dev["peak"]["top_blocks"]))
    expect(frame.locator("#snap-growth tbody tr")).to_have_count(len(dev["growth"]))
    expect(frame.locator("#snap-chart svg")).to_have_count(1)
    expect(frame.locator("#snap-findings li")).to_have_count(len(dev["findings"]))
    expect(frame.locator("#snap-findings li[data-rule=snapshot_leak]")).to_contain_text("40.0 MiB a step")
    # the state after a chosen entry: what /memory_snapshot_state answers
    expect(frame.locator("#snap-entry-state")).to_have_attribute("data-state", "loaded", timeout=T)
    frame.locator("#snap-entry").fill("1000")
    frame.locator("#snap-entry-go").click()
    query = urllib.parse.urlencode({"run": "job", "worker": "rank0", "window": "default", "entry": 1000})
    with urllib.request.urlopen(f"{url}/data/plugin/canning/memory_snapshot_state?{query}", timeout=120) as r:
        state = json.load(r)
    expect(frame.locator("#snap-entry-table tr", has_text="Entry").locator("td")).to_have_text("1000")
    expect(frame.locator("#snap-entry-table tr", has_text="Reserved (MB)").locator("td")).to_have_text(
        f"{state['reserved'] / 1048576:.1f}")
    expect(frame.locator("#snap-bands canvas")).not_to_have_count(0)
    expect(frame.locator("#snap-bands")).to_have_attribute("data-bands", str(bands(url)["shown"]))
    expect(frame.locator("#snap-ranks tbody tr")).to_have_count(2)  # rank0 and rank1 side by side
    expect(frame.locator("#snap-ranks tbody tr").first).to_contain_text("rank0")
    section.scroll_into_view_if_needed()
    shot(page, "memory_snapshot")
    frame.locator("#snap-bands").scroll_into_view_if_needed()
    shot(page, "memory_snapshot_bands")
    assert errors == []
