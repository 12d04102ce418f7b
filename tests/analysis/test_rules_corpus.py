"""The findings corpus (tests/_rules_corpus.py) on every real fixture and on real 2-rank gloo runs made
here (tests/_rules_corpus_dist.py: DDP with small buckets, a 2-stage torch.distributed.pipelining
pipeline, the same with an unbalanced stage, a first step that broadcasts the parameters): every
finding's claim holds against the views (tests/_rules_claims.py), every expected finding is there,
no finding the corpus does not expect, and the readings the corpus rests on are checked from the raw
files. The real runs are one 2-process job for all four workloads (module scope)."""
import glob
import subprocess
import sys
from pathlib import Path

import pytest

from _rules_claims import problems
from _rules_corpus import (CORPUS, F, ascend_step_csv, broadcast_steps, judge, not_hidden_share, per_step_ops_us,
                           raw_events, run_two_ranks, share_of_steps)
from conftest import fixture_path

from canning_tb.analysis.build import build_digest
from canning_tb.analysis.cluster import analyse_ranks
from canning_tb.analysis.parallelism import recognise
from canning_tb.analysis.rules import cluster_hits, thresholds
from canning_tb.ingest.ascend.read import read_ascend
from canning_tb.ingest.kineto.read import read_kineto

# real 2-rank gloo runs whose timings decide findings: run alone (make test)
pytestmark = [pytest.mark.slow, pytest.mark.timed]

SCRIPT = Path(__file__).resolve().parents[1] / "_rules_corpus_dist.py"
MODES = ("ddp", "pipeline", "pipeline_unbalanced", "broadcast")
FIXTURES = {
    "resnet_v100": ["kineto/resnet50_v100/worker0.1623143089861.pt.trace.json.gz"],
    "resnet_v100_w2": ["kineto/resnet50_v100/worker0.1623143566756.pt.trace.json.gz"],
    "resnet_nw4": ["kineto/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz"],
    "tbp_gpu_metrics": ["kineto/tbp_gpu_metrics/gpu_metrics_input.json"],
    "hta_df_index": ["hta/df_index_resolver/df_index_resolver.json.gz"],
    "hta_nccl": ["hta/nccl_parser_config/nccl_data.json.gz"],
    "hta_diff_control": ["hta/trace_diff/control/*"], "hta_diff_test": ["hta/trace_diff/test/*"],
    "hta_filter": ["hta/trace_filter/*"], "hta_ns": ["hta/ns_resolution_trace/*"], "hta_amd": ["hta/amd_trace/*"],
    "hta_cpu_only": ["hta/cpu_only/*"], "hta_alexnet": ["hta/critical_path/alexnet/*"],
    "dlrm_8": ["param/dlrm_8ranks/*"],
    **{f"ascend_{lv}": [f"ascend/{lv}/rank*_ascend_pt"] for lv in
       ("level0", "level1", "level2", "db_level0", "db_level1", "db_level2")},
}


def _paths(name: str) -> list[str]:
    fixture_path("kineto")  # skips with a clear message where the fixtures are absent
    return sorted(p for pattern in FIXTURES[name] for p in glob.glob(f"{F}/{pattern}"))


