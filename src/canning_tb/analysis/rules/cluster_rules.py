"""Findings across ranks, from analysis/cluster.py's `analyse_ranks` output and the parallelism the
files declare (analysis/parallelism.py): slow rank (among the ranks that do the same work: a
pipeline's stages do not), slow link (per communicator group; per transport on large transfers),
pipeline stage imbalance, the tied-embedding all-reduce between the first and last stage.

Significance (docs/rules.md): a spread counts when it is above SLOW_RANK_RATIO of the mean (ma), its
gain above MIN_GAIN_SHARE of the step (the absolute floor) and above the ranks' own step-to-step
variation of that figure (the noise floor: t(0.90, n - 1) x the standard error of the per-step
difference between the ranks compared, steps paired; unknown with one step: then only the ratio and the
absolute floor judge).
"""
from __future__ import annotations

import numpy as np

from .. import digest_pb2 as pb
from ..parallelism import recognise
from . import thresholds as th
from .claims import noise_ns
from .comm_rules import is_p2p
from ..graph.ranks import balance_gain, link_gain, own_work, p2p_overlaps, scale_gain, skeleton
from .finding import Finding, evidence, ms, pct, rank_key, to_hit

METRICS = (("computing", "computing_ns", True), ("communication", "communication_ns", False), ("free", "free_ns", True))


def _step_ns(analysis: dict) -> int:
    return max((r["step_ns"] for r in analysis["ranks"]), default=0)


def _per_step(row: dict, metric: str) -> dict[int, float]:
    """A rank's figure in each of its steps, by step number (the trace's breakdown; ranks whose figures
    are CANN's own have none here)."""
    if row.get("source", "trace") != "trace":
        return {}
    out = {}
    for s in row.get("per_step", []):
        if metric == "computing":
            out[s["step"]] = s["compute_ns"] + s["overlapped_ns"]
        elif metric == "free":
            out[s["step"]] = s["free_ns"]  # the rows' free time (other_ns is CANN's host tail, 0 on traces)
        else:
            out[s["step"]] = s.get(f"{metric}_ns", 0)
    return out


def paired_noise(slow: list[dict], others: list[dict], metric: str) -> int:
    """The noise floor of a spread: t(0.90, n - 1) x the standard error of the per-step difference
    between the slow ranks and the others (mean of each side per step, steps matched by number), -1
    with fewer than NOISE_MIN_STEPS common steps. Paired: a load that slows every rank alike cancels."""
    sides = [[_per_step(r, metric) for r in rows] for rows in (slow, others)]
    common = set.intersection(*(set(v) for side in sides for v in side)) if all(sides) else set()
    if len(common) < th.NOISE_MIN_STEPS:
        return -1
    diff = [np.mean([v[k] for v in sides[0]]) - np.mean([v[k] for v in sides[1]]) for k in sorted(common)]
    return noise_ns(diff)


def _significant(f: Finding, step_ns: int, noise_ns: int) -> bool:
    """Above the floors. With one step per rank the variation is unknown: the finding is only a hint
    (info), and says so."""
    f.floor_ns, f.noise_ns, f.step_ns = int(th.MIN_GAIN_SHARE * step_ns), noise_ns, step_ns
    f.scope = "ranks"
    if f.gain_ns < 0:
        return True
    if f.gain_ns < f.floor_ns or (noise_ns >= 0 and f.gain_ns <= noise_ns):
        return False
    if noise_ns < 0 and f.severity == "warning":
        f.severity = "info"
        f.seen += (" One step per rank: the ranks' step-to-step variation is unknown, so part of this spread "
                   "may be noise; profile more steps (schedule active=3 or more) to tell.")
    return True


def _spread(values: list[float]) -> float:
    mean = sum(values) / len(values) if values else 0.0
    return (max(values) - min(values)) / mean if mean > 0 else 0.0


def slow_rank(analysis: dict, par, sk=None) -> list[Finding]:
    """Per metric, among the ranks that do the same work (each pipeline stage's ranks; all ranks
    without a pipeline): the msprof-analyze spread, above the floors."""
    rows = {r["rank"]: r for r in analysis["ranks"]}
    sets = [s for s in par.stages if len(s) > 1] if par.pipeline else [sorted(rows)]
    found = []
    for members in sets:
        group = [rows[r] for r in members if r in rows]
        if len(group) < 2:
            continue
        mine = [f for f in (_slow_rank_finding(group, metric, field, slow_is_max, par, analysis, sk)
                            for metric, field, slow_is_max in METRICS) if f is not None]
        # the rank the others wait for inside the collectives (least communication) is the direct
        # evidence: a most-computing or most-free rank other than it is not the one they wait for
        waited = next((f.evidence[0].rank for f in mine if f.rule == "slow_rank_communication"), None)
        found += [f for f in mine if waited is None or f.evidence[0].rank == waited]
    return found


