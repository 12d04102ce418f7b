"""The same trace through the PyTorch TensorBoard plugin's trace view (torch-tb-profiler 0.4.3, in its
own venv, benchmarks/.venvs/tbprof, made by bench_ingest.py): the time until TensorBoard lists the run,
the bytes its /trace route ships for the window (the whole trace, gzipped, as the browser receives
it), and whether its trace viewer page renders in Chromium on this machine (trace_embedding.html loads
the Web Components polyfill from cdnjs.cloudflare.com; without the network it cannot)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.parse


def _wait_for_run(fetch, base: str, timeout_s: float) -> tuple[str, float]:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout_s:
        _, body = fetch(base, "runs")
        answer = json.loads(body)
        if answer["runs"] and not answer["loading"]:
            return answer["runs"][0], time.perf_counter() - start
        time.sleep(1)
    raise RuntimeError(f"torch-tb-profiler listed no run within {timeout_s:.0f} s")


def _renders(root_url: str, chromium: str) -> dict:
    """Open the plugin's trace viewer page; does Catapult's `tr` load, and which requests failed."""
    from playwright.sync_api import sync_playwright
    failed: list[str] = []
    with sync_playwright() as play:
        browser = play.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu",
                                                                        "--disable-dev-shm-usage"])
        page = browser.new_page()
        page.on("requestfailed", lambda request: failed.append(request.url))
        page.goto(f"{root_url}/data/plugin/pytorch_profiler/trace_embedding.html", wait_until="load",
                  timeout=120_000)
        page.wait_for_timeout(10_000)
        loaded = page.evaluate("() => typeof tr !== 'undefined' && typeof tr.Model === 'function'")
        text = page.evaluate("() => document.body ? document.body.innerText.slice(0, 200) : ''")
        browser.close()
    return {"tbprof_trace_viewer_renders": bool(loaded), "tbprof_failed_requests": failed,
            "tbprof_page_text": text}


def tbprof_trace_figures(run_dir: str, work: str, start_tensorboard, fetch, chromium: str,
                         timeout_s: float = 1800) -> dict:
    """start_tensorboard(logdir, log_path, env, python, plugin) -> (proc, plugin base URL);
    fetch(base, route, **params) -> (seconds, body bytes)."""
    from bench_ingest import ensure_venv
    python = ensure_venv("tbprof", os.environ.get("BENCH_BASE_PYTHON") or shutil.which("python3.11") or "python3")
    env = dict(os.environ, PYTHONPATH="")
    proc, base = start_tensorboard(run_dir, os.path.join(work, "tbprof.log"), env, python, "pytorch_profiler")
    try:
        run, listed_s = _wait_for_run(fetch, base, timeout_s)
        _, body = fetch(base, "workers", run=run, view="Trace")
        worker = json.loads(body)[0]
        _, body = fetch(base, "spans", run=run, worker=worker)
        spans = json.loads(body)
        params = {"run": run, "worker": worker, **({"span": spans[0]} if spans else {})}
        took, shipped = fetch(base, "trace", **params)
        figures = {"tbprof_run_listed_s": round(listed_s, 1), "tbprof_trace_request_s": round(took, 2),
                   "tbprof_trace_bytes": len(shipped),
                   "tbprof_trace_url": f"trace?{urllib.parse.urlencode(params)}"}
        figures.update(_renders(base.split("/data/")[0], chromium))
        return figures
    finally:  # its loader's worker processes can keep TensorBoard from stopping at once
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=60)
