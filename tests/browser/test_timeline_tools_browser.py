"""The Timeline's tools (issue 45) in a real TensorBoard, driven by real Chromium: search as you type
(every match in sight highlighted and listed, a jump to one), a measured range's aggregation per
name (count, total, self, share) and markers kept in the URL across a reload, tracks filtered,
hidden and pinned (kept across a reload), and no empty track without a reason (the CPU's
unreported reserved memory, a Steps row without steps). On the 8-rank DLRM run and on a trace
written here by a real torch.profiler run; expected values come from the raw trace files read here
(gzip/json), with a stack sweep of their own for self time."""
import gzip
import json
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from urllib.parse import unquote

import pytest
from playwright.sync_api import expect

from _tb import FRAME, T, serve, shot
from conftest import fixture_path
from test_timeline_browser import DLRM_WINDOW, DLRM_WORKER, open_timeline

pytestmark = pytest.mark.browser

NAME = "nccl:all_to_all"

# a real torch.profiler run on the CPU with memory profiling and no schedule: no ProfilerStep range,
# no prof.step(); Kineto writes the CPU's "Total Reserved" as 0 beside its allocated bytes
PROFILE = """
import sys, torch
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as p:
    for _ in range(4):
        torch.mm(torch.randn(128, 128), torch.randn(128, 128)).relu()
p.export_chrome_trace(sys.argv[1])
"""


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("timeline_tools_logdir")
    shutil.copytree(fixture_path("param", "dlrm_8ranks"), root / "dlrm")
    (root / "cpu").mkdir()
    subprocess.run([sys.executable, "-c", PROFILE, str(root / "cpu" / "w0.1.pt.trace.json")], check=True,
                   timeout=240, capture_output=True)
    shutil.copytree(fixture_path("ascend", "level1"), root / "ascend")
    return root


@pytest.fixture(scope="module")
def url(logdir, tmp_path_factory):
    yield from serve(logdir, tmp_path_factory)


def raw_dlrm(logdir):
    with gzip.open(logdir / "dlrm" / f"{DLRM_WORKER}.{DLRM_WINDOW}.pt.trace.json.gz", "rt") as f:
        return json.load(f)["traceEvents"]


def url_state(page):
    """The app state's keys in TensorBoard's URL hash."""
    return dict(part.split("=", 1) for part in unquote(page.evaluate("location.hash")).lstrip("#").split("&")
                if "=" in part)


def per_name_in_range(events, lo, hi):
    """{name: [count, clipped ns, clipped self ns]} of the complete events that overlap [lo, hi] (ns):
    a stack sweep per (pid, tid); an event's direct children start while it is the innermost open
    event and end inside it."""
    found = defaultdict(lambda: [0, 0, 0])
    threads = defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            ts = round(e["ts"] * 1000)
            threads[(e["pid"], e["tid"])].append((ts, ts + round(e.get("dur", 0) * 1000), e["name"]))
    for thread in threads.values():
        stack = []
        for ts, te, name in sorted(thread, key=lambda e: (e[0], e[0] - e[1])):
            while stack and stack[-1][1] <= ts:
                stack.pop()
            clipped = max(0, min(te, hi) - max(ts, lo))
            if te > lo and ts < hi or (te == ts and lo <= ts <= hi):
                found[name][0] += 1
                found[name][1] += clipped
                found[name][2] += clipped
                if stack and te <= stack[-1][1]:
                    found[stack[-1][2]][2] -= clipped
            stack.append((ts, te, name))
    return found


