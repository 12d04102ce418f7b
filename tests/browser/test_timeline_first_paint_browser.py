"""The Timeline's first paint (issue 45) in a real TensorBoard, driven by real Chromium, on the largest real
fixture (hta/df_index_resolver: 15 rows and memory counters, more lanes than the canvas shows): the tab asks
for one tile, the first thing after its tracks, at the width it then keeps. Before, the first tile waited for
a debounce timer behind the critical path's request, and the scrollbar that appeared once the lanes
overflowed narrowed the canvas and asked for every tile again (two tiles and two counter answers per open;
benchmarks/README.md has the times). No time is asserted: the requests are."""
import re
import shutil
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from _tb import T, open_plugin, serve
from conftest import fixture_path

pytestmark = pytest.mark.browser

GUTTER = 200  # px left of the data area: timeline_draw.ts GUTTER


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    root = tmp_path_factory.mktemp("first_paint_logdir")
    shutil.copytree(fixture_path("hta", "df_index_resolver"), root / "hta")
    yield from serve(root, tmp_path_factory)


def test_the_first_paint_asks_for_one_tile_first(page, url, errors):
    frame = open_plugin(page, url)
    expect(frame.locator("#canning-root")).to_have_attribute("data-state", "loaded", timeout=T)  # the Overview
    asked = []
    page.on("request", lambda request: asked.append(request.url))
    frame.locator("#tab-timeline").click()
    canvas = frame.locator("#timeline-canvas")
    expect(canvas).to_have_attribute("data-items", re.compile(r"^[1-9]\d*$"), timeout=T)
    # what a resize or a late timer would ask for comes within a few frames; a second has room for it
    page.wait_for_timeout(1000)
    routes = [urlparse(u).path.rsplit("/", 1)[-1] for u in asked if "/data/plugin/canning/" in u]
    tiles = [parse_qs(urlparse(u).query) for u in asked if "/timeline_tile?" in u]
    assert len(tiles) == 1, routes
    assert routes.index("timeline_tile") < routes.index("critical_path"), routes
    # the tile's width is the data area's, as drawn now (the canvas' CSS width less the names' gutter)
    width = canvas.evaluate("el => parseFloat(el.style.width)")
    assert int(tiles[0]["width"][0]) == round(width) - GUTTER
    assert errors == []
