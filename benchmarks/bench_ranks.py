"""Many-rank benchmark: a generated run of N ranks, digests at the source, opened by the plugin's run
overview and communication routes and by the CLI report.

    python benchmarks/bench_ranks.py [--ranks 256 1024] [--no-tensorboard] [--s3] [--out DIR] [--baseline SRC]

The run is generated from the 8 real ranks of the DLRM fixture (param/dlrm_8ranks: V100, NCCL):
rank r takes the digest of fixture rank r % 8, with every duration scaled by a per-rank jitter
(+-2 %) and its computing by a further per-rank factor; ranks 3 and N-5 compute 30 % longer
(tests/_many_ranks.py writes it as the handler does: manifest, trace link, digest beside it).

Measured, per size (wall `_s` and CPU `_cpu_s` seconds; on a busy machine wall is the CPU time
plus the wait for a core, so compare CPU times, or run with --baseline):
- impl: the store + route layer in a fresh process, as TensorBoard's request thread runs it:
  imports, a fresh Store (discovery), then cold (digests read from disk) GET /overview and
  /communication of one rank's window and /cluster of the run (`run_overview_cold_s` = /overview +
  /cluster, what the Overview tab waits for; `communication_view_cold_s` = /communication +
  /cluster), /cluster warm (asked again), response bytes;
- tensorboard: a real TensorBoard on the run: /runs until listed, then the same routes over HTTP
  (CPU: the TensorBoard process's, read from /proc);
- cli: `canning-prof --mode=view --format=json` (the run report) and `--format=text`, wall, CPU and
  bytes, each twice (the second run is warm: the OS page cache holds the digests).
- baseline (--baseline SRC, e.g. main's `src` from `git archive main src`): impl, tensorboard and
  cli again with that code first on PYTHONPATH, in the same run, and the ratios of this code's
  figures to it (`speedup`: baseline / this, > 1 is faster).
- s3 (--s3): the same run uploaded to a real S3 API server on localhost (moto, as the tests start it)
  as the handler writes it (the digests after the windows), opened from a cold start (no local copy
  yet): the store's first sync (manifests and digests copied, traces not) and /cluster, then a real
  TensorBoard on s3://, and the requests moto served meanwhile; twice: with the digests each rank
  wrote (`per_object`), then with the pack `canning-prof digest` writes (`packed`, store/pack.py).
Prints the figures and writes OUT/ranks.json. Not a test; not part of `make test`.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests"))  # the generator the many-rank tests use too

from _many_ranks import write_many_ranks  # noqa: E402

FIXTURES = os.environ.get("CANNING_FIXTURES", os.path.join(REPO, "tests", "fixtures"))
LAUNCHER = "from tensorboard.main import run_main; run_main()"


def log(msg: str) -> None:
    print(f"[bench_ranks {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def generate(folder: str, ranks: int) -> str:
    from canning_tb.analysis.build import build_digest
    from canning_tb.ingest.kineto.read import read_kineto
    traces = sorted(glob.glob(os.path.join(FIXTURES, "param", "dlrm_8ranks", "*.pt.trace.json.gz")))
    if len(traces) != 8:
        raise SystemExit(f"the DLRM fixture is not under {FIXTURES}/param/dlrm_8ranks (set CANNING_FIXTURES)")
    sources = [build_digest(read_kineto(t)) for t in traces]
    run = os.path.join(folder, f"ranks{ranks}")
    write_many_ranks(run, sources, ranks, slow={3: 1.3, ranks - 5: 1.3}, traces=traces)
    size = sum(os.path.getsize(p) for p in glob.glob(os.path.join(run, "*.digest.pb")))
    log(f"{ranks} ranks generated in {run}: digests {size / ranks / 1024:.0f} KB per rank")
    return run


def bench_impl(logdir: str, src: str | None = None) -> dict:
    """The routes in a fresh process (this code, or SRC's), as TensorBoard's request thread runs them."""
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--impl", logdir], env=_env(src),
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def _env(src: str | None) -> dict:
    """The environment of a child running SRC's code (None: this checkout's, as the parent imports it)."""
    import canning_tb
    code = src or os.path.dirname(os.path.dirname(canning_tb.__file__))
    return {**os.environ, "PYTHONPATH": os.pathsep.join([code, os.environ.get("PYTHONPATH", "")])}


def impl_child(logdir: str) -> None:
    """--impl LOGDIR: the route figures of this process's code, printed as one JSON line."""
    clock = Clock()
    from canning_tb.queries.ranks import cluster_impl
    from canning_tb.queries.sections import communication_impl, overview_impl
    from canning_tb.store import Store
    from canning_tb.store.prefetcher import Prefetcher
    out = {"import": clock.lap()}
    cache_dir = None if "://" in logdir else os.path.join(logdir, "..", "cache")  # remote: CANNING_CACHE_DIR
    store = Store(logdir, cache_dir=cache_dir)
    out["discover"] = clock.lap()
    prefetcher = Prefetcher(store)
    run = store.runs()[0]
    workers = store.workers(run)

    def window(i: int) -> tuple:
        return run, workers[i].name, store.windows(run, workers[i].name)[0].id

    def cluster() -> dict:
        while (body := cluster_impl(store, prefetcher, run, 0)).get("loading"):
            time.sleep(0.05)
        return body

    overview_impl(store, *window(0))
    out["overview_cold"] = clock.lap()
    communication_impl(store, *window(1))
    out["communication_cold"] = clock.lap()
    body = cluster()
    out["cluster_cold"] = clock.lap()
    cluster()
    out["cluster_warm"] = clock.lap()
    figures = {f"{name}_{unit}": value for name, lap in out.items() for unit, value in zip(("s", "cpu_s"), lap)}
    figures.update(_views(figures), cluster_bytes=len(json.dumps(body)), ranks=len(body["ranks"]))
    print(json.dumps(figures))


