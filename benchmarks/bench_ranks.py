"""Many-rank benchmark: a generated run of N ranks, digests at the source, opened by the plugin's run
overview and communication routes and by the CLI report.

    python benchmarks/bench_ranks.py [--ranks 256 1024] [--no-tensorboard] [--s3] [--out DIR]

The run is generated from the 8 real ranks of the DLRM fixture (param/dlrm_8ranks: V100, NCCL):
rank r takes the digest of fixture rank r % 8, with every duration scaled by a per-rank jitter
(+-2 %) and its computing by a further per-rank factor; ranks 3 and N-5 compute 30 % longer
(tests/_many_ranks.py writes it as the handler does: manifest, trace link, digest beside it).

Measured, per size:
- impl: the store + route layer in this process (what TensorBoard runs): a fresh Store (discovery),
  GET /cluster's `cluster_impl` cold (digests read from disk) and warm (asked again), response bytes;
- tensorboard: a real TensorBoard on the run: /runs until listed, then /cluster cold and warm over HTTP;
- cli: `canning-prof --mode=view --format=json` (the run report) and `--format=text`, wall and bytes,
  each twice (the second run is warm: the OS page cache holds the digests).
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

FIXTURES = os.environ.get("CANNING_FIXTURES", os.path.join(os.path.dirname(REPO), "shared", "fixtures"))
LAUNCHER = "from tensorboard.main import run_main; run_main()"


def log(msg: str) -> None:
    print(f"[bench_ranks {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def generate(folder: str, ranks: int) -> str:
    from canning_tb.analysis.build import build_digest
    from canning_tb.ingest.kineto import read_kineto
    traces = sorted(glob.glob(os.path.join(FIXTURES, "param", "dlrm_8ranks", "*.pt.trace.json.gz")))
    if len(traces) != 8:
        raise SystemExit(f"the DLRM fixture is not under {FIXTURES}/param/dlrm_8ranks (set CANNING_FIXTURES)")
    sources = [build_digest(read_kineto(t)) for t in traces]
    run = os.path.join(folder, f"ranks{ranks}")
    write_many_ranks(run, sources, ranks, slow={3: 1.3, ranks - 5: 1.3}, traces=traces)
    size = sum(os.path.getsize(p) for p in glob.glob(os.path.join(run, "*.digest.pb")))
    log(f"{ranks} ranks generated in {run}: digests {size / ranks / 1024:.0f} KB per rank")
    return run


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, round(time.perf_counter() - start, 3)


def bench_impl(logdir: str) -> dict:
    """cluster_impl cold and warm in this process, as TensorBoard's thread runs it."""
    from canning_tb.plugin.ranks import cluster_impl
    from canning_tb.store import Store
    from canning_tb.store.prefetcher import Prefetcher

    # a remote logdir's caches go to its local copy (CANNING_CACHE_DIR)
    cache_dir = None if "://" in logdir else os.path.join(logdir, "..", "cache")
    store, discover_s = timed(lambda: Store(logdir, cache_dir=cache_dir))
    prefetcher = Prefetcher(store)
    run = store.runs()[0]

    def answer() -> dict:
        while (body := cluster_impl(store, prefetcher, run, 0)).get("loading"):
            time.sleep(0.05)
        return body

    body, cold_s = timed(answer)
    _, warm_s = timed(answer)
    return {"discover_s": discover_s, "cluster_cold_s": cold_s, "cluster_warm_s": warm_s,
            "cluster_bytes": len(json.dumps(body)), "ranks": len(body["ranks"])}


def _get(url: str) -> tuple[int, bytes]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=600) as r:
        return r.status, r.read()


def bench_tensorboard(logdir: str, run: str, scratch: str) -> dict:
    log_path = os.path.join(scratch, "tb.log")
    env = {**os.environ, "CANNING_CACHE_DIR": os.path.join(scratch, "tb-cache")}
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

    def cluster() -> bytes:
        while True:
            status, body = _get(f"{base}/cluster?run={run}&window_index=0")
            if status == 200:
                return body
            time.sleep(0.05)

    body, cold_s = timed(cluster)
    _, warm_s = timed(cluster)
    return {"start_to_listed_s": listed_s, "cluster_cold_s": cold_s, "cluster_warm_s": warm_s,
            "cluster_bytes": len(body), "start_to_cluster_s": round(listed_s + cold_s, 3)}


def bench_cli(run: str) -> dict:
    cli = [sys.executable, "-m", "canning_tb.cli.main", "--mode=view", f"--input={run}"]
    out = {}
    for fmt in ("json", "text"):
        for attempt in ("first", "again"):
            start = time.perf_counter()
            done = subprocess.run(cli + [f"--format={fmt}"], capture_output=True, check=True)
            out[f"{fmt}_{attempt}_s"] = round(time.perf_counter() - start, 3)
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
    parser.add_argument("--out", default=os.path.join(HERE, "out"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    results = {}
    for ranks in args.ranks:
        with tempfile.TemporaryDirectory(prefix=f"ranks{ranks}-") as scratch:
            logdir = os.path.join(scratch, "logdir")
            run = generate(logdir, ranks)
            figures = {"impl": bench_impl(logdir)}
            log(f"{ranks} ranks, store + impl: {figures['impl']}")
            if not args.no_tensorboard:
                figures["tensorboard"] = bench_tensorboard(logdir, os.path.basename(run), scratch)
                log(f"{ranks} ranks, TensorBoard: {figures['tensorboard']}")
            figures["cli"] = bench_cli(run)
            log(f"{ranks} ranks, CLI: {figures['cli']}")
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
