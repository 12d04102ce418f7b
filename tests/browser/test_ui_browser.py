"""The UI a new user stays in, in a real TensorBoard driven by real Chromium at 1,280 x 800 (issue 27):
options that belong to a run reset when the run changes (a Compare baseline only kept when chosen for
that run), a jump from another view lands on its target in sight and outlined, Memory's peak brings
its counter lanes into sight with the value under the pointer, the ruler's labels stay distinct at a
50 µs range, and a figure the API marks unknown shows as "–" with the reason on hover. One
TensorBoard serves the module (resnet: GPU, two windows; ascend: NPU, two ranks). Expected values come
from the raw files, read here with json / csv."""
import csv
import json
import re
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import expect

from _tb import FRAME, T, copy_resnet, serve
from conftest import fixture_path

pytestmark = pytest.mark.browser

GUTTER, RULER = 200, 24  # the timeline canvas' label column and ruler (timeline_draw.ts)
GLOSSARY = Path(__file__).resolve().parents[2] / "src" / "canning_tb" / "analysis" / "glossary.json"


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    """TensorBoard on a copy of the fixtures (the raw files are read from the fixtures themselves)."""
    root = tmp_path_factory.mktemp("ui_logdir")
    copy_resnet(root / "resnet")
    shutil.copytree(fixture_path("ascend", "level1"), root / "ascend")
    yield from serve(root, tmp_path_factory)


def ascend_file(name):
    return next(fixture_path("ascend", "level1", "rank0_ascend_pt").rglob(name))


