"""The critical path across ranks on the Timeline, in real Chromium on a real TensorBoard, on two real multi-rank
runs: DLRM (8 NCCL ranks, tests/fixtures/param/dlrm_8ranks) and a 2-rank gloo job whose rank 1 works 30 ms more
per step (the lab's slow_rank job, tests/_lab_job.py).

With All ranks on and the Critical path control "across ranks", each hop of the step's path is drawn on the Steps
lane of the rank /critical_path_ranks names, at that hop's times plus the rank's shift, where the shift is computed
here from /timeline_ranks' window starts (on the clock) and, aligned on the collectives, less the route's clock
offsets; aligned so, each hand-off is vertical (a hop ends where the next, on another rank, starts). The drawn hops
are read from the canvas' data-xpath (axis ns and canvas x) and its data-shown (each lane's canvas y); the list of
hops under the toolbar names each hop; the state lives in the URL and survives a reload."""
import json
import shutil
import time

import pytest
from playwright.sync_api import expect

from _lab import PAIRS, run_job
from _tb import FRAME, T, open_window, plugin_json, serve, shot
from conftest import fixture_path

pytestmark = pytest.mark.browser
GUTTER = 200  # the canvas' label column (timeline_draw.ts): the axis starts there
DLRM = ("dlrm", "worker0_step_12", "1694128201545")


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("xpath_logdir")
    shutil.copytree(fixture_path("param", "dlrm_8ranks"), root / "dlrm")
    job = tmp_path_factory.mktemp("xpath_gloo")
    run_job(PAIRS["slow_rank"], "before", job, report=False)
    shutil.copytree(job / "run", root / "gloo")
    return root


@pytest.fixture(scope="module")
def url(logdir, tmp_path_factory):
    yield from serve(logdir, tmp_path_factory)


route = plugin_json


def ready_path(url, run, worker, window):
    """/critical_path_ranks once the ranks are digested."""
    page = route(url, "critical_path_ranks", run=run, worker=worker, window=window, limit=200)
    for _ in range(120):
        if not page.get("loading"):
            return page
        time.sleep(1)
        page = route(url, "critical_path_ranks", run=run, worker=worker, window=window, limit=200)
    raise AssertionError(f"{run}: the ranks were never digested")


def shown_ms(ns: int) -> str:
    """ns as the page writes ms (Intl.NumberFormat, 3 decimals): the exact decimal of ns / 10^6 rounded half away from
    zero (15,041,500 ns is 15.042 ms; a float's format gives 15.041, from 15.0414999... in binary)."""
    from decimal import ROUND_HALF_UP, Decimal
    value = (Decimal(ns) / Decimal(10 ** 6)).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP)
    return f"{value:,}".replace("-", "−")


def expected_shifts(url, run, worker, window, path, align):
    """{rank: ns added to its window-relative times}: its window start against the selected one's, less (aligned on
    the collectives) its clock offset against the selected one's."""
    starts = {(r["worker"], r["window"]): r["start_ns"] for r in route(url, "timeline_ranks", run=run, worker=worker, window=window)["ranks"]}
    offsets = {o["rank"]: o for o in path["clock_offsets"]}
    ref = next(o for o in offsets.values() if (o["worker"], o["window"]) == (worker, window))
    off = (lambda o: o["offset_ns"]) if align == "collectives" else (lambda o: 0)
    return {rank: starts[(o["worker"], o["window"])] - starts[(worker, window)] - (off(o) - off(ref)) for rank, o in offsets.items()}


def steps_lanes(canvas):
    """{rank: canvas y of its Steps lane's middle}, from the lanes in sight (each rank's header, then its Steps)."""
    parts = [p.rsplit("@", 1) for p in canvas.get_attribute("data-shown").split("|")]
    out = {}
    for (label, _), (nxt, y) in zip(parts, parts[1:]):
        if label.startswith("rank ") and nxt.startswith("Steps"):
            out[int(label.split()[1])] = int(y)
    return out


def check_drawn(canvas, step, shift):
    drawn = json.loads(canvas.get_attribute("data-xpath"))
    hops = step["hops"]
    assert [(d["rank"], d["what"]) for d in drawn] == [(h["rank"], h["what"]) for h in hops]
    lo, hi = int(canvas.get_attribute("data-lo")), int(canvas.get_attribute("data-hi"))
    width = canvas.bounding_box()["width"] - GUTTER
    lanes = steps_lanes(canvas)
    assert set(lanes) >= {h["rank"] for h in hops}
    for d, h in zip(drawn, hops):
        assert abs(d["from"] - (h["start_ns"] + shift[h["rank"]])) <= 1 and abs(d["to"] - (h["end_ns"] + shift[h["rank"]])) <= 1
        assert abs(d["x0"] - (GUTTER + (h["start_ns"] + shift[h["rank"]] - lo) / (hi - lo) * width)) <= 1.5
        assert d["y"] == lanes[h["rank"]]
    return drawn


