"""The cross-rank analysis at many ranks (analysis/cluster.py, vectorised; cluster_spread.py) against
an independent computation here: plain loops over the per-rank digests (wait / transfer: the rule
of docs/glossary.md, each call matched across the ranks and its intervals merged per step, in plain
Python interval arithmetic), on the 8 real DLRM ranks
and on runs generated from real windows (tests/_many_ranks.py: per-rank jitter, ranks slowed on
purpose), written as the handler writes them (digests at the source) and read through the store,
the /cluster implementation and the CLI report.
"""
import glob
import json
import statistics
import subprocess
import sys
import time

import pytest

from canning_tb.analysis.build import build_digest
from canning_tb.analysis.cluster import analyse_ranks
from canning_tb.analysis.summary import communication_figures, rank_row, window_figures
from canning_tb.ingest.ascend.read import read_ascend
from canning_tb.ingest.kineto.read import read_kineto
from canning_tb.queries.ranks import cluster_impl
from canning_tb.store import Store
from canning_tb.store.prefetcher import Prefetcher
from conftest import fixture_path
from _many_ranks import write_many_ranks
from test_numbers_ascend_steps import union  # the hand readings' interval arithmetic

RING = {"AllReduce": (2, -1), "AllGather": (1, -1), "ReduceScatter": (1, -1)}  # (a, b): (a (n + b) / n) x size
METRICS = ("step_ns", "computing_ns", "communication_ns", "free_ns", "wait_ns", "transfer_ns")


@pytest.fixture(scope="module")
def dlrm():
    files = sorted(glob.glob(str(fixture_path("param", "dlrm_8ranks") / "*.pt.trace.json.gz")))
    return [build_digest(read_kineto(f)) for f in files]


@pytest.fixture(scope="module")
def ascend_ring():
    """The two ranks of a real Ascend level0 run: collectives with sizes, no link matrix (ring rule)."""
    return [build_digest(read_ascend(str(fixture_path("ascend", "level0", f"rank{r}_ascend_pt")))) for r in (0, 1)]


# -- the independent computation -----------------------------------------------------------------------


def by_loops(digests):
    """Per rank rows, per (kind, group) totals and the ring matrix, one rank and one call at a time."""
    rows = {}
    cann = all(d.cann_steps for d in digests)  # Ascend: CANN's own split of each step, mean over the steps
    for d in digests:
        a = d.average
        if cann:
            def mean(field):
                return round(sum(max(getattr(s, field), 0) for s in d.cann_steps) / len(d.cann_steps))
            computing, comm, rest = mean("computing_ns"), mean("communication_not_overlapped_ns"), mean("free_ns")
        else:
            computing, comm = a.compute_ns + a.overlapped_ns, a.communication_ns
            rest = max(a.total_ns - computing - comm, 0)
        rows[d.window.rank] = {"step_ns": a.total_ns, "computing_ns": computing, "communication_ns": comm,
                               "free_ns": rest}
    for d, (wait, transfer) in zip(digests, wait_transfer_by_loops(digests)):
        rows[d.window.rank].update(wait_ns=wait, transfer_ns=transfer)
    calls = {}
    for d in digests:
        for c in d.communication.calls:
            calls.setdefault((c.kind, c.group), {}).setdefault(d.window.rank, []).append(c)
    collectives, matrix = {}, {}
    for key, per_rank in calls.items():
        for rank in per_rank:
            per_rank[rank].sort(key=lambda c: (c.seq, c.start_ns))
        collectives[key] = {"calls": sum(len(v) for v in per_rank.values()),
                            "total_ns": sum(c.dur_ns for v in per_rank.values() for c in v)}
        members = sorted(per_rank)
        n = len(members)
        for i, rank in enumerate(members):
            size = sum(c.bytes for c in per_rank[rank] if c.bytes >= 0)
            if n > 1 and size > 0 and key[0] in RING:
                a, b = RING[key[0]]
                cell = (rank, members[(i + 1) % n])
                matrix[cell] = matrix.get(cell, 0) + a * (n + b) * size // n
    return rows, collectives, matrix


def _minus(a, b):
    """a minus b, both merged and sorted, by walking them together."""
    out, j = [], 0
    for s, e in a:
        while j < len(b) and b[j][1] <= s:
            j += 1
        cur, k = s, j
        while k < len(b) and b[k][0] < e:
            if b[k][0] > cur:
                out.append([cur, b[k][0]])
            cur = max(cur, b[k][1])
            k += 1
        if cur < e:
            out.append([cur, e])
    return out


def _inside(pieces, lo, hi):
    return sum(max(0, min(e, hi) - max(s, lo)) for s, e in pieces)