@pytest.fixture(scope="module")
def shared(browser):
    """One page for the module's tests, and the console / page errors it logs."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errs = []
    page.on("console", lambda m: m.type == "error" and errs.append(m.text))
    page.on("pageerror", lambda e: errs.append(str(e)))
    yield page, errs
    context.close()


@pytest.fixture
def page(shared):
    """The module's page, its error list emptied for each test (overrides pytest-playwright's)."""
    shared[1].clear()
    return shared[0]


@pytest.fixture
def errors(shared):
    return shared[1]


def open_at(page, url, hash_):
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{url}/#canning&{hash_}")
    page.reload()  # the hash of a page already open is not read again by TensorBoard
    frame = page.frame_locator(FRAME)
    loaded(frame)
    return frame


def loaded(frame):
    expect(frame.locator("#canning-root")).to_have_attribute("data-state", "loaded", timeout=T)


def tab(frame, view):
    frame.locator(f"#tab-{view}").click()
    expect(frame.locator("#view")).to_have_attribute("data-view", view)
    loaded(frame)


def plugin_frame(page):
    return next(f for f in page.frames if "plugin_entry.html" in f.url)


def test_another_run_starts_from_its_defaults(page, url, errors):
    # a link on the NPU run with a timeline search and the memory device chosen
    frame = open_at(page, url, "p.canning.run=ascend&p.canning.worker=rank0&p.canning.view=compare"
                    "&p.canning.tl.search=MatMul&p.canning.mem.device=npu%3A0")
    frame.locator("#cmp-base-run").select_option("resnet")  # the baseline the user picks: the GPU run
    loaded(frame)
    expect(frame.locator("#cmp-base-run")).to_have_value("resnet")
    tab(frame, "kernels")
    frame.locator('#kernel-table th[data-key="calls"]').click()
    tab(frame, "operators")
    frame.locator('#op-table th[data-key="calls"]').click()
    expect(frame.locator('#op-table th[data-key="calls"]')).to_have_attribute("aria-sort", "descending")
    chosen = ("cmp.run=resnet", "sort.kernel-table=-calls", "op.sort=calls", "tl.search=MatMul", "mem.device=npu")
    for part in chosen:
        assert part in page.url, (part, page.url)
    # another run: what was chosen for the NPU run is gone, as on a fresh link
    frame.locator("#run-select").select_option("resnet")
    loaded(frame)
    for part in chosen:
        assert part not in page.url, (part, page.url)
    # the GPU run's own default sorts: operators by device self time, kernels by total time
    expect(frame.locator('#op-table th[data-key="device_self_ns"]')).to_have_attribute("aria-sort", "descending")
    tab(frame, "kernels")
    expect(frame.locator('#kernel-table th[data-key="total_ns"]')).to_have_attribute("aria-sort", "descending")
    # the baseline the view chooses for it: the other window of the same worker, not the NPU run
    tab(frame, "compare")
    expect(frame.locator("#cmp-base-run")).to_have_value("resnet")
    target = frame.locator("#window-select").input_value()
    assert frame.locator("#cmp-base-window").input_value() not in ("", target)
    # a baseline chosen together with the run (Swap) is kept
    frame.locator("#cmp-base-run").select_option("ascend")
    loaded(frame)
    frame.locator("#cmp-swap").click()
    loaded(frame)
    expect(frame.locator("#run-select")).to_have_value("ascend")
    expect(frame.locator("#cmp-base-run")).to_have_value("resnet")
    assert not errors, errors


def shown_lanes(canvas):
    """{label: canvas y of its middle} of the labelled lanes in sight, as the canvas says it drew them."""
    text = canvas.get_attribute("data-shown") or ""
    return {label: int(y) for label, y in (part.rsplit("@", 1) for part in text.split("|") if part)}


def test_a_double_clicked_kernel_lands_in_sight_and_outlined(page, url, errors):
    with open(ascend_file("trace_view.json")) as f:
        names = {e["name"] for e in json.load(f) if e.get("ph") == "X"}
    frame = open_at(page, url, "p.canning.run=ascend&p.canning.worker=rank0&p.canning.view=kernels")
    cells = frame.locator("#kernel-table tbody tr td.name")
    shown = cells.all_inner_texts()
    index = next(i for i, name in enumerate(shown) if name in names)  # a kernel the trace names as such
    frame.locator("#kernel-table tbody tr").nth(index).dblclick()
    expect(frame.locator("#tab-timeline")).to_have_attribute("aria-selected", "true")
    expect(frame.locator("#timeline-details")).to_contain_text(shown[index], timeout=T)
    canvas = frame.locator("#timeline-canvas")
    expect(canvas).not_to_have_attribute("data-selected-box", re.compile("^$"), timeout=T)
    x, y, w, h = (int(v) for v in canvas.get_attribute("data-selected-box").split(","))
    size = canvas.bounding_box()
    assert GUTTER <= x and x + w <= size["width"] and RULER <= y and y + h <= size["height"], ((x, y, w, h), size)
    # outlined: the pixel just left of the slice is the outline's black
    pixel = plugin_frame(page).evaluate(
        "([x, y]) => { const r = window.devicePixelRatio || 1;"
        " return Array.from(document.querySelector('#timeline-canvas').getContext('2d').getImageData(x * r, y * r, 1, 1).data); }",
        [x - 1, y + h // 2])
    assert max(pixel[:3]) < 80 and pixel[3] > 200, pixel
    # the device streams come first: the kernel's stream is drawn above every host thread
    lanes = shown_lanes(canvas)
    device = [lanes[name] for name in lanes if name.startswith("Ascend Hardware")]
    host = [lanes[name] for name in lanes if name.lstrip("▸▾ ").startswith(("Python", "CANN"))]
    assert device and (not host or max(device) < min(host)), lanes
    assert not errors, errors


def js_bytes(size):
    """format.ts' bytes(): 1024-based units, up to two decimals."""
    units, value, unit = ["B", "KB", "MB", "GB", "TB"], size, 0
    while value >= 1024 and unit < len(units) - 1:
        value, unit = value / 1024, unit + 1
    text = f"{value:,.2f}".rstrip("0").rstrip(".") if unit else f"{value:,.0f}"
    return f"{text} {units[unit]}"


