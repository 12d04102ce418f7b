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
from collections import defaultdict
from pathlib import Path

import pytest

from _procs import communicate_all
from conftest import fixture_path
from test_numbers_ascend_steps import minus, union  # the interval arithmetic of the hand readings

from canning_tb.analysis import glossary, report
from canning_tb.analysis.cluster import analyse_ranks
from canning_tb.analysis.summary import communication_figures, window_figures
from canning_tb.cli.main import main as cli_main
from canning_tb.queries.sections import communication_impl
from canning_tb.store import Store

REPO = Path(__file__).resolve().parents[2]


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
    outs = communicate_all(procs, 180)  # a hung rank is killed on every path
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
            # the same communication time as the step breakdown (overlapped + not overlapped); CANN's split
            # (float µs in its csv) equals the calls' union to its rounding
            tol = 0 if row["source"] == "trace" else 1000
            assert abs(step["communication_total_ns"] - step["overlapped_ns"] - step["communication_ns"]) <= tol, step
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
        transfer = union([(s + d - t, s + d) for (s, d), t in zip(mine, shortest)])
        wait = minus(union([(s, s + d - t) for (s, d), t in zip(mine, shortest)]), transfer)
        by_step = {p["step"]: p for p in rows[rank]["per_step"]}
        slack = 4 * count  # µs floats -> ns: each call's ends may round apart by a nanosecond
        for step in digest.steps:
            lo, hi = step.start_ns, step.start_ns + step.dur_ns
            assert abs(by_step[step.number]["transfer_ns"] - _inside(transfer, lo, hi)) <= slack
            assert abs(by_step[step.number]["wait_ns"] - _inside(wait, lo, hi)) <= slack
        # the "this rank" card with the other ranks, the table and the CLI say the same
        assert communication_figures(digest, digests)["mean"]["transfer_ns"] == rows[rank]["transfer_ns"]
        # alone, a CPU trace cannot tell waiting from moving data: unknown, never 0
        alone = communication_figures(digest)["mean"]
        assert alone["wait_ns"] == alone["transfer_ns"] == -1
        assert digest.communication.wait_ns == digest.communication.transfer_ns == -1
        assert "unknown from this rank's trace alone" in "\n".join(report.communication_summary(digest).notes)
        # CPU-only: the host operators are the computation, also beside gloo's worker threads (overlapped)
        fig = window_figures(digest)
        a = digest.average
        assert fig["compute_source"] == "host" and fig["device_idle_share"] is None
        assert fig["compute_share"] == pytest.approx((a.host_ns + a.overlapped_ns) / a.total_ns)
        assert fig["compute_share"] > 0
        assert not [h for h in digest.rule_hits if h.rule == "device_idle"]
        # the CPU allocator reserves nothing (Kineto writes "Total Reserved": 0): unknown, never 0
        (cpu,) = [m for m in digest.memory if m.device == "CPU"]
        assert cpu.peak_reserved_bytes == -1 and not cpu.curve_reserved_bytes and cpu.peak_allocated_bytes > 0
        table = report.memory_summary(digest)
        row = table.rows[[r[0] for r in table.rows].index("CPU")]
        assert row[table.columns.index("Peak reserved")] is None
        (line,) = [x for x in str(table).splitlines() if x.startswith("CPU")]
        assert "unknown" in line and "0.00 MB" not in line
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


def _distorted_window(folder: Path) -> Path:
    """A Kineto trace written here by hand: step 1 [0, 1000) µs computes (a kernel of 700 µs), step 2
    [1000, 2000) launches an all-reduce of 4800 µs that runs into the window's end: its device tail
    (4000 µs) makes it the distorted last step, left out of the average."""
    events = []

    def x(cat, name, pid, tid, ts, dur, **args):
        events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args})
    x("user_annotation", "ProfilerStep#1", 1, 1, 0, 1000)
    x("cuda_runtime", "cudaLaunchKernel", 1, 1, 100, 10, correlation=1)
    x("kernel", "volta_sgemm_128x64_nn", 0, 7, 200, 700, correlation=1, device=0, stream=7)
    x("user_annotation", "ProfilerStep#2", 1, 1, 1000, 1000)
    x("cuda_runtime", "cudaLaunchKernel", 1, 1, 1100, 10, correlation=2)
    x("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float", 0, 7, 1200, 4800, correlation=2, device=0, stream=7)
    (folder / "run").mkdir(parents=True)
    path = folder / "run" / "worker0.1.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events,
                                "deviceProperties": [{"id": 0, "name": "Tesla V100", "totalGlobalMem": 16e9}]}))
    return folder


