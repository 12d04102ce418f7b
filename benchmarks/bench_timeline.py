"""Timeline benchmark: index build time, tile latency while zooming and panning over HTTP against a
real TensorBoard, bytes per view, and (with --browser) in Chromium the time from opening the tab to
the first painted timeline after ingest, tile latency and bytes seen by the page while zooming and
panning, JS heap and redraw rate; every rank of a generated N-rank run on one axis; and (with
--tbprof) the same trace through torch-tb-profiler's /trace route.

    python benchmarks/bench_timeline.py [--size small|medium|long] [--trace-dir DIR] [--browser]
                                        [--ranks N | --ranks-dir RUN_WITH_RANKS] [--tbprof]

The first paint is timed on a fresh TensorBoard whose cache holds the window's digest, events and
index (as after its own prefetch), then three times more on new pages of the same TensorBoard, one of
them from the Operators view (`first_paint_again_s`). On the largest real fixture:
`--trace-dir tests/fixtures/hta/df_index_resolver --browser`.

The trace is the ingest benchmark's (make_big_trace.py: a real torch.profiler run; generated once into
benchmarks/out/<size>/run, reused after); the N-rank run is make_ranks.py's (the DLRM fixture's real
ranks copied with their rank ids changed and times shifted). Prints the figures and writes
benchmarks/out/timeline.json. Not part of `make test`.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "out")
SIZES_MB = {"small": 20, "medium": 300, "long": 1000}
WIDTH = 1600  # pixels of the data area asked for, a wide screen
LAUNCHER = "from tensorboard.main import run_main; run_main()"


def log(msg: str) -> None:
    print(f"[bench_timeline {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def ensure_trace(size: str) -> str:
    run_dir = os.path.join(OUT, size, "run")
    subprocess.run([sys.executable, os.path.join(HERE, "make_big_trace.py"), "--target-mb", str(SIZES_MB[size]),
                    "--out", run_dir], check=True)
    return run_dir


def build_figures(run_dir: str, cache_dir: str) -> dict:
    """Ingest (read + columnar cache) and the index build, timed apart, in this process."""
    from canning_tb.store.store import Store
    from canning_tb.timeline.index import build_index
    store = Store(run_dir, cache_dir=cache_dir)
    run = store.runs()[0]
    worker = store.workers(run)[0].name
    window = store.windows(run, worker)[0].id
    start = time.perf_counter()
    table = store.table(run, worker, window)
    ingest_s = time.perf_counter() - start
    start = time.perf_counter()
    index = build_index(table)
    build_s = time.perf_counter() - start
    path = os.path.join(cache_dir, "index.npz")
    index.save(path)
    return {"events": len(table), "tracks": int(len(index.track_pid)), "rows": int(len(index.row_track)),
            "ingest_s": round(ingest_s, 2), "index_build_s": round(build_s, 2),
            "index_bytes": os.path.getsize(path), "run": run, "worker": worker, "window": window}


def start_tensorboard(logdir: str, log_path: str, env: dict, python: str = sys.executable, plugin: str = "canning"):
    log_file = open(log_path, "wb")
    proc = subprocess.Popen([python, "-c", LAUNCHER, "--logdir", logdir, "--host", "127.0.0.1", "--port", "0"],
                            stdout=log_file, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with open(log_path, errors="replace") as f:
            match = re.search(r"TensorBoard \S+ at (http://127\.0\.0\.1:\d+)/", f.read())
        if match:
            return proc, match.group(1) + f"/data/plugin/{plugin}/"
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"tensorboard did not start, see {log_path}")


def fetch(base: str, route: str, **params) -> tuple[float, bytes]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    start = time.perf_counter()
    with opener.open(f"{base}{route}?{urllib.parse.urlencode(params)}", timeout=600) as resp:
        body = resp.read()
    return time.perf_counter() - start, body


def tracks_when_ready(base: str, window: dict) -> dict:
    """/timeline_tracks, asked again while the server says it is still indexing (as the browser does)."""
    while True:
        _, body = fetch(base, "timeline_tracks", **window)
        tracks = json.loads(body)
        if not tracks.get("loading"):
            return tracks
        time.sleep(0.5)


def views(duration: int, count: int = 60) -> list[tuple[int, int]]:
    """A zoom-in from the whole window to ~1/10,000 of it, with pans at each level (seeded)."""
    rng = random.Random(0)
    out, lo, hi = [], 0, duration
    for step in range(count):
        span = hi - lo
        if step % 3 == 2:  # pan by a fifth of the view, either way
            shift = int(span * 0.2 * rng.choice((-1, 1)))
            lo, hi = max(0, lo + shift), max(0, lo + shift) + span
        else:  # zoom in by 0.75 around a random point
            at = lo + rng.random() * span
            lo, hi = int(at - (at - lo) * 0.75), int(at + (hi - at) * 0.75)
        out.append((lo, max(hi, lo + 1000)))
    return out


def http_figures(base: str, names: dict) -> dict:
    window = {k: names[k] for k in ("run", "worker", "window")}
    start = time.perf_counter()
    tracks = tracks_when_ready(base, window)
    first_s = time.perf_counter() - start
    duration = tracks["duration_ns"]
    latencies, sizes = [], []
    for lo, hi in views(duration):
        took, body = fetch(base, "timeline_tile", **window, start_ns=lo, end_ns=hi, width=WIDTH)
        latencies.append(took * 1000)
        sizes.append(len(body))
    whole_s, whole = fetch(base, "timeline_tile", **window, start_ns=0, end_ns=duration, width=WIDTH)
    latencies.sort()
    return {"tracks_first_s": round(first_s, 2), "tiles": len(latencies),
            "tile_p50_ms": round(statistics.median(latencies), 1),
            "tile_p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))], 1),
            "tile_max_ms": round(latencies[-1], 1), "bytes_whole_view": len(whole),
            "bytes_per_view_max": max(sizes), "bytes_per_view_mean": int(statistics.mean(sizes))}


def ranks_figures(base: str, run: str) -> dict:
    """Every rank of the run's first window on one axis, as the browser asks for it: /timeline_ranks,
    each rank's tracks, then one whole-window tile per rank (in turn, as the HTTP figures above)."""
    start = time.perf_counter()
    _, body = fetch(base, "timeline_ranks", run=run, window_index=0)
    ranks = json.loads(body)["ranks"]
    total, slowest = 0, 0.0
    for rank in ranks:
        window = {"run": run, "worker": rank["worker"], "window": rank["window"]}
        tracks_when_ready(base, window)
        took, tile = fetch(base, "timeline_tile", **window, start_ns=0, end_ns=rank["duration_ns"], width=WIDTH)
        total += len(tile)
        slowest = max(slowest, took)
    return {"ranks": len(ranks), "ranks_first_view_s": round(time.perf_counter() - start, 2),
            "ranks_bytes_per_view": total, "ranks_slowest_tile_ms": round(slowest * 1000, 1)}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return round(ordered[int(share * (len(ordered) - 1))], 1) if ordered else 0.0


