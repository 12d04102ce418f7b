"""canning-prof: the command line, one grammar: a subcommand, then its options.

  canning-prof performance [--output=./prof_results] [--with-stack] [--no-record-shapes] python train.py [args...]
  canning-prof view --input=PATH [--format=text|json] [--detail] [--worker=NAME]
  canning-prof compare [--base=PATH] --input=PATH [--format=text|json|markdown|junit] [--fail-on-regression=PCT]
                       [--gate-on=code|total]
  canning-prof digest --input=PATH_OR_URL [--dask=SCHEDULER_ADDRESS]   (cli/digest.py)
  canning-prof capture --logdir DIR [--run NAME] --steps N [--ranks 0,3] [--record-shapes ...]   (cli/capture.py)
  canning-prof mcp --logdir DIR [--http 127.0.0.1:PORT]   (the MCP server for assistants: canning_tb/mcp, docs/agents.md)
  canning-prof sql RUN "SELECT ..." [--format=table|csv|json|parquet] [--out FILE]   (cli/sql.py, docs/sql.md)

`--mode=performance|view|compare` (anywhere before the script's command) is kept as an alias of the
subcommand: `canning-prof --mode=view --input=PATH` is `canning-prof view --input=PATH`.

`view` prints the report of what PATH holds (a trace file, an *_ascend_pt folder, a run folder
with many ranks, or a whole logdir): first the ranks of a run across each other, then each window
that is not one of those ranks (all with --detail, or the --worker ones). `compare` compares the windows under --base
with those under --input per step; with --fail-on-regression=PCT it exits with status 3 when
the step time grew by more than PCT %, beyond the noise (a CI gate; by default on the code's part of the
change, a slower machine told apart: docs/compare.md), 2 when it cannot judge, and names the operators
that caused it. `--format=json` is the stable,
machine-readable face of the analysis: see docs/cli-json.md.
"""
from __future__ import annotations

import argparse
import sys

from canning_tb.store.heap import tune_this_process
from canning_tb.util.remote_fs import RemoteError

MODES = ("performance", "view", "compare")  # the subcommands `--mode=` names (the old grammar)
OWN_PARSERS = ("digest", "capture", "mcp", "sql")  # subcommands whose modules parse their own arguments
# our options that take a value: `--mode` is looked for only among our options, never in the script's command
_VALUED = {"--mode", "--output", "--input", "--base", "--format", "--fail-on-regression", "--gate-on", "--names",
           "--top", "--worker", "--cache-dir", "--wait", "--warmup", "--active", "--repeat", "--activities"}
EXAMPLES = """examples:
  canning-prof performance --output=./prof_results python train.py --epochs 1
  canning-prof performance --with-stack --profile-memory python train.py   (slower steps, more detail)
  canning-prof view --input=./prof_results
  canning-prof view --input=./log/run1 --format=json > report.json
  canning-prof compare --base=./log/baseline --input=./log/candidate
  canning-prof compare --base=./log/main --input=./log/pr --fail-on-regression=5% --format=markdown
  canning-prof compare --input=./log/pr   (against the run before it in ./log, or a triggered window's normal one)
  canning-prof digest --input=s3://bucket/logs [--dask=tcp://scheduler:8786]
  canning-prof capture --logdir ./log --steps 3 --wait   (a running job with ps.on_demand())
  canning-prof mcp --logdir ./log   (an MCP server for assistants, on stdio: docs/agents.md)
  canning-prof sql ./log/run1 "SELECT rank, avg(dur_ns) FROM steps GROUP BY rank"   (docs/sql.md)
  canning-prof --mode=view --input=./prof_results   (the --mode= form: the same as `view`)"""


def percent(text: str) -> float:
    """--fail-on-regression: "5", "5%" or "5 %" -> 5.0 (argparse type)."""
    try:
        value = float(text.strip().rstrip("%").strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"a percentage such as 5 or 5%, not {text!r}") from None
    if not 0 <= value < 1e6:
        raise argparse.ArgumentTypeError(f"a percentage from 0 up, not {text!r}")
    return value


