"""Load benchmark: concurrent clients against a real TensorBoard serving the plugin.

    .venv/bin/python benchmarks/bench_load.py [--clients 20] [--seconds 60] [--big-trace PATH]

The logdir (benchmarks/out/load/logdir, rebuilt each run with a fresh cache) holds the real fixtures
(kineto/resnet50_v100, hta/df_index_resolver, ascend/level1, the SQLite export ascend/db_level1) and one
big generated trace (default: benchmarks/out/100mb/run, made there by
`make_big_trace.py --target-mb 100` on the first run; hard-linked, else copied). Then:

1. warm-up: each window's /overview once, one after another (the cold digests; their times are reported
   apart, they are not part of the load figures);
2. load: `--clients` threads, each sending GET requests one after another for `--seconds`, the route and
   window drawn at random among /runs, /overview, /operators, /kernels, /memory, /communication and
   /timeline_tracks of every window;
3. TensorBoard's RSS (/proc/<pid>/status) sampled every second throughout.

Reported (stdout, and benchmarks/out/load/results.json): errors (any status other than 200/202, or no
answer), p50 / p99 / max per route, requests per second, the RSS over time, TensorBoard's peak RSS
(VmHWM), and whether the input files or the cache grew. Goals (issue 14): 0 errors, p99 < 1 s, RSS flat
and < 300 MB. The machine may be shared: report its load (uptime) with the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FIXTURES = Path(os.environ.get("CANNING_FIXTURES", ROOT / "tests" / "fixtures"))
OUT = HERE / "out" / "load"
ROUTE = "/data/plugin/canning"
WINDOW_ROUTES = ["/overview", "/operators", "/kernels", "/memory", "/communication", "/timeline_tracks"]
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
LAUNCHER = r"""
import sys
sys.modules["torch"] = None  # TensorBoard as users run it: the plugin never imports torch
sys.modules["torch_npu"] = None
from importlib.metadata import entry_points
from tensorboard import default, program
plugins = default.get_plugins()
if not any(ep.name == "canning" for ep in entry_points().select(group="tensorboard_plugins")):
    from canning_tb.plugin.loader import CanningLoader
    plugins.append(CanningLoader)
