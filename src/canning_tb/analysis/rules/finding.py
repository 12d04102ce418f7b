"""A finding: what was seen, why it matters, what to change, the gain bound, the evidence, and the
claim behind it as data.

Rules build `Finding`s; `claims.settle` (window) and the cross-rank rules fill in the claim's
significance and the time it shares with other findings; `to_hit` writes one into the digest's
RuleHit (the one shape the views, the text report and the JSON share).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import digest_pb2 as pb

SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
NAN = float("nan")


@dataclass
class Finding:
    rule: str
    category: str
    severity: str
    title: str
    seen: str
    why: str = ""
    change_torch: str = ""
    change_npu: str = ""
    gain_ns: int = -1  # upper bound per step; -1 unknown
    step_ns: int = 0  # the step the gain is a part of
    gain_basis: str = ""  # what bounds the gain, in words
    gain_is_bound: bool = True  # False: gain_ns estimates the gain (it may be exceeded), not a bound
    value: float = 0.0
    figures: dict = field(default_factory=dict)
    evidence: list = field(default_factory=list)
    needs: str = ""
    device: str = ""
    # the claim (docs/rules.md "Claims"): the figure it rests on, under its glossary key, as a view shows it
    figure: str = ""
    figure_value: float = NAN
    view: str = ""
    threshold: float = NAN
    # the time the change removes: an interval set (starts, ends) in the window's ns, clipped to the
    # steps by claims.settle (gain = its measure per step), and what that time is, in words
    removes: tuple | None = None
    removes_what: list = field(default_factory=list)
    residual: bool = False  # removes only what no other finding of the window claims (device idle)
    at_most_ns: int = -1  # a finding with no gain bound: the time per step it is about (the floor applies to it)
    floor_ns: int = -1
    noise_ns: int = -1
    steps: int = 0
    scope: str = "window"
    ranks: list = field(default_factory=list)
    shared: list = field(default_factory=list)  # [(rule, title, ns per step)]
    # the gain as the window's dependency graph replays the change (analysis/graph/simulate.py)
    removes_ns: int = -1  # the time the change touches per step (the interval set's measure)
    gain_low_ns: int = -1  # lowest / highest simulated gain over the steps
    gain_high_ns: int = -1
    edit: str = ""  # the change as the graph replays it, in words
    scale: tuple | None = None  # (table rows of device events, factor): the change shrinks them to factor x time
    # (host interval set, host factor, device rows, device factor): the change keeps that share of the work there
    shrink: tuple | None = None
    # (cuts, rescale): operators fused into one call (graph/simulate.fuse_edit): cuts, [(pid, tid, start, end)], the
    # time that goes on each thread with the device work launched in it; rescale, [(pid, tid, start, end, host x,
    # device x)], work the fused call does in another time
    fuse: tuple | None = None
    overlap: bool = False  # the change overlaps the collectives with the backward (graph/simulate.overlap_edit)
    observation: bool = False  # no edit of the graph states the change: no gain, shown apart from the findings

    def speedup(self) -> float:
        if self.gain_ns < 0 or self.step_ns <= 0:
            return -1.0
        return self.step_ns / max(self.step_ns - min(self.gain_ns, self.step_ns - 1), 1)

    def gain_text(self) -> str:
        if self.needs:
            return "unknown: the data cannot support this rule"
        if self.observation:
            return "not simulated: an observation (the trace cannot say what the change would save)"
        if self.edit and self.gain_ns >= 0:
            spread = (f", {ms(self.gain_low_ns)} to {ms(self.gain_high_ns)} over {self.steps} steps"
                      if self.steps > 1 and self.gain_low_ns >= 0 else "")
            text = (f"{ms(self.gain_ns)} per step, {self.speedup():.2f}x (the step replayed on the trace's dependency "
                    f"graph with {self.edit}{spread})" if self.step_ns > 0 else f"{ms(self.gain_ns)} ({self.edit})")
            shared = "; ".join(f"{ms(ns)} of the time it touches is also claimed by '{title}'"
                               for _, title, ns in self.shared)
            return f"{text}; {shared}" if shared else text
        if self.gain_ns < 0:
            return f"not bounded by the data{': ' + self.gain_basis if self.gain_basis else ''}"
        word = "at most" if self.gain_is_bound else "about"
        text = (f"{word} {ms(self.gain_ns)} per step ({self.gain_basis}): up to {self.speedup():.2f}x"
                if self.step_ns > 0 else f"{word} {ms(self.gain_ns)} ({self.gain_basis})")
        shared = "; ".join(f"{ms(ns)} of it is also claimed by '{title}'" for _, title, ns in self.shared)
        return f"{text}; {shared}" if shared else text


def evidence(view: str, row: str = "", label: str = "", timeline_name: str = "", ts_ns: int = -1,
             dur_ns: int = -1, rank: int = -1) -> pb.Evidence:
    return pb.Evidence(view=view, row=row, label=label, timeline_name=timeline_name, ts_ns=int(ts_ns),
                       dur_ns=int(dur_ns), rank=int(rank))


def _claim(f: Finding) -> pb.Claim:
    removes_ns = f.removes_ns if f.removes_ns >= 0 else (f.gain_ns if f.removes is not None or f.removes_what else -1)
    claim = pb.Claim(figure=f.figure, value=float(f.figure_value), view=f.view, threshold=float(f.threshold),
                     floor_ns=int(f.floor_ns), noise_ns=int(f.noise_ns), removes_ns=int(removes_ns),
                     step_ns=int(f.step_ns), steps=int(f.steps), scope=f.scope, gain_low_ns=int(f.gain_low_ns),
                     gain_high_ns=int(f.gain_high_ns), edit=f.edit)
    claim.removes.extend(str(x) for x in f.removes_what)
    claim.ranks.extend(int(r) for r in f.ranks)
    for rule, title, ns in f.shared:
        claim.shared.add(rule=rule, title=title, ns=int(ns))
    return claim


def to_hit(f: Finding) -> pb.RuleHit:
    detail = " ".join(x for x in (f.seen, f.why, f"Change: {f.change_torch}" if f.change_torch else "",
                                  f"On Ascend (torch_npu): {f.change_npu}" if f.change_npu else "",
                                  f"To enable this check: {f.needs}" if f.needs else "",
                                  f"Gain: {f.gain_text()}." if not f.needs else "") if x)
    hit = pb.RuleHit(rule=f.rule, severity=f.severity, title=f.title, detail=detail, value=float(f.value),
                     category=f.category, seen=f.seen, why=f.why, change_torch=f.change_torch,
                     change_npu=f.change_npu, gain_ns=int(f.gain_ns), speedup=float(f.speedup()),
                     gain=f.gain_text(), needs=f.needs, device=f.device, observation=f.observation)
    hit.evidence.extend(f.evidence)
    for key, number in f.figures.items():
        hit.figures[key] = float(number)
    hit.claim.CopyFrom(_claim(f))
    return hit


def rank_key(hit: pb.RuleHit) -> tuple:
    """Findings ranked by simulated gain (largest first); those without one after, by severity; those that could
    not judge after every finding; observations (no edit of the graph states their change) last, apart, as the
    text report and the Suggestions view list them (so every output gives one order)."""
    unjudged = bool(hit.needs)
    return (hit.observation, unjudged, -max(hit.gain_ns, 0), SEVERITY_ORDER.get(hit.severity, 3), hit.rule, hit.title)


def is_number(x: float) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def ms(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms"