def _floats(value):
    """Every float anywhere in a JSON value."""
    if isinstance(value, dict):
        return [f for v in value.values() for f in _floats(v)]
    if isinstance(value, list):
        return [f for v in value for f in _floats(v)]
    return [value] if isinstance(value, float) else []


def test_a_distorted_last_step_has_one_communication_share_everywhere(tmp_path):
    """Communication not hidden is of the average step, which leaves the distorted step 2 out: by hand
    0 (step 1 has no communication). The overview, the communication view's mean step, the ranks row,
    the Scalars trends, the text report and the CLI's JSON all say 0; the whole window's share
    (4800 / (1000 + 5000) = 0.8) is said once, as the window's (`figures.window`), and the digest
    holds times only (no ratio of its own, so --detail prints no second one)."""
    from canning_tb.analysis.summary import rank_row
    from canning_tb.analysis.trends import trend_scalars
    from canning_tb.queries.sections import overview_impl
    logdir = _distorted_window(tmp_path / "logdir")
    store = Store(str(logdir), cache_dir=str(tmp_path / "cache"))
    run, workers, (digest,) = _digests(store)
    window = store.windows(run, workers[0].name)[0].id
    assert [(s.number, s.distorted) for s in digest.steps] == [(1, False), (2, True)] and list(digest.average_steps) == [1]
    overview = overview_impl(store, run, workers[0].name, window)
    comm = communication_impl(store, run, workers[0].name, window)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert cli_main(["--mode=view", f"--input={logdir}", "--format=json", "--detail",
                         f"--cache-dir={tmp_path / 'cache'}"]) == 0
    (cli,) = json.loads(out.getvalue())["windows"]
    shares = [overview["figures"]["comm_not_hidden_share"], comm["figures"]["mean"]["not_overlapped_share"],
              rank_row(digest)["comm_not_hidden_share"], trend_scalars(digest)["comm_not_hidden_share"],
              cli["figures"]["comm_not_hidden_share"], cli["communication"]["mean"]["not_overlapped_share"]]
    assert shares == [0.0] * len(shares)
    assert "0.0% of the step" in "\n".join(report.communication_summary(digest).notes)
    assert comm["figures"]["window"]["not_overlapped_share"] == pytest.approx(4800 / 6000)
    assert not [f for f in _floats(overview) if f == pytest.approx(0.8)]
    assert "scalars" not in overview and "not_overlapped_share" not in comm["communication"]
    assert "scalars" not in cli["digest"] and "not_overlapped_share" not in cli["digest"]["communication"]
    assert not [f for f in _floats(cli["digest"]) if f == pytest.approx(0.8)]


def test_glossary_doc_is_the_table():
    assert (REPO / "docs" / "glossary.md").read_text() == glossary.markdown()
    for key, entry in glossary.entries().items():
        assert entry["tip"] and "\n" not in entry["tip"] and entry["label"], key


def test_reserved_memory_where_the_file_records_it():
    """HTA's V100 trace records Total Reserved: its peak is the largest value the raw [memory]
    events of that GPU carry (read here with json); on its CPU (all 0) it is unknown."""
    path = fixture_path("hta", "df_index_resolver", "df_index_resolver.json.gz")
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    gpu = [e["args"] for e in events if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1]
    store = Store(str(path.parent))
    _, _, (digest,) = _digests(store)
    mem = {m.device: m for m in digest.memory}
    assert mem["cuda:1"].peak_reserved_bytes == max(a["Total Reserved"] for a in gpu) > 0
    assert len(mem["cuda:1"].curve_reserved_bytes) == len(mem["cuda:1"].curve_ts_ns)
    assert mem["CPU"].peak_reserved_bytes == -1 and not mem["CPU"].curve_reserved_bytes


@pytest.mark.parametrize("name", sorted(RUNS))
def test_no_operator_device_time_exceeds_the_window(name):
    """Nested calls of one name (HcclAllreduce inside HcclAllreduce on Ascend) and kernels at the same
    time count once: device self <= device total <= the window's length."""
    _, _, digests = _digests(Store(str(_path(name))))
    for digest in digests:
        window = digest.window.end_ns - digest.window.start_ns
        for rows in (digest.ops_by_name, digest.ops_by_shape, digest.ops_by_stack):
            for op in rows:
                assert 0 <= op.device_self_ns <= op.device_total_ns <= window, (op.name, op.device_total_ns, window)


