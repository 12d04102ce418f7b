"""The Overview, Kernels, Memory and Communication views in a real TensorBoard, driven by real
Chromium, checked against an independent reading of the raw fixture files (json / csv here,
never the analysis code). Saves docs/screenshots/{overview,run-overview,kernels,memory,communication}.png
(communication on the 8-rank DLRM run).
"""
import collections
import gzip
import json
import shutil

import pytest
from playwright.sync_api import expect

from _tb import T, copy_resnet, open_plugin, serve, shot
from conftest import fixture_path
from test_plugin_routes import RESNET_WINDOW

pytestmark = pytest.mark.browser

RESNET_TRACE = f"worker0.{RESNET_WINDOW}.pt.trace.json.gz"
DLRM_WORKER, DLRM_WINDOW = "worker0_step_12", "1694128201545"


def dlrm_truth(logdir):
    """{rank: (mean ProfilerStep# duration µs, {collective kind: NCCL kernels})} from the raw traces."""
    out = {}
    for p in sorted((logdir / "dlrm").glob("*.pt.trace.json.gz")):
        with gzip.open(p, "rt") as f:
            doc = json.load(f)
        ev = doc["traceEvents"]
        steps = [e["dur"] for e in ev if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")]
        kernels = collections.Counter(
            "AllReduce" if "AllReduce" in e["name"] else "AllToAll"
            for e in ev if e.get("cat") == "kernel" and e.get("name", "").startswith(("ncclKernel_", "ncclDevKernel_")))
        out[doc["distributedInfo"]["rank"]] = (sum(steps) / len(steps), kernels)
    return out


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("views_logdir")
    copy_resnet(root / "resnet")
    shutil.copytree(fixture_path("ascend", "level1"), root / "ascend")
    shutil.copytree(fixture_path("param", "dlrm_8ranks"), root / "dlrm")
    return root


@pytest.fixture(scope="module")
def url(logdir, tmp_path_factory):
    yield from serve(logdir, tmp_path_factory)


@pytest.fixture(scope="module")
def raw(logdir):
    with gzip.open(logdir / "resnet" / RESNET_TRACE, "rt") as f:
        return json.load(f)["traceEvents"]


def open_view(page, url, run, worker, window, view):
    frame = open_plugin(page, url)
    expect(frame.locator("#run-select option")).to_have_count(3, timeout=T)
    frame.locator("#run-select").select_option(run)
    frame.locator("#worker-select").select_option(worker)
    frame.locator("#window-select").select_option(window)
    frame.locator(f"#tab-{view}").click()
    expect(frame.locator(f"#tab-{view}")).to_have_attribute("aria-selected", "true")
    expect(frame.locator("#view")).to_have_attribute("data-view", view)
    return frame


def loaded(frame):
    expect(frame.locator("#canning-root")).to_have_attribute("data-state", "loaded", timeout=T)


def test_overview(page, url, raw, errors):
    steps = [e for e in raw if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")]
    frame = open_view(page, url, "resnet", "worker0", RESNET_WINDOW, "overview")
    loaded(frame)
    expect(frame.locator("#ov-steps-chart")).to_have_attribute("data-steps", str(len(steps)))
    perf = frame.locator("#ov-perf")
    expect(perf.locator("tr", has_text="Steps").locator("td")).to_have_text(str(len(steps)))
    expect(perf).to_contain_text("Total step time (ms)")
    expect(perf).to_contain_text("Memory peak, cuda:0")
    expect(frame.locator("#ov-avg thead th")).to_have_text(["Category", "Time (ms)", "Share (%)"])
    expect(frame.locator("#ov-avg tbody tr")).to_have_count(11)  # 10 categories + the step
    expect(frame.locator("#ov-avg tbody tr", has_text="Device wait")).to_have_count(1)
    expect(frame.locator("#ov-suggestions li").first).to_be_visible()
    expect(frame.locator("#ov-devices")).to_contain_text("Tesla V100")
    # the summary shows /overview's figures as the route sends them (the steps and their total
    # also summed here from the route's steps: a step ends with its device work, not its host range)
    overview = page.request.get(f"{url}/data/plugin/canning/overview?run=resnet&worker=worker0&window={RESNET_WINDOW}").json()
    figures = overview["figures"]
    assert figures["steps"] == len(steps) and figures["total_step_ns"] == sum(s["dur_ns"] for s in overview["steps"])
    expected = {
        "Steps": f"{figures['steps']:,}",
        "Total step time (ms)": f"{figures['total_step_ns'] / 1e6:,.3f}",
        "Average step time (ms)": f"{figures['average_step_ns'] / 1e6:,.3f}",
        "Device compute share (%)": f"{100 * figures['compute_share']:.1f}",
        "Communication not hidden (%)": f"{100 * figures['comm_not_hidden_share']:.1f}",
        "DataLoader share (%)": f"{100 * figures['dataloader_share']:.1f}",
    }
    top = figures["slowest_op"]
    expected["Slowest operator (by device self time)"] = f"{top['name']}: {top['ns'] / 1e6:,.3f} ms, {100 * top['share']:.1f}%"
    (mem,) = [m for m in figures["memory"] if m["device"] == "cuda:0"]
    assert mem["capacity_bytes"] > 0
    for label, value in expected.items():
        expect(perf.locator("tr", has=frame.locator(f'th:text-is("{label}")')).locator("td")).to_have_text(value)
    expect(perf.locator("tr", has_text="Memory peak, cuda:0").locator("td")).to_contain_text(
        f"({100 * mem['peak_bytes'] / mem['capacity_bytes']:.1f}%)")
    # the last step drains the device backlog at the window's end: the route flags it, the view says
    # it is left out of the average and marks it on the chart
    last = max(int(e["name"].split("#")[1]) for e in steps)
    assert [x["number"] for x in overview["steps"] if x["distorted"]] == [last]
    title = frame.locator("section.card", has=frame.locator("#ov-steps-chart")).locator("h3")
    expect(title).to_contain_text(f"the average leaves out #{last}, distorted by the window's end")
    # the Data panel: the file read, and where the steps come from
    expect(frame.locator("#ov-data-files li")).to_have_count(1)
    expect(frame.locator("#ov-data-figures li[data-figure=steps]")).to_have_text("steps from trace")
    # the breakdown's shares are the route's (analysis computed them; the view divides nothing)
    for label, key in (("Compute", "compute"), ("DataLoader", "dataloader"), ("Memcpy", "memcpy")):
        cells = frame.locator("#ov-avg tbody tr", has=frame.locator(f'td:text-is("{label}")')).locator("td")
        expect(cells.nth(2)).to_have_text(f"{100 * figures['average_shares'][key]:.1f}")
    # the trends of the worker's windows (one per trace file of the fixture), drawn by ECharts
    windows = len(list(fixture_path("kineto", "resnet50_v100").glob("*.pt.trace.json.gz")))
    expect(frame.locator("#ov-trends")).to_have_attribute("data-state", "loaded", timeout=T)
    expect(frame.locator("#ov-trends-chart")).to_have_attribute("data-windows", str(windows))
    expect(frame.locator("#ov-trend-figure")).to_have_value("step_time_ms")
    expect(frame.locator("#ov-trends-chart svg path").first).to_be_attached()
    shot(page, "overview")
    assert not errors, errors


def test_kernels(page, url, raw, errors):
    total = collections.Counter()
    calls = collections.Counter()
    for e in raw:
        if e.get("cat") in ("Kernel", "kernel") and e.get("ph") == "X":
            total[e["name"]] += e["dur"]
            calls[e["name"]] += 1
    (top, top_us), = total.most_common(1)
    frame = open_view(page, url, "resnet", "worker0", RESNET_WINDOW, "kernels")
    loaded(frame)
    table = frame.locator("#kernel-table")
    expect(table.locator("thead th")).to_have_text(
        ["Name", "Calls", "Total (µs) ▼", "Mean (µs)", "Min (µs)", "Max (µs)", "Device time (%)", "Tensor Cores", "Mean Blocks",
         "Mean Blocks per SM", "Mean Est. Achieved Occupancy (%)", "Registers per Thread", "Shared Memory (bytes)"])
    # the work columns (efficiency) in a table of their own; GFLOP and FLOP/byte in the Roofline view
    expect(frame.locator("#kernel-work-table thead th")).to_have_text(
        ["Name", "Calls", "Total (µs) ▼", "TFLOP/s", "GB/s", "Roof (%)"])
    first = table.locator("tbody tr").first.locator("td")
    expect(first.nth(0)).to_have_text(top)
    expect(first.nth(1)).to_have_text(f"{calls[top]:,}")
    expect(first.nth(2)).to_have_text(f"{top_us:,.1f}")
    expect(first.nth(6)).to_have_text(f"{100 * top_us / sum(total.values()):.1f}")
    expect(frame.locator("#kernel-count")).to_have_text(f"{len(total)} kernels")
    expect(frame.locator("#kernel-top-chart")).to_have_attribute("data-items", "10")
    shot(page, "kernels")
    frame.locator("#kernel-search").fill("GEMM")
    shown = table.locator("tbody td.name").all_inner_texts()
    assert shown and all("gemm" in n.lower() for n in shown)
    frame.locator("#kernel-search").fill("")
    frame.locator("#kernel-group").select_option("op")
    expect(table.locator('th[data-key="op_name"]')).to_be_visible()
    # Ascend: accelerator cores instead of Tensor Cores
    frame.locator("#run-select").select_option("ascend")
    loaded(frame)
    expect(table.locator('th[data-key="core"]')).to_be_visible()
    expect(frame.locator("#kernel-core-chart")).not_to_have_attribute("data-items", "0")
    assert not errors, errors


def drag_across(page, chart, start, end):
    """Drags the mouse across the chart from `start` to `end` (fractions of its width)."""
    box = chart.bounding_box()
    y = box["y"] + box["height"] * 0.45
    page.mouse.move(box["x"] + box["width"] * start, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * (start + end) / 2, y, steps=8)
    page.mouse.move(box["x"] + box["width"] * end, y, steps=8)
    page.mouse.up()
    return box


def check_range_operators(page, frame, url, events, lo, hi):
    """The operators of the selected range are /memory_range's rows, whose allocations are
    counted here too from /memory's events."""
    answer = page.request.get(f"{url}/data/plugin/canning/memory_range?run=ascend&worker=rank0&window=default"
                              f"&device=npu:0&start_ns={lo}&end_ns={hi}").json()
    by_op = collections.Counter(e["op"] for e in events if e["alloc_ns"] >= 0 and lo <= e["alloc_ns"] <= hi)
    assert {o["name"]: o["allocations"] for o in answer["ops"]} == by_op
    ops = frame.locator("#mem-ops tbody tr")
    expect(ops).to_have_count(len(answer["ops"]))
    cells = [ops.nth(i).locator("td") for i in range(ops.count())]
    assert {c.nth(0).inner_text(): int(c.nth(1).inner_text().replace(",", "")) for c in cells} == by_op


def test_memory(page, url, raw, errors):
    # peak allocated on cuda:0 = the highest running sum of the [memory] events' Bytes (2021 Kineto
    # has no "Total Allocated")
    cur = peak = 0
    for e in sorted((e for e in raw if e.get("name") == "[memory]"), key=lambda e: e["ts"]):
        if e["args"].get("Device Type") == 1:
            cur += e["args"]["Bytes"]
            peak = max(peak, cur)
    frame = open_view(page, url, "resnet", "worker0", RESNET_WINDOW, "memory")
    loaded(frame)
    expect(frame.locator("#mem-device")).to_have_value("cuda:0")
    summary = frame.locator("#mem-summary")
    expect(summary.locator("tr", has_text="Peak allocated (MB)").locator("td")).to_have_text(f"{peak / 2**20:,.1f}")
    expect(summary.locator("tr", has_text="Capacity (MB)").locator("td")).not_to_have_text("–")
    expect(frame.locator("#mem-window-ops tbody tr").first).to_be_visible()
    # the 2021 file records no reserved memory (no "Total Reserved" arg): unknown, not a flat 0 line
    assert not any("Total Reserved" in e.get("args", {}) for e in raw if e.get("name") == "[memory]")
    expect(frame.locator("#mem-chart")).to_have_attribute("data-series", "Allocated")
    expect(summary.locator("tr", has_text="Peak reserved (MB)").locator("td")).to_have_text("–")
    assert "not recorded" in summary.locator("tr", has_text="Peak reserved (MB)").locator("th").get_attribute("title").lower()
    # it has memory (profile_memory=True) but no allocation addresses: the range tables say so
    drag_across(page, frame.locator("#mem-chart"), 0.3, 0.6)
    expect(frame.locator("#mem-range")).to_contain_text("Range", timeout=10_000)
    expect(frame.locator("#mem-events")).to_contain_text("no allocation events with addresses")
    expect(frame.locator("#mem-events")).not_to_contain_text("profile_memory=True")
    # Ascend rank 0: allocation events follow the zoomed range
    frame.locator("#run-select").select_option("ascend")
    loaded(frame)
    expect(frame.locator("#mem-device")).to_have_value("npu:0")
    expect(frame.locator("#mem-chart")).to_have_attribute("data-series", "Allocated,Reserved,Active")
    count = frame.locator("#mem-event-count")
    expect(count).to_contain_text(" events")
    n_all = int(count.inner_text().split(" of ")[1].split()[0].replace(",", ""))
    assert n_all > 0
    expect(frame.locator("#mem-components tbody tr").first).to_be_visible()
    # drag across the chart selects a time range; the events table follows it
    events = [e for d in page.request.get(f"{url}/data/plugin/canning/memory?run=ascend&worker=rank0&window=default")
              .json()["devices"] if d["device"] == "npu:0" for e in d["events"]]
    assert len(events) == n_all
    box = drag_across(page, frame.locator("#mem-chart"), 0.35, 0.6)
    rng = frame.locator("#mem-range")
    expect(rng).to_contain_text("Range", timeout=10_000)
    lo_ms, hi_ms = (float(x.replace(",", "")) for x in rng.inner_text().removeprefix("Range ").removesuffix(" ms").split(" – "))
    lo, hi = round(lo_ms * 1e6), round(hi_ms * 1e6)
    in_range = sum(1 for e in events if e["alloc_ns"] >= 0 and lo <= e["alloc_ns"] <= hi)
    expect(count).to_have_text(f"{in_range:,} of {n_all:,} events", timeout=10_000)
    assert 0 < in_range < n_all, (lo, hi, in_range, n_all)
    expect(frame.locator("#mem-events tbody tr")).to_have_count(in_range if in_range <= 2000 else 2001)
    check_range_operators(page, frame, url, events, lo, hi)
    shot(page, "memory")
    frame.locator("#mem-reset").click()
    expect(rng).to_contain_text("Whole window")
    expect(count).to_have_text(f"{n_all:,} of {n_all:,} events")
    # zooming with the wheel narrows the tables too
    page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] * 0.5)
    for _ in range(4):
        page.mouse.wheel(0, -400)
    expect(rng).to_contain_text("Range", timeout=10_000)
    expect(count).not_to_have_text(f"{n_all:,} of {n_all:,} events")
    assert not errors, errors


