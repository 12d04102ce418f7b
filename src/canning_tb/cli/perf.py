"""`canning-prof performance` (alias --mode=performance): run a training script under the profiler, unchanged.

The script's own `optimizer.step()` calls mark the steps (a global optimizer hook calls
`prof.step()`), so windows follow the schedule without editing the script. A script that never
steps an optimizer is profiled whole, as one window.
"""
from __future__ import annotations

import os
import runpy
import sys


def _split_command(command: list[str]) -> tuple[str, list[str], bool]:
    """(script or module, its argv, is_module) from `python train.py ...` or `train.py ...`."""
    cmd = [c for c in command if c != "--"] if command[:1] == ["--"] else list(command)
    if not cmd:
        raise SystemExit("canning-prof: performance needs a command, e.g. canning-prof performance python train.py")
    if os.path.basename(cmd[0]).startswith("python"):
        cmd = cmd[1:]
    if cmd[:1] == ["-m"] and len(cmd) > 1:
        return cmd[1], cmd[1:], True
    if not cmd or not os.path.isfile(cmd[0]):
        raise SystemExit(f"canning-prof: script not found: {cmd[0] if cmd else '(none)'}")
    return cmd[0], cmd, False


def _activities(spec: str, ps):
    if spec == "auto":
        import torch
        acts = [ps.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            acts.append(ps.ProfilerActivity.CUDA)
        return acts
    names = {"cpu": ps.ProfilerActivity.CPU, "cuda": ps.ProfilerActivity.CUDA, "npu": ps.ProfilerActivity.NPU}
    try:
        return [names[s.strip().lower()] for s in spec.split(",") if s.strip()]
    except KeyError as e:
        raise SystemExit(f"canning-prof: unknown activity {e.args[0]!r} (use cpu, cuda, npu)")


def profiler_options(args) -> dict:
    """The profiler's switches from the command line (defaults: shapes on, stacks and memory off, since
    both inflate the step times the report measures)."""
    return {"record_shapes": getattr(args, "record_shapes", True), "profile_memory": getattr(args, "profile_memory", False),
            "with_stack": getattr(args, "with_stack", False)}


def run_script(args) -> int:
    target, argv, is_module = _split_command(args.command)
    from canning import profiling_suite as ps
    from torch.optim.optimizer import register_optimizer_step_post_hook

    os.makedirs(args.output, exist_ok=True)
    prof = ps.Profile(
        activities=_activities(args.activities, ps),
        # wait=0 lets a script without optimizer steps still end in a recorded window
        schedule=ps.schedule(wait=args.wait, warmup=max(args.warmup, 1), active=args.active, repeat=args.repeat),
        on_trace_ready=ps.tensorboard_trace_handler(args.output),
        chip=getattr(args, "chip", None),  # into each window's manifest: the report and the viewer judge against it
        **profiler_options(args))
    steps = [0]

    def on_step(optimizer, *_):
        steps[0] += 1
        prof.step()

    handle = register_optimizer_step_post_hook(on_step)
    old_argv = sys.argv
    sys.argv = list(argv)
    code = 0
    prof.start()
    try:
        if is_module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv = old_argv
        handle.remove()
        prof.stop()
    report = _write_report(args)
    print(f"canning-prof: {steps[0]} optimizer steps; profiles in {args.output}\n"
          + (f"  report:      canning-prof view --input={report}\n" if report else "")
          + f"  TensorBoard: tensorboard --logdir {args.output}", file=sys.stderr)
    return code


def _write_report(args) -> str | None:
    """performance.json beside the windows (what `--mode=view --input=` reads back), or None when the
    run recorded no window."""
    from canning_tb.ingest.table import InputError

    from .view import write_report
    try:
        return write_report(args.output, args.cache_dir, args.follow_links)
    except (FileNotFoundError, InputError) as e:
        print(f"canning-prof: no report written: {e}", file=sys.stderr)
        return None
