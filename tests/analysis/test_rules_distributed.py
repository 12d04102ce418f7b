"""Cross-rank rules on a real 2-process gloo run (CPU): a deliberately slowed rank. (Pipelines, with
torch.distributed.pipelining, are in the findings corpus: tests/analysis/test_rules_corpus.py.)"""
import json
from pathlib import Path

import pytest
from _rules_corpus import run_two_ranks

from canning_tb.analysis.build import build_digest
from canning_tb.analysis.cluster import analyse_ranks
from canning_tb.analysis.rules import cluster_hits
from canning_tb.ingest.kineto.read import read_kineto

SCRIPT = Path(__file__).resolve().parents[1] / "_rules_dist.py"
pytestmark = [pytest.mark.slow, pytest.mark.timed]  # two real processes per run (as tests/handler/test_handler_ddp.py)


def _run(tmp: Path, modes: list[str]) -> dict:
    """{mode: (digests by rank, raw events by rank)} of one 2-process run profiling each mode."""
    pytest.importorskip("torch.distributed")
    run_two_ranks(SCRIPT, tmp, modes, timeout=180)
    out = {}
    for mode in modes:
        paths = [tmp / f"{mode}.rank{rank}.pt.trace.json" for rank in (0, 1)]
        out[mode] = ([build_digest(read_kineto(str(p))) for p in paths],
                     [json.loads(p.read_text())["traceEvents"] for p in paths])
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("dist"), ["slow_rank"])


def test_slow_rank_is_named(runs):
    digests, _ = runs["slow_rank"]
    analysis = analyse_ranks(digests)
    found = {h.rule: h for h in cluster_hits(analysis, digests)}
    hit = found["slow_rank_computing"]
    assert "Rank 1 is slow" in hit.title and hit.evidence[0].rank == 1
    # the figure quoted is the cross-rank view's own (max - min) / mean
    (row,) = [r for r in analysis["slow_ranks"] if r["metric"] == "computing"]
    assert f"{100 * row['ratio']:.1f}%" in hit.seen and row["ratio"] > 0.05
