"""How a job is parallel, from what its files say: the communicators (groups) classified into data /
tensor / pipeline / expert / context parallel and the tied-embedding group, and the pipeline stages.

`recognise(digests) -> Parallelism` reads only digests (the windows of one step position, one per
rank, any order):

- A group's kind comes from its declared name (Ascend profiler_metadata.json parallel_group_info
  `group_name`: "dp", "tp", "pp", "ep", "embd", "dp_cp" ...; Megatron's group descriptions
  PIPELINE_MODEL_PARALLEL_GROUP ...; torch DeviceMesh "mesh_pp"), matched as a word; "unknown"
  otherwise. A group that only carries send / receive calls is a pipeline group.
- Stages: from declared pipeline groups, whose ranks are listed in pipeline order (stage i = the
  i-th rank of each pipeline group). Without one, from the send / receive calls: the ranks that make
  them, the first stage being the one whose first point-to-point call sends (it sends activations
  before it receives anything) and the others ordered by when their first receive ends; `source` says
  which. This order needs the ranks' clocks to agree to a fraction of a step; it is exact for two.
- Embedding: an all-reduce whose callers are exactly the first and the last stage of a pipeline
  (Megatron's tied word embeddings), or a group named so.

Small on purpose (cluster.py and the cross-rank rules call it): `Parallelism.stage_of(rank)`,
`.stages`, `.kind(group)`, `.peers(rank)` (the ranks that hold the same stage, its data-parallel
replicas), `.pipeline`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

KINDS = ("embedding", "pipeline", "expert", "tensor", "context", "data")
_NAME_RES = [  # first match wins: "dp_cp" is data parallel (with context), "embd" before anything else
    ("embedding", re.compile(r"embd|embedding", re.I)),
    ("pipeline", re.compile(r"(?<![a-z])pp(?![a-z])|pipe", re.I)),
    ("data", re.compile(r"(?<![a-z])dp(?![a-z])|data", re.I)),
    ("expert", re.compile(r"(?<![a-z])(ep|exp|moe)(?![a-z])|expert", re.I)),
    ("tensor", re.compile(r"(?<![a-z])(tp|mp)(?![a-z])|tensor", re.I)),
    ("context", re.compile(r"(?<![a-z])cp(?![a-z])|context", re.I)),
]
P2P = {"Send", "Recv"}


@dataclass
class Parallelism:
    groups: dict = field(default_factory=dict)  # group id -> kind (KINDS or "unknown")
    members: dict = field(default_factory=dict)  # group id -> ranks (declared, else the calling ranks)
    stages: list = field(default_factory=list)  # per pipeline stage, in order: its ranks
    source: str = ""  # "declared groups" | "send / receive calls" | "" (no pipeline)

    @property
    def pipeline(self) -> bool:
        return len(self.stages) > 1

    def stage_of(self, rank: int) -> int:
        return next((i for i, ranks in enumerate(self.stages) if rank in ranks), -1)

    def peers(self, rank: int) -> list:
        """The ranks that hold the same pipeline stage (all ranks without a pipeline)."""
        stage = self.stage_of(rank)
        if stage < 0:
            return sorted({r for ranks in self.members.values() for r in ranks} | {rank})
        return sorted(self.stages[stage])

    def kind(self, group: str) -> str:
        return self.groups.get(group, "unknown")


def kind_of_name(text: str) -> str:
    for kind, rx in _NAME_RES:
        if rx.search(text or ""):
            return kind
    return "unknown"


def recognise(digests: list, ranks: list | None = None) -> Parallelism:
    """The parallelism of the job whose windows (one per rank) are `digests`; `ranks`: their rank ids
    (default: each digest's own)."""
    ranks = list(ranks) if ranks is not None else [int(d.window.rank) for d in digests]
    out = Parallelism()
    declared = {}
    for d in digests:
        for g in d.communication.groups:
            declared.setdefault(g.group, g)
    callers: dict = {}
    kinds: dict = {}
    for rank, d in zip(ranks, digests):
        for c in d.communication.calls:
            callers.setdefault(c.group, set()).add(rank)
            kinds.setdefault(c.group, set()).add(c.kind)
    for group in sorted(set(declared) | set(callers)):
        g = declared.get(group)
        kind = kind_of_name(f"{g.name} {group}" if g is not None else group)
        if kind == "unknown" and kinds.get(group) and kinds[group] <= P2P:
            kind = "pipeline"
        out.groups[group] = kind
        out.members[group] = sorted(g.ranks) if g is not None and len(g.ranks) else sorted(callers.get(group, ()))
    out.stages, out.source = _declared_stages(out, declared) or _p2p_stages(out, digests, ranks)
    _embedding(out, kinds)
    return out


def _declared_stages(out: Parallelism, declared: dict):
    """Stages from the declared pipeline groups (ranks in pipeline order), or None."""
    pipes = [list(declared[g].ranks) for g, kind in out.groups.items()
             if kind == "pipeline" and g in declared and len(declared[g].ranks) > 1]
    if not pipes or len({len(p) for p in pipes}) != 1:
        return None
    return [sorted({p[i] for p in pipes}) for i in range(len(pipes[0]))], "declared groups"


def _p2p_stages(out: Parallelism, digests: list, ranks: list):
    """Stages from the point-to-point calls (see the module doc); ([], "") without a pipeline, or where the
    windows do not hold every rank of the job (its world size). Each pipeline group's callers form one pipeline
    (several with data parallelism), stage i being the i-th rank of each."""
    world = max((int(d.window.world_size) for d in digests), default=0)
    if world > len(set(ranks)):
        # some ranks of the job are missing: an order of stages read from the ranks at hand would be a guess
        return [], ""
    first = {}
    for rank, d in zip(ranks, digests):
        p2p = sorted((c for c in d.communication.calls if c.kind in P2P), key=lambda c: c.start_ns)
        if p2p:
            recv = next((c for c in p2p if c.kind == "Recv"), None)
            first[rank] = (p2p[0].kind != "Send", recv.start_ns + recv.dur_ns if recv else 0)
    pipes = [[r for r in out.members[g] if r in first] for g, kind in out.groups.items() if kind == "pipeline"]
    pipes = [p for p in pipes if len(p) > 1] or ([sorted(first)] if len(first) > 1 else [])
    if not pipes or len({len(p) for p in pipes}) != 1:
        return [], ""
    ordered = [sorted(p, key=lambda r: (first[r], r)) for p in pipes]
    return [sorted({p[i] for p in ordered}) for i in range(len(ordered[0]))], "send / receive calls"


def _embedding(out: Parallelism, kinds: dict) -> None:
    """All-reduce groups whose callers are the first and last stage of one pipeline: tied embeddings."""
    if not out.pipeline:
        return
    ends = set(out.stages[0]) | set(out.stages[-1])
    for group, kind in out.groups.items():
        members = set(out.members.get(group, ()))
        if kind in ("unknown", "data") and "AllReduce" in kinds.get(group, ()) and len(members) == 2 \
                and members <= ends and any(r in members for r in out.stages[0]) \
                and any(r in members for r in out.stages[-1]):
            out.groups[group] = "embedding"
