"""The run over one window: every registered rule (engine.RULES), then the claims settled together
(claims.settle: gains from the time removed, the significance floors, shared time)."""
from __future__ import annotations

from .. import digest_pb2 as pb
from ..steps import has_steps
from .claims import settle, simulator
from .engine import RULES, RuleInput
from .events import not_steps
from .finding import Finding, rank_key, to_hit


def run_rules(inp: RuleInput) -> list[pb.RuleHit]:
    """Every registered rule's findings that pass the significance floors (claims.settle), ranked by
    estimated gain."""
    found = candidates(inp)
    if inp.ctx is not None and any(f.rule == "startup" for f in found) and not has_steps(inp.ctx.table):
        # nothing but start-up measured: no claim on training time holds (see rule "startup")
        found = [f for f in found if f.rule == "startup" or (f.gain_ns < 0 and f.removes is None)]
    settled = settle(found, inp.digest, inp.step_ns, not_steps(inp), simulate=simulator(inp.wg))
    return sorted((to_hit(f) for f in settled), key=rank_key)


def candidates(inp: RuleInput) -> list[Finding]:
    """What every rule found before the significance floors (tests of a rule's detection use this)."""
    found = []
    for rule_id, (category, fn) in RULES.items():
        out = fn(inp)
        for f in ([out] if isinstance(out, Finding) else out or []):
            f.rule, f.category = f.rule or rule_id, f.category or category
            f.device = f.device or inp.device_label()
            if f.step_ns == 0:
                f.step_ns = inp.step_ns
            found.append(f)
    return found
