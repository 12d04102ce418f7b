"""The Roofline view and the Overview's MFU card in a real TensorBoard driven by real Chromium, on the
V100 ResNet-50 fixture: the card and the view show what /roofline sends (whose numbers
tests/analysis/test_roofline_models.py checks by hand), the chart draws one point per operator of
the answer, a point's click opens that operator in the Operators view, and the operator table has
the work columns."""
import json
import urllib.parse
import urllib.request

import pytest
from playwright.sync_api import expect

from _tb import T, copy_resnet, open_plugin, serve, shot
from test_plugin_routes import RESNET_WINDOW
from test_views_browser import loaded

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    root = tmp_path_factory.mktemp("roofline_view")
    copy_resnet(root / "resnet")
    yield from serve(root, tmp_path_factory)


def roofline(url):
    query = urllib.parse.urlencode({"run": "resnet", "worker": "worker0", "window": RESNET_WINDOW})
    with urllib.request.urlopen(f"{url}/data/plugin/canning/roofline?{query}", timeout=120) as r:
        return json.load(r)["roofline"]


def test_mfu_card_roofline_view_and_click(page, url, errors):
    frame = open_plugin(page, url)
    frame.locator("#window-select").select_option(RESNET_WINDOW)
    loaded(frame)
    answer = roofline(url)
    card = frame.locator("#ov-mfu-table")
    expect(card.locator("tr", has_text="MFU (%)").locator("td")).to_have_text(f"{100 * answer['mfu']:.1f}", timeout=T)
    expect(card).to_contain_text("NVIDIA V100 SXM2")
    frame.locator("#ov-open-roofline").click()
    expect(frame.locator("#view")).to_have_attribute("data-view", "roofline")
    loaded(frame)
    operators = [p for p in answer["points"] if p["kind"] == "operator"]
    expect(frame.locator("#roofline-chart")).to_have_attribute("data-points", str(len(operators)))
    expect(frame.locator("#roofline-peaks")).to_contain_text("NVIDIA V100 SXM2")
    expect(frame.locator("#roofline-table tbody tr")).to_have_count(len(operators))
    frame.locator("#roofline-chart").scroll_into_view_if_needed()
    shot(page, "roofline")
    # the chart's points are SVG paths in the bound's colour; the longest operator's is drawn largest
    # (below the legend, the chart's top 40 px): click it
    symbols = frame.locator("#roofline-chart svg path[fill]")
    expect(symbols).not_to_have_count(0)
    for attempt in range(3):  # a resize after the scroll may redraw the chart under a loaded runner: measure again
        boxes = symbols.evaluate_all("""els => { const top = els[0].ownerSVGElement.getBoundingClientRect().top;
            return els.map(e => { const b = e.getBoundingClientRect();
                return [b.width * b.height, b.top - top, (e.getAttribute('fill') || '').toLowerCase()]; }); }""")
        marks = [i for i, (_, y, fill) in enumerate(boxes)
                 if y > 40 and fill in ("#1976d2", "#f57c00", "#8e24aa", "#2e7d32", "#757575")]
        symbols.nth(max(marks, key=lambda i: boxes[i][0])).click(force=True)
        try:
            expect(frame.locator("#view")).to_have_attribute("data-view", "operators", timeout=3000 if attempt < 2 else T)
            break
        except AssertionError:
            if attempt == 2:
                raise
    loaded(frame)
    # nested operators (batch_norm > _batch_norm_impl_index > cudnn_batch_norm) share their kernels'
    # time: the longest point is any of them, drawn on top of each other
    longest = max(p["work"]["time_ns"] for p in operators)
    names = {p["name"] for p in operators if p["work"]["time_ns"] == longest}
    expect(frame.locator("#op-search")).not_to_have_value("")
    assert frame.locator("#op-search").input_value() in names
    expect(frame.locator('#op-table th[data-key="work.roof_share"]')).to_be_visible()
    assert errors == []