def chip(text: str) -> str:
    """A chip of the peak table (analysis/efficiency/peaks.py); the error lists the known ones."""
    from canning_tb.analysis.efficiency.peaks import UnknownChip, chip_name, chip_row
    try:
        return chip_name(chip_row(text))
    except UnknownChip as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_chip(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chip", type=chip, default=None, metavar="NAME",
                        help="the chip whose peaks MFU, %% of peak and the roofline are judged against (910B3, "
                             "\"H100 SXM5\"...), over the run's manifest, CANNING_DEVICE_PEAKS and the files' device "
                             "info (docs/efficiency.md#peaks)")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="canning-prof", description="Profile a PyTorch script, or report on profiles already written.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True, metavar="{" + ",".join(MODES + OWN_PARSERS) + "}")
    links = argparse.ArgumentParser(add_help=False)
    links.add_argument("--cache-dir", default=None,
                       help="where digests are cached (default: the user's cache folder, $CANNING_CACHE_DIR)")
    links.add_argument("--follow-links", action="store_true",
                       help="also read files that symbolic links lead to outside --input")
    peaks = argparse.ArgumentParser(add_help=False)
    add_chip(peaks)
    report = argparse.ArgumentParser(add_help=False)
    report.add_argument("--format", choices=["text", "json"], default="text", help="output format")
    report.add_argument("--top", type=int, default=15, help="rows per table in the text report (and ranks listed "
                                                             "one by one; more ranks: their spread and outliers)")

    perf = sub.add_parser("performance", parents=[links, peaks], help="run a script under the profiler",
                          description="Run a training script under the profiler, unchanged (its optimizer steps "
                                      "mark the steps), then write performance.json beside the windows.")
    perf.add_argument("--output", default="./prof_results", help="where windows are written")
    perf.add_argument("--wait", type=int, default=0, help="steps skipped before each window")
    perf.add_argument("--warmup", type=int, default=1, help="warm-up steps before each window")
    perf.add_argument("--active", type=int, default=3, help="steps recorded per window")
    perf.add_argument("--repeat", type=int, default=1, help="number of windows (0: until the end)")
    perf.add_argument("--activities", default="auto", help="cpu,cuda,npu or auto")
    # the cheap option on, the costly ones off: stacks and memory records inflate the step times measured
    perf.add_argument("--record-shapes", action=argparse.BooleanOptionalAction, default=True,
                      help="record operator input shapes (cheap; default on)")
    perf.add_argument("--with-stack", action=argparse.BooleanOptionalAction, default=False,
                      help="record Python call stacks (inflates step times; default off)")
    perf.add_argument("--profile-memory", action=argparse.BooleanOptionalAction, default=False,
                      help="record every allocation (inflates step times; default off; needed for the memory "
                           "view and prof.memory_summary())")
    perf.add_argument("command", nargs=argparse.REMAINDER, help="python SCRIPT [ARGS...]")

    view = sub.add_parser("view", parents=[links, report, peaks], help="print the report of profiles",
                          description="The report of every window under PATH.")
    view.add_argument("--input", required=True,
                      help="a trace file, an *_ascend_pt folder, a run folder, a logdir or a performance.json")
    view.add_argument("--detail", action="store_true",
                      help="every window's own report (JSON: its digest), also for the ranks of a run, "
                           "which are otherwise summed up across ranks")
    view.add_argument("--worker", action="append", metavar="NAME",
                      help="the own report of this worker's windows (repeatable)")

    compare = sub.add_parser("compare", parents=[links, peaks], help="compare two runs per step",
                             description="Compare the windows under --base with those under --input per step "
                                         "(docs/compare.md). Exit status: 0 pass, 3 regression, 2 cannot judge "
                                         "or bad input.")
    compare.add_argument("--format", choices=["text", "json", "markdown", "junit"], default="text",
                         help="output format (markdown: a pull request's comment; junit: a CI's test report)")
    compare.add_argument("--top", type=int, default=15, help="rows per table in the text and markdown reports")
    compare.add_argument("--base", default=None,
                         help="the baseline (same kinds of PATH as --input); default: the default pairing of "
                              "--input's run in its logdir (the previous run, or the last normal window before a "
                              "triggered one)")
    compare.add_argument("--input", required=True, help="the candidate")
    compare.add_argument("--fail-on-regression", type=percent, default=None, metavar="PCT",
                         help="exit with status 3 when the step time grew by more than PCT %% (5 or 5%%) of the "
                              "baseline's, significantly (beyond the noise of the per-step times); 2 when too few "
                              "steps to judge")
    compare.add_argument("--gate-on", choices=["code", "total"], default="code",
                         help="what the gate judges: the code's part of the change (default; a slower machine "
                              "is told apart) or the whole change")
    compare.add_argument("--names", default=None, metavar="FILE",
                         help="a name map (JSON, docs/http_api.md); default: canning_names.json in --input")
    for name, what in (("digest", "digest windows ahead of viewing (cli/digest.py)"),
                       ("capture", "ask a running ps.on_demand() job to record steps (cli/capture.py)"),
                       ("mcp", "the MCP server for assistants (docs/agents.md)"),
                       ("sql", "SQL over every window of every rank of a run (docs/sql.md)")):
        sub.add_parser(name, help=what, add_help=False)  # listed in the help; parsed by their own modules
    return p


def mode_alias(argv: list[str]) -> list[str]:
    """`--mode=X` / `--mode X` among our options (before the script's command) -> the subcommand X first."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--" or not a.startswith("-"):
            break  # the script's command (or a subcommand): nothing after it is ours to look at
        if a.startswith("--mode="):
            return [a.split("=", 1)[1], *argv[:i], *argv[i + 1:]]
        if a == "--mode" and i + 1 < len(argv):
            return [argv[i + 1], *argv[:i], *argv[i + 2:]]
        i += 2 if a in _VALUED else 1
    return argv


def main(argv: list[str] | None = None) -> int:
    argv = mode_alias(list(sys.argv[1:] if argv is None else argv))
    if argv[:1] == ["digest"]:
        tune_this_process()  # a batch command that exits when done (store/heap.py); not capture, mcp
        return _digest(argv[1:])  # or a profiled script (performance): those live on
    if argv[:1] == ["capture"]:
        from .capture import capture_command
        return capture_command(argv[1:])
    if argv[:1] == ["sql"]:
        tune_this_process()  # reads, prints and exits
        from .sql import sql_command
        try:
            return sql_command(argv[1:])
        except BrokenPipeError:  # `canning-prof sql ... | head`
            return 0
    if argv[:1] == ["mcp"]:
        from canning_tb.mcp.cli import mcp_command
        return mcp_command(argv[1:])
    args = _parser().parse_args(argv)
    try:
        if args.mode == "performance":
            from .perf import run_script
            return run_script(args)
        tune_this_process()  # view and compare read, print and exit
        if args.mode == "view":
            from .view import view
            return view(args)
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