tb = program.TensorBoard(plugins=plugins)
tb.configure(argv=[None] + sys.argv[1:])
sys.exit(tb.main())
"""


def link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def build_logdir(big: Path) -> Path:
    logdir = OUT / "logdir"
    shutil.rmtree(logdir, ignore_errors=True)
    for run, parts in (("resnet", ("kineto", "resnet50_v100")), ("hta", ("hta", "df_index_resolver")),
                       ("ascend", ("ascend", "level1")), ("ascend_db", ("ascend", "db_level1"))):
        src = FIXTURES.joinpath(*parts)
        for f in src.rglob("*"):
            if f.is_file():
                link_or_copy(f, logdir / run / f.relative_to(src))
    for f in big.glob("*.pt.trace.json*"):
        link_or_copy(f, logdir / "big" / f.name)
    for p in [logdir, *logdir.rglob("*")]:
        if p.is_dir():
            p.chmod(0o755)
    return logdir


def start_tensorboard(logdir: Path, log_path: Path) -> tuple[subprocess.Popen, str]:
    log = open(log_path, "wb")
    env = {**os.environ, "CANNING_CACHE_DIR": str(OUT / "user-cache")}
    proc = subprocess.Popen([sys.executable, "-c", LAUNCHER, "--logdir", str(logdir), "--host", "127.0.0.1",
                             "--port", "0"], stdout=log, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        m = re.search(r"TensorBoard \S+ at (http://127\.0\.0\.1:\d+)/", log_path.read_text(errors="replace"))
        if m:
            return proc, m.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"tensorboard did not start:\n{log_path.read_text(errors='replace')}")


def get(url: str, timeout: float = 300) -> tuple[int, float]:
    start = time.perf_counter()
    try:
        with OPENER.open(url, timeout=timeout) as r:
            r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        e.read()
        status = e.code
    except OSError:
        status = 0  # no answer
    return status, time.perf_counter() - start


def rss(pid: int, field: str = "VmRSS") -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def windows(url: str) -> list[tuple[str, str, str]]:
    deadline = time.monotonic() + 300
    while True:
        with OPENER.open(f"{url}{ROUTE}/runs", timeout=60) as r:
            body = json.load(r)
        if not body["loading"] and body["runs"]:
            break
        if time.monotonic() > deadline:
            raise SystemExit("the logdir was not listed in 300 s")
        time.sleep(0.5)
    return [(run["name"], w["name"], win["id"]) for run in body["runs"] for w in run["workers"]
            for win in w["windows"]]


def window_url(url: str, route: str, run: str, worker: str, window: str) -> str:
    return f"{url}{ROUTE}{route}?" + urllib.parse.urlencode({"run": run, "worker": worker, "window": window})


def load(url: str, targets: list, clients: int, seconds: float) -> dict[str, list]:
    """{route: [(status, seconds), ...]} of every request the clients sent."""
    results: dict[str, list] = {}
    lock = threading.Lock()
    end = time.monotonic() + seconds

    def client(seed: int) -> None:
        rnd = random.Random(seed)
        mine: dict[str, list] = {}
        while time.monotonic() < end:
            route = rnd.choice(["/runs"] + WINDOW_ROUTES)
            target = f"{url}{ROUTE}/runs" if route == "/runs" else window_url(url, route, *rnd.choice(targets))
            mine.setdefault(route, []).append(get(target))
        with lock:
            for route, rows in mine.items():
                results.setdefault(route, []).extend(rows)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def tree_bytes(folder: Path, skip_cache: bool) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*")
               if p.is_file() and not (skip_cache and ".canning" in p.parts))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--big-trace", type=Path, default=HERE / "out" / "100mb" / "run",
                    help="a run folder holding the big trace; generated there (make_big_trace.py, "
                         "reused once made) when it holds none")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if not any(args.big_trace.glob("*.pt.trace.json*")):
        subprocess.run([sys.executable, str(HERE / "make_big_trace.py"), "--target-mb", "100",
                        "--out", str(args.big_trace)], check=True)
    shutil.rmtree(OUT / "user-cache", ignore_errors=True)
    logdir = build_logdir(args.big_trace)
    inputs_before = tree_bytes(logdir, skip_cache=True)
    proc, url = start_tensorboard(logdir, OUT / "tensorboard.log")
    samples: list[tuple[float, int]] = []
    stop = threading.Event()
    t0 = time.monotonic()

    def sample() -> None:
        while not stop.is_set():
            samples.append((round(time.monotonic() - t0, 1), rss(proc.pid)))
            stop.wait(1.0)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        targets = windows(url)
        warm = {f"{run}/{worker}/{window}": get(window_url(url, "/overview", run, worker, window))
                for run, worker, window in targets}
        cache_before = tree_bytes(logdir, skip_cache=False) - tree_bytes(logdir, skip_cache=True)
        load_start = time.monotonic() - t0
        results = load(url, targets, args.clients, args.seconds)
        cache_after = tree_bytes(logdir, skip_cache=False) - tree_bytes(logdir, skip_cache=True)
        peak = rss(proc.pid, "VmHWM")
    finally:
        stop.set()
        sampler.join()
        proc.terminate()
        proc.wait(timeout=30)
    report = {
        "clients": args.clients, "seconds": args.seconds, "uptime": os.popen("uptime").read().strip(),
        "cold_overview_s": {k: round(v[1], 3) for k, v in warm.items()},
        "cold_statuses": {k: v[0] for k, v in warm.items()},
        "routes": {route: {"requests": len(rows), "errors": sum(1 for s, _ in rows if s not in (200, 202)),
                           "p50_s": round(percentile([d for _, d in rows], 0.5), 4),
                           "p99_s": round(percentile([d for _, d in rows], 0.99), 4),
                           "max_s": round(max(d for _, d in rows), 4)} for route, rows in sorted(results.items())},
        "requests_per_s": round(sum(len(r) for r in results.values()) / args.seconds, 1),
        "rss_mb": [(t, round(b / 2 ** 20)) for t, b in samples],
        "rss_load_mb": {"min": round(min(b for t, b in samples if t >= load_start) / 2 ** 20),
                        "max": round(max(b for t, b in samples if t >= load_start) / 2 ** 20)},
        "peak_rss_mb": round(peak / 2 ** 20),
        "inputs_unchanged": tree_bytes(logdir, skip_cache=True) == inputs_before,
        "cache_bytes_before_after_load": [cache_before, cache_after],
    }
    (OUT / "results.json").write_text(json.dumps(report, indent=1))
    print(f"{args.clients} clients x {args.seconds:g} s; machine: {report['uptime']}")
    print("cold /overview (warm-up, one at a time): " +
          ", ".join(f"{k} {v:.2f}s" for k, v in report["cold_overview_s"].items()))
    print(f"{'route':18} {'requests':>9} {'errors':>7} {'p50 s':>8} {'p99 s':>8} {'max s':>8}")
    for route, r in report["routes"].items():
        print(f"{route:18} {r['requests']:>9} {r['errors']:>7} {r['p50_s']:>8.3f} {r['p99_s']:>8.3f} {r['max_s']:>8.3f}")
    print(f"{report['requests_per_s']} requests/s; TensorBoard RSS during the load {report['rss_load_mb']['min']}"
          f"-{report['rss_load_mb']['max']} MB, peak (VmHWM) {report['peak_rss_mb']} MB; inputs unchanged: "
          f"{report['inputs_unchanged']}; cache bytes before/after the load: {cache_before} / {cache_after}")
    print(f"RSS over time (s, MB): {report['rss_mb'][::max(1, len(report['rss_mb']) // 20)]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
