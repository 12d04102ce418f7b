"""What every view gets from the shared layers, in a real TensorBoard driven by real Chromium:
the selection in the URL (reload and a shared link open the same place; a stale link falls back
with a note), TensorBoard's dark theme, and a layout that fits at 1,280 px (tables and charts
inside their cards, chart texts that do not overlap, cut names whole on hover).
One TensorBoard serves the module (resnet: GPU, ascend: NPU 2 ranks, dlrm: 8 ranks, cpu: CPU only).
"""
import gzip
import json
import re
import shutil

import pytest
from playwright.sync_api import expect

from _tb import FRAME, T, copy_resnet, open_plugin, serve
from conftest import fixture_path
from test_plugin_routes import RESNET_WINDOW

pytestmark = pytest.mark.browser

DLRM_WORKER = "worker0_step_12"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("polish_logdir")
    copy_resnet(root / "resnet")
    shutil.copytree(fixture_path("ascend", "level1"), root / "ascend")
    shutil.copytree(fixture_path("param", "dlrm_8ranks"), root / "dlrm")
    shutil.copytree(fixture_path("hta", "cpu_only"), root / "cpu")
    return root


@pytest.fixture(scope="module")
def url(logdir, tmp_path_factory):
    yield from serve(logdir, tmp_path_factory)


def settled(frame):
    """The view has finished: loaded, or empty with its reason."""
    expect(frame.locator("#canning-root")).to_have_attribute("data-state", re.compile("loaded|empty"), timeout=T)


def loaded(frame):
    expect(frame.locator("#canning-root")).to_have_attribute("data-state", "loaded", timeout=T)


def plugin_frame(page):
    """The plugin iframe as a Frame (for evaluate)."""
    return next(f for f in page.frames if "plugin_entry.html" in f.url)


def drag_across(page, chart, start, end):
    box = chart.bounding_box()
    y = box["y"] + box["height"] * 0.45
    page.mouse.move(box["x"] + box["width"] * start, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * end, y, steps=10)
    page.mouse.up()


def check_place(frame, expected_range):
    """The place the URL test left: ascend / rank1, Memory with its range, operators grouped by
    shape, the kernels sorted by calls."""
    loaded(frame)
    expect(frame.locator("#run-select")).to_have_value("ascend")
    expect(frame.locator("#worker-select")).to_have_value("rank1")
    expect(frame.locator("#window-select")).to_have_value("default")
    expect(frame.locator("#tab-memory")).to_have_attribute("aria-selected", "true")
    expect(frame.locator("#mem-chart")).to_have_attribute("data-range", expected_range)
    expect(frame.locator("#mem-range")).to_contain_text("Range")
    frame.locator("#tab-kernels").click()
    loaded(frame)
    expect(frame.locator('#kernel-table th[data-key="calls"]')).to_have_attribute("aria-sort", "descending")
    frame.locator("#tab-operators").click()
    loaded(frame)
    expect(frame.locator("#op-group")).to_have_value("shape")
    expect(frame.locator('#op-table th[data-key="input_shapes"]')).to_be_visible()


def test_the_url_holds_the_place_for_a_reload_and_a_shared_link(page, url, browser, errors):
    frame = open_plugin(page, url)
    settled(frame)
    expect(frame.locator("#tab-overview")).to_have_attribute("aria-selected", "true")  # the default view
    expect(frame.locator("#run-select option")).to_have_count(4, timeout=T)
    # the second window of a run with two, on the Overview: a reload keeps it
    frame.locator("#run-select").select_option("resnet")
    second = frame.locator("#window-select option").nth(1).get_attribute("value")
    assert second != frame.locator("#window-select").input_value()
    frame.locator("#window-select").select_option(second)
    loaded(frame)
    page.reload()
    frame = page.frame_locator(FRAME)
    loaded(frame)
    expect(frame.locator("#window-select")).to_have_value(second)
    expect(frame.locator("#tab-overview")).to_have_attribute("aria-selected", "true")
    frame.locator("#run-select").select_option("ascend")
    frame.locator("#worker-select").select_option("rank1")
    frame.locator("#tab-operators").click()
    loaded(frame)
    frame.locator("#op-group").select_option("shape")
    expect(frame.locator('#op-table th[data-key="input_shapes"]')).to_be_visible(timeout=T)
    frame.locator("#tab-kernels").click()
    loaded(frame)
    # any table's sort is kept (the Kernels table keeps none of its own)
    frame.locator('#kernel-table th[data-key="calls"]').click()
    expect(frame.locator('#kernel-table th[data-key="calls"]')).to_have_attribute("aria-sort", "descending")
    frame.locator("#tab-memory").click()
    loaded(frame)
    drag_across(page, frame.locator("#mem-chart"), 0.3, 0.6)
    expect(frame.locator("#mem-range")).to_contain_text("Range", timeout=10_000)
    rng = frame.locator("#mem-chart").get_attribute("data-range")
    assert re.fullmatch(r"\d+-\d+", rng), rng
    link = page.url
    for part in ("p.canning.run=ascend", "p.canning.worker=rank1", "p.canning.view=memory", "p.canning.op.group=shape",
                 "p.canning.sort.kernel-table=-calls", f"p.canning.mem.range={rng}"):
        assert part in link, (part, link)
    frame.locator("#tab-memory").click()

    page.reload()
    check_place(page.frame_locator(FRAME), rng)

    # the link opened in another browser context (nothing shared but the URL) lands there too
    other = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        shared = other.new_page()
        shared.goto(link)
        check_place(shared.frame_locator(FRAME), rng)
    finally:
        other.close()
    assert not errors, errors