def test_search_as_you_type_highlights_and_lists_every_match_in_sight(page, url, logdir, errors):
    frame, canvas = open_timeline(page, url, "dlrm", DLRM_WORKER, DLRM_WINDOW)
    calls = sorted(round(e["ts"] * 1000) for e in raw_dlrm(logdir) if e.get("ph") == "X" and NAME in e["name"].lower())
    assert len(calls) > 3
    search = frame.locator("#timeline-search")
    search.click()
    page.keyboard.type(NAME, delay=20)  # no Enter: the matches come as the typing pauses
    count = frame.locator("#timeline-search-count")
    expect(count).to_have_attribute("data-count", str(len(calls)), timeout=T)
    expect(count).to_have_attribute("data-in-range", str(len(calls)), timeout=T)  # the whole window is in sight
    hits = frame.locator("#timeline-hit-list button")
    expect(hits).to_have_count(len(calls), timeout=T)
    # every match is highlighted on the canvas (the whole window: all of them in sight)
    expect(canvas).to_have_attribute("data-hits", str(len(calls)), timeout=T)
    shot(page, "timeline-search")
    # only the tracks holding a match: as many as the raw file's threads that hold one
    threads = {(e["pid"], e["tid"]) for e in raw_dlrm(logdir) if e.get("ph") == "X" and NAME in e["name"].lower()}
    every = canvas.get_attribute("data-tracks").split(",")
    frame.locator("#timeline-only-hits").check()
    expect(canvas).to_have_attribute("data-tracks", re.compile("^[^,]+(,[^,]+){%d}$" % (len(threads) - 1)), timeout=T)
    assert len(every) > len(threads)
    assert url_state(page)["p.canning.tl.onlyhits"] == "true"
    frame.locator("#timeline-only-hits").uncheck()
    expect(canvas).to_have_attribute("data-tracks", ",".join(every), timeout=T)
    # a jump to the third match selects it
    third = hits.nth(2)
    event = third.get_attribute("data-event")
    third.click()
    expect(frame.locator("#timeline-details")).to_have_attribute("data-event", event, timeout=T)
    expect(frame.locator("#timeline-slice-table")).to_contain_text(NAME)
    # zoomed in at the window's start: fewer matches in sight, the count in the window unchanged
    page.keyboard.press("Escape")
    for _ in range(6):
        canvas.hover(position={"x": 205, "y": 60})
        page.keyboard.press("w")
    expect(count).not_to_have_attribute("data-in-range", str(len(calls)), timeout=T)
    assert int(count.get_attribute("data-count")) == len(calls)
    assert errors == []


def test_a_measured_range_its_aggregation_and_markers_survive_a_reload(page, url, logdir, errors):
    frame, canvas = open_timeline(page, url, "dlrm", DLRM_WORKER, DLRM_WINDOW)
    box = canvas.bounding_box()
    canvas.hover(position={"x": 320, "y": 60})
    page.keyboard.down("Shift")
    page.mouse.down()
    page.mouse.move(box["x"] + 1000, box["y"] + 60, steps=6)
    page.mouse.up()
    page.keyboard.up("Shift")
    rows = frame.locator("#timeline-summary-table tbody tr")
    expect(rows.first).to_be_visible(timeout=T)
    state = url_state(page)
    lo, hi = (int(v) for v in state["p.canning.tl.sel"].split("~"))
    assert canvas.get_attribute("data-measure") == f"{lo}~{hi}"
    # the range's figures per name, against the raw file (the range is relative to the window start)
    tracks = page.evaluate("""async (q) => (await (await fetch(`/data/plugin/canning/timeline_tracks?${q}`)).json())""",
                           f"run=dlrm&worker={DLRM_WORKER}&window={DLRM_WINDOW}")
    origin = tracks["start_ns"]
    expected = per_name_in_range(raw_dlrm(logdir), origin + lo, origin + hi)
    checked = 0
    for i in range(min(8, rows.count())):
        cells = [c.inner_text() for c in rows.nth(i).locator("td").all()]
        count, total, self_ns = expected[cells[0]]
        shown = [float(c.replace(",", "")) for c in cells[2:5]]
        assert cells[1] == f"{count:,}"  # an integer, no "1.0"
        # to the one decimal shown (µs, %): half a last digit either way, as rounding goes
        assert shown[0] == pytest.approx(total / 1000, abs=0.051), cells
        assert shown[1] == pytest.approx(self_ns / 1000, abs=0.051), cells
        assert shown[2] == pytest.approx(100 * total / (hi - lo), abs=0.051), cells
        checked += self_ns < total
    assert checked >= 1  # a name with children in the range: its self time is not its total
    # two markers at the pointer
    for x in (400, 700):
        canvas.hover(position={"x": x, "y": 80})
        page.keyboard.press("m")
    expect(canvas).to_have_attribute("data-marks", re.compile(r"^\d+,\d+$"), timeout=T)
    marks = url_state(page)["p.canning.tl.marks"]
    first_row = rows.first.text_content()
    page.reload()
    frame = page.frame_locator(FRAME)
    canvas = frame.locator("#timeline-canvas")
    expect(canvas).to_have_attribute("data-measure", f"{lo}~{hi}", timeout=T)
    expect(frame.locator("#timeline-summary-table tbody tr").first).to_have_text(first_row, timeout=T)
    assert url_state(page)["p.canning.tl.marks"] == marks
    expect(canvas).to_have_attribute("data-marks", re.compile(r"^\d+,\d+$"), timeout=T)
    shot(page, "timeline-tools")
    # Shift + M removes them (the keys go to the plugin's frame once its canvas has the focus)
    canvas.focus()
    canvas.hover(position={"x": 500, "y": 80})
    page.keyboard.press("Shift+M")
    expect(canvas).to_have_attribute("data-marks", "", timeout=T)
    assert errors == []