def _total_links(logdir, rank: int) -> list[str]:
    """The "src-dst" keys of a rank's CANN sums over the step (communication_matrix.json read again)."""
    path = next((logdir / "ascend").glob(f"rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/communication_matrix.json"))
    return [pair for kinds in json.loads(path.read_text()).values() for ops in kinds.values()
            for key, cells in ops.items() if key.split("@")[0].endswith("-total") for pair in cells]


def test_communication(page, url, logdir, errors):
    ranks = sorted(int(p.stem.rsplit("_", 1)[1]) for p in logdir.glob("ascend/*_ascend_pt/profiler_info_*.json"))
    assert ranks == [0, 1]
    frame = open_view(page, url, "ascend", "rank0", "default", "communication")
    loaded(frame)
    expect(frame.locator("#comm-ranks")).to_contain_text("Ranks: 0, 1")
    expect(frame.locator("#comm-rank-chart")).to_have_attribute("data-ranks", "2")
    expect(frame.locator("#comm-table tbody tr").first.locator("td").first).to_have_text("AllReduce")
    expect(frame.locator("#comm-table thead th")).to_contain_text(["Bandwidth (GB/s)"])
    slow = frame.locator("#comm-slow li")
    expect(slow).to_have_count(3)
    for i in range(3):  # the rank a finding names, -1 where the findings name none (a spread alone paints none)
        assert slow.nth(i).get_attribute("data-rank") in ("0", "1", "-1")
    expect(frame.locator("#comm-matrix")).to_be_visible()
    # the matrix in global ranks: the two ranks' links to each other and themselves; the links to the
    # members 2..7 of their 8-member communicator (no file here maps them) counted apart, not on a rank
    expect(frame.locator("#comm-links tbody tr")).to_have_count(4)
    outside = sum(1 for r in ranks for pair in _total_links(logdir, r) if int(pair.split("-")[1]) not in ranks)
    expect(frame.locator("#comm-unmapped")).to_contain_text(f"{outside} links")
    expect(frame.locator("#comm-groups li")).to_have_count(1)
    expect(frame.locator("#comm-sources")).to_contain_text("Wait and transfer from communication.json (rank 0, 1)")
    # a single-GPU run explains why there is nothing to show
    frame.locator("#run-select").select_option("resnet")
    expect(frame.locator("#canning-root")).to_have_attribute("data-state", "empty", timeout=T)
    expect(frame.locator("#view-empty")).to_contain_text("No communication in this window")
    assert not errors, errors


