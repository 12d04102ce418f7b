"""Findings for people (the profiling-suite text: "Optimization Suggestions: 1. ...") and for
tools (JSON), from the RuleHits of a digest and of the cross-rank analysis."""
from __future__ import annotations

from canning_tb.util.digest_json import to_plain

from .finding import rank_key


def _one(i: int, hit) -> list[str]:
    lines = [f"{i}. [{hit.severity}] {hit.title}. {hit.seen or hit.detail}"]
    if hit.why:
        lines.append(f"   Why: {hit.why}")
    if hit.change_torch:
        lines.append(f"   Consider: {hit.change_torch}")
    if hit.change_npu:
        lines.append(f"   Consider on Ascend (torch_npu): {hit.change_npu}")
    if hit.needs:
        lines.append(f"   To enable this check: {hit.needs}")
    else:
        lines.append(f"   Estimated gain: {hit.gain}")
    rows = [e.label or e.row for e in hit.evidence if e.view != "timeline" and (e.label or e.row)]
    if rows:
        lines.append(f"   Evidence: {'; '.join(rows[:4])}")
    return lines


def suggestions_text(hits) -> str:
    """'Optimization Suggestions:' then the findings, numbered, ranked by estimated gain."""
    ranked = sorted(hits, key=rank_key)
    if not ranked:
        return "Optimization Suggestions:\n  No problem found by the rules."
    out = ["Optimization Suggestions:"]
    for i, hit in enumerate(ranked, 1):
        out += _one(i, hit)
    return "\n".join(out)


def findings_json(hits) -> list[dict]:
    """The findings, ranked, as plain dicts (every RuleHit field)."""
    return [to_plain(h) for h in sorted(hits, key=rank_key)]
