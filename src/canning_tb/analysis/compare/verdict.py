"""Compare a baseline with a target: did the change help, by how much, and why.

`compare(base, target, names, mode)` takes each side as one digest or a list of digests (any
formats: only digests are read) and returns a `Comparison`, every figure per step (compare_side):

- verdict: step time baseline -> target as a ratio or a percentage (`change_text`), the memory
  peak (the highest peak over the accelerators, else CPU), communication not hidden by compute
  (the breakdown's `communication` category), and throughput (samples/s) where both sides' windows
  carry a batch size (WindowInfo.environment["batch_size"]);
- breakdown: each step category, baseline vs target (the categories sum to the step time, so
  the category deltas sum exactly to the step time's change);
- operators (matched by `mode`: name, name + shapes, name + call stack), kernels by name and by
  family, largest |delta| first (compare_ops);
- contributors: the `top` operators (by name) with the largest |delta| of their time (compare_ops:
  device self time for operators with device work, else host self time) and the dataloader (its
  breakdown category where the trace records no dataloader operator), and the unexplained rest = step-time change - their sum (overlap, gaps, work outside operators);
  and the same change as the breakdown shows it (`by_category`): each step category's delta (they sum to
  the step-time change), with the operators that fall in it (CATEGORY_OF_OPERATOR: the dataloader's, the
  collectives in communication, operators with device work in compute, the others on the host) and the
  rest of the category no operator explains;
- the operator tree diff (compare_tree), memory peaks and step-aligned curves (compare_memory),
  communication per collective and group, and per collective kind (compare_comm).

- noise: the 95 % Welch interval of the step-time change on the per-step times of both sides
  (noise.py), and whether the change is significant; attribution: the change split into the machine's
  part and the code's (attribution.py); gate: the regression gate's verdict when a threshold is given
  (gate.py).

Text of a change (`change_text`): under 1 % "about the same"; a ratio of 1.5 or more in either
direction as "1.8x faster" / "2.0x slower"; otherwise a percentage of the baseline, "12 % slower".
The step time says both (`step_text`): the step's length in % of the baseline and the speed as the
ratio of the step times: "step 31 % shorter (1.45x faster)", "step 12 % longer (1.12x slower)".
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from ..common import DATALOADER_RE
from .attribution import Attribution, attribute
from .comm import CollectiveDelta, collective_deltas
from .gate import Gate, interval_text, judge, too_few_text
from .memory import MemoryPair, memory_pairs
from .noise import Interval, step_samples, welch
from .ops import Row, kernel_rows, metric_of, operator_rows
from .side import CATEGORIES, Side, side_of
from .tree import Node, operator_tree
from ..names import NameMap, name_map
from ..summary import share as summary_share

RATIO_FROM = 1.5
SAME_BELOW_PCT = 1.0
PER_CATEGORY = 5  # operators shown in each category of `by_category`
_COLLECTIVE_OP = re.compile(r"nccl|c10d::|hccl|hcom|record_param_comms|all_?reduce|all_?gather|reduce_?scatter"
                            r"|all_?to_?all|broadcast_|send_recv|gloo", re.I)


@dataclass
class Change:
    base: float | None              # None: unknown on that side
    target: float | None
    delta: float | None
    delta_pct: float | None         # of the baseline
    text: str                       # "1.8x faster", "12 % slower", "about the same", "n/a"


@dataclass
class SideInfo:
    windows: int
    steps: int
    step_ns: float
    batch_size: float | None


@dataclass
class Verdict:
    step_time: Change               # ns per step
    memory_peak: Change             # bytes
    memory_device: str
    comm_not_hidden: Change         # ns per step
    comm_not_hidden_share: Change   # share of the step
    throughput: Change              # samples per second
    text: str                       # the verdict line
    step_interval: Interval | None  # 95 % Welch interval of the step-time change (ns); None: too few steps
    significance: str               # "significant" | "not significant" | "cannot judge"
    noise_text: str                 # the interval in words, or how many steps are needed


@dataclass
class CategoryDelta:
    category: str
    base_ns: float
    target_ns: float
    delta_ns: float


@dataclass
class Contributor:
    name: str
    kind: str                       # "operator" | "category" (the dataloader's time)
    delta_ns: float
    status: str


@dataclass
class CategoryContribution:
    category: str                   # a step category (the breakdown's)
    delta_ns: float                 # its delta in the breakdown
    operators: list[Contributor]    # the largest operator deltas that fall in it
    rest_ns: float                  # delta_ns - their sum: overlap inside the category, gaps, work outside operators


@dataclass
class Contributors:
    step_delta_ns: float
    operators: list[Contributor]
    explained_ns: float
    unexplained_ns: float
    by_category: list[CategoryContribution]  # the breakdown's deltas: they sum to step_delta_ns


@dataclass
class Comparison:
    metric: str                     # "device": a side ran device work (compare_ops' rule), else "host"
    mode: str                       # how operators are matched
    base: SideInfo
    target: SideInfo
    verdict: Verdict
    breakdown: list[CategoryDelta]
    operators: list[Row]
    kernels: list[Row]
    kernel_families: list[Row]
    contributors: Contributors
    tree: Node
    memory: list[MemoryPair]
    communication: list[CollectiveDelta]
    communication_by_kind: list[CollectiveDelta]
    attribution: Attribution
    gate: Gate | None               # None: no threshold asked

    def as_dict(self) -> dict:
        return asdict(self)


def change_text(base: float | None, target: float | None, lower: str, higher: str) -> str:
    if base is None or target is None or base <= 0 or target < 0:
        return "n/a"
    pct = 100 * (target - base) / base
    if abs(pct) < SAME_BELOW_PCT:
        return "about the same"
    ratio = base / target if 0 < target < base else target / base if target > base else None
    word = lower if target < base else higher
    if ratio is not None and ratio >= RATIO_FROM:
        return f"{ratio:.1f}x {word}"
    return f"{abs(pct):.0f} % {word}"


def step_text(base: float | None, target: float | None) -> str:
    """"step 31 % shorter (1.45x faster)" (module doc)."""
    if base is None or target is None or base <= 0 or target <= 0:
        return "n/a"
    pct = 100 * (target - base) / base
    if abs(pct) < SAME_BELOW_PCT:
        return "step about the same"
    ratio = base / target if target < base else target / base
    times = f"{ratio:.2f}x" if ratio < 10 else f"{ratio:.0f}x"
    size = f"{abs(pct):.0f}" if abs(pct) < 99.5 or abs(pct) >= 100 else f"{abs(pct):.1f}"
    if target < base:
        return f"step {size} % shorter ({times} faster)"
    return f"step {size} % longer ({times} slower)"


def _noise(base: Side, target: Side, base_steps: list, target_steps: list) -> tuple[Interval | None, str, str]:
    interval = welch(base_steps, target_steps)
    if interval is None:
        return None, "cannot judge", too_few_text(len(base_steps), len(target_steps))
    word = "significant" if interval.low_ns > 0 or interval.high_ns < 0 else "not significant"
    return interval, word, f"{word} ({interval_text(interval, base.step_ns)})"


def _change(base: float | None, target: float | None, lower: str, higher: str) -> Change:
    known = base is not None and target is not None
    delta = target - base if known else None
    return Change(base=base, target=target, delta=delta,
                  delta_pct=100 * delta / base if known and base else None,
                  text=change_text(base, target, lower, higher))


def _peak(side: Side) -> tuple[str, float | None]:
    """(device, bytes) of the highest accelerator peak over the side's windows, else CPU's."""
    mems = [m for d in side.digests for m in d.memory]
    chosen = [m for m in mems if m.device.upper() != "CPU" and m.peak_allocated_bytes > 0] or \
             [m for m in mems if m.peak_allocated_bytes > 0]
    top = max(chosen, key=lambda m: m.peak_allocated_bytes, default=None)
    return (top.device, float(top.peak_allocated_bytes)) if top else ("", None)


def _throughput(side: Side) -> float | None:
    return side.batch_size / (side.step_ns / 1e9) if side.batch_size and side.step_ns > 0 else None


def _verdict(base: Side, target: Side, base_steps: list, target_steps: list) -> Verdict:
    step = _change(base.step_ns or None, target.step_ns or None, "faster", "slower")
    step.text = step_text(step.base, step.target)
    interval, significance, noise_text = _noise(base, target, base_steps, target_steps)
    (base_dev, base_peak), (target_dev, target_peak) = _peak(base), _peak(target)
    memory = _change(base_peak, target_peak, "lower", "higher")
    comm = _change(base.breakdown["communication"], target.breakdown["communication"], "less", "more")
    share = _change(summary_share(base.breakdown["communication"], base.step_ns),  # the one ratio (summary.share)
                    summary_share(target.breakdown["communication"], target.step_ns), "less", "more")
    throughput = _change(_throughput(base), _throughput(target), "lower", "higher")
    parts = [f"{step.text}, {noise_text}" if step.text != "n/a" else "step time n/a"]
    if memory.text != "n/a":
        parts.append(f"memory peak {memory.text}")
    if comm.base or comm.target:
        word = "" if comm.text == "n/a" else f" ({comm.text})"
        parts.append(f"communication not hidden {comm.base / 1e6:.3f} -> {comm.target / 1e6:.3f} ms per step{word}")
    if throughput.text != "n/a":
        parts.append(f"throughput {throughput.text}")
    return Verdict(step_time=step, memory_peak=memory, memory_device=target_dev or base_dev,
                   comm_not_hidden=comm, comm_not_hidden_share=share, throughput=throughput, text="; ".join(parts),
                   step_interval=interval, significance=significance, noise_text=noise_text)


def _contributors(base: Side, target: Side, rows: list[Row], top: int) -> Contributors:
    """Operators, and the dataloader: old traces record it as an operator (its self time, the
    collate operators inside it apart), recent torch as a range only; then its breakdown category
    stands for it (which holds the collate operators too: they may count twice)."""
    found = [Contributor(r.key, "operator", r.delta_ns, r.status) for r in rows if r.delta_ns != 0]
    loader = target.breakdown["dataloader"] - base.breakdown["dataloader"]
    if loader and not any(DATALOADER_RE.match(r.key) for r in rows):
        found.append(Contributor("dataloader", "category", loader, "changed"))
    chosen = sorted(found, key=lambda c: -abs(c.delta_ns))[:top]
    explained = sum(c.delta_ns for c in chosen)
    step_delta = target.step_ns - base.step_ns
    return Contributors(step_delta_ns=step_delta, operators=chosen, explained_ns=explained,
                        unexplained_ns=step_delta - explained, by_category=_by_category(base, target, rows))


def category_of_operator(row: Row) -> str:
    """The step category an operator's time falls in (module doc)."""
    if DATALOADER_RE.match(row.key):
        return "dataloader"
    if _COLLECTIVE_OP.search(row.key):
        return "communication"
    if row.base_device_total_ns > 0 or row.target_device_total_ns > 0:
        return "compute"
    return "host"


