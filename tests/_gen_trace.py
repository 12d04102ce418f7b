"""Write a real torch.profiler trace of a small Transformer + CNN training loop on CPU.

python tests/_gen_trace.py OUT_DIR [ACTIVE_STEPS] [--gzip]   (used by tests with few steps, and by hand
for a big trace: ~40 active steps give a few hundred MB)
"""
import sys

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4))
        layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        f = self.conv(x).flatten(2).transpose(1, 2)  # (B, 16, 16) -> tokens
        f = nn.functional.pad(f, (0, 16))
        return self.head(self.enc(f).mean(1))


def main(out: str, active: int = 2, gzip: bool = True) -> None:
    torch.manual_seed(0)
    model, x, y = Net(), torch.randn(8, 3, 16, 16), torch.randint(0, 10, (8,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=active),
                 on_trace_ready=tensorboard_trace_handler(out, use_gzip=gzip),
                 record_shapes=True, profile_memory=True, with_stack=True) as prof:
        for _ in range(active + 2):
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            prof.step()


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(args[0], int(args[1]) if len(args) > 1 else 2, "--gzip" in sys.argv)
