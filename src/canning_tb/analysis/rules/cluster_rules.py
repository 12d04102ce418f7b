"""Findings across ranks, from analysis/cluster.py's `analyse_ranks` output: slow rank, slow link
(per communicator group), pipeline stage imbalance."""
from __future__ import annotations

from .. import digest_pb2 as pb
from . import thresholds as th
from .comm_rules import is_p2p
from .finding import Finding, evidence, ms, pct, rank_key, to_hit


def _spread(values: list[float]) -> float:
    mean = sum(values) / len(values) if values else 0.0
    return (max(values) - min(values)) / mean if mean > 0 else 0.0


def _step_ns(analysis: dict) -> int:
    return max((r["step_ns"] for r in analysis["ranks"]), default=0)


def slow_rank(analysis: dict) -> list[Finding]:
    found = []
    for row in analysis.get("slow_ranks", []):
        if row["ratio"] <= th.SLOW_RANK_RATIO:
            continue
        metric, rank = row["metric"], row["slowest_rank"]
        least = metric == "communication"
        found.append(Finding(
            f"slow_rank_{metric}", "communication", "warning", f"Rank {rank} is slow ({metric})",
            f"{metric.capitalize()} time differs across ranks by (max - min) / mean = {pct(row['ratio'])}: "
            f"{ms(row['min_ns'])} on rank {row['min_rank']} to {ms(row['max_ns'])} on rank {row['max_rank']} "
            f"(Ranks view: {metric}).",
            why=("The rank with the least communication is the one the others wait for inside the collectives."
                 if least else f"Every collective waits for the rank with the most {metric} time."),
            change_torch="look at that rank's window: its data (uneven batches / sequence lengths), its host "
                         "(other processes, CPU binding, throttling) and its device; balance the work per rank.",
            change_npu="the same; check the device's AI Core frequency and the host's CPU binding (numactl).",
            gain_ns=int(row["max_ns"] - row["min_ns"]), step_ns=_step_ns(analysis),
            gain_basis=f"the {metric} spread between the ranks", value=row["ratio"],
            figures={"ratio": row["ratio"], "max_ns": row["max_ns"], "min_ns": row["min_ns"]},
            evidence=[evidence("ranks", str(rank), f"rank {rank}", rank=rank)]))
    return found


def slow_link(analysis: dict) -> list[Finding]:
    """Per communicator group: the spread of each rank's measured transfer time; per transport: the
    spread of the links' bandwidth."""
    found = []
    for col in analysis.get("collectives", []):
        if col["wait_source"] == "matched calls" or len(col["per_rank"]) < 2:
            continue  # transfer is the same on every rank by construction there
        per = {int(r): v["transfer_ns"] for r, v in col["per_rank"].items()}
        ratio = _spread(list(per.values()))
        if ratio <= th.SLOW_RANK_RATIO:
            continue
        slow = max(per, key=per.get)
        found.append(Finding(
            "slow_link", "communication", "warning", f"Slow link in group {col['group']}",
            f"{col['kind']} in group {col['group']}: transfer time per rank differs by (max - min) / mean = "
            f"{pct(ratio)}; slowest rank {slow} ({ms(per[slow])} vs {ms(min(per.values()))}).",
            why="Every member of the group waits for its slowest link.",
            change_torch="check that rank's links (nvidia-smi topo -m, NCCL_DEBUG=INFO for the transport chosen).",
            change_npu="check that rank's HCCS / RDMA links (hccn_tool -i N -link -g, -net_health -g).",
            gain_ns=int(per[slow] - min(per.values())), step_ns=_step_ns(analysis),
            gain_basis="the transfer spread in the group", value=ratio, figures={"ratio": ratio},
            evidence=[evidence("ranks", col["kind"], f"{col['kind']} {col['group']}", rank=slow)]))
    by_transport: dict = {}
    for cell in analysis.get("matrix", []):
        if cell["bandwidth_gbps"] > 0 and cell["src"] != cell["dst"]:
            by_transport.setdefault(cell["transport"], []).append(cell)
    for transport, cells in sorted(by_transport.items()):
        ratio = _spread([c["bandwidth_gbps"] for c in cells])
        if len(cells) < 2 or ratio <= th.SLOW_RANK_RATIO:
            continue
        worst = min(cells, key=lambda c: c["bandwidth_gbps"])
        found.append(Finding(
            "slow_link", "communication", "warning", f"Slow {transport} link",
            f"{transport} bandwidth differs across links by (max - min) / mean = {pct(ratio)}; slowest "
            f"{worst['src']} -> {worst['dst']} at {worst['bandwidth_gbps']:.2f} GB/s (Communication matrix).",
            why="Collectives run at the pace of their slowest link.",
            change_torch="check that link (nvidia-smi topo -m, NCCL_DEBUG=INFO).",
            change_npu="check that link (hccn_tool -link / -net_health).",
            gain_basis="the link's share of the collectives is not in the data", value=ratio,
            figures={"ratio": ratio, "bandwidth_gbps": worst["bandwidth_gbps"]},
            evidence=[evidence("ranks", f"{worst['src']}->{worst['dst']}", "matrix cell", rank=worst["src"])]))
    return found