def _slow_rank_finding(group: list[dict], metric: str, field: str, slow_is_max: bool, par, analysis: dict, sk=None):
    values = {r["rank"]: float(r[field]) for r in group}
    ratio = _spread(list(values.values()))
    if ratio <= th.SLOW_RANK_RATIO:
        return None
    hi, lo = max(values, key=values.get), min(values, key=values.get)
    rank = hi if slow_is_max else lo
    where = f" among the ranks of pipeline stage {par.stage_of(rank)}" if par.pipeline else ""
    f = Finding(
        f"slow_rank_{metric}", "communication", "warning", f"Rank {rank} is slow ({metric})",
        f"{metric.capitalize()} time differs{where} by (max - min) / mean = {pct(ratio)}: "
        f"{ms(values[lo])} on rank {lo} to {ms(values[hi])} on rank {hi} per step (Ranks view: {metric}).",
        why=("The rank with the least communication is the one the others wait for inside the collectives."
             if not slow_is_max else f"Every collective waits for the rank with the most {metric} time."),
        change_torch="look at that rank's window: its data (uneven batches / sequence lengths), its host (other "
                     "processes, CPU binding, throttling) and its device; balance the work per rank.",
        change_npu="the same; check the device's AI Core frequency and the host's CPU binding (numactl).",
        gain_ns=int(values[hi] - values[lo]), gain_basis=f"the {metric} spread between the ranks", value=ratio,
        figures={"ratio": ratio, "max_ns": values[hi], "min_ns": values[lo]},
        evidence=[evidence("ranks", str(rank), f"rank {rank}", rank=rank)],
        figure=metric, figure_value=values[rank], view="ranks",
        removes_what=[f"{metric} spread"], ranks=sorted(values))
    _balanced(f, sk, rank)
    by_rank = {r["rank"]: r for r in group}
    return f if _significant(f, _step_ns(analysis), paired_noise([by_rank[hi]], [by_rank[lo]], metric)) else None


def _balanced(f: Finding, sk, rank: int) -> None:
    """The gain of balancing the rank, as the ranks' graph replays it (analysis/graph/ranks.py): the rank given
    the other ranks' median lead time before each collective it shares. Without shared collectives the graph
    cannot say: an observation (its spread stays the time it is about)."""
    if sk is None:
        return
    index = next((i for i, rc in enumerate(sk.ranks) if rc.rank == rank), None)
    sim = balance_gain(sk, index) if index is not None else None
    if sim is None:
        f.observation, f.at_most_ns, f.gain_ns = True, f.gain_ns, -1
        return
    f.gain_ns, f.gain_low_ns, f.gain_high_ns, steps = sim
    f.gain_is_bound = False
    f.edit = f"rank {rank} given the other ranks' median own work before each collective it shares"


def slow_link(analysis: dict, digests, sk=None) -> list[Finding]:
    """Per communicator group (collectives, not pipeline send / receive, whose time is the partner's):
    the spread of each rank's transfer time per step; per transport: the spread of the links'
    bandwidth on transfers of at least LOW_BANDWIDTH_MIN_BYTES."""
    found = []
    rows = {r["rank"]: r for r in analysis["ranks"]}
    for col in analysis.get("collectives", []):
        if col["wait_source"] in ("", "matched calls") or len(col["per_rank"]) < 2 or col["comm_type"] == "p2p":
            continue  # matched calls: transfer is the same on every rank by construction
        steps = {int(r): max(rows[int(r)]["steps"], 1) if int(r) in rows else 1 for r in col["per_rank"]}
        per = {int(r): v["transfer_ns"] / steps[int(r)] for r, v in col["per_rank"].items()}
        ratio = _spread(list(per.values()))
        if ratio <= th.SLOW_RANK_RATIO:
            continue
        slow = max(per, key=per.get)
        f = Finding(
            "slow_link", "communication", "warning", f"Slow link in group {col['group']}",
            f"{col['kind']} in group {col['group']}: transfer time per rank and step differs by (max - min) / mean = "
            f"{pct(ratio)}; slowest rank {slow} ({ms(per[slow])} vs {ms(min(per.values()))}).",
            why="Every member of the group waits for its slowest link.",
            change_torch="check that rank's links (nvidia-smi topo -m, NCCL_DEBUG=INFO for the transport chosen).",
            change_npu="check that rank's HCCS / RDMA links (hccn_tool -i N -link -g, -net_health -g).",
            gain_ns=int(per[slow] - min(per.values())), gain_basis="the transfer spread in the group per step",
            value=ratio, figures={"ratio": ratio},
            evidence=[evidence("ranks", col["kind"], f"{col['kind']} {col['group']}", rank=slow)],
            figure="transfer", figure_value=per[slow], view="ranks",
            removes_what=["transfer spread"], ranks=sorted(per))
        fast = min(per, key=per.get)
        if _significant(f, _step_ns(analysis), paired_noise([rows[slow]], [rows[fast]], "transfer")
                        if slow in rows and fast in rows else -1):
            found.append(f)
    return found + _slow_transport(digests, analysis, sk)