def wait_transfer_by_loops(digests):
    """(mean-step wait, transfer) per digest by the glossary's rule: a call CANN measured keeps CANN's
    wait / transit (capped to the call); else the same call (kind, group, place by (seq, start)) on two
    or more ranks transfers the shortest of its durations and waits the rest; the intervals merged per
    step (transfer wins an instant, p2p waits apart), then the mean over the averaged steps (floored),
    -1 when a rank with calls has none known."""
    order = []
    for d in digests:
        per_key = {}
        for c in d.communication.calls:
            per_key.setdefault((c.kind, c.group), []).append(c)
        order.append({k: sorted(v, key=lambda c: (c.seq, c.start_ns)) for k, v in per_key.items()})
    shortest = {}
    for key in {k for o in order for k in o}:
        having = [o[key] for o in order if key in o]
        if len(having) >= 2:
            for j in range(min(len(v) for v in having)):
                shortest[(key, j)] = min(v[j].dur_ns for v in having)
    out = []
    for d, calls in zip(digests, order):
        transfer, wait, p2p = [], [], []
        for key, seq in calls.items():
            for j, c in enumerate(seq):
                if c.wait_ns >= 0 and c.transit_ns >= 0:
                    w = min(c.wait_ns, c.dur_ns)
                    t = min(c.transit_ns, c.dur_ns - w)
                elif (key, j) in shortest:
                    t = shortest[(key, j)]
                    w = c.dur_ns - t
                else:
                    continue
                transfer.append((c.start_ns + w, c.start_ns + w + t))
                (p2p if c.comm_type == "p2p" else wait).append((c.start_ns, c.start_ns + w))
        if calls and not transfer and not wait and not p2p:
            out.append((-1, -1))
            continue
        transfer = union(transfer)
        wait = _minus(union(wait), transfer)
        kept = [s for s in d.steps if s.number in set(d.average_steps)] or list(d.steps)
        mean = [sum(_inside(x, s.start_ns, s.start_ns + s.dur_ns) for s in kept) // max(1, len(kept))
                for x in (wait, transfer)]
        out.append(tuple(mean))
    return out


def spread_by_loops(values: dict):
    """(quartiles, top 5, bottom 5, outliers) of {rank: value}, by the rule of cluster_spread's doc."""
    ordered = sorted(values.values())
    quartiles = statistics.quantiles(ordered, n=4, method="inclusive")
    median = statistics.median(ordered)
    top = sorted(values, key=lambda r: (-values[r], r))[:5]
    bottom = sorted(values, key=lambda r: (values[r], r))[:5]
    mad = statistics.median(abs(v - median) for v in ordered)
    outliers = {r for r, v in values.items() if abs(v - median) > 0.05 * abs(median)
                and (mad == 0 or abs(0.6745 * (v - median) / mad) > 3.5)}
    return quartiles, top, bottom, outliers


def assert_equal_to_loops(result, digests):
    rows, collectives, matrix = by_loops(digests)
    got = {r["rank"]: r for r in result["ranks"]}
    assert sorted(got) == sorted(rows)
    for rank, want in rows.items():
        assert {k: got[rank][k] for k in want} == want, rank
    assert {(c["kind"], c["group"]): {"calls": c["calls"], "total_ns": c["total_ns"]}
            for c in result["collectives"]} == collectives
    assert {(m["src"], m["dst"]): m["bytes"] for m in result["matrix"]} == matrix
    by_metric = {x["metric"]: x for x in result["distributions"]}
    for metric in METRICS:
        values = {rank: row[metric] for rank, row in rows.items() if row[metric] >= 0}  # -1: unknown
        quartiles, top, bottom, outliers = spread_by_loops(values)
        x = by_metric[metric]
        assert [x["q1"], x["median"], x["q3"]] == pytest.approx(quartiles)
        assert (x["min"], x["max"]) == (min(values.values()), max(values.values()))
        assert [e["rank"] for e in x["top"]] == top and [e["rank"] for e in x["bottom"]] == bottom
        assert {e["rank"] for e in x["outliers"]} <= outliers and x["outliers_total"] == len(outliers)
        assert sum(x["histogram"]["counts"]) == len(values)
        row = result["rank_heatmap"]["metrics"].index(metric)
        median = statistics.median(values.values())
        if median > 0:
            ratios = dict(zip(result["rank_heatmap"]["ranks"], result["rank_heatmap"]["ratio_to_median"][row]))
            assert {r: x for r, x in ratios.items() if x is not None} == {
                r: pytest.approx(v / median, abs=1e-4) for r, v in values.items()}


# -- the tests -----------------------------------------------------------------------------------------


def test_dlrm_8_ranks_equal_the_loops(dlrm):
    assert_equal_to_loops(analyse_ranks(dlrm), dlrm)


def test_generated_300_ranks_equal_the_loops_and_name_the_slowed_rank(dlrm, tmp_path):
    digests = write_many_ranks(str(tmp_path / "run"), dlrm, 300, slow={123: 1.6})
    result = analyse_ranks(list(reversed(digests)))  # the analysis puts the ranks in order itself
    assert_equal_to_loops(result, digests)
    computing = {x["metric"]: x for x in result["distributions"]}["computing_ns"]
    assert computing["top"][0]["rank"] == 123
    assert {"rank": 123, "side": "high"}.items() <= computing["outliers"][0].items()