# In the plugin's frame, in ms after `t0` (the frame's clock): when the page saw the click, the requests
# made since, each as [route, start, first byte, end], and when the canvas first had items drawn.
_PARTS_JS = """(el, t0) => {
    const win = el.ownerDocument.defaultView;
    const rows = win.performance.getEntriesByType('resource').filter((e) => e.startTime >= t0)
        .map((e) => [new URL(e.name).pathname.split('/').pop(), e.startTime - t0, e.responseStart - t0, e.responseEnd - t0]);
    const clicked = el.ownerDocument.getElementById('tab-timeline').dataset.clickedAt;
    return {clicked_ms: Math.round(Number(clicked) - t0), requests: rows.map((r) => [r[0], ...r.slice(1).map((v) => Math.round(v))]),
            painted_ms: Math.round(Number(el.dataset.paintedAt || 0) - t0)};
}"""


def _open_tab(page, root_url: str, names: dict, view: str) -> tuple[object, float, dict]:
    """TensorBoard's page with the plugin on `view` (its data loaded), then the Timeline tab clicked:
    (the plugin's frame, seconds from the click to the first painted timeline, where they went: the
    frame's requests after the click, `_PARTS_JS`)."""
    state = {"run": names["run"], "worker": names["worker"], "window": names["window"], "view": view,
             **names.get("state", {})}
    hash_part = "&".join(f"p.canning.{k}={urllib.parse.quote(v, safe='')}" for k, v in state.items())
    page.goto(f"{root_url}/#canning&{hash_part}")
    frame = page.frame_locator('iframe[src*="plugin_entry.html?name=canning"]')
    frame.locator('#canning-root[data-state="loaded"]').wait_for(timeout=600_000)
    tab = frame.locator("#tab-timeline")
    # the frame's clock now, and when the page itself sees the click (Playwright's own steps before it)
    t0 = tab.evaluate("""el => { const win = el.ownerDocument.defaultView;
        el.addEventListener('click', () => { el.dataset.clickedAt = String(win.performance.now()); }, {capture: true, once: true});
        return win.performance.now(); }""")
    start = time.perf_counter()
    tab.click()
    canvas = frame.locator("#timeline-canvas")
    canvas.wait_for(timeout=600_000)
    page.wait_for_function("el => el.dataset.items && el.dataset.items !== '0'",
                           arg=canvas.element_handle(), timeout=600_000)
    took = time.perf_counter() - start
    return frame, took, canvas.evaluate(_PARTS_JS, t0)


