"""The rule registry and the run over one window.

A rule is a function `(RuleInput) -> Finding | list[Finding] | None`, registered with `@rule`
under a stable id and a category. Rules read the digest (the numbers the views show) and, when
the digest is being built, the window's events (`RuleInput.ctx`: call order, runtime calls)
for what the digest does not keep.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .. import digest_pb2 as pb
from ..context import Context
from .finding import Finding, rank_key, to_hit

RULES: dict[str, tuple[str, Callable]] = {}  # id -> (category, function)


@dataclass
class RuleInput:
    digest: pb.Digest
    ctx: Context | None = None  # None when only the digest is at hand

    @property
    def step_ns(self) -> int:
        return int(self.digest.average.total_ns)

    @property
    def steps(self) -> int:
        return max(len(self.digest.average_steps) or len(self.digest.steps), 1)

    def device_label(self) -> str:
        """The device the window ran on, as the rules judge it ("cuda cc 7.0 Tesla V100", "npu", "cpu")."""
        devices = [d for d in self.digest.window.devices if d.kind in ("cuda", "npu", "rocm")]
        if not devices:
            return "npu" if self.digest.window.format == "ascend" else "cpu"
        d = devices[0]
        cc = f" cc {d.compute_capability}" if d.compute_capability else ""
        return f"{d.kind}{cc} {d.name}".strip()


def rule(rule_id: str, category: str):
    def register(fn):
        RULES[rule_id] = (category, fn)
        return fn
    return register


def run_rules(inp: RuleInput) -> list[pb.RuleHit]:
    """Every registered rule's findings, ranked by estimated gain."""
    hits = []
    for rule_id, (category, fn) in RULES.items():
        found = fn(inp)
        for f in ([found] if isinstance(found, Finding) else found or []):
            f.rule, f.category = f.rule or rule_id, f.category or category
            f.device = f.device or inp.device_label()
            if f.step_ns == 0:
                f.step_ns = inp.step_ns
            hits.append(to_hit(f))
    return sorted(hits, key=rank_key)