def test_the_memory_peak_shows_its_counter_lane_and_the_value_under_the_pointer(page, url, errors):
    frame = open_at(page, url, "p.canning.run=ascend&p.canning.worker=rank0&p.canning.view=memory")
    frame.locator("#mem-timeline-link").click()
    expect(frame.locator("#tab-timeline")).to_have_attribute("aria-selected", "true")
    canvas = frame.locator("#timeline-canvas")
    page.wait_for_function("el => (el.dataset.shown || '').includes('npu:0 allocated@')", arg=canvas.element_handle(), timeout=T)
    lane_y = shown_lanes(canvas)["npu:0 allocated"]
    mark = int(re.search(r"tl\.mark=(\d+)", page.url).group(1))
    lo, hi = int(canvas.get_attribute("data-lo")), int(canvas.get_attribute("data-hi"))
    assert lo < mark < hi
    x = GUTTER + (mark - lo) / (hi - lo) * (canvas.bounding_box()["width"] - GUTTER)
    canvas.hover(position={"x": x + 3, "y": lane_y})
    expect(canvas).to_have_attribute("data-cursor", re.compile("^npu:0 allocated: "))
    value = canvas.get_attribute("data-cursor").split(": ", 1)[1]
    # a value the raw memory_record.csv holds for the device (MB there)
    with open(ascend_file("memory_record.csv"), newline="") as f:
        raw = {js_bytes(float(r["Total Allocated(MB)"]) * 1048576) for r in csv.DictReader(f)
               if r["Device Type"] == "NPU:0" and r["Total Allocated(MB)"].strip()}
    assert value in raw, (value, sorted(raw)[:5])
    assert not errors, errors


UNITS = {"s": 1e9, "ms": 1e6, "µs": 1e3, "ns": 1}


def ns_of(text):
    """A ruler label ("1.00000 s", "10 µs", "0") in ns."""
    if text == "0":
        return 0
    number, unit = text.split(" ")
    return float(number.replace(",", "")) * UNITS[unit]


def test_the_rulers_labels_are_distinct_at_a_50_us_range(page, url, errors):
    lo, hi = 1_000_000_000, 1_000_050_000  # 50 µs a second into the GPU run's 1.17 s window
    frame = open_at(page, url, f"p.canning.run=resnet&p.canning.view=timeline&p.canning.tl.range={lo}~{hi}")
    canvas = frame.locator("#timeline-canvas")
    expect(canvas).to_have_attribute("data-lo", str(lo), timeout=T)
    labels = canvas.get_attribute("data-ticks").split("|")
    assert len(labels) >= 4 and len(set(labels)) == len(labels), labels
    # each label is a time in the range: the first one whole, the others "+offset" from it
    first = ns_of(labels[0])
    times = [first] + [first + ns_of(label.lstrip("+")) for label in labels[1:]]
    assert all(label.startswith("+") for label in labels[1:]), labels
    assert all(lo <= t <= hi for t in times) and times == sorted(times), (labels, times)
    assert not errors, errors


def null_figures(route, change):
    """The real route's answer with figures marked unknown, as analysis marks them (-1, null)."""
    body = route.fetch().json()
    change(body)
    route.fulfill(json=body)


def test_an_unknown_figure_renders_as_a_dash_with_the_reason(page, url, errors):
    unknown_tip = json.loads(GLOSSARY.read_text())["unknown"]["tip"]

    def operators(body):
        for row in body.get("rows", []):
            row["host_self_ns"] = None  # a double the API sends as null
        if body.get("rows"):
            body["rows"][0]["calls"] = -1  # an integer the API marks -1

    page.route(re.compile(r"/data/plugin/canning/operators\?"), lambda route: null_figures(route, operators))
    page.route(re.compile(r"/data/plugin/canning/memory\?"), lambda route: null_figures(
        route, lambda body: [dev.update(peak_allocated_bytes=None) for dev in body["devices"]]))
    try:
        frame = open_at(page, url, "p.canning.run=resnet&p.canning.view=operators")
        unknown_cells(frame, unknown_tip)
    finally:
        page.unroute_all()
    assert not errors, errors


def unknown_cells(frame, unknown_tip):
    row = frame.locator("#op-table tbody tr").first
    for key in ("calls", "host_self_ns"):
        index = frame.locator("#op-table th").evaluate_all(f"(ths) => ths.findIndex((th) => th.dataset.key === '{key}')")
        cell = row.locator("td").nth(index)
        expect(cell).to_have_text("–")
        expect(cell).to_have_attribute("title", unknown_tip)
    tab(frame, "memory")
    peak = frame.locator("#mem-summary tr", has_text="Peak allocated (MB)").locator("td")
    expect(peak).to_have_text("–")
    expect(peak).to_have_attribute("title", unknown_tip)
