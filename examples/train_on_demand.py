"""A long DDP job (gloo, CPU) that profiles nothing until asked: schedule=ps.on_demand().

    torchrun --nproc_per_node=2 examples/train_on_demand.py ./log/live
    tensorboard --logdir ./log --canning_capture       # the canning tab: Capture...
    canning-prof capture --logdir ./log --steps 3 --wait
Every rank records the same steps and writes its window into the run folder (default ./log/live). The job
runs until a file named STOP appears in the run folder (or for --steps steps).
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))  # run from a checkout
from canning import profiling_suite as ps  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("run", nargs="?", default="./log/live")
    p.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: when RUN/STOP appears)")
    p.add_argument("--poll", type=float, default=2.0, help="ps.on_demand(poll_s=...)")
    p.add_argument("--heartbeat", type=float, default=10.0, help="ps.on_demand(heartbeat_s=...)")
    p.add_argument("--min-interval", type=float, default=30.0, help="ps.on_demand(min_interval_s=...)")
    p.add_argument("--when-slow", action="store_true", help="ps.on_demand(trigger=ps.when_slow()): the job asks "
                   "for a capture itself when a step is slow (touch RUN/SLOW to make rank 0's steps 3x as long)")
    args = p.parse_args()
    torch.set_num_threads(1)  # several ranks on a small machine
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 256), torch.randint(0, 10, (32,))
    stop_file = os.path.join(args.run, "STOP")
    schedule = ps.on_demand(poll_s=args.poll, heartbeat_s=args.heartbeat, min_interval_s=args.min_interval,
                            trigger=ps.when_slow() if args.when_slow else None)
    slow_file = os.path.join(args.run, "SLOW")
    with ps.Profile(activities=[ps.ProfilerActivity.CPU], schedule=schedule,
                    on_trace_ready=ps.tensorboard_trace_handler(args.run)) as prof:
        step, stop, slow = 0, False, False
        while not stop:
            began = time.perf_counter()
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            if args.when_slow and step % 20 == 0 and dist.get_rank() == 0:
                slow = os.path.exists(slow_file)  # looked at now and then: a stat per step would be a cost of its own
            if args.when_slow and dist.get_rank() == 0 and slow:
                time.sleep(2 * (time.perf_counter() - began))
            prof.step()
            step += 1
            if args.steps:
                stop = step >= args.steps
            elif step % 20 == 0:  # every rank stops at the same step: they agree on it
                flag = torch.tensor([float(os.path.exists(stop_file))])
                dist.all_reduce(flag, op=dist.ReduceOp.MAX)
                stop = bool(flag.item())
            if step % 1000 == 0 and dist.get_rank() == 0:
                print(f"step {step} at {time.strftime('%H:%M:%S')}", flush=True)
    print(f"rank {dist.get_rank()}: {step} steps", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
