"""Operators whose device time is mostly copies over a link, not through HBM: Kineto's `Memcpy HtoD`,
`DtoH`, `HtoH` (host memory over PCIe / the host link) and `PtoP` (peer to peer, NVLink / PCIe). Their
roof is that link's bandwidth, which no trace gives: judged against HBM they would read as "far from
the roof" and a finding would blame the copy kernel for what the link allows. Such a row gets bound
"link" and no share of roof (unknown); a copy task that does not say its direction (an NPU MEMCPY task)
leaves the row's bound and share unknown too. A copy inside the device (`DtoD`) stays an HBM copy."""
from __future__ import annotations

import re

import numpy as np

from ...ingest.table import NONE, Kind
from .. import digest_pb2 as pb
from ..context import Context

OVER_LINK = re.compile(r"HtoD|DtoH|HtoH|PtoP|Pageable|Pinned", re.I)
IN_DEVICE = re.compile(r"DtoD|Device -> Device", re.I)
MOSTLY = 0.5  # of the row's device time


def _copy_time(ctx: Context) -> tuple[dict, dict]:
    """Per launching op's name id: ns of its device copies over a link, and of copies of unknown direction."""
    ev, dev = ctx.ev, ctx.device_rows
    copies = np.flatnonzero(ev["kind"][dev] == int(Kind.MEMCPY))
    owner = ctx.device_owner[copies]
    copies, owner = copies[owner != NONE], owner[owner != NONE]
    link: dict[int, int] = {}
    unknown: dict[int, int] = {}
    strings = ctx.table.strings
    for row, op in zip(dev[copies], owner):
        name = strings[int(ev["name"][row])] or ""
        if IN_DEVICE.search(name):
            continue
        into = link if OVER_LINK.search(name) else unknown
        key = int(ev["name"][ctx.host.rows[op]])
        into[key] = into.get(key, 0) + int(ev["dur"][row])
    return link, unknown


def mark_link_copies(ctx: Context, d: pb.Digest) -> None:
    """Set bound "link" / unknown on the operator rows (by name, by name + shapes) whose device time is
    mostly copies over a link / of unknown direction (the module doc)."""
    link, unknown = _copy_time(ctx)
    if not link and not unknown:
        return
    strings = ctx.table.strings
    for o in list(d.ops_by_name) + list(d.ops_by_shape):
        key = strings.find(o.name)
        total = o.device_total_ns
        if key < 0 or total <= 0 or not o.work.model:
            continue
        if link.get(key, 0) > MOSTLY * total:
            o.work.roof_tflops = o.work.roof_share = -1.0
            o.work.bound = "link"
        elif link.get(key, 0) + unknown.get(key, 0) > MOSTLY * total:
            o.work.roof_tflops = o.work.roof_share = -1.0
            o.work.bound = ""