def _zoom_and_pan(page, canvas, steps: int = 30) -> None:
    """W (zoom in) and D / A (pan) as a user presses them, each followed by the tile it asks for."""
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 80)
    for step in range(steps):
        page.keyboard.press("w" if step % 3 != 2 else ("d" if step % 2 else "a"))
        page.wait_for_timeout(250)


def _redraw_ms(canvas) -> float:
    """Mean time of a pan redraw of what is in sight (100 'd' keys dispatched at once: each redraws
    synchronously)."""
    return canvas.evaluate("""el => { const t0 = performance.now();
        for (let i = 0; i < 100; i++) el.ownerDocument.dispatchEvent(new KeyboardEvent('keydown', {key: 'd'}));
        return (performance.now() - t0) / 100; }""")


def browser_figures(root_url: str, names: dict, prefix: str = "") -> dict:
    """Chromium (Debian's), TensorBoard warm on the window (ingested, index cached on disk, not in
    memory): the plugin shown on the Overview, then the Timeline tab: first paint, then 30 zoom / pan
    keys: the page's own timings of the tile requests (Resource Timing), bytes per view, JS heap."""
    from playwright.sync_api import sync_playwright
    chromium = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
    with sync_playwright() as play:
        browser = play.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu",
                                                                        "--disable-dev-shm-usage"])
        page = browser.new_page(viewport={"width": 1900, "height": 1000})
        frame, first_paint_s, first_parts = _open_tab(page, root_url, names, "overview")
        # again on a new page of the same TensorBoard (the window's index now in its memory), and from
        # the Operators view (a user's usual way in): the tab click to the first painted timeline
        again, again_parts = [], []
        for view in ("overview", "operators", "overview"):
            other = browser.new_page(viewport={"width": 1900, "height": 1000})
            _, took, parts = _open_tab(other, root_url, names, view)
            again.append(took)
            again_parts.append(parts)
            other.close()
        canvas = frame.locator("#timeline-canvas")
        items_first = int(canvas.get_attribute("data-items"))
        redraw_ms = _redraw_ms(canvas)
        _zoom_and_pan(page, canvas)
        tiles = canvas.evaluate("""el => el.ownerDocument.defaultView.performance.getEntriesByType('resource')
            .filter(e => e.name.includes('timeline_tile')).map(e => [e.duration, e.encodedBodySize])""")
        cdp = page.context.new_cdp_session(page)
        cdp.send("HeapProfiler.collectGarbage")
        cdp.send("Performance.enable")
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        browser.close()
    return {f"{prefix}first_paint_after_tab_s": round(first_paint_s, 2),
            f"{prefix}first_paint_again_s": [round(t, 2) for t in again], f"{prefix}items_drawn": items_first,
            f"{prefix}first_paint_parts": first_parts, f"{prefix}first_paint_again_parts": again_parts,
            f"{prefix}redraw_ms": round(redraw_ms, 2), f"{prefix}redraw_fps": round(1000 / max(redraw_ms, 1e-3)),
            f"{prefix}browser_tiles": len(tiles),
            f"{prefix}browser_tile_p50_ms": percentile([t for t, _ in tiles], 0.5),
            f"{prefix}browser_tile_p95_ms": percentile([t for t, _ in tiles], 0.95),
            f"{prefix}browser_tile_bytes_max": max((b for _, b in tiles), default=0),
            f"{prefix}js_heap_mb": round(metrics.get("JSHeapUsedSize", 0) / 2**20, 1)}


