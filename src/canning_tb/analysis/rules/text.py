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
    found = [h for h in ranked if not h.observation]
    seen = [h for h in ranked if h.observation]
    for i, hit in enumerate(found, 1):
        out += _one(i, hit)
    if not found:
        out.append("  No change the trace's dependency graph can replay was found worth making.")
    if seen:  # rules whose change the graph cannot replay: no gain, never ranked among the findings
        out.append("Observations (no simulated gain):")
        for i, hit in enumerate(seen, 1):
            out += _one(i, hit)
    return "\n".join(out)


def critical_path_text(paths, limit: int = 8) -> str:
    """'Critical path:' per step, the categories that held it, largest first (digest.critical_path)."""
    if not paths:
        return ""
    out = ["Critical path (what held each step, docs/critical_path.md):"]
    for p in list(paths)[:limit]:
        total = max(p.dur_ns, 1)
        parts = sorted(p.by_category.items(), key=lambda kv: -kv[1])
        out.append(f"  step {p.number}: {p.dur_ns / 1e6:.3f} ms: " + ", ".join(
            f"{cat} {ns / 1e6:.3f} ms ({100 * ns / total:.0f}%)" for cat, ns in parts if ns > 0))
    if len(paths) > limit:
        out.append(f"  ... {len(paths) - limit} more steps")
    return "\n".join(out)


def findings_json(hits) -> list[dict]:
    """The findings, ranked, as plain dicts (every RuleHit field)."""
    return [to_plain(h) for h in sorted(hits, key=rank_key)]