def _by_category(base: Side, target: Side, rows: list[Row]) -> list[CategoryContribution]:
    """Each category's breakdown delta with its largest operator deltas and the rest."""
    ops: dict[str, list[Contributor]] = {}
    for r in rows:  # largest |delta| first already
        if r.delta_ns != 0:
            found = ops.setdefault(category_of_operator(r), [])
            if len(found) < PER_CATEGORY:
                found.append(Contributor(r.key, "operator", r.delta_ns, r.status))
    out = []
    for c in CATEGORIES:
        delta = target.breakdown[c] - base.breakdown[c]
        mine = ops.get(c, [])
        if delta or mine:
            out.append(CategoryContribution(c, delta, mine, delta - sum(o.delta_ns for o in mine)))
    return sorted(out, key=lambda c: -abs(c.delta_ns))


def compare(base_digests, target_digests, names: NameMap | None = None, mode: str = "name",
            top: int = 10, threshold_pct: float | None = None, gate_on: str = "code") -> Comparison:
    """The comparison (module doc); with `threshold_pct` the gate's verdict on `gate_on` (gate.py)."""
    names = names or name_map()
    base, target = side_of(base_digests), side_of(target_digests)
    by_name = operator_rows(base, target, names, "name")
    by_shape = operator_rows(base, target, names, "shape")
    base_steps, target_steps = step_samples(base.digests), step_samples(target.digests)
    verdict = _verdict(base, target, base_steps, target_steps)
    attribution = attribute(by_shape, base_steps, target_steps, base.step_ns, target.step_ns)
    gate = None if threshold_pct is None else judge(verdict.step_interval, attribution, base.step_ns,
                                                    len(base_steps), len(target_steps), threshold_pct, gate_on)
    return Comparison(
        metric=metric_of(base, target), mode=mode,
        base=SideInfo(base.windows, base.steps, base.step_ns, base.batch_size),
        target=SideInfo(target.windows, target.steps, target.step_ns, target.batch_size),
        verdict=verdict,
        breakdown=[CategoryDelta(c, base.breakdown[c], target.breakdown[c], target.breakdown[c] - base.breakdown[c])
                   for c in CATEGORIES],
        operators={"name": by_name, "shape": by_shape}.get(mode) or operator_rows(base, target, names, mode),
        kernels=kernel_rows(base, target, names), kernel_families=kernel_rows(base, target, names, by_family=True),
        contributors=_contributors(base, target, by_name, top),
        tree=operator_tree(base, target, names),
        memory=memory_pairs(base, target),
        communication=collective_deltas(base, target), communication_by_kind=collective_deltas(base, target, False),
        attribution=attribution, gate=gate)