def _views(figures: dict) -> dict:
    """What a view waits for from cold: its own window's route, then /cluster."""
    return {f"{view}_cold_{unit}": round(figures[f"{route}_cold_{unit}"] + figures[f"cluster_cold_{unit}"], 3)
            for view, route in (("run_overview", "overview"), ("communication_view", "communication"))
            for unit in ("s", "cpu_s")}


class Clock:
    """Wall and CPU seconds (of this process, or of another one's /proc/PID/stat) since the last lap."""

    def __init__(self, pid: int | None = None):
        self.pid = pid
        self.last = self._now()

    def _now(self) -> tuple[float, float]:
        if self.pid is None:
            return time.perf_counter(), time.process_time()
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return time.perf_counter(), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def lap(self) -> tuple[float, float]:
        now = self._now()
        out = tuple(round(b - a, 3) for a, b in zip(self.last, now))
        self.last = now
        return out


def _get(url: str) -> tuple[int, bytes]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=600) as r:
        return r.status, r.read()


def bench_tensorboard(logdir: str, run: str, scratch: str, src: str | None = None) -> dict:
    log_path = os.path.join(scratch, "tb.log")
    env = {**_env(src), "CANNING_CACHE_DIR": os.path.join(scratch, "tb-cache")}
    with open(log_path, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", LAUNCHER, "--logdir", logdir, "--host", "127.0.0.1",
                                 "--port", "0"], stdout=out, stderr=subprocess.STDOUT, env=env)
        try:
            return _tensorboard_figures(proc, log_path, run, start)
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def _tensorboard_figures(proc, log_path: str, run: str, start: float) -> dict:
    while not (found := re.search(r"TensorBoard \S+ at (http://127\.0\.0\.1:\d+)/", open(log_path).read())):
        if proc.poll() is not None:
            raise RuntimeError(open(log_path).read())
        time.sleep(0.1)
    base = found.group(1) + "/data/plugin/canning"
    while not any(r["name"] == run for r in json.loads(_get(base + "/runs")[1])["runs"]):
        time.sleep(0.1)
    listed_s = round(time.perf_counter() - start, 3)
    workers = next(r for r in json.loads(_get(base + "/runs")[1])["runs"] if r["name"] == run)["workers"]
    ranks = [f"run={run}&worker={w['name']}&window={w['windows'][0]['id']}" for w in workers[:2]]

    def ask(route: str) -> bytes:
        while True:
            status, body = _get(f"{base}/{route}")
            if status == 200:
                return body
            time.sleep(0.05)

    clock, figures = Clock(proc.pid), {"start_to_listed_s": listed_s}
    for name, route in (("overview_cold", f"overview?{ranks[0]}"), ("communication_cold", f"communication?{ranks[1]}"),
                        ("cluster_cold", f"cluster?run={run}&window_index=0"),
                        ("cluster_warm", f"cluster?run={run}&window_index=0")):
        body = ask(route)
        figures[f"{name}_s"], figures[f"{name}_cpu_s"] = clock.lap()
    return {**figures, **_views(figures), "cluster_bytes": len(body),
            "start_to_cluster_s": round(listed_s + figures["cluster_cold_s"], 3)}


def bench_cli(run: str, src: str | None = None) -> dict:
    import resource
    cli = [sys.executable, "-m", "canning_tb.cli.main", "--mode=view", f"--input={run}"]
    out = {}
    for fmt in ("json", "text"):
        for attempt in ("first", "again"):
            start, used = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
            done = subprocess.run(cli + [f"--format={fmt}"], capture_output=True, check=True, env=_env(src))
            out[f"{fmt}_{attempt}_s"] = round(time.perf_counter() - start, 3)
            now = resource.getrusage(resource.RUSAGE_CHILDREN)
            out[f"{fmt}_{attempt}_cpu_s"] = round(now.ru_utime + now.ru_stime - used.ru_utime - used.ru_stime, 3)
        out[f"{fmt}_bytes"] = len(done.stdout)
    return out