def _slow_transport(digests, analysis: dict, sk=None) -> list[Finding]:
    """Links of one transport whose bandwidth on large transfers differs by more than the ratio; the
    gain is the time the slowest link would save at the links' mean bandwidth (per step), under the
    floors like every finding."""
    by_transport: dict = {}
    local = set()  # links numbered within their communicator: not global ranks, so no pairs of the graph
    for d in digests:
        steps = max(len(d.average_steps) or len(d.steps), 1)
        for link in d.communication.links:
            if link.src != link.dst and link.bytes >= th.LOW_BANDWIDTH_MIN_BYTES and link.time_ns > 0:
                if link.numbering == "communicator":
                    local.add((link.transport, link.src, link.dst))
                cells = by_transport.setdefault(link.transport, {}).setdefault((link.src, link.dst), [0, 0])
                cells[0] += link.bytes / steps
                cells[1] += link.time_ns / steps
    found = []
    for transport, links in sorted(by_transport.items()):
        if len(links) < 2:
            continue
        bw = {k: b / t for k, (b, t) in links.items()}
        ratio = _spread(list(bw.values()))
        if ratio <= th.SLOW_RANK_RATIO:
            continue
        mean = float(np.mean(list(bw.values())))
        (src, dst), slowest = min(bw.items(), key=lambda kv: kv[1])
        moved, took = links[(src, dst)]
        f = Finding(
            "slow_link", "communication", "warning", f"Slow {transport} link",
            f"{transport} bandwidth on transfers of at least {th.LOW_BANDWIDTH_MIN_BYTES // 2 ** 20} MiB differs across "
            f"links by (max - min) / mean = {pct(ratio)}; slowest {src} -> {dst} at {slowest:.2f} GB/s, mean "
            f"{mean:.2f} GB/s (Communication matrix).",
            why="Collectives run at the pace of their slowest link.",
            change_torch="check that link (nvidia-smi topo -m, NCCL_DEBUG=INFO).",
            change_npu="check that link (hccn_tool -link / -net_health).",
            gain_ns=int(took - moved / mean), gain_basis="the slowest link's transfer time per step at the links' mean "
            "bandwidth", value=ratio, figures={"ratio": ratio, "bandwidth_gbps": slowest},
            evidence=[evidence("ranks", f"{src}->{dst}", "matrix cell", rank=src)],
            figure="bandwidth", figure_value=slowest, view="ranks", ranks=[src, dst],
            removes_what=["slow link transfer"])
        if (transport, src, dst) not in local:
            _link_replayed(f, sk, src, dst, slowest / float(np.median([v for k, v in bw.items() if k != (src, dst)])))
        if _significant(f, _step_ns(analysis), -1):
            found.append(f)
    return found


def _link_replayed(f: Finding, sk, src: int, dst: int, factor: float) -> None:
    """Where the link's transfers are send / receive pairs the ranks' graph matched, the gain of moving them at
    the other links' median rate, replayed (the pairs' transfers scaled by slowest / median bandwidth). A link
    that carries collectives only has no such edit: the finding stays an observation."""
    sim = link_gain(sk, src, dst, factor) if sk is not None and factor > 0 and not p2p_overlaps(sk) else None
    if sim is None:
        return
    f.gain_ns, f.gain_low_ns, f.gain_high_ns, _ = sim
    f.gain_is_bound = False
    f.edit = f"the sends from rank {src} to rank {dst} at the other links' median bandwidth ({factor:.2f}x their time)"


def _stage_rows(analysis: dict, par) -> list[list[dict]]:
    rows = {r["rank"]: r for r in analysis["ranks"]}
    return [[rows[r] for r in stage if r in rows] for stage in par.stages]


