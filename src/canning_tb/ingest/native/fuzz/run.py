"""`make fuzz`: every target fuzzed for a bounded time (or a bounded number of inputs) against the modules
built with the sanitizers, one child interpreter per target; per target the runs done and any crash, its
reproducer kept under OUT/<target>/ (crash-*, the input that failed; log.txt, libFuzzer's output).

    python -m canning_tb.ingest.native.fuzz.run [--seconds 60 | --runs 3000] [--out fuzz-out] [targets...]
    python -m canning_tb.ingest.native.fuzz.run --replay fuzz-out/tree_sum/crash-... tree_sum

Exits 1 when a target crashed (a sanitizer report, a failed check, an exception), 2 when nothing can be
fuzzed here (no clang or no atheris). --replay runs the given inputs once each through one target, rebuilt
from the current sources: the check that a fix holds."""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import build, seeds

HERE = Path(__file__).resolve().parent
TARGETS = ("ascend_scan", "kineto_scan", "kineto_sweep", "tree_nest", "tree_sum")


@dataclass
class Outcome:
    target: str
    runs: int
    crashes: list[Path] = field(default_factory=list)
    code: int = 0
    log: Path | None = None

    @property
    def ok(self) -> bool:
        return self.code == 0 and not self.crashes

    def line(self) -> str:
        tail = "ok" if self.ok else f"FAILED (exit {self.code}): " + (", ".join(map(str, self.crashes)) or f"see {self.log}")
        return f"{self.target:13} {self.runs:>9} runs  {tail}"


def _runs(text: str) -> int:
    """Inputs run, from libFuzzer's final stats (or its last progress line when it died first)."""
    got = re.findall(r"stat::number_of_executed_units: (\d+)", text) or re.findall(r"Done (\d+) runs", text) \
        or re.findall(r"^#(\d+)\t", text, re.M)
    return int(got[-1]) if got else 0


def _found(home: Path) -> list[Path]:
    """libFuzzer's reproducers: the inputs that crashed, hung or ran out of memory."""
    return [p for p in home.iterdir() if p.name.startswith(("crash-", "leak-", "timeout-", "oom-"))]


def fuzz_one(target: str, built: Path, out: Path, fixtures: Path | None, seconds: float | None = None,
             runs: int | None = None, per_file: int = seeds.PER_FILE, max_files: int | None = None) -> Outcome:
    """One target in its own sanitized interpreter, bounded by seconds or by inputs run."""
    home = out / target
    corpus = home / "corpus"  # what libFuzzer found worth keeping: the next run starts from it
    corpus.mkdir(parents=True, exist_ok=True)
    before = set(_found(home))  # an earlier run's crashes stay there, reported by that run
    with tempfile.TemporaryDirectory(prefix=f"seeds-{target}-") as seed_dir:
        seeds.write(target, fixtures, Path(seed_dir), per_file, max_files)
        bound = f"-max_total_time={max(1, int(seconds))}" if runs is None else f"-runs={runs}"
        cmd = [sys.executable, str(HERE / f"{target}.py"), bound, f"-artifact_prefix={home}/", "-print_final_stats=1",
               "-timeout=60", "-rss_limit_mb=4096", str(corpus), seed_dir]
        log = home / "log.txt"
        with open(log, "w") as sink:
            sink.write(" ".join(cmd) + "\n")
            sink.flush()
            done = subprocess.run(cmd, env=build.child_env(built), cwd=home, stdout=sink, stderr=subprocess.STDOUT,
                                  timeout=(seconds or 0) + 600)
    text = log.read_text(errors="replace")
    crashes = sorted(set(_found(home)) - before)
    return Outcome(target, _runs(text), crashes, done.returncode, log)


def replay(target: str, built: Path, inputs: list[Path]) -> int:
    """Each input once through the target (libFuzzer runs files given as arguments); its exit status."""
    cmd = [sys.executable, str(HERE / f"{target}.py"), *map(str, inputs)]
    return subprocess.run(cmd, env=build.child_env(built), timeout=600).returncode


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    bound = ap.add_mutually_exclusive_group()
    bound.add_argument("--seconds", type=float, help="per target (default: FUZZ_SECONDS or 60)")
    bound.add_argument("--runs", type=int, help="inputs per target, instead of a time")
    ap.add_argument("--out", type=Path, default=Path("fuzz-out"), help="corpora, crashes and logs (gitignored)")
    ap.add_argument("--fixtures", type=Path, default=Path(os.environ.get("CANNING_FIXTURES", "tests/fixtures")))
    ap.add_argument("--replay", type=Path, action="append", help="an input to run once through the one target named "
                    "(repeatable)")
    ap.add_argument("targets", nargs="*", help=f"some of {', '.join(TARGETS)} (default: all)")
    args = ap.parse_args(argv)
    if set(args.targets) - set(TARGETS):
        ap.error(f"unknown targets {sorted(set(args.targets) - set(TARGETS))}: the targets are {', '.join(TARGETS)}")
    seconds = None if args.runs else args.seconds or float(os.environ.get("FUZZ_SECONDS", 60))
    out = args.out.resolve()
    fixtures = args.fixtures if args.fixtures.is_dir() else None
    if fixtures is None:
        print(f"no fixtures at {args.fixtures}: the scanners start from no seeds", file=sys.stderr)
    try:
        built = build.compile_all(out / "build")
        build.runtime()
    except build.Unavailable as e:
        print(f"nothing fuzzed: {e}", file=sys.stderr)
        return 2
    if args.replay:
        if len(args.targets) != 1:
            ap.error("--replay takes one target")
        return replay(args.targets[0], built, args.replay)
    failed = 0
    for target in args.targets or TARGETS:
        got = fuzz_one(target, built, out, fixtures, seconds, args.runs)
        print(got.line(), flush=True)
        failed += not got.ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
