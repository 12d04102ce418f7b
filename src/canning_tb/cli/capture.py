"""canning-prof capture: ask a running job that uses ps.on_demand() to record steps on every rank.

  canning-prof capture --logdir DIR [--run NAME] --steps N [--ranks 0,3] [--record-shapes] [--profile-memory]
                       [--with-stack] [--with-flops] [--with-modules] [--activities cpu,cuda,npu] [--wait]
  canning-prof capture --logdir DIR [--run NAME] --status

It writes the run's request file (the same as TensorBoard's Capture action) and says where it stands;
--wait follows it until every asked rank wrote its window (or could not). DIR may be a URL (s3://...).
Exit status: 0 asked (with --wait: written on every rank asked), 1 written on some ranks or none,
2 not asked (no job watching, a capture in progress, the job's rate limit, bad options).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from canning_tb.capture import request as cr
from canning_tb.capture.targets import DYNAMIC_PROFILE, CaptureBusy, Target, ask, run_state, targets
from canning_tb.util.remote_fs import RemoteError

_DONE = (cr.WRITTEN, "partial", cr.REFUSED, cr.FAILED, cr.MISSED, "gone")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="canning-prof capture", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--logdir", required=True, help="TensorBoard's logdir (or a run folder), local or a URL")
    p.add_argument("--run", help="the run (folder relative to --logdir); needed when several jobs watch")
    p.add_argument("--steps", type=int, help=f"steps to record (1..{cr.MAX_STEPS})")
    p.add_argument("--ranks", default="all", help="all (default), or a list: 0,3")
    p.add_argument("--activities", default="", help="cpu,cuda,npu (default: the job's own)")
    for name in cr.OPTIONS:
        p.add_argument("--" + name.replace("_", "-"), action="store_true", dest=name, help=f"torch.profiler's {name}")
    p.add_argument("--start-step", type=int, default=None,
                   help="a job using torch_npu's dynamic_profile only: the step (its own count) to start at")
    p.add_argument("--status", action="store_true", help="only say where the run's last request stands")
    p.add_argument("--wait", action="store_true", help="follow the request until it is written (or cannot be)")
    p.add_argument("--timeout", type=float, default=600.0, help="--wait: give up after this many seconds")
    p.add_argument("--format", choices=["text", "json"], default="text")
    return p


def _options(args) -> dict:
    ranks: object = "all"
    if args.ranks.strip().lower() != "all":
        try:
            ranks = [int(r) for r in args.ranks.split(",") if r.strip()]
        except ValueError:
            raise cr.RequestError(f"--ranks must be all or rank numbers like 0,3, not {args.ranks!r}") from None
    activities = [a.strip().upper() for a in args.activities.split(",") if a.strip()]
    return {"steps": args.steps, "ranks": ranks, "activities": activities, **{k: getattr(args, k) for k in cr.OPTIONS}}


def _pick_run(logdir: str, run: str | None) -> tuple[str, Target]:
    found = targets(logdir)
    if run is not None:
        if run not in found:
            raise LookupError(f"no job watches run {run!r} under {logdir} for a capture"
                              + (f"; these do: {', '.join(sorted(found))}" if found else ""))
        return run, found[run]
    if len(found) == 1:
        return next(iter(found.items()))
    if not found:
        raise LookupError(f"no job under {logdir} watches for a capture request: is it running with "
                          "schedule=ps.on_demand()?")
    raise LookupError(f"several jobs watch for a capture under {logdir}: pick one with --run "
                      f"({', '.join(sorted(found))})")


def capture_command(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        run, target = _pick_run(args.logdir, args.run)
        if args.status:
            return _show(args, run, run_state(target))
        if args.steps is None:
            raise cr.RequestError("--steps is required (or --status)")
        options = _options(args)
        if target.kind == DYNAMIC_PROFILE:
            options["start_step"] = args.start_step
        elif args.start_step is not None:
            raise cr.RequestError("--start-step is for jobs using torch_npu's dynamic_profile; with ps.on_demand() "
                                  "the start is planned from the ranks' heartbeats, the same on every rank")
        state = ask(target, options, "cli")
    except (LookupError, cr.RequestError, CaptureBusy, RemoteError) as e:
        print(f"canning-prof capture: {e}", file=sys.stderr)
        return 2
    _say(args, f"capture {state['id']} of run {run}: {state['message']}")
    if not args.wait:
        return _show(args, run, {"request": state}) if args.format == "json" else 0
    try:
        return _follow(args, run, target, state["id"])
    except cr.UnusableFile as e:  # the request's file spoiled while we waited
        print(f"canning-prof capture: {e}", file=sys.stderr)
        return 2


def _follow(args, run: str, target: Target, rid: str) -> int:
    deadline, said, state = time.monotonic() + args.timeout, "", None
    while time.monotonic() < deadline:
        state = run_state(target)["request"]
        if state is None or state["id"] != rid:
            print(f"canning-prof capture: the request of run {run} was replaced by another one", file=sys.stderr)
            return 1
        if state["message"] != said:
            said = state["message"]
            _say(args, f"capture {rid}: {said}")
        if state["state"] in _DONE:
            break
        time.sleep(0.5)
    else:
        print(f"canning-prof capture: gave up waiting after {args.timeout:g} s", file=sys.stderr)
    if args.format == "json":
        print(json.dumps({"run": run, "request": state}, indent=1))
    elif state is not None:
        for r in state["ranks"]:
            print(f"  rank {r['rank']}: {r['state']}" + (f": {', '.join(r['windows'])}" if r["windows"] else
                                                          f" ({r['message']})" if r["message"] else ""))
    return 0 if state is not None and state["state"] == cr.WRITTEN else 1


def _say(args, line: str) -> None:
    if args.format == "text":
        print(line, flush=True)


def _rate(steps_per_s) -> str:
    """The job's pace; unknown (no rank has stepped twice yet) is said, never 0."""
    return "pace unknown yet" if steps_per_s is None else f"{steps_per_s:.2f} steps/s"


def _show(args, run: str, state: dict) -> int:
    if args.format == "json":
        print(json.dumps({"run": run, **state}, indent=1))
        return 0
    job = state.get("job")
    if job is not None and state.get("kind") == DYNAMIC_PROFILE:
        print(f"run {run}: torch_npu dynamic_profile (profiler_config.json), {job['world_size']} ranks logging")
    elif job is not None:
        print(f"run {run}: {len(job['live_ranks'])} of {job['world_size']} ranks watching, "
              f"at step {job['step']} ({_rate(job['steps_per_s'])})")
    request = state.get("request")
    print(f"last request: {request['id']} ({request['by']}): {request['message']}" if request else "no request yet")
    if request and request.get("trigger"):
        print(f"asked by the job's trigger: {request['trigger']['reason']}")
    for problem in state.get("problems", []):
        print(f"problem: {problem}")
    return 0
