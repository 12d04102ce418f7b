"""Shared by the browser tests: a real TensorBoard on a logdir and the plugin's frame in Chromium."""
import json
import os
import shutil
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

from playwright.sync_api import expect

from conftest import fixture_path
from test_plugin_routes import start_tensorboard, stop_tensorboard

# `make screenshots` sets CANNING_SCREENSHOTS=docs/screenshots; otherwise shots stay out of the tree
SHOTS = Path(os.environ.get("CANNING_SCREENSHOTS", tempfile.gettempdir()))
FRAME = 'iframe[src*="plugin_entry.html?name=canning"]'
T = 60_000  # ms: the first open of a window computes its digest


def copy_resnet(run_dir: Path) -> None:
    """The resnet50_v100 Kineto fixture as the run folder run_dir."""
    run_dir.mkdir()
    for f in sorted(fixture_path("kineto", "resnet50_v100").iterdir()):
        shutil.copy(f, run_dir / f.name)


def serve(logdir, tmp_path_factory, extra=()):
    """Body of a module fixture: TensorBoard on logdir (with `extra` flags), yields its URL, stops it afterwards."""
    proc, url, log = start_tensorboard(logdir, tmp_path_factory.mktemp("tb") / "tb.log", extra)
    try:
        yield url
    finally:
        stop_tensorboard(proc, log)


def open_plugin(page, url):
    """The plugin's frame, once its root is shown."""
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{url}/#canning")
    frame = page.frame_locator(FRAME)
    expect(frame.locator("#canning-root")).to_be_visible(timeout=T)
    return frame


def open_window(page, url, run, worker, window, tab):
    """The plugin with one of its two runs' windows picked and `tab` ("timeline", "suggestions"...) open, loaded."""
    frame = open_plugin(page, url)
    expect(frame.locator("#run-select option")).to_have_count(2, timeout=T)
    frame.locator("#run-select").select_option(run)
    frame.locator("#worker-select").select_option(worker)
    frame.locator("#window-select").select_option(window)
    frame.locator(f"#tab-{tab}").click()
    expect(frame.locator("#canning-root")).to_have_attribute("data-state", "loaded", timeout=T)
    return frame


def shot(page, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def plugin_json(url, name, **params):
    """One route of the plugin as the page asks it: GET /data/plugin/canning/<name>?<params>, JSON."""
    with urllib.request.urlopen(f"{url}/data/plugin/canning/{name}?{urllib.parse.urlencode(params)}") as r:
        return json.load(r)
