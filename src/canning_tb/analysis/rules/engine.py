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
from ..steps import step_rows
from .claims import kept_steps, settle
from .finding import Finding, rank_key, to_hit

RULES: dict[str, tuple[str, Callable]] = {}  # id -> (category, function)


@dataclass
class RuleInput:
    digest: pb.Digest
    ctx: Context | None = None  # None when only the digest is at hand
    _not_steps: list | None = None

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


    def per_step(self, interval_set) -> int:
        """The length per step of an interval set inside the steps the average keeps (what
        claims.settle makes a gain of), graph capture and start-up left out."""
        starts, ends = kept_steps(self.digest)
        window = iv.union(starts, ends)
        for skip in self.not_steps():
            window = iv.subtract(window, skip)
        return int(iv.measure(iv.intersect(iv.union(*interval_set), window), starts, ends).sum()) // max(len(starts), 1)

    def not_steps(self) -> list:
        """Interval sets of time that is no training step's: graph capture, process start-up."""
        if self.ctx is None:
            return []
        if self._not_steps is None:
            from .events import capture_ranges, startup_ranges  # events imports this module
            self._not_steps = [x for x in (capture_ranges(self), startup_ranges(self)) if x is not None]
        return self._not_steps

    def category(self, name: str) -> tuple | None:
        """The interval set of a step-breakdown category over the window (steps.breakdowns), None
        when the digest's steps do not come from these events (CANN's step trace)."""
        cats = getattr(self.ctx, "categories", None) if self.ctx is not None else None
        if cats is None or self.digest.step_source not in ("", "trace"):
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


def run_rules(inp: RuleInput) -> list[pb.RuleHit]:
    """Every registered rule's findings that pass the significance floors (claims.settle), ranked by
    estimated gain."""
    found = candidates(inp)
    if inp.ctx is not None and any(f.rule == "startup" for f in found) and not len(step_rows(inp.ctx.table)[0]):
        # nothing but start-up measured: no claim on training time holds (see rule "startup")
        found = [f for f in found if f.rule == "startup" or (f.gain_ns < 0 and f.removes is None)]
    return sorted((to_hit(f) for f in settle(found, inp.digest, inp.step_ns, inp.not_steps())), key=rank_key)


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
