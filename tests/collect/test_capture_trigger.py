"""ps.on_demand(trigger=...): the job asks for a capture itself.

The rules and guards with hand-made step series (no clock but the injected one, no sleeping), the request
format's `trigger`, and real 2-rank gloo jobs (trigger_job.py): a rank that turns slow in the middle makes the
job capture the next steps on BOTH ranks (the same steps, the slow ones among them, the reason in each
manifest); a steady job over 200 steps captures nothing. The slow rank sleeps 0.5 s against 30 ms steps
(and the trigger asks 5x the median), so no verdict depends on how loaded the machine is."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _capture import manifests, request, status, trace_steps
from canning_tb.capture import request as cr
from canning_tb.collect.trigger import WhenEvery, When, WhenSlow, ms

HERE = Path(__file__).resolve().parent


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def slow_rule(**kw):
    said = []
    kw.setdefault("warmup", 5)
    kw.setdefault("cooldown_steps", 0)
    kw.setdefault("max_per_hour", 100)
    rule = WhenSlow(say=said.append, clock=kw.pop("clock", Clock()), **kw)
    return rule, said


def feed(rule, times, first=0, run_bytes=None):
    """{step: trigger} of the steps that fired."""
    return {s: f for s, t in enumerate(times, first) if (f := rule.check(t, s, run_bytes)) is not None}


def steady(n, base=0.034, jitter=0.002):
    return [base + jitter * ((i * 7) % 5 - 2) / 2 for i in range(n)]  # +-2 ms around 34 ms, no randomness


# -- the baseline and the decision -------------------------------------------------------------------
def test_the_warm_up_decides_nothing_even_when_its_steps_are_slow():
    rule, _ = slow_rule(warmup=10)
    assert feed(rule, [5.0, 3.0] + [0.034] * 8) == {}  # compilation-like first steps
    assert rule.median is None  # and they are not in the baseline


def test_a_spike_fires_once_with_its_reason_and_steady_noise_does_not():
    rule, _ = slow_rule()
    times = steady(100) + [0.081] + steady(50)
    fired = feed(rule, times)
    assert list(fired) == [100]
    t = fired[100]
    assert t["kind"] == "slow" and t["step"] == 100 and t["step_ns"] == 81_000_000
    assert abs(t["median_ns"] - 34_000_000) <= 1_000_000
    assert t["reason"] == "step 100 took 81 ms, 2.4x the median 34 ms"
    assert cr.check_trigger(t) == t  # what a request holds


def test_the_margin_needs_both_k_spreads_and_the_ratio():
    rule, _ = slow_rule(ratio=2.0)  # steady, tight: k x spread is small, the ratio decides
    assert feed(rule, steady(60) + [0.060]) == {}  # 1.8x: over many spreads, under the ratio
    noisy, _ = slow_rule(k=6, ratio=1.5)
    wide = [0.020 if i % 2 else 0.060 for i in range(60)]  # median 40 ms, MAD 20 ms: 6 spreads ~ 218 ms
    assert feed(noisy, wide + [0.150]) == {}  # 3.75x the median, within 6 spreads
    assert list(feed(noisy, [0.300], first=61)) == [61]


def test_steady_jitter_up_to_a_load_swing_does_not_fire_a_5x_trigger():
    rule, _ = slow_rule(ratio=5.0)
    loaded = [0.030 + 0.090 * ((i * 13) % 7 == 0) for i in range(500)]  # every 7th step 4x as long
    assert feed(rule, loaded) == {}


def test_slow_steps_stay_out_of_the_baseline():
    rule, _ = slow_rule()
    feed(rule, steady(40))
    median = rule.median
    feed(rule, [0.5] * 40, first=40)  # a slow phase: each fires (no cool-down here), none is "normal"
    rule._rebase()
    assert rule.median == median


def test_cool_down_in_steps_after_a_firing_and_after_a_capture():
    rule, _ = slow_rule(cooldown_steps=10)
    feed(rule, steady(40))
    assert list(feed(rule, [0.5] * 12, first=40)) == [40, 51]  # quiet for 10 steps after 40
    rule.captured(60)  # a capture ended at step 60: quiet until 71
    assert list(feed(rule, [0.5] * 12, first=61)) == [71]


def test_at_most_k_per_hour_with_an_injected_clock():
    clock = Clock()
    rule, said = slow_rule(max_per_hour=2, clock=clock)
    feed(rule, steady(40))
    assert list(feed(rule, [0.5] * 5, first=40)) == [40, 41]
    assert said == ["trigger: step 42 took 500 ms, 14.7x the median 34 ms; not asked: 2 captures were triggered "
                    "within the hour (max_per_hour)"]  # said once, not at each step
    clock.now += 3599
    assert feed(rule, [0.5], first=50) == {}
    clock.now += 1
    assert list(feed(rule, [0.5], first=51)) == [51]  # the first one is an hour old


def test_no_trigger_past_the_byte_budget_and_unknown_is_not_past():
    rule, said = slow_rule(max_bytes=1000)
    feed(rule, steady(40))
    assert feed(rule, [0.5], first=40, run_bytes=1000) == {}
    assert "the budget is 0 MiB (max_bytes)" in said[0]
    assert list(feed(rule, [0.5], first=41, run_bytes=999)) == [41]
    assert list(feed(rule, [0.5], first=42, run_bytes=None)) == [42]


def test_when_every_and_when_and_a_failing_rule_never_raise():
    every = WhenEvery(25, say=print, max_per_hour=100)
    assert list(feed(every, [0.01] * 80)) == [25, 50, 75]
    assert feed(every, [0.01])  == {}
    said = []
    calls = []
    rule = When(lambda t, s: calls.append(s) or t > 0.1, say=said.append, cooldown_steps=0, max_per_hour=9)
    assert list(feed(rule, [0.01, 0.2, 0.01])) == [1]
    assert "the job's rule" in feed(rule, [0.3], first=3)[3]["reason"]

    def broken(t, s):
        raise KeyError("oops")
    bad = When(broken, say=said.append)
    assert feed(bad, [0.01] * 5) == {}
    assert [m for m in said if "KeyError" in m] == [m for m in said if "failed at step 0" in m]
    assert len([m for m in said if "KeyError" in m]) == 1


def test_durations_for_people():
    assert [ms(0.081), ms(0.0042), ms(0.5), ms(1.5), ms(42)] == ["81 ms", "4.2 ms", "500 ms", "1.5 s", "42 s"]


# -- the request holds the trigger ---------------------------------------------------------------------
TRIGGER = {"kind": "slow", "step": 4213, "step_ns": 81_000_000, "median_ns": 34_000_000,
           "reason": "step 4,213 took 81 ms, 2.4x the median 34 ms"}


def test_a_triggered_request_parses_and_others_may_not_hold_a_trigger():
    good = request(10, by="trigger", trigger=TRIGGER)
    assert cr.parse_request(json.dumps(good).encode())["trigger"] == TRIGGER
    for bad, why in [(request(10, trigger=TRIGGER), "only when"), (request(10, by="trigger"), "only when"),
                     (request(10, by="trigger", trigger={**TRIGGER, "path": "/etc"}), "exactly"),
                     (request(10, by="trigger", trigger={**TRIGGER, "reason": "x\ny"}), "printable"),
                     (request(10, by="trigger", trigger={**TRIGGER, "kind": "cron"}), "kind")]:
        with pytest.raises(cr.RequestError, match=why):
            cr.parse_request(json.dumps(bad).encode())


def test_a_triggered_start_is_planned_at_the_pace_of_the_slow_step():
    start, seen = cr.plan_triggered_start(100, 0.5, [], 0, poll_s=0.05)
    assert seen == 100 and start == 100 + 5  # (2 x 0.05 + 2 s) / 0.5 s
    assert cr.plan_triggered_start(100, 0.001, [], 0, poll_s=2.0)[0] == 100 + 6000
    assert cr.plan_triggered_start(100, 60.0, [], 0, poll_s=2.0)[0] == 100 + cr.MIN_LEAD_STEPS


# -- real 2-rank jobs ------------------------------------------------------------------------------------
def run_job(tmp_path, total, slow_from, slow_to, step_s=0.03, timeout=240):
    from test_handler_ddp import free_port
    run = tmp_path / "run"
    port, procs, logs = free_port(), [], []
    for rank in range(2):
        env = {**os.environ, "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        logs.append(tmp_path / f"rank{rank}.log")
        procs.append(subprocess.Popen([sys.executable, str(HERE / "trigger_job.py"), str(run), str(total),
                                       str(slow_from), str(slow_to), str(step_s)],
                                      env=env, stdout=open(logs[-1], "w"), stderr=subprocess.STDOUT, text=True))
    try:
        codes = [p.wait(timeout=timeout) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    text = [log.read_text() for log in logs]
    assert codes == [0, 0], text
    return str(run), text


@pytest.mark.slow
@pytest.mark.timed
def test_a_rank_turning_slow_makes_both_ranks_capture_the_same_slow_steps(tmp_path):
    slow_from, slow_to = 40, 56  # 16 steps of 0.5 s on rank 1 (rank 0 waits for it in the all-reduce)
    run, logs = run_job(tmp_path, total=80, slow_from=slow_from, slow_to=slow_to)
    mans = sorted(manifests(run), key=lambda m: m["rank"])
    assert [m["rank"] for m in mans] == [0, 1], logs  # one window per rank: one capture, no second one
    steps = mans[0]["steps"]
    assert mans[1]["steps"] == steps == trace_steps(run, mans[0]) == trace_steps(run, mans[1]), logs
    assert len(steps) == 3 and slow_from < steps[0] and steps[-1] < slow_to  # the window holds slow steps
    for m in mans:  # and each step of it was slow on both ranks
        assert all(end - begin > 0.4e9 for _, begin, end in m["step_times_ns"]), m["step_times_ns"]
    t = mans[0]["trigger"]
    assert t == mans[1]["trigger"] and t["kind"] == "slow" and t["step"] == slow_from, logs
    assert t["step_ns"] > 0.5e9 and t["median_ns"] < 0.1e9
    assert t["reason"].startswith(f"step {slow_from} took ") and "x the median" in t["reason"]
    req = json.load(open(os.path.join(run, ".canning-capture", "request.json")))
    assert req["by"] == "trigger" and req["trigger"] == t and req["start_step"] == steps[0]
    assert all(status(run, r)["state"] == "written" for r in (0, 1))
    assert any("trigger: step" in text and "asked steps" in text for text in logs)
    shown(tmp_path, t["reason"], f"window 1 (steps {steps[0]}-{steps[-1]}, triggered)")


def shown(logdir, reason, label):
    """The reason as each front door shows it: the plugin's window listing, the MCP server's, the CLI's view,
    and the request's state (canning-prof capture --status)."""
    from canning_tb.mcp.listing import list_windows
    from canning_tb.mcp.server import build
    from canning_tb.store import Store
    from canning_tb.store.scanner import listing
    (run,) = listing(Store(str(logdir), str(logdir / "cache1")))["runs"]
    wins = [w for worker in run["workers"] for w in worker["windows"]]
    assert [(w["label"], w["trigger"]) for w in wins] == [(label, reason)] * 2
    _, host = build(str(logdir), str(logdir / "cache2"))
    rows = list_windows(host, "run")["windows"]
    assert [(r["label"], r["trigger"]) for r in rows] == [(label, reason)] * 2
    cli = [sys.executable, "-m", "canning_tb.cli.main", "view", f"--input={logdir / 'run'}",
           f"--cache-dir={logdir / 'cache3'}"]
    out = subprocess.run([*cli, "--format=json"], capture_output=True, text=True, timeout=300, check=True).stdout
    assert [(w["label"], w["trigger"]) for w in json.loads(out)["windows"]] == [(label, reason)] * 2
    out = subprocess.run([*cli, "--detail"], capture_output=True, text=True, timeout=300, check=True).stdout
    assert out.count(f"triggered by the job: {reason}\n") == 2
    status_cli = [sys.executable, "-m", "canning_tb.cli.main", "capture", f"--logdir={logdir}", "--status"]
    out = subprocess.run(status_cli, capture_output=True, text=True, timeout=120, check=True).stdout
    assert "(trigger): written" in out and f"asked by the job's trigger: {reason}\n" in out, out