def stage_imbalance(analysis: dict, par, sk=None) -> list[Finding]:
    """Pipeline stages (analysis/parallelism.py) with unequal computing per step: the slowest stage
    sets the pace and the others wait in their receives."""
    if not par.pipeline:
        return []
    stages = [s for s in _stage_rows(analysis, par) if s]
    computing = [float(np.mean([r["computing_ns"] for r in s])) for s in stages]
    ratio = _spread(computing)
    if len(stages) < 2 or ratio <= th.SLOW_RANK_RATIO:
        return []
    slow = int(np.argmax(computing))
    mean = float(np.mean(computing))
    slow_ranks = [r["rank"] for r in stages[slow]]
    waits = ", ".join(f"stage {i} (rank {', '.join(str(r['rank']) for r in s)}) {_mean_wait(s)}"
                      for i, s in enumerate(stages) if i != slow)
    last = " It is the last stage, which also computes the loss." if slow == len(stages) - 1 else ""
    f = Finding(
        "stage_imbalance", "communication", "warning",
        f"Pipeline stages are unbalanced (stage {slow}, rank {', '.join(map(str, slow_ranks))}, is slowest)",
        f"Computing per step differs across the {len(stages)} pipeline stages ({par.source}) by (max - min) / mean = "
        f"{pct(ratio)}: stage {slow} {ms(computing[slow])}, the stages' mean {ms(mean)}.{last} The other stages "
        f"wait for it in send / receive (p2p wait per step: {waits}).",
        why="A pipeline runs at the pace of its slowest stage; the others idle in their receives (bubbles). This is "
            "not a slow rank: the stages hold different layers.",
        change_torch="move layers from the slowest stage to the others (torch.distributed.pipelining: split points; "
                     "Megatron: --decoder-first/last-pipeline-num-layers), use more micro-batches, or an interleaved "
                     "schedule (ScheduleInterleaved1F1B, virtual stages).",
        change_npu="the same (MindSpeed: --num-layer-list to place layers per stage).",
        gain_ns=int(computing[slow] - mean), step_ns=_step_ns(analysis),
        gain_basis="the slowest stage's computing above the stages' mean (a perfectly balanced split)", value=ratio,
        figures={"ratio": ratio, "slow_stage_computing_ns": computing[slow], "mean_computing_ns": mean},
        evidence=[evidence("ranks", str(r), f"rank {r} computing", rank=r) for r in slow_ranks],
        figure="computing", figure_value=computing[slow], view="ranks",
        removes_what=["stage imbalance"], ranks=[r["rank"] for s in stages for r in s])
    _stages_balanced(f, sk, [[r["rank"] for r in s] for s in stages])
    everyone = [r for s in stages for r in s]
    return [f] if _significant(f, _step_ns(analysis), paired_noise(stages[slow], everyone, "computing")) else []


def _mean_wait(stage: list[dict]) -> str:
    """A stage's p2p wait per step: the mean over its ranks whose wait is known (-1: the files do not split it)."""
    known = [r["p2p_wait_ns"] for r in stage if r.get("p2p_wait_ns", -1) >= 0]
    return ms(float(np.mean(known))) if known else "unknown"


def _stages_balanced(f: Finding, sk, stages: list[list[int]]) -> None:
    """The gain of "move layers so the stages compute alike", as the ranks' graph replays it: each stage's own
    work between its calls (analysis/graph/ranks.py: lead times and step tails) scaled to the stages' mean, the
    send / receive pairs holding each stage to the others. Without matched send / receive pairs the graph does not
    link the stages, and where sends / receives run asynchronously (isend / irecv ranges lasting until their wait:
    the rank works inside them) it cannot tell work from waiting: an observation then."""
    if sk is None or not any(sk.p2p) or p2p_overlaps(sk):
        return
    index = {rc.rank: i for i, rc in enumerate(sk.ranks)}
    own = [[own_work(sk, index[r]) for r in stage if r in index] for stage in stages]
    if any(not o or min(o) <= 0 for o in own):
        return
    per_stage = [float(np.mean(o)) for o in own]
    mean = float(np.mean(per_stage))
    factors = {index[r]: mean / w for stage, w in zip(stages, per_stage) for r in stage if r in index}
    sim = scale_gain(sk, factors)
    if sim is None:
        return
    f.gain_ns, f.gain_low_ns, f.gain_high_ns, _ = sim
    f.gain_is_bound = False
    f.edit = (f"each stage's own work between its sends and receives scaled to the stages' mean "
              f"({ms(mean)} per step; stage {int(np.argmax(per_stage))} {ms(max(per_stage))})")


