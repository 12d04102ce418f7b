"""A 2-rank gloo job (CPU) for tests/collect/test_capture_trigger.py: each step sleeps `step_s` (the sleep
dominates, so a loaded machine does not change the verdict) and all-reduces a small tensor, so the ranks step
together; rank `slow_rank` sleeps 0.5 s more in steps [slow_from, slow_to). schedule=ps.on_demand(trigger=
ps.when_slow(...)): the job itself asks for a capture when a step is slow.

    python trigger_job.py RUN TOTAL_STEPS SLOW_FROM SLOW_TO STEP_S   (RANK, WORLD_SIZE, MASTER_* in the env)
"""
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src"))
from canning import profiling_suite as ps  # noqa: E402

SLOW_S = 0.5


def main():
    run, total, slow_from, slow_to, step_s = sys.argv[1], *map(int, sys.argv[2:5]), float(sys.argv[5])
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    x = torch.ones(16)
    trigger = ps.when_slow(ratio=5.0, warmup=10)  # 5x the median: a 0.5 s step trips it, a busy machine does not
    schedule = ps.on_demand(poll_s=0.05, heartbeat_s=0.2, min_interval_s=0, trigger=trigger)
    with ps.Profile(activities=[ps.ProfilerActivity.CPU], schedule=schedule,
                    on_trace_ready=ps.tensorboard_trace_handler(run, digest=False)) as prof:
        for step in range(total):
            time.sleep(step_s + (SLOW_S if rank == 1 and slow_from <= step < slow_to else 0.0))
            dist.all_reduce(x)
            prof.step()
    print(f"rank {rank}: {total} steps", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