def open_ranks_path(page, url, run, worker, window, align):
    frame = open_window(page, url, run, worker, window, "timeline")
    frame.locator("#timeline-ranks").check()
    canvas = frame.locator("#timeline-canvas")
    expect(canvas).not_to_have_attribute("data-ranks", "1", timeout=T)
    frame.locator("#timeline-track-filter").fill("no track holds this")  # each rank's header and Steps, all in sight
    if align != "clock":
        frame.locator("#timeline-align").select_option(align)
    frame.locator("#timeline-path-scope").select_option("ranks")
    expect(frame.locator("#timeline-path")).to_be_enabled(timeout=T)
    frame.locator("#timeline-path").check()
    expect(canvas).not_to_have_attribute("data-path", "0", timeout=T)
    return frame, canvas


def check_run(page, url, run, worker, window):
    path = ready_path(url, run, worker, window)
    step = path["steps"][0]
    assert step["hops"] and step["hops_total"] == len(step["hops"])
    frame, canvas = open_ranks_path(page, url, run, worker, window, "clock")
    check_drawn(canvas, step, expected_shifts(url, run, worker, window, path, "clock"))
    hash_ = page.evaluate("location.hash")
    assert "p.canning.tl.pathranks=true" in hash_ and f"p.canning.tl.path={step['step']}" in hash_
    items = frame.locator("#timeline-xpath-hops li")
    expect(items).to_have_count(len(step["hops"]))
    for i, h in enumerate(step["hops"]):
        text = (f"waits for rank {h['waited_for']}" if h["what"] == "transfer" else f"rank {h['rank']} working")
        expect(items.nth(i)).to_contain_text(text)
        # its times on its rank's clock, signed (the step may begin before this rank's window)
        start, end = (shown_ms(h[k]) for k in ("start_ns", "end_ns"))
        expect(items.nth(i)).to_contain_text(f"from {start} to {end} ms on rank {h['rank']}'s clock")
    expect(frame.locator("#timeline-xpath-note")).to_contain_text("on the clock as recorded")
    # aligned on the collectives: the path's offsets applied, every hand-off vertical
    frame.locator("#timeline-align").select_option("collectives")
    expect(frame.locator("#timeline-xpath-note")).to_contain_text("aligned on the collectives", timeout=T)
    shift = expected_shifts(url, run, worker, window, path, "collectives")
    page.wait_for_function("([el, want]) => el.dataset.shifts === want", arg=[
        canvas.element_handle(), ",".join(f"{r}:{shift[r]}" for r in sorted(shift))], timeout=T)
    drawn = check_drawn(canvas, step, shift)
    handoffs = [(a, b) for a, b in zip(drawn, drawn[1:]) if a["rank"] != b["rank"]]
    for a, b in handoffs:
        assert abs(a["to"] - b["from"]) <= 1 and abs(a["x1"] - b["x0"]) <= 0.2
    shot(page, f"timeline_xpath_{run}")
    page.reload()
    frame = page.frame_locator(FRAME)
    expect(frame.locator("#canning-root")).to_have_attribute("data-state", "loaded", timeout=T)
    canvas = frame.locator("#timeline-canvas")
    expect(canvas).not_to_have_attribute("data-path", "0", timeout=T)
    expect(frame.locator("#timeline-path-scope")).to_have_value("ranks")
    assert json.loads(canvas.get_attribute("data-xpath")) == drawn
    # a hop of the list zooms onto it
    lo, hi = int(canvas.get_attribute("data-lo")), int(canvas.get_attribute("data-hi"))
    longest = max(range(len(drawn)), key=lambda i: drawn[i]["to"] - drawn[i]["from"])
    frame.locator(f"#timeline-xpath-{longest} button").click()
    page.wait_for_function("([el, lo, hi]) => el.dataset.lo !== lo || el.dataset.hi !== hi",
                           arg=[canvas.element_handle(), str(lo), str(hi)], timeout=T)
    lo, hi = int(canvas.get_attribute("data-lo")), int(canvas.get_attribute("data-hi"))
    d = drawn[longest]
    assert lo <= d["from"] and d["to"] <= hi and hi - lo <= 1.25 * (d["to"] - d["from"])
    return step, handoffs


def test_dlrm_path_across_8_nccl_ranks(page, url, errors):
    step, handoffs = check_run(page, url, *DLRM)
    assert handoffs  # DLRM's path passes from rank to rank at its collectives
    assert not errors, errors


def test_gloo_path_held_by_the_slowed_rank(page, url, logdir, errors):
    worker, window = sorted(p.name.split(".")[:2] for p in (logdir / "gloo").glob("*.pt.trace.json*"))[0]
    step, _ = check_run(page, url, "gloo", worker, window)
    assert step["held_by"] == 1  # the job's rank 1 works 30 ms more per step: the others wait for it
    assert not errors, errors
