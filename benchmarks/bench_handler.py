"""Overhead of our on_trace_ready handler against torch.profiler.tensorboard_trace_handler(use_gzip=True),
and of ours writing to object storage (s3://, a moto server on localhost) against ours writing locally.

Run: .venv/bin/python benchmarks/bench_handler.py [repetitions]   (the s3 case needs the [s3] and test extras)
The handlers get the same real windows (a small CNN on CPU, record_shapes + with_stack), interleaved
so machine noise hits them alike. Prints the median, quartiles and extremes of the seconds per handler
call, which is the time the step that ends a window spends in on_trace_ready (ours: the export; its
gzip, manifest and digest start run in the background, waited for after each run and shown apart,
so they never land in torch's turn), the ratios ours/torch and s3/local,
and how long the uploads still took after the last window (the wait at stop()). The s3 handler writes
no digest (its upload would outlive the server); the local ones do (starting it is part of their call).
"""
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
import torch  # noqa: E402

from canning_tb.handler import tensorboard_trace_handler  # noqa: E402

warnings.filterwarnings("ignore")


def model():
    return torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                               torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                               torch.nn.Flatten(), torch.nn.Linear(32, 10))


def timed(handler, sink):
    def fn(prof):
        t = time.perf_counter()
        handler(prof)
        sink.append(time.perf_counter() - t)
    return fn


def windows(handler, n_windows, net, opt, x, y):
    sched = torch.profiler.schedule(wait=0, warmup=1, active=3, repeat=n_windows)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                on_trace_ready=handler, record_shapes=True, with_stack=True) as prof:
        for _ in range(4 * n_windows):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(x), y).backward()
            opt.step()
            prof.step()


def start_moto(log_path: str):
    """(process, endpoint) of a moto S3 server on localhost, the AWS environment pointing at it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                stdout=log, stderr=subprocess.STDOUT)
    os.environ.update({"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench-secret",
                       "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    for _ in range(300):
        try:
            opener.open(endpoint + "/moto-api/", timeout=2)
            return proc, endpoint
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("moto server did not start")


def s3_case(root):
    """(handler writing to s3://bench/run, its file system, moto's process); None without moto / s3fs."""
    try:
        import moto.server  # noqa: F401
        import s3fs
    except ImportError as e:
        print(f"s3 case skipped: {e}")
        return None
    proc, endpoint = start_moto(os.path.join(root, "moto.log"))
    fs = s3fs.S3FileSystem(endpoint_url=endpoint, skip_instance_cache=True)
    fs.mkdir("bench")
    # no digest at the source: its uploads would outlive this moto server (the uploader starts them)
    return tensorboard_trace_handler("s3://bench/run", digest=False), fs, proc


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    torch.manual_seed(0)
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    x, y = torch.randn(16, 3, 32, 32), torch.randint(0, 10, (16,))
    root = tempfile.mkdtemp(prefix="canning-bench-")
    times = {"torch": [], "ours": [], "ours-s3": []}
    drains = {}
    s3 = None
    try:
        handlers = {"ours": tensorboard_trace_handler(os.path.join(root, "ours")),  # one instance: windows 0, 1...
                    "torch": torch.profiler.tensorboard_trace_handler(os.path.join(root, "torch"), use_gzip=True)}
        s3 = s3_case(root)
        if s3 is not None:
            handlers["ours-s3"] = s3[0]
        for h in handlers.values():  # warm every path (imports, first export, the uploader's start)
            windows(timed(h, []), 1, net, opt, x, y)
        drains["ours"] = []
        for r in range(reps):
            names = list(handlers) if r % 2 == 0 else list(reversed(handlers))
            for name in names:
                windows(timed(handlers[name], times[name]), 2, net, opt, x, y)
                if name == "ours":  # its background work (gzip, manifest, digest start) ends before the next run
                    t = time.perf_counter()
                    handlers[name].canning_flush()
                    drains["ours"].append(time.perf_counter() - t)
        flush = getattr(handlers.get("ours-s3"), "canning_flush", None)  # what Profile.stop() does
        t = time.perf_counter()
        if flush is not None:
            flush()
        drain = time.perf_counter() - t
        sizes = {k: sum(os.path.getsize(os.path.join(root, k, f)) for f in os.listdir(os.path.join(root, k))
                        if ".pt.trace." in f) for k in ("torch", "ours")}
        if s3 is not None:
            s3[1].invalidate_cache()
            sizes["ours-s3"] = sum(s3[1].du(k) for k in s3[1].glob("bench/run/*.pt.trace.*"))
    finally:
        if s3 is not None:
            s3[2].terminate()
            s3[2].wait()
        shutil.rmtree(root, ignore_errors=True)
    report(times, sizes, drain, drains)


def report(times, sizes, drain, drains=None):
    med = {k: statistics.median(v) for k, v in times.items() if v}
    for k in med:
        q = statistics.quantiles(times[k], n=4) if len(times[k]) > 1 else [times[k][0]] * 3
        print(f"{k:7s}: median {med[k] * 1e3:7.2f} ms per handler call (quartiles {q[0] * 1e3:.2f}-{q[2] * 1e3:.2f}, "
              f"fastest {min(times[k]) * 1e3:.2f}, slowest {max(times[k]) * 1e3:7.2f} ms) "
              f"over {len(times[k])} calls, traces {sizes[k] / 1e3:.0f} kB in total")
    print(f"ratio ours/torch (training thread, medians): {med['ours'] / med['torch']:.2f}")
    pairs = [o / t for o, t in zip(times["ours"], times["torch"])]  # the same window number of each rep
    if pairs:
        print(f"ratio ours/torch per paired call: median {statistics.median(pairs):.2f}, "
              f"range {min(pairs):.2f}-{max(pairs):.2f}")
    if drains and drains.get("ours"):
        print(f"ours in the background after its last window (gzip, manifest, digest start): median "
              f"{statistics.median(drains['ours']) * 1e3:.1f} ms per run of 2 windows")
    if "ours-s3" in med:
        print(f"ratio s3/local (ours): {med['ours-s3'] / med['ours']:.2f}; uploads still running after the last "
              f"window: {drain * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