def test_tracks_filtered_hidden_and_pinned_survive_a_reload(page, url, logdir, errors):
    frame, canvas = open_timeline(page, url, "dlrm", DLRM_WORKER, DLRM_WINDOW)
    raw = raw_dlrm(logdir)
    # the GPU's streams, as the raw file labels its processes
    gpu_pids = {e["pid"] for e in raw if e.get("ph") == "M" and e["name"] == "process_labels"
                and e["args"]["labels"].startswith("GPU")}
    streams = {(e["pid"], e["tid"]) for e in raw if e.get("ph") == "X" and e["pid"] in gpu_pids}
    all_tracks = canvas.get_attribute("data-tracks").split(",")
    assert len(all_tracks) > len(streams) > 0
    frame.locator("#timeline-track-filter").fill("stream")
    expect(canvas).to_have_attribute("data-tracks", re.compile("^[^,]+(,[^,]+){%d}$" % (len(streams) - 1)), timeout=T)
    frame.locator("#timeline-track-filter").fill("")
    expect(canvas).to_have_attribute("data-tracks", ",".join(all_tracks), timeout=T)
    frame.locator("#timeline-tracks-button").click()
    hidden, pinned = all_tracks[0], all_tracks[-1]
    frame.locator(f'#timeline-track-list input[data-track="{hidden}"]').uncheck()
    frame.locator(f'#timeline-track-list button[data-pin="{pinned}"]').click()
    shown = [pinned] + [t for t in all_tracks[1:-1]]
    expect(canvas).to_have_attribute("data-tracks", ",".join(shown), timeout=T)
    state = url_state(page)
    assert state["p.canning.tl.hide"] == hidden and state["p.canning.tl.pin"] == pinned
    page.reload()
    frame = page.frame_locator(FRAME)
    expect(frame.locator("#timeline-canvas")).to_have_attribute("data-tracks", ",".join(shown), timeout=T)
    assert errors == []


def test_no_empty_track_without_a_reason(page, url, logdir, errors):
    with open(logdir / "cpu" / "w0.1.pt.trace.json") as f:
        raw = json.load(f)["traceEvents"]
    memory = [e["args"] for e in raw if e.get("name") == "[memory]"]
    # the file: CPU allocations with a reserved total of 0 (the CPU allocator does not report it), no step
    assert memory and max(m["Total Allocated"] for m in memory) > 0 and {m["Total Reserved"] for m in memory} == {0}
    assert not [e for e in raw if e.get("name", "").startswith("ProfilerStep#")]
    frame, canvas = open_timeline(page, url, "cpu")
    shown = canvas.get_attribute("data-shown")
    labels = [part.rsplit("@", 1)[0] for part in shown.split("|")]
    assert "Steps: none marked" in labels, labels
    assert any(label.endswith("allocated") for label in labels), labels
    assert not any(label.endswith("reserved") for label in labels), labels
    assert not any(re.search(r"process -1|thread -1", label) for label in labels), labels
    # a run with steps keeps its plain Steps row
    frame.locator("#run-select").select_option("dlrm")
    expect(canvas).to_have_attribute("data-shown", re.compile(r"(^|\|)Steps@"), timeout=T)
    assert errors == []
