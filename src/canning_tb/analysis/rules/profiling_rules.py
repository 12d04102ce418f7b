"""The profile itself: settings that inflate the trace, windows too big for a trace viewer, and
the profiler settings that would let the other rules judge (no device events, no shapes, no
memory)."""
from __future__ import annotations

from ..summary import has_device_work
from . import thresholds as th
from .engine import RuleInput, rule
from .events import event_mix
from .finding import Finding, pct


@rule("trace_inflated", "profiling")
def trace_inflated(inp: RuleInput):
    mix = event_mix(inp)
    if not mix["events"]:
        return None
    share = mix["python_function"] / mix["events"]
    if share <= th.STACK_EVENTS_SHARE:
        return None
    return Finding(
        "", "", "info", "with_stack inflates the trace",
        f"{mix['python_function']} of the window's {mix['events']} events ({pct(share)}) are Python function "
        f"events recorded by with_stack=True / with_modules=True.",
        why="Stack recording slows every Python call in the profiled steps (the step times here are inflated) "
            "and makes the trace several times larger.",
        change_torch="profile once with with_stack=True to find the call sites, then measure with "
                     "with_stack=False, record_shapes=False (profile_memory only when looking at memory).",
        change_npu="the same in torch_npu.profiler (and profiler_level=Level0 when measuring).",
        gain_basis="profiling overhead, not the model's time", value=share,
        figures={"python_function_share": share, "events": mix["events"]})


@rule("window_too_long", "profiling")
def window_too_long(inp: RuleInput):
    events = event_mix(inp)["events"]
    if events <= th.VIEWER_EVENTS:
        return None
    return Finding(
        "", "", "info", "The window is too big for trace viewers",
        f"The window holds {events} events; chrome://tracing and Perfetto's web UI fail around {th.VIEWER_EVENTS}.",
        why="This plugin's Timeline reads it in tiles, but exported traces will not open elsewhere.",
        change_torch="profile fewer steps per window: schedule(wait=1, warmup=1, active=1..3, repeat=n).",
        change_npu="the same schedule in torch_npu.profiler.",
        gain_basis="profiling, not the model's time", value=events, figures={"events": events})


@rule("needs_device", "profiling")
def needs_device(inp: RuleInput):
    if has_device_work(inp.digest):
        return None
    return Finding(
        "", "", "info", "No device events: the device rules cannot judge",
        "The window has no kernels or device copies, so host-bound steps, launch overhead, device stalls, Tensor "
        "Core / cube use and overlap cannot be judged.",
        needs="run on the GPU / NPU and profile with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] "
              "(torch_npu: ProfilerActivity.NPU)")


@rule("needs_shapes", "profiling")
def needs_shapes(inp: RuleInput):
    if any(o.input_shapes for o in inp.digest.ops_by_shape) or not inp.digest.ops_by_name:
        return None
    return Finding("", "", "info", "No input shapes: matmul / conv shapes cannot be judged",
                   "The operators carry no input shapes.", needs="profile with record_shapes=True")


@rule("needs_memory", "profiling")
def needs_memory(inp: RuleInput):
    if inp.digest.memory or not inp.digest.ops_by_name:
        return None
    return Finding("", "", "info", "No memory records: peak, fragmentation and allocator rules cannot judge",
                   "The window has no memory events.", needs="profile with profile_memory=True")