def embedding_allreduce(analysis: dict, par) -> list[Finding]:
    """The all-reduce of tied embeddings between the first and last stage: it waits for the pipeline."""
    found = []
    for col in analysis.get("collectives", []):
        if col["kind"] != "AllReduce" or par.kind(col["group"]) != "embedding" or is_p2p(col["kind"], col["comm_type"]):
            continue
        members = sorted(int(r) for r in col["per_rank"])
        per = {int(r): v["total_ns"] for r, v in col["per_rank"].items()}
        f = Finding(
            "embedding_allreduce", "communication", "info",
            "The all-reduce between the first and last pipeline stage waits for the pipeline",
            f"AllReduce in group {col['group'] or 'default'} links only the first and the last pipeline stage "
            f"(ranks {', '.join(map(str, members))}): the tied embeddings' gradients ({col['calls']} calls, "
            f"{ms(max(per.values()))} on the rank that waits most in the window).",
            why="The first stage finishes its backward last in a pipeline flush, so the all-reduce waits for it: its "
                "time is the pipeline's imbalance and bubbles, not a DDP bucket or overlap problem.",
            change_torch="balance the stages and shrink the bubble (see the stage finding); untie the embeddings "
                         "only if the model allows it.",
            gain_basis="it waits for the pipeline; its own transfer is small", value=col["calls"],
            figures={"calls": col["calls"]},
            evidence=[evidence("communication", "AllReduce", f"AllReduce {col['group']}", rank=members[0])],
            figure="comm_total", figure_value=float(col["total_ns"]), view="communication", ranks=members)
        f.scope = "ranks"
        found.append(f)
    return found


def cluster_hits(analysis: dict, digests=()) -> list[pb.RuleHit]:
    """The cross-rank findings of one window position (`digests`: its windows, in the order
    analyse_ranks was given them), ranked by estimated gain."""
    from ..cluster import rank_ids  # cluster imports the thresholds of this package
    digests = list(digests)
    par = recognise(digests, rank_ids(digests)) if digests else recognise([])
    sk = skeleton(digests, rank_ids(digests)) if digests else None
    found = slow_rank(analysis, par, sk) + slow_link(analysis, digests, sk) + stage_imbalance(analysis, par, sk) \
        + embedding_allreduce(analysis, par)
    for f in found:
        f.device = "cluster"
        if f.step_ns == 0:
            f.step_ns = _step_ns(analysis)
    _same_rank(found)
    _explains_waits(found, analysis, digests)
    if sk is not None:  # with the ranks' graph, a gain is a replay or none: the others are observations
        for f in found:
            if f.gain_ns >= 0 and not f.edit:
                f.observation, f.at_most_ns, f.gain_ns = True, f.gain_ns, -1
    return sorted((to_hit(f) for f in found), key=rank_key)


def _explains_waits(found: list[Finding], analysis: dict, digests: list) -> None:
    """A slow rank's finding names the other ranks whose own "communication not hidden" is mostly waiting for it
    (wait above transfer in the Ranks view): overlap cannot hide a wait for another rank; balancing can."""
    from ..cluster import rank_ids
    own = {rank: {h.rule for h in d.rule_hits} for rank, d in zip(rank_ids(digests), digests)}
    rows = {r["rank"]: r for r in analysis.get("ranks", [])}
    for f in found:
        if not f.rule.startswith("slow_rank_") or not f.evidence:
            continue
        slow = f.evidence[0].rank
        waiting = sorted(r for r, row in rows.items()
                         if r != slow and "communication_not_overlapped" in own.get(r, ())
                         and row.get("wait_ns", -1) > max(row.get("transfer_ns", -1), 0))
        if waiting:
            f.seen += (f" On rank{'s' if len(waiting) > 1 else ''} {', '.join(map(str, waiting))} the communication "
                       f"that is not hidden is mostly waiting (Ranks view: wait above transfer): that rank's "
                       f"'communication not hidden' comes from rank {slow}; overlapping cannot hide it, balancing "
                       f"rank {slow} does.")


def _same_rank(found: list[Finding]) -> None:
    """Slow-rank findings that name the same rank claim the same waiting of the others: each says so
    (the smaller gain is the time both claim)."""
    slow = [f for f in found if f.rule.startswith("slow_rank_") and f.gain_ns >= 0]
    for i, a in enumerate(slow):
        for b in slow[i + 1:]:
            if a.evidence[0].rank == b.evidence[0].rank:
                both = min(a.gain_ns, b.gain_ns)
                a.shared.append((b.rule, b.title, both))
                b.shared.append((a.rule, a.title, both))
