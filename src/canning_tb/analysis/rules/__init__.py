"""The rule engine: findings a performance engineer can act on (docs/rules.md).

`rule_hits(digest, ctx)` runs every rule of one window (ranked by estimated gain) and is called
once, when the digest is built; `cluster_hits(analyse_ranks(...))` gives the cross-rank findings;
`text.suggestions_text` / `text.findings_json` render both for people and for tools.
"""
from __future__ import annotations

from .. import digest_pb2 as pb
from ..context import Context
from . import (comm_rules, compute_rules, fusion, memory_rules, profiling_rules,  # noqa: F401 (registers)
               roofline_rules, schedule_rules, time_rules)
from .cluster_rules import cluster_hits
from .engine import RULES, RuleInput, run_rules
from .time_rules import CATEGORY_LABELS

__all__ = ["CATEGORY_LABELS", "RULES", "cluster_hits", "rule_hits"]


def rule_hits(digest: pb.Digest, ctx: Context | None = None) -> list[pb.RuleHit]:
    return run_rules(RuleInput(digest, ctx))
