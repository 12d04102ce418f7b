"""Cross-rank rules on a real 2-process gloo run (CPU): a deliberately slowed rank. (Pipelines, with
torch.distributed.pipelining, are in the findings corpus: tests/analysis/test_rules_corpus.py.)"""
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from canning_tb.analysis.build import build_digest
from canning_tb.analysis.cluster import analyse_ranks
from canning_tb.analysis.rules import cluster_hits
from canning_tb.ingest.kineto.read import read_kineto

SCRIPT = Path(__file__).resolve().parents[1] / "_rules_dist.py"
pytestmark = pytest.mark.slow  # two real processes per run (as tests/handler/test_handler_ddp.py)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(tmp: Path, modes: list[str]) -> dict:
    """{mode: (digests by rank, raw events by rank)} of one 2-process run profiling each mode."""
    pytest.importorskip("torch.distributed")
    port = _port()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, str(SCRIPT), str(rank), str(port), str(tmp), ",".join(modes)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for rank in (0, 1)]
    logs = [p.communicate(timeout=180)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], logs
    out = {}
    for mode in modes:
        paths = [tmp / f"{mode}.rank{rank}.pt.trace.json" for rank in (0, 1)]
        out[mode] = ([build_digest(read_kineto(str(p))) for p in paths],
                     [json.loads(p.read_text())["traceEvents"] for p in paths])
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("dist"), ["slow_rank"])


def _mean_step_ms(raw) -> float:
    durs = [e["dur"] for e in raw if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#")]
    return sum(durs) / len(durs) / 1e3


def test_slow_rank_is_named(runs):
    digests, raws = runs["slow_rank"]
    analysis = analyse_ranks(digests)
    found = {h.rule: h for h in cluster_hits(analysis, digests)}
    hit = found["slow_rank_computing"]
    assert "Rank 1 is slow" in hit.title and hit.evidence[0].rank == 1
    # the figure quoted is the cross-rank view's own (max - min) / mean
    (row,) = [r for r in analysis["slow_ranks"] if r["metric"] == "computing"]
    assert f"{100 * row['ratio']:.1f}%" in hit.seen and row["ratio"] > 0.05