def test_overview_of_the_whole_run(page, url, logdir, errors):
    truth = dlrm_truth(logdir)
    frame = open_view(page, url, "dlrm", DLRM_WORKER, DLRM_WINDOW, "overview")
    card_ = frame.locator("#ov-run-card")
    expect(card_).to_have_attribute("data-state", "loaded", timeout=T)
    expect(card_.locator("h3")).to_have_text("Run overview (all ranks, window 1)")
    rows = frame.locator("#ov-run tbody tr")
    expect(rows).to_have_count(9)  # 8 ranks + the whole run
    expect(frame.locator("#ov-run thead th")).to_have_text(
        ["Rank", "Worker", "Step time avg (ms)", "Compute share (%)", "Communication not hidden (%)", "Memory peak", "Slowest operator"])
    for rank in range(8):
        cells = rows.nth(rank).locator("td")
        expect(cells.nth(0)).to_have_text(str(rank))
        expect(cells.nth(2)).to_have_text(f"{truth[rank][0] / 1000:,.3f}")
    steps = [truth[r][0] / 1000 for r in range(8)]
    whole = rows.nth(8).locator("td")
    expect(whole.nth(0)).to_have_text("All 8 ranks")
    expect(whole.nth(2)).to_have_text(f"{min(steps):,.3f} – {max(steps):,.3f}")
    loaded(frame)
    expect(frame.locator("#ov-perf")).to_be_visible()  # the window's own overview below
    shot(page, "run-overview")
    # a run of one worker has no run table
    frame.locator("#run-select").select_option("resnet")
    loaded(frame)
    expect(frame.locator("#ov-perf")).to_be_visible()
    expect(frame.locator("#ov-run-card")).to_have_count(0)
    assert not errors, errors