@pytest.mark.slow
@pytest.mark.timed
def test_a_steady_job_over_200_steps_triggers_nothing(tmp_path):
    run, logs = run_job(tmp_path, total=200, slow_from=0, slow_to=0)
    assert manifests(run) == [] and not os.path.exists(os.path.join(run, ".canning-capture", "request.json")), logs
    assert not any("trigger:" in text for text in logs)


# -- the watch: two ranks firing together, the bytes of the run -----------------------------------------
def test_a_triggered_plan_gives_way_to_the_triggered_request_the_file_kept(tmp_path):
    from canning_tb.capture.watch import Watcher
    from canning_tb.collect.schedule import OnDemand
    w = Watcher(str(tmp_path / "run"), OnDemand(trigger=WhenSlow()), "torch")
    w.step = 10
    own = cr.parse_request(json.dumps(request(20, by="trigger", trigger=TRIGGER)).encode())
    kept = cr.parse_request(json.dumps(request(21, by="trigger", trigger=TRIGGER)).encode())
    person = cr.parse_request(json.dumps(request(22)).encode())
    w._decide(own)
    assert w.plan is own and w._status["state"] == "scheduled"
    w._decide(kept)  # another rank wrote after this one: the file holds its request, every rank takes it
    assert w.plan is kept and w._status["request"] == kept["id"] and own["id"] in w._status["message"]
    w._decide(person)  # a person's request is not a trigger's: refused while one is planned, as always
    assert w.plan is kept and w._status["state"] == "refused"
    w.step = 20  # one step before its start (the warm-up): too late to change what the rank records
    w._decide(own)
    assert w.plan is kept