def test_a_stale_link_falls_back_with_a_note(page, url, errors):
    # (a malformed %-escape cannot be tested here: TensorBoard's own page stops on it)
    page.goto(f"{url}/#canning&p.canning.run=gone&p.canning.view=nosuchview&p.canning.op.top=many"
              "&p.canning.mem.range=9-3")
    frame = page.frame_locator(FRAME)
    loaded(frame)
    note = frame.locator("#url-note")
    expect(note).to_be_visible()
    expect(note).to_contain_text("run “gone” is not in the logdir")
    expect(note).to_contain_text("view=“nosuchview”")
    expect(note).to_contain_text("op.top=“many”")
    expect(note).to_contain_text("mem.range=“9-3”")
    expect(frame.locator("#tab-overview")).to_have_attribute("aria-selected", "true")
    assert frame.locator("#run-select").input_value() in ("ascend", "cpu", "dlrm", "resnet")
    # a stale worker of a run that exists: that run, its first worker
    # (o.<name>: a view's own option, kept for views that state.ts does not know)
    page.goto(f"{url}/#canning&p.canning.run=ascend&p.canning.worker=rank9&p.canning.view=kernels&p.canning.o.later.depth=3")
    page.reload()
    frame = page.frame_locator(FRAME)
    loaded(frame)
    assert "p.canning.o.later.depth=3" in page.url, page.url
    expect(frame.locator("#url-note")).to_contain_text("worker of run ascend “rank9”")
    expect(frame.locator("#worker-select")).to_have_value("rank0")
    expect(frame.locator("#tab-kernels")).to_have_attribute("aria-selected", "true")
    frame.locator("#url-note .note-close").click()
    expect(frame.locator("#url-note")).to_be_hidden()
    assert not errors, errors


def test_a_time_range_and_a_slice_stay_with_their_window(page, url, errors):
    """The link's timeline range and selected slice open as given; another worker starts without
    them (they are ns from that window's start and an event of its trace)."""
    page.goto(f"{url}/#canning&p.canning.run=ascend&p.canning.worker=rank0&p.canning.view=timeline"
              "&p.canning.tl.range=1000~2000000&p.canning.tl.event=5")
    frame = page.frame_locator(FRAME)
    loaded(frame)
    expect(frame.locator("#timeline-canvas")).to_have_attribute("data-lo", "1000", timeout=T)
    assert "p.canning.tl.range=1000~2000000" in page.url and "p.canning.tl.event=5" in page.url, page.url
    frame.locator("#worker-select").select_option("rank1")
    loaded(frame)
    expect(frame.locator("#timeline-canvas")).not_to_have_attribute("data-lo", "1000", timeout=T)
    assert "tl.range" not in page.url and "tl.event" not in page.url, page.url
    assert not errors, errors


COLOURS = """() => {
  const pick = (sel, prop) => { const el = document.querySelector(sel); return el ? getComputedStyle(el)[prop] : null; };
  const label = document.querySelector('#ov-steps-chart svg text');
  return { bg: pick('body', 'backgroundColor'), text: pick('body', 'color'), card: pick('.card', 'backgroundColor'),
           head: pick('.data-table th', 'backgroundColor'), chartText: label ? label.getAttribute('fill') : null,
           theme: document.documentElement.dataset.theme };
}"""


