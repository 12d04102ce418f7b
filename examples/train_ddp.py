"""Profile a small CNN trained with DDP on CPU (gloo), two windows per rank.

    torchrun --nproc_per_node=2 examples/train_ddp.py [logdir] [steps]
    tensorboard --logdir ./log
Each rank writes <worker>.<window>.pt.trace.json.gz + .canning.json into logdir (default ./log/demo).
"""
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))  # run from a checkout
from canning import profiling_suite as ps  # noqa: E402


def make_model():
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(64 * 8 * 8, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))  # ~4.3 MB


def main():
    logdir = sys.argv[1] if len(sys.argv) > 1 else "./log/demo"
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    torch.set_num_threads(1)  # two ranks on a small machine
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(steps * 16 * world, 3, 32, 32), torch.randint(0, 10, (steps * 16 * world,)))
    loader = DataLoader(data, batch_size=16, sampler=DistributedSampler(data, num_replicas=world, rank=rank))
    model = DDP(make_model())
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    t0 = time.time()
    with ps.Profile(activities=[ps.ProfilerActivity.CPU],
                    schedule=ps.schedule(wait=1, warmup=1, active=2, repeat=2),
                    on_trace_ready=ps.tensorboard_trace_handler(logdir),
                    record_shapes=True, profile_memory=True, with_stack=True) as prof:
        for step, (x, y) in enumerate(loader):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            prof.step()
            if rank == 0:
                print(f"step {step:3d}  loss {loss.item():.4f}  {time.time() - t0:6.2f} s", flush=True)
    dist.barrier()
    if rank == 0:
        print(f"done: traces in {logdir}; view with: tensorboard --logdir {os.path.dirname(logdir) or logdir}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
