"""A few training steps of a small CPU model: what the CI workflow (perf-gate.yml) profiles on each change.
Replace it with a short run of your own training script (the steps are marked by the optimizer's steps).

    canning-prof performance --output=prof/run --warmup 2 --active 8 --repeat 2 python examples/ci/train_small.py
"""
import sys

import torch


def main(steps: int = 24) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)  # a CI runner is shared: one thread keeps the step times steadier
    widths = (256, 768, 512, 640, 10)
    layers = []
    for i, (a, b) in enumerate(zip(widths, widths[1:])):
        layers += [torch.nn.Linear(a, b)] + ([torch.nn.ReLU()] if i < len(widths) - 2 else [])
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(128, widths[0]), torch.randint(0, widths[-1], (128,))
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 24)
