"""canning-prof: the command line.

  canning-prof --mode=performance --output=./prof_results python train.py [args...]
  canning-prof --mode=view --input=PATH [--format=text|json] [--detail] [--worker=NAME]
  canning-prof --mode=compare --base=PATH --input=PATH [--format=text|json] [--fail-on-regression=PCT]
  canning-prof digest --input=PATH_OR_URL [--dask=SCHEDULER_ADDRESS]   (cli/digest.py)
  canning-prof capture --logdir DIR [--run NAME] --steps N [--ranks 0,3] [--record-shapes ...]   (cli/capture.py)
  canning-prof mcp --logdir DIR [--http 127.0.0.1:PORT]   (the MCP server for assistants: canning_tb/mcp, docs/agents.md)

`view` prints the report of what PATH holds (a trace file, an *_ascend_pt folder, a run folder
with many ranks, or a whole logdir): first the ranks of a run across each other, then each window
that is not one of those ranks (all with --detail, or the --worker ones). `compare` compares the windows under --base
with those under --input per step; with --fail-on-regression=PCT it exits with status 3 when
the step time grew by more than PCT % (a CI gate) and names the operators that caused it. `--format=json` is the stable,
machine-readable face of the analysis: see docs/cli-json.md.
"""
from __future__ import annotations

import argparse
import os
import sys

from canning_tb.store.heap import tune_this_process
from canning_tb.store.links import FOLLOW_ENV
from canning_tb.util.remote_fs import RemoteError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="canning-prof",
        description="Profile a PyTorch script, or report on profiles already written.",
        epilog="examples:\n"
               "  canning-prof --mode=performance --output=./prof_results python train.py --epochs 1\n"
               "  canning-prof --mode=view --input=./prof_results\n"
               "  canning-prof --mode=view --input=./log/run1 --format=json > report.json\n"
               "  canning-prof --mode=compare --base=./log/baseline --input=./log/candidate\n"
               "  canning-prof --mode=compare --base=./log/main --input=./log/pr --fail-on-regression=5\n"
               "  canning-prof digest --input=s3://bucket/logs [--dask=tcp://scheduler:8786]\n"
               "  canning-prof capture --logdir ./log --steps 3 --wait   (a running job with ps.on_demand())\n"
               "  canning-prof mcp --logdir ./log   (an MCP server for assistants, on stdio: docs/agents.md)",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=["performance", "view", "compare"], required=True,
                   help="performance: run a script under the profiler; view: print a report; "
                        "compare: compare two runs")
    p.add_argument("--output", default="./prof_results", help="performance: where windows are written")
    p.add_argument("--input", help="view/compare: a trace file, an *_ascend_pt folder, a run folder or a logdir")
    p.add_argument("--base", help="compare: the baseline (same kinds of PATH as --input)")
    p.add_argument("--format", choices=["text", "json"], default="text", help="view/compare output format")
    p.add_argument("--fail-on-regression", type=float, default=None, metavar="PCT",
                   help="compare: exit with status 3 when the mean step time grew by more than PCT %%")
    p.add_argument("--names", default=None, metavar="FILE",
                   help="compare: a name map (JSON, docs/http_api.md); default: canning_names.json in --input")
    p.add_argument("--top", type=int, default=15, help="rows per table in the text report (and ranks listed one by "
                                                        "one; more ranks: their spread and outliers)")
    p.add_argument("--detail", action="store_true",
                   help="view: every window's own report (JSON: its digest), also for the ranks of a run, "
                        "which are otherwise summed up across ranks")
    p.add_argument("--worker", action="append", metavar="NAME",
                   help="view: the own report of this worker's windows (repeatable)")
    p.add_argument("--cache-dir", default=None,
                   help="where digests are cached (default: the user's cache folder, $CANNING_CACHE_DIR)")
    p.add_argument("--follow-links", action="store_true",
                   help="view/compare: also read files that symbolic links lead to outside --input")
    p.add_argument("--wait", type=int, default=0, help="performance: steps skipped before each window")
    p.add_argument("--warmup", type=int, default=1, help="performance: warm-up steps before each window")
    p.add_argument("--active", type=int, default=3, help="performance: steps recorded per window")
    p.add_argument("--repeat", type=int, default=1, help="performance: number of windows (0: until the end)")
    p.add_argument("--activities", default="auto", help="performance: cpu,cuda,npu or auto")
    p.add_argument("command", nargs=argparse.REMAINDER, help="performance: python SCRIPT [ARGS...]")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["digest"]:
        tune_this_process()  # a batch command that exits when done (store/heap.py); not capture, mcp
        return _digest(argv[1:])  # or a profiled script (performance): those live on
    if argv[:1] == ["capture"]:
        from .capture import capture_command
        return capture_command(argv[1:])
    if argv[:1] == ["mcp"]:
        from canning_tb.mcp.cli import mcp_command
        return mcp_command(argv[1:])
    args = _parser().parse_args(argv)
    if args.follow_links:  # the store's one policy for links (store/links.py) reads it
        os.environ[FOLLOW_ENV] = "1"
    try:
        if args.mode == "performance":
            from .perf import run_script
            return run_script(args)
        tune_this_process()  # view and compare read, print and exit
        if args.mode == "view":
            if not args.input:
                raise SystemExit("canning-prof: --mode=view needs --input=PATH")
            from .view import view
            return view(args)
        if not (args.input and args.base):
            raise SystemExit("canning-prof: --mode=compare needs --base=PATH and --input=PATH")
        from .compare import compare
        return compare(args)
    except (FileNotFoundError, RemoteError) as e:
        print(f"canning-prof: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `canning-prof ... | head`
        return 0


def _digest(argv: list[str]) -> int:
    from .digest import digest_command
    try:
        return digest_command(argv)
    except (FileNotFoundError, RemoteError) as e:
        print(f"canning-prof digest: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