def bench_s3(logdir: str, run: str, scratch: str, with_tensorboard: bool) -> dict:
    """The run on a local S3 API server, opened cold (no local copy yet) by the store and TensorBoard:
    first with the digests each rank wrote (two requests per window), then with the pack that
    `canning-prof digest` writes (one request per run)."""
    from _s3 import S3Server
    server = S3Server(scratch)
    saved = dict(os.environ)
    os.environ.update(server.env)
    try:
        fs = server.fs()
        fs.mkdir("bench")
        upload_s = _upload(fs, os.path.join(logdir, run), f"bench/logdir/{run}")
        figures = {"upload_s": upload_s, "per_object": _cold(server, run, scratch, "per-object", with_tensorboard)}
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "canning_tb.cli.main", "digest", "--input=s3://bench/logdir"],
                       check=True, capture_output=True, env={**os.environ, "CANNING_CACHE_DIR": os.path.join(
                           scratch, "s3-digest-cache")})
        figures["pack_written_s"] = round(time.perf_counter() - start, 3)
        figures["packed"] = _cold(server, run, scratch, "packed", with_tensorboard)
        return figures
    finally:
        os.environ.clear()
        os.environ.update(saved)
        server.stop()


def measure(logdir: str, run: str, scratch: str, args) -> dict:
    """impl, tensorboard and cli, each of this code then of the baseline's (when given)."""
    codes = {"this": None, **({"baseline": os.path.abspath(args.baseline)} if args.baseline else {})}
    figures: dict = {code: {} for code in codes}
    parts = [("impl", lambda src, tag: bench_impl(logdir, src))]
    if not args.no_tensorboard:
        parts.append(("tensorboard", lambda src, tag: bench_tensorboard(
            logdir, os.path.basename(run), _folder(scratch, tag), src)))
    parts.append(("cli", lambda src, tag: bench_cli(run, src)))
    for part, bench in parts:
        for code, src in codes.items():
            figures[code][part] = bench(src, code)
            log(f"{os.path.basename(run)}, {part}, {code}: {figures[code][part]}")
    out = figures["this"]
    if args.baseline:
        out["baseline"] = figures["baseline"]
        out["speedup"] = {part: {key: round(value / out[part][key], 2) for key, value in base.items()
                                 if key.endswith("_s") and out[part].get(key)} for part, base in out["baseline"].items()}
        log(f"{os.path.basename(run)}, speedup (baseline / this): {out['speedup']}")
    return out


def _folder(scratch: str, name: str) -> str:
    path = os.path.join(scratch, name)
    os.makedirs(path, exist_ok=True)
    return path


def _upload(fs, local: str, remote: str) -> float:
    """Upload a run as the handler writes it: each window's files, then the digests (written after)."""
    names = sorted(os.listdir(local))
    later = [n for n in names if n.endswith(".digest.pb")]
    start = time.perf_counter()
    for batch in ([n for n in names if n not in later], later):
        fs.put([os.path.join(local, n) for n in batch], [f"{remote}/{n}" for n in batch])
    return round(time.perf_counter() - start, 3)


def _cold(server, run: str, scratch: str, name: str, with_tensorboard: bool) -> dict:
    """A fresh store on s3:// with an empty cache (its first sync copies manifests and digests, no
    trace), then /cluster; and a real TensorBoard, also with an empty cache. Requests counted in moto's log."""
    before = _requests(server)
    os.environ["CANNING_CACHE_DIR"] = os.path.join(scratch, f"s3-{name}-impl-cache")
    figures = bench_impl("s3://bench/logdir")
    figures["requests"] = _requests(server) - before
    log(f"on S3 (moto), cold, {name}: {figures}")
    if with_tensorboard:
        os.makedirs(os.path.join(scratch, f"s3-{name}"))
        figures["tensorboard"] = bench_tensorboard("s3://bench/logdir", run, os.path.join(scratch, f"s3-{name}"))
        log(f"on S3 (moto), cold, {name}, TensorBoard: {figures['tensorboard']}")
    return figures


def _requests(server) -> int:
    """Requests moto has logged so far."""
    with open(server.log.name, "rb") as f:
        return len(re.findall(rb'"(?:GET|HEAD|PUT|POST|DELETE) ', f.read()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--no-tensorboard", action="store_true", help="skip the real TensorBoard")
    parser.add_argument("--s3", action="store_true", help="also open the run from a local S3 API server (moto)")
    parser.add_argument("--baseline", metavar="SRC", help="a src folder of other code (e.g. main's) to compare with")
    parser.add_argument("--impl", metavar="LOGDIR", help=argparse.SUPPRESS)  # the child of bench_impl
    parser.add_argument("--out", default=os.path.join(HERE, "out"))
    args = parser.parse_args()
    if args.impl:
        impl_child(args.impl)
        return 0
    os.makedirs(args.out, exist_ok=True)
    results = {}
    for ranks in args.ranks:
        with tempfile.TemporaryDirectory(prefix=f"ranks{ranks}-") as scratch:
            logdir = os.path.join(scratch, "logdir")
            run = generate(logdir, ranks)
            figures = measure(logdir, run, scratch, args)
            if args.s3:
                figures["s3"] = bench_s3(logdir, os.path.basename(run), scratch, not args.no_tensorboard)
                log(f"{ranks} ranks, on S3 (moto), cold: {figures['s3']}")
            results[str(ranks)] = figures
    with open(os.path.join(args.out, "ranks.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