def test_ring_matrix_of_many_ranks_and_its_bins_equal_the_loops(ascend_ring, tmp_path):
    digests = write_many_ranks(str(tmp_path / "run"), ascend_ring, 130)
    result = analyse_ranks(digests)
    assert result["matrix_source"] == "ring" and not result["matrix_truncated"]
    assert_equal_to_loops(result, digests)
    _, _, matrix = by_loops(digests)
    bins = result["matrix_bins"]
    width = bins["ranks_per_bin"]
    assert width == 3 and len(bins["bins"]) == 44 and bins["bins"][0] == {"first": 0, "last": 2}
    summed = {}
    for (src, dst), nbytes in matrix.items():
        summed[(src // width, dst // width)] = summed.get((src // width, dst // width), 0) + nbytes
    assert {(c["src"], c["dst"]): c["bytes"] for c in bins["cells"]} == summed


def settled(store, prefetcher, run, hang_s: float = 300):
    """/cluster's answer once its windows are read: it answers "loading" after 0.3 s of reading (its
    prefetcher's wait), which 64 digests at the source can take on a loaded machine; the deadline is a
    hang guard only."""
    deadline = time.monotonic() + hang_s
    while (answer := cluster_impl(store, prefetcher, run, 0))["loading"]:
        assert time.monotonic() < deadline, answer
        time.sleep(0.1)
    return answer


def test_store_and_cluster_route_read_the_digests_at_the_source(dlrm, tmp_path):
    logdir = tmp_path / "logdir"
    digests = write_many_ranks(str(logdir / "run"), dlrm, 64, slow={17: 1.5})
    store = Store(str(logdir), cache_dir=str(tmp_path / "cache"))
    prefetcher = Prefetcher(store)
    answer = settled(store, prefetcher, "run")
    assert not answer["problems"]
    assert not list((tmp_path / "cache").rglob("*.digest.pb"))
    assert_equal_to_loops(answer, digests)
    assert [r["step_ns"] for r in answer["per_rank"]] == [d.average.total_ns for d in digests]
    # read in part (store/digest_part.py): the rows are those of the whole digests
    assert [{k: v for k, v in row.items() if k not in ("worker", "window")} for row in answer["per_rank"]] == [
        {"rank": d.window.rank, **rank_row(d)} for d in digests]
    assert cluster_impl(store, prefetcher, "run", 0) is answer  # kept while no file changed
    slower = write_many_ranks(str(logdir / "run"), dlrm, 64, slow={17: 1.5, 40: 2.0})
    again = settled(store, prefetcher, "run")
    assert again is not answer
    assert_equal_to_loops(again, slower)


def run_cli(*args):
    p = subprocess.run([sys.executable, "-m", "canning_tb.cli.main", "--mode=view", *args], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_cli_run_report_has_the_ranks_and_details_on_request(dlrm, tmp_path):
    run = tmp_path / "run"
    digests = write_many_ranks(str(run), dlrm, 24, slow={5: 1.6})
    report = json.loads(run_cli(f"--input={run}", "--format=json"))
    # keys sorted (byte-stable JSON, docs/cli-json.md): the ranks are a section of the report, not its first key
    assert report["schema"] == "canning-prof/2" and {"input", "ranks", "windows"} <= set(report)
    assert list(report) == sorted(report)
    (group,) = report["ranks"]
    assert_equal_to_loops(group["analysis"], digests)
    windows = {w["worker"]: w for w in report["windows"]}
    assert len(windows) == 24 and all(w["digest"] is None for w in windows.values())
    assert windows["rank5"]["figures"]["average_step_ns"] == digests[5].average.total_ns
    for rank in (0, 5, 23):  # the ranks read in part, their own wait / transfer all at once: as one whole digest
        assert windows[f"rank{rank}"]["figures"] == json.loads(json.dumps(window_figures(digests[rank])))
        assert windows[f"rank{rank}"]["communication"] == json.loads(json.dumps(communication_figures(digests[rank])))
    picked = json.loads(run_cli(f"--input={run}", "--format=json", "--worker=rank5"))
    detailed = {w["worker"] for w in picked["windows"] if w["digest"] is not None}
    assert detailed == {"rank5"}
    everything = json.loads(run_cli(f"--input={run}", "--format=json", "--detail"))
    assert all(w["digest"]["window"]["rank"] == int(w["worker"][4:]) for w in everything["windows"])
    text = run_cli(f"--input={run}", "--top=10")
    assert "spread over 24 ranks" in text and "=== rank" not in text
    computing = next(line for line in text.splitlines() if line.startswith("computing"))
    assert "5 (high)" in computing
    assert "=== rank5 / " in run_cli(f"--input={run}", "--worker=rank5")
