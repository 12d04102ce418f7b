"""The Timeline tab in a real TensorBoard, driven by real Chromium, on the demo's real 2-rank gloo run
(examples/train_ddp.py), the 8-rank DLRM run and an Ascend fixture: zoom, pan, click a slice and read
its details, follow a flow, search, range summary, ranks side by side with both alignments and
collective peers, the NPU counter tracks, and the link from the Operators view. Expected values come
from the raw trace files read here (gzip/json)."""
import gzip
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

from _procs import communicate_all
from _tb import FRAME, T, open_plugin, serve, shot
from conftest import fixture_path

pytestmark = pytest.mark.browser

DLRM_WORKER, DLRM_WINDOW = "worker0_step_12", "1694128201545"
COLLECTIVE = "nccl:all_to_all"
DEMO_COLLECTIVE = "gloo:all_reduce"  # DDP's gradient all-reduce, as torch.profiler names it over gloo


REPO = Path(__file__).resolve().parents[2]


def run_demo(logdir):
    """examples/train_ddp.py on 2 real processes (gloo, CPU), as torchrun starts them."""
    pytest.importorskip("torch.distributed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(2):
        env = {**os.environ, "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2",
               "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        procs.append(subprocess.Popen([sys.executable, str(REPO / "examples" / "train_ddp.py"), str(logdir), "6"],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = communicate_all(procs, 300)  # a hung rank is killed on every path
    assert [p.returncode for p in procs] == [0, 0], outs


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("timeline_logdir")
    shutil.copytree(fixture_path("param", "dlrm_8ranks"), root / "dlrm")
    shutil.copytree(fixture_path("ascend", "level1"), root / "ascend")
    run_demo(root / "demo")
    return root


@pytest.fixture(scope="module")
def url(logdir, tmp_path_factory):
    yield from serve(logdir, tmp_path_factory)


def raw_events(path):
    with gzip.open(path, "rt") as f:
        return json.load(f)["traceEvents"]


def expect_longest_call_shown(frame, logdir, name):
    """The details table shows the duration of `name`'s longest call in the raw DLRM trace."""
    raw = raw_events(logdir / "dlrm" / f"{DLRM_WORKER}.{DLRM_WINDOW}.pt.trace.json.gz")
    longest = max(e["dur"] for e in raw if e.get("ph") == "X" and e["name"] == name)
    expect(frame.locator("#timeline-slice-table")).to_contain_text(f"{longest:,.1f}")


def open_timeline(page, url, run, worker=None, window=None):
    frame = open_plugin(page, url)
    expect(frame.locator("#run-select option")).to_have_count(3, timeout=T)
    frame.locator("#run-select").select_option(run)
    if worker:
        frame.locator("#worker-select").select_option(worker)
        frame.locator("#window-select").select_option(window)
    frame.locator("#tab-timeline").click()
    expect(frame.locator("#canning-root")).to_have_attribute("data-state", "loaded", timeout=T)
    canvas = frame.locator("#timeline-canvas")
    expect(canvas).not_to_have_attribute("data-items", "0", timeout=T)
    return frame, canvas


def span(canvas):
    return int(canvas.get_attribute("data-lo")), int(canvas.get_attribute("data-hi"))


def shifts(canvas):
    """{rank: ns added to its times on the common axis}, as the canvas says it drew them."""
    return {int(rank): int(shift) for rank, shift in (part.split(":") for part in canvas.get_attribute("data-shifts").split(","))}


def wait_change(canvas, before):
    canvas.page.wait_for_function("([el, lo, hi]) => el.dataset.lo !== lo || el.dataset.hi !== hi",
                                  arg=[canvas.element_handle(), str(before[0]), str(before[1])], timeout=T)
    return span(canvas)


def test_zoom_pan_search_click_and_range(page, url, logdir, errors):
    frame, canvas = open_timeline(page, url, "dlrm", DLRM_WORKER, DLRM_WINDOW)
    assert int(canvas.get_attribute("data-bytes")) < 2 * 1024 * 1024
    full = span(canvas)
    canvas.hover(position={"x": 600, "y": 100})
    page.keyboard.press("w")
    zoomed = wait_change(canvas, full)
    assert zoomed[1] - zoomed[0] < full[1] - full[0]
    page.keyboard.press("d")
    panned = wait_change(canvas, zoomed)
    assert panned[0] > zoomed[0] and panned[1] - panned[0] == pytest.approx(zoomed[1] - zoomed[0], abs=2)
    canvas.hover(position={"x": 500, "y": 60})
    page.keyboard.down("Control")  # Ctrl + wheel zooms (Perfetto); the plain wheel scrolls the tracks
    page.mouse.wheel(0, -400)
    page.keyboard.up("Control")
    wheeled = wait_change(canvas, panned)
    assert wheeled[1] - wheeled[0] < panned[1] - panned[0]
    # search: the count is the raw file's
    raw = raw_events(logdir / "dlrm" / f"{DLRM_WORKER}.{DLRM_WINDOW}.pt.trace.json.gz")
    calls = [e for e in raw if e.get("ph") == "X" and COLLECTIVE in e["name"].lower()]
    frame.locator("#timeline-search").fill(COLLECTIVE)
    frame.locator("#timeline-search").press("Enter")
    expect(frame.locator("#timeline-search-count")).to_have_attribute("data-count", str(len(calls)), timeout=T)
    details = frame.locator("#timeline-details")
    expect(details).to_contain_text(COLLECTIVE, timeout=T)
    first = details.get_attribute("data-event")
    frame.locator("#timeline-next").click()
    expect(details).not_to_have_attribute("data-event", first, timeout=T)
    second = details.get_attribute("data-event")
    expect(frame.locator("#timeline-slice-table")).to_contain_text("Duration")
    # click: clear the selection, then click the slice where it is drawn
    expect(canvas).not_to_have_attribute("data-selected-box", "", timeout=T)
    box = [int(v) for v in canvas.get_attribute("data-selected-box").split(",")]
    width = canvas.bounding_box()["width"]
    page.keyboard.press("Escape")
    expect(frame.locator("#timeline-details")).to_have_count(0)
    # the empty side panel folds away and the canvas widens over the same range: the slice's x scales
    page.wait_for_function("([el, w]) => el.getBoundingClientRect().width !== w", arg=[canvas.element_handle(), width], timeout=T)
    x = 200 + (box[0] + max(1, box[2] // 2) - 200) * (canvas.bounding_box()["width"] - 200) / (width - 200)
    canvas.click(position={"x": x, "y": box[1] + box[3] // 2})
    expect(frame.locator("#timeline-details")).to_have_attribute("data-event", second, timeout=T)
    shot(page, "timeline")
    # shift+drag selects a range and shows the time per name in it
    canvas.hover(position={"x": 300, "y": 50})
    page.keyboard.down("Shift")
    page.mouse.down()
    page.mouse.move(canvas.bounding_box()["x"] + 900, canvas.bounding_box()["y"] + 50, steps=5)
    page.mouse.up()
    page.keyboard.up("Shift")
    expect(frame.locator("#timeline-summary-table tbody tr").first).to_be_visible(timeout=T)
    # a reload opens the same range with the same slice selected (the state is in the URL)
    shown = span(canvas)
    page.reload()
    frame = page.frame_locator(FRAME)
    expect(frame.locator("#timeline-details")).to_have_attribute("data-event", second, timeout=T)
    assert span(frame.locator("#timeline-canvas")) == pytest.approx(shown, abs=1)
    assert errors == []


def test_ranks_side_by_side_aligned_and_peers(page, url, logdir, errors):
    frame, canvas = open_timeline(page, url, "dlrm", DLRM_WORKER, DLRM_WINDOW)
    frame.locator("#timeline-ranks").check()
    expect(canvas).to_have_attribute("data-ranks", "8", timeout=T)
    expect(canvas).not_to_have_attribute("data-items", "0", timeout=T)
    by_clock = span(canvas)
    lanes = int(canvas.get_attribute("data-lanes"))
    canvas.click(position={"x": 60, "y": 24 + 10})  # rank 0's header: collapsed to its steps
    expect(canvas).not_to_have_attribute("data-lanes", str(lanes))
    assert int(canvas.get_attribute("data-lanes")) < lanes
    canvas.click(position={"x": 60, "y": 24 + 10})
    expect(canvas).to_have_attribute("data-lanes", str(lanes))
    clock_shifts = shifts(canvas)
    frame.locator("#timeline-align").select_option("step")
    by_step = wait_change(canvas, by_clock)
    assert by_step != by_clock
    # moving from the clock to the steps moves each rank by the difference of its first step's
    # start (raw file) from the selected rank's
    first_step = {}
    for path in sorted((logdir / "dlrm").glob("*.pt.trace.json.gz")):
        with gzip.open(path, "rt") as f:
            doc = json.load(f)
        first_step[doc["distributedInfo"]["rank"]] = min(
            round(e["ts"] * 1000) for e in doc["traceEvents"] if e.get("name", "").startswith("ProfilerStep#"))
    step_shifts = shifts(canvas)
    assert sorted(step_shifts) == list(range(8))
    for rank, shift in step_shifts.items():
        assert shift - clock_shifts[rank] == first_step[0] - first_step[rank]
    # the third all_to_all: its peers on the 8 ranks, the last one as the raw files say
    starts = {}
    for path in sorted((logdir / "dlrm").glob("*.pt.trace.json.gz")):
        with gzip.open(path, "rt") as f:
            doc = json.load(f)
        calls = sorted(e["ts"] for e in doc["traceEvents"] if e.get("ph") == "X" and e["name"] == COLLECTIVE)
        starts[doc["distributedInfo"]["rank"]] = calls[2]
    last = max(starts, key=starts.get)
    frame.locator("#timeline-search").fill(COLLECTIVE)
    frame.locator("#timeline-search").press("Enter")
    for _ in range(2):
        before = frame.locator("#timeline-details").get_attribute("data-event", timeout=T)
        frame.locator("#timeline-next").click()
        expect(frame.locator("#timeline-details")).not_to_have_attribute("data-event", before, timeout=T)
    peers = frame.locator("#timeline-peers li")
    expect(peers).to_have_count(8, timeout=T)
    expect(frame.locator("#timeline-peers .last")).to_have_attribute("data-rank", str(last))
    shot(page, "timeline-ranks")
    frame.locator("#timeline-peers .last").click()
    expect(frame.locator("#timeline-details")).to_contain_text(COLLECTIVE)
    assert errors == []


def test_link_from_operators_opens_the_longest_call(page, url, logdir, errors):
    frame = open_plugin(page, url)
    frame.locator("#run-select").select_option("dlrm")
    frame.locator("#worker-select").select_option(DLRM_WORKER)
    frame.locator("#tab-operators").click()
    expect(frame.locator("#canning-root")).to_have_attribute("data-state", "loaded", timeout=T)
    frame.locator("#op-search").fill("aten::addmm") if frame.locator("#op-search").count() else None
    row = frame.locator("#op-table tbody tr", has_text="aten::addmm").first
    row.click()
    link = frame.locator("#op-timeline-link")
    expect(link).to_be_visible(timeout=T)
    name = link.get_attribute("data-name")
    link.click()
    expect(frame.locator("#tab-timeline")).to_have_attribute("aria-selected", "true")
    details = frame.locator("#timeline-details")
    expect(details).to_contain_text(name, timeout=T)
    expect_longest_call_shown(frame, logdir, name)
    assert errors == []


def test_double_click_on_a_kernel_opens_its_longest_call(page, url, logdir, errors):
    frame = open_plugin(page, url)
    frame.locator("#run-select").select_option("dlrm")
    frame.locator("#worker-select").select_option(DLRM_WORKER)
    frame.locator("#tab-kernels").click()
    expect(frame.locator("#canning-root")).to_have_attribute("data-state", "loaded", timeout=T)
    first = frame.locator("#kernel-table tbody tr").first
    name = first.locator("td").first.inner_text()
    first.dblclick()
    expect(frame.locator("#tab-timeline")).to_have_attribute("aria-selected", "true")
    expect(frame.locator("#timeline-details")).to_contain_text(name, timeout=T)
    expect_longest_call_shown(frame, logdir, name)
    assert errors == []


def test_double_click_on_a_collective_opens_its_slowest_call(page, url, logdir, errors):
    frame = open_plugin(page, url)
    frame.locator("#run-select").select_option("dlrm")
    frame.locator("#worker-select").select_option(DLRM_WORKER)
    frame.locator("#tab-communication").click()
    row = frame.locator("#comm-table tbody tr", has_text="AllReduce").first
    expect(row).to_be_visible(timeout=T)
    row.dblclick()
    expect(frame.locator("#tab-timeline")).to_have_attribute("aria-selected", "true")
    raw = raw_events(logdir / "dlrm" / f"{DLRM_WORKER}.{DLRM_WINDOW}.pt.trace.json.gz")
    slowest = max((e for e in raw if e.get("cat") == "kernel" and e["name"].startswith(("ncclKernel_", "ncclDevKernel_"))
                   and "AllReduce" in e["name"]), key=lambda e: e["dur"])
    expect(frame.locator("#timeline-details")).to_contain_text(slowest["name"], timeout=T)
    expect(frame.locator("#timeline-slice-table")).to_contain_text(f"{slowest['dur']:,.1f}")
    assert errors == []


def test_ascend_timeline(page, url, logdir, errors):
    frame, canvas = open_timeline(page, url, "ascend")
    with open(next((logdir / "ascend").rglob("trace_view.json"))) as f:
        raw = json.load(f)
    kernels = [e for e in raw if e.get("ph") == "X" and "MatMul" in e.get("name", "")]
    frame.locator("#timeline-search").fill("MatMul")
    frame.locator("#timeline-search").press("Enter")
    expect(frame.locator("#timeline-details")).to_contain_text("MatMul", timeout=T)
    assert int(frame.locator("#timeline-search-count").get_attribute("data-count")) >= 1 and kernels
    before = span(canvas)
    canvas.focus()
    page.keyboard.press("0")  # the whole window
    after = wait_change(canvas, before)
    assert after[1] - after[0] > before[1] - before[0]
    frame.locator("#timeline-fit").click()  # the selected slice again
    fitted = wait_change(canvas, after)
    assert fitted[1] - fitted[0] < after[1] - after[0]
    # the first deep track folds to its top row from its label, and opens again; the tracks are drawn
    # device streams first, then host threads, then the Python stacks folded (read from the route here)
    tracks = page.request.get(f"{url}/data/plugin/canning/timeline_tracks?run=ascend&worker=rank0&window=default").json()["tracks"]
    order = sorted(tracks, key=lambda t: ["device", "host", "python"].index(t["kind"]))  # stable: file order within a kind
    above = 0
    for track in order:
        if len(track["rows"]) > 1:
            break
        above += 1
    assert track["kind"] == "device", track
    lanes = int(canvas.get_attribute("data-lanes"))
    y = 24 + 17 + 17 * above + 8  # the ruler, the steps, the one-row tracks above, then the track's label
    canvas.click(position={"x": 40, "y": y})
    expect(canvas).not_to_have_attribute("data-lanes", str(lanes))
    assert int(canvas.get_attribute("data-lanes")) < lanes
    canvas.click(position={"x": 40, "y": y})
    expect(canvas).to_have_attribute("data-lanes", str(lanes))
    # the NPU counters: AI Core Freq, HBM, LLC and NPU MEM open at first (the raw file's series), the
    # PMU / QoS / SoC levels folded; a group's label opens it
    series = {(e["name"], e["args"].get("acc_id")) for e in raw if e.get("ph") == "C"}
    physical = {name for name, _ in series if name.startswith(("AI Core Freq", "HBM", "LLC", "APP/", "Device/"))}
    expect(canvas).to_have_attribute("data-npu-lanes", str(len(physical)))
    frame.locator(".timeline-canvas-wrap").evaluate("el => { el.scrollTop = el.scrollHeight; }")
    expect(canvas).not_to_have_attribute("data-group-y", "-1")
    lanes = int(canvas.get_attribute("data-lanes"))
    canvas.click(position={"x": 40, "y": int(canvas.get_attribute("data-group-y"))})
    expect(canvas).not_to_have_attribute("data-lanes", str(lanes))
    shot(page, "timeline-ascend")
    assert errors == []


def test_follow_a_flow_from_a_launch_to_its_kernel(page, url, logdir, errors):
    frame, canvas = open_timeline(page, url, "dlrm", DLRM_WORKER, DLRM_WINDOW)
    raw = raw_events(logdir / "dlrm" / f"{DLRM_WORKER}.{DLRM_WINDOW}.pt.trace.json.gz")
    kernels = {e["args"]["correlation"]: e for e in raw if e.get("ph") == "X" and e.get("cat") == "kernel"}
    launches = sorted((e for e in raw if e.get("ph") == "X" and e["name"] == "cudaLaunchKernel"
                       and e["args"].get("correlation") in kernels), key=lambda e: e["ts"])
    frame.locator("#timeline-search").fill("cudaLaunchKernel")
    frame.locator("#timeline-search").press("Enter")
    details = frame.locator("#timeline-details")
    expect(details).to_contain_text("cudaLaunchKernel", timeout=T)
    kernel = kernels[launches[0]["args"]["correlation"]]  # the first launch by start: search's first match
    link = frame.locator("#timeline-links button", has_text=kernel["name"][:40]).first
    expect(link).to_be_visible(timeout=T)
    launch_event = details.get_attribute("data-event")
    link.click()
    expect(details).not_to_have_attribute("data-event", launch_event, timeout=T)
    expect(frame.locator("#timeline-slice-table")).to_contain_text(f"{kernel['dur']:,.1f}")
    # every arg the file holds for it, as written (read from the file in the background)
    raw_args = frame.locator("#timeline-raw-args")
    expect(raw_args).to_contain_text("registers per thread", timeout=T)
    expect(raw_args).to_contain_text(json.dumps(kernel["args"]["grid"]).replace(" ", ""))
    # and back: the kernel's links hold its launch
    expect(frame.locator(f'#timeline-links button[data-event="{launch_event}"]')).to_have_count(1)
    assert errors == []


def test_demo_two_ranks_side_by_side_with_the_last_to_arrive(page, url, logdir, errors):
    first = sorted((logdir / "demo").glob("rank0.*.pt.trace.json.gz"))[0].name
    worker, window = re.match(r"^(.+?)\.(\d+)\.pt\.trace\.json\.gz$", first).groups()
    frame, canvas = open_timeline(page, url, "demo", worker, window)
    frame.locator("#timeline-ranks").check()
    expect(canvas).to_have_attribute("data-ranks", "2", timeout=T)
    expect(canvas).not_to_have_attribute("data-items", "0", timeout=T)
    frame.locator("#timeline-align").select_option("step")
    # the first window of each rank: its first all-reduce, and which rank started it last (raw files)
    starts = {}
    for path in sorted((logdir / "demo").glob("*.pt.trace.json.gz")):
        with gzip.open(path, "rt") as f:
            doc = json.load(f)
        if doc["distributedInfo"]["rank"] in starts:
            continue  # the second window of that rank
        calls = sorted(e["ts"] for e in doc["traceEvents"] if e.get("ph") == "X" and e["name"] == DEMO_COLLECTIVE)
        starts[doc["distributedInfo"]["rank"]] = calls[0]
    assert sorted(starts) == [0, 1]
    frame.locator("#timeline-search").fill(DEMO_COLLECTIVE)
    frame.locator("#timeline-search").press("Enter")
    expect(frame.locator("#timeline-details")).to_contain_text(DEMO_COLLECTIVE, timeout=T)
    expect(frame.locator("#timeline-peers li")).to_have_count(2, timeout=T)
    expect(frame.locator("#timeline-peers .last")).to_have_attribute("data-rank", str(max(starts, key=starts.get)))
    shot(page, "timeline-demo")
    assert errors == []