def luminance(css):
    """Relative luminance 0..1 of a CSS colour "rgb(r, g, b)", "#rrggbb" or "#rgb"."""
    if css.startswith("#"):
        hx = css[1:] if len(css) == 7 else "".join(c * 2 for c in css[1:4])
        rgb = [int(hx[i:i + 2], 16) for i in (0, 2, 4)]
    else:
        rgb = [int(float(v)) for v in re.findall(r"[\d.]+", css)[:3]]
    return sum(w * c / 255 for w, c in zip((0.2126, 0.7152, 0.0722), rgb))


def set_tensorboard_theme(page, name):
    page.get_by_role("button", name="Menu for changing light or dark theme").click()
    page.get_by_role("menuitem", name=name).click()


def test_the_plugin_follows_tensorboards_dark_mode(page, url, errors):
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{url}/#canning&p.canning.run=resnet&p.canning.view=overview")
    frame = page.frame_locator(FRAME)
    loaded(frame)
    expect(frame.locator("#ov-steps-chart svg text").first).to_be_visible()
    light = plugin_frame(page).evaluate(COLOURS)
    assert light["theme"] == "light"
    assert min(luminance(light[k]) for k in ("bg", "card", "head")) > 0.85 and luminance(light["text"]) < 0.3, light
    assert luminance(light["chartText"]) < 0.5, light

    set_tensorboard_theme(page, "Dark")
    expect(page.locator("body.dark-mode")).to_have_count(1)
    expect(frame.locator("html")).to_have_attribute("data-theme", "dark")
    loaded(frame)  # the view is drawn again, charts in the dark theme
    expect(frame.locator("#ov-steps-chart svg text").first).to_be_visible()
    dark = plugin_frame(page).evaluate(COLOURS)
    assert max(luminance(dark[k]) for k in ("bg", "card", "head")) < 0.25 and luminance(dark["text"]) > 0.7, dark
    assert luminance(dark["chartText"]) > 0.6, dark

    set_tensorboard_theme(page, "Light")
    expect(frame.locator("html")).to_have_attribute("data-theme", "light")
    loaded(frame)
    assert plugin_frame(page).evaluate(COLOURS)["bg"] == light["bg"]
    assert not errors, errors


# In the view at 1,280 px: what sticks out of its card (a table's cell included: a table that fits only by
# scrolling inside its card hides its last columns), chart texts that overlap, cut texts without their
# whole text on hover, an empty side panel that takes room. Returns a list of problems (empty = fits).
LAYOUT = """() => {
  const out = [];
  const doc = document.scrollingElement;
  if (doc.scrollWidth > doc.clientWidth + 1) out.push(`the page scrolls sideways: ${doc.scrollWidth} > ${doc.clientWidth}`);
  const main = document.querySelector('.main').getBoundingClientRect();
  const name = (el) => el.id || (el.querySelector('h3, h4') || {}).textContent || el.className;
  const scrolls = (el) => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  for (const card of document.querySelectorAll('#view .card')) {
    const box = card.getBoundingClientRect();
    if (!box.width) continue;
    if (box.left < main.left - 1 || box.right > main.right + 1) out.push(`card ${name(card)} leaves the view`);
    if (card.scrollWidth > card.clientWidth + 1) out.push(`card ${name(card)} overflows: ${card.scrollWidth} > ${card.clientWidth}`);
    for (const table of card.querySelectorAll('table')) {
      let holder = table.parentElement;
      while (holder !== card && !scrolls(holder)) holder = holder.parentElement;
      const hb = (holder === card ? table : holder).getBoundingClientRect();
      if (hb.right > box.right + 1 || hb.left < box.left - 1) out.push(`table ${table.id || name(card)} sticks out of its card`);
    }
    for (const chart of card.querySelectorAll('.chart')) {
      const cb = chart.getBoundingClientRect();
      const drawn = chart.querySelector('svg, canvas');
      if (cb.right > box.right + 1 || (drawn && drawn.getBoundingClientRect().width > cb.width + 1)) out.push(`chart ${chart.id} wider than its card`);
    }
  }
  const cut = new Set();
  for (const cell of document.querySelectorAll('#view td, #view th')) {
    const card = cell.closest('.card');
    const b = cell.getBoundingClientRect();
    if (!card || !b.width || cut.has(card)) continue;
    const c = card.getBoundingClientRect();
    if (b.right > c.right + 1 || b.left < c.left - 1) {
      cut.add(card);
      out.push(`cell "${cell.textContent.trim().slice(0, 30)}" of ${name(card)} is outside its card (${Math.round(b.left)}-${Math.round(b.right)}, card ${Math.round(c.left)}-${Math.round(c.right)})`);
    }
  }
  const side = document.querySelector('#timeline-side');
  if (side && !side.children.length && side.getBoundingClientRect().width > 0) out.push('the empty timeline side panel takes room');
  for (const chart of document.querySelectorAll('#view .chart')) {
    const cb = chart.getBoundingClientRect();
    const inside = (b) => b.width > 0 && b.left + b.width / 2 >= cb.left && b.left + b.width / 2 <= cb.right && b.top + b.height / 2 >= cb.top && b.top + b.height / 2 <= cb.bottom;
    const texts = [...chart.querySelectorAll('svg text')].filter((t) => t.textContent.trim() && inside(t.getBoundingClientRect()));
    const boxes = texts.map((t) => [t.textContent, t.getBoundingClientRect()]);
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length; j++) {
        const [ta, a] = boxes[i], [tb, b] = boxes[j];
        const overlap = Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
        if (overlap) out.push(`chart ${chart.id}: "${ta}" overlaps "${tb}"`);
      }
  }
  for (const el of document.querySelectorAll('#canning-root td, #canning-root th, #canning-root .elide, #canning-root .frame, #canning-root li, #canning-root span, #canning-root div')) {
    if (el.scrollWidth <= el.clientWidth + 1 || getComputedStyle(el).textOverflow !== 'ellipsis') continue;
    el.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
    const text = el.textContent.trim();
    if (!el.title || !text.split(';').every((part) => el.title.includes(part.trim()))) out.push(`"${text.slice(0, 60)}" is cut without its whole text on hover (title "${el.title.slice(0, 60)}")`);
  }
  return out;
}"""


