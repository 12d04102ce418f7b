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
from .. import intervals as iv
from .claims import kept_steps
from ..step_note import from_events

RULES: dict[str, tuple[str, Callable]] = {}  # id -> (category, function)


@dataclass
class RuleInput:
    digest: pb.Digest
    ctx: Context | None = None  # None when only the digest is at hand
    _not_steps: list | None = None  # events.not_steps, once
    wg: object = None  # the window's dependency graph (analysis/graph/section.WindowGraph); None: no events

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


    def category(self, name: str) -> tuple | None:
        """The interval set of a step-breakdown category over the window (steps.breakdowns), None
        when the digest's steps do not come from these events (CANN's step trace)."""
        cats = getattr(self.ctx, "categories", None) if self.ctx is not None else None
        if cats is None or not from_events(self.digest.step_source):
            return None
        if name != "idle":
            return cats.get(name)
        starts, ends = kept_steps(self.digest)
        return iv.subtract(iv.union(starts, ends), iv.union_sets(*cats.values()))

    def categories(self, names) -> tuple | None:
        """The union of several categories' sets (None as `category`)."""
        sets = [self.category(n) for n in names]
        return None if any(s is None for s in sets) else iv.union_sets(*sets)


def rule(rule_id: str, category: str):
    def register(fn):
        RULES[rule_id] = (category, fn)
        return fn
    return register
