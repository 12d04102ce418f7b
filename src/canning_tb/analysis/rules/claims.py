"""The claims of a window's findings, settled together (docs/rules.md "Significance" and "Gains").

- The time a change removes is an interval set (`Finding.removes`), clipped to the steps the
  average keeps: its gain is that union's length per step, so nested or parallel ranges are never
  counted twice and no gain exceeds the step.
- A residual finding (device idle) removes only what no other finding of the window claims.
- Significance: a gain under MIN_GAIN_SHARE of the mean step (the absolute floor) is not reported;
  one not above the noise floor is no warning (an info that says so). The noise floor is the variation the rank itself shows in the
  rest of its step: t(0.90, n - 1) x the standard error, over its n steps, of the step time less the
  time the finding claims in that step (a wait that makes one step long is the finding, not noise;
  a step that varies for other reasons makes a small gain unverifiable), with a robust standard
  deviation (one disturbed step does not hide every finding); unknown with one step.
- Two findings that both claim more than SHARED_MIN_SHARE of the step say so, each naming the other.
"""
from __future__ import annotations

import numpy as np

from .. import intervals as iv
from . import thresholds as th
from .finding import Finding


def kept_steps(digest) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the steps the average is taken over."""
    used = set(digest.average_steps)
    steps = [s for s in digest.steps if s.number in used] or list(digest.steps)
    starts = np.array([s.start_ns for s in steps], np.int64)
    return starts, starts + np.array([s.dur_ns for s in steps], np.int64)


def t90(dof: int) -> float:
    """Student's t, one-sided 90 %, for `dof` degrees of freedom (the next smaller tabled one)."""
    known = [k for k in th.T90 if k <= dof]
    return th.T90[max(known)] if dof <= 30 else th.T90_LARGE


def noise_ns(values, robust: bool = False) -> int:
    """The noise floor of a mean over steps: t(0.90, n - 1) x its standard error; -1 with fewer than
    NOISE_MIN_STEPS values. `robust`: the standard deviation as 1.4826 x the median absolute deviation
    (the normal's sd), so that one step disturbed by another process does not hide every finding of a
    window (with two values, their half difference)."""
    values = np.asarray(values, np.float64)
    if len(values) < th.NOISE_MIN_STEPS:
        return -1
    if robust and len(values) > 2:
        sd = th.MAD_TO_SD * float(np.median(np.abs(values - np.median(values))))
    else:
        sd = float(values.std(ddof=1))
    return int(round(t90(len(values) - 1) * sd / np.sqrt(len(values))))


def _per_step(interval_set, steps, count: int) -> int:
    lo, hi = steps
    if count == 0:
        return 0
    return int(iv.measure(interval_set, lo, hi).sum()) // count


def settle(found: list[Finding], digest, step_ns: int, not_steps=(), simulate=None) -> list[Finding]:
    """The findings that pass the floors, with their gains simulated on the window's graph (`simulate`,
    from `simulator`) and the time they share with each other (see the module doc). `not_steps`: interval
    sets of time that is no training step's (CUDA / HIP graph capture, where the device idles by design;
    process start-up), which no change these rules suggest removes."""
    starts, ends = kept_steps(digest)
    steps = (starts, ends)
    count = len(starts)
    window = iv.union(starts, ends)
    for skip in not_steps:
        window = iv.subtract(window, skip)
    floor = int(th.MIN_GAIN_SHARE * step_ns)
    clipped = {}
    for f in found:
        f.floor_ns, f.steps = floor, count
        if f.removes is not None and not f.residual:
            clipped[id(f)] = iv.intersect(iv.union(*f.removes), window)
    claimed = iv.union_sets(*clipped.values()) if clipped else iv.EMPTY
    for f in found:
        if f.removes is not None and f.residual:
            clipped[id(f)] = iv.subtract(iv.intersect(iv.union(*f.removes), window), claimed)
    for f in found:
        if id(f) in clipped:
            f.removes_ns = min(_per_step(clipped[id(f)], steps, count), max(step_ns, 0))
            f.gain_ns = f.removes_ns
            f.noise_ns = noise_ns((ends - starts) - iv.measure(clipped[id(f)], starts, ends), robust=True)
        else:
            f.noise_ns = noise_ns(ends - starts, robust=True)
            if f.gain_ns > step_ns > 0:
                f.gain_ns = step_ns  # a gain is never more than the step
        _simulated(f, clipped.get(id(f)), simulate, step_ns)
    kept = [f for f in found if significant(f)]
    _shared(kept, clipped, steps, count, step_ns)
    return kept


