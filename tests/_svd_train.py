"""A small CPU training job profiled with real torch.profiler, for the regression gate's real runs
(tests/cli/test_compare_gate_runs.py): `python _svd_train.py OUT [--svd]` writes WINDOWS windows of ACTIVE
steps each into the run folder OUT (tensorboard_trace_handler, shapes recorded, worker "trainer"). --svd adds
a torch.linalg.svd of an SVD_N x SVD_N matrix to every step: a real code regression.

The layers have different widths, so that their operators are many rows by name + input shapes (the
machine's common factor is a median over them). One intra-op thread: the machine is shared, and a CPU
burner then slows this job by its share of the cores."""
import argparse

import torch
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

ACTIVE, WINDOWS = 8, 2
SVD_N = 384  # about 35 ms on one thread here: about the step itself, so the regression stands out of a loaded machine's noise
WIDTHS, BATCH = (256, 1024, 768, 896, 512, 640, 384, 10), 128


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--svd", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    layers = []
    for i, (a, b) in enumerate(zip(WIDTHS, WIDTHS[1:])):
        layers += [torch.nn.Linear(a, b)] + ([torch.nn.ReLU()] if i < len(WIDTHS) - 2 else [])
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(BATCH, WIDTHS[0]), torch.randint(0, WIDTHS[-1], (BATCH,))
    m = torch.randn(SVD_N, SVD_N)

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        if args.svd:
            torch.linalg.svd(m)

    for _ in range(3):  # warm the allocator and the kernels before the profiler starts
        step()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 schedule=schedule(wait=0, warmup=1, active=ACTIVE, repeat=WINDOWS),
                 on_trace_ready=tensorboard_trace_handler(args.out, worker_name="trainer", use_gzip=True)) as prof:
        for _ in range(WINDOWS * (ACTIVE + 1)):
            step()
            prof.step()


if __name__ == "__main__":
    main()
