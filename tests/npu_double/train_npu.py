"""One rank of a 2-process gloo run profiled with ps.Profile on "NPU" (the FAKE torch_npu of this folder).

    python tests/npu_double/train_npu.py <logdir> <steps>   (RANK, WORLD_SIZE, MASTER_* set by the test)
The test puts this folder on PYTHONPATH so that `import torch_npu` finds the fake.
"""
import sys

import torch
import torch.distributed as dist

from canning import profiling_suite as ps


def main():
    logdir, steps = sys.argv[1], int(sys.argv[2])
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    model = torch.nn.Linear(32, 8)
    with ps.Profile(activities=[ps.ProfilerActivity.CPU, ps.ProfilerActivity.NPU],
                    schedule=ps.schedule(wait=0, warmup=1, active=1, repeat=3),
                    on_trace_ready=ps.tensorboard_trace_handler(logdir)) as prof:
        for _ in range(steps):
            grad = model(torch.randn(16, 32)).sum()
            dist.all_reduce(grad.detach())
            prof.step()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