def _read(path: str):
    return read_ascend(path) if path.endswith("_ascend_pt") else read_kineto(path)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{mode: [trace path per rank]} of one real 2-process gloo job profiling every workload."""
    pytest.importorskip("torch.distributed")
    out = tmp_path_factory.mktemp("corpus")
    run_two_ranks(SCRIPT, out, MODES)
    return {mode: [str(out / f"{mode}.rank{rank}.pt.trace.json") for rank in (0, 1)] for mode in MODES}


@pytest.fixture(scope="module")
def corpus(runs):
    """{set name: (paths, digests, analysis or None, cross-rank hits)} for every fixture and run."""
    sets = {name: _paths(name) for name in FIXTURES}
    sets.update({f"run_{mode}": paths for mode, paths in runs.items()})
    out = {}
    for name, paths in sets.items():
        digests = [build_digest(_read(p)) for p in paths]
        analysis = analyse_ranks(digests) if len(digests) > 1 else None
        out[name] = (paths, digests, analysis, cluster_hits(analysis, digests) if analysis else [])
    return out


def test_every_claim_holds_against_the_views(corpus):
    found = []
    for name, (_, digests, analysis, hits) in corpus.items():
        for d in digests:
            found += [f"{name} rank {d.window.rank}: {p}" for p in problems(d.rule_hits, digest=d)]
        if analysis:
            found += [f"{name} across ranks: {p}" for p in problems(hits, analysis=analysis)]
    assert not found, "\n".join(found)


def test_the_claim_check_can_fail(corpus):
    """The check finds a claim that contradicts the views: a finding moved to a window it is not about."""
    _, (v100,), _, _ = corpus["resnet_v100"]
    _, (a100,), _, _ = corpus["hta_diff_control"]
    (loader,) = [h for h in v100.rule_hits if h.rule == "dataloader_share"]
    assert not problems([loader], digest=v100)
    found = problems([loader], digest=a100)
    assert any("the view shows" in p for p in found)


def _scores(corpus) -> tuple[dict, list]:
    totals = {"tp": 0, "fn": 0, "fp": 0, "tn": 0, "either": 0}
    lines = []
    for name, (_, digests, analysis, hits) in corpus.items():
        scopes = [(f"window.{d.window.rank}", d.rule_hits) for d in digests]
        if analysis:
            scopes.append(("ranks", hits))
        for scope, scope_hits in scopes:
            verdict = judge(name, scope, {h.rule for h in scope_hits})
            for key in totals:
                totals[key] += len(verdict[key])
            if verdict["fn"] or verdict["fp"]:
                lines.append(f"{name} {scope}: missing {verdict['fn']}, not expected {verdict['fp']}")
                lines += [f"  {_figures(h)}" for h in scope_hits if h.rule in verdict["fp"]]
    return totals, lines


def _figures(hit) -> str:
    """An unexpected finding's figures, so that a failure on a machine that kept no trace can still be read."""
    c = hit.claim
    return (f"{hit.rule}: {hit.title}; gain {hit.gain_ns / 1e6:.3f} ms ({c.gain_low_ns / 1e6:.3f}-"
            f"{c.gain_high_ns / 1e6:.3f} over the steps) of a {c.step_ns / 1e6:.3f} ms step, {c.steps} steps, noise "
            f"{c.noise_ns / 1e6:.3f} ms; {hit.seen}")


def test_corpus_precision_and_recall(corpus, capsys):
    totals, lines = _scores(corpus)
    precision = totals["tp"] / max(totals["tp"] + totals["fp"], 1)
    recall = totals["tp"] / max(totals["tp"] + totals["fn"], 1)
    with capsys.disabled():
        print(f"\nfindings corpus: {totals['tp']} expected found, {totals['fn']} missing, {totals['fp']} not "
              f"expected, {totals['tn']} absences held, {totals['either']} undecided by the data; "
              f"precision {precision:.3f}, recall {recall:.3f}")
    assert not lines, "\n".join(lines)


# ------------------------------------------------------------------ the readings the corpus rests on

def test_resnet_dataloader_shares_from_the_raw_files(corpus):
    loader = lambda n: n.startswith("enumerate(DataLoader)")  # noqa: E731
    shares = {name: share_of_steps(raw_events(corpus[name][0][0]), loader) for name in ("resnet_v100", "resnet_nw4")}
    assert shares["resnet_v100"] > 0.3 and shares["resnet_nw4"] < 0.05


def test_ascend_communication_and_stack_events_from_the_raw_files(corpus):
    for level in ("level0", "level1", "level2"):
        for folder in corpus[f"ascend_{level}"][0]:
            row = ascend_step_csv(folder)
            assert row["Communication(Not Overlapped)"] / sum(row.values()) > 0.5
            events = raw_events(f"{folder}/ASCEND_PROFILER_OUTPUT/trace_view.json")
            python = sum(e.get("cat") == "python_function" for e in events)
            assert python / len(events) > thresholds.STACK_EVENTS_SHARE


def test_dlrm_rank_7_arrives_last_at_the_first_all_to_all(corpus):
    starts = {}
    for path in corpus["dlrm_8"][0]:
        events = raw_events(path)
        rank = int(Path(path).name.split("_")[0].removeprefix("worker"))
        starts[rank] = min(e["ts"] for e in events if e.get("cat") == "kernel" and "SendRecv" in e["name"])
    assert max(starts, key=starts.get) == 7
    # the cross-rank critical path goes through the rank that arrives last: rank 7 holds most of the step
    (path,) = corpus["dlrm_8"][2]["critical_path"]
    assert max(path["by_rank"], key=path["by_rank"].get) == 7
    # balancing it is replayed: a slow-rank finding, where the gain passes the floor, names rank 7 and no other
    for hit in (h for h in corpus["dlrm_8"][3] if h.rule.startswith("slow_rank_")):
        assert hit.evidence[0].rank == 7 and hit.severity == "info"  # one step per rank: a hint, and it says so


