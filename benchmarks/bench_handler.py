"""Overhead of our on_trace_ready handler against torch.profiler.tensorboard_trace_handler(use_gzip=True).

Run: .venv/bin/python benchmarks/bench_handler.py [repetitions]
Both handlers get the same real windows (a small CNN on CPU, record_shapes + with_stack), interleaved
so machine noise hits both alike. Prints the median seconds per handler call and the ratio ours/torch.
"""
import os
import shutil
import statistics
import sys
import tempfile
import time
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


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    torch.manual_seed(0)
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    x, y = torch.randn(16, 3, 32, 32), torch.randint(0, 10, (16,))
    root = tempfile.mkdtemp(prefix="canning-bench-")
    times = {"torch": [], "ours": []}
    try:
        ours = tensorboard_trace_handler(os.path.join(root, "ours"))  # one instance: windows 0, 1, 2...
        theirs = torch.profiler.tensorboard_trace_handler(os.path.join(root, "torch"), use_gzip=True)
        windows(timed(theirs, []), 1, net, opt, x, y)  # warm both paths (imports, first export)
        windows(timed(ours, []), 1, net, opt, x, y)
        for r in range(reps):
            order = [("torch", theirs), ("ours", ours)] if r % 2 == 0 else [("ours", ours), ("torch", theirs)]
            for name, h in order:
                windows(timed(h, times[name]), 2, net, opt, x, y)
        sizes = {k: sum(os.path.getsize(os.path.join(root, k, f)) for f in os.listdir(os.path.join(root, k))
                        if ".pt.trace." in f) for k in times}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    for k in ("torch", "ours"):
        print(f"{k:5s}: median {med[k] * 1e3:7.2f} ms per handler call over {len(times[k])} calls, "
              f"traces {sizes[k] / 1e3:.0f} kB in total")
    print(f"ratio ours/torch: {med['ours'] / med['torch']:.2f}")


if __name__ == "__main__":
    main()
