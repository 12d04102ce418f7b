"""The public collection API: `from canning import profiling_suite as ps`.

    with ps.Profile(activities=[ps.ProfilerActivity.CPU], schedule=ps.schedule(wait=1, warmup=1, active=2),
                    on_trace_ready=ps.tensorboard_trace_handler("./log")) as prof:
        for batch in loader:
            train_step(batch)
            prof.step()

`schedule=ps.on_demand()` records nothing until asked from TensorBoard (Capture) or `canning-prof capture`.
`ps.on_demand(trigger=ps.when_slow())` lets the job ask itself when a step is slow (also ps.when_every(steps=N),
ps.when(lambda step_time_s, step: ...)): every rank records the same next steps, the manifest says why.
torch (and torch_npu, when NPU is asked for) is imported only when a profile is built.
"""
from canning_tb.collect import Profile, ProfilerActivity, on_demand, profile, schedule, start, stop
from canning_tb.collect.trigger import when, when_every, when_slow
from canning_tb.handler import tensorboard_trace_handler

__all__ = ["Profile", "profile", "start", "stop", "ProfilerActivity", "schedule", "on_demand", "when_slow",
           "when_every", "when", "tensorboard_trace_handler"]