def _p2p_ns(analysis: dict, digests) -> dict[int, int]:
    """{rank: time in pipeline send / receive per step}: the analysis' p2p wait where it has one,
    else the rank's own send / receive time (its window's communication rows)."""
    from ..cluster import rank_ids  # cluster imports the thresholds of this package
    out = {r["rank"]: r.get("p2p_wait_ns", 0) for r in analysis.get("ranks", [])}
    for rank, digest in zip(rank_ids(list(digests)), digests):
        steps = max(len(digest.average_steps) or len(digest.steps), 1)
        own = sum(c.total_ns for c in digest.communication.collectives if is_p2p(c.kind, c.comm_type)) // steps
        out[rank] = out.get(rank, 0) or own
    return out


def stage_imbalance(analysis: dict, digests=()) -> list[Finding]:
    """Pipeline stages (ranks that wait in send / receive) with unequal computing."""
    ranks = analysis.get("ranks", [])
    p2p = _p2p_ns(analysis, digests)
    waiting = [r for r in ranks if p2p.get(r["rank"], 0) > 0]
    if len(ranks) < 2 or not waiting:
        return []
    computing = {r["rank"]: r["computing_ns"] for r in ranks}
    ratio = _spread(list(computing.values()))
    if ratio <= th.SLOW_RANK_RATIO:
        return []
    slow = max(computing, key=computing.get)
    mean = sum(computing.values()) / len(computing)
    waits = ", ".join(f"rank {r['rank']} {ms(p2p[r['rank']])}" for r in waiting)
    return [Finding(
        "stage_imbalance", "communication", "warning", f"Pipeline stages are unbalanced (rank {slow} is slowest)",
        f"Computing per step differs across the pipeline's ranks by (max - min) / mean = {pct(ratio)} "
        f"(rank {slow}: {ms(computing[slow])}, mean {ms(mean)}); the others wait in send / receive: {waits}.",
        why="A pipeline runs at the pace of its slowest stage; the others idle in their receives (bubbles).",
        change_torch="move layers from the slowest stage to the others, use more micro-batches, or an interleaved "
                     "schedule (torch.distributed.pipelining ScheduleInterleaved1F1B).",
        gain_ns=int(computing[slow] - mean), step_ns=_step_ns(analysis),
        gain_basis="the slowest stage's computing above the mean (a perfectly balanced split)", value=ratio,
        figures={"ratio": ratio, "slow_stage_computing_ns": computing[slow], "mean_computing_ns": mean},
        evidence=[evidence("ranks", str(slow), f"rank {slow} computing", rank=slow)])]


def cluster_hits(analysis: dict, digests=()) -> list[pb.RuleHit]:
    """The cross-rank findings of one window position (`digests`: its windows, in the order
    analyse_ranks was given them), ranked by estimated gain."""
    found = slow_rank(analysis) + slow_link(analysis) + stage_imbalance(analysis, digests)
    for f in found:
        f.device = "cluster"
    return sorted((to_hit(f) for f in found), key=rank_key)