def test_host_self_time_leaves_out_the_launches_as_key_averages_does():
    """aten::addmm [9, 29) launches three kernels (cudaLaunchKernel of 1 each, inside it): its host
    self time is 20 - 3, as torch's key_averages() (launches are children with rows of their own)."""
    from test_analysis_synthetic import gpu_table

    from canning_tb.analysis.build import build_digest
    by = {o.name: o for o in build_digest(gpu_table()).ops_by_name}
    assert by["aten::addmm"].host_total_ns == 20 and by["aten::addmm"].host_self_ns == 20 - 3


def test_operator_rows_are_key_averages(tmp_path):
    """A real torch.profiler run on the CPU: every operator row (calls, host self, host total) is the
    row key_averages() gives for that name, redispatched calls (aten::mean inside aten::mean)
    folded into their parent as torch folds them."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    from canning_tb.analysis.build import build_digest
    from canning_tb.ingest.kineto.read import read_kineto
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
    x = torch.randn(32, 64)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            model(x).pow(2).mean().backward()
    path = tmp_path / "cpu.pt.trace.json"
    prof.export_chrome_trace(str(path))
    ours = {o.name: o for o in build_digest(read_kineto(str(path))).ops_by_name}
    theirs = {a.key: a for a in prof.key_averages()}
    assert "aten::mean" in ours and "aten::mul" in ours
    for name, op in ours.items():
        if name not in theirs:
            continue
        a = theirs[name]
        slack = 2 * op.calls  # µs with 3 decimals in the file: a nanosecond per end
        assert op.calls == a.count, name
        assert abs(op.host_self_ns - a.self_cpu_time_total * 1000) <= slack, name
        assert abs(op.host_total_ns - a.cpu_time_total * 1000) <= slack, name


def _matrix_ranks(rank_dir: Path) -> dict:
    """{group: ranks linked} from communication_matrix.json, read here with json ("src-dst" keys)."""
    found = defaultdict(set)
    raw = json.loads((rank_dir / "ASCEND_PROFILER_OUTPUT" / "communication_matrix.json").read_text())
    for step in raw.values():
        for kind in step.values():
            for key, links in kind.items():
                for link in links:
                    found[key.split("@")[-1]].update(int(x) for x in link.split("-"))
    return found


def test_world_size_and_groups_come_from_the_files():
    # level1: no file states the world size; the matrix links ranks 0..7: at least 8
    level1 = fixture_path("ascend", "level1")
    linked = _matrix_ranks(level1 / "rank0_ascend_pt")
    store = Store(str(level1))
    _, workers, digests = _digests(store)
    for digest in digests:
        assert digest.window.world_size == max(max(r) for r in linked.values()) + 1 == 8
        (group,) = digest.communication.groups
        assert group.members == len(linked[group.group]) and group.group.isdigit()
        assert group.label == f"{group.members} ranks ({group.group[:4]}…{group.group[-4:]})"
        assert group.label in str(report.communication_summary(digest))
    # level0: no matrix, and no file names the world size or the groups: unknown, not 1
    level0 = fixture_path("ascend", "level0")
    assert not list(level0.rglob("communication_matrix.json"))
    for meta in list(level0.rglob("profiler_info*.json")) + list(level0.rglob("profiler_metadata.json")):
        text = meta.read_text()
        assert "world_size" not in text and "parallel_group_info" not in text, meta
    _, _, digests = _digests(Store(str(level0)))
    assert {d.window.world_size for d in digests} == {-1}
    assert report.window_report(digests[0]).startswith(f"rank {digests[0].window.rank}/unknown ")
    # Kineto: distributedInfo.world_size
    dlrm = fixture_path("param", "dlrm_8ranks")
    _, workers, digests = _digests(Store(str(dlrm)))
    for digest in digests:
        (trace,) = [p for p in dlrm.glob("*.json.gz") if p.name.startswith(digest.window.worker + ".")] or \
            [next(dlrm.glob("*.json.gz"))]
        info = json.loads(gzip.decompress(trace.read_bytes()))["distributedInfo"]
        assert digest.window.world_size == info["world_size"] == 8