def test_cpu_ddp_overlap_is_the_join_of_gloo_threads_and_compute(corpus):
    """gloo's all-reduces run in its worker threads beside the backward on the main thread: the step
    breakdown's not hidden communication is the independent join's, and some of it is overlapped."""
    paths, digests, _, _ = corpus["run_ddp"]
    for path, d in zip(paths, digests):
        events = raw_events(path)
        theirs = not_hidden_share(events)
        steps = [s for s in d.steps]
        ours = sum(s.breakdown.communication_ns for s in steps) / sum(s.dur_ns for s in steps)
        assert ours == pytest.approx(theirs, abs=0.01)
        assert sum(s.breakdown.overlapped_ns for s in steps) > 0
        # the rule looks at this share; whether it is shown is the replay's (its gain above the floors)
        fired = "communication_not_overlapped" in {h.rule for h in d.rule_hits}
        assert not fired or d.average.communication_ns / d.average.total_ns > thresholds.COMM_NOT_HIDDEN_SHARE


def test_pipeline_stages_come_from_the_send_receive_calls(corpus):
    for mode in ("run_pipeline", "run_pipeline_unbalanced"):
        par = recognise(corpus[mode][1])
        assert par.stages == [[0], [1]] and par.source == "send / receive calls"


def test_the_unbalanced_stage_computes_more_in_every_step(corpus):
    paths, _, _, hits = corpus["run_pipeline_unbalanced"]
    first, last = (per_step_ops_us(raw_events(p)) for p in paths)
    assert all(b > a for a, b in zip(first, last))  # independent: stage 1's host operators, step by step
    (hit,) = [h for h in hits if h.rule == "stage_imbalance"]
    assert "stage 1, rank 1" in hit.title and "last stage" in hit.seen


def test_the_broadcast_is_in_the_first_profiled_step_only(corpus):
    paths, digests, _, _ = corpus["run_broadcast"]
    for path, d in zip(paths, digests):
        first = min(s.number for s in d.steps)
        assert broadcast_steps(raw_events(path)) == {f"ProfilerStep#{first}"}
        (hit,) = [h for h in d.rule_hits if h.rule == "first_step_broadcast"]
        assert "profile later steps" in hit.change_torch and "bucket" not in hit.change_torch


def test_every_set_is_in_the_corpus(corpus):
    assert set(corpus) == set(CORPUS)


def test_every_surface_shows_the_cross_rank_findings_in_one_order(corpus, tmp_path):
    """canning-prof --mode=view, text without --detail and JSON, shows the unbalanced pipeline's
    cross-rank findings (stage imbalance among them) in the order the rules rank them, and each rank's own
    findings in its digest's order; the text's slow-rank table says why a spread over 5 % is no finding."""
    import json
    import re
    import shutil
    paths, digests, _, hits = corpus["run_pipeline_unbalanced"]
    for rank, path in enumerate(paths):
        shutil.copy(path, tmp_path / f"rank{rank}.1.pt.trace.json")
    cli = [sys.executable, "-m", "canning_tb.cli.main", "--mode=view", f"--input={tmp_path}",
           f"--cache-dir={tmp_path / 'cache'}"]
    text = subprocess.run(cli, capture_output=True, text=True, timeout=300)
    assert text.returncode == 0, text.stderr
    block = text.stdout[text.stdout.index("Optimization Suggestions (across ranks):"):]
    titles = [h.title for h in hits]
    assert any(t.startswith("Pipeline stages are unbalanced") for t in titles)
    listed = [m.group(1) for m in re.finditer(r"^\d+\. \[\w+\] (.+?)\. ", block, re.M)]
    assert [t for t in listed if t in titles] == titles
    report = json.loads(subprocess.run(cli + ["--format=json"], capture_output=True, text=True, timeout=300).stdout)
    (group,) = report["ranks"]
    assert [f["title"] for f in group["findings"]] == titles
    for d in digests:
        (window,) = [w for w in report["windows"] if w["worker"] == f"rank{d.window.rank}"]
        assert [f["rule"] for f in window["findings"]] == [h.rule for h in d.rule_hits]
    assert "no: the ranks compared are different pipeline stages" in text.stdout
