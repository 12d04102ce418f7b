"""The step-time overhead of ps.on_demand()'s watch while no capture runs (goal: under 0.5 %).

    nice python benchmarks/bench_capture.py [--blocks 30] [--steps 300] [--poll 2.0]

A real training step on the CPU (an MLP's forward, backward and SGD step, one thread), timed in blocks that
alternate between a plain loop and the same loop under ps.Profile(schedule=ps.on_demand(...)) with the
handler (the watch's thread running, prof.step() at each step), so that the machine's drift hits both
alike; the medians of the per-step times are compared. The cost of one prof.step() call alone is timed too.
Prints the load average beside the figures: on a shared machine they move with it.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
from canning import profiling_suite as ps  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--blocks", type=int, default=30)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--poll", type=float, default=2.0)
    p.add_argument("--heartbeat", type=float, default=10.0)
    p.add_argument("--width", type=int, default=512)
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    width = args.width
    model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, args.width), torch.randint(0, 10, (64,))

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    run = tempfile.mkdtemp(prefix="bench-capture-")
    for _ in range(50):
        step()  # warm caches and the allocator
    wall, cpu = {"plain": [], "watched": []}, {"plain": [], "watched": []}
    for block in range(args.blocks):
        for kind in (("plain", "watched") if block % 2 == 0 else ("watched", "plain")):
            prof = None
            if kind == "watched":
                prof = ps.Profile(activities=[ps.ProfilerActivity.CPU],
                                  schedule=ps.on_demand(poll_s=args.poll, heartbeat_s=args.heartbeat),
                                  on_trace_ready=ps.tensorboard_trace_handler(run, digest=False))
                prof.start()
            t0, c0 = time.perf_counter_ns(), time.process_time_ns()  # process CPU: the watch's thread counts
            for _ in range(args.steps):
                step()
                if prof is not None:
                    prof.step()
            wall[kind].append((time.perf_counter_ns() - t0) / args.steps)
            cpu[kind].append((time.process_time_ns() - c0) / args.steps)
            if prof is not None:
                prof.stop()
    call = _step_call_ns(run)
    poll_us, beat_us = _watch_costs(run)
    print(f"load average: {' '.join(f'{v:.2f}' for v in os.getloadavg())}; {args.blocks} pairs of blocks of "
          f"{args.steps} steps; poll {args.poll} s, heartbeat {args.heartbeat} s")
    for name, times in (("wall", wall), ("CPU of the process", cpu)):
        p_med, w_med = statistics.median(times["plain"]), statistics.median(times["watched"])
        ratios = [w / p for w, p in zip(times["watched"], times["plain"])]  # each pair ran side by side
        print(f"{name}: step median {p_med / 1e3:.1f} µs plain, {w_med / 1e3:.1f} µs on_demand; overhead "
              f"{100 * (statistics.median(ratios) - 1):+.3f} % (median of the pairs' ratios; quartiles "
              f"{_q([100 * (r - 1) for r in ratios])} %)")
    p_med = statistics.median(cpu["plain"])
    print(f"one idle prof.step(): {call:.0f} ns = {100 * call / p_med:.4f} % of the step's CPU")
    per_s = poll_us / args.poll + beat_us / args.heartbeat
    print(f"the watch's thread: {poll_us:.0f} µs per poll of the request file, {beat_us:.0f} µs per heartbeat "
          f"(status written): {per_s:.0f} µs of CPU per second = {per_s / 1e4:.4f} % of one core")


def _watch_costs(run, n=2000):
    """(µs per poll, µs per heartbeat) of the watch's own work, timed on its functions, in this thread."""
    from canning_tb.capture.watch import Watcher
    watch = Watcher(run, ps.on_demand(), "torch")
    t0 = time.perf_counter_ns()
    for _ in range(n):
        watch._poll()
    poll = (time.perf_counter_ns() - t0) / n / 1e3
    t0 = time.perf_counter_ns()
    for i in range(n // 10):
        watch.step = i
        watch._beat(time.monotonic())
    return poll, (time.perf_counter_ns() - t0) / (n // 10) / 1e3


def _step_call_ns(run, n=200_000):
    prof = ps.Profile(activities=[ps.ProfilerActivity.CPU], schedule=ps.on_demand(),
                      on_trace_ready=ps.tensorboard_trace_handler(run, digest=False))
    prof.start()
    t0 = time.perf_counter_ns()
    for _ in range(n):
        prof.step()
    ns = (time.perf_counter_ns() - t0) / n
    prof.stop()
    return ns


def _q(values):
    q = statistics.quantiles(values, n=4)
    return f"{q[0]:.3f} to {q[2]:.3f}"


if __name__ == "__main__":
    main()
