"""One definition per figure: wait / transfer, communication, compute share and idle are the same
number in every place they appear (the /communication and /cluster answers, the CLI's JSON,
`prof.communication_summary()`), and they keep their invariants (wait + transfer <= communication
<= step), on the real fixtures and on a real 2-rank gloo run made here.

Expected values come from a second reading: CANN's communication.json read with json, and the
torch-tb-profiler rule applied by hand (plain Python interval arithmetic) to the raw gloo traces.
"""
import contextlib
import gzip
import io
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import fixture_path

from canning_tb.analysis import glossary, report
from canning_tb.analysis.cluster import analyse_ranks
from canning_tb.analysis.summary import communication_figures, window_figures
from canning_tb.cli.main import main as cli_main
from canning_tb.plugin.sections import communication_impl
from canning_tb.store import Store

REPO = Path(__file__).resolve().parents[1]


def _digests(store: Store):
    (run,) = store.runs()
    workers = store.workers(run)
    return run, workers, [store.digest(run, w.name, store.windows(run, w.name)[0].id) for w in workers]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def gloo_run(tmp_path_factory):
    """A real 2-rank DDP run on the CPU (gloo) of examples/train_ddp.py, profiled by our handler."""
    pytest.importorskip("torch.distributed")
    root = tmp_path_factory.mktemp("ddp")
    port, procs = _free_port(), []
    for rank in range(2):
        env = {**os.environ, "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        procs.append(subprocess.Popen([sys.executable, str(REPO / "examples" / "train_ddp.py"), str(root / "demo"), "6"],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate(timeout=180)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    return root / "demo"


RUNS = {"level0": ("ascend", "level0"), "level1": ("ascend", "level1"), "db_level1": ("ascend", "db_level1"),
        "dlrm": ("param", "dlrm_8ranks")}


def _path(name, gloo_run=None):
    return gloo_run if name == "gloo" else fixture_path(*RUNS[name])


def _check_invariants(digests, cluster):
    rows = {r["rank"]: r for r in cluster["ranks"]}
    for row in rows.values():
        for step in row["per_step"]:
            parts = [step[k] for k in ("wait_ns", "p2p_wait_ns", "transfer_ns")]
            assert all(p >= 0 for p in parts), step
            assert sum(parts) <= step["communication_total_ns"] <= step["dur_ns"], step
            # the same communication time as the step breakdown (overlapped + not overlapped)
            assert step["communication_total_ns"] == step["overlapped_ns"] + step["communication_ns"], step
        assert row["wait_ns"] + row["p2p_wait_ns"] + row["transfer_ns"] <= row["communication_total_ns"] <= row["step_ns"]


@pytest.mark.parametrize("name", sorted(RUNS))
def test_fixtures_wait_transfer_fit_in_the_step(name):
    _, _, digests = _digests(Store(str(_path(name))))
    cluster = analyse_ranks(digests)
    assert len(cluster["ranks"]) >= 2
    _check_invariants(digests, cluster)
    for digest, row in zip(digests, sorted(cluster["ranks"], key=lambda r: r["rank"])):
        mine = communication_figures(digest, digests)["mean"]
        # the card's figures with the other ranks are the table's row
        assert (mine["wait_ns"], mine["transfer_ns"], mine["p2p_wait_ns"]) == \
            (row["wait_ns"], row["transfer_ns"], row["p2p_wait_ns"])


def _cann_ops(path: Path, rank: int) -> dict:
    """{op: (elapse, wait, transit) ns} of one rank from communication.json, read here with json."""
    (found,) = path.glob(f"rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/communication.json")
    raw = json.loads(found.read_text())
    out = {}
    for step in raw.values():
        for kind in step.values():
            for key, value in kind.items():
                if "@" in key and "total" not in key.split("@")[0].lower():
                    info = value["Communication Time Info"]
                    out[key.split("@")[0]] = tuple(round(info[f] * 1e6) for f in
                                                   ("Elapse Time(ms)", "Wait Time(ms)", "Transit Time(ms)"))
    return out


def test_cann_waits_are_the_same_in_card_table_cli_and_summary(tmp_path):
    path = fixture_path("ascend", "level1")
    store = Store(str(path))
    run, workers, digests = _digests(store)
    cluster = {r["rank"]: r for r in analyse_ranks(digests)["ranks"]}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["--mode=view", f"--input={path}", "--format=json"]) == 0
    cli = {r["rank"]: r for r in json.loads(out.getvalue())["ranks"][0]["analysis"]["ranks"]}
    for worker, digest in zip(workers, digests):
        rank = digest.window.rank
        ops = _cann_ops(path, rank)
        # one step, calls one after the other (HCCL runs them in order): merged = summed, each capped
        wait = sum(min(w, e) for e, w, _ in ops.values())
        transfer = sum(min(t, e - min(w, e)) for e, w, t in ops.values())
        assert abs(cluster[rank]["wait_ns"] - wait) <= 10 and abs(cluster[rank]["transfer_ns"] - transfer) <= 10
        route = communication_impl(store, run, worker.name, store.windows(run, worker.name)[0].id)["figures"]
        assert (route["mean"]["wait_ns"], route["mean"]["transfer_ns"]) == \
            (cluster[rank]["wait_ns"], cluster[rank]["transfer_ns"]) == (cli[rank]["wait_ns"], cli[rank]["transfer_ns"])
        notes = "\n".join(report.communication_summary(digest).notes)
        assert f"wait {round(wait / 1e6, 3)} ms, transfer {round(transfer / 1e6, 3)} ms" in notes


