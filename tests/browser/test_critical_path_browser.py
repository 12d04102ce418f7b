"""The critical path and the findings / observations split in real Chromium on a real TensorBoard:

- the Overview's "Critical path per step" card: a row per step of /critical_path with its categories in the route's
  order and figures, its longest segments linking into the Timeline with that step's path drawn;
- the Timeline's overlay: off by default (nothing drawn), on from the toggle (segments drawn, the step in the URL),
  on again from that URL alone, off again from the toggle;
- across ranks (DLRM, 8 ranks): the rank holding each step and the clock offsets, in the Overview and Communication;
- the Suggestions view and the Overview: observations apart below the findings, never among them, each finding
  with its simulated gain range and the change replayed.
Expected values are the routes' answers read here with urllib (the route's own figures are tested against the
trace files in tests/mcp/test_mcp_critical_path.py)."""
import shutil

import pytest
from playwright.sync_api import expect

import _tb
from _tb import FRAME, T, copy_resnet, plugin_json, serve, shot
from conftest import fixture_path
from test_plugin_routes import RESNET_WINDOW

pytestmark = pytest.mark.browser
RESNET = {"run": "resnet", "worker": "worker0", "window": RESNET_WINDOW}


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("cp_browser_logdir")
    copy_resnet(root / "resnet")
    shutil.copytree(fixture_path("param", "dlrm_8ranks"), root / "dlrm")
    return root


@pytest.fixture(scope="module")
def url(logdir, tmp_path_factory):
    yield from serve(logdir, tmp_path_factory)


route = plugin_json


def ms(ns):
    return f"{ns / 1e6:,.3f}"


def open_window(page, url, run, worker, window, view):
    frame = _tb.open_window(page, url, run, worker, window, view)
    expect(frame.locator("#view")).to_have_attribute("data-view", view)
    return frame


def test_the_overview_card_lists_each_steps_path_and_links_into_the_timeline(page, url, errors):
    data = route(url, "critical_path", **RESNET, limit=200)
    assert len(data["steps"]) == 6
    frame = open_window(page, url, **RESNET, view="overview")
    card = frame.locator("#ov-critical-path")
    expect(card).to_have_attribute("data-state", "loaded", timeout=T)
    rows = frame.locator("#cp-table tbody tr")
    expect(rows).to_have_count(len(data["steps"]))
    for i, step in enumerate(data["steps"]):
        row = rows.nth(i)
        expect(row).to_have_attribute("data-step", str(step["number"]))
        cats = row.locator(".path-category")
        expect(cats).to_have_count(len(step["categories"]))
        assert [c.get_attribute("data-category") for c in cats.all()] == [c["category"] for c in step["categories"]]
        assert [int(c.get_attribute("data-ns")) for c in cats.all()] == [c["ns"] for c in step["categories"]]
        expect(row.locator(".path-segment")).to_have_count(len(step["longest"]))
    card.scroll_into_view_if_needed()
    shot(page, "critical_path_card")
    # the longest piece of the third step opens the Timeline there, its path drawn
    step = data["steps"][2]
    seg = step["longest"][0]
    link = frame.locator(f"#cp-seg-{step['number']}-0")
    expect(link).to_contain_text(ms(seg["dur_ns"]))
    link.click()
    expect(frame.locator("#view")).to_have_attribute("data-view", "timeline")
    expect(frame.locator("#canning-root")).to_have_attribute("data-state", "loaded", timeout=T)
    canvas = frame.locator("#timeline-canvas")
    expect(canvas).not_to_have_attribute("data-path", "0", timeout=T)
    assert int(canvas.get_attribute("data-path")) == len(route(url, "critical_path", **RESNET, step=step["number"], limit=200)["steps"][0]["segments"])
    expect(frame.locator("#timeline-path")).to_be_checked()
    lo, hi = int(canvas.get_attribute("data-lo")), int(canvas.get_attribute("data-hi"))
    assert lo <= seg["ts_ns"] and seg["ts_ns"] + seg["dur_ns"] <= hi
    assert f"p.canning.tl.path={step['number']}" in page.evaluate("location.hash")
    shot(page, "critical_path_timeline")
    assert not errors, errors


def test_the_timeline_overlay_toggles_and_its_state_lives_in_the_url(page, url, errors):
    first = route(url, "critical_path", **RESNET, limit=1)["steps"][0]["number"]
    frame = open_window(page, url, **RESNET, view="timeline")
    canvas = frame.locator("#timeline-canvas")
    expect(canvas).not_to_have_attribute("data-items", "0", timeout=T)
    toggle = frame.locator("#timeline-path")
    expect(toggle).not_to_be_checked()
    expect(toggle).to_be_enabled(timeout=T)
    assert canvas.get_attribute("data-path") == "0"
    toggle.check()
    expect(canvas).not_to_have_attribute("data-path", "0", timeout=T)
    expect(frame.locator("#timeline-path-step")).to_have_value(str(first))
    hash_ = page.evaluate("location.hash")
    assert f"p.canning.tl.path={first}" in hash_
    # another step from the chooser
    second = route(url, "critical_path", **RESNET, limit=1)["steps"][1]["number"]
    frame.locator("#timeline-path-step").select_option(str(second))
    expect(canvas).not_to_have_attribute("data-path", "0", timeout=T)
    assert f"p.canning.tl.path={second}" in page.evaluate("location.hash")
    # the URL alone brings it back
    page.reload()
    frame = page.frame_locator(FRAME)
    expect(frame.locator("#canning-root")).to_have_attribute("data-state", "loaded", timeout=T)
    expect(frame.locator("#timeline-path")).to_be_checked(timeout=T)
    expect(frame.locator("#timeline-canvas")).not_to_have_attribute("data-path", "0", timeout=T)
    frame.locator("#timeline-path").uncheck()
    expect(frame.locator("#timeline-canvas")).to_have_attribute("data-path", "0", timeout=T)
    assert "tl.path" not in page.evaluate("location.hash")
    assert not errors, errors


