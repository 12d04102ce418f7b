"""The profile itself: settings that inflate the trace, windows too big for a trace viewer, and
the profiler settings that would let the other rules judge (no device events, no shapes, no
memory)."""
from __future__ import annotations

from ..summary import has_device_work
from . import thresholds as th
from .engine import RuleInput, rule
from .. import intervals as iv
from .claims import kept_steps
from ..steps import has_steps
from .events import CAPTURE_BEGIN_RE, STARTUP_RE, capture_ranges, event_mix, host_rows, longest, startup_ranges
from .finding import Finding, evidence, ms, pct


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
        figures={"python_function_share": share, "events": mix["events"]},
        figure="trace_events", figure_value=float(mix["events"]), view="trace")


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
        gain_basis="profiling, not the model's time", value=events, figures={"events": events},
        figure="trace_events", figure_value=float(events), view="trace", threshold=th.VIEWER_EVENTS)


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


@rule("graph_capture", "profiling")
def graph_capture(inp: RuleInput):
    """Steps inside CUDA / HIP graph capture: the kernels are recorded, not run, so an idle device is
    by design; the time rules do not judge the captured time (claims.settle leaves it out)."""
    captured = capture_ranges(inp)
    if captured is None:
        return None
    starts, ends = kept_steps(inp.digest)
    inside = int(iv.measure(captured, starts, ends).sum()) // max(len(starts), 1)
    step = inp.step_ns
    if step <= 0 or inside <= th.MIN_GAIN_SHARE * step:
        return None
    first = longest(inp, host_rows(inp, CAPTURE_BEGIN_RE))
    return Finding(
        "", "", "info", "The window records a CUDA / HIP graph capture",
        f"Graph capture (stream begin capture ... graph instantiate) covers {ms(inside)} of the average step "
        f"({pct(inside / step)}): kernels launched meanwhile are recorded into the graph and run nothing on the "
        f"device, so the device is idle there by design.",
        why="A capture happens once (or on every new shape); the steps that matter replay the graph "
            "(cudaGraphLaunch / hipGraphLaunch). Device idle, host-bound and launch findings are not judged on "
            "the captured time.",
        change_torch="profile the steps after capture (schedule(wait=N, ...)), where the graph is replayed; a "
                     "capture in every step means the shapes change: keep them static (pad / bucket).",
        gain_basis="capture is not the training step's cost", value=inside / step,
        figures={"captured_ns_per_step": inside},
        evidence=[first] if first else [evidence("timeline", "", "graph capture")],
        figure="host", figure_value=inp.digest.average.host_ns / step, view="overview")


@rule("startup", "profiling")
def startup(inp: RuleInput):
    """A window that records the process start-up (device runtime initialisation): the time rules do
    not judge that time (claims.settle leaves it out), and a window with no training step at all says
    nothing about training."""
    found = startup_ranges(inp)
    if found is None:
        return None
    rows = host_rows(inp, STARTUP_RE)
    window = inp.digest.window
    total = int(iv.measure(found, [window.start_ns], [window.end_ns])[0])
    no_steps = not has_steps(inp.ctx.table)
    top = longest(inp, rows)
    return Finding(
        "", "", "info", "The window records the process start-up",
        f"Device runtime initialisation ({len(rows)} calls such as {top.row if top else 'cudaSetDevice'}) takes "
        f"{ms(total)} of the window (Runtime {pct(inp.digest.average.runtime_ns / inp.step_ns) if inp.step_ns > 0 else '–'}"
        f" of the average step)" + (", which has no ProfilerStep range: no training step is measured." if no_steps
                                    else "."),
        why="Initialisation (context creation, first allocations, cuDNN / cuBLAS handles, autotuning) happens once; "
            "time, launch and allocation findings on it would not be true of the training steps.",
        change_torch="start the profiler after the first steps (torch.profiler.schedule(wait=N, warmup=1, active=3)) "
                     "and call prof.step() every step.",
        change_npu="the same schedule in torch_npu.profiler.",
        gain_basis="start-up is not a per-step cost", value=total, figures={"startup_ns": total},
        evidence=[top] if top else [], figure="runtime", view="overview",
        figure_value=inp.digest.average.runtime_ns / inp.step_ns if inp.step_ns > 0 else float("nan"))
