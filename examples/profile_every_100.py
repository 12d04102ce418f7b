"""Profile one step in every 100 with start/stop, and export each collection as a Chrome trace.

    python examples/profile_every_100.py [outdir] [steps] [every]
Each start() begins a fresh collection; stop() returns the profile.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))  # run from a checkout
from canning import profiling_suite as ps  # noqa: E402


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "."
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 301
    every = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    os.makedirs(outdir, exist_ok=True)
    model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    prof = ps.Profile(activities=[ps.ProfilerActivity.CPU], record_shapes=True)
    for step in range(steps):
        profiled = step % every == 0
        if profiled:
            prof.start()
        x, y = torch.randn(64, 128), torch.randint(0, 10, (64,))
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        if profiled:
            path = os.path.join(outdir, f"trace_step_{step}.json")
            prof.stop().export_chrome_trace(path)
            print(f"step {step}: {path}")


if __name__ == "__main__":
    main()
