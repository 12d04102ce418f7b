"""The per-step cost of ps.on_demand(trigger=ps.when_slow()) against ps.on_demand() without it (goal: at most
1 % of a 10 ms step, 0.1 ms).

    nice python benchmarks/bench_trigger.py [--blocks 20] [--steps 200] [--calls 200000]

Two measures, each in blocks that alternate between the job without the trigger and with it (the order
flips every block, so the machine's drift hits both alike), in one run:
- a 10 ms step (a busy wait to a deadline: the step's own time does not move with the load) followed by
  prof.step(): the median of each block's median step time, per kind;
- prof.step() alone, `calls` times per block: the median per-call time of each kind, the trigger's own cost
  without a step's noise around it.
The trigger is ps.when_slow(ratio=1e6): its rule runs in full at each step (timing, comparison, baseline
and its refresh), with its margin out of reach, so that a step preempted on a shared machine does not start
a capture in the middle of the measure. Prints the load average beside the figures: on a shared machine
they move with it.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
from canning import profiling_suite as ps  # noqa: E402

STEP_S = 0.010


def profile(run: str, with_trigger: bool):
    trigger = ps.when_slow(ratio=1e6) if with_trigger else None
    prof = ps.Profile(activities=[ps.ProfilerActivity.CPU],
                      on_trace_ready=ps.tensorboard_trace_handler(run, digest=False),
                      schedule=ps.on_demand(poll_s=2.0, heartbeat_s=10.0, trigger=trigger))
    prof.start()
    return prof


def ten_ms_steps(prof, steps: int) -> float:
    """The median seconds of `steps` 10 ms steps, each followed by prof.step() (timed one by one: the
    median leaves out the steps the machine preempted)."""
    clock = time.perf_counter
    times = []
    t0 = clock()
    for _ in range(steps):
        deadline = t0 + STEP_S
        while clock() < deadline:
            pass
        prof.step()
        t1 = clock()
        times.append(t1 - t0)
        t0 = t1
    return statistics.median(times)


def calls_alone(prof, calls: int) -> float:
    """Seconds per prof.step() call with no step around it."""
    step = prof.step
    t0 = time.perf_counter()
    for _ in range(calls):
        step()
    return (time.perf_counter() - t0) / calls


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--blocks", type=int, default=20)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--calls", type=int, default=200_000)
    args = p.parse_args()
    run = tempfile.mkdtemp(prefix="bench-trigger-")
    step_s = {"without": [], "with": []}
    call_s = {"without": [], "with": []}
    fired = 0
    for block in range(args.blocks):
        for kind in (("without", "with") if block % 2 == 0 else ("with", "without")):
            prof = profile(os.path.join(run, f"{kind}{block}"), kind == "with")
            try:
                step_s[kind].append(ten_ms_steps(prof, args.steps))
                call_s[kind].append(calls_alone(prof, args.calls))
                fired += prof._on_demand.watch.asked is not None or prof._on_demand.watch.plan is not None
            finally:
                prof.stop()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    a, b = statistics.median(step_s["without"]), statistics.median(step_s["with"])
    ca, cb = statistics.median(call_s["without"]), statistics.median(call_s["with"])
    print(f"load average {load:.2f}; {args.blocks} blocks each way, interleaved; captures asked: {fired}")
    print(f"10 ms step + prof.step(): without the trigger {a * 1e3:.4f} ms, with it {b * 1e3:.4f} ms: "
          f"{(b - a) * 1e6:+.2f} us per step ({(b - a) / a * 100:+.3f} %)")
    print(f"prof.step() alone: without the trigger {ca * 1e6:.3f} us, with it {cb * 1e6:.3f} us: "
          f"the trigger costs {(cb - ca) * 1e6:+.3f} us per step ({(cb - ca) / STEP_S * 100:+.4f} % of a 10 ms step)")


if __name__ == "__main__":
    main()