def open_the_parts_that_clip(page, frame, view):
    """What opens inside a view and must fit too: an operator's expanded row (call stacks, kernels), the
    timeline's range summary."""
    if view == "operators" and frame.locator("#op-table .op-toggle").count():
        frame.locator("#op-table .op-toggle").first.click()
        expect(frame.locator(".op-detail-body")).not_to_have_attribute("data-state", "loading", timeout=T)
    if view == "timeline":
        canvas = frame.locator("#timeline-canvas")
        expect(canvas).to_have_attribute("data-items", re.compile(r"\d"), timeout=T)
        box = canvas.bounding_box()
        page.mouse.move(box["x"] + 300, box["y"] + 10)  # a drag on the ruler selects a range
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] - 40, box["y"] + 10, steps=4)
        page.mouse.up()
        expect(frame.locator("#timeline-summary-table")).to_be_visible(timeout=T)


@pytest.mark.parametrize("run,worker", [("resnet", "worker0"), ("ascend", "rank0"), ("dlrm", DLRM_WORKER), ("cpu", "")])
def test_every_view_fits_at_1280_px(page, url, run, worker, errors):
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{url}/#canning&p.canning.run={run}&p.canning.worker={worker}")
    page.reload()
    frame = page.frame_locator(FRAME)
    settled(frame)
    tabs = frame.locator("#view-tabs [role=tab]")
    views = [tabs.nth(i).get_attribute("data-view") for i in range(tabs.count())]
    assert {"overview", "operators", "kernels", "memory", "communication", "timeline", "compare"} <= set(views)
    problems = {}
    for view in views:
        frame.locator(f"#tab-{view}").click()
        expect(frame.locator("#view")).to_have_attribute("data-view", view)
        settled(frame)
        if view == "overview" and run == "dlrm":
            expect(frame.locator("#ov-run-card")).to_have_attribute("data-state", "loaded", timeout=T)
        open_the_parts_that_clip(page, frame, view)
        page.wait_for_timeout(300)  # charts draw on the next frame
        found = plugin_frame(page).evaluate(LAYOUT)
        if found:
            problems[view] = found
    assert not problems, problems
    assert not errors, errors


def test_pies_fold_the_rest_into_other_and_name_every_slice(page, url, logdir, errors):
    """The top-10 kernels pie of the NPU fixture: 7 slices and "Other (3)" (10 kernels drawn), the
    names in a legend; the counts come from the raw kernel_details.csv."""
    import csv

    (details,) = logdir.glob("ascend/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv")
    with open(details, newline="") as f:
        names = {row["Name"] for row in csv.DictReader(f)}
    assert len(names) > 10
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{url}/#canning&p.canning.run=ascend&p.canning.worker=rank0&p.canning.view=kernels")
    page.reload()
    frame = page.frame_locator(FRAME)
    loaded(frame)
    texts = frame.locator("#kernel-top-chart svg text")
    expect(texts.filter(has_text="Other (3)")).to_have_count(1)
    legend = [t for t in texts.evaluate_all("els => els.map(e => e.textContent)") if not t.endswith("%")]
    assert len(legend) == 8, legend
    assert not errors, errors