def test_communication_of_eight_ranks(page, url, logdir, errors):
    truth = dlrm_truth(logdir)
    frame = open_view(page, url, "dlrm", DLRM_WORKER, DLRM_WINDOW, "communication")
    loaded(frame)
    expect(frame.locator("#comm-ranks")).to_contain_text("Ranks: 0, 1, 2, 3, 4, 5, 6, 7")
    expect(frame.locator("#comm-rank-chart")).to_have_attribute("data-ranks", "8")
    expect(frame.locator("#comm-rank-table tbody tr")).to_have_count(8)
    # this rank's collectives: calls per kind as the raw trace's NCCL kernels
    table = frame.locator("#comm-table tbody tr")
    got = {table.nth(i).locator("td").nth(0).inner_text(): int(table.nth(i).locator("td").nth(2).inner_text())
           for i in range(table.count())}
    assert got == dict(truth[0][1])
    expect(frame.locator("#comm-slow li")).to_have_count(3)
    shot(page, "communication")
    assert not errors, errors


def test_reload_restores_the_view_and_the_selection(page, url, errors):
    """The app state lives in TensorBoard's URL (#canning&p.canning.<key>=...): a reload (or the
    link opened again) shows the same run, worker, window, view, options and memory range."""
    frame = open_view(page, url, "ascend", "rank1", "default", "memory")
    loaded(frame)
    chart = frame.locator("#mem-chart")
    drag_across(page, chart, 0.3, 0.55)
    rng = frame.locator("#mem-range")
    expect(rng).to_contain_text("Range", timeout=10_000)
    # the range's events come by a second request: read the count once it has answered (the
    # label is set at once, the count still shows the whole window's until then)
    expect(frame.locator("#mem-event-count")).to_have_attribute("data-state", "loaded", timeout=T)
    selected, count = rng.inner_text(), frame.locator("#mem-event-count").inner_text()
    lo, hi = chart.get_attribute("data-range").split("-")
    for part in ("#canning", "p.canning.run=ascend", "p.canning.worker=rank1", "p.canning.view=memory",
                 f"p.canning.mem.range={lo}-{hi}"):
        assert part in page.url, (part, page.url)

    page.reload()
    frame = page.frame_locator('iframe[src*="plugin_entry.html?name=canning"]')
    loaded(frame)
    expect(frame.locator("#run-select")).to_have_value("ascend")
    expect(frame.locator("#worker-select")).to_have_value("rank1")
    expect(frame.locator("#tab-memory")).to_have_attribute("aria-selected", "true")
    expect(frame.locator("#mem-range")).to_have_text(selected)
    expect(frame.locator("#mem-chart")).to_have_attribute("data-range", f"{lo}-{hi}")
    expect(frame.locator("#mem-event-count")).to_have_text(count)

    # another window forgets the range; the operators' search survives a reload too
    frame.locator("#worker-select").select_option("rank0")
    expect(frame.locator("#mem-range")).to_contain_text("Whole window", timeout=T)
    assert "mem.range" not in page.url
    frame.locator("#tab-operators").click()
    loaded(frame)
    rows = page.request.get(f"{url}/data/plugin/canning/operators?run=ascend&worker=rank0&window=default").json()["rows"]
    term = rows[0]["name"]
    matching = sum(1 for r in rows if term.lower() in r["name"].lower())
    frame.locator("#op-search").fill(term)
    expect(frame.locator("#op-count")).to_have_text(f"{matching} of {len(rows)} operators match “{term}”")
    page.reload()
    frame = page.frame_locator('iframe[src*="plugin_entry.html?name=canning"]')
    loaded(frame)
    expect(frame.locator("#tab-operators")).to_have_attribute("aria-selected", "true")
    expect(frame.locator("#worker-select")).to_have_value("rank0")
    expect(frame.locator("#op-search")).to_have_value(term)
    expect(frame.locator("#op-count")).to_have_text(f"{matching} of {len(rows)} operators match “{term}”")
    assert not errors, errors


