"""The other side of each point-to-point call: the rank a Send went to or a Recv came from.

Kineto records it on the dispatcher's operator, not on the backend's range: `c10d::send` /
`c10d::recv_` carry (tensors, process group, peer, tag) in "Concrete Inputs", the peer being the
rank within the call's group as `torch.distributed.send(dst=...)` converted it. The backend's range
(`gloo:send`, `nccl:send`) starts inside that operator on the same thread (gloo's receive outlives
it: it lasts until the data came), so a call's peer is that of the last such operator on its thread
that started at or before it and had not ended when it started.
"""
from __future__ import annotations

import re

import numpy as np

from ...ingest import op_args
from ..common import ids_matching, id_mask
from ..context import Context

P2P_OP_RE = re.compile(r"^c10d::(send|recv_|recv_any_source_)$")
PEER_ARG = 2  # (tensors, process group, peer, tag)


def _peer_of(text: str | None) -> int:
    concrete = op_args.decode(text).get("concrete") or []
    try:
        return int(concrete[PEER_ARG]) if len(concrete) > PEER_ARG else -1
    except (TypeError, ValueError):
        return -1


def p2p_peers(ctx: Context, rows: np.ndarray, p2p: np.ndarray) -> np.ndarray:
    """Peer rank (in the call's group) of each of `rows` where `p2p` is set and the trace says it; -1 elsewhere."""
    ev, t = ctx.ev, ctx.table
    out = np.full(len(rows), -1, np.int64)
    if not p2p.any():
        return out
    ops = np.flatnonzero(id_mask(ev["name"], ids_matching(t, P2P_OP_RE), len(t.strings)))
    if not len(ops):
        return out
    ops = ops[np.lexsort((ev["ts"][ops], ev["tid"][ops], ev["pid"][ops]))]
    keys = list(zip(ev["pid"][ops].tolist(), ev["tid"][ops].tolist()))
    peers = np.array([_peer_of(t.strings[int(a)] if a >= 0 else None) for a in ev["args"][ops]], np.int64)
    by_thread: dict = {}
    for i, k in enumerate(keys):
        by_thread.setdefault(k, []).append(i)
    for i in np.flatnonzero(p2p):
        r = int(rows[i])
        idx = by_thread.get((int(ev["pid"][r]), int(ev["tid"][r])))
        if not idx:
            continue
        starts = ev["ts"][ops[idx]]
        j = int(np.searchsorted(starts, ev["ts"][r], side="right")) - 1
        if j >= 0 and ev["ts"][ops[idx[j]]] + ev["dur"][ops[idx[j]]] >= ev["ts"][r]:
            out[i] = peers[idx[j]]
    return out