def test_observations_are_shown_apart_below_the_findings(page, url, errors):
    found = route(url, "suggestions", **RESNET)["findings"]
    findings = [f for f in found if not f["observation"] and not f["needs"]]
    observations = [f for f in found if f["observation"]]
    assert findings and observations  # resnet: a data-loading finding, tensor-core and kernel-family observations
    frame = open_window(page, url, **RESNET, view="suggestions")
    expect(frame.locator("#sg > li")).to_have_count(len(findings))
    assert [li.get_attribute("data-rule") for li in frame.locator("#sg > li").all()] == [f["rule"] for f in findings]
    expect(frame.locator("#sg-obs > li")).to_have_count(len(observations))
    assert [li.get_attribute("data-rule") for li in frame.locator("#sg-obs > li").all()] == [f["rule"] for f in observations]
    expect(frame.locator("#suggestions-root")).to_contain_text("Observations: no simulated gain")
    for i, f in enumerate(findings):
        claim = f["claim"]
        item = frame.locator(f"#sg-{i}")
        if claim["gain_low_ns"] >= 0:
            expect(item.locator(".gain-range")).to_contain_text(f"{ms(claim['gain_low_ns'])}–{ms(claim['gain_high_ns'])} ms"
                                                              if claim["gain_low_ns"] != claim["gain_high_ns"] else ms(claim["gain_low_ns"]))
            expect(item.locator(".gain-edit")).to_contain_text(claim["edit"])
    for i in range(len(observations)):
        expect(frame.locator(f"#sg-obs-{i} .gain-range")).to_have_count(0)
        expect(frame.locator(f"#sg-obs-{i} .gain")).to_have_count(0)
    # the observations come after the findings on the page
    assert frame.locator("#sg").bounding_box()["y"] < frame.locator("#sg-obs").bounding_box()["y"]
    shot(page, "suggestions_observations")
    # the Overview: the same findings in the same order, the observations apart below them
    frame.locator("#tab-overview").click()
    expect(frame.locator("#ov-suggestions > li")).to_have_count(len(findings), timeout=T)
    assert [li.get_attribute("data-rule") for li in frame.locator("#ov-suggestions > li").all()] == [f["rule"] for f in findings]
    assert [li.get_attribute("data-rule") for li in frame.locator("#ov-observations > li").all()] == [f["rule"] for f in observations]
    expect(frame.locator("#ov-observations-block")).to_contain_text("Observations: no simulated gain")
    assert frame.locator("#ov-suggestions").bounding_box()["y"] < frame.locator("#ov-observations").bounding_box()["y"]
    assert not errors, errors


def test_which_rank_held_each_step_across_ranks(page, url, errors):
    worker = "worker0_step_12"
    frame = open_window(page, url, "dlrm", worker, "1694128201545", "overview")
    card = frame.locator("#cp-ranks")
    expect(card).to_have_attribute("data-state", "loaded", timeout=T)
    data = route(url, "critical_path_ranks", run="dlrm", window_index=0, limit=1)
    rows = frame.locator("#cp-ranks-table tbody tr")
    expect(rows).to_have_count(len(data["steps"]))
    step = data["steps"][0]
    expect(rows.nth(0)).to_have_attribute("data-held-by", str(step["held_by"]))
    moved = [o for o in data["clock_offsets"] if o["offset_ns"]]
    assert moved  # DLRM's ranks' clocks differ by about a microsecond
    for o in moved:
        sign = "+" if o["offset_ns"] > 0 else "−"
        expect(frame.locator("#cp-offsets")).to_contain_text(f"rank {o['rank']} {sign}{abs(o['offset_ns']) / 1000:.1f} µs")
    # the Communication view shows the same
    frame.locator("#tab-communication").click()
    expect(frame.locator("#cp-ranks")).to_have_attribute("data-state", "loaded", timeout=T)
    expect(frame.locator("#cp-ranks-table tbody tr").nth(0)).to_have_attribute("data-held-by", str(step["held_by"]))
    frame.locator("#cp-ranks").scroll_into_view_if_needed()
    shot(page, "critical_path_ranks")
    # a rank's link opens that rank's window
    frame.locator(f"#cp-ranks-table tbody tr >> nth=0 >> button[data-rank='{step['held_by']}']").first.click()
    expect(frame.locator("#worker-select")).to_have_value(f"worker{step['held_by']}_step_12", timeout=T)
    assert not errors, errors
