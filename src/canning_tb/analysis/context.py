"""Work shared by several sections of the digest, computed once per table (lazily)."""
from __future__ import annotations

from functools import cached_property

import numpy as np

from ..ingest.table import NONE, EventTable, Kind
from .common import DEVICE_KINDS, Nesting, join_on, kind_mask, nest, sum_up_tree


class Context:
    """Host nesting and kernel -> launching op attribution of one table.

    Host nesting covers CPU_OP, USER_ANNOTATION and RUNTIME events on the host (device NONE).
    A device event is attributed to the host op/annotation that launched it: the CPU_OP /
    USER_ANNOTATION with the same `external_id` (Kineto gives kernels the id of the innermost op
    active at launch; torch_npu's torch_to_npu flow the same), checked against time: where the
    event's RUNTIME launch (joined on `correlation`) is not inside that op on its thread (an id reused
    or mislinked: 230 ms of GEMMs on aten::result_type), and where no op has its id, the innermost op
    enclosing the launch on the launching thread.
    """

    def __init__(self, table: EventTable):
        self.table = table
        self.ev = table.events

    @cached_property
    def host(self) -> Nesting:
        ev = self.ev
        m = kind_mask(self.table, (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.RUNTIME)) & (ev["device"] == NONE)
        return nest(self.table, np.flatnonzero(m))

    @cached_property
    def host_kind(self) -> np.ndarray:
        return self.ev["kind"][self.host.rows]

    @cached_property
    def host_op(self) -> np.ndarray:
        """Per host position: an operator call (not an annotation, a runtime call or Python)."""
        return self.host_kind == int(Kind.CPU_OP)

    @cached_property
    def op_in_op(self) -> np.ndarray:
        """Per host position: an operator that an operator calls (a redispatch, or a _to_copy's copy_), made from C++
        with no Python between."""
        parent = self.host.parent
        return (parent != NONE) & self.host_op & self.host_op[parent]  # NONE (-1) reads the last: dropped first

    @cached_property
    def device_rows(self) -> np.ndarray:
        return np.flatnonzero(kind_mask(self.table, DEVICE_KINDS))

    @cached_property
    def device_owner(self) -> np.ndarray:
        """Per device row: position in host.rows of the launching op/annotation, or NONE (class doc)."""
        ev, h = self.ev, self.host
        dev = self.device_rows
        owner = np.full(len(dev), NONE, np.int64)
        if len(dev) == 0 or len(h.rows) == 0:
            return owner
        hk = self.host_kind
        op_pos = np.flatnonzero((hk != int(Kind.RUNTIME)) & (ev["external_id"][h.rows] != NONE))
        hit = join_on(ev["external_id"][dev], ev["external_id"][h.rows[op_pos]])
        ok = hit != NONE
        owner[ok] = op_pos[hit[ok]]
        launch, enclosing = self._launches(dev)
        # an id join the launch's time contradicts (the launch is not inside that op on its thread: ids
        # reused or mislinked) yields to the op that encloses the launch
        wrong = ok & (launch != NONE) & ~self._inside(owner, launch) & (enclosing != NONE)
        owner[wrong] = enclosing[wrong]
        owner[~ok] = enclosing[~ok]
        return owner

    def _launches(self, dev: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per device row: the host position of its RUNTIME launch (joined on `correlation`) and of
        the innermost op enclosing that launch (NONE: none, or only runtime calls around it)."""
        ev, h, hk = self.ev, self.host, self.host_kind
        rt_pos = np.flatnonzero((hk == int(Kind.RUNTIME)) & (ev["correlation"][h.rows] != NONE))
        hit = join_on(ev["correlation"][dev], ev["correlation"][h.rows[rt_pos]])
        launch = np.full(len(dev), NONE, np.int64)
        launch[hit != NONE] = rt_pos[hit[hit != NONE]]
        par = np.full(len(dev), NONE, np.int64)
        has = launch != NONE
        par[has] = h.parent[launch[has]]
        # a launch nested in another runtime call (CANN API layers) is not an op
        par[(par != NONE) & (hk[np.maximum(par, 0)] == int(Kind.RUNTIME))] = NONE
        return launch, par

    def _inside(self, owner: np.ndarray, launch: np.ndarray) -> np.ndarray:
        """Per device row: its launch starts inside its owner's time range, on the owner's thread."""
        ev, rows = self.ev, self.host.rows
        o, lr = rows[np.maximum(owner, 0)], rows[np.maximum(launch, 0)]
        start = ev["ts"][lr]
        return (ev["ts"][o] <= start) & (start <= ev["ts"][o] + ev["dur"][o]) & (ev["tid"][o] == ev["tid"][lr]) \
            & (ev["pid"][o] == ev["pid"][lr])

    @cached_property
    def device_self(self) -> np.ndarray:
        """Per host position: device time of the events it launched itself."""
        out = np.zeros(len(self.host.rows), np.int64)
        own = self.device_owner
        ok = own != NONE
        np.add.at(out, own[ok], self.ev["dur"][self.device_rows[ok]])
        return out

    @cached_property
    def device_total(self) -> np.ndarray:
        return sum_up_tree(self.device_self, self.host)

    @cached_property
    def host_self(self) -> np.ndarray:
        """dur minus the durations of its direct children on its thread, runtime calls
        (cudaLaunchKernel, aclrt*) among them: torch's key_averages() self CPU time, which counts
        launches in their own rows (and so did torch-tb-profiler)."""
        h = self.host
        dur = self.ev["dur"][h.rows]
        child = np.zeros(len(h.rows), np.int64)
        sel = h.parent != NONE
        np.add.at(child, h.parent[sel], dur[sel])
        return np.maximum(dur - child, 0)

    @cached_property
    def op_target(self) -> np.ndarray:
        """Per host position: itself, or, for an operator call that is the only child of a call of the
        same name (a redispatch: aten::mean inside aten::mean), the outermost such ancestor. torch's
        key_averages() folds those into the parent (one call; its children and kernels move up), and
        so do the operator tables."""
        h = self.host
        parent = h.parent
        up = np.maximum(parent, 0)
        children = np.bincount(parent[parent != NONE], minlength=len(h.rows))
        names = self.ev["name"][h.rows]
        folded = self.op_in_op & (names == names[up]) & (children[up] == 1)
        target = np.arange(len(h.rows))
        while folded[target].any():
            target = np.where(folded[target], parent[target], target)
        return target

    @cached_property
    def op_self(self) -> np.ndarray:
        """host_self with each folded call's self added to the call it folds into (op_target)."""
        out = np.zeros(len(self.host.rows), np.int64)
        np.add.at(out, self.op_target, self.host_self)
        return out

    @cached_property
    def op_owner(self) -> np.ndarray:
        """device_owner with folded calls replaced by the call they fold into (op_target)."""
        own = self.device_owner.copy()
        ok = own != NONE
        own[ok] = self.op_target[own[ok]]
        return own

