"""The one default pairing (queries/pairing.py, issues 42 and 44) on real files: a run of one window is compared
with the previous run of the logdir, never with itself; the only window of a logdir has nothing to compare
with (a clear error); a window the job asked for on a slow step is compared with the last normal window
before it, by the CLI without --base too, which says so."""
import json
import shutil

import pytest

from conftest import fixture_path
from test_cli import run_cli

from canning_tb.queries.errors import NotFound
from canning_tb.queries.pairing import default_pairing, run_pairing, window_pairing
from canning_tb.store import Store

RESNET = fixture_path("kineto", "resnet50_v100")
W1, W2 = "1623143089861", "1623143566756"


def one_window_runs(root):
    """Run "a" holds the V100 fixture's first window, run "b" its second: one window each."""
    for run, window in (("a", W1), ("b", W2)):
        (root / run).mkdir(parents=True)
        shutil.copy(RESNET / f"worker0.{window}.pt.trace.json.gz", root / run)
    return root


def test_a_one_window_run_is_compared_with_the_previous_run(tmp_path):
    store = Store(str(one_window_runs(tmp_path / "log")), cache_dir=str(tmp_path / "cache"))
    p = window_pairing(store, "b", "worker0", W2)
    assert p.rule == "previous run" and p.base == [("a", "worker0", W1)] and p.target == [("b", "worker0", W2)]
    assert "matching window of the previous run" in p.text
    p = run_pairing(store, "b")
    assert p.rule == "previous run" and p.base == [("a", "worker0", W1)] and "'b' against 'a'" in p.text
    # the first run's window: nothing before it, no other window or worker: the next run's, never itself
    p = window_pairing(store, "a", "worker0", W1)
    assert p.rule == "next run" and p.base == [("b", "worker0", W2)]
    with pytest.raises(NotFound, match="first run of the logdir"):
        run_pairing(store, "a")
    shutil.rmtree(tmp_path / "log" / "b")
    store.refresh()
    with pytest.raises(NotFound, match="only window of the logdir; name a baseline"):
        window_pairing(store, "a", "worker0", W1)


def test_two_windows_of_one_run_pair_window_with_the_window_before(tmp_path):
    run = tmp_path / "log" / "resnet"
    shutil.copytree(RESNET, run)
    store = Store(str(tmp_path / "log"), cache_dir=str(tmp_path / "cache"))
    p = default_pairing(store, "resnet", "worker0", W2)
    assert p.rule == "previous window" and p.base == [("resnet", "worker0", W1)]
    p = default_pairing(store, "resnet", "worker0", W1)  # the first: the one after it (no previous run)
    assert p.rule == "next window" and p.base == [("resnet", "worker0", W2)]


@pytest.fixture(scope="module")
def triggered(tmp_path_factory):
    """One worker's three windows of a real ps.Profile run; the manifests of the last two then say that the
    job's trigger asked for them (the field ps.on_demand(trigger=...) writes, set here by hand: a CPU run
    cannot be made slow on cue without a timing race). Each window records 5 steps."""
    import torch

    from canning import profiling_suite as ps
    root = tmp_path_factory.mktemp("triggered_logdir")
    out = root / "job"
    with ps.Profile(activities=[ps.ProfilerActivity.CPU], schedule=ps.schedule(wait=0, warmup=1, active=5, repeat=3),
                    on_trace_ready=ps.tensorboard_trace_handler(str(out))) as prof:
        x = torch.randn(64, 64)
        for _ in range(18):
            (x @ x).sum()
            prof.step()
    manifests = sorted(out.glob("*.canning.json"), key=lambda p: json.loads(p.read_text())["steps"][0])
    assert len(manifests) == 3
    for i, path in enumerate(manifests):
        data = json.loads(path.read_text())
        if i:
            data["trigger"] = {"kind": "slow", "step": 4 + i, "step_ns": 81_000_000, "median_ns": 34_000_000,
                               "reason": f"step {4 + i} took 81 ms, 2.4x the median 34 ms"}
            path.write_text(json.dumps(data))
    return root


def test_a_triggered_window_is_compared_with_the_last_normal_one(triggered, tmp_path):
    store = Store(str(triggered), cache_dir=str(tmp_path))
    (worker,) = store.workers("job")
    normal, first_slow, second_slow = [w.id for w in store.windows("job", worker.name)]
    p = window_pairing(store, "job", worker.name, second_slow)
    assert p.rule == "triggered" and p.base == [("job", worker.name, normal)]
    assert "(step 6 took 81 ms, 2.4x the median 34 ms): compared with the last normal window before it" in p.text
    p = run_pairing(store, "job")  # the run's newest window is triggered: it, against the last normal one
    assert p.rule == "triggered" and p.base == [("job", worker.name, normal)] and p.target == [("job", worker.name, second_slow)]
    # the CLI without --base: the same pairing, said in the report and in the JSON
    out = run_cli("compare", f"--input={triggered / 'job'}", f"--cache-dir={tmp_path}", "--format=json")
    pairing = json.loads(out.stdout)["pairing"]
    assert pairing["rule"] == "triggered" and pairing["base"] == [["job", worker.name, normal]]
    assert pairing["target"] == [["job", worker.name, second_slow]]
    out = run_cli("compare", f"--input={triggered / 'job'}", f"--cache-dir={tmp_path}")
    assert "Compared: the job asked for its newest window itself (step 6 took 81 ms, 2.4x the median 34 ms)" in out.stdout


def test_the_mcp_tool_pairs_a_triggered_window_as_the_cli_does(triggered, tmp_path):
    """Issue 44's leftover: the MCP compare tool without a baseline (the real Host over the logdir, waiting
    for the digests) compares the triggered window with the last normal one and says why; the whole run
    too, as `canning-prof compare --input=RUN` does above."""
    from canning_tb.mcp import compare_tool
    from canning_tb.mcp.host import Host
    host = Host(str(triggered), str(tmp_path / "cache"), digest_wait_s=120)
    host.start()
    (worker,) = host.store().workers("job")
    normal, _, second_slow = [w.id for w in host.store().windows("job", worker.name)]
    one = compare_tool.compare(host, "job", worker=worker.name, window=second_slow)
    assert one["pairing"]["rule"] == "triggered" and one["pairing"]["default"]
    assert "(step 6 took 81 ms, 2.4x the median 34 ms)" in one["pairing"]["text"]
    assert one["base_window"]["window"] == normal and one["target_window"]["window"] == second_slow
    run = compare_tool.compare(host, "job")
    assert run["pairing"]["rule"] == "triggered" and run["base_window"]["window"] == normal