def test_the_run_bytes_leave_the_capture_folder_out(tmp_path):
    from canning_tb.capture.files import CaptureFolder
    run = tmp_path / "run"
    (run / ".canning-capture").mkdir(parents=True)
    (run / ".canning-capture" / "request.json").write_bytes(b"x" * 500)
    (run / "a.pt.trace.json.gz").write_bytes(b"x" * 1000)
    (run / "rank0_ascend_pt").mkdir()
    (run / "rank0_ascend_pt" / "data.bin").write_bytes(b"x" * 24)
    assert CaptureFolder(str(run)).window_bytes() == 1024


def test_a_firing_the_job_would_refuse_for_its_rate_limit_is_not_counted_in_the_hour():
    rule, said = slow_rule(max_per_hour=1, cooldown_steps=3)
    feed(rule, steady(40))
    held = (7, "the job accepts one capture per 30 s (min_interval_s); the next in 12 s")
    for step in range(40, 50):
        assert rule.check(0.5, step, None, lambda: held) is None
    assert said == ["trigger: step 40 took 500 ms, 14.7x the median 34 ms; not asked: " + held[1]]  # once
    assert list(feed(rule, [0.5] * 3, first=52)) == [52]  # the hour's one capture is still there to take


def test_when_every_captures_in_a_single_process_job_and_its_manifest_says_so(tmp_path):
    """No torch.distributed: one rank writes the request and records; the manifest holds the trigger."""
    import time
    torch = pytest.importorskip("torch")
    from canning import profiling_suite as ps
    run = str(tmp_path / "run")
    prof = ps.Profile(activities=[ps.ProfilerActivity.CPU],
                      schedule=ps.on_demand(poll_s=0.02, heartbeat_s=0.1, min_interval_s=0,
                                            trigger=ps.when_every(steps=30, capture_steps=2)),
                      on_trace_ready=ps.tensorboard_trace_handler(run, digest=False))
    prof.start()
    try:
        x = torch.randn(16, 16)
        for _ in range(600):  # 10 ms steps: the start is about 2 s (two polls and 2 s) after step 30
            time.sleep(0.01)
            (x @ x).sum()
            prof.step()
            if manifests(run):
                break
    finally:
        prof.stop()
    (man,) = manifests(run)
    assert man["trigger"]["kind"] == "every" and man["trigger"]["step"] == 30 and man["trigger"]["median_ns"] is None
    assert man["trigger"]["reason"].startswith("every 30 steps: step 30 (took ")
    assert len(man["steps"]) == 2 and man["steps"][0] > 30


def test_on_steps_of_two_ms_a_hiccup_that_doubles_one_fires_nothing_a_real_slow_step_does():
    # 2 ms steps: a 4.5 ms step is 2.25x the median (over `ratio` and the spread) but only 2.5 ms over it, under
    # the 10 ms margin; a 15 ms step is 13 ms over it
    rule, _ = slow_rule()
    times = steady(100, base=0.002, jitter=0.0001) + [0.0045] + steady(20, base=0.002, jitter=0.0001) + [0.015]
    assert list(feed(rule, times)) == [121]
    rule, _ = slow_rule(min_excess_s=0.0)  # without the margin the hiccup fires too
    assert list(feed(rule, times))[:1] == [100]