def _union(intervals):
    out = []
    for lo, hi in sorted(i for i in intervals if i[1] > i[0]):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return out


def _minus(a, b):
    """Interval set a minus b (both merged)."""
    out = []
    for lo, hi in a:
        cur = lo
        for blo, bhi in b:
            if bhi <= cur or blo >= hi:
                continue
            if blo > cur:
                out.append([cur, blo])
            cur = max(cur, bhi)
        if cur < hi:
            out.append([cur, hi])
    return out


def _inside(iset, lo, hi):
    return sum(max(0, min(h, hi) - max(l, lo)) for l, h in iset)


def _gloo_calls(trace: Path):
    """[(start ns, dur ns)] of the gloo:all_reduce ranges in the raw trace, by start."""
    events = json.loads(gzip.decompress(trace.read_bytes()))["traceEvents"]
    calls = [(round(float(e["ts"]) * 1000), round(float(e["dur"]) * 1000)) for e in events
             if e.get("ph") == "X" and e.get("name") == "gloo:all_reduce"]
    return sorted(calls)


@pytest.mark.slow
def test_gloo_run_wait_transfer_by_hand(gloo_run):
    store = Store(str(gloo_run))
    run, workers, digests = _digests(store)
    cluster = analyse_ranks(digests)
    _check_invariants(digests, cluster)
    traces = {d.window.rank: next(p for p in gloo_run.glob(f"rank{d.window.rank}.*.pt.trace.json.gz")
                                  if store.windows(run, w.name)[0].id in p.name)
              for w, d in zip(workers, digests)}
    calls = {rank: _gloo_calls(path) for rank, path in traces.items()}
    count = min(len(c) for c in calls.values())
    assert count > 0
    shortest = [min(calls[r][j][1] for r in calls) for j in range(count)]
    rows = {r["rank"]: r for r in cluster["ranks"]}
    for digest in digests:
        rank = digest.window.rank
        mine = calls[rank][:count]
        transfer = _union([(s + d - t, s + d) for (s, d), t in zip(mine, shortest)])
        wait = _minus(_union([(s, s + d - t) for (s, d), t in zip(mine, shortest)]), transfer)
        by_step = {p["step"]: p for p in rows[rank]["per_step"]}
        for step in digest.steps:
            lo, hi = step.start_ns, step.start_ns + step.dur_ns
            assert abs(by_step[step.number]["transfer_ns"] - _inside(transfer, lo, hi)) <= 2
            assert abs(by_step[step.number]["wait_ns"] - _inside(wait, lo, hi)) <= 2
        # the "this rank" card with the other ranks, the table and the CLI say the same
        assert communication_figures(digest, digests)["mean"]["transfer_ns"] == rows[rank]["transfer_ns"]
        # alone, a CPU trace cannot tell waiting from moving data: unknown, never 0
        alone = communication_figures(digest)["mean"]
        assert alone["wait_ns"] == alone["transfer_ns"] == -1
        assert digest.communication.wait_ns == digest.communication.transfer_ns == -1
        assert "unknown from this rank's trace alone" in "\n".join(report.communication_summary(digest).notes)
        # CPU-only: the host operators are the computation
        fig = window_figures(digest)
        assert fig["compute_source"] == "host" and fig["device_idle_share"] is None
        assert fig["compute_share"] == pytest.approx(digest.average.host_ns / digest.average.total_ns)
        assert fig["compute_share"] > 0
        assert not [h for h in digest.rule_hits if h.rule == "device_idle"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["--mode=view", f"--input={gloo_run}", "--format=json"]) == 0
    cli = json.loads(out.getvalue())["ranks"][0]["analysis"]["ranks"]
    assert [(r["wait_ns"], r["transfer_ns"]) for r in cli] == [(rows[r]["wait_ns"], rows[r]["transfer_ns"]) for r in
                                                               sorted(rows)]


def test_device_idle_is_the_figure_the_suggestion_quotes():
    path = fixture_path("kineto", "resnet50_v100")
    store = Store(str(path))
    (run,) = store.runs()
    (worker,) = store.workers(run)
    for window in store.windows(run, worker.name):
        digest = store.digest(run, worker.name, window.id)
        a = digest.average
        busy = a.compute_ns + a.overlapped_ns + a.communication_ns + a.memcpy_ns + a.memset_ns  # by hand
        fig = window_figures(digest)
        assert fig["device_idle_share"] == pytest.approx((a.total_ns - busy) / a.total_ns)
        assert fig["idle_share"] == pytest.approx(a.idle_ns / a.total_ns)
        for hit in digest.rule_hits:
            if hit.rule == "device_idle":
                assert hit.value == pytest.approx(fig["device_idle_share"])
                assert f"Device idle {100 * fig['device_idle_share']:.1f}%" in hit.detail


def test_glossary_doc_is_the_table():
    assert (REPO / "docs" / "glossary.md").read_text() == glossary.markdown()
    for key, entry in glossary.entries().items():
        assert entry["tip"] and "\n" not in entry["tip"] and entry["label"], key
