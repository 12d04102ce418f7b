"""ranks_report with the ranks' digests (analysis/report.py): the digests say what the analysis alone cannot, the
pipeline (a declared "pp" group) and the cross-rank findings that need the windows. Made by hand: two windows,
ranks 0 and 1, each declaring the communicator "g7" named "pp" over ranks [0, 1] (parallelism.py: a pipeline of
two stages, rank 0 then rank 1)."""
from test_report_mutants import MS, _analysis, _rank

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis import report


def _digests():
    out = []
    for rank in (0, 1):
        d = pb.Digest()
        d.window.rank, d.window.world_size = rank, 2
        d.communication.groups.add(group="g7", name="pp", ranks=[0, 1], rank_in_group=rank)
        out.append(d)
    return out


def _pipeline_analysis():
    """Rank 0 computes 4 ms a step, rank 1 8 ms (one step each, steps of 10 ms): a spread of (8 - 4) / 6 = 66.7 %
    flagged by the analysis; across the pipeline's stages it is the stage finding's: 8 - 6 = 2 ms above the stages'
    mean, over the 0.5 ms floor."""
    slow = dict(_rank(1), computing_ns=8 * MS)
    # communication flagged too (a ratio the analysis gives) though the rows' 2 ms each make no finding of it
    return _analysis(ranks=[_rank(0), slow], slow_ranks=[{"metric": "computing", "ratio": 4 / 6, "flagged": True},
                                                         {"metric": "communication", "ratio": 0.06, "flagged": True}])


def test_a_declared_pipeline_turns_the_slow_rank_verdict_and_gives_the_stage_finding():
    """With the digests: the flagged spreads are between the pipeline's stages (not a slow rank: each stage has one
    rank), and the suggestions hold the stage imbalance of stage 1 (rank 1), the last. Without them no stage is
    known: the computing spread is a slow rank (rank 1, a hint on one step), the communication one "under the
    significance floors"."""
    stages = "no: the ranks compared are different pipeline stages (the stage finding compares them)"
    parts = report.ranks_report(_digests(), analysis=_pipeline_analysis()).split("\n\n")
    rows = parts[1].split("\n")[-3:-1]
    assert rows[0].endswith(stages) and rows[0].startswith("computing") and rows[1].endswith(stages)
    assert "Pipeline stages are unbalanced (stage 1, rank 1, is slowest)" in parts[2]
    assert parts[2].startswith("Optimization Suggestions (across ranks):") and "Rank 1 is slow (" not in parts[2]
    parts = report.ranks_report([], analysis=_pipeline_analysis()).split("\n\n")
    rows = parts[1].split("\n")[-3:-1]
    assert rows[0].endswith("Rank 1 is slow (computing)")
    assert rows[1].endswith("no: under the significance floors (docs/rules.md)")
    assert "Pipeline stages" not in parts[2]


def test_digests_without_a_pipeline_keep_the_floors_verdict():
    """Digests that declare a data-parallel group ("dp"): no stages, so the flagged spread stays a slow-rank
    question: with one step the finding on rank 1 (the most computing, 4 ms spread over a 0.5 ms floor) is a hint,
    and the verdict column names it; the communication spread, flagged without a finding, is under the floors."""
    digests = _digests()
    for d in digests:
        d.communication.groups[0].name = "dp"
    parts = report.ranks_report(digests, analysis=_pipeline_analysis()).split("\n\n")
    rows = parts[1].split("\n")[-3:-1]
    assert rows[0].endswith("Rank 1 is slow (computing)")
    assert rows[1].endswith("no: under the significance floors (docs/rules.md)")
    assert "Rank 1 is slow (computing)" in parts[2] and "Pipeline stages" not in parts[2]