def test_run_overview_rows_open_their_rank_and_red_has_a_legend(page, url, logdir, errors):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{url}/#canning&p.canning.run=dlrm&p.canning.worker={DLRM_WORKER}&p.canning.view=overview")
    page.reload()
    frame = page.frame_locator(FRAME)
    card = frame.locator("#ov-run-card")
    expect(card).to_have_attribute("data-state", "loaded", timeout=T)
    red = frame.locator("#ov-run tr.slow")
    if red.count():
        expect(frame.locator("#ov-run-legend")).to_contain_text("Red rank")
        colour = frame.locator("#ov-run-legend .swatch").evaluate("el => getComputedStyle(el).backgroundColor")
        assert colour == red.first.locator("td.rank").evaluate("el => getComputedStyle(el).color")
    else:
        expect(frame.locator("#ov-run-legend")).to_have_count(0)
    # rank 3's row opens rank 3 (its worker from the raw trace's distributedInfo), on the Overview
    worker3 = next(p.name.split(".")[0] for p in (logdir / "dlrm").glob("*.pt.trace.json.gz")
                   if json.load(gzip.open(p, "rt"))["distributedInfo"]["rank"] == 3)
    frame.locator('#ov-run tr[data-rank="3"] button').click()
    expect(frame.locator("#worker-select")).to_have_value(worker3)
    expect(frame.locator("#tab-overview")).to_have_attribute("aria-selected", "true")
    loaded(frame)
    assert f"p.canning.worker={worker3}" in page.url
    assert not errors, errors


def test_the_sidebar_shows_the_whole_window_label(page, url, errors):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{url}/#canning&p.canning.run=resnet&p.canning.window={RESNET_WINDOW}")
    page.reload()
    frame = page.frame_locator(FRAME)
    loaded(frame)
    option = frame.locator("#window-select option:checked").inner_text()
    label = frame.locator("#window-label")
    expect(label).to_have_text(option)
    expect(frame.locator("#window-select")).to_have_attribute("title", option)
    # the label wraps inside the sidebar: nothing of it is cut
    assert label.evaluate("el => el.scrollWidth <= el.clientWidth && el.getBoundingClientRect().right <= document.querySelector('.sidebar').getBoundingClientRect().right")
    assert not errors, errors


def test_call_stacks_show_package_paths_and_long_chart_names_show_whole(page, url, errors):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{url}/#canning&p.canning.run=ascend&p.canning.worker=rank0&p.canning.view=operators&p.canning.op.group=stack")
    page.reload()
    frame = page.frame_locator(FRAME)
    loaded(frame)
    rows = page.request.get(f"{url}/data/plugin/canning/operators?run=ascend&worker=rank0&window=default&group_by=stack").json()["rows"]
    full = next(r["call_stack"] for r in rows if "site-packages/" in r["call_stack"])
    # the package-relative paths: after site-packages/ (torch/...) or after lib/python3.x/ (the stdlib)
    installed = r"^.*/(?:site-packages|dist-packages)/|^.*/lib/python\d+(?:\.\d+)?/"
    short = ";".join(re.sub(installed, "", f.strip()) for f in full.split(";") if f.strip())
    cell = frame.locator(f'#op-table td[title="{full}"]').first
    expect(cell).to_have_text(short)
    assert "site-packages" not in short and short.startswith(("torch/", "/home"))
    # a bar chart's long name (GPU operators with their input shapes) is cut on its axis; hovering
    # it shows the whole name
    page.goto(f"{url}/#canning&p.canning.run=resnet&p.canning.view=operators&p.canning.op.group=shape")
    page.reload()
    frame = page.frame_locator(FRAME)
    loaded(frame)
    cut = frame.locator("#op-chart svg text", has_text="…").first
    expect(cut).to_be_visible()
    shown = cut.text_content()
    cut.hover()
    tip = frame.locator(".chart-tip-name")
    expect(tip).to_be_visible()
    assert tip.inner_text().startswith(shown.rstrip("…")) and len(tip.inner_text()) > len(shown), (shown, tip.inner_text())
    assert not errors, errors