def _kv(frame, table_id):
    rows = frame.locator(f"#{table_id} tbody tr")
    return {rows.nth(i).locator("th").inner_text(): rows.nth(i).locator("td").inner_text() for i in range(rows.count())}


def test_communication_this_rank_is_the_ranks_row_and_follows_the_step(page, url, logdir, errors):
    """Ascend level1, rank 1: the "This rank" card and the ranks table show one wait / transfer, the
    one CANN measured (communication.json, read here with json); the step selector shows step 50."""
    ops = json.loads(next((logdir / "ascend").glob("rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/communication.json"))
                     .read_text())
    infos = [v["Communication Time Info"] for step in ops.values() for kind in step.values() for k, v in kind.items()
             if "@" in k and "total" not in k.split("@")[0].lower()]
    wait = sum(min(i["Wait Time(ms)"], i["Elapse Time(ms)"]) for i in infos)
    transfer = sum(min(i["Transit Time(ms)"], i["Elapse Time(ms)"] - min(i["Wait Time(ms)"], i["Elapse Time(ms)"]))
                   for i in infos)
    frame = open_view(page, url, "ascend", "rank1", "default", "communication")
    loaded(frame)
    expect(frame.locator("#comm-rank-table tbody tr")).to_have_count(2)
    # the communicator: no name in the files, the matrix links 8 ranks: that, not a 20-digit hash
    group = next(k.split("@")[-1] for step in ops.values() for kind in step.values() for k in kind if "@" in k)
    expect(frame.locator("#comm-table tbody tr").first.locator("td").nth(1)).to_have_text(f"8 ranks ({group[:4]}…{group[-4:]})")
    card = _kv(frame, "comm-summary")
    assert card["Wait (ms)"] == f"{wait:,.3f}" and card["Transfer (ms)"] == f"{transfer:,.3f}"
    row = frame.locator("#comm-rank-table tbody tr").nth(1).locator("td")
    heads = frame.locator("#comm-rank-table thead th").all_inner_texts()
    assert row.nth(heads.index("Wait (ms)")).inner_text() == card["Wait (ms)"]
    assert row.nth(heads.index("Transfer (ms)")).inner_text() == card["Transfer (ms)"]
    # every figure says how it is computed
    for th in frame.locator("#comm-summary tbody th").all():
        assert th.get_attribute("title"), th.inner_text()
    assert "shortest duration" in frame.locator("#comm-definition").inner_text()
    # one step in this window: choosing it gives the same figures, titled for the step
    frame.locator("#comm-step").select_option("50")
    expect(frame.locator("#comm-rank-chart")).to_have_attribute("data-step", "50")
    assert _kv(frame, "comm-summary")["Wait (ms)"] == card["Wait (ms)"]
    expect(frame.locator("#comm-table tbody tr")).to_have_count(1)  # AllReduce in step 50
    assert not errors, errors
