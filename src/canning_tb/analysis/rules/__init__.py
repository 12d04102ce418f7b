"""The rule engine: findings a performance engineer can act on (docs/rules.md).

`rule_hits(digest, ctx)` runs every rule of one window (ranked by estimated gain) and is called
once, when the digest is built; `cluster_hits(analyse_ranks(...))` gives the cross-rank findings;
`text.suggestions_text` / `text.findings_json` render both for people and for tools.

Every finding is a claim with its evidence as data (finding.py, docs/rules.md "Claims"): a rule names
the figure it rests on by its glossary key, the time it removes as an interval set, and the runner
(runner.py, claims.py) settles gains, floors and shared time for all of them alike. A rule that rests on
the device-efficiency figures (analysis/efficiency: how near its roof a kernel runs) registers with
@rule like the others and names such a figure in `figure`; nothing else is needed here.
"""
from __future__ import annotations

from .. import digest_pb2 as pb
from ..context import Context
from . import (comm_rules, compute_rules, fusion, memory_rules, profiling_rules,  # noqa: F401 (registers)
               roofline_rules, schedule_rules, time_rules)
from .cluster_rules import cluster_hits
from .engine import RULES, RuleInput
from .runner import run_rules
from .time_rules import CATEGORY_LABELS

__all__ = ["CATEGORY_LABELS", "RULES", "cluster_hits", "rule_hits"]


def rule_hits(digest: pb.Digest, ctx: Context | None = None, wg=None) -> list[pb.RuleHit]:
    """`wg`: the window's dependency graph (analysis/graph/section.WindowGraph), on which gains are simulated."""
    return run_rules(RuleInput(digest, ctx, wg=wg))
