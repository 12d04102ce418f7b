"""The findings lab: real CPU workloads with a known problem, each run as is ("before") and with the change
its finding proposes ("after"); the finding's predicted gain against the gain the jobs measured themselves.

Used by tests/lab/test_lab.py and benchmarks/lab.py. Public paths only, so the lab holds while the engine
changes: the jobs profile through `canning.profiling_suite` (tests/_lab_job.py), the findings are read from
`canning-prof --mode=view --format=json --detail RUNDIR` (window findings: `windows[].findings`, cross-rank
findings: `ranks[].findings`, docs/cli-json.md), and the measured step times from each job's own
time.perf_counter timer (OUT/timer.rank<R>.json), never from the profiler.

measured gain = mean step before - mean step after, over the profiled steps of both runs of each (the steps
the prediction is made on; the unprofiled steps after the window are reported beside it);
predicted gain = the finding's `gain_ns` per step (mean over the "before" runs, and over the ranks that have
it for a window finding); `claim.gain_low_ns` / `claim.gain_high_ns` reported where the engine gives them.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from _procs import communicate_all

JOB = Path(__file__).resolve().parent / "_lab_job.py"
REPO = Path(__file__).resolve().parents[1]
BAND = 0.30  # |predicted - measured| <= BAND x measured (issue 39: aim for +-30 %), on a quiet machine (benchmarks/lab.py)
# the tests' check, on whatever machine runs them (CI shares its cores): the predicted gain within a factor of
# FACTOR of the measured one. A finding of the wrong cause, or priced on the wrong graph, misses by more; the
# load a shared machine adds to one job and not the other moves a true finding's ratio by less (0.59-1.14 seen)
FACTOR = 2.0
# ... judged only while the rest of the machine kept under BUSY_CORES cores busy on average: a gloo all-reduce
# on the CPU competes with the other work, and with it DDP's one bucket, run after the backward, slowed more than
# its overlapped buckets (predicted / measured 0.49 and 0.63 with a mutation run beside the lab, 1.00 quiet)
BUSY_CORES = 0.5
JOB_TIMEOUT_S = 240
REPORT_TIMEOUT_S = 240


@dataclass(frozen=True)
class Pair:
    name: str
    world: int
    rules: tuple  # rule ids that state this finding (any of them)
    scope: str  # "window" (windows[].findings) or "ranks" (ranks[].findings)
    problem: str
    change: str
    rank: int = -1  # cross-rank: the rank the finding must name
    gain: str = "band"  # "band": predicted within BAND of measured; "none": a one-off, the finding claims no gain


PAIRS = {p.name: p for p in (
    Pair("slow_rank", 2, ("slow_rank_computing", "slow_rank_communication", "slow_rank_free"), "ranks",
         "rank 1 works 30 ms more per step", "no extra work", rank=1),
    Pair("dataloader", 1, ("dataloader_share",), "window",
         "DataLoader num_workers=0, 4 samples x 5 ms each", "num_workers=2, persistent"),
    Pair("ddp_buckets", 2, ("communication_not_overlapped",), "window",
         "DDP with one bucket (bucket_cap_mb=10000), 52 MiB of gradients, 8 ms backward per layer", "DDP's default buckets"),
    Pair("host_python", 1, ("python_on_path", "host_bound"), "window",
         "25 ms of Python (a wait) before the step's first operator", "removed"),
    Pair("unfused_optimizer", 1, ("unfused_optimizer",), "window",
         "RMSprop(foreach=False) over 300 small tensors", "foreach=True"),
    Pair("attention", 1, ("fusable_attention",), "window",
         "attention written out (matmul, mul, softmax, matmul), 2 layers x 4 heads x 1,024 tokens", "F.scaled_dot_product_attention"),
    Pair("attention_train", 1, ("fusable_attention",), "window",
         "attention written out and trained (forward and backward), 2 layers x 4 heads x 512 tokens",
         "F.scaled_dot_product_attention"),
    Pair("first_broadcast", 2, ("first_step_broadcast",), "window",
         "DDP built inside the first profiled step", "DDP built before the loop", gain="none"),
    Pair("pipeline", 2, ("stage_imbalance",), "ranks",
         "2 pipeline stages (gloo send / receive, 4 micro-batches, 1F1B), stage 0 with 6 of 8 layers",
         "4 layers per stage", rank=0),
)}
ORDER = ("before", "after", "after", "before")  # interleaved: a change of the machine's load falls on both
TEST_ORDER = ("before", "after")  # the tests' run: one job each way keeps the suite's time (the band is ORDER's)
# a tests' reading outside FACTOR is measured once more the other way round: with the first, ORDER's interleaving
# (one slow job, a reading of the machine rather than of the change, weighs half)
RETEST_ORDER = ("after", "before")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_job(pair: Pair, variant: str, out: Path, report: bool = True) -> dict:
    """Run one job (all its ranks) into `out` (its run folder: out/run); returns its timers and, with report,
    its report (the CLI's JSON)."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    port = _port()
    procs = [subprocess.Popen([sys.executable, str(JOB), pair.name, variant, str(rank), str(pair.world), str(port),
                               str(out)], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for rank in range(pair.world)]
    logs = communicate_all(procs, JOB_TIMEOUT_S)
    if any(p.returncode != 0 for p in procs):
        raise RuntimeError(f"{pair.name} {variant}: a rank failed: " + " | ".join(log[-3000:] for log in logs))
    timers = [json.loads((out / f"timer.rank{r}.json").read_text()) for r in range(pair.world)]
    return {"variant": variant, "timers": timers, "report": view_report(out / "run", out / "cache") if report else None}


def _env() -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src")] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def view_report(path: Path, cache: Path) -> dict:
    """`canning-prof --mode=view --format=json --detail PATH` (docs/cli-json.md)."""
    cli = subprocess.run([sys.executable, "-m", "canning_tb.cli.main", "--mode=view", "--format=json", "--detail",
                          "--cache-dir", str(cache), "--input", str(path)],
                         env=_env(), capture_output=True, text=True, timeout=REPORT_TIMEOUT_S)
    if cli.returncode != 0:
        raise RuntimeError(f"canning-prof --mode=view {path} failed: {cli.stderr[-3000:]}")
    return json.loads(cli.stdout)


def _part(report: dict, run: str) -> dict:
    """The entries of one run of a report over several runs."""
    return {"ranks": [e for e in report.get("ranks", []) if e.get("run") == run],
            "windows": [w for w in report.get("windows", []) if w.get("run") == run]}


def hits(pair: Pair, report: dict) -> list[dict]:
    """The findings of `pair`'s rules in one job's report (window findings of every rank, or cross-rank)."""
    if pair.scope == "ranks":
        found = [h for entry in report.get("ranks", []) for h in entry.get("findings", [])]
    else:
        found = [h for w in report.get("windows", []) for h in (w.get("findings") or [])]
    found = [h for h in found if h["rule"] in pair.rules]
    if pair.rank >= 0:  # a cross-rank finding counts when it names the rank slowed on purpose
        found = [h for h in found if any(e.get("rank") == pair.rank for e in h.get("evidence", []))]
    return found


def below_floor(hit: dict) -> bool:
    """A finding whose gain is under its own floor (claim.floor_ns), as the engine would drop it."""
    floor = hit.get("claim", {}).get("floor_ns", -1)
    return 0 <= hit["gain_ns"] < floor


def _mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


def job_step_ms(job: dict, which: str = "active") -> float:
    """Mean step of one job by its own timer (ms): the ranks' mean of their mean over `which` steps."""
    return _mean(_mean(t["steps_ms"][i] for i in t[which]) for t in job["timers"])


def profiler_step_ms(job: dict) -> float:
    """Mean step of one job as the profiler's digest has it (ms): the Overview's average step, ranks' mean."""
    figs = [w["figures"] for w in job["report"]["windows"] if w.get("figures")]
    return _mean(f["average_step_ns"] / 1e6 for f in figs if f.get("average_step_ns") is not None)


def _gain_of(pair: Pair, job: dict) -> tuple[float, float, float]:
    """(gain, low, high) in ms per step of the finding in one job: mean over the ranks that have it."""
    found = hits(pair, job["report"])
    if pair.scope == "ranks":  # several slow-rank findings name the rank: the one ranked first (largest gain)
        found = found[:1]
    gains = [h["gain_ns"] / 1e6 for h in found if h["gain_ns"] >= 0]
    low = [h["claim"]["gain_low_ns"] / 1e6 for h in found if h.get("claim", {}).get("gain_low_ns", -1) >= 0]
    high = [h["claim"]["gain_high_ns"] / 1e6 for h in found if h.get("claim", {}).get("gain_high_ns", -1) >= 0]
    return _mean(gains), _mean(low), _mean(high)


@dataclass
class Result:
    pair: Pair
    jobs: list = field(default_factory=list)
    # cores the rest of the machine kept busy, on average, while the jobs ran (machine CPU time less the jobs'
    # own, over the wall time); None where the machine does not say (not Linux)
    others_cores: float | None = None

    def of(self, variant: str) -> list[dict]:
        return [j for j in self.jobs if j["variant"] == variant]

    def measured_ms(self, which: str = "active") -> float:
        return _mean(job_step_ms(j, which) for j in self.of("before")) - _mean(job_step_ms(j, which)
                                                                               for j in self.of("after"))

    def steady_measured_ms(self) -> float:
        """The gain on the profiled steps after the first one (a one-off in the first step left out)."""
        def steady(j):
            return _mean(_mean(t["steps_ms"][i] for i in t["active"][1:]) for t in j["timers"])
        return _mean(steady(j) for j in self.of("before")) - _mean(steady(j) for j in self.of("after"))

    def predicted(self) -> tuple[float, float, float]:
        per_job = [_gain_of(self.pair, j) for j in self.of("before")]
        return tuple(_mean(g[i] for g in per_job if g[i] == g[i]) for i in range(3))

    def row(self) -> dict:
        pred, low, high = self.predicted()
        meas = self.steady_measured_ms() if self.pair.gain == "none" else self.measured_ms()
        ratio = pred / meas if meas and pred == pred and meas == meas else float("nan")
        within = abs(pred - meas) <= BAND * abs(meas) if pred == pred else False
        if self.pair.gain == "none":  # no gain claimed: pred is unknown (nan) or under its floor
            found = [h for j in self.of("before") for h in hits(self.pair, j["report"])]
            within = bool(found) and all(h["gain_ns"] < 0 or below_floor(h) for h in found)
        return {"pair": self.pair.name, "finding": "/".join(self.pair.rules), "problem": self.pair.problem,
                "change": self.pair.change, "predicted_ms": pred, "low_ms": low, "high_ms": high,
                "measured_ms": meas, "measured_unprofiled_ms": self.measured_ms("after_window"),
                "ratio": ratio, "within": within, "others_cores": self.others_cores,
                "before_step_ms": _mean(job_step_ms(j) for j in self.of("before")),
                "after_step_ms": _mean(job_step_ms(j) for j in self.of("after")),
                "before_profiler_ms": _mean(profiler_step_ms(j) for j in self.of("before")),
                "after_profiler_ms": _mean(profiler_step_ms(j) for j in self.of("after")),
                "found_before": [len(hits(self.pair, j["report"])) > 0 for j in self.of("before")],
                "found_after": [any(not below_floor(h) for h in hits(self.pair, j["report"])) for j in self.of("after")]}


def pooled(first: Result, second: Result) -> Result:
    """Two runs of one pair as one measurement: their jobs together, the busier run's load of the machine."""
    loads = [r.others_cores for r in (first, second) if r.others_cores is not None]
    return Result(first.pair, first.jobs + second.jobs, max(loads) if loads else None)


def _machine_cpu_s() -> float | None:
    """CPU seconds every process of this (Linux) machine has run since boot, from /proc/stat; None elsewhere."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal: all but idle and iowait are work
    work = [int(x) for i, x in enumerate(fields[1:9]) if i not in (3, 4)]
    return sum(work) / ticks


def _children_cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def run_pair(name: str, tmp: Path, order=ORDER) -> Result:
    """The pair's jobs in `order`, each in its folder under tmp; one report over all of them (one CLI run).
    Measures what the rest of the machine ran meanwhile (Result.others_cores)."""
    pair = PAIRS[name]
    result = Result(pair)
    jobs = tmp / "jobs"
    machine0, ours0, wall0 = _machine_cpu_s(), _children_cpu_s(), time.monotonic()
    for i, variant in enumerate(order):
        result.jobs.append(run_job(pair, variant, jobs / f"{i}-{variant}", report=False))
    machine1, ours1, wall = _machine_cpu_s(), _children_cpu_s(), time.monotonic() - wall0
    if machine0 is not None and machine1 is not None and wall > 0:
        result.others_cores = max(0.0, (machine1 - machine0) - (ours1 - ours0)) / wall
    report = view_report(jobs, tmp / "cache")
    for i, job in enumerate(result.jobs):
        job["report"] = _part(report, f"{i}-{job['variant']}/run")
        if not job["report"]["windows"]:
            raise RuntimeError(f"{name}: no window of job {i} in the report (runs: "
                               f"{sorted({w.get('run') for w in report.get('windows', [])})})")
    return result


def fmt(x: float, digits: int = 1) -> str:
    return "-" if x != x else f"{x:.{digits}f}"


def table(rows: list[dict]) -> str:
    head = ("| pair | finding | predicted ms/step (range) | measured ms/step | ratio | within ±"
            f"{BAND:.0%} | step before / after (timer) | step before / after (profiler) | measured, unprofiled | "
            "other work, cores |")
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        rng = f" ({fmt(r['low_ms'])}-{fmt(r['high_ms'])})" if r["low_ms"] == r["low_ms"] else ""
        lines.append(f"| {r['pair']}: {r['problem']} -> {r['change']} | {r['finding']} | {fmt(r['predicted_ms'])}{rng} | "
                     f"{fmt(r['measured_ms'])} | {fmt(r['ratio'], 2)} | {'yes' if r['within'] else 'no'} | "
                     f"{fmt(r['before_step_ms'])} / {fmt(r['after_step_ms'])} | "
                     f"{fmt(r['before_profiler_ms'])} / {fmt(r['after_profiler_ms'])} | {fmt(r['measured_unprofiled_ms'])} | "
                     f"{fmt(r['others_cores'] if r.get('others_cores') is not None else float('nan'), 2)} |")
    return "\n".join(lines)