def simulator(wg):
    """f(finding, its clipped interval set or None) -> the replayed gain (graph.simulate.Simulated) or None;
    None without a graph (a digest read without its events)."""
    if wg is None or len(wg.graph) == 0 or not wg.spans:
        return None
    from ..graph.simulate import fuse_edit, gain, interval_edit, overlap_edit, scale_edit, shrink_edit
    g = wg.graph

    def run(f: Finding, interval_set):
        if f.overlap:
            edit = overlap_edit(g, wg.table, wg.spans, f.edit or "the collectives started as the backward begins")
        elif f.fuse is not None:
            edit = fuse_edit(g, f.fuse[0], f.edit or "the operators fused", f.fuse[1])
        elif f.shrink is not None:
            edit = shrink_edit(g, f.shrink[0], f.shrink[1], np.asarray(f.shrink[2], np.int64), f.shrink[3],
                               f.edit or "the work shrunk")
        elif f.scale is not None:
            edit = scale_edit(g, np.asarray(f.scale[0], np.int64), float(f.scale[1]), f.edit or "the work shrunk")
        elif interval_set is not None:
            words = f.edit or f"the {' / '.join(str(w) for w in f.removes_what) or 'claimed'} time taken away"
            edit = interval_edit(g, interval_set, [str(w) for w in f.removes_what], words)
        else:
            return None
        return gain(g, wg.spans, edit, wg.kept)
    return run


def _simulated(f: Finding, interval_set, simulate, step_ns: int) -> None:
    """The gain as the graph replays the finding's change; a finding with a time gain but no change the graph
    can replay is an observation: its time stays (`at_most_ns`, the floor applies to it), its gain goes."""
    if f.needs or simulate is None:  # no graph (a digest without its events): as measured
        return
    sim = simulate(f, interval_set) if f.gain_ns >= 0 else None
    if sim is None:
        f.observation, f.edit = True, ""
        f.at_most_ns, f.gain_ns = (f.gain_ns if f.gain_ns >= 0 else f.at_most_ns), -1
        return
    f.gain_ns = min(sim.gain_ns, max(step_ns, 0))
    f.gain_low_ns, f.gain_high_ns, f.edit = sim.low_ns, sim.high_ns, sim.what
    f.gain_is_bound = False


def significant(f: Finding) -> bool:
    """Above the absolute floor, or a finding with no time gain (judged by its own threshold alone).
    Within the noise floor it is no warning: an info that says the steps vary too much to confirm it."""
    if f.needs:
        return True
    if f.gain_ns < 0:  # no bound: the time it is about must still be worth a look
        return f.at_most_ns < 0 or f.at_most_ns >= f.floor_ns
    if f.gain_ns < f.floor_ns:
        return False
    if f.noise_ns < 0 and f.steps < th.NOISE_MIN_STEPS:
        f.seen += (" One step in the window: its step-to-step variation is unknown, so this cannot be told from "
                   "noise; profile more steps (schedule active=3 or more) to confirm it.")
    if 0 <= f.noise_ns and f.gain_ns <= f.noise_ns:
        f.severity = "info" if f.severity == "warning" else f.severity
        f.seen += (f" The rest of the step varies from step to step by more than this over the {f.steps} steps "
                   f"(noise floor {f.noise_ns / 1e6:.3f} ms): profile more steps to confirm it.")
    return True


def _shared(kept: list[Finding], clipped: dict, steps, count: int, step_ns: int) -> None:
    least = th.SHARED_MIN_SHARE * step_ns
    with_time = [f for f in kept if id(f) in clipped]
    for i, a in enumerate(with_time):
        for b in with_time[i + 1:]:
            ns = _per_step(iv.intersect(clipped[id(a)], clipped[id(b)]), steps, count)
            if ns > least:
                a.shared.append((b.rule, b.title, ns))
                b.shared.append((a.rule, a.title, ns))