def served_figures(run_dir: str, work: str, figures: dict, args) -> None:
    """The figures measured against real TensorBoards: cold (the first request reads and indexes),
    then a fresh TensorBoard on the same cache for the browser (the window ingested, as after
    TensorBoard's own prefetch)."""
    # the run folder holds links to the trace outside the logdir: the user says they may be followed
    env = dict(os.environ, CANNING_CACHE_DIR=os.path.join(work, "tb-cache"), CANNING_FOLLOW_LINKS="1")
    proc, base = start_tensorboard(run_dir, os.path.join(work, "tb.log"), env)
    try:
        log("tiles over HTTP (the first request ingests and indexes in TensorBoard)")
        figures.update(http_figures(base, figures))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    if args.browser:
        log("first paint, tiles and heap in Chromium (a fresh TensorBoard, the window ingested)")
        proc, base = start_tensorboard(run_dir, os.path.join(work, "tb-warm.log"), env)
        try:
            figures.update(browser_figures(base.split("/data/")[0], figures))
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def private_run(run_dir: str, work: str, name: str) -> str:
    """A run folder of our own holding links to the run's files: the caches TensorBoard writes beside
    a writable run (`.canning/`) land in it, never in the given folder (others may time it cold)."""
    linked = os.path.join(work, name)
    os.makedirs(linked)
    for entry in os.listdir(run_dir):
        if not entry.startswith("."):
            os.symlink(os.path.abspath(os.path.join(run_dir, entry)), os.path.join(linked, entry))
    return linked


def ranks_dir(args) -> str | None:
    if args.ranks_dir or not args.ranks:
        return args.ranks_dir
    out = os.path.join(OUT, f"ranks{args.ranks}")
    if not os.path.isdir(out):
        subprocess.run([sys.executable, os.path.join(HERE, "make_ranks.py"), "--ranks", str(args.ranks),
                        "--repeat", str(args.ranks_repeat), "--out", out], check=True)
    return out


def ranks_served(run: str, work: str, figures: dict, args) -> None:
    """Every rank of a multi-rank run on one axis: over HTTP, then (with --browser) in Chromium."""
    env = dict(os.environ, CANNING_CACHE_DIR=os.path.join(work, "tb-ranks-cache"), CANNING_FOLLOW_LINKS="1")
    proc, base = start_tensorboard(run, os.path.join(work, "tb-ranks.log"), env)
    try:
        figures.update(ranks_figures(base, "."))
        if args.browser:
            _, body = fetch(base, "timeline_ranks", run=".", window_index=0)
            first = json.loads(body)["ranks"][0]
            names = {"run": ".", "worker": first["worker"], "window": first["window"], "state": {"tl.ranks": "true"}}
            figures.update(browser_figures(base.split("/data/")[0], names, prefix="ranks_"))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES_MB), default="medium")
    parser.add_argument("--trace-dir", help="a run folder to use instead of a generated trace")
    parser.add_argument("--browser", action="store_true", help="also measure in Chromium")
    parser.add_argument("--ranks", type=int, default=0, help="generate an N-rank run (make_ranks.py) and show it")
    parser.add_argument("--ranks-repeat", type=int, default=20, help="steps per generated rank")
    parser.add_argument("--ranks-dir", help="a multi-rank run folder: every rank on one axis")
    parser.add_argument("--tbprof", action="store_true", help="also the trace through torch-tb-profiler's /trace")
    parser.add_argument("--skip-single", action="store_true", help="only the ranks / tbprof figures")
    args = parser.parse_args()
    run_dir = args.trace_dir or ensure_trace(args.size)
    if not args.trace_dir:  # our generated run: TensorBoard's cache beside it goes, so its open is cold
        shutil.rmtree(os.path.join(run_dir, ".canning"), ignore_errors=True)
    work = tempfile.mkdtemp(prefix="bench-timeline-")
    figures: dict = {"uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()}
    try:
        if not args.skip_single:
            log(f"ingest and index build of {run_dir}")
            figures.update(build_figures(run_dir, os.path.join(work, "direct")))
            served_figures(private_run(run_dir, work, "run"), work, figures, args)
        multi = ranks_dir(args)
        if multi:
            log(f"every rank of {multi}")
            ranks_served(private_run(multi, work, "ranks"), work, figures, args)
        if args.tbprof:
            from timeline_peer import tbprof_trace_figures
            log("the same trace through torch-tb-profiler's /trace")
            peer_run = private_run(run_dir, work, "tbprof-run")
            figures.update(tbprof_trace_figures(peer_run, work, start_tensorboard, fetch,
                                                os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    figures["trace_bytes"] = sum(os.path.getsize(os.path.join(run_dir, f)) for f in os.listdir(run_dir)
                                 if os.path.isfile(os.path.join(run_dir, f)))
    figures["uptime_after"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, f"timeline-{os.path.basename(os.path.dirname(run_dir))}.json"), "w") as f:
        json.dump(figures, f, indent=1)
    for key, value in figures.items():
        print(f"{key:>30}: {value}")


if __name__ == "__main__":
    main()
